//! A container's environment: env and envFrom from ConfigMaps and Secrets, fieldRef and
//! resourceFieldRef, service links, and `$(VAR)` expansion of command and args.
//! Owner: the volumes engineer.
//!
//! Entry points: [`make_environment`] (the env of one container, its error is the
//! `CreateContainerConfigError` message), [`expand_command_and_args`], and the
//! [`ObjectSource`] trait ([`ClientSource`] backs it with the API client) that volumes share.

mod env;
mod expand;
mod fields;
mod lister;
mod services;
mod source;

pub use env::{EnvContext, EnvError, is_env_var_name, make_environment};
pub use expand::{expand, expand_command_and_args};
pub use fields::{Allocatable, format_map, metadata_field, pod_field, resource_field};
pub use lister::ServiceLister;
pub use services::service_env;
pub use source::{ClientSource, ObjectSource};

#[cfg(test)]
pub(crate) mod tests;
