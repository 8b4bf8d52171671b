//! The dependency graph, as upstream's GraphBuilder keeps it: one node per uid, with the owners
//! the object names and the dependents that name it. Owners referenced before they are observed
//! get "virtual" nodes that the collector verifies against the apiserver.
//!
//! Every mutation returns the work it implies ([`Actions`]) instead of touching queues, so the
//! rules are plain functions of the events.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

/// The finalizer of a foreground deletion: the owner waits for its blocking dependents.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of an orphaning deletion: dependents lose their ownerReference first.
pub const ORPHAN: &str = "orphan";

/// How many absent owners are remembered (upstream's LRU holds 500).
const ABSENT_CAPACITY: usize = 500;

/// Who an object is: its coordinates and uid. The namespace is empty for cluster-scoped objects
/// (and for virtual owners referenced from cluster-scoped dependents).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl Identity {
    /// The owner an ownerReference names, assumed to live in the dependent's namespace.
    pub fn of_owner(owner: &OwnerReference, namespace: &str) -> Self {
        Self {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            namespace: namespace.to_string(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
        }
    }

    /// Whether an ownerReference names exactly these coordinates.
    pub fn matches(&self, owner: &OwnerReference) -> bool {
        owner.uid == self.uid
            && owner.name == self.name
            && owner.kind == self.kind
            && owner.api_version == self.api_version
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Upstream's objectReference format, which its events quote.
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// What an informer event tells the graph about one object.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// deletionTimestamp is set.
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

impl Observed {
    fn has_finalizer(&self, name: &str) -> bool {
        self.finalizers.iter().any(|f| f == name)
    }

    fn waiting_for_orphaning(&self) -> bool {
        self.deleting && self.has_finalizer(ORPHAN)
    }

    fn waiting_for_dependents(&self) -> bool {
        self.deleting && self.has_finalizer(FOREGROUND)
    }
}

/// One object in the graph.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// Uids of the nodes naming this one as owner.
    pub dependents: BTreeSet<String>,
    pub being_deleted: bool,
    /// Being deleted in the foreground: waits for its blocking dependents.
    pub deleting_dependents: bool,
    /// Seen through an informer (false for virtual nodes).
    pub observed: bool,
}

impl Node {
    /// The reference to `owner_uid` blocks the owner's foreground deletion.
    pub fn blocks(&self, owner_uid: &str) -> bool {
        self.owners
            .iter()
            .any(|o| o.uid == owner_uid && o.block_owner_deletion == Some(true))
    }
}

/// Work a graph change implies.
#[derive(Debug, Default, PartialEq)]
pub struct Actions {
    /// Uids for the attemptToDelete queue.
    pub delete: Vec<String>,
    /// Uids for the attemptToOrphan queue.
    pub orphan: Vec<String>,
    /// Dependents naming a namespaced owner from another namespace, with that reference
    /// (upstream's OwnerRefInvalidNamespace event).
    pub invalid_namespace: Vec<(Identity, OwnerReference)>,
}

/// The graph and the owners verified absent.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    absent: HashSet<Identity>,
}

impl Graph {
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn is_absent(&self, identity: &Identity) -> bool {
        self.absent.contains(identity)
    }

    pub fn mark_absent(&mut self, identity: Identity) {
        // A bounded memo, not a source of truth: forgetting only costs a GET.
        if self.absent.len() >= ABSENT_CAPACITY {
            self.absent.clear();
        }
        self.absent.insert(identity);
    }

    /// An add or update from an informer (`old` is the previous state on updates).
    pub fn observe(&mut self, old: Option<&Observed>, new: &Observed) -> Actions {
        let mut acts = Actions::default();
        let uid = new.identity.uid.clone();
        if !self.nodes.contains_key(&uid) {
            self.nodes.insert(
                uid.clone(),
                Node {
                    identity: new.identity.clone(),
                    owners: new.owners.clone(),
                    dependents: BTreeSet::new(),
                    being_deleted: new.deleting,
                    deleting_dependents: new.waiting_for_dependents(),
                    observed: true,
                },
            );
            self.add_dependent_to_owners(&uid, &new.owners, &mut acts);
        } else {
            self.observe_existing(new, &mut acts);
        }
        self.process_transitions(old, new, &mut acts);
        acts
    }

