//! Who is asking and whether they may: the authenticated user and its sources (client
//! certificates, the static token file, service account tokens, bootstrap tokens), and the
//! authorizer interface with its simplest modes.

pub mod authenticator;
pub mod authorizer;
pub mod bootstrap_token;
pub mod impersonation;
pub mod service_account;
pub mod token_file;
pub mod user;
pub mod x509;
