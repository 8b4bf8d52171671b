//! kube-scheduler: assigns pods to nodes. Today it runs the component shell (flags, config,
//! secure serving of health, metrics and configz); the scheduling framework arrives with its issue.

pub mod app;