    fn observe_existing(&mut self, new: &Observed, acts: &mut Actions) {
        let uid = &new.identity.uid;
        let Some(node) = self.nodes.get(uid) else {
            return;
        };
        if !node.observed && node.identity != new.identity {
            // Dependents that named this object by other coordinates may be wrong; the
            // collector re-verifies them (a no-op where the owner is solid).
            let (_, mismatched) = self.partition_dependents(uid, &new.identity);
            for dep in mismatched {
                if let Some(d) = self.nodes.get(&dep)
                    && !new.identity.namespace.is_empty()
                    && d.identity.namespace != new.identity.namespace
                {
                    report_invalid_namespace(d, uid, acts);
                }
                acts.delete.push(dep);
            }
        }
        let Some(node) = self.nodes.get_mut(uid) else {
            return;
        };
        node.identity = new.identity.clone();
        node.observed = true;
        let (added, removed, changed) = references_diffs(&node.owners, &new.owners);
        if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
            node.owners = new.owners.clone();
            self.add_unblocked_owners(&removed, &changed, acts);
            self.add_dependent_to_owners(uid, &added, acts);
            for owner in &removed {
                if let Some(o) = self.nodes.get_mut(&owner.uid) {
                    o.dependents.remove(uid);
                }
            }
        }
        if new.deleting
            && let Some(node) = self.nodes.get_mut(uid)
        {
            node.being_deleted = true;
        }
    }

    fn process_transitions(&mut self, old: Option<&Observed>, new: &Observed, acts: &mut Actions) {
        let uid = &new.identity.uid;
        if new.waiting_for_orphaning() && !old.is_some_and(Observed::waiting_for_orphaning) {
            acts.orphan.push(uid.clone());
            return;
        }
        if new.waiting_for_dependents() && !old.is_some_and(Observed::waiting_for_dependents) {
            let Some(node) = self.nodes.get_mut(uid) else {
                return;
            };
            node.deleting_dependents = true;
            acts.delete.extend(node.dependents.iter().cloned());
            acts.delete.push(uid.clone());
        }
    }

    /// Owners that waited for a dependent whose blocking reference went away may be done.
    fn add_unblocked_owners(
        &self,
        removed: &[OwnerReference],
        changed: &[(OwnerReference, OwnerReference)],
        acts: &mut Actions,
    ) {
        let unblocked = removed
            .iter()
            .filter(|r| r.block_owner_deletion == Some(true))
            .chain(changed.iter().filter_map(|(old, new)| {
                (old.block_owner_deletion == Some(true) && new.block_owner_deletion != Some(true))
                    .then_some(new)
            }));
        for owner in unblocked {
            if self
                .nodes
                .get(&owner.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                acts.delete.push(owner.uid.clone());
            }
        }
    }

    fn add_dependent_to_owners(
        &mut self,
        dep_uid: &str,
        owners: &[OwnerReference],
        acts: &mut Actions,
    ) {
        let Some(dep) = self.nodes.get(dep_uid).cloned() else {
            return;
        };
        let mut potentially_invalid = false;
        for owner in owners {
            let Some(owner_node) = self.nodes.get_mut(&owner.uid) else {
                // Unseen owner: a virtual node the collector verifies with a GET.
                let mut virtual_node = Node {
                    identity: Identity::of_owner(owner, &dep.identity.namespace),
                    ..Node::default()
                };
                virtual_node.dependents.insert(dep_uid.to_string());
                self.nodes.insert(owner.uid.clone(), virtual_node);
                acts.delete.push(owner.uid.clone());
                continue;
            };
            owner_node.dependents.insert(dep_uid.to_string());
            if owner_node.deleting_dependents {
                // Seen only after its owner started a foreground deletion (informers of
                // different resources race): nothing else would ever queue it.
                acts.delete.push(dep_uid.to_string());
            }
            if potentially_invalid {
                continue;
            }
            let owner_ns = &owner_node.identity.namespace;
            if !owner_ns.is_empty() && *owner_ns != dep.identity.namespace {
                if owner_node.observed {
                    report_invalid_namespace(&dep, &owner.uid, acts);
                }
                potentially_invalid = true;
            } else if !owner_node.identity.matches(owner)
                || (owner_ns.is_empty()
                    && !dep.identity.namespace.is_empty()
                    && !owner_node.observed)
            {
                potentially_invalid = true;
            }
        }
        if potentially_invalid {
            acts.delete.push(dep_uid.to_string());
        }
    }

    /// Splits a node's dependents into those whose reference matches `identity` and those whose
    /// reference (or namespace) does not.
    fn partition_dependents(&self, uid: &str, identity: &Identity) -> (Vec<String>, Vec<String>) {
        let mut matching = Vec::new();
        let mut mismatching = Vec::new();
        let Some(node) = self.nodes.get(uid) else {
            return (matching, mismatching);
        };
        for dep_uid in &node.dependents {
            let Some(dep) = self.nodes.get(dep_uid) else {
                continue;
            };
            let (mut found_match, mut found_mismatch) = (false, false);
            if !identity.namespace.is_empty() && identity.namespace != dep.identity.namespace {
                found_mismatch = true;
            } else {
                for r in dep.owners.iter().filter(|r| r.uid == identity.uid) {
                    if identity.matches(r) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(dep_uid.clone());
            }
            if found_mismatch {
                mismatching.push(dep_uid.clone());
            }
        }
        (matching, mismatching)
    }

    /// A deletion seen by an informer.
    pub fn observe_delete(&mut self, identity: &Identity) -> Actions {
        let mut acts = Actions::default();
        if self.nodes.contains_key(&identity.uid) {
            self.remove_node(identity, &mut acts);
        }
        acts
    }

    /// The collector found `identity` absent from the apiserver (404 or another uid).
    pub fn virtual_delete(&mut self, identity: &Identity) -> Actions {
        let mut acts = Actions::default();
        let Some(node) = self.nodes.get(&identity.uid).cloned() else {
            return acts;
        };
        let (matching, mismatching) = self.partition_dependents(&identity.uid, identity);
        let keep = if !node.observed {
            // Dependents may disagree on where this virtual owner lives: only the ones naming
            // the verified coordinates lose it.
            !mismatching.is_empty()
        } else {
            node.identity != *identity
        };
        if !keep {
            self.remove_node(identity, &mut acts);
            return acts;
        }
        if !matching.is_empty() {
            self.mark_absent(identity.clone());
            acts.delete.extend(matching);
        }
        if !node.observed && node.identity == *identity {
            // Try the coordinates another dependent uses.
            let alternative = mismatching
                .iter()
                .filter_map(|d| self.nodes.get(d))
                .find_map(|d| {
                    d.owners
                        .iter()
                        .filter(|r| r.uid == identity.uid)
                        .map(|r| Identity::of_owner(r, &d.identity.namespace))
                        .find(|alt| alt != identity)
                });
            if let Some(alt) = alternative
                && let Some(n) = self.nodes.get_mut(&identity.uid)
            {
                n.identity = alt;
                acts.delete.push(identity.uid.clone());
            }
        }
        acts
    }

    fn remove_node(&mut self, identity: &Identity, acts: &mut Actions) {
        let Some(node) = self.nodes.remove(&identity.uid) else {
            return;
        };
        for owner in &node.owners {
            if let Some(o) = self.nodes.get_mut(&owner.uid) {
                o.dependents.remove(&identity.uid);
                if o.deleting_dependents {
                    acts.delete.push(owner.uid.clone());
                }
            }
        }
        if !node.dependents.is_empty() {
            self.mark_absent(identity.clone());
        }
        acts.delete.extend(node.dependents);
    }
}

