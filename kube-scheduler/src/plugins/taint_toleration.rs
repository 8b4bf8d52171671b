//! The TaintToleration plugin: NoSchedule and NoExecute taints a pod does not tolerate keep it
//! off a node; untolerated PreferNoSchedule taints lower the node's score.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PluginContext, PodInfo,
    PreScorePlugin, ScorePlugin, Snapshot, Status,
};
use crate::plugins::helper::default_normalize_score;
use crate::plugins::helper::objects::{as_node, as_pod};
use crate::plugins::helper::taints::{
    EFFECT_PREFER_NO_SCHEDULE, find_untolerated_taint, is_do_not_schedule, node_taints,
    pod_tolerations, tolerations_tolerate_taint,
};
use k8s_openapi::api::core::v1::{Node, Pod, Toleration};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "TaintToleration";
const PRE_SCORE_STATE_KEY: &str = "PreScoreTaintToleration";

pub struct TaintToleration;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(TaintToleration))
}

/// The pod's tolerations that can tolerate a PreferNoSchedule taint, kept for Score.
#[derive(Clone)]
struct PreScoreState {
    tolerations_prefer_no_schedule: Vec<Toleration>,
}

fn untolerated(node: &Node, pod: &Pod) -> bool {
    find_untolerated_taint(node_taints(node), pod_tolerations(pod), is_do_not_schedule).is_some()
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_TAINT)
                .with_hint(|pod, old, new| {
                    let Some(new) = as_node(new) else {
                        return QueueingHint::Queue;
                    };
                    let was_untolerated = as_node(old).is_none_or(|o| untolerated(o, pod));
                    if was_untolerated && !untolerated(new, pod) {
                        QueueingHint::Queue
                    } else {
                        QueueingHint::Skip
                    }
                }),
            ClusterEventWithHint::new(EventResource::Pod, action::UPDATE_POD_TOLERATIONS)
                .with_hint(|pod, _old, new| match as_pod(new) {
                    Some(p) if p.metadata.uid == pod.metadata.uid => QueueingHint::Queue,
                    _ => QueueingHint::Skip,
                }),
        ]
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

