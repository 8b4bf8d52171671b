//! Node selector terms and node affinity, as upstream's `component-helpers` nodeaffinity: terms
//! are parsed once per pod, and a term that does not parse never matches (upstream's lazy
//! error selector, kept for backwards compatibility) while the other terms still count.

use api_types::validation::names::{is_qualified_name, is_valid_label_value};
use k8s_openapi::api::core::v1::{
    Node, NodeSelector as ApiNodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm as ApiNodeSelectorTerm, Pod, PreferredSchedulingTerm,
};
use std::collections::BTreeMap;

/// The only field a `matchFields` requirement may name.
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

impl LabelRequirement {
    /// Upstream's `labels.NewRequirement` checks: a valid key, value counts per operator,
    /// integers for Gt/Lt, valid label values.
    fn parse(r: &NodeSelectorRequirement) -> Option<Self> {
        if !is_qualified_name(&r.key).is_empty() {
            return None;
        }
        let values = r.values.as_deref().unwrap_or_default();
        let single_int = || match values {
            [v] => v.parse::<i64>().ok(),
            _ => None,
        };
        let op = match r.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() || values.iter().any(|v| !is_valid_label_value(v).is_empty()) {
                    return None;
                }
                if r.operator == "In" {
                    LabelOp::In(values.to_vec())
                } else {
                    LabelOp::NotIn(values.to_vec())
                }
            }
            "Exists" if values.is_empty() => LabelOp::Exists,
            "DoesNotExist" if values.is_empty() => LabelOp::DoesNotExist,
            "Gt" => LabelOp::Gt(single_int()?),
            "Lt" => LabelOp::Lt(single_int()?),
            _ => return None,
        };
        Some(Self {
            key: r.key.clone(),
            op,
        })
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match &self.op {
            LabelOp::In(values) => value.is_some_and(|v| values.contains(v)),
            LabelOp::NotIn(values) => value.is_none_or(|v| !values.contains(v)),
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::Gt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            LabelOp::Lt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// A `matchFields` requirement on the node's name: `In` or `NotIn` with exactly one value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NameRequirement {
    equal: bool,
    name: String,
}

impl NameRequirement {
    fn parse(r: &NodeSelectorRequirement) -> Option<Self> {
        if r.key != OBJECT_NAME_FIELD {
            return None;
        }
        let [name] = r.values.as_deref().unwrap_or_default() else {
            return None;
        };
        let equal = match r.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            _ => return None,
        };
        Some(Self {
            equal,
            name: name.clone(),
        })
    }
}

/// One parsed node selector term: its label and name requirements, ANDed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    labels: Vec<LabelRequirement>,
    fields: Vec<NameRequirement>,
    /// Some requirement did not parse: the term matches nothing.
    invalid: bool,
}

impl NodeSelectorTerm {
    pub fn parse(term: &ApiNodeSelectorTerm) -> Self {
        let mut invalid = false;
        let labels = term
            .match_expressions
            .iter()
            .flatten()
            .filter_map(|r| {
                let parsed = LabelRequirement::parse(r);
                invalid |= parsed.is_none();
                parsed
            })
            .collect();
        let fields = term
            .match_fields
            .iter()
            .flatten()
            .filter_map(|r| {
                let parsed = NameRequirement::parse(r);
                invalid |= parsed.is_none();
                parsed
            })
            .collect();
        Self {
            labels,
            fields,
            invalid,
        }
    }

    /// Whether a node with these labels and name satisfies the term; an empty term matches
    /// nothing, as upstream.
    pub fn matches(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        if self.invalid || (self.labels.is_empty() && self.fields.is_empty()) {
            return false;
        }
        self.labels.iter().all(|r| r.matches(labels))
            && self.fields.iter().all(|r| (r.name == name) == r.equal)
    }

    /// The node names the term's `metadata.name In` requirements allow (their intersection);
    /// `None` when it has none.
    pub fn required_node_names(&self) -> Option<Vec<&str>> {
        let mut names: Option<Vec<&str>> = None;
        for r in self.fields.iter().filter(|r| r.equal) {
            names = Some(match names {
                None => vec![r.name.as_str()],
                Some(n) => n.into_iter().filter(|x| *x == r.name).collect(),
            });
        }
        names
    }
}

