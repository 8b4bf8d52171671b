//! The three phases of the command, as upstream's `cmd/kube-apiserver/app`.

pub mod config;
pub mod options;
pub mod server;
