//! kube-controller-manager: the control loops. Today it runs the component shell (flags,
//! `--controllers` resolution, secure serving of health, metrics and configz); the controllers
//! themselves arrive with their issue.

pub mod app;
