//! The shared client of every component: what client-go gives Go components.
