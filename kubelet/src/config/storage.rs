//! The merge of each source's full pod set into incremental updates (upstream's `podStorage`):
//! every source sends its whole current set, and the difference to the previous one becomes
//! ADD, UPDATE, DELETE, REMOVE and RECONCILE operations.

use super::{PodOperation, PodUpdate};
use crate::pod::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, pod_full_name};
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, HashMap, HashSet};

/// When the kubelet first saw a pod (RFC 3339), kept across updates.
pub const CONFIG_FIRST_SEEN_ANNOTATION: &str = "kubernetes.io/config.seen";

/// Annotations the kubelet sets itself: they neither count as changes nor get overwritten.
const LOCAL_ANNOTATIONS: [&str; 3] = [
    CONFIG_SOURCE_ANNOTATION,
    CONFIG_MIRROR_ANNOTATION,
    CONFIG_FIRST_SEEN_ANNOTATION,
];

/// The last set of pods of every source, by uid.
#[derive(Default)]
pub struct PodStorage {
    pods: HashMap<&'static str, HashMap<String, Pod>>,
    seen: HashSet<&'static str>,
}

fn annotations(p: &Pod) -> BTreeMap<String, String> {
    p.metadata.annotations.clone().unwrap_or_default()
}

fn without_local(mut a: BTreeMap<String, String>) -> BTreeMap<String, String> {
    for k in LOCAL_ANNOTATIONS {
        a.remove(k);
    }
    a
}

/// Whether the pod changed in a way the kubelet must act on (status-only changes do not count).
fn differ_semantically(existing: &Pod, new: &Pod) -> bool {
    existing.spec != new.spec
        || existing.metadata.labels.as_ref().filter(|l| !l.is_empty())
            != new.metadata.labels.as_ref().filter(|l| !l.is_empty())
        || existing.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || existing.metadata.deletion_grace_period_seconds
            != new.metadata.deletion_grace_period_seconds
        || without_local(annotations(existing)) != without_local(annotations(new))
}

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

impl PodStorage {
    /// Whether every named source has sent at least one set.
    pub fn seen_all(&self, sources: &[&str]) -> bool {
        sources.iter().all(|s| self.seen.contains(s))
    }

