//! The ImageLocality plugin: prefers nodes that already hold the pod's images, weighing each
//! image by its size and by how few nodes have it (so one node is not always preferred).

use crate::framework::node_info::ImageStateSummary;
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, Plugin, PluginContext, PodInfo, PreScorePlugin,
    ScorePlugin, Snapshot, Status,
};
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "ImageLocality";
const PRE_SCORE_STATE_KEY: &str = "PreScoreImageLocality";

const MB: i64 = 1024 * 1024;
/// Images smaller than this hardly cost a pull: the node gets no credit below it.
const MIN_THRESHOLD: i64 = 23 * MB;
/// The credit per container stops growing at this size.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(ImageLocality))
}

/// The pod's image names as nodes report them, and the cluster's node count.
#[derive(Clone)]
struct PreScoreState {
    images: Vec<String>,
    num_containers: i64,
    total_nodes: usize,
}

/// The name with `:latest` added when it has no tag, as the container runtime reports it.
pub fn normalized_image_name(name: &str) -> String {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    let has_tag = match (last_colon, last_slash) {
        (Some(c), Some(s)) => c > s,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if has_tag {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

fn pod_images(pod: &Pod) -> (Vec<String>, i64) {
    let Some(spec) = pod.spec.as_ref() else {
        return (Vec::new(), 0);
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let images: Vec<String> = containers
        .clone()
        .filter_map(|c| c.image.as_deref())
        .map(normalized_image_name)
        .collect();
    (images, containers.count() as i64)
}

/// An image's size scaled by the share of nodes that have it.
fn scaled_image_score(state: &ImageStateSummary, total_nodes: usize) -> i64 {
    let spread = state.num_nodes as f64 / total_nodes as f64;
    (state.size as f64 * spread) as i64
}

/// The summed image score clamped to the thresholds and mapped onto 0..=100.
fn calculate_priority(sum: i64, num_containers: i64) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers;
    if max_threshold <= MIN_THRESHOLD {
        return 0;
    }
    let sum = sum.clamp(MIN_THRESHOLD, max_threshold);
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for ImageLocality {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        snapshot: &Snapshot,
    ) -> Status {
        let (images, num_containers) = pod_images(&pod.pod);
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                images,
                num_containers,
                total_nodes: snapshot.num_nodes(),
            },
        );
        Status::success()
    }
}

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return (0, Status::state_not_found(PRE_SCORE_STATE_KEY));
        };
        if s.total_nodes == 0 {
            return (0, Status::success());
        }
        let sum: i64 = s
            .images
            .iter()
            .filter_map(|image| node.image_states.get(image))
            .map(|state| scaled_image_score(state, s.total_nodes))
            .sum();
        (calculate_priority(sum, s.num_containers), Status::success())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::Container;

    fn pod(images: &[&str]) -> Pod {
        let mut p = testing::pod("p", &[]);
        if let Some(s) = p.spec.as_mut() {
            s.containers = images
                .iter()
                .enumerate()
                .map(|(i, image)| Container {
                    name: format!("c{i}"),
                    image: Some(image.to_string()),
                    ..Default::default()
                })
                .collect();
        }
        p
    }

    /// A node holding images given as (name, size in MB, number of nodes that have it).
    fn node(name: &str, images: &[(&str, i64, usize)]) -> NodeInfo {
        let mut info = testing::node_info(testing::node(name, &[], &[]), vec![]);
        for (image, size, num_nodes) in images {
            info.image_states.insert(
                image.to_string(),
                ImageStateSummary {
                    size: size * MB,
                    num_nodes: *num_nodes,
                },
            );
        }
        info
    }

    fn scores(p: Pod, nodes: Vec<NodeInfo>) -> Vec<i64> {
        let pi = testing::pod_info(p);
        let snapshot = Snapshot::from_node_infos(nodes);
        let mut state = CycleState::new();
        assert!(
            ImageLocality
                .pre_score(&mut state, &pi, &snapshot.node_info_list, &snapshot)
                .is_success()
        );
        snapshot
            .node_info_list
            .iter()
            .map(|n| ImageLocality.score(&state, &pi, n).0)
            .collect()
    }

    #[test]
    fn score_table() {
        // Upstream's TestImageLocalityPriority: node1 has 40MB and 300MB images, node2 has
        // 250MB and 10MB images, each image on one of the two nodes.
        let nodes = || {
            vec![
                node(
                    "node1",
                    &[("gcr.io/40:latest", 40, 1), ("gcr.io/300:latest", 300, 1)],
                ),
                node(
                    "node2",
                    &[("gcr.io/250:latest", 250, 1), ("gcr.io/10:latest", 10, 1)],
                ),
            ]
        };
        let cases = [
            (
                "prefer the larger image",
                pod(&["gcr.io/40", "gcr.io/250"]),
                vec![0, 5],
            ),
            (
                "sum of images on a node",
                pod(&["gcr.io/40", "gcr.io/300"]),
                vec![7, 0],
            ),
            ("explicit tag", pod(&["gcr.io/300:latest"]), vec![12, 0]),
            ("no images present", pod(&["gcr.io/other"]), vec![0, 0]),
            ("image below threshold", pod(&["gcr.io/10"]), vec![0, 0]),
        ];
        for (name, p, want) in cases {
            assert_eq!(scores(p, nodes()), want, "{name}");
        }
    }

    #[test]
    fn spread_raises_the_score() {
        // The same 300MB image present on both nodes counts fully.
        let nodes = vec![
            node("node1", &[("gcr.io/300:latest", 300, 2)]),
            node("node2", &[("gcr.io/300:latest", 300, 2)]),
        ];
        assert_eq!(scores(pod(&["gcr.io/300"]), nodes), vec![28, 28]);
    }

    #[test]
    fn normalizes_names() {
        let cases = [
            ("nginx", "nginx:latest"),
            ("nginx:1.2", "nginx:1.2"),
            ("localhost:5000/nginx", "localhost:5000/nginx:latest"),
            ("localhost:5000/nginx:v1", "localhost:5000/nginx:v1"),
        ];
        for (input, want) in cases {
            assert_eq!(normalized_image_name(input), want);
        }
    }

    #[test]
    fn score_without_pre_score_is_an_error() {
        let (_, s) = ImageLocality.score(
            &CycleState::new(),
            &testing::pod_info(pod(&["a"])),
            &node("n", &[]),
        );
        assert!(!s.is_success());
    }
}
