//! Writes of namespaces: their PodSecurity labels must be valid, and tightening the enforce
//! level reports the existing pods it would refuse.

use super::checks::{evaluate, forbidden_reasons};
use super::levels::{Level, LevelVersion, Policy, policy_from_labels};
use crate::admission::Operation;
use api_types::validation::{ErrorList, go_quote};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Upstream stops looking at existing pods after this many.
const MAX_PODS_TO_CHECK: usize = 3000;

/// What a namespace create or update amounts to.
#[derive(Debug, PartialEq)]
pub enum NamespaceReview {
    Allowed,
    /// The labels are malformed (a 422 naming each bad label).
    Invalid(ErrorList),
    /// The enforce level became stricter: existing pods must be checked against it.
    CheckPods(LevelVersion),
}

/// Reviews the labels of `namespace` (and of `old`, its stored version, on update).
pub fn review_namespace(
    operation: Operation,
    namespace: &Value,
    old: Option<&Value>,
    defaults: Policy,
) -> NamespaceReview {
    let (policy, errors) = policy_from_labels(&namespace["metadata"]["labels"], defaults);
    match (operation, old) {
        (Operation::Create, _) if !errors.is_empty() => NamespaceReview::Invalid(errors),
        (Operation::Update, Some(old)) => {
            let (old_policy, old_errors) = policy_from_labels(&old["metadata"]["labels"], defaults);
            // Labels that were already bad in the same way do not block unrelated updates.
            if !errors.is_empty() && (old_errors.is_empty() || errors != old_errors) {
                return NamespaceReview::Invalid(errors);
            }
            let (new, old) = (policy.enforce, old_policy.enforce);
            if new == old
                || new.level == Level::Privileged
                || (new.version == old.version && new.level <= old.level)
            {
                return NamespaceReview::Allowed;
            }
            NamespaceReview::CheckPods(new)
        }
        _ => NamespaceReview::Allowed,
    }
}

