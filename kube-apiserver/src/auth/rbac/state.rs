//! The RBAC objects the authorizer answers from: an immutable snapshot (`RbacState`) with the
//! ClusterRole aggregation already resolved, behind a store (`RbacStore`) whose snapshot is
//! swapped atomically, so a watch-driven updater can keep it current while every request reads
//! a consistent view without waiting on writers.

use std::collections::BTreeMap;
use std::sync::Arc;

use api_types::k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding,
};
use api_types::labels::Selector;
use parking_lot::RwLock;

/// One RBAC object, as an informer delivers it.
#[derive(Debug, Clone, PartialEq)]
pub enum RbacObject {
    /// A namespaced Role.
    Role(Role),
    /// A ClusterRole.
    ClusterRole(ClusterRole),
    /// A namespaced RoleBinding.
    RoleBinding(RoleBinding),
    /// A ClusterRoleBinding.
    ClusterRoleBinding(ClusterRoleBinding),
}

/// Which of the four RBAC kinds an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RbacKind {
    /// `Role`.
    Role,
    /// `ClusterRole`.
    ClusterRole,
    /// `RoleBinding`.
    RoleBinding,
    /// `ClusterRoleBinding`.
    ClusterRoleBinding,
}

impl RbacObject {
    /// The object's kind.
    pub fn kind(&self) -> RbacKind {
        match self {
            RbacObject::Role(_) => RbacKind::Role,
            RbacObject::ClusterRole(_) => RbacKind::ClusterRole,
            RbacObject::RoleBinding(_) => RbacKind::RoleBinding,
            RbacObject::ClusterRoleBinding(_) => RbacKind::ClusterRoleBinding,
        }
    }
}

