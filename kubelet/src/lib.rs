//! kubelet: the node agent. Today it runs the component shell (flags, config, the HTTPS server
//! and the plain healthz port); pods through CRI, node status and the rest arrive with its issue.

pub mod app;
