//! The kubelet's desired pods: the pod manager (pods from every source, with the mirror pods of
//! static pods) and the mirror pod client. Owner: the pod-sources engineer.

mod mirror;

pub use mirror::MirrorClient;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

/// Annotation naming where a pod came from: `api`, `file` or `http`.
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Annotation on mirror pods (and static pods) carrying the static pod's hash.
pub const CONFIG_MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub const CONFIG_HASH_ANNOTATION: &str = "kubernetes.io/config.hash";

/// Upstream's pod full name, `<name>_<namespace>`: unique per node across sources.
pub fn pod_full_name(pod: &Pod) -> String {
    full_name(
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or(""),
    )
}

pub fn full_name(name: &str, namespace: &str) -> String {
    format!("{name}_{namespace}")
}

/// Splits a full name back into (name, namespace).
pub fn parse_full_name(full: &str) -> anyhow::Result<(&str, &str)> {
    match full.rsplit_once('_') {
        Some((n, ns)) if !n.is_empty() && !ns.is_empty() => Ok((n, ns)),
        _ => anyhow::bail!("failed to parse the pod full name {full:?}"),
    }
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The hash a static pod's mirror must carry (its `config.hash` annotation).
pub fn static_pod_hash(pod: &Pod) -> Option<&str> {
    annotation(pod, CONFIG_HASH_ANNOTATION)
}

/// Whether `mirror` is the current mirror of `pod`: same name and the hash of this version.
pub fn is_mirror_pod_of(mirror: &Pod, pod: &Pod) -> bool {
    mirror.metadata.name == pod.metadata.name
        && mirror.metadata.namespace == pod.metadata.namespace
        && annotation(mirror, CONFIG_MIRROR_ANNOTATION)
            .is_some_and(|h| Some(h) == static_pod_hash(pod))
}

#[derive(Default)]
struct Pods {
    by_uid: HashMap<String, Arc<Pod>>,
    by_full_name: HashMap<String, Arc<Pod>>,
    mirror_by_uid: HashMap<String, Arc<Pod>>,
    mirror_by_full_name: HashMap<String, Arc<Pod>>,
}

impl Pods {
    fn add(&mut self, pod: Pod) {
        let pod = Arc::new(pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let name = pod_full_name(&pod);
        if is_mirror_pod(&pod) {
            // A replaced mirror (recreated under the same name) must not linger by its old uid.
            if let Some(old) = self.mirror_by_full_name.insert(name, pod.clone()) {
                self.mirror_by_uid
                    .remove(old.metadata.uid.as_deref().unwrap_or(""));
            }
            self.mirror_by_uid.insert(uid, pod);
        } else {
            if let Some(old) = self.by_full_name.insert(name, pod.clone()) {
                self.by_uid
                    .remove(old.metadata.uid.as_deref().unwrap_or(""));
            }
            self.by_uid.insert(uid, pod);
        }
    }

    fn remove(&mut self, pod: &Pod) {
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        let name = pod_full_name(pod);
        let (by_uid, by_name) = if is_mirror_pod(pod) {
            (&mut self.mirror_by_uid, &mut self.mirror_by_full_name)
        } else {
            (&mut self.by_uid, &mut self.by_full_name)
        };
        by_uid.remove(uid);
        if by_name
            .get(&name)
            .is_some_and(|p| p.metadata.uid.as_deref().unwrap_or("") == uid)
        {
            by_name.remove(&name);
        }
    }
}

/// Pods the kubelet should run, by uid and by full name, and the mirror pods of static pods
/// (kept apart: they are never run, only matched to their static pod by full name).
#[derive(Default)]
pub struct PodManager {
    pods: RwLock<Pods>,
}

impl PodManager {
    /// Replaces everything with this set (pods and mirror pods mixed).
    pub fn set_pods(&self, pods: Vec<Pod>) {
        let mut fresh = Pods::default();
        for p in pods {
            fresh.add(p);
        }
        *self.pods.write() = fresh;
    }

    /// Adds a pod or a mirror pod.
    pub fn add_pod(&self, pod: Pod) {
        self.pods.write().add(pod);
    }

    /// Replaces the stored copy (same as adding).
    pub fn update_pod(&self, pod: Pod) {
        self.pods.write().add(pod);
    }

    /// Forgets a pod or a mirror pod.
    pub fn remove_pod(&self, pod: &Pod) {
        self.pods.write().remove(pod);
    }

    /// Every desired pod (static pods as themselves, not their mirrors).
    pub fn get_pods(&self) -> Vec<Arc<Pod>> {
        self.pods.read().by_uid.values().cloned().collect()
    }

    /// Every mirror pod known.
    pub fn get_mirror_pods(&self) -> Vec<Arc<Pod>> {
        self.pods.read().mirror_by_uid.values().cloned().collect()
    }

    /// Desired pods and mirror pods together.
    pub fn get_pods_and_mirror_pods(&self) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
        let p = self.pods.read();
        (
            p.by_uid.values().cloned().collect(),
            p.mirror_by_uid.values().cloned().collect(),
        )
    }

    pub fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods.read().by_uid.get(uid).cloned()
    }

    /// A mirror pod by its own (apiserver) uid.
    pub fn get_mirror_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods.read().mirror_by_uid.get(uid).cloned()
    }

    pub fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.get_pod_by_full_name(&full_name(name, namespace))
    }

    pub fn get_pod_by_full_name(&self, full: &str) -> Option<Arc<Pod>> {
        self.pods.read().by_full_name.get(full).cloned()
    }

    /// The mirror pod of a static pod, whatever version of it the mirror reflects.
    pub fn get_mirror_pod_by_pod(&self, pod: &Pod) -> Option<Arc<Pod>> {
        self.pods
            .read()
            .mirror_by_full_name
            .get(&pod_full_name(pod))
            .cloned()
    }

    /// The static pod a mirror pod stands for.
    pub fn get_pod_by_mirror_pod(&self, mirror: &Pod) -> Option<Arc<Pod>> {
        self.get_pod_by_full_name(&pod_full_name(mirror))
    }

    /// The pod and its mirror for a pod that may be either; the bool says the input was a
    /// mirror.
    pub fn get_pod_and_mirror_pod(&self, pod: &Pod) -> (Option<Arc<Pod>>, Option<Arc<Pod>>, bool) {
        if is_mirror_pod(pod) {
            (
                self.get_pod_by_mirror_pod(pod),
                Some(Arc::new(pod.clone())),
                true,
            )
        } else {
            let p = self.get_pod_by_uid(pod.metadata.uid.as_deref().unwrap_or(""));
            (
                p.or_else(|| Some(Arc::new(pod.clone()))),
                self.get_mirror_pod_by_pod(pod),
                false,
            )
        }
    }

    /// The uid the kubelet runs a pod under: a mirror pod's uid maps to its static pod's.
    pub fn translate_pod_uid(&self, uid: &str) -> String {
        let p = self.pods.read();
        p.mirror_by_uid
            .get(uid)
            .and_then(|m| p.by_full_name.get(&pod_full_name(m)))
            .and_then(|s| s.metadata.uid.clone())
            .unwrap_or_else(|| uid.to_string())
    }

    /// Full names of mirror pods whose static pod is gone: they should be deleted.
    pub fn orphaned_mirror_pods(&self) -> Vec<String> {
        let p = self.pods.read();
        let mut names: Vec<String> = p
            .mirror_by_full_name
            .keys()
            .filter(|n| !p.by_full_name.contains_key(*n))
            .cloned()
            .collect();
        names.sort();
        names
    }
}

