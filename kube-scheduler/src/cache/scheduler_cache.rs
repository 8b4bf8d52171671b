//! The scheduler's cache of nodes and of the pods on them, bound or assumed (upstream's
//! `pkg/scheduler/backend/cache`). An assumed pod counts on its node from the moment the
//! scheduler picks the node, so the next cycles see its resources before the binding is
//! written and the informer confirms it.

use super::images::ImageStates;
use super::node_tree::NodeTree;
use super::snapshot_update::SnapshotIndex;
use crate::framework::{NodeInfo, PodInfo, Snapshot};
use k8s_openapi::api::core::v1::{Node, Pod};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
struct PodState {
    pod: Arc<PodInfo>,
    /// When an assumed pod whose binding finished is forgotten unless the informer confirms it.
    deadline: Option<Instant>,
    binding_finished: bool,
}

/// The nodes' infos with the bookkeeping that lets a snapshot copy only what changed.
#[derive(Debug, Default)]
pub(super) struct NodeStore {
    /// The last generation given to a node; a node changed since a snapshot has a larger one.
    pub(super) generation: i64,
    pub(super) infos: HashMap<String, Arc<NodeInfo>>,
    /// Node names by the generation of their last change, the most recent last (upstream's
    /// doubly linked list with the most recently updated node at its head).
    pub(super) recent: BTreeMap<i64, String>,
}

impl NodeStore {
    /// Changes (or creates) a node's info and marks it as the most recently updated. Snapshots
    /// hold their own `Arc`, so the info is copied first when one still shares it.
    pub(super) fn with_node<R>(&mut self, name: &str, f: impl FnOnce(&mut NodeInfo) -> R) -> R {
        let entry = self
            .infos
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(NodeInfo::default()));
        let info = Arc::make_mut(entry);
        let previous = info.generation;
        let out = f(info);
        self.generation += 1;
        info.generation = self.generation;
        if previous > 0 {
            self.recent.remove(&previous);
        }
        self.recent.insert(self.generation, name.to_string());
        out
    }

    pub(super) fn remove(&mut self, name: &str) {
        if let Some(info) = self.infos.remove(name) {
            self.recent.remove(&info.generation);
        }
    }
}

#[derive(Debug)]
pub(super) struct Inner {
    ttl: Duration,
    pub(super) nodes: NodeStore,
    pub(super) tree: NodeTree,
    pub(super) images: ImageStates,
    /// Every pod the cache counts, by uid.
    pods: HashMap<String, PodState>,
    /// Uids of the assumed pods among `pods` (few: only those between assume and confirmation).
    assumed: HashSet<String>,
    pub(super) index: SnapshotIndex,
}

/// What the cache holds, for debugging and tests.
#[derive(Debug, Clone)]
pub struct CacheDump {
    pub nodes: HashMap<String, Arc<NodeInfo>>,
    pub assumed_pods: HashSet<String>,
}

/// The scheduler cache; cheap to share (`Arc<Cache>`), every method takes the one lock briefly.
#[derive(Debug)]
pub struct Cache {
    inner: Mutex<Inner>,
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

fn pod_node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

fn pod_ref(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

impl Inner {
    fn add_pod(&mut self, pod: Arc<PodInfo>, assumed: bool) {
        let uid = pod.uid().to_string();
        let node = pod.node_name().to_string();
        self.nodes
            .with_node(&node, |info| info.add_pod(pod.clone()));
        self.pods.insert(
            uid.clone(),
            PodState {
                pod,
                deadline: None,
                binding_finished: false,
            },
        );
        if assumed {
            self.assumed.insert(uid);
        }
    }

    /// Takes the pod with `uid` off `node`, dropping a node info left with neither a node nor
    /// pods, and forgets the pod.
    fn remove_pod(&mut self, uid: &str, node: &str) {
        if self.nodes.infos.contains_key(node) {
            let (found, empty) = self.nodes.with_node(node, |info| {
                let found = info.remove_pod(uid);
                (found, info.pods.is_empty() && info.node.is_none())
            });
            if !found {
                tracing::error!(
                    uid,
                    node,
                    "pod not found on its node in the scheduler cache"
                );
            }
            if empty {
                self.nodes.remove(node);
            }
        } else {
            tracing::error!(uid, node, "node not found when trying to remove pod");
        }
        self.pods.remove(uid);
        self.assumed.remove(uid);
    }

    /// Replaces a counted pod by its new version, on the new version's node.
    fn replace_pod(&mut self, uid: &str, old_node: &str, new: Arc<PodInfo>) {
        self.remove_pod(uid, old_node);
        self.add_pod(new, false);
    }

    fn cleanup_assumed(&mut self, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let expired: Vec<(String, String)> = self
            .assumed
            .iter()
            .filter_map(|uid| {
                let Some(ps) = self.pods.get(uid) else {
                    tracing::error!(uid, "assumed pod missing from the cache's pod states");
                    return Some((uid.clone(), String::new()));
                };
                let due = ps.binding_finished && ps.deadline.is_some_and(|d| now > d);
                due.then(|| (uid.clone(), ps.pod.node_name().to_string()))
            })
            .collect();
        for (uid, node) in expired {
            if node.is_empty() {
                self.assumed.remove(&uid);
                continue;
            }
            if let Some(ps) = self.pods.get(&uid) {
                tracing::info!(pod = %ps.pod.key, uid, "assumed pod expired");
            }
            self.remove_pod(&uid, &node);
        }
    }
}

impl Cache {
    /// A cache forgetting assumed pods `assumed_pod_ttl` after their binding finished without
    /// the informer confirming them; zero keeps them until confirmed or forgotten.
    pub fn new(assumed_pod_ttl: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner {
                ttl: assumed_pod_ttl,
                nodes: NodeStore::default(),
                tree: NodeTree::default(),
                images: ImageStates::default(),
                pods: HashMap::new(),
                assumed: HashSet::new(),
                index: SnapshotIndex::default(),
            }),
        }
    }

