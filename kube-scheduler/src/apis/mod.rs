//! The scheduler's own configuration API (kubescheduler.config.k8s.io).

pub mod config;
