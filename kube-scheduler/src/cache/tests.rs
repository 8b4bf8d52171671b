use super::Cache;
use crate::framework::testing::{node, pod, pod_info};
use crate::framework::{NodeInfo, PodInfo, Snapshot};
use k8s_openapi::api::core::v1::{
    Affinity, ContainerImage, Node, PersistentVolumeClaimVolumeSource, Pod, PodAffinityTerm,
    PodAntiAffinity, Volume, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(30);

fn zoned_node(name: &str, zone: &str, cpu: &str) -> Node {
    let mut labels = vec![("topology.kubernetes.io/region", "r")];
    if !zone.is_empty() {
        labels.push(("topology.kubernetes.io/zone", zone));
    }
    node(
        name,
        &[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")],
        &labels,
    )
}

fn with_images(mut n: Node, images: &[(&[&str], i64)]) -> Node {
    if let Some(status) = n.status.as_mut() {
        status.images = Some(
            images
                .iter()
                .map(|(names, size)| ContainerImage {
                    names: Some(names.iter().map(|s| s.to_string()).collect()),
                    size_bytes: Some(*size),
                })
                .collect(),
        );
    }
    n
}

fn on_node(mut p: Pod, node: &str) -> Pod {
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = (!node.is_empty()).then(|| node.to_string());
    }
    p
}

fn bound(name: &str, node: &str, cpu: &str) -> Pod {
    on_node(pod(name, &[("cpu", cpu)]), node)
}

fn affinity_term() -> PodAffinityTerm {
    PodAffinityTerm {
        topology_key: "kubernetes.io/hostname".into(),
        label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), "db".to_string())])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod with required anti-affinity (`required`) or only a preferred one.
fn with_anti_affinity(mut p: Pod, required: bool) -> Pod {
    let anti = if required {
        PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![affinity_term()]),
            ..Default::default()
        }
    } else {
        PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 1,
                    pod_affinity_term: affinity_term(),
                },
            ]),
            ..Default::default()
        }
    };
    if let Some(spec) = p.spec.as_mut() {
        spec.affinity = Some(Affinity {
            pod_anti_affinity: Some(anti),
            ..Default::default()
        });
    }
    p
}

fn with_pvc(mut p: Pod, claim: &str) -> Pod {
    if let Some(spec) = p.spec.as_mut() {
        spec.volumes = Some(vec![Volume {
            name: "data".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.into(),
                read_only: None,
            }),
            ..Default::default()
        }]);
    }
    p
}

fn uid(name: &str) -> String {
    format!("uid-pod-{name}")
}

fn pod_uids(info: &NodeInfo) -> BTreeSet<String> {
    info.pods.iter().map(|p| p.uid().to_string()).collect()
}

fn names(list: &[Arc<NodeInfo>]) -> Vec<String> {
    list.iter().map(|i| i.node_name().to_string()).collect()
}

fn milli_cpu(cache: &Cache, node: &str) -> Option<i64> {
    cache.node_info(node).map(|i| i.requested.milli_cpu)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Assume(&'static str, &'static str),
    FinishBinding(&'static str, &'static str),
    Forget(&'static str, &'static str),
    /// The informer's Add of a bound pod.
    Add(&'static str, &'static str),
    Remove(&'static str, &'static str),
    /// Expire with the clock this far past the binding's end.
    Cleanup(Duration),
}

