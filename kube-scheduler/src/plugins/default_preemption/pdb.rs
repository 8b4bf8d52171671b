//! PodDisruptionBudgets as preemption weighs them: which victims would push a budget below
//! zero. Victims are counted in order, so the budget left shrinks as earlier victims use it.

use crate::framework::PodInfo;
use api_types::labels::Selector;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use std::collections::BTreeSet;
use std::sync::Arc;

/// One PDB reduced to what the violation check reads.
#[derive(Debug, Clone)]
pub struct Budget {
    pub namespace: String,
    /// `None` when the selector is unset, empty or invalid: such a PDB protects nothing.
    pub selector: Option<Selector>,
    pub disruptions_allowed: i32,
    /// Pods the API server already counted against the budget (an eviction in flight).
    pub disrupted_pods: BTreeSet<String>,
}

impl Budget {
    pub fn from_pdb(pdb: &PodDisruptionBudget) -> Self {
        let selector = pdb
            .spec
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s.selector.as_ref()).ok())
            .filter(|s| !s.is_empty() && !s.is_nothing());
        let status = pdb.status.as_ref();
        Self {
            namespace: pdb.metadata.namespace.clone().unwrap_or_default(),
            selector,
            disruptions_allowed: status.map_or(0, |s| s.disruptions_allowed),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    fn covers(&self, pod: &PodInfo) -> bool {
        self.namespace == pod.namespace()
            && self.selector.as_ref().is_some_and(|s| s.matches(pod.labels()))
            // Already being disrupted: the API server counted it, counting it again would
            // use the budget twice.
            && !self.disrupted_pods.contains(pod.name())
    }
}

pub fn budgets(pdbs: &[Arc<PodDisruptionBudget>]) -> Vec<Budget> {
    pdbs.iter().map(|p| Budget::from_pdb(p)).collect()
}

/// Splits `pods` (in the order given) into those whose removal violates some budget and the
/// rest, each keeping that order.
pub fn split_by_violation(
    pods: &[Arc<PodInfo>],
    budgets: &[Budget],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = budgets.iter().map(|b| b.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for pod in pods {
        let mut violates = false;
        // A pod without labels matches no selector.
        if !pod.labels().is_empty() {
            for (budget, left) in budgets.iter().zip(allowed.iter_mut()) {
                if budget.covers(pod) {
                    *left -= 1;
                    if *left < 0 {
                        violates = true;
                    }
                }
            }
        }
        if violates {
            violating.push(pod.clone());
        } else {
            non_violating.push(pod.clone());
        }
    }
    (violating, non_violating)
}
