//! kubectl: the command-line client, usable against any conformant cluster. Today it has the
//! global flags and `version`; the other command groups arrive with its issue.

pub mod app;
pub mod cmd;
pub mod discovery;
pub mod errors;
pub mod factory;
pub mod klog;
pub mod kubeconfig;
pub mod printers;
pub mod remotecommand;
pub mod resource;
pub mod warnings;
