//! Planning the writes that turn a service's existing EndpointSlices into the desired ones with
//! little churn: endpoints stay in the slice that holds them, changed slices are updated,
//! emptied ones deleted, new endpoints fill slices already being updated (then the roomiest
//! unchanged one) before new slices are created. Shared by the endpointslice and mirroring
//! controllers.

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use std::collections::{BTreeMap, HashMap};

/// (name, port, protocol, appProtocol) of every port, sorted: slices are grouped by it.
pub type PortsKey = Vec<(String, i32, String, String)>;

pub fn ports_key(ports: &[EndpointPort]) -> PortsKey {
    let mut key: PortsKey = ports
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                p.app_protocol.clone().unwrap_or_default(),
            )
        })
        .collect();
    key.sort();
    key
}

/// Identifies an endpoint across syncs: its first address and the object it stands for.
fn endpoint_key(ep: &Endpoint) -> (String, String) {
    let target = ep
        .target_ref
        .as_ref()
        .map(|r| r.uid.clone().or_else(|| r.name.clone()).unwrap_or_default())
        .unwrap_or_default();
    (ep.addresses.first().cloned().unwrap_or_default(), target)
}

/// The endpoints wanted for one address type and port set.
#[derive(Debug, Clone)]
pub struct DesiredGroup {
    pub address_type: String,
    pub ports: Vec<EndpointPort>,
    pub endpoints: Vec<Endpoint>,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub create: Vec<EndpointSlice>,
    pub update: Vec<EndpointSlice>,
    pub delete: Vec<EndpointSlice>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// Plans the writes. `labels` are what every slice must carry; `new_slice` makes an empty
/// slice (metadata but no endpoints) for an address type and ports. A desired group with no
/// endpoints asks for one empty placeholder slice.
pub fn plan(
    existing: &[EndpointSlice],
    desired: &[DesiredGroup],
    max_per_slice: usize,
    labels: &BTreeMap<String, String>,
    new_slice: &dyn Fn(&str, &[EndpointPort]) -> EndpointSlice,
) -> Plan {
    let max_per_slice = max_per_slice.max(1);
    let mut plan = Plan::default();
    let mut by_group: HashMap<(String, PortsKey), Vec<&EndpointSlice>> = HashMap::new();
    for slice in existing {
        let key = (
            slice.address_type.clone(),
            ports_key(slice.ports.as_deref().unwrap_or_default()),
        );
        by_group.entry(key).or_default().push(slice);
    }
    for group in desired {
        let key = (group.address_type.clone(), ports_key(&group.ports));
        let slices = by_group.remove(&key).unwrap_or_default();
        plan_group(&mut plan, slices, group, max_per_slice, labels, new_slice);
    }
    // Slices of port sets or address types no longer wanted.
    for slices in by_group.into_values() {
        plan.delete.extend(slices.into_iter().cloned());
    }
    reuse_deleted(&mut plan);
    plan
}

/// A slice about to be deleted becomes one about to be created (same address type, which is
/// immutable): one update instead of a create and a delete, and never a moment with both.
fn reuse_deleted(plan: &mut Plan) {
    let mut i = 0;
    while i < plan.delete.len() && !plan.create.is_empty() {
        let address_type = &plan.delete[i].address_type;
        let Some(pos) = plan
            .create
            .iter()
            .rposition(|c| &c.address_type == address_type)
        else {
            i += 1;
            continue;
        };
        let mut slice = plan.create.remove(pos);
        let old = plan.delete.remove(i);
        slice.metadata.name = old.metadata.name;
        slice.metadata.uid = old.metadata.uid;
        slice.metadata.resource_version = old.metadata.resource_version;
        slice.metadata.annotations = old.metadata.annotations;
        plan.update.push(slice);
    }
}

fn plan_group(
    plan: &mut Plan,
    slices: Vec<&EndpointSlice>,
    group: &DesiredGroup,
    max_per_slice: usize,
    labels: &BTreeMap<String, String>,
    new_slice: &dyn Fn(&str, &[EndpointPort]) -> EndpointSlice,
) {
    let labels_ok = |s: &EndpointSlice| s.metadata.labels.as_ref() == Some(labels);
    if group.endpoints.is_empty() {
        let mut slices = slices.into_iter();
        match slices.next() {
            Some(keep) => {
                if !keep.endpoints.is_empty() || !labels_ok(keep) {
                    let mut updated = keep.clone();
                    updated.endpoints.clear();
                    updated.metadata.labels = Some(labels.clone());
                    plan.update.push(updated);
                }
            }
            None => plan
                .create
                .push(new_slice(&group.address_type, &group.ports)),
        }
        plan.delete.extend(slices.cloned());
        return;
    }
    let mut remaining: BTreeMap<(String, String), &Endpoint> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for ep in &group.endpoints {
        let key = endpoint_key(ep);
        if remaining.insert(key.clone(), ep).is_none() {
            order.push(key);
        }
    }
    let mut updating: Vec<EndpointSlice> = Vec::new();
    let mut unchanged: Vec<EndpointSlice> = Vec::new();
    for slice in slices {
        let mut changed = !labels_ok(slice);
        let mut kept = Vec::with_capacity(slice.endpoints.len());
        for ep in &slice.endpoints {
            match remaining.remove(&endpoint_key(ep)) {
                Some(want) => {
                    if want != ep {
                        changed = true;
                    }
                    kept.push(want.clone());
                }
                None => changed = true,
            }
        }
        if kept.is_empty() {
            plan.delete.push(slice.clone());
            continue;
        }
        let mut next = slice.clone();
        next.endpoints = kept;
        next.metadata.labels = Some(labels.clone());
        if changed {
            updating.push(next);
        } else {
            unchanged.push(next);
        }
    }
    let mut left: Vec<Endpoint> = order
        .iter()
        .filter_map(|k| remaining.get(k).map(|ep| (*ep).clone()))
        .collect();
    for slice in &mut updating {
        let room = max_per_slice.saturating_sub(slice.endpoints.len());
        let take = room.min(left.len());
        slice.endpoints.extend(left.drain(..take));
    }
    // Fewer new endpoints than a slice holds: updating the roomiest unchanged slice is cheaper
    // than creating one.
    if !left.is_empty() && left.len() < max_per_slice {
        let roomiest = unchanged
            .iter()
            .enumerate()
            .filter(|(_, s)| s.endpoints.len() + left.len() <= max_per_slice)
            .min_by_key(|(_, s)| s.endpoints.len())
            .map(|(i, _)| i);
        if let Some(i) = roomiest {
            let mut slice = unchanged.swap_remove(i);
            slice.endpoints.append(&mut left);
            updating.push(slice);
        }
    }
    for chunk in left.chunks(max_per_slice) {
        let mut slice = new_slice(&group.address_type, &group.ports);
        slice.endpoints = chunk.to_vec();
        plan.create.push(slice);
    }
    plan.update.extend(updating);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::discovery::v1::EndpointConditions;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn ep(ip: &str, ready: bool) -> Endpoint {
        Endpoint {
            addresses: vec![ip.into()],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            }),
            target_ref: Some(ObjectReference {
                name: Some(ip.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn port(n: i32) -> Vec<EndpointPort> {
        vec![EndpointPort {
            name: Some("p".into()),
            port: Some(n),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]
    }

    fn labels() -> BTreeMap<String, String> {
        [("l".to_string(), "v".to_string())].into()
    }

    fn slice(uid: &str, p: i32, eps: Vec<Endpoint>) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                labels: Some(labels()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            ports: Some(port(p)),
            endpoints: eps,
        }
    }

    fn group(p: i32, eps: Vec<Endpoint>) -> DesiredGroup {
        DesiredGroup {
            address_type: "IPv4".into(),
            ports: port(p),
            endpoints: eps,
        }
    }

    fn new_slice(t: &str, ports: &[EndpointPort]) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                labels: Some(labels()),
                ..Default::default()
            },
            address_type: t.into(),
            ports: Some(ports.to_vec()),
            endpoints: vec![],
        }
    }

    /// (created slice sizes, updated uids, deleted uids)
    fn summary(p: &Plan) -> (Vec<usize>, Vec<String>, Vec<String>) {
        let uid = |s: &EndpointSlice| s.metadata.uid.clone().unwrap_or_default();
        (
            p.create.iter().map(|s| s.endpoints.len()).collect(),
            p.update.iter().map(uid).collect(),
            p.delete.iter().map(uid).collect(),
        )
    }

    #[test]
    fn plans_minimal_churn() {
        let many: Vec<Endpoint> = (0..250).map(|i| ep(&format!("10.0.1.{i}"), true)).collect();
        type Case = (
            &'static str,
            Vec<EndpointSlice>,
            Vec<DesiredGroup>,
            (Vec<usize>, Vec<&'static str>, Vec<&'static str>),
        );
        let cases: Vec<Case> = vec![
            (
                "nothing yet: chunks of 100",
                vec![],
                vec![group(80, many.clone())],
                (vec![100, 100, 50], vec![], vec![]),
            ),
            (
                "unchanged: no writes",
                vec![slice("a", 80, vec![ep("1.1.1.1", true)])],
                vec![group(80, vec![ep("1.1.1.1", true)])],
                (vec![], vec![], vec![]),
            ),
            (
                "condition change updates in place",
                vec![
                    slice("a", 80, vec![ep("1.1.1.1", true)]),
                    slice("b", 80, vec![ep("1.1.1.2", true)]),
                ],
                vec![group(80, vec![ep("1.1.1.1", false), ep("1.1.1.2", true)])],
                (vec![], vec!["a"], vec![]),
            ),
            (
                "new endpoint goes to a slice being updated",
                vec![
                    slice("a", 80, vec![ep("1.1.1.1", true)]),
                    slice("b", 80, vec![ep("1.1.1.2", true)]),
                ],
                vec![group(
                    80,
                    vec![
                        ep("1.1.1.2", false),
                        ep("1.1.1.3", true),
                        ep("1.1.1.1", true),
                    ],
                )],
                (vec![], vec!["b"], vec![]),
            ),
            (
                "new endpoint fills an unchanged slice rather than a new one",
                vec![slice("a", 80, vec![ep("1.1.1.1", true)])],
                vec![group(80, vec![ep("1.1.1.1", true), ep("1.1.1.3", true)])],
                (vec![], vec!["a"], vec![]),
            ),
            (
                "emptied slice and stale ports deleted",
                vec![
                    slice("a", 80, vec![ep("1.1.1.1", true)]),
                    slice("b", 81, vec![ep("1.1.1.2", true)]),
                ],
                vec![group(80, vec![ep("1.1.1.9", true)])],
                (vec![], vec!["a"], vec!["b"]),
            ),
            (
                "the placeholder becomes the first slice",
                vec![EndpointSlice {
                    ports: None,
                    ..slice("p", 0, vec![])
                }],
                vec![group(80, vec![ep("1.1.1.1", true)])],
                (vec![], vec!["p"], vec![]),
            ),
            (
                "no endpoints: one placeholder kept",
                vec![
                    slice("a", 80, vec![]),
                    slice("b", 80, vec![ep("1.1.1.2", true)]),
                ],
                vec![group(80, vec![])],
                (vec![], vec![], vec!["b"]),
            ),
            (
                "no endpoints, no slices: placeholder created",
                vec![],
                vec![group(80, vec![])],
                (vec![0], vec![], vec![]),
            ),
        ];
        for (name, existing, desired, want) in cases {
            let got = summary(&plan(&existing, &desired, 100, &labels(), &new_slice));
            let want = (
                want.0,
                want.1.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                want.2.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            );
            let mut got_sorted = got.clone();
            got_sorted.2.sort();
            assert_eq!(got_sorted, want, "{name}");
        }
    }

    #[test]
    fn label_drift_is_an_update() {
        let mut s = slice("a", 80, vec![ep("1.1.1.1", true)]);
        s.metadata.labels = None;
        let got = plan(
            &[s],
            &[group(80, vec![ep("1.1.1.1", true)])],
            100,
            &labels(),
            &new_slice,
        );
        assert_eq!(got.update.len(), 1);
        assert_eq!(got.update[0].metadata.labels, Some(labels()));
    }
}
