//! The controllers and what they share. Each controller module exposes `init`, which registers
//! its informer handlers and returns the future that runs its workers (or `None` when it does
//! not start, as upstream's initializers may decline).

pub mod context;
pub mod credentials;
pub mod registry;
pub mod settings;
pub mod utils;
pub mod worker;

pub mod bootstrap;
pub mod certificates;
pub mod clusterroleaggregation;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoint;
pub mod endpointslice;
pub mod endpointslicemirroring;
pub mod garbagecollector;
pub mod job;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod podautoscaler;
pub mod podgc;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttl;
pub mod ttlafterfinished;
pub mod volume;

pub use context::ControllerContext;

/// A started controller: runs until the context's shutdown token is cancelled.
pub type Running = futures::future::BoxFuture<'static, ()>;

/// What `init` returns: `Ok(None)` when the controller declines to start.
pub type InitResult = anyhow::Result<Option<Running>>;
