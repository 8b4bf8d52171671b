//! Service account tokens: signing (TokenRequest) and verification, being written.

/// Signs service account tokens (`--service-account-signing-key-file`).
#[derive(Debug)]
pub struct TokenSigner;