impl FilterPlugin for TaintToleration {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_deref() else {
            return Status::error("node not found");
        };
        match find_untolerated_taint(
            node_taints(n),
            pod_tolerations(&pod.pod),
            is_do_not_schedule,
        ) {
            None => Status::success(),
            Some(taint) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                taint.key,
                taint.value.as_deref().unwrap_or_default()
            )),
        }
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        _snapshot: &Snapshot,
    ) -> Status {
        let tolerations_prefer_no_schedule = pod_tolerations(&pod.pod)
            .iter()
            .filter(|t| {
                let effect = t.effect.as_deref().unwrap_or_default();
                effect.is_empty() || effect == EFFECT_PREFER_NO_SCHEDULE
            })
            .cloned()
            .collect();
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                tolerations_prefer_no_schedule,
            },
        );
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return (0, Status::state_not_found(PRE_SCORE_STATE_KEY));
        };
        let Some(n) = node.node.as_deref() else {
            return (0, Status::error("node not found"));
        };
        let count = node_taints(n)
            .iter()
            .filter(|t| {
                t.effect == EFFECT_PREFER_NO_SCHEDULE
                    && !tolerations_tolerate_taint(&s.tolerations_prefer_no_schedule, t)
            })
            .count();
        (count as i64, Status::success())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::{NodeSpec, Taint};

    fn node(name: &str, taints: &[(&str, &str, &str)]) -> Node {
        let mut n = testing::node(name, &[], &[]);
        n.spec = Some(NodeSpec {
            taints: Some(
                taints
                    .iter()
                    .map(|(k, v, e)| Taint {
                        key: k.to_string(),
                        value: (!v.is_empty()).then(|| v.to_string()),
                        effect: e.to_string(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        n
    }

    fn pod(tolerations: &[(&str, &str, &str, &str)]) -> Pod {
        let mut p = testing::pod("p", &[]);
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(s) = p.spec.as_mut() {
            s.tolerations = Some(
                tolerations
                    .iter()
                    .map(|(k, op, v, e)| Toleration {
                        key: opt(k),
                        operator: opt(op),
                        value: opt(v),
                        effect: opt(e),
                        ..Default::default()
                    })
                    .collect(),
            );
        }
        p
    }

    #[test]
    fn filter_table() {
        // Cases from upstream's TestTaintTolerationFilter.
        let cases = [
            (
                "pod without tolerations on a tainted node",
                pod(&[]),
                node("n", &[("dedicated", "user1", "NoSchedule")]),
                Some("node(s) had untolerated taint {dedicated: user1}"),
            ),
            (
                "equal toleration",
                pod(&[("dedicated", "Equal", "user1", "NoSchedule")]),
                node("n", &[("dedicated", "user1", "NoSchedule")]),
                None,
            ),
            (
                "wrong value",
                pod(&[("dedicated", "Equal", "user2", "NoSchedule")]),
                node("n", &[("dedicated", "user1", "NoSchedule")]),
                Some("node(s) had untolerated taint {dedicated: user1}"),
            ),
            (
                "exists toleration",
                pod(&[("foo", "Exists", "", "NoSchedule")]),
                node("n", &[("foo", "bar", "NoSchedule")]),
                None,
            ),
            (
                "tolerates one of two taints",
                pod(&[
                    ("dedicated", "Equal", "user2", "NoSchedule"),
                    ("foo", "Exists", "", "NoSchedule"),
                ]),
                node(
                    "n",
                    &[
                        ("dedicated", "user2", "NoSchedule"),
                        ("foo", "bar", "NoSchedule"),
                    ],
                ),
                None,
            ),
            (
                "effect mismatch",
                pod(&[("foo", "Equal", "bar", "PreferNoSchedule")]),
                node("n", &[("foo", "bar", "NoSchedule")]),
                Some("node(s) had untolerated taint {foo: bar}"),
            ),
            (
                "PreferNoSchedule is not filtered",
                pod(&[]),
                node("n", &[("foo", "bar", "PreferNoSchedule")]),
                None,
            ),
            (
                "NoExecute is filtered",
                pod(&[]),
                node("n", &[("foo", "", "NoExecute")]),
                Some("node(s) had untolerated taint {foo: }"),
            ),
        ];
        for (name, p, n, want) in cases {
            let s = TaintToleration.filter(
                &CycleState::new(),
                &testing::pod_info(p),
                &testing::node_info(n, vec![]),
            );
            match want {
                None => assert!(s.is_success(), "{name}: {s:?}"),
                Some(msg) => {
                    assert_eq!(s.code, Code::UnschedulableAndUnresolvable, "{name}");
                    assert_eq!(s.message(), msg, "{name}");
                }
            }
        }
    }

    fn run_scores(p: Pod, nodes: Vec<Node>) -> Vec<i64> {
        let pi = testing::pod_info(p);
        let infos: Vec<Arc<NodeInfo>> = nodes
            .into_iter()
            .map(|n| Arc::new(testing::node_info(n, vec![])))
            .collect();
        let mut state = CycleState::new();
        let s = TaintToleration.pre_score(&mut state, &pi, &infos, &Snapshot::default());
        assert!(s.is_success());
        let mut scores: Vec<NodeScore> = infos
            .iter()
            .map(|n| {
                let (score, s) = TaintToleration.score(&state, &pi, n);
                assert!(s.is_success());
                NodeScore {
                    name: n.name.clone(),
                    score,
                }
            })
            .collect();
        TaintToleration.normalize_score(&state, &pi, &mut scores);
        scores.iter().map(|s| s.score).collect()
    }

    #[test]
    fn score_table() {
        // Cases from upstream's TestTaintTolerationScore.
        let cases = [
            (
                "tolerated taints score the same as no taints",
                pod(&[("foo", "Equal", "bar", "PreferNoSchedule")]),
                vec![
                    node("a", &[]),
                    node("b", &[("foo", "bar", "PreferNoSchedule")]),
                ],
                vec![100, 100],
            ),
            (
                "more intolerable taints score lower",
                pod(&[("cpu-type", "Equal", "arm64", "PreferNoSchedule")]),
                vec![
                    node("a", &[]),
                    node("b", &[("cpu-type", "arm64", "PreferNoSchedule")]),
                    node(
                        "c",
                        &[
                            ("cpu-type", "arm64", "PreferNoSchedule"),
                            ("disk-type", "ssd", "PreferNoSchedule"),
                        ],
                    ),
                ],
                vec![100, 100, 0],
            ),
            (
                "only PreferNoSchedule counts",
                pod(&[("cpu-type", "Equal", "arm64", "NoSchedule")]),
                vec![
                    node("a", &[]),
                    node("b", &[("cpu-type", "arm64", "NoSchedule")]),
                    node("c", &[("cpu-type", "arm64", "PreferNoSchedule")]),
                ],
                vec![100, 100, 0],
            ),
            (
                "two of three",
                pod(&[]),
                vec![
                    node("a", &[("x", "1", "PreferNoSchedule")]),
                    node(
                        "b",
                        &[
                            ("x", "1", "PreferNoSchedule"),
                            ("y", "2", "PreferNoSchedule"),
                            ("z", "3", "PreferNoSchedule"),
                        ],
                    ),
                    node("c", &[]),
                ],
                vec![67, 0, 100],
            ),
        ];
        for (name, p, nodes, want) in cases {
            assert_eq!(run_scores(p, nodes), want, "{name}");
        }
    }

    #[test]
    fn score_without_prescore_is_an_error() {
        let (_, s) = TaintToleration.score(
            &CycleState::new(),
            &testing::pod_info(pod(&[])),
            &testing::node_info(node("a", &[]), vec![]),
        );
        assert_eq!(s.code, Code::Error);
    }

    #[test]
    fn node_hint_queues_when_taint_goes_away() {
        let events = TaintToleration.events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let p = pod(&[]);
        let tainted = node("n", &[("foo", "bar", "NoSchedule")]);
        let clean = node("n", &[]);
        assert_eq!(hint(&p, Some(&tainted), Some(&clean)), QueueingHint::Queue);
        assert_eq!(hint(&p, Some(&clean), Some(&clean)), QueueingHint::Skip);
        assert_eq!(hint(&p, None, Some(&clean)), QueueingHint::Queue);
        assert_eq!(hint(&p, None, Some(&tainted)), QueueingHint::Skip);
    }
}
