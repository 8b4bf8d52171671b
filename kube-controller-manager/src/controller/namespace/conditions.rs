//! The namespace status conditions a deletion reports, as upstream's
//! `namespaceConditionUpdater`: every sync sets all five types, each either to its failure
//! (status True) or back to its "ok" variant (status False).

use k8s_openapi::api::core::v1::{Namespace, NamespaceCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

pub const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
pub const GV_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
pub const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// In upstream's order, which is also the order they are appended to the status.
const TYPES: [&str; 5] = [
    DISCOVERY_FAILURE,
    GV_PARSING_FAILURE,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
];

fn ok_variant(kind: &str) -> (&'static str, &'static str) {
    match kind {
        DISCOVERY_FAILURE => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        GV_PARSING_FAILURE => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        CONTENT_FAILURE => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        CONTENT_REMAINING => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    }
}

/// What is left after one pass over a namespace's content.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Remaining {
    /// `<resource>.<group>` → instances still present.
    pub by_resource: BTreeMap<String, usize>,
    /// finalizer → instances carrying it.
    pub by_finalizer: BTreeMap<String, usize>,
}

/// The failures of one sync; whatever is not set is reported as its "ok" variant.
#[derive(Debug, Default)]
pub struct ConditionUpdater {
    failures: Vec<(&'static str, &'static str, String)>,
}

impl ConditionUpdater {
    pub fn discovery_failed(&mut self, failed_groups: &[String]) {
        if failed_groups.is_empty() {
            return;
        }
        self.failures.push((
            DISCOVERY_FAILURE,
            "DiscoveryFailed",
            format!(
                "Discovery failed for some groups, {} failing: unable to retrieve the complete \
                 list of server APIs: {}",
                failed_groups.len(),
                failed_groups.join(", ")
            ),
        ));
    }

    pub fn group_version_parsing_failed(&mut self, message: String) {
        self.failures
            .push((GV_PARSING_FAILURE, "GroupVersionParsingFailed", message));
    }

    pub fn content_deletion_failed(&mut self, errors: &[String]) {
        if errors.is_empty() {
            return;
        }
        let message = if errors.len() == 1 {
            errors[0].clone()
        } else {
            format!("[{}]", errors.join(", "))
        };
        self.failures
            .push((CONTENT_FAILURE, "ContentDeletionFailed", message));
    }

    pub fn content_totals(&mut self, remaining: &Remaining) {
        let resources: Vec<String> = remaining
            .by_resource
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| format!("{r} has {n} resource instances"))
            .collect();
        if !resources.is_empty() {
            self.failures.push((
                CONTENT_REMAINING,
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", resources.join(", ")),
            ));
        }
        let finalizers: Vec<String> = remaining
            .by_finalizer
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        if !finalizers.is_empty() {
            self.failures.push((
                FINALIZERS_REMAINING,
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    finalizers.join(", ")
                ),
            ));
        }
    }

    /// Writes the conditions into `ns`; true when anything changed (status, reason or
    /// message; the transition time moves only with the status).
    pub fn apply(&self, ns: &mut Namespace) -> bool {
        let now = Time(jiff::Timestamp::now());
        let status = ns.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let mut changed = false;
        for kind in TYPES {
            let (status_value, reason, message) = match self.failures.iter().find(|f| f.0 == kind) {
                Some((_, reason, message)) => ("True", *reason, message.clone()),
                None => {
                    let (reason, message) = ok_variant(kind);
                    ("False", reason, message.to_string())
                }
            };
            match conditions.iter_mut().find(|c| c.type_ == kind) {
                None => {
                    conditions.push(NamespaceCondition {
                        type_: kind.to_string(),
                        status: status_value.to_string(),
                        reason: Some(reason.to_string()),
                        message: Some(message),
                        last_transition_time: Some(now.clone()),
                    });
                    changed = true;
                }
                Some(old) => {
                    if old.status != status_value {
                        old.last_transition_time = Some(now.clone());
                    }
                    if old.status != status_value
                        || old.reason.as_deref() != Some(reason)
                        || old.message.as_deref() != Some(message.as_str())
                    {
                        old.status = status_value.to_string();
                        old.reason = Some(reason.to_string());
                        old.message = Some(message);
                        changed = true;
                    }
                }
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition<'a>(ns: &'a Namespace, kind: &str) -> &'a NamespaceCondition {
        ns.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == kind))
            .expect("condition present")
    }

    #[test]
    fn remaining_content_and_finalizers_are_reported_as_upstream() {
        let mut remaining = Remaining::default();
        remaining.by_resource.insert("configmaps.".into(), 2);
        remaining
            .by_resource
            .insert("widgets.example.com".into(), 1);
        remaining.by_resource.insert("secrets.".into(), 0);
        remaining.by_finalizer.insert("example.com/hold".into(), 1);
        let mut updater = ConditionUpdater::default();
        updater.content_totals(&remaining);
        let mut ns = Namespace::default();
        assert!(updater.apply(&mut ns));
        let c = condition(&ns, CONTENT_REMAINING);
        assert_eq!(c.status, "True");
        assert_eq!(c.reason.as_deref(), Some("SomeResourcesRemain"));
        assert_eq!(
            c.message.as_deref(),
            Some(
                "Some resources are remaining: configmaps. has 2 resource instances, \
                 widgets.example.com has 1 resource instances"
            )
        );
        let c = condition(&ns, FINALIZERS_REMAINING);
        assert_eq!(c.reason.as_deref(), Some("SomeFinalizersRemain"));
        assert_eq!(
            c.message.as_deref(),
            Some(
                "Some content in the namespace has finalizers remaining: \
                 example.com/hold in 1 resource instances"
            )
        );
        let c = condition(&ns, CONTENT_FAILURE);
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some("ContentDeleted"))
        );
        assert_eq!(
            ns.status
                .as_ref()
                .unwrap()
                .conditions
                .as_ref()
                .unwrap()
                .len(),
            5
        );
    }

    #[test]
    fn unchanged_conditions_are_not_rewritten_and_failures_clear() {
        let mut ns = Namespace::default();
        let mut failing = ConditionUpdater::default();
        failing.discovery_failed(&["metrics.k8s.io/v1beta1: unavailable".into()]);
        failing.content_deletion_failed(&["boom".into()]);
        assert!(failing.apply(&mut ns));
        assert!(!failing.apply(&mut ns), "same failures: no write");
        assert_eq!(
            condition(&ns, DISCOVERY_FAILURE).message.as_deref(),
            Some(
                "Discovery failed for some groups, 1 failing: unable to retrieve the complete \
                 list of server APIs: metrics.k8s.io/v1beta1: unavailable"
            )
        );
        assert!(ConditionUpdater::default().apply(&mut ns));
        for kind in TYPES {
            assert_eq!(condition(&ns, kind).status, "False", "{kind}");
        }
    }
}
