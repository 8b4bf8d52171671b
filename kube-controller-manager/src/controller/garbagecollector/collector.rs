//! The two workers of the collector: attemptToDelete (delete dependents whose owners are all
//! gone, finish foreground deletions) and attemptToOrphan (strip an orphaning owner from its
//! dependents, then release it). Decisions are verified with live reads of the apiserver: the
//! graph says where to look, never alone that something is gone.

use super::discovery::Resource;
use super::graph::{Actions, FOREGROUND, Graph, Identity, Node, ORPHAN, Observed};
use super::patch;
use anyhow::{Context as _, bail};
use client_go_rs::client::DynamicClient;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, Preconditions,
    PropagationPolicy,
};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};

/// How often a metadata write is retried after a conflict before the item is requeued.
const CONFLICT_RETRIES: usize = 5;

/// A cluster-scoped dependent names a namespaced owner: retrying cannot fix it.
#[derive(Debug)]
pub struct NamespacedOwnerOfClusterScoped;

impl std::fmt::Display for NamespacedOwnerOfClusterScoped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cluster-scoped object refers to a namespaced owner")
    }
}

impl std::error::Error for NamespacedOwnerOfClusterScoped {}

/// The state every handler and worker shares.
pub struct Shared {
    pub graph: Mutex<Graph>,
    pub mapper: RwLock<HashMap<(String, String), Resource>>,
    pub client: kube::Client,
    pub delete_queue: RateLimitingQueue<String>,
    pub orphan_queue: RateLimitingQueue<String>,
    pub recorder: EventRecorder,
    /// Poked when CRDs or APIServices change, so new resources get monitors without waiting
    /// for the periodic discovery.
    pub api_changed: tokio::sync::Notify,
}

/// How an owner reference resolved.
enum OwnerState {
    Dangling,
    /// Live; true if it is being deleted in the foreground.
    Present {
        waiting_for_dependents: bool,
    },
}

impl Shared {
    pub fn observe(&self, old: Option<&Observed>, new: &Observed) {
        let acts = self.graph.lock().observe(old, new);
        self.dispatch(acts);
    }

    pub fn observe_delete(&self, identity: &Identity) {
        let acts = self.graph.lock().observe_delete(identity);
        self.dispatch(acts);
    }

    fn dispatch(&self, acts: Actions) {
        for uid in acts.delete {
            self.delete_queue.add(uid);
        }
        for uid in acts.orphan {
            self.orphan_queue.add(uid);
        }
        for (dep, owner) in acts.invalid_namespace {
            let regarding = ObjectReference {
                api_version: Some(dep.api_version.clone()),
                kind: Some(dep.kind.clone()),
                namespace: Some(dep.namespace.clone()).filter(|ns| !ns.is_empty()),
                name: Some(dep.name.clone()),
                uid: Some(dep.uid.clone()),
                ..Default::default()
            };
            let invalid = Identity::of_owner(&owner, &dep.namespace);
            self.recorder.event(
                &regarding,
                EventType::Warning,
                "OwnerRefInvalidNamespace",
                format!(
                    "ownerRef {invalid} does not exist in namespace {:?}",
                    dep.namespace
                ),
            );
        }
    }

    fn node(&self, uid: &str) -> Option<Node> {
        self.graph.lock().node(uid).cloned()
    }

    fn resolve(&self, api_version: &str, kind: &str) -> anyhow::Result<Resource> {
        if let Some(r) = self
            .mapper
            .read()
            .get(&(api_version.to_string(), kind.to_string()))
        {
            return Ok(r.clone());
        }
        // Built-in kinds are known before discovery has run.
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let known = DynamicClient::resolve_kind(&GroupVersionKind::gvk(group, version, kind))
            .with_context(|| format!("unable to map {api_version} {kind} to a resource"))?;
        Ok(Resource {
            resource: known.resource,
            namespaced: known.namespaced,
        })
    }

    /// The API holding `identity`, or `None` where it cannot exist (a namespaced kind without a
    /// namespace).
    fn api_for(&self, identity: &Identity) -> anyhow::Result<Option<Api<DynamicObject>>> {
        let r = self.resolve(&identity.api_version, &identity.kind)?;
        Ok(match (r.namespaced, identity.namespace.as_str()) {
            (true, "") => None,
            (true, ns) => Some(Api::namespaced_with(self.client.clone(), ns, &r.resource)),
            (false, _) => Some(Api::all_with(self.client.clone(), &r.resource)),
        })
    }

    async fn get_object(&self, identity: &Identity) -> anyhow::Result<Option<DynamicObject>> {
        let Some(api) = self.api_for(identity)? else {
            return Ok(None);
        };
        api.get_opt(&identity.name)
            .await
            .with_context(|| format!("getting {identity}"))
    }

    fn virtual_delete(&self, identity: &Identity) {
        let acts = self.graph.lock().virtual_delete(identity);
        self.dispatch(acts);
    }

