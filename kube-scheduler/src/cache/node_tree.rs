//! Node names grouped by zone, listed round-robin across zones (upstream's `nodeTree`), so the
//! scheduler's "first N feasible nodes" search spreads over zones instead of exhausting one.

use k8s_openapi::api::core::v1::Node;
use std::collections::HashMap;

const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
const LABEL_FAILURE_DOMAIN_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const LABEL_FAILURE_DOMAIN_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";

/// The zone a node belongs to, as upstream's `utilnode.GetZoneKey`: region and zone (the GA
/// labels, else the deprecated beta ones) joined by `":\0:"` so neither can forge the other;
/// empty when the node has neither.
pub fn zone_key(node: &Node) -> String {
    let Some(labels) = node.metadata.labels.as_ref() else {
        return String::new();
    };
    let zone = labels
        .get(LABEL_TOPOLOGY_ZONE)
        .or_else(|| labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE));
    let region = labels
        .get(LABEL_TOPOLOGY_REGION)
        .or_else(|| labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION));
    if zone.is_none() && region.is_none() {
        return String::new();
    }
    format!(
        "{}:\x00:{}",
        region.map(String::as_str).unwrap_or_default(),
        zone.map(String::as_str).unwrap_or_default()
    )
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

#[derive(Debug, Default, Clone)]
pub struct NodeTree {
    /// Zones in the order they were first seen; a zone goes when its last node does.
    zones: Vec<String>,
    tree: HashMap<String, Vec<String>>,
    num_nodes: usize,
    /// Raised whenever `list()` would answer differently, so a snapshot knows its order is stale.
    version: u64,
}

impl NodeTree {
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn add_node(&mut self, node: &Node) {
        let name = node_name(node);
        let zone = zone_key(node);
        match self.tree.get_mut(&zone) {
            Some(names) => {
                if names.iter().any(|n| n == name) {
                    tracing::debug!(node = name, "node already exists in the node tree");
                    return;
                }
                names.push(name.to_string());
            }
            None => {
                self.zones.push(zone.clone());
                self.tree.insert(zone, vec![name.to_string()]);
            }
        }
        self.num_nodes += 1;
        self.version += 1;
    }

    pub fn remove_node(&mut self, node: &Node) -> Result<(), String> {
        let name = node_name(node);
        let zone = zone_key(node);
        let Some(names) = self.tree.get_mut(&zone) else {
            return Err(format!("node {name} in group {zone:?} was not found"));
        };
        let Some(i) = names.iter().position(|n| n == name) else {
            return Err(format!("node {name} in group {zone:?} was not found"));
        };
        // Keep the order of the others: it is the order snapshots list them in.
        names.remove(i);
        if names.is_empty() {
            self.tree.remove(&zone);
            self.zones.retain(|z| *z != zone);
        }
        self.num_nodes -= 1;
        self.version += 1;
        Ok(())
    }

    /// Moves a node whose zone labels changed; a node staying in its zone keeps its place.
    pub fn update_node(&mut self, old: &Node, new: &Node) {
        if zone_key(old) == zone_key(new) {
            return;
        }
        if let Err(e) = self.remove_node(old) {
            tracing::error!(error = %e, "updating a node in the node tree");
        }
        self.add_node(new);
    }

    /// Every node, taking the next node of each zone in turn until all zones are exhausted.
    pub fn list(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(self.num_nodes);
        let per_zone: Vec<&Vec<String>> =
            self.zones.iter().filter_map(|z| self.tree.get(z)).collect();
        let rounds = per_zone.iter().map(|n| n.len()).max().unwrap_or(0);
        for i in 0..rounds {
            out.extend(
                per_zone
                    .iter()
                    .filter_map(|names| names.get(i).map(String::as_str)),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::node;

    fn zoned(name: &str, region: &str, zone: &str) -> Node {
        let mut labels = vec![];
        if !region.is_empty() {
            labels.push((LABEL_TOPOLOGY_REGION, region));
        }
        if !zone.is_empty() {
            labels.push((LABEL_TOPOLOGY_ZONE, zone));
        }
        node(name, &[], &labels)
    }

    #[test]
    fn zone_keys() {
        let beta = node(
            "b",
            &[],
            &[
                (LABEL_FAILURE_DOMAIN_BETA_ZONE, "z"),
                (LABEL_FAILURE_DOMAIN_BETA_REGION, "r"),
            ],
        );
        let cases = [
            (zoned("a", "", ""), ""),
            (zoned("a", "r1", "z1"), "r1:\x00:z1"),
            (zoned("a", "", "z1"), ":\x00:z1"),
            (zoned("a", "r1", ""), "r1:\x00:"),
            (beta, "r:\x00:z"),
        ];
        for (n, want) in cases {
            assert_eq!(zone_key(&n), want);
        }
    }

    #[test]
    fn interleaves_zones_round_robin() {
        struct Case {
            name: &'static str,
            add: Vec<(&'static str, &'static str)>,
            remove: Vec<(&'static str, &'static str)>,
            want: Vec<&'static str>,
        }
        let cases = [
            Case {
                name: "one zone keeps insertion order",
                add: vec![("n1", "a"), ("n2", "a"), ("n3", "a")],
                remove: vec![],
                want: vec!["n1", "n2", "n3"],
            },
            Case {
                name: "uneven zones interleave then drain the longest",
                add: vec![
                    ("a1", "a"),
                    ("a2", "a"),
                    ("a3", "a"),
                    ("b1", "b"),
                    ("c1", "c"),
                    ("c2", "c"),
                ],
                remove: vec![],
                want: vec!["a1", "b1", "c1", "a2", "c2", "a3"],
            },
            Case {
                name: "removing a zone's last node drops the zone",
                add: vec![("a1", "a"), ("b1", "b"), ("a2", "a"), ("c1", "c")],
                remove: vec![("b1", "b")],
                want: vec!["a1", "c1", "a2"],
            },
            Case {
                name: "duplicate add is ignored",
                add: vec![("a1", "a"), ("a1", "a"), ("b1", "b")],
                remove: vec![],
                want: vec!["a1", "b1"],
            },
        ];
        for c in cases {
            let mut t = NodeTree::default();
            for (n, z) in &c.add {
                t.add_node(&zoned(n, "r", z));
            }
            for (n, z) in &c.remove {
                t.remove_node(&zoned(n, "r", z)).expect("node present");
            }
            assert_eq!(t.list(), c.want, "{}", c.name);
            assert_eq!(t.num_nodes(), c.want.len(), "{}", c.name);
        }
    }

    #[test]
    fn update_moves_only_on_zone_change() {
        let mut t = NodeTree::default();
        for (n, z) in [("a1", "a"), ("a2", "a"), ("b1", "b")] {
            t.add_node(&zoned(n, "r", z));
        }
        let v = t.version();
        t.update_node(&zoned("a1", "r", "a"), &zoned("a1", "r", "a"));
        assert_eq!(t.version(), v);
        assert_eq!(t.list(), vec!["a1", "b1", "a2"]);
        t.update_node(&zoned("a1", "r", "a"), &zoned("a1", "r", "b"));
        assert_ne!(t.version(), v);
        assert_eq!(t.list(), vec!["a2", "b1", "a1"]);
        assert!(t.remove_node(&zoned("zz", "r", "a")).is_err());
        assert_eq!(t.num_nodes(), 3);
    }
}
