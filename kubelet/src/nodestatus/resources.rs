//! Capacity and allocatable, as upstream's node allocatable:
//! allocatable = capacity - kubeReserved - systemReserved - hard eviction thresholds.

use super::machine::MachineInfo;
use crate::app::config::{EvictionThreshold, ThresholdValue};
use api_types::resource::{Quantity, ResourceList};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use std::collections::BTreeMap;

/// Bytes as upstream prints a BinarySI amount: `Ki` when it divides evenly.
fn bytes(n: u64) -> Quantity {
    let text = if n.is_multiple_of(1024) && n > 0 {
        format!("{}Ki", n / 1024)
    } else {
        n.to_string()
    };
    Quantity::parse(&text).unwrap_or(Quantity::ZERO)
}

/// The node's capacity: CPUs, memory, the root dir's filesystem, pods and (empty) hugepages.
pub fn capacity(machine: &MachineInfo, fs_capacity: u64, max_pods: i32) -> ResourceList {
    let mut list = ResourceList::new();
    list.insert("cpu".into(), Quantity::from_int(machine.num_cpus as i64));
    list.insert("memory".into(), bytes(machine.memory_bytes));
    list.insert("ephemeral-storage".into(), bytes(fs_capacity));
    list.insert("pods".into(), Quantity::from_int(max_pods.into()));
    list.insert("hugepages-1Gi".into(), Quantity::ZERO);
    list.insert("hugepages-2Mi".into(), Quantity::ZERO);
    list
}

/// Capacity minus the reservations and the hard eviction thresholds (memory.available for
/// memory, nodefs.available for ephemeral-storage), never below zero.
pub fn allocatable(
    capacity: &ResourceList,
    kube_reserved: &ResourceList,
    system_reserved: &ResourceList,
    eviction_hard: &[EvictionThreshold],
) -> ResourceList {
    let mut out = capacity.clone();
    for (name, amount) in out.iter_mut() {
        let mut reserved = Quantity::ZERO;
        for list in [kube_reserved, system_reserved] {
            if let Some(q) = list.get(name) {
                reserved = reserved.add(q);
            }
        }
        let signal = match name.as_str() {
            "memory" => Some("memory.available"),
            "ephemeral-storage" => Some("nodefs.available"),
            _ => None,
        };
        if let Some(t) = eviction_hard
            .iter()
            .find(|t| Some(t.signal.as_str()) == signal)
        {
            let threshold = match &t.value {
                ThresholdValue::Quantity(q) => *q,
                ThresholdValue::Percentage(_) => {
                    let n = t.value.amount(amount.value());
                    Quantity::from_int(i64::try_from(n).unwrap_or(i64::MAX))
                }
            };
            reserved = reserved.add(&threshold);
        }
        let left = amount.sub(&reserved);
        *amount = if left.is_negative() {
            Quantity::ZERO
        } else {
            left
        };
    }
    out
}

/// A resource list in the API's shape.
pub fn to_api(list: &ResourceList) -> BTreeMap<String, ApiQuantity> {
    list.iter()
        .map(|(k, v)| (k.clone(), ApiQuantity(v.canonical())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::config::parse;

    fn machine() -> MachineInfo {
        MachineInfo {
            num_cpus: 2,
            memory_bytes: 4 * 1024 * 1024 * 1024,
            ..MachineInfo::default()
        }
    }

    fn thresholds(text: &str) -> Vec<EvictionThreshold> {
        parse::eviction_thresholds(&parse::eviction_flag(text).unwrap()).unwrap()
    }

    #[test]
    fn capacity_and_allocatable() {
        let cap = capacity(&machine(), 100 * 1024 * 1024 * 1024, 110);
        let api = to_api(&cap);
        assert_eq!(api["cpu"].0, "2");
        assert_eq!(api["memory"].0, "4Gi");
        assert_eq!(api["pods"].0, "110");
        assert_eq!(api["hugepages-2Mi"].0, "0");
        let kube: ResourceList = [("cpu".to_string(), Quantity::parse("100m").unwrap())].into();
        let system: ResourceList = [
            ("cpu".to_string(), Quantity::parse("400m").unwrap()),
            ("memory".to_string(), Quantity::parse("1Gi").unwrap()),
        ]
        .into();
        let alloc = allocatable(
            &cap,
            &kube,
            &system,
            &thresholds("memory.available<1Gi,nodefs.available<10%"),
        );
        assert_eq!(alloc["cpu"].milli_value(), 1500);
        assert_eq!(alloc["memory"].value(), 2 * 1024 * 1024 * 1024);
        assert_eq!(alloc["ephemeral-storage"].value(), 90 * 1024 * 1024 * 1024);
        assert_eq!(alloc["pods"].value(), 110);
        let huge: ResourceList = [("memory".to_string(), Quantity::parse("1Ti").unwrap())].into();
        let alloc = allocatable(&cap, &huge, &ResourceList::new(), &[]);
        assert!(alloc["memory"].is_zero(), "clamped at zero");
    }
}