    pub fn add_node(&self, node: Arc<Node>) {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let name = node_name(&node).to_string();
        if let Some(old) = inner.nodes.infos.get(&name).and_then(|i| i.node.clone()) {
            inner.images.remove_node(&old);
            // A re-add under another zone must move it in the tree too.
            inner.tree.update_node(&old, &node);
        } else {
            inner.tree.add_node(&node);
        }
        let images = inner.images.add_node(&node);
        inner.nodes.with_node(&name, |info| {
            info.image_states = images;
            info.set_node(node);
        });
    }

    /// Replaces a node's object. The cache's own copy is what gets replaced (it may be newer
    /// than `_old` if events were coalesced).
    pub fn update_node(&self, _old: &Node, new: Arc<Node>) {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let name = node_name(&new).to_string();
        match inner.nodes.infos.get(&name).and_then(|i| i.node.clone()) {
            Some(cached) => {
                inner.images.remove_node(&cached);
                inner.tree.update_node(&cached, &new);
            }
            None => inner.tree.add_node(&new),
        }
        let images = inner.images.add_node(&new);
        inner.nodes.with_node(&name, |info| {
            info.image_states = images;
            info.set_node(new);
        });
    }

    /// Forgets a node. Its info stays, without the node, while pods are still counted on it:
    /// pod deletions come through another watch and may arrive after the node's.
    pub fn remove_node(&self, node: &Node) {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let name = node_name(node);
        let Some(info) = inner.nodes.infos.get(name) else {
            tracing::error!(node = name, "node is not found in the scheduler cache");
            return;
        };
        let cached = info.node.clone();
        if info.pods.is_empty() {
            inner.nodes.remove(name);
        } else {
            inner.nodes.with_node(name, |info| {
                info.node = None;
                info.image_states.clear();
            });
        }
        // The tree and the images hold what the cache last saw, which may be newer than `node`.
        let cached = cached.unwrap_or_else(|| Arc::new(node.clone()));
        if let Err(e) = inner.tree.remove_node(&cached) {
            tracing::error!(error = %e, "removing a node from the node tree");
        }
        inner.images.remove_node(&cached);
    }

    /// A bound pod seen by the informer. An assumed pod is confirmed (and moved, if it was
    /// bound elsewhere than assumed); a pod the cache no longer has (expired) is added back.
    /// Returns the pod's info (the queue's events reuse it).
    pub fn add_pod(&self, pod: Arc<Pod>) -> Option<Arc<PodInfo>> {
        let uid = pod_uid(&pod).to_string();
        let node = pod_node_name(&pod).to_string();
        if node.is_empty() {
            tracing::debug!(pod = %pod_ref(&pod), "ignoring a pod not bound to a node");
            return None;
        }
        let info = Arc::new(PodInfo::new(pod));
        let returned = info.clone();
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let current = inner.pods.get(&uid).map(|s| s.pod.node_name().to_string());
        match current {
            Some(assumed_node) if inner.assumed.contains(&uid) => {
                if assumed_node != node {
                    tracing::info!(
                        pod = %info.key,
                        assumed_node,
                        current_node = node,
                        "pod was added to a different node than it was assumed"
                    );
                }
                inner.replace_pod(&uid, &assumed_node, info);
            }
            None => inner.add_pod(info, false),
            Some(_) => {
                tracing::error!(pod = %info.key, uid, "pod was already in added state");
            }
        }
        Some(returned)
    }

    pub fn update_pod(&self, old: &Pod, new: Arc<Pod>) {
        let uid = pod_uid(old).to_string();
        let info = Arc::new(PodInfo::new(new));
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let Some(current) = inner.pods.get(&uid).map(|s| s.pod.node_name().to_string()) else {
            tracing::error!(
                pod = %pod_ref(old),
                uid,
                "pod is not added to scheduler cache, so cannot be updated"
            );
            return;
        };
        // An assumed pod gets an Add (confirming it) before any Update.
        if inner.assumed.contains(&uid) {
            tracing::error!(pod = %pod_ref(old), uid, "assumed pod should not be updated");
            return;
        }
        if current != info.node_name() {
            // Upstream exits here; the cache follows the informer instead of dying.
            tracing::error!(
                pod = %info.key,
                previous_node = current,
                node = info.node_name(),
                "pod updated on a different node than previously added to; the scheduler cache was corrupted"
            );
        }
        inner.replace_pod(&uid, &current, info);
    }

