//! Bringing a [`Snapshot`] up to date, once per scheduling cycle. Only the nodes changed since
//! the snapshot's generation are visited (newest first, stopping at the first older one), and
//! each replaces its entry in the lists in place through positions the cache remembers. The
//! lists are rebuilt, in the node tree's zone-interleaved order, only when the set or order of
//! nodes changed; the affinity lists when a node gained or lost its last pod with affinity.

use super::scheduler_cache::{Inner, NodeStore};
use crate::framework::{NodeInfo, Snapshot};
use std::collections::HashMap;
use std::sync::Arc;

/// Where each node sits in the snapshot last updated, so a changed node replaces its entries
/// without a scan. It describes one snapshot: another one (seen by its generation, or by an
/// entry that is not where the index says) gets its lists rebuilt.
#[derive(Debug, Default)]
pub(super) struct SnapshotIndex {
    generation: i64,
    tree_version: u64,
    /// Node name to its position in `node_info_list`.
    positions: HashMap<String, usize>,
    /// Per `node_info_list` position: the node's positions in the affinity and the required
    /// anti-affinity lists.
    affinity_positions: Vec<(Option<usize>, Option<usize>)>,
    /// PVC key to the number of listed nodes using it: a key leaves `used_pvc_set` when the
    /// last one stops.
    pvc_nodes: HashMap<String, usize>,
}

enum Replaced {
    InPlace,
    AffinityMembershipChanged,
    /// The snapshot is not the one the index describes.
    Unindexed,
}

impl SnapshotIndex {
    fn describes(&self, snapshot: &Snapshot, tree_version: u64) -> bool {
        self.generation == snapshot.generation
            && self.tree_version == tree_version
            && self.positions.len() == snapshot.node_info_list.len()
            && self.affinity_positions.len() == snapshot.node_info_list.len()
    }

    fn replace(
        &mut self,
        snapshot: &mut Snapshot,
        name: &str,
        old: &Arc<NodeInfo>,
        new: &Arc<NodeInfo>,
    ) -> Replaced {
        let Some(&p) = self.positions.get(name) else {
            return Replaced::Unindexed;
        };
        match snapshot.node_info_list.get_mut(p) {
            Some(slot) if Arc::ptr_eq(slot, old) => *slot = new.clone(),
            _ => return Replaced::Unindexed,
        }
        self.update_pvcs(snapshot, old, new);
        let membership = |i: &NodeInfo| {
            (
                !i.pods_with_affinity.is_empty(),
                !i.pods_with_required_anti_affinity.is_empty(),
            )
        };
        if membership(old) != membership(new) {
            return Replaced::AffinityMembershipChanged;
        }
        let (affinity, anti) = self.affinity_positions.get(p).copied().unwrap_or_default();
        let lists = [
            (affinity, &mut snapshot.have_pods_with_affinity_list),
            (
                anti,
                &mut snapshot.have_pods_with_required_anti_affinity_list,
            ),
        ];
        for (pos, list) in lists {
            if let Some(pos) = pos {
                match list.get_mut(pos) {
                    Some(slot) if Arc::ptr_eq(slot, old) => *slot = new.clone(),
                    _ => return Replaced::Unindexed,
                }
            }
        }
        Replaced::InPlace
    }

