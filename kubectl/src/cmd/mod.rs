//! One module per kubectl command.

pub mod version;
