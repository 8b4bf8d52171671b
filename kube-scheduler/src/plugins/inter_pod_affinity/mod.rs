//! The InterPodAffinity plugin: required pod affinity and anti-affinity (Filter, both the
//! incoming pod's terms and existing pods' anti-affinity against it) and preferred terms plus
//! existing pods' terms (Score).

mod filtering;
mod scoring;

use crate::apis::config::args::{InterPodAffinityArgs, decode_args};
use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::parallelize::Parallelizer;
use crate::framework::pod_info::AffinityTerm;
use crate::framework::{
    FilterPlugin, Plugin, PluginContext, PodInfo, PreFilterExtensions, PreFilterPlugin,
    PreScorePlugin, ScorePlugin,
};
use crate::plugins::helper::objects::{as_node, as_pod};
use api_types::labels::Selector;
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub use filtering::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
};

pub const NAME: &str = "InterPodAffinity";

#[derive(Clone)]
pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    ns_lister: Lister<Namespace>,
    parallelizer: Parallelizer,
}

pub fn new(args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: InterPodAffinityArgs = decode_args(args)?;
    if !(0..=100).contains(&args.hard_pod_affinity_weight) {
        return Err(format!(
            "hardPodAffinityWeight: Invalid value: {}: not in valid range [0-100]",
            args.hard_pod_affinity_weight
        ));
    }
    Ok(Arc::new(InterPodAffinity {
        args,
        ns_lister: ctx.informers.informer::<Namespace>().lister(),
        parallelizer: ctx.parallelizer.clone(),
    }))
}

/// An incoming pod's term with its namespaceSelector resolved to namespace names, so matching
/// an existing pod needs no namespace lookup.
#[derive(Debug, Clone)]
pub(super) struct ResolvedTerm {
    namespaces: HashSet<String>,
    /// An empty namespaceSelector: every namespace.
    all_namespaces: bool,
    selector: Selector,
    topology_key: String,
}

impl ResolvedTerm {
    fn matches(&self, pod: &PodInfo) -> bool {
        (self.all_namespaces || self.namespaces.contains(pod.namespace()))
            && self.selector.matches(pod.labels())
    }
}

