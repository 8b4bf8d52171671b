//! Server-side apply and managedFields (helper-owned; see the issue 5 plan).