    /// Takes a source's complete set and returns the updates to send, in upstream's order:
    /// removes, adds, updates, deletes, then reconciles. A source's first set always yields
    /// at least an (empty) ADD so the kubelet learns the source is ready.
    pub fn merge(&mut self, source: &'static str, pods: Vec<Pod>, now: &str) -> Vec<PodUpdate> {
        let first_set = self.seen.insert(source);
        let mut old = self.pods.remove(source).unwrap_or_default();
        let mut current: HashMap<String, Pod> = HashMap::new();
        let (mut adds, mut updates, mut deletes, mut reconciles) = (vec![], vec![], vec![], vec![]);
        let mut names = HashSet::new();
        for mut pod in pods {
            // Two pods of one source with the same name cannot both run: keep the first.
            if uid(&pod).is_empty() || !names.insert(pod_full_name(&pod)) {
                tracing::warn!(source, pod = %pod_full_name(&pod), "ignoring pod without a uid or with a duplicate name");
                continue;
            }
            if current.contains_key(uid(&pod)) {
                continue;
            }
            pod.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(CONFIG_SOURCE_ANNOTATION.to_string(), source.to_string());
            let key = uid(&pod).to_string();
            match old.remove(&key) {
                None => {
                    pod.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(CONFIG_FIRST_SEEN_ANNOTATION.to_string(), now.to_string());
                    adds.push(pod.clone());
                    current.insert(key, pod);
                }
                Some(mut existing) => {
                    if !differ_semantically(&existing, &pod) {
                        if existing.status != pod.status {
                            existing.status = pod.status.clone();
                            existing.metadata.resource_version =
                                pod.metadata.resource_version.clone();
                            reconciles.push(existing.clone());
                        }
                        current.insert(key, existing);
                        continue;
                    }
                    let mut merged = annotations(&pod);
                    let kept = annotations(&existing);
                    for k in LOCAL_ANNOTATIONS {
                        if let Some(v) = kept.get(k) {
                            merged.insert(k.to_string(), v.clone());
                        }
                    }
                    pod.metadata.annotations = Some(merged);
                    if pod.metadata.deletion_timestamp.is_some() {
                        deletes.push(pod.clone());
                    } else {
                        updates.push(pod.clone());
                    }
                    current.insert(key, pod);
                }
            }
        }
        let mut removes: Vec<Pod> = old.into_values().collect();
        removes.sort_by_key(pod_full_name);
        self.pods.insert(source, current);

        let signal_ready = first_set && adds.is_empty() && updates.is_empty() && deletes.is_empty();
        let batches = [
            (PodOperation::Remove, removes, false),
            (PodOperation::Add, adds, signal_ready),
            (PodOperation::Update, updates, false),
            (PodOperation::Delete, deletes, false),
            (PodOperation::Reconcile, reconciles, false),
        ];
        let out: Vec<PodUpdate> = batches
            .into_iter()
            .filter(|(_, pods, force)| *force || !pods.is_empty())
            .map(|(op, pods, _)| PodUpdate { op, pods, source })
            .collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn pod(uid: &str, name: &str, image: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some(image.into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ops(updates: &[PodUpdate]) -> Vec<(PodOperation, Vec<String>)> {
        updates
            .iter()
            .map(|u| {
                let names = u
                    .pods
                    .iter()
                    .map(|p| p.metadata.name.clone().unwrap_or_default())
                    .collect();
                (u.op, names)
            })
            .collect()
    }

    fn with_status(mut p: Pod, phase: &str) -> Pod {
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        p
    }

    fn deleting(mut p: Pod) -> Pod {
        p.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        p
    }

    fn labelled(mut p: Pod) -> Pod {
        p.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
        p
    }

    fn mirror_annotated(mut p: Pod) -> Pod {
        p.metadata.annotations = Some([(CONFIG_MIRROR_ANNOTATION.to_string(), "h".into())].into());
        p
    }

    #[test]
    fn merges_sets_into_operations() {
        use PodOperation::*;
        let a = || pod("1", "a", "busybox");
        let b = || pod("2", "b", "busybox");
        let n = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // (previous set, new set, expected operations)
        type Ops = Vec<(PodOperation, Vec<String>)>;
        let cases: Vec<(Vec<Pod>, Vec<Pod>, Ops)> = vec![
            (vec![], vec![a(), b()], vec![(Add, n(&["a", "b"]))]),
            (vec![a(), b()], vec![a()], vec![(Remove, n(&["b"]))]),
            (vec![a()], vec![a()], vec![]),
            (
                vec![a()],
                vec![pod("1", "a", "nginx")],
                vec![(Update, n(&["a"]))],
            ),
            (vec![a()], vec![labelled(a())], vec![(Update, n(&["a"]))]),
            (vec![a()], vec![deleting(a())], vec![(Delete, n(&["a"]))]),
            (
                vec![a()],
                vec![with_status(a(), "Running")],
                vec![(Reconcile, n(&["a"]))],
            ),
            // The kubelet's own annotations are no change.
            (vec![a()], vec![mirror_annotated(a())], vec![]),
            (
                vec![a(), b()],
                vec![pod("3", "c", "x"), pod("1", "a", "y"), deleting(b())],
                vec![(Add, n(&["c"])), (Update, n(&["a"])), (Delete, n(&["b"]))],
            ),
            // Duplicate names: the second is ignored.
            (
                vec![],
                vec![a(), pod("9", "a", "x")],
                vec![(Add, n(&["a"]))],
            ),
        ];
        for (i, (before, after, want)) in cases.into_iter().enumerate() {
            let mut s = PodStorage::default();
            s.merge("api", before, "t0");
            assert_eq!(ops(&s.merge("api", after, "t1")), want, "case {i}");
        }
    }

    #[test]
    fn first_set_signals_ready_even_when_empty() {
        let mut s = PodStorage::default();
        assert!(!s.seen_all(&["api", "file"]));
        let out = s.merge("file", vec![], "t0");
        assert_eq!(ops(&out), vec![(PodOperation::Add, vec![])]);
        assert_eq!(out[0].source, "file");
        assert!(!s.seen_all(&["api", "file"]));
        s.merge("api", vec![], "t0");
        assert!(s.seen_all(&["api", "file"]));
        assert!(s.merge("api", vec![], "t1").is_empty());
    }

    #[test]
    fn sources_are_kept_apart_and_annotated() {
        let mut s = PodStorage::default();
        s.merge("api", vec![pod("1", "a", "x")], "t0");
        let out = s.merge("file", vec![pod("2", "b", "x")], "t0");
        assert_eq!(ops(&out), vec![(PodOperation::Add, vec!["b".into()])]);
        let ann = annotations(&out[0].pods[0]);
        assert_eq!(
            ann.get(CONFIG_SOURCE_ANNOTATION).map(String::as_str),
            Some("file")
        );
        assert_eq!(
            ann.get(CONFIG_FIRST_SEEN_ANNOTATION).map(String::as_str),
            Some("t0")
        );
        // An update keeps the first-seen time.
        let out = s.merge("file", vec![pod("2", "b", "y")], "t9");
        let ann = annotations(&out[0].pods[0]);
        assert_eq!(
            ann.get(CONFIG_FIRST_SEEN_ANNOTATION).map(String::as_str),
            Some("t0")
        );
        // The api source's pod is untouched by the file source's sets.
        assert!(s.merge("api", vec![pod("1", "a", "x")], "t9").is_empty());
    }
}