/// Whether `pod` matches every term (and there is at least one).
fn matches_all(terms: &[ResolvedTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

/// An existing pod's term against the incoming pod, whose namespace has `ns_labels`.
fn existing_term_matches(
    term: &AffinityTerm,
    pod: &PodInfo,
    ns_labels: &BTreeMap<String, String>,
) -> bool {
    term.matches(pod, Some(ns_labels))
}

impl InterPodAffinity {
    fn resolve(&self, term: &AffinityTerm) -> ResolvedTerm {
        let mut namespaces = term.namespaces.clone();
        let mut all_namespaces = false;
        if let Some(sel) = &term.namespace_selector {
            if sel.is_empty() {
                all_namespaces = true;
            } else {
                namespaces.extend(
                    self.ns_lister
                        .list_selected(sel)
                        .iter()
                        .filter_map(|n| n.metadata.name.clone()),
                );
            }
        }
        ResolvedTerm {
            namespaces,
            all_namespaces,
            selector: term.selector.clone(),
            topology_key: term.topology_key.clone(),
        }
    }

    /// The labels of the pod's namespace (empty when the namespace is not known yet).
    fn namespace_labels(&self, ns: &str) -> BTreeMap<String, String> {
        self.ns_lister
            .get(ns)
            .and_then(|n| n.metadata.labels.clone())
            .unwrap_or_default()
    }

    /// Queue the pod when a bound pod now matches all its affinity terms, or no longer
    /// matches (or is gone while matching) its anti-affinity terms.
    fn hint_pod_change(pod: &Pod, old: Option<&Pod>, new: Option<&Pod>) -> QueueingHint {
        let unbound = |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_none_or(str::is_empty)
        };
        if new.is_some_and(unbound) || old.is_some_and(unbound) {
            return QueueingHint::Skip;
        }
        let info = PodInfo::new(Arc::new(pod.clone()));
        // As upstream, terms are matched against no namespace labels here: only an empty
        // namespaceSelector (every namespace) or the named namespaces match.
        let empty = BTreeMap::new();
        let all = |terms: &[AffinityTerm], p: &Pod| {
            let ns = p.metadata.namespace.as_deref().unwrap_or_default();
            let labels = p.metadata.labels.as_ref().unwrap_or(&empty);
            !terms.is_empty()
                && terms.iter().all(|t| {
                    (t.namespaces.contains(ns)
                        || t.namespace_selector
                            .as_ref()
                            .is_some_and(|s| s.matches(&empty)))
                        && t.selector.matches(labels)
                })
        };
        let terms = &info.required_affinity_terms;
        let anti = &info.required_anti_affinity_terms;
        let queue_if = |b: bool| {
            if b {
                QueueingHint::Queue
            } else {
                QueueingHint::Skip
            }
        };
        match (old, new) {
            (Some(old), Some(new)) => queue_if(
                (!all(terms, old) && all(terms, new)) || (all(anti, old) && !all(anti, new)),
            ),
            (None, Some(new)) => queue_if(all(terms, new)),
            (Some(old), None) => queue_if(all(anti, old)),
            (None, None) => QueueingHint::Queue,
        }
    }

    /// Queue the pod when a node gains (or changes the value of) an affinity topology key, or
    /// loses or changes an anti-affinity one; any new node may help anti-affinity.
    fn hint_node_change(pod: &Pod, old: Option<&Node>, new: Option<&Node>) -> QueueingHint {
        let Some(new) = new else {
            return QueueingHint::Queue;
        };
        let info = PodInfo::new(Arc::new(pod.clone()));
        for t in &info.required_affinity_terms {
            let after = label(new, &t.topology_key);
            match old {
                None if after.is_some() => return QueueingHint::Queue,
                None => {}
                Some(old) => {
                    let before = label(old, &t.topology_key);
                    if after.is_some() && before != after {
                        return QueueingHint::Queue;
                    }
                }
            }
        }
        for t in &info.required_anti_affinity_terms {
            let Some(old) = old else {
                return QueueingHint::Queue;
            };
            let before = label(old, &t.topology_key);
            if before.is_some() && before != label(new, &t.topology_key) {
                return QueueingHint::Queue;
            }
        }
        QueueingHint::Skip
    }
}

/// Counts per topology key, then value: lookups by a node's `&str` labels need no allocation.
pub(super) type TopologyCounts = HashMap<String, HashMap<String, i64>>;

/// Adds `delta` to (key, value), dropping entries that reach zero so "no entries" means
/// "no pod counted".
fn add_count(m: &mut TopologyCounts, key: &str, value: &str, delta: i64) {
    let inner = m.entry(key.to_string()).or_default();
    let n = inner.entry(value.to_string()).or_default();
    *n += delta;
    if *n == 0 {
        inner.remove(value);
        if inner.is_empty() {
            m.remove(key);
        }
    }
}

fn merge_counts(into: &mut TopologyCounts, from: TopologyCounts) {
    for (k, values) in from {
        for (v, n) in values {
            add_count(into, &k, &v, n);
        }
    }
}

fn label<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    n.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(
                EventResource::Pod,
                action::ADD | action::UPDATE_POD_LABEL | action::DELETE,
            )
            .with_hint(|pod, old, new| Self::hint_pod_change(pod, as_pod(old), as_pod(new))),
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_LABEL)
                .with_hint(|pod, old, new| Self::hint_node_change(pod, as_node(old), as_node(new))),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut crate::framework::CycleState,
        pod: &PodInfo,
        snapshot: &crate::framework::Snapshot,
    ) -> (
        Option<crate::framework::PreFilterResult>,
        crate::framework::Status,
    ) {
        self.run_pre_filter(state, pod, snapshot)
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
