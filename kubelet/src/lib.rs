//! kubelet: the node agent. Pods bound to the node (and static pods) run through CRI against
//! containerd; the node, its lease and the pods' statuses are reported to the apiserver.
//! `docs/architecture.md` has the code map.

pub mod app;
pub mod certificate;
pub mod cm;
pub mod config;
pub mod container;
pub mod dns;
pub mod envvars;
pub mod eviction;
pub mod hollow;
pub mod images;
pub mod kubelet;
pub mod kuberuntime;
pub mod nodestatus;
pub mod pleg;
pub mod pod;
pub mod prober;
pub mod server;
pub mod status;
pub mod volumemanager;
