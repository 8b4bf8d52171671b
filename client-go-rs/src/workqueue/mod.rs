//! workqueue
