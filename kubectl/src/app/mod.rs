//! The phases of a kubectl invocation: flags (`options`), client configuration from them
//! (`config`), and dispatch to the command (`run`).

pub mod config;
pub mod options;
pub mod run;
