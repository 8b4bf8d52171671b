//! The rules an aggregated ClusterRole should hold.

use api_types::labels::Selector;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use std::sync::Arc;

/// The union, without duplicates, of the rules of every other ClusterRole matched by any of
/// `role`'s selectors, selectors in order and matched roles by name (as upstream, so the result
/// is stable). `None` when `role` aggregates nothing. An invalid selector matches nothing.
pub fn aggregated_rules(role: &ClusterRole, all: &[Arc<ClusterRole>]) -> Option<Vec<PolicyRule>> {
    let rule = role.aggregation_rule.as_ref()?;
    let mut sorted: Vec<&Arc<ClusterRole>> = all.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for label_selector in rule.cluster_role_selectors.iter().flatten() {
        let Ok(selector) = Selector::from_label_selector(Some(label_selector)) else {
            continue;
        };
        for other in &sorted {
            if other.metadata.name == role.metadata.name {
                continue;
            }
            let labels = other.metadata.labels.clone().unwrap_or_default();
            if !selector.matches(&labels) {
                continue;
            }
            for r in other.rules.iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use std::collections::BTreeMap;

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule {
            verbs: vec![verb.into()],
            api_groups: Some(vec!["".into()]),
            resources: Some(vec![resource.into()]),
            ..Default::default()
        }
    }

    fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn aggregating(name: &str, selectors: &[(&str, &str)]) -> ClusterRole {
        let mut r = role(name, &[("agg", "self")], vec![rule("delete", "everything")]);
        r.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(
                selectors
                    .iter()
                    .map(|(k, v)| LabelSelector {
                        match_labels: Some(BTreeMap::from([(k.to_string(), v.to_string())])),
                        ..Default::default()
                    })
                    .collect(),
            ),
        });
        r
    }

    #[test]
    fn union_of_matching_roles_without_duplicates_or_itself() {
        let target = aggregating("agg", &[("agg", "self"), ("x", "y")]);
        let all: Vec<Arc<ClusterRole>> = vec![
            Arc::new(target.clone()),
            Arc::new(role(
                "b",
                &[("agg", "self")],
                vec![rule("get", "pods"), rule("list", "pods")],
            )),
            Arc::new(role(
                "a",
                &[("x", "y")],
                vec![rule("get", "pods"), rule("get", "secrets")],
            )),
            Arc::new(role("c", &[("other", "1")], vec![rule("get", "nodes")])),
        ];
        let rules = aggregated_rules(&target, &all).expect("aggregates");
        assert_eq!(
            rules,
            [
                rule("get", "pods"),
                rule("list", "pods"),
                rule("get", "secrets")
            ]
        );
        assert_eq!(aggregated_rules(&role("plain", &[], vec![]), &all), None);
        let nothing = aggregating("lonely", &[("nobody", "1")]);
        assert_eq!(aggregated_rules(&nothing, &all), Some(vec![]));
    }
}
