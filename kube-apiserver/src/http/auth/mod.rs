//! Who is asking and whether they may: the authenticated user, the static token file
//! (`--token-auth-file`), and the authorizer interface with its simplest modes.

pub mod authenticator;
pub mod authorizer;
pub mod token_file;
pub mod user;
