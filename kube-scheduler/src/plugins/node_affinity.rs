//! The NodeAffinity plugin: `spec.nodeSelector` and required node affinity filter nodes (with
//! the profile's `addedAffinity` on top), preferred node affinity scores them.

use crate::apis::config::args::{NodeAffinityArgs, decode_args};
use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PluginContext, PodInfo,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
};
use crate::plugins::helper::default_normalize_score;
use crate::plugins::helper::node_affinity::{
    NodeSelector, PreferredSchedulingTerms, RequiredNodeAffinity,
};
use crate::plugins::helper::objects::as_node;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeAffinity";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeAffinity";

pub struct NodeAffinity {
    added_node_selector: Option<NodeSelector>,
    added_pref_sched_terms: Option<PreferredSchedulingTerms>,
}

pub fn new(args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: NodeAffinityArgs = decode_args(args)?;
    Ok(Arc::new(NodeAffinity::from_args(&args)))
}

#[derive(Clone)]
struct PreFilterState {
    required: RequiredNodeAffinity,
}

#[derive(Clone)]
struct PreScoreState {
    preferred: Option<PreferredSchedulingTerms>,
}

/// The nodes required terms limit the pod to: terms are ORed, so only when every term names
/// nodes through `metadata.name In` (`None` otherwise, and for no terms at all).
fn required_node_names(selector: &NodeSelector) -> Option<HashSet<String>> {
    if selector.terms.is_empty() {
        return None;
    }
    let mut names = HashSet::new();
    for term in &selector.terms {
        names.extend(term.required_node_names()?.into_iter().map(str::to_string));
    }
    Some(names)
}

