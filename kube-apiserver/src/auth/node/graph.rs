//! The relationships between a node and the objects its pods use, as upstream's node
//! authorizer graph: node <- pod <- {secret, configmap, pvc, service account, resource
//! claim}, node <- pod <- pvc <- pv <- secret, and node <- volume attachment.
//!
//! Upstream keeps a graph that informers update; we answer each question from the watch
//! caches instead, scanning the pods bound to the node in one namespace. That costs the pods
//! of a namespace per check, which stays small next to a request, and cannot drift from the
//! caches the rest of the apiserver reads.

use serde_json::Value;
use std::collections::BTreeSet;

use crate::registry::lookup::ObjectLookup;

/// The annotation that marks a mirror pod (the API copy of a kubelet's static pod).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The kinds of object whose access goes through the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    PersistentVolume,
    ResourceClaim,
    VolumeAttachment,
    ServiceAccount,
}

/// The names of the namespaced objects one pod references.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodReferences {
    pub secrets: BTreeSet<String>,
    pub config_maps: BTreeSet<String>,
    pub claims: BTreeSet<String>,
    pub resource_claims: BTreeSet<String>,
    pub service_account: Option<String>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn insert(set: &mut BTreeSet<String>, name: Option<&str>) {
    if let Some(n) = name {
        set.insert(n.to_string());
    }
}

/// Whether `pod` is a mirror pod.
pub fn is_mirror_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION))
}

/// The secrets, config maps, claims and service account `pod` references, in every place
/// upstream's pod visitors look (all container kinds, image pull secrets, volume sources).
pub fn pod_references(pod: &Value) -> PodReferences {
    let mut refs = PodReferences::default();
    for s in array(pod, "/spec/imagePullSecrets") {
        insert(&mut refs.secrets, str_at(s, "/name"));
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in array(pod, &format!("/spec/{list}")) {
            for e in array(c, "/envFrom") {
                insert(&mut refs.secrets, str_at(e, "/secretRef/name"));
                insert(&mut refs.config_maps, str_at(e, "/configMapRef/name"));
            }
            for e in array(c, "/env") {
                insert(&mut refs.secrets, str_at(e, "/valueFrom/secretKeyRef/name"));
                insert(
                    &mut refs.config_maps,
                    str_at(e, "/valueFrom/configMapKeyRef/name"),
                );
            }
        }
    }
    let pod_name = str_at(pod, "/metadata/name").unwrap_or_default();
    for v in array(pod, "/spec/volumes") {
        for pointer in [
            "/azureFile/secretName",
            "/secret/secretName",
            "/cephfs/secretRef/name",
            "/cinder/secretRef/name",
            "/flexVolume/secretRef/name",
            "/rbd/secretRef/name",
            "/scaleIO/secretRef/name",
            "/iscsi/secretRef/name",
            "/storageos/secretRef/name",
            "/csi/nodePublishSecretRef/name",
        ] {
            insert(&mut refs.secrets, str_at(v, pointer));
        }
        insert(&mut refs.config_maps, str_at(v, "/configMap/name"));
        for src in array(v, "/projected/sources") {
            insert(&mut refs.secrets, str_at(src, "/secret/name"));
            insert(&mut refs.config_maps, str_at(src, "/configMap/name"));
        }
        insert(
            &mut refs.claims,
            str_at(v, "/persistentVolumeClaim/claimName"),
        );
        // A generic ephemeral volume's claim is named after the pod and the volume.
        if v.get("ephemeral").is_some_and(|e| !e.is_null())
            && let Some(vol) = str_at(v, "/name")
        {
            refs.claims.insert(format!("{pod_name}-{vol}"));
        }
    }
    for c in array(pod, "/spec/resourceClaims") {
        if let Some(name) = str_at(c, "/resourceClaimName") {
            refs.resource_claims.insert(name.to_string());
        } else if let Some(entry) = str_at(c, "/name") {
            // A claim from a template is known once the controller records its name.
            let generated = array(pod, "/status/resourceClaimStatuses")
                .iter()
                .find(|s| str_at(s, "/name") == Some(entry))
                .and_then(|s| str_at(s, "/resourceClaimName"));
            insert(&mut refs.resource_claims, generated);
        }
    }
    // The deprecated `serviceAccount` stands in when `serviceAccountName` is empty, as
    // upstream's conversion reads it.
    refs.service_account = str_at(pod, "/spec/serviceAccountName")
        .or_else(|| str_at(pod, "/spec/serviceAccount"))
        .map(str::to_string);
    refs
}

