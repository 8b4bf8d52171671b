//! The in-tree plugins of upstream's default profile, and the registry that names them.

pub mod default_binder;
pub mod default_preemption;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod queue_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

use crate::framework::Registry;

/// Every in-tree plugin by its upstream name.
pub fn in_tree_registry() -> Registry {
    let mut r = Registry::new();
    r.register(queue_sort::NAME, queue_sort::new);
    r.register(scheduling_gates::NAME, scheduling_gates::new);
    r.register(node_unschedulable::NAME, node_unschedulable::new);
    r.register(node_name::NAME, node_name::new);
    r.register(taint_toleration::NAME, taint_toleration::new);
    r.register(node_affinity::NAME, node_affinity::new);
    r.register(node_ports::NAME, node_ports::new);
    r.register(node_resources::fit::NAME, node_resources::fit::new);
    r.register(
        node_resources::balanced_allocation::NAME,
        node_resources::balanced_allocation::new,
    );
    r.register(image_locality::NAME, image_locality::new);
    r.register(pod_topology_spread::NAME, pod_topology_spread::new);
    r.register(inter_pod_affinity::NAME, inter_pod_affinity::new);
    r.register(volume_restrictions::NAME, volume_restrictions::new);
    r.register(node_volume_limits::NAME, node_volume_limits::new);
    r.register(volume_binding::NAME, volume_binding::new);
    r.register(volume_zone::NAME, volume_zone::new);
    r.register(default_preemption::NAME, default_preemption::new);
    r.register(default_binder::NAME, default_binder::new);
    r
}
