//! What several controllers share, as upstream's `pkg/controller` helpers: expectations,
//! creating and deleting pods from a template, adopting and releasing by controllerRef, and
//! ranking pods for deletion.

pub mod controller_ref;
pub mod discovery;
pub mod expectations;
pub mod handlers;
pub mod hash;
pub mod history;
pub mod pod_control;
pub mod pods;
pub mod services;
pub mod taints;
