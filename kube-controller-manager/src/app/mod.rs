//! The three phases of the command, as upstream's `cmd/kube-controller-manager/app`.

pub mod config;
pub mod controllers;
pub mod options;
pub mod server;
pub mod start;