#[test]
fn assume_confirm_forget_expire() {
    struct Case {
        name: &'static str,
        ttl: Duration,
        ops: Vec<Op>,
        /// Pods counted on n1, then on n2 (milli-CPU; each pod requests 100m).
        want_cpu: (i64, i64),
        want_assumed: Vec<&'static str>,
        want_present: Vec<&'static str>,
    }
    use Op::*;
    let past = TTL + Duration::from_secs(1);
    let cases = [
        Case {
            name: "assumed pod counts at once",
            ttl: TTL,
            ops: vec![Assume("a", "n1")],
            want_cpu: (100, 0),
            want_assumed: vec!["a"],
            want_present: vec!["a"],
        },
        Case {
            name: "informer add confirms the assumption",
            ttl: TTL,
            ops: vec![
                Assume("a", "n1"),
                FinishBinding("a", "n1"),
                Add("a", "n1"),
                Cleanup(past),
            ],
            want_cpu: (100, 0),
            want_assumed: vec![],
            want_present: vec!["a"],
        },
        Case {
            name: "forget undoes the assumption",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), Assume("b", "n1"), Forget("a", "n1")],
            want_cpu: (100, 0),
            want_assumed: vec!["b"],
            want_present: vec!["b"],
        },
        Case {
            name: "forget on another node than assumed is refused",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), Forget("a", "n2")],
            want_cpu: (100, 0),
            want_assumed: vec!["a"],
            want_present: vec!["a"],
        },
        Case {
            name: "a confirmed pod cannot be forgotten",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), Add("a", "n1"), Forget("a", "n1")],
            want_cpu: (100, 0),
            want_assumed: vec![],
            want_present: vec!["a"],
        },
        Case {
            name: "expires after the ttl once binding finished",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), FinishBinding("a", "n1"), Cleanup(past)],
            want_cpu: (0, 0),
            want_assumed: vec![],
            want_present: vec![],
        },
        Case {
            name: "does not expire before the deadline",
            ttl: TTL,
            ops: vec![
                Assume("a", "n1"),
                FinishBinding("a", "n1"),
                Cleanup(TTL - Duration::from_secs(1)),
            ],
            want_cpu: (100, 0),
            want_assumed: vec!["a"],
            want_present: vec!["a"],
        },
        Case {
            name: "does not expire while binding is in flight",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), Cleanup(past * 10)],
            want_cpu: (100, 0),
            want_assumed: vec!["a"],
            want_present: vec!["a"],
        },
        Case {
            name: "ttl zero never expires",
            ttl: Duration::ZERO,
            ops: vec![
                Assume("a", "n1"),
                FinishBinding("a", "n1"),
                Cleanup(past * 100),
            ],
            want_cpu: (100, 0),
            want_assumed: vec!["a"],
            want_present: vec!["a"],
        },
        Case {
            name: "an expired pod is added back by the informer",
            ttl: TTL,
            ops: vec![
                Assume("a", "n1"),
                FinishBinding("a", "n1"),
                Cleanup(past),
                Add("a", "n1"),
            ],
            want_cpu: (100, 0),
            want_assumed: vec![],
            want_present: vec!["a"],
        },
        Case {
            name: "informer reports another node than assumed: the pod moves",
            ttl: TTL,
            ops: vec![Assume("a", "n1"), Add("a", "n2")],
            want_cpu: (0, 100),
            want_assumed: vec![],
            want_present: vec!["a"],
        },
        Case {
            name: "a pod already in the cache cannot be assumed again",
            ttl: TTL,
            ops: vec![Add("a", "n1"), Assume("a", "n2")],
            want_cpu: (100, 0),
            want_assumed: vec![],
            want_present: vec!["a"],
        },
        Case {
            name: "remove takes a bound pod off its node",
            ttl: TTL,
            ops: vec![Add("a", "n1"), Add("b", "n2"), Remove("a", "n1")],
            want_cpu: (0, 100),
            want_assumed: vec![],
            want_present: vec!["b"],
        },
    ];
    for c in cases {
        let cache = Cache::new(c.ttl);
        cache.add_node(Arc::new(zoned_node("n1", "a", "4")));
        cache.add_node(Arc::new(zoned_node("n2", "a", "4")));
        let start = Instant::now();
        for op in &c.ops {
            match *op {
                Assume(p, n) => {
                    let res = cache.assume_pod(pod_info(bound(p, n, "100m")));
                    assert_eq!(
                        res.is_ok(),
                        cache.get_pod(&uid(p)).is_some_and(|i| i.node_name() == n),
                        "{}: assume result agrees with the cache",
                        c.name
                    );
                }
                FinishBinding(p, n) => {
                    cache.finish_binding_at(&pod_info(bound(p, n, "100m")), start)
                }
                Forget(p, n) => cache.forget_pod(&pod_info(bound(p, n, "100m"))),
                Add(p, n) => {
                    cache.add_pod(Arc::new(bound(p, n, "100m")));
                }
                Remove(p, n) => cache.remove_pod(&bound(p, n, "100m")),
                Cleanup(after) => cache.cleanup_assumed_pods(start + after),
            }
        }
        let cpu = (
            milli_cpu(&cache, "n1").unwrap_or(-1),
            milli_cpu(&cache, "n2").unwrap_or(-1),
        );
        assert_eq!(cpu, c.want_cpu, "{}: requested CPU on n1, n2", c.name);
        for p in ["a", "b"] {
            assert_eq!(
                cache.is_assumed_pod(&uid(p)),
                c.want_assumed.contains(&p),
                "{}: is {p} assumed",
                c.name
            );
            assert_eq!(
                cache.get_pod(&uid(p)).is_some(),
                c.want_present.contains(&p),
                "{}: is {p} present",
                c.name
            );
        }
        assert_eq!(cache.pod_count(), c.want_present.len(), "{}", c.name);
        let dump = cache.dump();
        let mut assumed: Vec<_> = dump.assumed_pods.into_iter().collect();
        assumed.sort();
        let want: Vec<_> = c.want_assumed.iter().map(|p| uid(p)).collect();
        assert_eq!(assumed, want, "{}: dump's assumed pods", c.name);
    }
}