/// A pod from the static pod directory or the manifest URL.
pub fn is_static_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
        .is_some_and(|s| s != "api")
}

/// The apiserver's copy of a static pod.
pub fn is_mirror_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CONFIG_MIRROR_ANNOTATION))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(uid: &str, name: &str, ann: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                name: Some(name.into()),
                namespace: Some("ns".into()),
                annotations: Some(
                    ann.iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn mirrors_are_kept_apart_and_matched_by_name_and_hash() {
        let m = PodManager::default();
        let stat = pod(
            "s1",
            "web-n1",
            &[
                (CONFIG_SOURCE_ANNOTATION, "file"),
                (CONFIG_HASH_ANNOTATION, "s1"),
            ],
        );
        let mirror = pod("m1", "web-n1", &[(CONFIG_MIRROR_ANNOTATION, "s1")]);
        let api = pod("a1", "api", &[(CONFIG_SOURCE_ANNOTATION, "api")]);
        m.set_pods(vec![stat.clone(), mirror.clone(), api.clone()]);
        assert!(is_static_pod(&stat) && !is_static_pod(&api) && is_mirror_pod(&mirror));
        let mut uids: Vec<_> = m
            .get_pods()
            .iter()
            .map(|p| p.metadata.uid.clone().unwrap())
            .collect();
        uids.sort();
        assert_eq!(uids, ["a1", "s1"]);
        assert_eq!(
            m.get_pod_by_name("ns", "api")
                .map(|p| p.metadata.uid.clone()),
            Some(Some("a1".into()))
        );
        let got = m.get_mirror_pod_by_pod(&stat).expect("mirror");
        assert!(is_mirror_pod_of(&got, &stat));
        assert_eq!(
            m.get_pod_by_mirror_pod(&mirror)
                .and_then(|p| p.metadata.uid.clone())
                .as_deref(),
            Some("s1")
        );
        assert_eq!(m.translate_pod_uid("m1"), "s1");
        assert_eq!(m.translate_pod_uid("a1"), "a1");
        assert!(m.orphaned_mirror_pods().is_empty());

        // An edited static pod (new hash) no longer matches the old mirror.
        let edited = pod(
            "s2",
            "web-n1",
            &[
                (CONFIG_SOURCE_ANNOTATION, "file"),
                (CONFIG_HASH_ANNOTATION, "s2"),
            ],
        );
        m.remove_pod(&stat);
        m.add_pod(edited.clone());
        assert!(m.get_pod_by_uid("s1").is_none());
        assert!(!is_mirror_pod_of(
            &m.get_mirror_pod_by_pod(&edited).expect("mirror"),
            &edited
        ));

        m.remove_pod(&edited);
        assert_eq!(m.orphaned_mirror_pods(), ["web-n1_ns"]);
        m.remove_pod(&mirror);
        assert!(m.get_mirror_pods().is_empty());
    }

    #[test]
    fn readding_under_the_same_name_drops_the_old_uid() {
        let m = PodManager::default();
        m.add_pod(pod("1", "a", &[]));
        m.update_pod(pod("2", "a", &[]));
        assert!(m.get_pod_by_uid("1").is_none());
        assert_eq!(m.get_pods().len(), 1);
        // Removing the stale uid does not drop the newer pod's name entry.
        m.remove_pod(&pod("1", "a", &[]));
        assert!(m.get_pod_by_name("ns", "a").is_some());
    }

    #[test]
    fn full_names_round_trip() {
        assert_eq!(
            parse_full_name("web-n1_default").unwrap(),
            ("web-n1", "default")
        );
        assert!(parse_full_name("nounderscore").is_err());
    }
}
