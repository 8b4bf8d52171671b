//! What differs between resources in the generic store, as upstream's REST strategies: what
//! create and update may set, where `status` may change, whether `generation` is tracked, how
//! deletion goes. Adding a built-in resource means adding rules here, not a new handler.

use super::meta::{meta_mut, spec_part};
use crate::crd::CustomResource;
use api_types::registry::ResourceInfo;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::sync::Arc;

/// The rules of one resource.
#[derive(Clone)]
pub struct Strategy {
    pub info: &'static ResourceInfo,
    /// `status` changes only through the `/status` subresource.
    pub has_status_subresource: bool,
    /// `metadata.generation` starts at 1 and is bumped on every spec change.
    pub tracks_generation: bool,
    /// A custom resource's schema, rules and names; None for built-in resources.
    pub custom: Option<Arc<CustomResource>>,
}

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: everything but `status` (when there is a status subresource).
    Main,
    /// The `/status` subresource: only `status`.
    Status,
    /// The pod `binding` subresource: `spec.nodeName` and the PodScheduled condition, written
    /// together in one update that pod update validation (which forbids nodeName changes)
    /// does not see, as upstream's binding storage.
    Binding,
    /// The pod `ephemeralcontainers` subresource: only `spec.ephemeralContainers`, checked by
    /// [`super::ephemeral`] instead of pod update validation (which forbids any spec change).
    EphemeralContainers,
}

/// Kinds whose spec changes bump `metadata.generation` upstream.
const GENERATION_TRACKED: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
    ("", "replicationcontrollers"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("policy", "poddisruptionbudgets"),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "networkpolicies"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
];

impl Strategy {
    pub fn for_resource(info: &'static ResourceInfo) -> Self {
        Self {
            info,
            has_status_subresource: info.subresources.iter().any(|s| s.name == "status"),
            tracks_generation: GENERATION_TRACKED.contains(&(info.group, info.plural)),
            custom: None,
        }
    }

    /// The rules of a custom resource version: every change outside metadata and status bumps
    /// the generation, as upstream's custom resource strategy does.
    pub fn for_custom(info: &'static ResourceInfo, custom: Arc<CustomResource>) -> Self {
        Self {
            tracks_generation: true,
            custom: Some(custom),
            ..Self::for_resource(info)
        }
    }