/// Upstream's warnings for existing pods that `enforce` would refuse: one per distinct set
/// of reasons, naming the first pod (by name) and how many others share it. Pods of one
/// controller are checked once before their siblings, so a large deployment does not crowd
/// out the rest within the limit.
pub fn existing_pod_warnings(
    namespace: &str,
    enforce: LevelVersion,
    pods: &[Arc<Value>],
    exempt_runtime_class: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut first = Vec::new();
    let mut siblings = Vec::new();
    let mut controllers = HashSet::new();
    for pod in pods {
        let runtime_class = pod["spec"]["runtimeClassName"].as_str().unwrap_or_default();
        if !runtime_class.is_empty() && exempt_runtime_class(runtime_class) {
            continue;
        }
        let controller = pod["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["controller"] == true)
            .and_then(|r| r["uid"].as_str());
        match controller {
            Some(uid) if !controllers.insert(uid) => siblings.push(pod),
            _ => first.push(pod),
        }
    }
    first.extend(siblings);
    let total = first.len();
    first.truncate(MAX_PODS_TO_CHECK);

    // reasons -> (lexically first pod name, count), in order of first appearance
    let mut order = Vec::new();
    let mut counts: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for pod in &first {
        let violations = evaluate(enforce.level, &pod["metadata"], &pod["spec"]);
        if violations.is_empty() {
            continue;
        }
        let reasons = forbidden_reasons(&violations);
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let entry = counts.entry(reasons.clone()).or_insert_with(|| {
            order.push(reasons);
            (name.to_string(), 0)
        });
        if name < entry.0.as_str() {
            entry.0 = name.to_string();
        }
        entry.1 += 1;
    }

    let mut warnings = Vec::new();
    if first.len() < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {} of {total} existing pods",
            first.len()
        ));
    }
    if !order.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {} violate the new PodSecurity enforce level {}",
            go_quote(namespace),
            go_quote(&enforce.to_string())
        ));
    }
    let mut pod_warnings: Vec<String> = order
        .iter()
        .map(|reasons| {
            let (name, count) = &counts[reasons];
            match count {
                1 => format!("{name}: {reasons}"),
                2 => format!("{name} (and 1 other pod): {reasons}"),
                n => format!("{name} (and {} other pods): {reasons}", n - 1),
            }
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    warnings
}

#[cfg(test)]
mod tests {
    use super::super::levels::{ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL, Version};
    use super::*;
    use serde_json::json;

    fn ns(labels: Value) -> Value {
        json!({"metadata": {"name": "ns", "labels": labels}})
    }

    #[test]
    fn create_with_bad_labels_is_invalid() {
        let review = review_namespace(
            Operation::Create,
            &ns(json!({ENFORCE_LEVEL_LABEL: "foo"})),
            None,
            Policy::default(),
        );
        let NamespaceReview::Invalid(errors) = review else {
            panic!("{review:?}")
        };
        let status = errors.to_status("", "Namespace", "ns");
        assert_eq!(
            status.message.as_deref(),
            Some(
                r#"Namespace "ns" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#
            )
        );
        assert_eq!(
            review_namespace(
                Operation::Create,
                &ns(json!({ENFORCE_LEVEL_LABEL: "restricted"})),
                None,
                Policy::default()
            ),
            NamespaceReview::Allowed
        );
    }

    #[test]
    fn update_refuses_only_newly_bad_labels() {
        let bad = ns(json!({ENFORCE_LEVEL_LABEL: "foo", "team": "a"}));
        let still_bad = ns(json!({ENFORCE_LEVEL_LABEL: "foo", "team": "b"}));
        assert_eq!(
            review_namespace(Operation::Update, &still_bad, Some(&bad), Policy::default()),
            NamespaceReview::Allowed
        );
        let worse = ns(json!({ENFORCE_LEVEL_LABEL: "bar"}));
        assert!(matches!(
            review_namespace(Operation::Update, &worse, Some(&bad), Policy::default()),
            NamespaceReview::Invalid(_)
        ));
        let good = ns(json!({}));
        assert!(matches!(
            review_namespace(Operation::Update, &bad, Some(&good), Policy::default()),
            NamespaceReview::Invalid(_)
        ));
    }

    #[test]
    fn only_a_stricter_enforce_level_checks_pods() {
        let review = |new: Value, old: Value| {
            review_namespace(
                Operation::Update,
                &ns(new),
                Some(&ns(old)),
                Policy::default(),
            )
        };
        let baseline = LevelVersion {
            level: Level::Baseline,
            version: Version::Latest,
        };
        assert_eq!(
            review(json!({ENFORCE_LEVEL_LABEL: "baseline"}), json!({})),
            NamespaceReview::CheckPods(baseline)
        );
        assert_eq!(
            review(
                json!({ENFORCE_LEVEL_LABEL: "baseline"}),
                json!({ENFORCE_LEVEL_LABEL: "restricted"})
            ),
            NamespaceReview::Allowed
        );
        assert_eq!(
            review(
                json!({ENFORCE_LEVEL_LABEL: "privileged", ENFORCE_VERSION_LABEL: "v1.30"}),
                json!({ENFORCE_LEVEL_LABEL: "baseline"})
            ),
            NamespaceReview::Allowed
        );
        // A different version is a different policy, even at a laxer level.
        assert!(matches!(
            review(
                json!({ENFORCE_LEVEL_LABEL: "baseline", ENFORCE_VERSION_LABEL: "v1.30"}),
                json!({ENFORCE_LEVEL_LABEL: "restricted"})
            ),
            NamespaceReview::CheckPods(_)
        ));
    }

    fn pod(name: &str, spec: Value, controller: Option<&str>) -> Arc<Value> {
        let owners = controller.map(
            |uid| json!([{"uid": uid, "controller": true, "kind": "ReplicaSet", "name": "rs"}]),
        );
        Arc::new(json!({"metadata": {"name": name, "ownerReferences": owners}, "spec": spec}))
    }

    #[test]
    fn existing_pods_are_summarised_per_reason() {
        let host = json!({"hostNetwork": true, "containers": [{"name": "c"}]});
        let privileged =
            json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]});
        let fine = json!({"containers": [{"name": "c"}]});
        let pods = vec![
            pod("web-2", host.clone(), Some("u1")),
            pod("web-1", host.clone(), Some("u1")),
            pod("web-3", host, Some("u1")),
            pod("priv", privileged.clone(), None),
            pod("apriv", privileged, None),
            pod("ok", fine, None),
            pod(
                "rc",
                json!({"runtimeClassName": "kata", "hostPID": true}),
                None,
            ),
        ];
        let enforce = LevelVersion {
            level: Level::Baseline,
            version: Version::Latest,
        };
        let warnings = existing_pod_warnings("ns", enforce, &pods, |rc| rc == "kata");
        assert_eq!(
            warnings,
            vec![
                r#"existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest""#,
                "apriv (and 1 other pod): privileged",
                "web-1 (and 2 other pods): host namespaces",
            ]
        );
        assert!(existing_pod_warnings("ns", enforce, &pods[5..6], |_| false).is_empty());
    }
}