fn report_invalid_namespace(dep: &Node, owner_uid: &str, acts: &mut Actions) {
    if let Some(r) = dep.owners.iter().find(|o| o.uid == owner_uid) {
        acts.invalid_namespace
            .push((dep.identity.clone(), r.clone()));
    }
}

type Diffs = (
    Vec<OwnerReference>,
    Vec<OwnerReference>,
    Vec<(OwnerReference, OwnerReference)>,
);

/// Owner references added, removed, and changed (same uid, other fields), by uid.
pub fn references_diffs(old: &[OwnerReference], new: &[OwnerReference]) -> Diffs {
    let old_by_uid: HashMap<&str, &OwnerReference> =
        old.iter().map(|r| (r.uid.as_str(), r)).collect();
    let new_uids: HashSet<&str> = new.iter().map(|r| r.uid.as_str()).collect();
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for r in new {
        match old_by_uid.get(r.uid.as_str()) {
            None => added.push(r.clone()),
            Some(o) if *o != r => changed.push(((*o).clone(), r.clone())),
            Some(_) => {}
        }
    }
    let removed = old
        .iter()
        .filter(|r| !new_uids.contains(r.uid.as_str()))
        .cloned()
        .collect();
    (added, removed, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, ns: &str, name: &str, uid: &str) -> Identity {
        Identity {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            uid: uid.into(),
        }
    }

    fn owner_ref(owner: &Identity, block: bool) -> OwnerReference {
        OwnerReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
            block_owner_deletion: block.then_some(true),
            controller: None,
        }
    }

    fn obj(identity: &Identity, owners: Vec<OwnerReference>) -> Observed {
        Observed {
            identity: identity.clone(),
            owners,
            ..Observed::default()
        }
    }

    fn deleting(mut o: Observed, finalizer: &str) -> Observed {
        o.deleting = true;
        o.finalizers.push(finalizer.into());
        o
    }

    #[test]
    fn unseen_owner_becomes_a_virtual_node_to_verify() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("ConfigMap", "a", "d", "u-d");
        let acts = g.observe(None, &obj(&dep, vec![owner_ref(&owner, false)]));
        assert_eq!(acts.delete, vec!["u-o".to_string()]);
        let v = g.node("u-o").expect("virtual node");
        assert!(!v.observed);
        assert_eq!(v.identity, owner);
        assert!(v.dependents.contains("u-d"));

        // Observing the owner makes it real without more work.
        let acts = g.observe(None, &obj(&owner, vec![]));
        assert_eq!(acts, Actions::default());
        assert!(g.node("u-o").expect("node").observed);
    }

    #[test]
    fn transitions_enqueue_the_right_work() {
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("Secret", "a", "d", "u-d");
        let cases: Vec<(&str, Observed, Vec<&str>, Vec<&str>)> = vec![
            (
                "orphan",
                deleting(obj(&owner, vec![]), ORPHAN),
                vec![],
                vec!["u-o"],
            ),
            (
                "foreground",
                deleting(obj(&owner, vec![]), FOREGROUND),
                vec!["u-d", "u-o"],
                vec![],
            ),
            (
                "other finalizer",
                deleting(obj(&owner, vec![]), "x/y"),
                vec![],
                vec![],
            ),
        ];
        for (name, update, delete, orphan) in cases {
            let mut g = Graph::default();
            let before = obj(&owner, vec![]);
            g.observe(None, &before);
            g.observe(None, &obj(&dep, vec![owner_ref(&owner, true)]));
            let acts = g.observe(Some(&before), &update);
            assert_eq!(acts.delete, delete, "{name}");
            assert_eq!(acts.orphan, orphan, "{name}");
            // The same state again is no new transition.
            let again = g.observe(Some(&update), &update);
            assert_eq!(again, Actions::default(), "{name} repeated");
        }
    }

    #[test]
    fn dependents_leaving_a_foreground_owner_requeue_it() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("Secret", "a", "d", "u-d");
        g.observe(None, &deleting(obj(&owner, vec![]), FOREGROUND));
        let blocking = obj(&dep, vec![owner_ref(&owner, true)]);
        g.observe(None, &blocking);
        let unblocked = obj(&dep, vec![owner_ref(&owner, false)]);
        let acts = g.observe(Some(&blocking), &unblocked);
        assert_eq!(acts.delete, vec!["u-o".to_string()]);
        assert!(!g.node("u-d").expect("dep").blocks("u-o"));
        // Deletion of the dependent requeues the owner too.
        let acts = g.observe_delete(&dep);
        assert_eq!(acts.delete, vec!["u-o".to_string()]);
        assert!(g.node("u-o").expect("owner").dependents.is_empty());
    }

    #[test]
    fn dependent_seen_after_its_owner_started_a_foreground_deletion_is_queued() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("Secret", "a", "d", "u-d");
        g.observe(None, &deleting(obj(&owner, vec![]), FOREGROUND));
        let acts = g.observe(None, &obj(&dep, vec![owner_ref(&owner, true)]));
        assert_eq!(acts.delete, vec!["u-d".to_string()]);
    }

    #[test]
    fn deleting_an_owner_requeues_its_dependents_and_remembers_it_absent() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("Secret", "a", "d", "u-d");
        g.observe(None, &obj(&owner, vec![]));
        g.observe(None, &obj(&dep, vec![owner_ref(&owner, false)]));
        let acts = g.observe_delete(&owner);
        assert_eq!(acts.delete, vec!["u-d".to_string()]);
        assert!(g.is_absent(&owner));
        assert!(g.node("u-o").is_none());
    }

    #[test]
    fn owner_in_another_namespace_is_reported_once_observed() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("ConfigMap", "", "cluster-thing", "u-d");
        g.observe(None, &obj(&owner, vec![]));
        let r = owner_ref(&owner, false);
        let acts = g.observe(None, &obj(&dep, vec![r.clone()]));
        assert_eq!(acts.invalid_namespace, vec![(dep.clone(), r)]);
        assert_eq!(acts.delete, vec!["u-d".to_string()]);
    }

    #[test]
    fn virtual_owner_observed_elsewhere_reports_its_dependents() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("ConfigMap", "", "cluster-thing", "u-d");
        let r = owner_ref(&owner, false);
        g.observe(None, &obj(&dep, vec![r.clone()]));
        let acts = g.observe(None, &obj(&owner, vec![]));
        assert_eq!(acts.invalid_namespace, vec![(dep, r)]);
        assert_eq!(acts.delete, vec!["u-d".to_string()]);
    }

    #[test]
    fn virtual_delete_removes_the_virtual_owner_and_requeues_dependents() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        let dep = id("Secret", "a", "d", "u-d");
        g.observe(None, &obj(&dep, vec![owner_ref(&owner, false)]));
        let acts = g.virtual_delete(&owner);
        assert_eq!(acts.delete, vec!["u-d".to_string()]);
        assert!(g.node("u-o").is_none());
        assert!(g.is_absent(&owner));
    }

    #[test]
    fn virtual_delete_keeps_an_observed_node_with_other_coordinates() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        g.observe(None, &obj(&owner, vec![]));
        let wrong = id("ConfigMap", "a", "other-name", "u-o");
        assert_eq!(g.virtual_delete(&wrong), Actions::default());
        assert!(g.node("u-o").is_some());
    }

    #[test]
    fn diffs_by_uid() {
        let a = id("ConfigMap", "a", "a", "1");
        let b = id("ConfigMap", "a", "b", "2");
        let c = id("ConfigMap", "a", "c", "3");
        let old = vec![owner_ref(&a, false), owner_ref(&b, true)];
        let new = vec![owner_ref(&b, false), owner_ref(&c, false)];
        let (added, removed, changed) = references_diffs(&old, &new);
        assert_eq!(added, vec![owner_ref(&c, false)]);
        assert_eq!(removed, vec![owner_ref(&a, false)]);
        assert_eq!(changed, vec![(owner_ref(&b, true), owner_ref(&b, false))]);
    }
}