#[test]
fn assume_rejects_unbound_and_duplicate_pods() {
    let cache = Cache::new(TTL);
    let err = cache
        .assume_pod(pod_info(pod("a", &[])))
        .expect_err("no node name");
    assert!(err.contains("has no node name"), "{err}");
    cache
        .assume_pod(pod_info(bound("a", "n1", "1")))
        .expect("first assumption");
    let err = cache
        .assume_pod(pod_info(bound("a", "n1", "1")))
        .expect_err("second assumption");
    assert_eq!(
        err,
        "pod uid-pod-a(default/a) is in the cache, so can't be assumed"
    );
}

#[test]
fn update_pod_replaces_requests_and_affinity() {
    let cache = Cache::new(TTL);
    cache.add_node(Arc::new(zoned_node("n1", "a", "4")));
    let old = bound("a", "n1", "100m");
    cache.add_pod(Arc::new(old.clone()));
    let new = with_anti_affinity(bound("a", "n1", "300m"), true);
    cache.update_pod(&old, Arc::new(new));
    let info = cache.node_info("n1").expect("node info");
    assert_eq!(info.requested.milli_cpu, 300);
    assert_eq!(info.pods.len(), 1);
    assert_eq!(info.pods_with_required_anti_affinity.len(), 1);
    // An assumed pod is not updated: it must be confirmed by an Add first.
    let assumed = bound("b", "n1", "100m");
    cache.assume_pod(pod_info(assumed.clone())).expect("assume");
    cache.update_pod(&assumed, Arc::new(bound("b", "n1", "900m")));
    assert_eq!(milli_cpu(&cache, "n1"), Some(400));
}

#[test]
fn node_removed_with_pods_keeps_info_until_pods_go() {
    let cache = Cache::new(TTL);
    let n1 = zoned_node("n1", "a", "4");
    cache.add_node(Arc::new(n1.clone()));
    cache.add_node(Arc::new(zoned_node("n2", "a", "4")));
    cache.add_pod(Arc::new(bound("a", "n1", "100m")));
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    assert_eq!(names(&snap.node_info_list), ["n1", "n2"]);

    cache.remove_node(&n1);
    assert_eq!(cache.node_count(), 2, "n1's info stays for its pod");
    let info = cache.node_info("n1").expect("info kept");
    assert!(info.node.is_none());
    assert_eq!(info.pods.len(), 1);
    cache.update_snapshot(&mut snap);
    assert_eq!(names(&snap.node_info_list), ["n2"]);
    assert!(snap.get("n1").is_none());

    cache.remove_pod(&bound("a", "n1", "100m"));
    assert_eq!(cache.node_count(), 1);
    assert!(cache.node_info("n1").is_none());
    cache.update_snapshot(&mut snap);
    assert_eq!(names(&snap.node_info_list), ["n2"]);

    // A pod seen before its node creates a node-less info that the node then fills.
    cache.add_pod(Arc::new(bound("b", "n3", "200m")));
    cache.update_snapshot(&mut snap);
    assert_eq!(names(&snap.node_info_list), ["n2"]);
    cache.add_node(Arc::new(zoned_node("n3", "a", "4")));
    cache.update_snapshot(&mut snap);
    assert_eq!(names(&snap.node_info_list), ["n2", "n3"]);
    assert_eq!(snap.get("n3").map(|i| i.requested.milli_cpu), Some(200));
}

