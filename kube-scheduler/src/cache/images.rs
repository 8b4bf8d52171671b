//! Which nodes hold each container image, for ImageLocality's spread factor. Counts are copied
//! into a node's `image_states` when the node is snapshotted, as upstream's
//! `ImageStateSummary.Snapshot()`, so unchanged nodes keep the count of their last snapshot.

use crate::framework::node_info::ImageStateSummary;
use k8s_openapi::api::core::v1::Node;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Default, Clone)]
struct ImageState {
    size: i64,
    nodes: HashSet<String>,
}

#[derive(Debug, Default, Clone)]
pub struct ImageStates(HashMap<String, ImageState>);

/// Every (name, size) a node reports; an image known by several names counts under each.
fn node_images(node: &Node) -> impl Iterator<Item = (&str, i64)> {
    node.status
        .as_ref()
        .and_then(|s| s.images.as_ref())
        .into_iter()
        .flatten()
        .flat_map(|img| {
            let size = img.size_bytes.unwrap_or(0);
            img.names.iter().flatten().map(move |n| (n.as_str(), size))
        })
}

impl ImageStates {
    /// Records the node's images and returns its summary (counts including this node).
    pub fn add_node(&mut self, node: &Node) -> HashMap<String, ImageStateSummary> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let mut summary = HashMap::new();
        for (image, size) in node_images(node) {
            let state = self
                .0
                .entry(image.to_string())
                .or_insert_with(|| ImageState {
                    size,
                    nodes: HashSet::new(),
                });
            state.nodes.insert(name.to_string());
            summary
                .entry(image.to_string())
                .or_insert_with(|| ImageStateSummary {
                    size: state.size,
                    num_nodes: 0,
                });
        }
        for (image, s) in summary.iter_mut() {
            s.num_nodes = self.num_nodes(image);
        }
        summary
    }

    pub fn remove_node(&mut self, node: &Node) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        for (image, _) in node_images(node) {
            if let Some(state) = self.0.get_mut(image) {
                state.nodes.remove(name);
                // Drop unused images so the map's size is the number of distinct images held.
                if state.nodes.is_empty() {
                    self.0.remove(image);
                }
            }
        }
    }

    pub fn num_nodes(&self, image: &str) -> usize {
        self.0.get(image).map_or(0, |s| s.nodes.len())
    }

    /// Whether any of `summary`'s counts differ from the current ones.
    pub fn is_stale(&self, summary: &HashMap<String, ImageStateSummary>) -> bool {
        summary
            .iter()
            .any(|(image, s)| s.num_nodes != self.num_nodes(image))
    }

    /// Brings `summary`'s counts up to date.
    pub fn refresh(&self, summary: &mut HashMap<String, ImageStateSummary>) {
        for (image, s) in summary.iter_mut() {
            s.num_nodes = self.num_nodes(image);
        }
    }
}