static EMPTY_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&EMPTY_LABELS)
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// A parsed node selector: its terms are ORed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelector {
    pub terms: Vec<NodeSelectorTerm>,
}

impl NodeSelector {
    pub fn parse(selector: &ApiNodeSelector) -> Self {
        Self {
            terms: selector
                .node_selector_terms
                .iter()
                .map(NodeSelectorTerm::parse)
                .collect(),
        }
    }

    pub fn matches(&self, node: &Node) -> bool {
        self.matches_parts(node_labels(node), node_name(node))
    }

    pub fn matches_parts(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        self.terms.iter().any(|t| t.matches(labels, name))
    }
}

/// Preferred terms with their weights (terms of weight 0 are dropped, as upstream).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreferredSchedulingTerms {
    terms: Vec<(NodeSelectorTerm, i64)>,
}

impl PreferredSchedulingTerms {
    pub fn parse(terms: &[PreferredSchedulingTerm]) -> Self {
        Self {
            terms: terms
                .iter()
                .filter(|t| t.weight != 0)
                .map(|t| (NodeSelectorTerm::parse(&t.preference), i64::from(t.weight)))
                .collect(),
        }
    }

    /// The pod's preferred node affinity terms; `None` when it has none.
    pub fn from_pod(pod: &Pod) -> Option<Self> {
        let terms = pod
            .spec
            .as_ref()?
            .affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .preferred_during_scheduling_ignored_during_execution
            .as_deref()?;
        let parsed = Self::parse(terms);
        (!parsed.is_empty()).then_some(parsed)
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The sum of the weights of the terms the node matches.
    pub fn score(&self, node: &Node) -> i64 {
        let (labels, name) = (node_labels(node), node_name(node));
        self.terms
            .iter()
            .filter(|(t, _)| t.matches(labels, name))
            .map(|(_, w)| w)
            .sum()
    }
}

/// A pod's `nodeSelector` and required node affinity together (upstream's
/// `RequiredNodeAffinity`): a node must match both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// `spec.nodeSelector`: every pair must be a label of the node.
    node_selector: Option<BTreeMap<String, String>>,
    /// `requiredDuringSchedulingIgnoredDuringExecution`.
    affinity: Option<NodeSelector>,
}

impl RequiredNodeAffinity {
    pub fn from_pod(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let node_selector = spec
            .and_then(|s| s.node_selector.as_ref())
            .filter(|m| !m.is_empty())
            .cloned();
        let affinity = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(NodeSelector::parse);
        Self {
            node_selector,
            affinity,
        }
    }

    /// Whether the pod has neither a nodeSelector nor required node affinity.
    pub fn is_empty(&self) -> bool {
        self.node_selector.is_none() && self.affinity.is_none()
    }

    /// The parsed required node affinity, if the pod has one.
    pub fn node_selector_terms(&self) -> Option<&NodeSelector> {
        self.affinity.as_ref()
    }

    pub fn matches(&self, node: &Node) -> bool {
        self.matches_parts(node_labels(node), node_name(node))
    }

    pub fn matches_parts(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        if let Some(sel) = &self.node_selector
            && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
        {
            return false;
        }
        self.affinity
            .as_ref()
            .is_none_or(|a| a.matches_parts(labels, name))
    }
}