    /// One attemptToDelete item.
    pub async fn attempt_to_delete(&self, uid: String) -> anyhow::Result<()> {
        let Some(node) = self.node(&uid) else {
            return Ok(());
        };
        // Deletion is a one-way trip: its dependents are handled when it is gone.
        if node.being_deleted && !node.deleting_dependents {
            return Ok(());
        }
        let latest = match self.get_object(&node.identity).await? {
            Some(obj) if obj.metadata.uid.as_deref() == Some(uid.as_str()) => obj,
            _ => {
                self.virtual_delete(&node.identity);
                return Ok(());
            }
        };
        if node.deleting_dependents {
            return self.process_deleting_dependents(&node).await;
        }
        match self.collect_if_orphaned(&node, &latest).await {
            Err(err) if err.is::<NamespacedOwnerOfClusterScoped>() => return Ok(()),
            other => other?,
        }
        if !node.observed {
            // A virtual node stays queued until an informer confirms the object, or a
            // creation and deletion during a relist would leave it in the graph forever.
            bail!("{} exists but has not been observed yet", node.identity);
        }
        Ok(())
    }

    async fn collect_if_orphaned(&self, node: &Node, latest: &DynamicObject) -> anyhow::Result<()> {
        let owners = latest.metadata.owner_references.clone().unwrap_or_default();
        if owners.is_empty() {
            return Ok(());
        }
        let mut solid = 0;
        let mut dangling = HashSet::new();
        let mut waiting = HashSet::new();
        for owner in &owners {
            match self.owner_state(owner, node).await? {
                OwnerState::Dangling => {
                    dangling.insert(owner.uid.clone());
                }
                OwnerState::Present {
                    waiting_for_dependents: true,
                } => {
                    waiting.insert(owner.uid.clone());
                }
                OwnerState::Present { .. } => solid += 1,
            }
        }
        if solid > 0 {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            // Owners that are gone, or deleting in the foreground, let go of this object: it
            // stays for its remaining owners and no longer holds the deleting ones.
            let gone: HashSet<String> = dangling.union(&waiting).cloned().collect();
            self.patch_owner_references(&node.identity, |refs| patch::without_owners(refs, &gone))
                .await?;
            return Ok(());
        }
        if !waiting.is_empty() && !node.dependents.is_empty() {
            let in_cycle = {
                let graph = self.graph.lock();
                node.dependents
                    .iter()
                    .any(|d| graph.node(d).is_some_and(|n| n.deleting_dependents))
            };
            let mut check_version = true;
            if in_cycle {
                // A dependent that is also waiting on us: stop blocking our owners so the
                // foreground deletions of the cycle can finish.
                check_version = !self
                    .patch_owner_references(&node.identity, patch::unblocked)
                    .await?;
            }
            return self
                .delete_object(
                    &node.identity,
                    latest,
                    PropagationPolicy::Foreground,
                    check_version,
                )
                .await;
        }
        let policy = if has_finalizer(latest, ORPHAN) {
            PropagationPolicy::Orphan
        } else if has_finalizer(latest, FOREGROUND) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        self.delete_object(&node.identity, latest, policy, true)
            .await
    }

    /// Whether an owner reference still points at a live object with that uid.
    async fn owner_state(&self, owner: &OwnerReference, dep: &Node) -> anyhow::Result<OwnerState> {
        let cluster_key = Identity::of_owner(owner, "");
        let namespaced_key = Identity::of_owner(owner, &dep.identity.namespace);
        {
            let graph = self.graph.lock();
            if graph.is_absent(&cluster_key) || graph.is_absent(&namespaced_key) {
                return Ok(OwnerState::Dangling);
            }
        }
        let r = self.resolve(&owner.api_version, &owner.kind)?;
        if r.namespaced && dep.identity.namespace.is_empty() {
            tracing::info!(
                item = %dep.identity,
                owner = %namespaced_key,
                "cluster-scoped object refers to a namespaced owner, not collected"
            );
            return Err(NamespacedOwnerOfClusterScoped.into());
        }
        let key = if r.namespaced {
            namespaced_key
        } else {
            cluster_key
        };
        match self.get_object(&key).await? {
            Some(o) if o.metadata.uid.as_deref() == Some(owner.uid.as_str()) => {
                Ok(OwnerState::Present {
                    waiting_for_dependents: deleting_with(&o, FOREGROUND),
                })
            }
            _ => {
                self.graph.lock().mark_absent(key);
                Ok(OwnerState::Dangling)
            }
        }
    }

    /// An owner deleting in the foreground: released once no dependent blocks it.
    async fn process_deleting_dependents(&self, node: &Node) -> anyhow::Result<()> {
        let blocking: Vec<Node> = {
            let graph = self.graph.lock();
            node.dependents
                .iter()
                .filter_map(|d| graph.node(d))
                .filter(|d| d.blocks(&node.identity.uid))
                .cloned()
                .collect()
        };
        if blocking.is_empty() {
            return self.remove_finalizer(&node.identity, FOREGROUND).await;
        }
        for dep in blocking.iter().filter(|d| !d.deleting_dependents) {
            self.delete_queue.add(dep.identity.uid.clone());
        }
        Ok(())
    }

