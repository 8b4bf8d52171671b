//! What Filter and Score share: the pod's constraints in the form the plugin evaluates them,
//! which nodes a constraint counts (node inclusion policies), and how matching pods are counted.

use super::PodTopologySpread;
use crate::framework::PodInfo;
pub use crate::plugins::helper::node_affinity::RequiredNodeAffinity;
use crate::plugins::helper::taints::{
    find_untolerated_taint, is_do_not_schedule, node_taints, pod_tolerations,
};
use api_types::labels::{Operator, Requirement, Selector};
use k8s_openapi::api::core::v1::{Node, Pod, TopologySpreadConstraint};
use std::collections::BTreeMap;

pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

/// A constraint with its selector parsed and its optional fields defaulted.
#[derive(Debug, Clone)]
pub struct Constraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub selector: Selector,
    pub min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes the pod could select count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: only nodes whose taints the pod tolerates count.
    pub honor_node_taints: bool,
}

impl Constraint {
    /// Whether `node` counts for this constraint under its inclusion policies.
    pub fn includes_node(&self, pod: &Pod, node: &Node, affinity: &RequiredNodeAffinity) -> bool {
        if self.honor_node_affinity && !affinity.matches(node) {
            return false;
        }
        !(self.honor_node_taints
            && find_untolerated_taint(node_taints(node), pod_tolerations(pod), is_do_not_schedule)
                .is_some())
    }
}

/// The pod's constraints with `when_unsatisfiable == action`, selectors parsed and
/// `matchLabelKeys` merged in from the pod's labels.
pub fn filter_constraints(
    constraints: &[TopologySpreadConstraint],
    pod_labels: &BTreeMap<String, String>,
    action: &str,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for c in constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
    {
        let mut selector =
            Selector::from_label_selector(c.label_selector.as_ref()).map_err(|e| e.to_string())?;
        let keys = c.match_label_keys.as_deref().unwrap_or_default();
        // A selector that matches nothing stays so: upstream only merges into selectors with
        // requirements.
        if !keys.is_empty() && !selector.is_nothing() {
            for key in keys {
                if let Some(value) = pod_labels.get(key) {
                    let r = Requirement::new(key.clone(), Operator::Equals, [value.clone()])
                        .map_err(|e| format!("{e:?}"))?;
                    selector = selector.with_requirement(r);
                }
            }
        }
        out.push(Constraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        });
    }
    Ok(out)
}

/// Whether the node has a label for every constraint's topology key.
pub fn node_has_all_keys(labels: &BTreeMap<String, String>, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

pub fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// Pods on a node in namespace `ns` matched by `selector`, skipping terminating pods; an
/// empty selector counts nothing (as upstream).
pub fn count_matching(pods: &[std::sync::Arc<PodInfo>], selector: &Selector, ns: &str) -> usize {
    if selector.is_empty() {
        return 0;
    }
    pods.iter()
        .filter(|p| {
            p.pod.metadata.deletion_timestamp.is_none()
                && p.namespace() == ns
                && selector.matches(p.labels())
        })
        .count()
}

impl PodTopologySpread {
    /// The constraints of `action` that apply to `pod`: its own, or the cluster defaults.
    pub(super) fn constraints(&self, pod: &Pod, action: &str) -> Result<Vec<Constraint>, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&EMPTY);
        let own = pod
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_deref())
            .unwrap_or_default();
        if !own.is_empty() {
            return filter_constraints(own, labels, action);
        }
        let mut constraints = filter_constraints(&self.default_constraints, labels, action)?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = self.default_selector(pod);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }

    /// The selector of the Services, ReplicationController, ReplicaSet or StatefulSet the pod
    /// belongs to (upstream's `helper.DefaultSelector`).
    fn default_selector(&self, pod: &Pod) -> Selector {
        let Some(listers) = &self.listers else {
            return Selector::everything();
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        let pod_labels = pod.metadata.labels.as_ref().unwrap_or(&EMPTY);
        let mut set: BTreeMap<String, String> = BTreeMap::new();
        for svc in listers.services.namespace(ns).list() {
            // A Service without a selector selects nothing, not everything.
            let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
                continue;
            };
            if sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v)) {
                set.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut selector = selector_from_set(&set);
        let Some(owner) = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
        else {
            return selector;
        };
        let extra = match (owner.api_version.as_str(), owner.kind.as_str()) {
            ("v1", "ReplicationController") => {
                if let Some(rc_sel) = listers
                    .replication_controllers
                    .namespace(ns)
                    .get(&owner.name)
                    .and_then(|rc| rc.spec.as_ref().and_then(|s| s.selector.clone()))
                {
                    set.extend(rc_sel);
                    selector = selector_from_set(&set);
                }
                None
            }
            ("apps/v1", "ReplicaSet") => listers
                .replica_sets
                .namespace(ns)
                .get(&owner.name)
                .and_then(|rs| rs.spec.as_ref().map(|s| s.selector.clone())),
            ("apps/v1", "StatefulSet") => listers
                .stateful_sets
                .namespace(ns)
                .get(&owner.name)
                .and_then(|ss| ss.spec.as_ref().map(|s| s.selector.clone())),
            _ => None,
        };
        if let Some(ls) = extra
            && let Ok(other) = Selector::from_label_selector(Some(&ls))
            && !other.is_nothing()
        {
            for r in other.requirements() {
                selector = selector.with_requirement(r.clone());
            }
        }
        selector
    }
}

fn selector_from_set(set: &BTreeMap<String, String>) -> Selector {
    // Values come from validated objects; an invalid one only drops that requirement.
    let mut s = Selector::everything();
    for (k, v) in set {
        if let Ok(r) = Requirement::new(k.clone(), Operator::Equals, [v.clone()]) {
            s = s.with_requirement(r);
        }
    }
    s
}
