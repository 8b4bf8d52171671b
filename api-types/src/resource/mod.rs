//! `resource.Quantity` arithmetic shared by the apiserver's admission plugins, the scheduler
//! and the controllers that add and compare resource amounts.

pub mod quantity;

pub use quantity::{Quantity, ResourceList};
