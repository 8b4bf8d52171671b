//! A container's environment: env and envFrom from ConfigMaps and Secrets, fieldRef and
//! resourceFieldRef, service links, and `$(VAR)` expansion of command and args.
//! Owner: the volumes engineer.

mod expand;

pub use expand::{expand, expand_command_and_args};
