//! kube-controller-manager: the control loops, event-driven (shared informers and rate-limited
//! workqueues), run while holding the leader lease. `app` is the command (options, config,
//! run); `controller` holds the controllers and what they share.

pub mod app;
pub mod controller;
