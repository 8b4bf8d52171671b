//! `KubeSchedulerConfiguration`: the file's types, upstream's defaults, validation with field
//! paths, and the profiles resolved into per-extension-point plugin lists.

pub mod args;
pub mod defaults;
pub mod load;
pub mod resolve;
pub mod types;
pub mod validation;

pub use types::*;
