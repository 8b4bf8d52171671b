//! The kubelet itself: the sync loop over pod updates, PLEG events and probe results, per-pod
//! workers, admission, mirror pods, and the `RuntimeHelper` the runtime calls back into.
//! Owner: the core engineer.

pub mod admission;
mod evict;
pub mod helper;
pub mod hooks;
mod housekeeping;
pub mod pod_workers;
mod sync;
mod sync_loop;

use crate::config::SourcesReady;
use crate::kuberuntime::{RuntimeManager, SyncError};
use crate::pleg::{Cache, Pleg};
use crate::pod::MirrorClient;
use crate::pod::PodManager;
use crate::prober::ProbeManager;
use crate::status::StatusManager;
use hooks::{CgroupHost, VolumeHost};
use k8s_openapi::api::core::v1::{Node, Pod};
use parking_lot::Mutex;
use pod_workers::{PodWorkers, UpdateType, WorkUpdate};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What the node looks like to the core: the Node object (admission) and its IPs (status).
pub trait NodeView: Send + Sync {
    fn node(&self) -> Option<Node>;
    fn host_ips(&self) -> Vec<String>;
}

impl NodeView for crate::nodestatus::NodeHandle {
    fn node(&self) -> Option<Node> {
        crate::nodestatus::NodeHandle::node(self)
    }

    fn host_ips(&self) -> Vec<String> {
        self.node_ips().iter().map(|ip| ip.to_string()).collect()
    }
}

/// Settings of the core from the kubelet's configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub node_name: String,
    pub root_dir: PathBuf,
    /// `syncFrequency`: a synced pod is synced again after this.
    pub sync_frequency: Duration,
    /// `clusterDNS`, `clusterDomain` and `resolvConf` for the sandboxes' DNS.
    pub cluster_dns: Vec<std::net::IpAddr>,
    pub cluster_domain: String,
    pub resolv_conf: Option<PathBuf>,
}

/// Everything the core is built from.
pub struct Deps {
    pub client: kube::Client,
    pub runtime: Arc<RuntimeManager>,
    pub status: Arc<StatusManager>,
    pub pods: Arc<PodManager>,
    pub probes: Arc<ProbeManager>,
    pub node: Arc<dyn NodeView>,
    pub volumes: Arc<dyn VolumeHost>,
    pub cgroups: Arc<dyn CgroupHost>,
    pub mirror: MirrorClient,
    /// Services for service-link env vars.
    pub services: crate::envvars::ServiceLister,
}

/// The kubelet's pod machinery.
pub struct Kubelet {
    pub settings: Settings,
    pub client: kube::Client,
    pub runtime: Arc<RuntimeManager>,
    pub status: Arc<StatusManager>,
    pub pods: Arc<PodManager>,
    pub probes: Arc<ProbeManager>,
    pub node: Arc<dyn NodeView>,
    pub volumes: Arc<dyn VolumeHost>,
    pub cgroups: Arc<dyn CgroupHost>,
    pub mirror: MirrorClient,
    pub services: crate::envvars::ServiceLister,
    pub cache: Arc<Cache>,
    pub pleg: Arc<Pleg>,
    pleg_events: Mutex<Option<tokio::sync::mpsc::Receiver<crate::pleg::PodLifecycleEvent>>>,
    workers: OnceLock<Arc<PodWorkers>>,
    /// When each pod is due for another sync.
    work_queue: Mutex<HashMap<String, Instant>>,
    /// The last sync's failures per pod uid (the waiting reasons of its containers).
    sync_errors: Mutex<HashMap<String, Vec<SyncError>>>,
    /// Pods refused at admission: never run.
    rejected: Mutex<HashSet<String>>,
    sources_ready: OnceLock<SourcesReady>,
}

impl Kubelet {
    pub fn new(settings: Settings, deps: Deps) -> Arc<Self> {
        let cache = Arc::new(Cache::default());
        let (pleg, events) = Pleg::new(deps.runtime.clone(), cache.clone());
        let kubelet = Arc::new(Self {
            settings,
            client: deps.client,
            runtime: deps.runtime,
            status: deps.status,
            pods: deps.pods,
            probes: deps.probes,
            node: deps.node,
            volumes: deps.volumes,
            cgroups: deps.cgroups,
            mirror: deps.mirror,
            services: deps.services,
            cache: cache.clone(),
            pleg,
            pleg_events: Mutex::new(Some(events)),
            workers: OnceLock::new(),
            work_queue: Mutex::default(),
            sync_errors: Mutex::default(),
            rejected: Mutex::default(),
            sources_ready: OnceLock::new(),
        });
        let resync = kubelet.settings.sync_frequency.max(Duration::from_secs(1));
        let workers = PodWorkers::new(kubelet.clone(), cache, resync, Duration::from_secs(10));
        let _ = kubelet.workers.set(workers);
        kubelet
    }

    fn workers(&self) -> &Arc<PodWorkers> {
        self.workers.get().expect("set in new")
    }

    /// `<root>/pods/<uid>`.
    pub fn pod_dir(&self, uid: &str) -> PathBuf {
        self.settings.root_dir.join("pods").join(uid)
    }

    /// Schedules another sync of `uid` in `after` (the earliest request wins).
    pub fn enqueue(&self, uid: &str, after: Duration) {
        let due = Instant::now() + after;
        let mut q = self.work_queue.lock();
        let entry = q.entry(uid.to_string()).or_insert(due);
        if due < *entry {
            *entry = due;
        }
    }

    fn take_due(&self) -> Vec<String> {
        let now = Instant::now();
        let mut q = self.work_queue.lock();
        let due: Vec<String> = q
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for u in &due {
            q.remove(u);
        }
        due
    }

    /// Sends the pod manager's copy of `uid` to its worker.
    fn dispatch_uid(&self, uid: &str, kind: UpdateType) {
        if let Some(pod) = self.pods.get_pod_by_uid(uid) {
            self.dispatch(pod, kind);
        }
    }

    fn dispatch(&self, pod: Arc<Pod>, kind: UpdateType) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if self.rejected.lock().contains(&uid) {
            return;
        }
        self.workers().update_pod(WorkUpdate {
            kind,
            pod: Some(pod),
            running: None,
            grace_override: None,
        });
    }

    /// Pods admitted and not finished: what a new pod is admitted beside.
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        let rejected = self.rejected.lock().clone();
        self.pods
            .get_pods()
            .into_iter()
            .filter(|p| {
                let uid = p.metadata.uid.as_deref().unwrap_or_default();
                !rejected.contains(uid)
                    && matches!(
                        self.workers().lifecycle(uid),
                        Some(pod_workers::Lifecycle::Syncing)
                    )
            })
            .collect()
    }
}
