//! kube-scheduler: assigns pods to nodes with upstream's scheduling framework and default
//! plugins, talking to the apiserver only through client-go-rs.

pub mod apis;
pub mod app;
pub mod cache;
pub mod framework;
pub mod plugins;
pub mod queue;
pub mod scheduler;