    fn update_pvcs(&mut self, snapshot: &mut Snapshot, old: &NodeInfo, new: &NodeInfo) {
        for key in old.pvc_ref_counts.keys() {
            if new.pvc_ref_counts.contains_key(key) {
                continue;
            }
            if let Some(n) = self.pvc_nodes.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    self.pvc_nodes.remove(key);
                    snapshot.used_pvc_set.remove(key);
                }
            }
        }
        for key in new.pvc_ref_counts.keys() {
            if old.pvc_ref_counts.contains_key(key) {
                continue;
            }
            *self.pvc_nodes.entry(key.clone()).or_default() += 1;
            snapshot.used_pvc_set.insert(key.clone());
        }
    }

    fn rebuild_affinity_lists(&mut self, snapshot: &mut Snapshot) {
        let mut affinity = Vec::new();
        let mut anti = Vec::new();
        self.affinity_positions.clear();
        for info in &snapshot.node_info_list {
            let a = (!info.pods_with_affinity.is_empty()).then(|| {
                affinity.push(info.clone());
                affinity.len() - 1
            });
            let r = (!info.pods_with_required_anti_affinity.is_empty()).then(|| {
                anti.push(info.clone());
                anti.len() - 1
            });
            self.affinity_positions.push((a, r));
        }
        snapshot.have_pods_with_affinity_list = affinity;
        snapshot.have_pods_with_required_anti_affinity_list = anti;
    }

    fn rebuild_all(&mut self, snapshot: &mut Snapshot, order: &[&str]) {
        let mut list = Vec::with_capacity(order.len());
        self.positions.clear();
        self.pvc_nodes.clear();
        for name in order {
            let Some(info) = snapshot.node_info_map.get(*name) else {
                tracing::error!(
                    node = name,
                    "node exists in the node tree but not in the snapshot's node info map"
                );
                continue;
            };
            self.positions.insert(name.to_string(), list.len());
            for key in info.pvc_ref_counts.keys() {
                *self.pvc_nodes.entry(key.clone()).or_default() += 1;
            }
            list.push(info.clone());
        }
        snapshot.node_info_list = list;
        snapshot.used_pvc_set = self.pvc_nodes.keys().cloned().collect();
        self.rebuild_affinity_lists(snapshot);
    }
}

impl Inner {
    pub(super) fn update_snapshot(&mut self, snapshot: &mut Snapshot) {
        let Inner {
            nodes,
            tree,
            images,
            index,
            ..
        } = self;
        let NodeStore {
            generation,
            infos,
            recent,
        } = nodes;
        let mut rebuild_all = !index.describes(snapshot, tree.version());
        let mut rebuild_affinity = false;
        // Ranges over the generations after the snapshot's: exactly the nodes changed since.
        for (_, name) in recent.range(snapshot.generation + 1..).rev() {
            let Some(entry) = infos.get_mut(name) else {
                continue;
            };
            // A node info kept only for a removed node's pods is not schedulable.
            if entry.node.is_none() {
                continue;
            }
            if images.is_stale(&entry.image_states) {
                images.refresh(&mut Arc::make_mut(entry).image_states);
            }
            let info = entry.clone();
            // `get_mut` first: the steady state replaces an entry without allocating its key.
            let Some(slot) = snapshot.node_info_map.get_mut(name) else {
                snapshot.node_info_map.insert(name.clone(), info);
                rebuild_all = true;
                continue;
            };
            let old = std::mem::replace(slot, info.clone());
            if rebuild_all {
                continue;
            }
            match index.replace(snapshot, name, &old, &info) {
                Replaced::InPlace => {}
                Replaced::AffinityMembershipChanged => rebuild_affinity = true,
                Replaced::Unindexed => rebuild_all = true,
            }
        }
        if snapshot.node_info_map.len() > tree.num_nodes() {
            snapshot
                .node_info_map
                .retain(|name, _| infos.get(name).is_some_and(|i| i.node.is_some()));
            rebuild_all = true;
        }
        if rebuild_all {
            index.rebuild_all(snapshot, &tree.list());
        } else if rebuild_affinity {
            index.rebuild_affinity_lists(snapshot);
        }
        if snapshot.node_info_list.len() != tree.num_nodes() {
            tracing::error!(
                listed = snapshot.node_info_list.len(),
                nodes = tree.num_nodes(),
                "snapshot state is not consistent with the cache; rebuilding it"
            );
            snapshot
                .node_info_map
                .retain(|name, _| infos.get(name).is_some_and(|i| i.node.is_some()));
            for (name, info) in infos.iter() {
                if info.node.is_some() && !snapshot.node_info_map.contains_key(name) {
                    snapshot.node_info_map.insert(name.clone(), info.clone());
                }
            }
            index.rebuild_all(snapshot, &tree.list());
        }
        snapshot.generation = *generation;
        index.generation = *generation;
        index.tree_version = tree.version();
    }
}