impl NodeAffinity {
    pub fn from_args(args: &NodeAffinityArgs) -> Self {
        let added = args.added_affinity.as_ref();
        Self {
            added_node_selector: added
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(NodeSelector::parse),
            added_pref_sched_terms: added
                .and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_deref()
                })
                .map(PreferredSchedulingTerms::parse)
                .filter(|t| !t.is_empty()),
        }
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let added = self.added_node_selector.clone();
        vec![
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_LABEL)
                .with_hint(move |pod, old, new| {
                    let Some(new) = as_node(new) else {
                        return QueueingHint::Queue;
                    };
                    if added.as_ref().is_some_and(|s| !s.matches(new)) {
                        return QueueingHint::Skip;
                    }
                    let required = RequiredNodeAffinity::from_pod(pod);
                    if !required.matches(new) {
                        return QueueingHint::Skip;
                    }
                    // Queue only when the change is what made the node match.
                    match as_node(old) {
                        Some(old) if required.matches(old) => QueueingHint::Skip,
                        _ => QueueingHint::Queue,
                    }
                }),
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

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let required = RequiredNodeAffinity::from_pod(&pod.pod);
        if required.is_empty() && self.added_node_selector.is_none() {
            return (None, Status::skip());
        }
        let names = required.node_selector_terms().map(required_node_names);
        state.write(PRE_FILTER_STATE_KEY, PreFilterState { required });
        match names {
            None | Some(None) => (None, Status::success()),
            Some(Some(names)) if names.is_empty() => {
                (None, Status::unresolvable(ERR_REASON_CONFLICT))
            }
            Some(Some(names)) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_deref() else {
            return Status::error("node not found");
        };
        if self
            .added_node_selector
            .as_ref()
            .is_some_and(|s| !s.matches(n))
        {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        let matched = match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Some(s) => s.required.matches(n),
            // PreFilter may be disabled in the profile: work it out here.
            None => RequiredNodeAffinity::from_pod(&pod.pod).matches(n),
        };
        if matched {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        _snapshot: &Snapshot,
    ) -> Status {
        let preferred = PreferredSchedulingTerms::from_pod(&pod.pod);
        if preferred.is_none() && self.added_pref_sched_terms.is_none() {
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { preferred });
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(n) = node.node.as_deref() else {
            return (0, Status::error("node not found"));
        };
        let mut count = self
            .added_pref_sched_terms
            .as_ref()
            .map_or(0, |t| t.score(n));
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => count += s.preferred.as_ref().map_or(0, |t| t.score(n)),
            // PreScore may be disabled in the profile: work it out here.
            None => count += PreferredSchedulingTerms::from_pod(&pod.pod).map_or(0, |t| t.score(n)),
        }
        (count, Status::success())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::{
        Affinity, Node, NodeAffinity as ApiNodeAffinity, NodeSelector as ApiNodeSelector,
        NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm,
    };
    use std::collections::BTreeMap;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn exprs(r: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(r),
            match_fields: None,
        }
    }

    fn fields(r: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(r),
        }
    }

    fn pod_with(
        selector: &[(&str, &str)],
        required: Option<Vec<NodeSelectorTerm>>,
        preferred: Vec<(i32, NodeSelectorTerm)>,
    ) -> Pod {
        let mut p = testing::pod("p", &[]);
        if let Some(s) = p.spec.as_mut() {
            if !selector.is_empty() {
                s.node_selector = Some(
                    selector
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect::<BTreeMap<_, _>>(),
                );
            }
            if required.is_some() || !preferred.is_empty() {
                s.affinity = Some(Affinity {
                    node_affinity: Some(ApiNodeAffinity {
                        required_during_scheduling_ignored_during_execution: required.map(|t| {
                            ApiNodeSelector {
                                node_selector_terms: t,
                            }
                        }),
                        preferred_during_scheduling_ignored_during_execution: (!preferred
                            .is_empty())
                        .then(|| {
                            preferred
                                .into_iter()
                                .map(|(weight, preference)| PreferredSchedulingTerm {
                                    weight,
                                    preference,
                                })
                                .collect()
                        }),
                    }),
                    ..Default::default()
                });
            }
        }
        p
    }

    fn plugin(added: Option<ApiNodeAffinity>) -> NodeAffinity {
        NodeAffinity::from_args(&NodeAffinityArgs {
            added_affinity: added,
            ..Default::default()
        })
    }

    fn run_filter(pl: &NodeAffinity, pod: Pod, node: Node) -> (Option<PreFilterResult>, Status) {
        let pi = testing::pod_info(pod);
        let mut state = CycleState::new();
        let (result, s) = pl.pre_filter(&mut state, &pi, &Snapshot::default());
        if !s.is_success() {
            return (result, s);
        }
        (
            result,
            pl.filter(&state, &pi, &testing::node_info(node, vec![])),
        )
    }

    #[test]
    fn filter_table() {
        let node = || testing::node("node1", &[], &[("foo", "bar"), ("gpu", "4")]);
        let cases = [
            ("no constraints", pod_with(&[], None, vec![]), Code::Skip),
            (
                "selector matches",
                pod_with(&[("foo", "bar")], None, vec![]),
                Code::Success,
            ),
            (
                "selector misses",
                pod_with(&[("foo", "baz")], None, vec![]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "required In matches",
                pod_with(
                    &[],
                    Some(vec![exprs(vec![req("foo", "In", &["bar", "x"])])]),
                    vec![],
                ),
                Code::Success,
            ),
            (
                "required Gt misses",
                pod_with(
                    &[],
                    Some(vec![exprs(vec![req("gpu", "Gt", &["4"])])]),
                    vec![],
                ),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "terms are ORed",
                pod_with(
                    &[],
                    Some(vec![
                        exprs(vec![req("foo", "In", &["nope"])]),
                        exprs(vec![req("gpu", "Exists", &[])]),
                    ]),
                    vec![],
                ),
                Code::Success,
            ),
            (
                "selector and affinity are ANDed",
                pod_with(
                    &[("foo", "baz")],
                    Some(vec![exprs(vec![req("gpu", "Exists", &[])])]),
                    vec![],
                ),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "empty required terms match nothing",
                pod_with(&[], Some(vec![]), vec![]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "matchFields name",
                pod_with(
                    &[],
                    Some(vec![fields(vec![req("metadata.name", "In", &["node1"])])]),
                    vec![],
                ),
                Code::Success,
            ),
            (
                "matchFields other name",
                pod_with(
                    &[],
                    Some(vec![fields(vec![req("metadata.name", "In", &["node2"])])]),
                    vec![],
                ),
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (name, p, want) in cases {
            let (_, s) = run_filter(&plugin(None), p, node());
            assert_eq!(s.code, want, "{name}: {s:?}");
            if want == Code::UnschedulableAndUnresolvable {
                assert_eq!(s.message(), ERR_REASON_POD, "{name}");
            }
        }
    }

    /// Name, terms, the nodes PreFilter should limit the pod to, the code.
    type NamesCase = (
        &'static str,
        Vec<NodeSelectorTerm>,
        Option<Vec<&'static str>>,
        Code,
    );

    #[test]
    fn pre_filter_result_names_nodes() {
        let name_in = |v: &str| fields(vec![req("metadata.name", "In", &[v])]);
        let cases: Vec<NamesCase> = vec![
            (
                "one name",
                vec![name_in("a")],
                Some(vec!["a"]),
                Code::Success,
            ),
            (
                "union of terms",
                vec![name_in("a"), name_in("b")],
                Some(vec!["a", "b"]),
                Code::Success,
            ),
            (
                "a term without names allows all",
                vec![name_in("a"), exprs(vec![req("foo", "Exists", &[])])],
                None,
                Code::Success,
            ),
            (
                "conflicting names in one term",
                vec![fields(vec![
                    req("metadata.name", "In", &["a"]),
                    req("metadata.name", "In", &["b"]),
                ])],
                None,
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (name, terms, want_names, want_code) in cases {
            let pi = testing::pod_info(pod_with(&[], Some(terms), vec![]));
            let (result, s) =
                plugin(None).pre_filter(&mut CycleState::new(), &pi, &Snapshot::default());
            assert_eq!(s.code, want_code, "{name}");
            let got = result.and_then(|r| r.node_names);
            let want = want_names.map(|n| n.into_iter().map(String::from).collect::<HashSet<_>>());
            assert_eq!(got, want, "{name}");
        }
        let (_, s) = plugin(None).pre_filter(
            &mut CycleState::new(),
            &testing::pod_info(pod_with(
                &[],
                Some(vec![fields(vec![
                    req("metadata.name", "In", &["a"]),
                    req("metadata.name", "In", &["b"]),
                ])]),
                vec![],
            )),
            &Snapshot::default(),
        );
        assert_eq!(s.message(), ERR_REASON_CONFLICT);
    }

    #[test]
    fn added_affinity_is_enforced() {
        let added = ApiNodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(ApiNodeSelector {
                node_selector_terms: vec![exprs(vec![req("zone", "In", &["foo"])])],
            }),
            ..Default::default()
        };
        let pl = plugin(Some(added));
        let (_, s) = run_filter(
            &pl,
            pod_with(&[], None, vec![]),
            testing::node("n", &[], &[("zone", "bar")]),
        );
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), ERR_REASON_ENFORCED);
        let (_, s) = run_filter(
            &pl,
            pod_with(&[], None, vec![]),
            testing::node("n", &[], &[("zone", "foo")]),
        );
        assert!(s.is_success());
    }

    fn run_scores(pl: &NodeAffinity, p: Pod, nodes: Vec<Node>) -> Vec<i64> {
        let pi = testing::pod_info(p);
        let infos: Vec<Arc<NodeInfo>> = nodes
            .into_iter()
            .map(|n| Arc::new(testing::node_info(n, vec![])))
            .collect();
        let mut state = CycleState::new();
        let s = pl.pre_score(&mut state, &pi, &infos, &Snapshot::default());
        if s.is_skip() {
            return vec![];
        }
        let mut scores: Vec<NodeScore> = infos
            .iter()
            .map(|n| NodeScore {
                name: n.name.clone(),
                score: pl.score(&state, &pi, n).0,
            })
            .collect();
        pl.normalize_score(&state, &pi, &mut scores);
        scores.iter().map(|s| s.score).collect()
    }

    #[test]
    fn score_table() {
        // Upstream's TestNodeAffinityPriority: weights 2 (foo=bar), 4 (key=value), 5 (az in az1).
        let preferred = || {
            vec![
                (2, exprs(vec![req("foo", "In", &["bar"])])),
                (4, exprs(vec![req("key", "In", &["value"])])),
                (
                    5,
                    exprs(vec![
                        req("foo", "In", &["bar"]),
                        req("key", "In", &["value"]),
                        req("az", "In", &["az1"]),
                    ]),
                ),
            ]
        };
        let nodes = || {
            vec![
                testing::node("node1", &[], &[("foo", "bar")]),
                testing::node("node2", &[], &[("key", "value")]),
                testing::node("node3", &[], &[("az", "az1")]),
                testing::node(
                    "node4",
                    &[],
                    &[("foo", "bar"), ("key", "value"), ("az", "az1")],
                ),
            ]
        };
        assert_eq!(
            run_scores(&plugin(None), pod_with(&[], None, preferred()), nodes()),
            vec![18, 36, 0, 100]
        );
        assert!(run_scores(&plugin(None), pod_with(&[], None, vec![]), nodes()).is_empty());
        // The scheduler-added preferred terms count for pods without their own.
        let added = ApiNodeAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                PreferredSchedulingTerm {
                    weight: 3,
                    preference: exprs(vec![req("az", "In", &["az1"])]),
                },
            ]),
            ..Default::default()
        };
        assert_eq!(
            run_scores(&plugin(Some(added)), pod_with(&[], None, vec![]), nodes()),
            vec![0, 0, 100, 100]
        );
    }

    #[test]
    fn node_hint() {
        let events = plugin(None).events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let p = pod_with(&[("foo", "bar")], None, vec![]);
        let good = testing::node("n", &[], &[("foo", "bar")]);
        let bad = testing::node("n", &[], &[]);
        assert_eq!(hint(&p, None, Some(&good)), QueueingHint::Queue);
        assert_eq!(hint(&p, None, Some(&bad)), QueueingHint::Skip);
        assert_eq!(hint(&p, Some(&bad), Some(&good)), QueueingHint::Queue);
        assert_eq!(hint(&p, Some(&good), Some(&good)), QueueingHint::Skip);
    }
}
