//! The shared client of every component: what client-go gives Go components, built on kube.

pub use kube;

pub mod client;
pub mod config;
pub mod events;
pub mod informers;
pub mod jsonpath;
pub mod leaderelection;
pub mod listers;
pub mod workqueue;
