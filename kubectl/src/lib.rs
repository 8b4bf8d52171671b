//! kubectl: the command-line client, usable against any conformant cluster. Today it has the
//! global flags and `version`; the other command groups arrive with its issue.

pub mod app;
pub mod cmd;
