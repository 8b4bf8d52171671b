//! The three phases of the command, as upstream's `cmd/kube-apiserver/app`.

pub mod bootstrap;
pub mod bootstrap_flowcontrol;
pub mod config;
pub mod options;
pub mod router;
pub mod security;
pub mod server;