#[test]
fn image_states_count_nodes_per_name() {
    let big: &[&str] = &["registry/big:1", "big:1"];
    let small: &[&str] = &["registry/small:1"];
    let cache = Cache::new(TTL);
    cache.add_node(Arc::new(with_images(
        zoned_node("n1", "a", "4"),
        &[(big, 500), (small, 10)],
    )));
    cache.add_node(Arc::new(with_images(
        zoned_node("n2", "a", "4"),
        &[(big, 500)],
    )));
    let n3 = with_images(zoned_node("n3", "a", "4"), &[(small, 10)]);
    cache.add_node(Arc::new(n3.clone()));

    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let summary = |snap: &Snapshot, node: &str, image: &str| {
        snap.get(node)
            .and_then(|i| i.image_states.get(image).cloned())
            .map(|s| (s.size, s.num_nodes))
    };
    let cases = [
        ("n1", "registry/big:1", Some((500, 2))),
        ("n1", "big:1", Some((500, 2))),
        ("n1", "registry/small:1", Some((10, 2))),
        ("n2", "big:1", Some((500, 2))),
        ("n2", "registry/small:1", None),
        ("n3", "registry/small:1", Some((10, 2))),
    ];
    for (node, image, want) in cases {
        assert_eq!(summary(&snap, node, image), want, "{node} {image}");
    }

    // Counts are taken when a node is snapshotted (as upstream): n3 leaving shows on n1 once
    // n1 itself changes.
    cache.remove_node(&n3);
    cache.update_snapshot(&mut snap);
    assert_eq!(summary(&snap, "n1", "registry/small:1"), Some((10, 2)));
    cache.add_pod(Arc::new(bound("a", "n1", "100m")));
    cache.update_snapshot(&mut snap);
    assert_eq!(summary(&snap, "n1", "registry/small:1"), Some((10, 1)));

    // Updating a node's images replaces its contribution.
    let n2_old = with_images(zoned_node("n2", "a", "4"), &[(big, 500)]);
    cache.update_node(
        &n2_old,
        Arc::new(with_images(zoned_node("n2", "a", "4"), &[(small, 10)])),
    );
    let mut fresh = Snapshot::default();
    cache.update_snapshot(&mut fresh);
    assert_eq!(summary(&fresh, "n1", "big:1"), Some((500, 1)));
    assert_eq!(summary(&fresh, "n2", "registry/small:1"), Some((10, 2)));
    assert_eq!(summary(&fresh, "n2", "big:1"), None);
}

