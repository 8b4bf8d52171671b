//! A pod with what the scheduler derives from it once (requests, parsed affinity terms),
//! instead of on every node of every cycle.

use super::resource::{Resource, pod_requests};
use api_types::labels::Selector;
use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// A parsed pod (anti-)affinity term.
#[derive(Debug, Clone)]
pub struct AffinityTerm {
    /// Namespaces named by the term (the pod's own when neither these nor a selector is given).
    pub namespaces: HashSet<String>,
    pub selector: Selector,
    pub topology_key: String,
    /// `namespaceSelector`: `None` when unset (only `namespaces` count).
    pub namespace_selector: Option<Selector>,
}

impl AffinityTerm {
    fn parse(pod_namespace: &str, term: &PodAffinityTerm) -> Self {
        let selector = Selector::from_label_selector(term.label_selector.as_ref())
            .unwrap_or_else(|_| Selector::nothing());
        let namespace_selector = term.namespace_selector.as_ref().map(|s| {
            Selector::from_label_selector(Some(s)).unwrap_or_else(|_| Selector::nothing())
        });
        let mut namespaces: HashSet<String> = term.namespaces.iter().flatten().cloned().collect();
        if namespaces.is_empty() && namespace_selector.is_none() {
            namespaces.insert(pod_namespace.to_string());
        }
        Self {
            namespaces,
            selector,
            topology_key: term.topology_key.clone(),
            namespace_selector,
        }
    }

    /// Whether `pod` (in a namespace labelled `ns_labels`) is selected by this term.
    pub fn matches(&self, pod: &PodInfo, ns_labels: Option<&BTreeMap<String, String>>) -> bool {
        let ns_ok = self.namespaces.contains(pod.namespace())
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| ns_labels.is_some_and(|l| s.matches(l)));
        ns_ok && self.selector.matches(pod.labels())
    }
}

/// A weighted (preferred) affinity term.
#[derive(Debug, Clone)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

/// A pod plus its derived scheduling facts.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    /// `namespace/name`.
    pub key: String,
    pub required_affinity_terms: Vec<AffinityTerm>,
    pub required_anti_affinity_terms: Vec<AffinityTerm>,
    pub preferred_affinity_terms: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity_terms: Vec<WeightedAffinityTerm>,
    /// The effective request (see [`pod_requests`]).
    pub requests: Resource,
    /// The request with scoring's defaults for unset CPU and memory.
    pub non_zero_requests: Resource,
}

static EMPTY_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> Self {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let key = format!(
            "{}/{}",
            ns,
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
        let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let required = |terms: Option<&Vec<PodAffinityTerm>>| {
            terms
                .into_iter()
                .flatten()
                .map(|t| AffinityTerm::parse(&ns, t))
                .collect::<Vec<_>>()
        };
        let preferred = |terms: Option<&Vec<WeightedPodAffinityTerm>>| {
            terms
                .into_iter()
                .flatten()
                .map(|t| WeightedAffinityTerm {
                    term: AffinityTerm::parse(&ns, &t.pod_affinity_term),
                    weight: t.weight,
                })
                .collect::<Vec<_>>()
        };
        Self {
            required_affinity_terms: required(pa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            required_anti_affinity_terms: required(paa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            preferred_affinity_terms: preferred(pa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            preferred_anti_affinity_terms: preferred(paa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            requests: pod_requests(&pod, false),
            non_zero_requests: pod_requests(&pod, true),
            key,
            pod,
        }
    }

    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or_default()
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        self.pod.metadata.labels.as_ref().unwrap_or(&EMPTY_LABELS)
    }

    /// `spec.priority`, 0 when unset (as upstream's `corev1helpers.PodPriority`).
    pub fn priority(&self) -> i32 {
        self.pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
    }

    pub fn node_name(&self) -> &str {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default()
    }

    pub fn has_affinity(&self) -> bool {
        !self.required_affinity_terms.is_empty()
            || !self.required_anti_affinity_terms.is_empty()
            || !self.preferred_affinity_terms.is_empty()
            || !self.preferred_anti_affinity_terms.is_empty()
    }

    pub fn has_required_anti_affinity(&self) -> bool {
        !self.required_anti_affinity_terms.is_empty()
    }
}