fn key(
    meta: &api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// An immutable view of every Role, ClusterRole and binding. ClusterRoles with an
/// `aggregationRule` answer with the rules aggregated from the ClusterRoles their selectors
/// match (what upstream's aggregation controller writes into them), whatever rules they carry.
#[derive(Debug, Clone, Default)]
pub struct RbacState {
    roles: BTreeMap<(String, String), Role>,
    cluster_roles: BTreeMap<String, ClusterRole>,
    /// Keyed by namespace, then name: the authorizer reads one namespace's bindings.
    role_bindings: BTreeMap<String, BTreeMap<String, RoleBinding>>,
    cluster_role_bindings: BTreeMap<String, ClusterRoleBinding>,
    /// The effective rules of every aggregated ClusterRole.
    aggregated: BTreeMap<String, Vec<PolicyRule>>,
}

impl RbacState {
    /// A snapshot holding `objects` (later objects replace earlier ones with the same key).
    pub fn new(objects: impl IntoIterator<Item = RbacObject>) -> Self {
        let mut s = RbacState::default();
        for o in objects {
            s.insert(o);
        }
        s.aggregate();
        s
    }

    fn insert(&mut self, object: RbacObject) {
        match object {
            RbacObject::Role(r) => {
                self.roles.insert(key(&r.metadata), r);
            }
            RbacObject::ClusterRole(r) => {
                self.cluster_roles.insert(key(&r.metadata).1, r);
            }
            RbacObject::RoleBinding(b) => {
                let (ns, name) = key(&b.metadata);
                self.role_bindings.entry(ns).or_default().insert(name, b);
            }
            RbacObject::ClusterRoleBinding(b) => {
                self.cluster_role_bindings.insert(key(&b.metadata).1, b);
            }
        }
    }

    fn remove(&mut self, object: &RbacObject) {
        match object {
            RbacObject::Role(r) => {
                self.roles.remove(&key(&r.metadata));
            }
            RbacObject::ClusterRole(r) => {
                self.cluster_roles.remove(&key(&r.metadata).1);
            }
            RbacObject::RoleBinding(b) => {
                let (ns, name) = key(&b.metadata);
                if let Some(m) = self.role_bindings.get_mut(&ns) {
                    m.remove(&name);
                    if m.is_empty() {
                        self.role_bindings.remove(&ns);
                    }
                }
            }
            RbacObject::ClusterRoleBinding(b) => {
                self.cluster_role_bindings.remove(&key(&b.metadata).1);
            }
        }
    }

    /// Drops every object of `kind`.
    fn clear(&mut self, kind: RbacKind) {
        match kind {
            RbacKind::Role => self.roles.clear(),
            RbacKind::ClusterRole => self.cluster_roles.clear(),
            RbacKind::RoleBinding => self.role_bindings.clear(),
            RbacKind::ClusterRoleBinding => self.cluster_role_bindings.clear(),
        }
    }

    /// Recomputes the rules of every aggregated ClusterRole. Upstream's controller converges
    /// to a fixed point (e.g. `admin` takes `edit`'s rules once `edit` has taken `view`'s), so
    /// this iterates to that fixed point: starting from nothing, each round gives every
    /// aggregated role the union of the current rules of the roles it selects. The sets only
    /// grow, so it ends, cycles included (roles in a cycle end up with each other's rules).
    fn aggregate(&mut self) {
        // Selectors parsed once; an invalid one selects nothing, as the controller skips it.
        let selectors: Vec<(String, Vec<Selector>)> = self
            .cluster_roles
            .iter()
            .filter_map(|(name, r)| {
                let agg = r.aggregation_rule.as_ref()?;
                let sels = agg
                    .cluster_role_selectors
                    .iter()
                    .flatten()
                    .filter_map(|ls| Selector::from_label_selector(Some(ls)).ok())
                    .collect();
                Some((name.clone(), sels))
            })
            .collect();
        let mut current: BTreeMap<String, Vec<PolicyRule>> = selectors
            .iter()
            .map(|(n, _)| (n.clone(), Vec::new()))
            .collect();
        // Each round either adds a rule somewhere or stops; the bound only guards a bug.
        let bound = self.cluster_roles.len() + 2;
        for _ in 0..bound {
            let mut changed = false;
            for (name, sels) in &selectors {
                let mut rules: Vec<PolicyRule> = Vec::new();
                for sel in sels {
                    for (other, candidate) in &self.cluster_roles {
                        if other == name {
                            continue;
                        }
                        let labels = candidate.metadata.labels.clone().unwrap_or_default();
                        if !sel.matches(&labels) {
                            continue;
                        }
                        let source = match current.get(other) {
                            Some(aggregated) => aggregated.as_slice(),
                            None => candidate.rules.as_deref().unwrap_or_default(),
                        };
                        for rule in source {
                            if !rules.contains(rule) {
                                rules.push(rule.clone());
                            }
                        }
                    }
                }
                if current.get(name) != Some(&rules) {
                    current.insert(name.clone(), rules);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        self.aggregated = current;
    }

    /// A Role by namespace and name.
    pub fn role(&self, namespace: &str, name: &str) -> Option<&Role> {
        self.roles.get(&(namespace.to_string(), name.to_string()))
    }

    /// A ClusterRole by name, as stored.
    pub fn cluster_role(&self, name: &str) -> Option<&ClusterRole> {
        self.cluster_roles.get(name)
    }

    /// A ClusterRole's effective rules (aggregated ones for an aggregated role), `None` when
    /// there is no such ClusterRole.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        if let Some(rules) = self.aggregated.get(name) {
            return Some(rules);
        }
        self.cluster_roles
            .get(name)
            .map(|r| r.rules.as_deref().unwrap_or_default())
    }

    /// The RoleBindings of one namespace, by name.
    pub fn role_bindings(&self, namespace: &str) -> impl Iterator<Item = &RoleBinding> {
        self.role_bindings
            .get(namespace)
            .into_iter()
            .flat_map(|m| m.values())
    }

    /// Every ClusterRoleBinding, by name.
    pub fn cluster_role_bindings(&self) -> impl Iterator<Item = &ClusterRoleBinding> {
        self.cluster_role_bindings.values()
    }
}

/// The shared, current `RbacState`. Readers take a cheap `Arc` snapshot; writers build the next
/// state off to the side and swap it in, so a request never sees half an update.
#[derive(Debug, Default)]
pub struct RbacStore {
    current: RwLock<Arc<RbacState>>,
}

impl RbacStore {
    /// A store holding `objects`.
    pub fn new(objects: impl IntoIterator<Item = RbacObject>) -> Self {
        RbacStore {
            current: RwLock::new(Arc::new(RbacState::new(objects))),
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<RbacState> {
        self.current.read().clone()
    }

    /// Replaces everything (an informer's initial list or relist).
    pub fn replace(&self, objects: impl IntoIterator<Item = RbacObject>) {
        let next = Arc::new(RbacState::new(objects));
        *self.current.write() = next;
    }

    /// Replaces every object of `kind` with `objects` (a relist of one resource), keeping the
    /// other kinds; objects of another kind in `objects` are ignored.
    pub fn replace_kind(&self, kind: RbacKind, objects: impl IntoIterator<Item = RbacObject>) {
        let objects: Vec<RbacObject> = objects.into_iter().filter(|o| o.kind() == kind).collect();
        self.update(|s| {
            s.clear(kind);
            for o in objects {
                s.insert(o);
            }
        });
    }

    /// Adds or replaces one object (a watch `ADDED` or `MODIFIED`).
    pub fn upsert(&self, object: RbacObject) {
        self.update(|s| s.insert(object));
    }

    /// Removes the object with `object`'s kind, namespace and name (a watch `DELETED`).
    pub fn delete(&self, object: &RbacObject) {
        self.update(|s| s.remove(object));
    }

    /// Copy-on-write under the write lock, so concurrent writers do not lose each other's
    /// changes; RBAC objects change rarely, so the copy is cheap next to the reads it spares.
    fn update(&self, f: impl FnOnce(&mut RbacState)) {
        let mut guard = self.current.write();
        let mut next = (**guard).clone();
        f(&mut next);
        next.aggregate();
        *guard = Arc::new(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cluster_role(name: &str) -> RbacObject {
        RbacObject::ClusterRole(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// Concurrent writers must not lose each other's upserts, and readers always see a whole
    /// snapshot.
    #[test]
    fn concurrent_upserts_are_all_kept() {
        let store = Arc::new(RbacStore::default());
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        store.upsert(cluster_role(&format!("r-{w}-{i}")));
                        let snap = store.snapshot();
                        assert!(snap.cluster_role(&format!("r-{w}-{i}")).is_some());
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        let snap = store.snapshot();
        for w in 0..4 {
            for i in 0..50 {
                assert!(snap.cluster_role(&format!("r-{w}-{i}")).is_some());
            }
        }
        store.delete(&cluster_role("r-0-0"));
        assert!(store.snapshot().cluster_role("r-0-0").is_none());
        assert!(snap.cluster_role("r-0-0").is_some());
    }
}