/// The (namespace, name) of every secret a PersistentVolume makes the kubelet read, the
/// namespace defaulting to the bound claim's where the source leaves it out. Secrets only
/// controllers read (CSI controller publish and expand) are left out, as upstream does.
pub fn pv_kubelet_secrets(pv: &Value) -> Vec<(String, String)> {
    let claim_ns = str_at(pv, "/spec/claimRef/namespace").unwrap_or_default();
    let spec = &pv["spec"];
    let mut out = Vec::new();
    let mut push = |ns: Option<&str>, name: Option<&str>| {
        if let Some(name) = name {
            out.push((ns.unwrap_or(claim_ns).to_string(), name.to_string()));
        }
    };
    push(
        str_at(spec, "/azureFile/secretNamespace"),
        str_at(spec, "/azureFile/secretName"),
    );
    for source in [
        "cephfs",
        "cinder",
        "flexVolume",
        "rbd",
        "scaleIO",
        "iscsi",
        "storageos",
    ] {
        push(
            str_at(spec, &format!("/{source}/secretRef/namespace")),
            str_at(spec, &format!("/{source}/secretRef/name")),
        );
    }
    for r in [
        "nodePublishSecretRef",
        "nodeStageSecretRef",
        "nodeExpandSecretRef",
    ] {
        push(
            str_at(spec, &format!("/csi/{r}/namespace")),
            str_at(spec, &format!("/csi/{r}/name")),
        );
    }
    out
}

/// The pods bound to `node` in `namespace`.
fn node_pods(lookup: &dyn ObjectLookup, node: &str, namespace: &str) -> Vec<std::sync::Arc<Value>> {
    let node = node.to_string();
    lookup.list("", "pods", Some(namespace), &move |p: &Value| {
        p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node.as_str())
    })
}

/// Whether some pod bound to `node` in `namespace` references an object by `pick`. Mirror
/// pods count only for their own binding: a node can create them, so they must never grant
/// it anything else.
fn some_node_pod(
    lookup: &dyn ObjectLookup,
    node: &str,
    namespace: &str,
    pick: impl Fn(&PodReferences) -> bool,
) -> bool {
    node_pods(lookup, node, namespace)
        .iter()
        .any(|p| !is_mirror_pod(p) && pick(&pod_references(p)))
}

fn claim_used(lookup: &dyn ObjectLookup, node: &str, namespace: &str, name: &str) -> bool {
    some_node_pod(lookup, node, namespace, |r| r.claims.contains(name))
}

/// Whether the PersistentVolume `pv` is bound to a claim a pod on `node` uses.
fn pv_used(lookup: &dyn ObjectLookup, node: &str, pv: &Value) -> bool {
    match (
        str_at(pv, "/spec/claimRef/namespace"),
        str_at(pv, "/spec/claimRef/name"),
    ) {
        (Some(ns), Some(claim)) => claim_used(lookup, node, ns, claim),
        _ => false,
    }
}