/// Whether the pod's nodeSelector and required node affinity allow the node (upstream's
/// `PodMatchesNodeSelectorAndAffinityTerms`); parses the pod each call, so hot paths should
/// keep a [`RequiredNodeAffinity`] instead.
pub fn pod_matches_node_selector_and_affinity_terms(pod: &Pod, node: &Node) -> bool {
    RequiredNodeAffinity::from_pod(pod).matches(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity};

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn term(
        exprs: Vec<NodeSelectorRequirement>,
        fields: Vec<NodeSelectorRequirement>,
    ) -> ApiNodeSelectorTerm {
        ApiNodeSelectorTerm {
            match_expressions: (!exprs.is_empty()).then_some(exprs),
            match_fields: (!fields.is_empty()).then_some(fields),
        }
    }

    #[test]
    fn term_matching_table() {
        let node = testing::node("node-1", &[], &[("zone", "a"), ("gen", "5")]);
        let cases = [
            (
                "in",
                term(vec![req("zone", "In", &["a", "b"])], vec![]),
                true,
            ),
            (
                "in miss",
                term(vec![req("zone", "In", &["b"])], vec![]),
                false,
            ),
            (
                "notin missing label",
                term(vec![req("x", "NotIn", &["b"])], vec![]),
                true,
            ),
            (
                "notin hit",
                term(vec![req("zone", "NotIn", &["a"])], vec![]),
                false,
            ),
            (
                "exists",
                term(vec![req("zone", "Exists", &[])], vec![]),
                true,
            ),
            (
                "does not exist",
                term(vec![req("zone", "DoesNotExist", &[])], vec![]),
                false,
            ),
            ("gt", term(vec![req("gen", "Gt", &["4"])], vec![]), true),
            (
                "gt equal",
                term(vec![req("gen", "Gt", &["5"])], vec![]),
                false,
            ),
            ("lt", term(vec![req("gen", "Lt", &["6"])], vec![]), true),
            (
                "lt not int",
                term(vec![req("zone", "Lt", &["6"])], vec![]),
                false,
            ),
            (
                "gt bad value",
                term(vec![req("gen", "Gt", &["x"])], vec![]),
                false,
            ),
            (
                "exists with values",
                term(vec![req("zone", "Exists", &["a"])], vec![]),
                false,
            ),
            (
                "bad op",
                term(vec![req("zone", "Foo", &["a"])], vec![]),
                false,
            ),
            ("empty term", term(vec![], vec![]), false),
            (
                "name in",
                term(vec![], vec![req("metadata.name", "In", &["node-1"])]),
                true,
            ),
            (
                "name notin",
                term(vec![], vec![req("metadata.name", "NotIn", &["node-1"])]),
                false,
            ),
            (
                "name two values",
                term(vec![], vec![req("metadata.name", "In", &["node-1", "x"])]),
                false,
            ),
            (
                "other field",
                term(vec![], vec![req("metadata.uid", "In", &["node-1"])]),
                false,
            ),
            (
                "labels and fields",
                term(
                    vec![req("zone", "In", &["a"])],
                    vec![req("metadata.name", "In", &["node-1"])],
                ),
                true,
            ),
        ];
        for (name, t, want) in cases {
            let sel = NodeSelector::parse(&ApiNodeSelector {
                node_selector_terms: vec![t],
            });
            assert_eq!(sel.matches(&node), want, "{name}");
        }
    }

    #[test]
    fn invalid_term_does_not_hide_valid_ones() {
        let node = testing::node("node-1", &[], &[("zone", "a")]);
        let sel = NodeSelector::parse(&ApiNodeSelector {
            node_selector_terms: vec![
                term(vec![req("zone", "Bogus", &[])], vec![]),
                term(vec![req("zone", "In", &["a"])], vec![]),
            ],
        });
        assert!(sel.matches(&node));
    }

    #[test]
    fn required_affinity_combines_selector_and_terms() {
        let node = testing::node("node-1", &[], &[("zone", "a"), ("disk", "ssd")]);
        let mut pod = testing::pod("p", &[]);
        let spec = pod.spec.as_mut().expect("spec");
        spec.node_selector = Some(BTreeMap::from([("disk".to_string(), "ssd".to_string())]));
        assert!(RequiredNodeAffinity::from_pod(&pod).matches(&node));
        let spec = pod.spec.as_mut().expect("spec");
        spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(ApiNodeSelector {
                    node_selector_terms: vec![term(vec![req("zone", "In", &["b"])], vec![])],
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(!RequiredNodeAffinity::from_pod(&pod).matches(&node));
        assert!(RequiredNodeAffinity::from_pod(&testing::pod("q", &[])).is_empty());
    }

    #[test]
    fn required_node_names_intersect() {
        let t = NodeSelectorTerm::parse(&term(
            vec![],
            vec![
                req("metadata.name", "In", &["a"]),
                req("metadata.name", "In", &["a"]),
            ],
        ));
        assert_eq!(t.required_node_names(), Some(vec!["a"]));
        let t = NodeSelectorTerm::parse(&term(
            vec![],
            vec![
                req("metadata.name", "In", &["a"]),
                req("metadata.name", "In", &["b"]),
            ],
        ));
        assert_eq!(t.required_node_names(), Some(vec![]));
        let t = NodeSelectorTerm::parse(&term(vec![req("zone", "Exists", &[])], vec![]));
        assert_eq!(t.required_node_names(), None);
    }
}
