//! The per-cycle, read-only view of the cluster that plugins see: every node's [`NodeInfo`]
//! as the cache held it when the cycle began (the cache fills it, see `cache::Cache::update_snapshot`).

use super::node_info::NodeInfo;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Node name to its info.
    pub node_info_map: HashMap<String, Arc<NodeInfo>>,
    /// Every node with a Node object, in the order nodes are visited (zones interleaved, as upstream's node tree).
    pub node_info_list: Vec<Arc<NodeInfo>>,
    /// Nodes with at least one pod that has (anti-)affinity terms.
    pub have_pods_with_affinity_list: Vec<Arc<NodeInfo>>,
    /// Nodes with at least one pod that has required anti-affinity terms.
    pub have_pods_with_required_anti_affinity_list: Vec<Arc<NodeInfo>>,
    /// `namespace/claim` of every PVC used by some pod (ReadWriteOncePod checks).
    pub used_pvc_set: std::collections::HashSet<String>,
    /// The cache generation this snapshot reflects.
    pub generation: i64,
}

impl Snapshot {
    pub fn get(&self, node_name: &str) -> Option<&Arc<NodeInfo>> {
        self.node_info_map.get(node_name)
    }

    pub fn num_nodes(&self) -> usize {
        self.node_info_list.len()
    }

    /// A snapshot of exactly these nodes (tests and preemption's simulations).
    pub fn from_node_infos(infos: Vec<NodeInfo>) -> Self {
        let mut s = Snapshot::default();
        for info in infos {
            let info = Arc::new(info);
            s.used_pvc_set.extend(info.pvc_ref_counts.keys().cloned());
            if !info.pods_with_affinity.is_empty() {
                s.have_pods_with_affinity_list.push(info.clone());
            }
            if !info.pods_with_required_anti_affinity.is_empty() {
                s.have_pods_with_required_anti_affinity_list
                    .push(info.clone());
            }
            s.node_info_map
                .insert(info.node_name().to_string(), info.clone());
            s.node_info_list.push(info);
        }
        s
    }
}