    pub fn remove_pod(&self, pod: &Pod) {
        let uid = pod_uid(pod);
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let Some(current) = inner.pods.get(uid).map(|s| s.pod.node_name().to_string()) else {
            tracing::error!(
                pod = %pod_ref(pod),
                uid,
                "pod is not found in scheduler cache, so cannot be removed from it"
            );
            return;
        };
        let node = pod_node_name(pod);
        // An empty node name happens when a missed delete is replayed from the informer's
        // last known state; the cache's node is the one to take the pod off either way.
        if !node.is_empty() && node != current {
            tracing::error!(
                pod = %pod_ref(pod),
                cached_node = current,
                node,
                "pod was removed from a different node than it was added to; the scheduler cache was corrupted"
            );
        }
        inner.remove_pod(uid, &current);
    }

    /// Counts a pod on the node the scheduler chose (its `spec.nodeName`) until it is
    /// confirmed by the informer, forgotten, or expires after its binding finished.
    pub fn assume_pod(&self, pod: Arc<PodInfo>) -> Result<(), String> {
        let uid = pod.uid().to_string();
        if pod.node_name().is_empty() {
            return Err(format!(
                "pod {uid}({}) has no node name, so can't be assumed",
                pod.key
            ));
        }
        let mut inner = self.inner.lock();
        if inner.pods.contains_key(&uid) {
            return Err(format!(
                "pod {uid}({}) is in the cache, so can't be assumed",
                pod.key
            ));
        }
        inner.add_pod(pod, true);
        Ok(())
    }

    /// The binding was sent: the assumed pod may now expire if the informer never confirms it.
    pub fn finish_binding(&self, pod: &PodInfo) {
        self.finish_binding_at(pod, Instant::now());
    }

    pub(crate) fn finish_binding_at(&self, pod: &PodInfo, now: Instant) {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let uid = pod.uid();
        if !inner.assumed.contains(uid) {
            return;
        }
        let ttl = inner.ttl;
        if let Some(state) = inner.pods.get_mut(uid) {
            state.deadline = (!ttl.is_zero()).then(|| now + ttl);
            state.binding_finished = true;
        }
    }

    /// Undoes an assumption (the binding or a later plugin failed).
    pub fn forget_pod(&self, pod: &PodInfo) {
        let uid = pod.uid();
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let Some(current) = inner.pods.get(uid).map(|s| s.pod.node_name().to_string()) else {
            tracing::error!(pod = %pod.key, uid, "pod wasn't assumed so cannot be forgotten");
            return;
        };
        if current != pod.node_name() {
            tracing::error!(
                pod = %pod.key,
                uid,
                assumed_node = pod.node_name(),
                assigned_node = current,
                "pod was assumed on one node but assigned to another, so cannot be forgotten"
            );
            return;
        }
        if !inner.assumed.contains(uid) {
            tracing::error!(pod = %pod.key, uid, "pod wasn't assumed so cannot be forgotten");
            return;
        }
        inner.remove_pod(uid, &current);
    }

    pub fn is_assumed_pod(&self, uid: &str) -> bool {
        self.inner.lock().assumed.contains(uid)
    }

    /// The pod the cache counts under `uid`, bound or assumed.
    pub fn get_pod(&self, uid: &str) -> Option<Arc<PodInfo>> {
        self.inner.lock().pods.get(uid).map(|s| s.pod.clone())
    }

    /// The cache's current info for a node (including a node-less one still holding pods).
    pub fn node_info(&self, name: &str) -> Option<Arc<NodeInfo>> {
        self.inner.lock().nodes.infos.get(name).cloned()
    }

    /// Drops assumed pods whose binding finished and whose deadline passed before `now`.
    pub fn cleanup_assumed_pods(&self, now: Instant) {
        self.inner.lock().cleanup_assumed(now);
    }

    /// Runs [`Cache::cleanup_assumed_pods`] every `period` until `shutdown`.
    pub fn run_cleanup(self: &Arc<Self>, period: Duration, shutdown: CancellationToken) {
        let cache = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = ticker.tick() => cache.cleanup_assumed_pods(Instant::now()),
                }
            }
        });
    }

    /// Brings `snapshot` up to date with the cache, copying only the nodes changed since the
    /// snapshot's generation (see `snapshot_update`).
    pub fn update_snapshot(&self, snapshot: &mut Snapshot) {
        self.inner.lock().update_snapshot(snapshot);
    }

    /// Node infos held, including those kept for the pods of a removed node (as upstream).
    pub fn node_count(&self) -> usize {
        self.inner.lock().nodes.infos.len()
    }

    /// Pods counted on any node info, including those of removed nodes.
    pub fn pod_count(&self) -> usize {
        self.inner
            .lock()
            .nodes
            .infos
            .values()
            .map(|i| i.pods.len())
            .sum()
    }

    pub fn dump(&self) -> CacheDump {
        let inner = self.inner.lock();
        CacheDump {
            nodes: inner.nodes.infos.clone(),
            assumed_pods: inner.assumed.clone(),
        }
    }
}
