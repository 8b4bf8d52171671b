//! Upstream's `set`, `rollout` and `autoscale` print objects decoded into Go structs, so their
//! `-o yaml` shows Go's zero values: `creationTimestamp: null`, empty structs (`resources: {}`,
//! `strategy: {}`, `status: {}`), non-omitempty counters as 0, and no zero omitempty ones. This
//! reshapes an object of the common workload kinds the same way (key order is the printer's).

use serde_json::{Map, Value, json};

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// `key: {}` where absent.
fn ensure_struct(map: &mut Map<String, Value>, key: &str) {
    map.entry(key).or_insert_with(|| json!({}));
}

/// Drops `keys` whose value is a zero number or `false` (Go's omitempty).
fn drop_zero(map: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if matches!(map.get(*key), Some(v) if v == &json!(0) || v == &json!(false)) {
            map.remove(*key);
        }
    }
}

/// `key: 0` where absent (a non-omitempty counter).
fn ensure_zero(map: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        map.entry(*key).or_insert(json!(0));
    }
}

fn meta(object: &mut Value) {
    if let Some(map) = obj(object) {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = obj(meta) {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
}

fn pod_spec(spec: &mut Value) {
    let Some(spec) = obj(spec) else { return };
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(c) = obj(c) {
                ensure_struct(c, "resources");
            }
        }
    }
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template") {
        meta(t);
        if let Some(s) = t.get_mut("spec") {
            pod_spec(s);
        }
    }
}

/// Reshapes `object` (of `kind`) as upstream's typed decoding would print it.
pub fn as_typed(kind: &str, object: &mut Value) {
    if !matches!(
        kind,
        "Deployment"
            | "ReplicaSet"
            | "DaemonSet"
            | "StatefulSet"
            | "Pod"
            | "HorizontalPodAutoscaler"
    ) {
        return;
    }
    meta(object);
    let Some(map) = obj(object) else { return };
    ensure_struct(map, "spec");
    ensure_struct(map, "status");
    let (Some(spec), Some(status)) = (map.get("spec").cloned(), map.get("status").cloned()) else {
        return;
    };
    let (mut spec, mut status) = (spec, status);
    let (Some(s), Some(st)) = (obj(&mut spec), obj(&mut status)) else {
        return;
    };
    match kind {
        "Deployment" => {
            drop_zero(s, &["paused", "minReadySeconds"]);
            ensure_struct(s, "strategy");
            template(s);
            drop_zero(
                st,
                &[
                    "observedGeneration",
                    "replicas",
                    "updatedReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "unavailableReplicas",
                ],
            );
        }
        "ReplicaSet" => {
            drop_zero(s, &["minReadySeconds"]);
            template(s);
            ensure_zero(st, &["replicas"]);
            drop_zero(
                st,
                &[
                    "fullyLabeledReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "observedGeneration",
                ],
            );
        }
        "DaemonSet" => {
            ensure_struct(s, "updateStrategy");
            drop_zero(s, &["minReadySeconds"]);
            template(s);
            ensure_zero(
                st,
                &[
                    "currentNumberScheduled",
                    "numberMisscheduled",
                    "desiredNumberScheduled",
                    "numberReady",
                ],
            );
            drop_zero(
                st,
                &[
                    "observedGeneration",
                    "updatedNumberScheduled",
                    "numberAvailable",
                    "numberUnavailable",
                ],
            );
        }
        "StatefulSet" => {
            ensure_struct(s, "updateStrategy");
            drop_zero(s, &["minReadySeconds"]);
            template(s);
            ensure_zero(st, &["replicas", "availableReplicas"]);
            drop_zero(
                st,
                &[
                    "observedGeneration",
                    "readyReplicas",
                    "currentReplicas",
                    "updatedReplicas",
                ],
            );
        }
        "Pod" => pod_spec(&mut spec),
        _ => {
            // HorizontalPodAutoscaler (autoscaling/v2).
            st.entry("currentMetrics").or_insert(Value::Null);
            ensure_zero(st, &["desiredReplicas"]);
            drop_zero(st, &["currentReplicas"]);
        }
    }
    map.insert("spec".into(), spec);
    map.insert("status".into(), status);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_and_autoscalers() {
        let mut d = json!({"metadata": {"name": "w", "creationTimestamp": "t"},
            "spec": {"paused": false, "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"containers": [{"name": "c"}]}}},
            "status": {"replicas": 0, "availableReplicas": 1}});
        as_typed("Deployment", &mut d);
        assert_eq!(
            d,
            json!({"metadata": {"name": "w", "creationTimestamp": "t"},
                "spec": {"strategy": {}, "template": {"metadata": {"labels": {"a": "b"}, "creationTimestamp": null},
                         "spec": {"containers": [{"name": "c", "resources": {}}]}}},
                "status": {"availableReplicas": 1}})
        );
        let mut h = json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3}, "status": {}});
        as_typed("HorizontalPodAutoscaler", &mut h);
        assert_eq!(
            h["status"],
            json!({"currentMetrics": null, "desiredReplicas": 0})
        );
        let mut cm = json!({"data": {}});
        as_typed("ConfigMap", &mut cm);
        assert_eq!(cm, json!({"data": {}}));
    }
}