    /// The finalizer a delete adds before anything is removed: a CRD's instances are cleaned
    /// up first (upstream's `customresourcecleanup.apiextensions.k8s.io`).
    pub fn deletion_finalizer(&self) -> Option<&'static str> {
        self.is("apiextensions.k8s.io", "customresourcedefinitions")
            .then_some(crate::crd::CLEANUP_FINALIZER)
    }

    /// A delete without a propagation policy orphans the dependents: core/v1
    /// ReplicationControllers keep upstream's pre-garbage-collector default.
    pub fn orphans_by_default(&self) -> bool {
        self.is("", "replicationcontrollers")
    }

    fn is(&self, group: &str, plural: &str) -> bool {
        self.info.group == group && self.info.plural == plural
    }

    /// Sets what create owns: the initial status and generation.
    pub fn prepare_for_create(&self, object: &mut Value) {
        self.normalize(object);
        if self.is("batch", "jobs") {
            generate_job_selector(object);
        }
        if self.tracks_generation {
            meta_mut(object).insert("generation".into(), json!(1));
        } else {
            meta_mut(object).remove("generation");
        }
        if !self.has_status_subresource {
            return;
        }
        if self.custom.is_some() {
            // A custom resource's status is written only through /status, as upstream.
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
            }
            return;
        }
        let status = if self.is("", "pods") {
            Some(json!({"phase": "Pending", "qosClass": qos_class(object)}))
        } else if self.is("", "namespaces") {
            Some(json!({"phase": "Active"}))
        } else if self.is("", "persistentvolumes") || self.is("", "persistentvolumeclaims") {
            Some(json!({"phase": "Pending"}))
        } else if self.is("", "services") {
            Some(json!({"loadBalancer": {}}))
        } else if self.is("", "nodes")
            || self.is("certificates.k8s.io", "certificatesigningrequests")
        {
            // The kubelet registers its node with status; CSR conditions are set by approval.
            None
        } else {
            Some(json!({}))
        };
        if let (Some(status), Some(map)) = (status, object.as_object_mut()) {
            map.insert("status".into(), status);
        }
    }

    /// Makes `new` (an update of `old`) change only what `part` may change, and bumps the
    /// generation on a spec change.
    pub fn prepare_for_update(&self, new: &mut Value, old: &Value, part: Part) {
        if part == Part::Main {
            self.normalize(new);
        }
        match part {
            Part::Status => {
                let status = new.get("status").cloned();
                let metadata = new.get("metadata").cloned();
                *new = old.clone();
                if let Some(map) = new.as_object_mut() {
                    match status {
                        Some(status) => map.insert("status".into(), status),
                        None => map.remove("status"),
                    };
                    // Status writers may still carry the resourceVersion they read.
                    if let Some(rv) = metadata.as_ref().and_then(|m| m.get("resourceVersion")) {
                        meta_mut(new).insert("resourceVersion".into(), rv.clone());
                    }
                }
            }
            Part::Main if self.has_status_subresource => {
                if let Some(map) = new.as_object_mut() {
                    match old.get("status") {
                        Some(status) => map.insert("status".into(), status.clone()),
                        None => map.remove("status"),
                    };
                }
            }
            Part::EphemeralContainers => {
                let ephemeral = new.pointer("/spec/ephemeralContainers").cloned();
                let rv = new.pointer("/metadata/resourceVersion").cloned();
                *new = old.clone();
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    match ephemeral {
                        Some(list) => spec.insert("ephemeralContainers".into(), list),
                        None => spec.remove("ephemeralContainers"),
                    };
                }
                if let Some(rv) = rv {
                    meta_mut(new).insert("resourceVersion".into(), rv);
                }
            }
            Part::Main | Part::Binding => {}
        }
        if self.tracks_generation {
            let old_generation = old
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let generation = if spec_part(new) != spec_part(old) {
                old_generation + 1
            } else {
                old_generation
            };
            meta_mut(new).insert("generation".into(), json!(generation));
        }
    }

    /// Write-only conveniences of the API folded into the stored form, as upstream's decoding
    /// does: a Secret's `stringData` becomes base64 `data` (its keys win) and is not kept.
    fn normalize(&self, object: &mut Value) {
        if !self.is("", "secrets") {
            return;
        }
        let Some(string_data) = object.as_object_mut().and_then(|m| m.remove("stringData")) else {
            return;
        };
        let Some(entries) = string_data.as_object() else {
            return;
        };
        if !object["data"].is_object() {
            object["data"] = json!({});
        }
        for (key, value) in entries {
            if let Some(text) = value.as_str() {
                object["data"][key] = json!(STANDARD.encode(text));
            }
        }
    }

    /// Whether objects of this resource are deleted gracefully (pods: the kubelet confirms).
    pub fn graceful_delete_seconds(&self, object: &Value) -> Option<i64> {
        if !self.is("", "pods") {
            return None;
        }
        // A pod that never reached a node, or has finished, has nothing to stop.
        let scheduled = object["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
        let phase = object["status"]["phase"].as_str().unwrap_or("");
        if !scheduled || phase == "Succeeded" || phase == "Failed" {
            return Some(0);
        }
        Some(
            object["spec"]["terminationGracePeriodSeconds"]
                .as_i64()
                .unwrap_or(30),
        )
    }

    /// Whether a delete answers with the deleted object (else a `Status` of Success), as upstream.
    pub fn returns_deleted_object(&self) -> bool {
        self.is("", "pods") || self.is("", "namespaces") || self.is("", "services")
    }
}