#[test]
fn snapshot_interleaves_zones() {
    let cache = Cache::new(TTL);
    for (n, z) in [
        ("a1", "za"),
        ("a2", "za"),
        ("a3", "za"),
        ("b1", "zb"),
        ("c1", "zc"),
        ("b2", "zb"),
        ("x1", ""),
    ] {
        cache.add_node(Arc::new(zoned_node(n, z, "4")));
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    assert_eq!(
        names(&snap.node_info_list),
        ["a1", "b1", "c1", "x1", "a2", "b2", "a3"]
    );
    // A node changing zone moves in the order of an existing snapshot too.
    cache.update_node(
        &zoned_node("a1", "za", "4"),
        Arc::new(zoned_node("a1", "zc", "4")),
    );
    cache.update_snapshot(&mut snap);
    assert_eq!(
        names(&snap.node_info_list),
        ["a2", "b1", "c1", "x1", "a3", "b2", "a1"]
    );
}

#[test]
fn generation_bookkeeping() {
    let cache = Cache::new(TTL);
    for n in ["n1", "n2", "n3"] {
        cache.add_node(Arc::new(zoned_node(n, "a", "4")));
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let gens: HashMap<String, i64> = snap
        .node_info_list
        .iter()
        .map(|i| (i.node_name().to_string(), i.generation))
        .collect();
    assert_eq!(snap.generation, *gens.values().max().unwrap_or(&0));
    assert_eq!(gens.len(), 3);
    let distinct: BTreeSet<_> = gens.values().collect();
    assert_eq!(distinct.len(), 3, "each change gets its own generation");

    // Nothing changed: the snapshot is left as it was.
    let before: Vec<_> = snap.node_info_list.clone();
    let generation = snap.generation;
    cache.update_snapshot(&mut snap);
    assert_eq!(snap.generation, generation);
    assert!(
        before
            .iter()
            .zip(&snap.node_info_list)
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );

    // One node changes: only its entry is replaced, the snapshot's old copy is untouched.
    cache.add_pod(Arc::new(bound("a", "n2", "250m")));
    cache.update_snapshot(&mut snap);
    assert!(snap.generation > generation);
    for (old, new) in before.iter().zip(&snap.node_info_list) {
        if new.node_name() == "n2" {
            assert!(!Arc::ptr_eq(old, new));
            assert_eq!(old.requested.milli_cpu, 0, "copy on write");
            assert_eq!(new.requested.milli_cpu, 250);
            assert_eq!(new.generation, snap.generation);
            assert!(Arc::ptr_eq(new, snap.get("n2").expect("in map")));
        } else {
            assert!(Arc::ptr_eq(old, new), "{} untouched", new.node_name());
        }
    }

    // A snapshot the index does not describe (an older clone) is still brought up to date.
    let mut stale = Snapshot::default();
    cache.update_snapshot(&mut stale);
    cache.add_pod(Arc::new(bound("b", "n1", "100m")));
    cache.update_snapshot(&mut snap);
    cache.add_pod(Arc::new(bound("c", "n3", "100m")));
    cache.update_snapshot(&mut stale);
    cache.update_snapshot(&mut snap);
    for s in [&snap, &stale] {
        let cpu: Vec<i64> = s
            .node_info_list
            .iter()
            .map(|i| i.requested.milli_cpu)
            .collect();
        assert_eq!(cpu, [100, 250, 100]);
    }
}

/// A small deterministic generator, so a failing sequence can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Clone)]
struct ModelPod {
    pod: Pod,
    node: String,
    assumed: bool,
}

/// What the snapshot must hold, built from scratch from the model.
fn check_against_model(
    snap: &Snapshot,
    cache: &Cache,
    nodes: &BTreeMap<String, Node>,
    pods: &BTreeMap<String, ModelPod>,
    step: usize,
) {
    let mut fresh = Snapshot::default();
    cache.update_snapshot(&mut fresh);
    assert_eq!(
        names(&snap.node_info_list),
        names(&fresh.node_info_list),
        "step {step}: order"
    );
    let listed: BTreeSet<String> = names(&snap.node_info_list).into_iter().collect();
    let want_listed: BTreeSet<String> = nodes.keys().cloned().collect();
    assert_eq!(listed, want_listed, "step {step}: listed nodes");
    assert_eq!(
        snap.node_info_map.len(),
        nodes.len(),
        "step {step}: map size"
    );
    assert_eq!(snap.generation, fresh.generation, "step {step}");

    let mut want_pvcs = BTreeSet::new();
    let mut want_affinity = BTreeSet::new();
    let mut want_anti = BTreeSet::new();
    for (name, n) in nodes {
        let mut expected = NodeInfo::new(Some(Arc::new(n.clone())));
        for p in pods.values().filter(|p| &p.node == name) {
            expected.add_pod(Arc::new(PodInfo::new(Arc::new(p.pod.clone()))));
        }
        let got = snap.get(name).expect("node in map");
        assert!(
            snap.node_info_list.iter().any(|i| Arc::ptr_eq(i, got)),
            "step {step}: {name} map and list share the info"
        );
        assert_eq!(
            pod_uids(got),
            pod_uids(&expected),
            "step {step}: pods on {name}"
        );
        assert_eq!(got.requested, expected.requested, "step {step}: {name}");
        assert_eq!(
            got.non_zero_requested, expected.non_zero_requested,
            "step {step}"
        );
        assert_eq!(got.allocatable, expected.allocatable, "step {step}: {name}");
        assert_eq!(
            got.pvc_ref_counts, expected.pvc_ref_counts,
            "step {step}: {name}"
        );
        assert_eq!(
            got.pods_with_affinity.len(),
            expected.pods_with_affinity.len(),
            "step {step}: {name}"
        );
        want_pvcs.extend(expected.pvc_ref_counts.keys().cloned());
        if !expected.pods_with_affinity.is_empty() {
            want_affinity.insert(name.clone());
        }
        if !expected.pods_with_required_anti_affinity.is_empty() {
            want_anti.insert(name.clone());
        }
    }
    let set = |l: &[Arc<NodeInfo>]| names(l).into_iter().collect::<BTreeSet<_>>();
    assert_eq!(
        set(&snap.have_pods_with_affinity_list),
        want_affinity,
        "step {step}"
    );
    assert_eq!(
        set(&snap.have_pods_with_required_anti_affinity_list),
        want_anti,
        "step {step}"
    );
    for l in [
        &snap.have_pods_with_affinity_list,
        &snap.have_pods_with_required_anti_affinity_list,
    ] {
        for i in l {
            assert!(
                snap.get(i.node_name()).is_some_and(|m| Arc::ptr_eq(m, i)),
                "step {step}: affinity list entry for {} is current",
                i.node_name()
            );
        }
    }
    assert_eq!(
        names(&snap.have_pods_with_affinity_list),
        names(&fresh.have_pods_with_affinity_list),
        "step {step}: affinity list order"
    );
    let pvcs: BTreeSet<String> = snap.used_pvc_set.iter().cloned().collect();
    assert_eq!(pvcs, want_pvcs, "step {step}: used PVCs");
    for (uid, p) in pods {
        assert_eq!(cache.is_assumed_pod(uid), p.assumed, "step {step}: {uid}");
    }
}

#[test]
fn incremental_snapshot_matches_a_full_build_after_random_operations() {
    for seed in [0x9e37_79b9_7f4a_7c15u64, 42, 7_777_777] {
        let mut rng = Rng(seed);
        let cache = Cache::new(TTL);
        let mut snap = Snapshot::default();
        let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
        // Nodes removed while pods remained, with those pods.
        let mut pods: BTreeMap<String, ModelPod> = BTreeMap::new();
        let zones = ["za", "zb", "zc", ""];
        let mut next_pod = 0;
        for step in 0..700 {
            match rng.below(10) {
                0 => {
                    let name = format!("n{}", rng.below(24));
                    let n = zoned_node(&name, zones[rng.below(zones.len())], "8");
                    match nodes.get(&name) {
                        Some(old) => cache.update_node(old, Arc::new(n.clone())),
                        None => cache.add_node(Arc::new(n.clone())),
                    }
                    nodes.insert(name, n);
                }
                1 if !nodes.is_empty() && rng.below(3) == 0 => {
                    let name = nodes.keys().nth(rng.below(nodes.len())).cloned();
                    if let Some(n) = name.and_then(|k| nodes.remove(&k)) {
                        cache.remove_node(&n);
                    }
                }
                2..=5 if !nodes.is_empty() => {
                    let node = nodes
                        .keys()
                        .nth(rng.below(nodes.len()))
                        .cloned()
                        .unwrap_or_default();
                    next_pod += 1;
                    let name = format!("p{next_pod}");
                    let mut p = bound(&name, &node, ["100m", "250m", "1"][rng.below(3)]);
                    match rng.below(6) {
                        0 => p = with_anti_affinity(p, true),
                        1 => p = with_anti_affinity(p, false),
                        2 => p = with_pvc(p, &format!("claim-{}", rng.below(5))),
                        _ => {}
                    }
                    let assumed = rng.below(2) == 0;
                    if assumed {
                        cache.assume_pod(pod_info(p.clone())).expect("new pod");
                    } else {
                        cache.add_pod(Arc::new(p.clone()));
                    }
                    pods.insert(
                        uid(&name),
                        ModelPod {
                            pod: p,
                            node,
                            assumed,
                        },
                    );
                }
                6 | 7 if !pods.is_empty() => {
                    let key = pods
                        .keys()
                        .nth(rng.below(pods.len()))
                        .cloned()
                        .unwrap_or_default();
                    let Some(mp) = pods.get(&key).cloned() else {
                        continue;
                    };
                    if mp.assumed {
                        if rng.below(2) == 0 {
                            cache.forget_pod(&PodInfo::new(Arc::new(mp.pod.clone())));
                            pods.remove(&key);
                        } else {
                            // Confirmed, possibly on another node than assumed.
                            let target = if rng.below(3) == 0 && !nodes.is_empty() {
                                nodes
                                    .keys()
                                    .nth(rng.below(nodes.len()))
                                    .cloned()
                                    .unwrap_or_default()
                            } else {
                                mp.node.clone()
                            };
                            let p = on_node(mp.pod.clone(), &target);
                            cache.add_pod(Arc::new(p.clone()));
                            pods.insert(
                                key,
                                ModelPod {
                                    pod: p,
                                    node: target,
                                    assumed: false,
                                },
                            );
                        }
                    } else {
                        cache.remove_pod(&mp.pod);
                        pods.remove(&key);
                    }
                }
                8 if !pods.is_empty() => {
                    let key = pods
                        .keys()
                        .nth(rng.below(pods.len()))
                        .cloned()
                        .unwrap_or_default();
                    let Some(mp) = pods.get(&key).cloned() else {
                        continue;
                    };
                    if !mp.assumed {
                        let mut new = mp.pod.clone();
                        if let Some(spec) = new.spec.as_mut() {
                            spec.containers[0].resources = None;
                        }
                        new = if rng.below(2) == 0 {
                            with_anti_affinity(new, true)
                        } else {
                            new
                        };
                        cache.update_pod(&mp.pod, Arc::new(new.clone()));
                        pods.insert(key, ModelPod { pod: new, ..mp });
                    }
                }
                _ => {}
            }
            // Pods on removed nodes count only once their node returns.
            let live: BTreeMap<String, ModelPod> = pods
                .iter()
                .filter(|(_, p)| nodes.contains_key(&p.node))
                .map(|(k, p)| (k.clone(), p.clone()))
                .collect();
            if rng.below(3) == 0 || step % 50 == 0 {
                cache.update_snapshot(&mut snap);
                check_against_model(&snap, &cache, &nodes, &live, step);
            }
            assert_eq!(cache.pod_count(), pods.len(), "seed {seed} step {step}");
        }
    }
}

/// Cost of the hot path: 5000 nodes, one changed per cycle. Run with
/// `cargo test -p kube-scheduler --lib cache::tests::bench -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_update_snapshot_one_changed_node_of_5000() {
    let cache = Cache::new(TTL);
    for i in 0..5000 {
        cache.add_node(Arc::new(zoned_node(
            &format!("n{i}"),
            ["a", "b", "c"][i % 3],
            "32",
        )));
        for j in 0..10 {
            cache.add_pod(Arc::new(bound(
                &format!("p{i}-{j}"),
                &format!("n{i}"),
                "100m",
            )));
        }
    }
    let mut snap = Snapshot::default();
    let t = Instant::now();
    cache.update_snapshot(&mut snap);
    let full = t.elapsed();
    let rounds = 2000;
    let mut total = Duration::ZERO;
    // Assuming pays the copy of the node's info that the snapshot still shares.
    let mut assume = Duration::ZERO;
    for r in 0..rounds {
        let p = pod_info(bound(
            &format!("x{r}"),
            &format!("n{}", (r * 7919) % 5000),
            "10m",
        ));
        let t = Instant::now();
        cache.assume_pod(p).expect("assume");
        assume += t.elapsed();
        let t = Instant::now();
        cache.update_snapshot(&mut snap);
        total += t.elapsed();
    }
    assert_eq!(snap.num_nodes(), 5000);
    println!(
        "full build: {full:?}; incremental with one changed node: {:?} per cycle; \
         assume (copy on write): {:?}",
        total / rounds as u32,
        assume / rounds as u32
    );
}

#[test]
fn cache_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Cache>();
}

#[tokio::test]
async fn cleanup_task_expires_assumed_pods_until_shutdown() {
    let cache = Arc::new(Cache::new(Duration::from_millis(20)));
    let shutdown = tokio_util::sync::CancellationToken::new();
    cache.run_cleanup(Duration::from_millis(5), shutdown.clone());
    let a = pod_info(bound("a", "n1", "100m"));
    cache.assume_pod(a.clone()).expect("assume");
    cache.finish_binding(&a);
    let deadline = Instant::now() + Duration::from_secs(5);
    while cache.get_pod(a.uid()).is_some() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(cache.get_pod(a.uid()).is_none(), "expired by the task");
    assert_eq!(
        cache.node_count(),
        0,
        "the node-less info went with its last pod"
    );

    shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let b = pod_info(bound("b", "n1", "100m"));
    cache.assume_pod(b.clone()).expect("assume");
    cache.finish_binding(&b);
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(cache.is_assumed_pod(b.uid()), "no cleanup after shutdown");
}
