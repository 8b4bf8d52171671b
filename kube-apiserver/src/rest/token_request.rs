//! TokenRequest (`serviceaccounts/token`), being written.
