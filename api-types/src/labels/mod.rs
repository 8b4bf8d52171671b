//! Label selectors, as upstream's `k8s.io/apimachinery/pkg/labels`: the string syntax
//! (`a=b,c in (x,y),!d`), matching against label sets, and conversion from
//! `metav1.LabelSelector`.

mod error;
mod lexer;
mod parser;
mod requirement;
mod selector;
mod set;

pub use error::SelectorError;
pub use requirement::{Operator, Requirement};
pub use selector::Selector;
pub use set::{Labels, Set};
