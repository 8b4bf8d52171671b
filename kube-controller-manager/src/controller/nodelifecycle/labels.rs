//! Upstream's node label reconciliation: the deprecated beta OS and arch labels follow the
//! stable ones the kubelet sets, for workloads still selecting on the old keys.

use k8s_openapi::api::core::v1::Node;
use std::collections::BTreeMap;

const PAIRS: [(&str, &str); 2] = [
    ("kubernetes.io/os", "beta.kubernetes.io/os"),
    ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
];

/// The beta labels to set, or None when they already follow the stable ones.
pub fn reconcile(node: &Node) -> Option<BTreeMap<String, String>> {
    let labels = node.metadata.labels.as_ref()?;
    let patch: BTreeMap<String, String> = PAIRS
        .iter()
        .filter_map(|(stable, beta)| {
            let value = labels.get(*stable)?;
            (labels.get(*beta) != Some(value)).then(|| (beta.to_string(), value.clone()))
        })
        .collect();
    (!patch.is_empty()).then_some(patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Labels = &'static [(&'static str, &'static str)];

    #[test]
    fn beta_labels_follow_stable_ones() {
        let node = |labels: &[(&str, &str)]| {
            let mut n = Node::default();
            n.metadata.labels = Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            n
        };
        let cases: [(Labels, Option<Labels>); 4] = [
            (&[], None),
            (
                &[
                    ("kubernetes.io/os", "linux"),
                    ("kubernetes.io/arch", "amd64"),
                ],
                Some(&[
                    ("beta.kubernetes.io/arch", "amd64"),
                    ("beta.kubernetes.io/os", "linux"),
                ]),
            ),
            (
                &[
                    ("kubernetes.io/os", "linux"),
                    ("beta.kubernetes.io/os", "windows"),
                ],
                Some(&[("beta.kubernetes.io/os", "linux")]),
            ),
            (
                &[
                    ("kubernetes.io/os", "linux"),
                    ("beta.kubernetes.io/os", "linux"),
                ],
                None,
            ),
        ];
        for (i, (labels, want)) in cases.into_iter().enumerate() {
            let want = want.map(|w| {
                w.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(reconcile(&node(labels)), want, "case {i}");
        }
    }
}
