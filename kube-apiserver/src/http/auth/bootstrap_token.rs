//! Bootstrap tokens (`--enable-bootstrap-token-auth`), being written.
