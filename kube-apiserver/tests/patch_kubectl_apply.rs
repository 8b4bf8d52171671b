//! Strategic merge patches of the shape client-side `kubectl apply` (1.33) sends: computed from
//! the `kubectl.kubernetes.io/last-applied-configuration` annotation, with `$setElementOrder`,
//! `$retainKeys` and `$patch: delete` directives.

use kube_apiserver::patch::{PatchTarget, PatchType, apply_patch};
use serde_json::{Value, json};

const DEPLOYMENT: PatchTarget<'static> = PatchTarget::BuiltIn {
    group: "apps",
    kind: "Deployment",
};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A live Deployment as the server stores it: defaults filled in, an env var injected by a
/// webhook (`INJECTED`, not in last-applied), status set.
fn live() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "1", "resourceVersion": "10",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {LAST_APPLIED: "{\"old\":true}\n", "deployment.kubernetes.io/revision": "1"}
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePath": "/dev/termination-log",
                            "env": [
                                {"name": "A", "value": "1"},
                                {"name": "INJECTED", "value": "x"},
                                {"name": "B", "value": "2"}
                            ],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}]
                        },
                        {"name": "sidecar", "image": "busybox", "imagePullPolicy": "Always"}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst"
                }
            }
        },
        "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    })
}

fn apply(live: &Value, patch: &Value) -> Value {
    apply_patch(
        PatchType::StrategicMerge,
        live,
        patch.to_string().as_bytes(),
        DEPLOYMENT,
    )
    .unwrap_or_else(|e| panic!("{patch}: {e}"))
}

#[test]
fn image_change_and_env_removal() {
    // kubectl apply after editing the manifest: image nginx:1.25 -> nginx:1.26, env B removed.
    let patch = json!({
        "metadata": {"annotations": {LAST_APPLIED: "{\"new\":true}\n"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
            "containers": [{
                "$setElementOrder/env": [{"name": "A"}],
                "env": [{"$patch": "delete", "name": "B"}],
                "image": "nginx:1.26",
                "name": "web"
            }]
        }}}
    });
    let out = apply(&live(), &patch);

    let mut expected = live();
    expected["metadata"]["annotations"][LAST_APPLIED] = json!("{\"new\":true}\n");
    let web = &mut expected["spec"]["template"]["spec"]["containers"][0];
    web["image"] = json!("nginx:1.26");
    // The injected var is server-only: kept, and placed where the server had it.
    web["env"] = json!([{"name": "A", "value": "1"}, {"name": "INJECTED", "value": "x"}]);
    assert_eq!(out, expected);
}

#[test]
fn container_removal_and_label_removal() {
    let patch = json!({
        "metadata": {"labels": {"tier": null}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}],
            "containers": [{"$patch": "delete", "name": "sidecar"}]
        }}}
    });
    let out = apply(&live(), &patch);
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["web"]);
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0],
        live()["spec"]["template"]["spec"]["containers"][0]
    );
}

#[test]
fn new_container_placed_by_set_element_order() {
    // The manifest gains a container `metrics`, listed between the two existing ones.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "metrics"}, {"name": "sidecar"}],
        "containers": [{"name": "metrics", "image": "prom/exporter:1",
            "ports": [{"containerPort": 9100}]}]
    }}}});
    let out = apply(&live(), &patch);
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["web", "metrics", "sidecar"]);
}

#[test]
fn strategy_switch_uses_retain_keys() {
    // RollingUpdate -> Recreate: kubectl sends $retainKeys for the retainKeys-tagged strategy.
    let patch = json!({"spec": {"strategy": {
        "$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"
    }}});
    let out = apply(&live(), &patch);
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn volume_source_switch_uses_retain_keys() {
    // emptyDir -> configMap on the `merge,retainKeys` volumes list.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/volumes": [{"name": "data"}],
        "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"},
            "emptyDir": null, "name": "data"}]
    }}}});
    let out = apply(&live(), &patch);
    assert_eq!(
        out["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "data", "configMap": {"name": "cfg"}}])
    );
}

#[test]
fn port_and_env_added_with_order() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
        "containers": [{
            "$setElementOrder/env": [{"name": "Z"}, {"name": "A"}, {"name": "B"}],
            "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}],
            "env": [{"name": "Z", "value": "0"}],
            "ports": [{"containerPort": 443}],
            "name": "web"
        }]
    }}}});
    let out = apply(&live(), &patch);
    let web = &out["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        web["env"],
        json!([
            {"name": "Z", "value": "0"},
            {"name": "A", "value": "1"},
            {"name": "INJECTED", "value": "x"},
            {"name": "B", "value": "2"}
        ])
    );
    assert_eq!(
        web["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}])
    );
}