/// A pod's QoS class from its containers' requests and limits, as upstream computes it.
fn qos_class(pod: &Value) -> &'static str {
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|field| pod["spec"][field].as_array())
        .flatten();
    let mut any = false;
    let mut guaranteed = true;
    for container in containers {
        let requests = &container["resources"]["requests"];
        let limits = &container["resources"]["limits"];
        for resource in ["cpu", "memory"] {
            let (request, limit) = (&requests[resource], &limits[resource]);
            if !request.is_null() || !limit.is_null() {
                any = true;
            }
            // Requests default to limits, so a limit alone is also "equal".
            if limit.is_null() || (!request.is_null() && request != limit) {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// A Job without `manualSelector: true` selects its pods by its uid, and its pod template
/// carries the labels that selector and `kubectl` look for, as upstream's job strategy.
fn generate_job_selector(job: &mut Value) {
    if job["spec"]["manualSelector"].as_bool() == Some(true) || !job["spec"].is_object() {
        return;
    }
    let uid = job["metadata"]["uid"].clone();
    let name = job["metadata"]["name"].clone();
    if !job["spec"]["template"].is_object() {
        job["spec"]["template"] = json!({});
    }
    if !job["spec"]["template"]["metadata"].is_object() {
        job["spec"]["template"]["metadata"] = json!({});
    }
    if !job["spec"]["template"]["metadata"]["labels"].is_object() {
        job["spec"]["template"]["metadata"]["labels"] = json!({});
    }
    if let Some(labels) = job["spec"]["template"]["metadata"]["labels"].as_object_mut() {
        for (key, value) in [
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
        ] {
            labels.entry(key).or_insert_with(|| value.clone());
        }
    }
    if job["spec"]["selector"].is_null() {
        job["spec"]["selector"] =
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::registry::by_group_version_resource;

    fn strategy(group: &str, version: &str, plural: &str) -> Strategy {
        Strategy::for_resource(by_group_version_resource(group, version, plural).unwrap())
    }

    #[test]
    fn create_sets_status_and_generation() {
        let mut dep = json!({"metadata": {"name": "d", "generation": 9}, "spec": {}, "status": {"replicas": 3}});
        strategy("apps", "v1", "deployments").prepare_for_create(&mut dep);
        assert_eq!(dep["metadata"]["generation"], 1);
        assert_eq!(dep["status"], json!({}));

        let mut cm = json!({"metadata": {"name": "c", "generation": 4}, "data": {}});
        strategy("", "v1", "configmaps").prepare_for_create(&mut cm);
        assert!(cm["metadata"].get("generation").is_none());

        let mut node = json!({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}});
        strategy("", "v1", "nodes").prepare_for_create(&mut node);
        assert_eq!(node["status"]["capacity"]["cpu"], "2");
    }

    #[test]
    fn pod_qos_classes() {
        let pod = |resources: Value| {
            let mut p = json!({"spec": {"containers": [{"name": "a", "resources": resources}]}});
            strategy("", "v1", "pods").prepare_for_create(&mut p);
            p["status"]["qosClass"].as_str().unwrap().to_string()
        };
        assert_eq!(pod(json!({})), "BestEffort");
        assert_eq!(pod(json!({"requests": {"cpu": "1"}})), "Burstable");
        assert_eq!(
            pod(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}})
            ),
            "Guaranteed"
        );
        assert_eq!(
            pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}})),
            "Guaranteed"
        );
        assert_eq!(pod(json!({"limits": {"cpu": "1"}})), "Burstable");
    }

    #[test]
    fn job_selector_generated_unless_manual() {
        let s = strategy("batch", "v1", "jobs");
        let mut job = json!({"metadata": {"name": "pi", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "pi", "job-name": "mine"}}}}});
        s.prepare_for_create(&mut job);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"app": "pi", "job-name": "mine", "controller-uid": "u1",
                   "batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi"})
        );
        let mut manual = json!({"metadata": {"name": "m", "uid": "u2"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}}}});
        s.prepare_for_create(&mut manual);
        assert_eq!(
            manual["spec"]["selector"],
            json!({"matchLabels": {"a": "b"}})
        );
        assert_eq!(
            manual["spec"]["template"]["metadata"]["labels"],
            json!({"a": "b"})
        );
    }

    #[test]
    fn main_update_keeps_status_and_status_update_keeps_spec() {
        let s = strategy("apps", "v1", "deployments");
        let old = json!({"metadata": {"name": "d", "generation": 1}, "spec": {"replicas": 1}, "status": {"replicas": 1}});

        let mut main =
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 5}, "status": {"replicas": 99}});
        s.prepare_for_update(&mut main, &old, Part::Main);
        assert_eq!(main["status"]["replicas"], 1);
        assert_eq!(main["spec"]["replicas"], 5);
        assert_eq!(main["metadata"]["generation"], 2);

        let mut status = json!({"metadata": {"name": "d", "resourceVersion": "7"}, "spec": {"replicas": 5}, "status": {"replicas": 3}});
        s.prepare_for_update(&mut status, &old, Part::Status);
        assert_eq!(status["spec"]["replicas"], 1);
        assert_eq!(status["status"]["replicas"], 3);
        assert_eq!(status["metadata"]["generation"], 1);
        assert_eq!(status["metadata"]["resourceVersion"], "7");

        let mut same = old.clone();
        s.prepare_for_update(&mut same, &old, Part::Main);
        assert_eq!(same["metadata"]["generation"], 1, "no spec change, no bump");
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let mut secret = json!({"metadata": {"name": "s"}, "data": {"user": "YWRtaW4=", "password": "b2xk"},
            "stringData": {"password": "s3cret"}});
        strategy("", "v1", "secrets").prepare_for_create(&mut secret);
        assert_eq!(
            secret["data"],
            json!({"user": "YWRtaW4=", "password": "czNjcmV0"})
        );
        assert!(secret.get("stringData").is_none());
        let mut cm = json!({"metadata": {"name": "c"}, "stringData": {"a": "b"}});
        strategy("", "v1", "configmaps").prepare_for_create(&mut cm);
        assert!(
            cm.get("stringData").is_some(),
            "only secrets fold stringData"
        );
    }

    #[test]
    fn pod_grace_periods() {
        let s = strategy("", "v1", "pods");
        let unscheduled = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(s.graceful_delete_seconds(&unscheduled), Some(0));
        let running = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 45}, "status": {"phase": "Running"}});
        assert_eq!(s.graceful_delete_seconds(&running), Some(45));
        let done = json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        assert_eq!(s.graceful_delete_seconds(&done), Some(0));
        assert_eq!(
            strategy("", "v1", "configmaps").graceful_delete_seconds(&running),
            None
        );
    }
}