/// Whether there is a path from the object `kind` `namespace`/`name` to `node`.
pub fn related(
    lookup: &dyn ObjectLookup,
    node: &str,
    kind: Kind,
    namespace: &str,
    name: &str,
) -> bool {
    let name_s = name.to_string();
    match kind {
        Kind::Pod => lookup
            .get("", "pods", Some(namespace), name)
            .is_some_and(|p| str_at(&p, "/spec/nodeName") == Some(node)),
        Kind::Secret => {
            some_node_pod(lookup, node, namespace, |r| r.secrets.contains(name))
                || lookup
                    .list("", "persistentvolumes", None, &move |pv: &Value| {
                        pv_kubelet_secrets(pv)
                            .iter()
                            .any(|(ns, n)| *n == name_s && ns == namespace)
                    })
                    .iter()
                    .any(|pv| pv_used(lookup, node, pv))
        }
        Kind::ConfigMap => some_node_pod(lookup, node, namespace, |r| r.config_maps.contains(name)),
        Kind::PersistentVolumeClaim => claim_used(lookup, node, namespace, name),
        Kind::PersistentVolume => lookup
            .get("", "persistentvolumes", None, name)
            .is_some_and(|pv| pv_used(lookup, node, &pv)),
        Kind::ResourceClaim => some_node_pod(lookup, node, namespace, |r| {
            r.resource_claims.contains(name)
        }),
        Kind::VolumeAttachment => lookup
            .get("storage.k8s.io", "volumeattachments", None, name)
            .is_some_and(|va| str_at(&va, "/spec/nodeName") == Some(node)),
        Kind::ServiceAccount => some_node_pod(lookup, node, namespace, |r| {
            r.service_account.as_deref() == Some(name)
        }),
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! An in-memory [`ObjectLookup`] for the node authorizer and NodeRestriction tests.

    use super::*;
    use std::sync::Arc;

    /// Objects keyed by (group, plural, namespace, name).
    #[derive(Default)]
    pub struct FakeLookup {
        pub objects: Vec<(String, String, String, Arc<Value>)>,
    }

    impl FakeLookup {
        pub fn with(mut self, group: &str, plural: &str, object: Value) -> Self {
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            self.objects
                .push((group.to_string(), plural.to_string(), ns, Arc::new(object)));
            self
        }
    }

    impl ObjectLookup for FakeLookup {
        fn get(
            &self,
            group: &str,
            plural: &str,
            namespace: Option<&str>,
            name: &str,
        ) -> Option<Arc<Value>> {
            self.objects
                .iter()
                .find(|(g, p, ns, o)| {
                    g == group
                        && p == plural
                        && ns == namespace.unwrap_or_default()
                        && o["metadata"]["name"] == name
                })
                .map(|(.., o)| o.clone())
        }

        fn list(
            &self,
            group: &str,
            plural: &str,
            namespace: Option<&str>,
            filter: &(dyn Fn(&Value) -> bool + Send + Sync),
        ) -> Vec<Arc<Value>> {
            self.objects
                .iter()
                .filter(|(g, p, ns, o)| {
                    g == group
                        && p == plural
                        && namespace.is_none_or(|want| want == ns)
                        && filter(o)
                })
                .map(|(.., o)| o.clone())
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeLookup;
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, spec: Value) -> Value {
        let mut spec = spec;
        spec["nodeName"] = json!(node);
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn references_cover_containers_volumes_and_claims() {
        let p = json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-c", "key": "k"}}}
                ]}],
                "initContainers": [{"envFrom": [{"secretRef": {"name": "init-s"}}]}],
                "ephemeralContainers": [{"envFrom": [{"configMapRef": {"name": "eph-c"}}]}],
                "volumes": [
                    {"name": "v1", "secret": {"secretName": "vol-s"}},
                    {"name": "v2", "configMap": {"name": "vol-c"}},
                    {"name": "v3", "projected": {"sources": [
                        {"secret": {"name": "proj-s"}}, {"configMap": {"name": "proj-c"}}
                    ]}},
                    {"name": "v4", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                    {"name": "v6", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-s"}}}
                ],
                "resourceClaims": [
                    {"name": "direct", "resourceClaimName": "gpu"},
                    {"name": "templ", "resourceClaimTemplateName": "t"},
                    {"name": "pending", "resourceClaimTemplateName": "t"}
                ]
            },
            "status": {"resourceClaimStatuses": [{"name": "templ", "resourceClaimName": "web-templ-x"}]}
        });
        let r = pod_references(&p);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            r.secrets,
            set(&["csi-s", "env-s", "init-s", "proj-s", "pull", "vol-s"])
        );
        assert_eq!(r.config_maps, set(&["env-c", "eph-c", "proj-c", "vol-c"]));
        assert_eq!(r.claims, set(&["data", "web-scratch"]));
        assert_eq!(r.resource_claims, set(&["gpu", "web-templ-x"]));
        assert_eq!(r.service_account.as_deref(), Some("sa"));
        let legacy = json!({"spec": {"serviceAccount": "old-sa"}});
        assert_eq!(
            pod_references(&legacy).service_account.as_deref(),
            Some("old-sa")
        );
    }

    #[test]
    fn relationships_follow_pods_bound_to_the_node() {
        let lookup = FakeLookup::default()
            .with(
                "",
                "pods",
                pod(
                    "a",
                    "n1",
                    json!({"volumes": [{"name": "v", "secret": {"secretName": "s1"}},
                                       {"name": "d", "persistentVolumeClaim": {"claimName": "c1"}}],
                           "serviceAccountName": "sa1"}),
                ),
            )
            .with(
                "",
                "pods",
                pod(
                    "b",
                    "n2",
                    json!({"volumes": [{"name": "v", "secret": {"secretName": "s2"}}]}),
                ),
            )
            .with(
                "",
                "persistentvolumes",
                json!({"metadata": {"name": "pv1"}, "spec": {
                    "claimRef": {"namespace": "ns", "name": "c1"},
                    "csi": {"driver": "d", "nodeStageSecretRef": {"name": "pv-s", "namespace": "ns"},
                            "controllerPublishSecretRef": {"name": "ctl-s", "namespace": "ns"}}
                }}),
            )
            .with(
                "storage.k8s.io",
                "volumeattachments",
                json!({"metadata": {"name": "va1"}, "spec": {"nodeName": "n1"}}),
            );
        let rel = |kind, ns, name| related(&lookup, "n1", kind, ns, name);
        assert!(rel(Kind::Secret, "ns", "s1"));
        assert!(!rel(Kind::Secret, "ns", "s2"), "pod on another node");
        assert!(!rel(Kind::Secret, "other", "s1"), "other namespace");
        assert!(rel(Kind::Secret, "ns", "pv-s"), "secret of a used PV");
        assert!(!rel(Kind::Secret, "ns", "ctl-s"), "controller-only secret");
        assert!(rel(Kind::PersistentVolumeClaim, "ns", "c1"));
        assert!(rel(Kind::PersistentVolume, "", "pv1"));
        assert!(rel(Kind::ServiceAccount, "ns", "sa1"));
        assert!(!rel(Kind::ServiceAccount, "ns", "default"));
        assert!(rel(Kind::Pod, "ns", "a"));
        assert!(!rel(Kind::Pod, "ns", "b"));
        assert!(rel(Kind::VolumeAttachment, "", "va1"));
        assert!(!related(&lookup, "n2", Kind::VolumeAttachment, "", "va1"));
        assert!(!related(&lookup, "n2", Kind::PersistentVolume, "", "pv1"));
    }

    #[test]
    fn mirror_pods_grant_nothing_but_themselves() {
        let mut p = pod(
            "static",
            "n1",
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s1"}}],
                   "serviceAccountName": "sa"}),
        );
        p["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "hash"});
        let lookup = FakeLookup::default().with("", "pods", p);
        assert!(related(&lookup, "n1", Kind::Pod, "ns", "static"));
        assert!(!related(&lookup, "n1", Kind::Secret, "ns", "s1"));
        assert!(!related(&lookup, "n1", Kind::ServiceAccount, "ns", "sa"));
    }
}
