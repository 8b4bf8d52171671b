//! Auditing (helper-owned; see the issue 5 plan).