    /// One attemptToOrphan item: every dependent forgets the owner, then the owner's orphan
    /// finalizer goes.
    pub async fn attempt_to_orphan(&self, uid: String) -> anyhow::Result<()> {
        let Some(owner) = self.node(&uid) else {
            return Ok(());
        };
        let dependents: Vec<Identity> = {
            let graph = self.graph.lock();
            owner
                .dependents
                .iter()
                .filter_map(|d| graph.node(d))
                .map(|d| d.identity.clone())
                .collect()
        };
        let this: HashSet<String> = [uid.clone()].into();
        for dep in &dependents {
            self.patch_owner_references(dep, |refs| patch::without_owners(refs, &this))
                .await
                .with_context(|| format!("orphaning {dep}"))?;
        }
        self.remove_finalizer(&owner.identity, ORPHAN).await
    }

    /// Rewrites an object's ownerReferences with `change`; true if a write happened.
    async fn patch_owner_references(
        &self,
        identity: &Identity,
        change: impl Fn(&[OwnerReference]) -> Vec<OwnerReference>,
    ) -> anyhow::Result<bool> {
        let Some(api) = self.api_for(identity)? else {
            return Ok(false);
        };
        for _ in 0..CONFLICT_RETRIES {
            let Some(obj) = api.get_opt(&identity.name).await? else {
                return Ok(false);
            };
            if obj.metadata.uid.as_deref() != Some(identity.uid.as_str()) {
                return Ok(false);
            }
            let refs = obj.metadata.owner_references.clone().unwrap_or_default();
            let wanted = change(&refs);
            if wanted == refs {
                return Ok(false);
            }
            let rv = obj.metadata.resource_version.clone().unwrap_or_default();
            let body = patch::owner_references(&identity.uid, &rv, &wanted);
            match api
                .patch(
                    &identity.name,
                    &PatchParams::default(),
                    &Patch::Merge(&body),
                )
                .await
            {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
                Err(err) => return Err(err).with_context(|| format!("patching {identity}")),
            }
        }
        bail!("ownerReferences of {identity} kept conflicting")
    }

    async fn remove_finalizer(&self, identity: &Identity, finalizer: &str) -> anyhow::Result<()> {
        let Some(api) = self.api_for(identity)? else {
            return Ok(());
        };
        for _ in 0..CONFLICT_RETRIES {
            let Some(obj) = api.get_opt(&identity.name).await? else {
                return Ok(());
            };
            if obj.metadata.uid.as_deref() != Some(identity.uid.as_str()) {
                return Ok(());
            }
            let finalizers = obj.metadata.finalizers.clone().unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let left: Vec<String> = finalizers.into_iter().filter(|f| f != finalizer).collect();
            let rv = obj.metadata.resource_version.clone().unwrap_or_default();
            let body = patch::finalizers(&identity.uid, &rv, &left);
            match api
                .patch(
                    &identity.name,
                    &PatchParams::default(),
                    &Patch::Merge(&body),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(item = %identity, finalizer, "removed finalizer");
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(err) => return Err(err).with_context(|| format!("patching {identity}")),
            }
        }
        bail!("finalizers of {identity} kept conflicting")
    }

    /// Deletes with a uid precondition, and a resourceVersion one when `check_version`: a
    /// conflict only matters if the ownerReferences the decision rested on changed.
    async fn delete_object(
        &self,
        identity: &Identity,
        latest: &DynamicObject,
        policy: PropagationPolicy,
        check_version: bool,
    ) -> anyhow::Result<()> {
        let Some(api) = self.api_for(identity)? else {
            return Ok(());
        };
        let params = |resource_version: Option<String>| DeleteParams {
            propagation_policy: Some(policy.clone()),
            preconditions: Some(Preconditions {
                uid: Some(identity.uid.clone()),
                resource_version,
            }),
            ..DeleteParams::default()
        };
        let first = params(
            check_version
                .then(|| latest.metadata.resource_version.clone())
                .flatten(),
        );
        tracing::info!(item = %identity, ?policy, "deleting object");
        match api.delete(&identity.name, &first).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && check_version => {}
            Err(err) => return Err(err).with_context(|| format!("deleting {identity}")),
        }
        let Some(now) = api.get_opt(&identity.name).await? else {
            return Ok(());
        };
        if now.metadata.uid.as_deref() != Some(identity.uid.as_str()) {
            return Ok(());
        }
        if now.metadata.owner_references != latest.metadata.owner_references {
            bail!("ownerReferences of {identity} changed, re-evaluating");
        }
        match api.delete(&identity.name, &params(None)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(err) => Err(err).with_context(|| format!("deleting {identity}")),
        }
    }
}

fn has_finalizer(obj: &DynamicObject, name: &str) -> bool {
    obj.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == name))
}

fn deleting_with(obj: &DynamicObject, finalizer: &str) -> bool {
    obj.metadata.deletion_timestamp.is_some() && has_finalizer(obj, finalizer)
}
