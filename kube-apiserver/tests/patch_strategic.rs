//! Strategic merge patch: upstream's semantics on built-in types, case by case.

use kube_apiserver::patch::{PatchError, PatchTarget, PatchType, SmpError, apply_patch};
use serde_json::{Value, json};

fn smp(group: &str, kind: &str, original: &Value, patch: &Value) -> Result<Value, PatchError> {
    apply_patch(
        PatchType::StrategicMerge,
        original,
        patch.to_string().as_bytes(),
        PatchTarget::BuiltIn { group, kind },
    )
}

fn pod_smp(original: &Value, patch: &Value) -> Value {
    smp("", "Pod", original, patch).unwrap_or_else(|e| panic!("{patch}: {e}"))
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

/// (name, original spec, patch spec, expected spec) on a Pod.
fn spec_cases() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        (
            "containers merge by name, new ones are appended",
            json!({"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}),
            json!({"containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}]}),
            json!({"containers": [
                {"name": "a", "image": "a:1"},
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"}
            ]}),
        ),
        (
            "ports merge by containerPort, env by name",
            json!({"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}),
            json!({"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
                "env": [{"name": "Y", "value": "3"}]}]}),
            json!({"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}],
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]}]}),
        ),
        (
            "volumeMounts merge by mountPath",
            json!({"containers": [{"name": "a", "volumeMounts": [
                {"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b"}]}]}),
            json!({"containers": [{"name": "a", "volumeMounts": [
                {"name": "v3", "mountPath": "/a", "readOnly": true}]}]}),
            json!({"containers": [{"name": "a", "volumeMounts": [
                {"name": "v3", "mountPath": "/a", "readOnly": true}, {"name": "v2", "mountPath": "/b"}]}]}),
        ),
        (
            "tolerations have no strategy: replaced",
            json!({"tolerations": [{"key": "a", "operator": "Exists"}]}),
            json!({"tolerations": [{"key": "b", "operator": "Exists"}]}),
            json!({"tolerations": [{"key": "b", "operator": "Exists"}]}),
        ),
        (
            "container args have no strategy: replaced",
            json!({"containers": [{"name": "a", "args": ["1", "2"]}]}),
            json!({"containers": [{"name": "a", "args": ["3"]}]}),
            json!({"containers": [{"name": "a", "args": ["3"]}]}),
        ),
        (
            "$patch: delete removes the element with that key",
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
            json!({"containers": [{"name": "a", "$patch": "delete"}]}),
            json!({"containers": [{"name": "b"}]}),
        ),
        (
            "$patch: replace in a list replaces the whole list",
            json!({"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}),
            json!({"containers": [{"$patch": "replace"}, {"name": "c", "image": "y"}]}),
            json!({"containers": [{"name": "c", "image": "y"}]}),
        ),
        (
            "$patch: replace in a map replaces the map",
            json!({"nodeSelector": {"a": "1", "b": "2"}}),
            json!({"nodeSelector": {"$patch": "replace", "c": "3"}}),
            json!({"nodeSelector": {"c": "3"}}),
        ),
        (
            "$patch: delete in a map empties it",
            json!({"securityContext": {"runAsUser": 1000}}),
            json!({"securityContext": {"$patch": "delete"}}),
            json!({"securityContext": {}}),
        ),
        (
            "null deletes a field, maps merge",
            json!({"nodeSelector": {"a": "1", "b": "2"}, "hostNetwork": true}),
            json!({"nodeSelector": {"a": null, "c": "3"}, "hostNetwork": null}),
            json!({"nodeSelector": {"b": "2", "c": "3"}}),
        ),
        (
            "null for a missing field is a no-op, nested nulls in new values are dropped",
            json!({}),
            json!({"dnsPolicy": null, "securityContext": {"runAsUser": 1, "fsGroup": null}}),
            json!({"securityContext": {"runAsUser": 1}}),
        ),
        (
            "$retainKeys clears the keys it does not name",
            json!({"volumes": [{"name": "v", "emptyDir": {}}]}),
            json!({"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"],
                "configMap": {"name": "cm"}, "emptyDir": null}]}),
            json!({"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}),
        ),
        (
            // Upstream's interleaving: `s` (server position 1) goes before `b` (position 2).
            "$setElementOrder orders the merged list, server-only items keep their place",
            json!({"containers": [{"name": "a"}, {"name": "s"}, {"name": "b"}]}),
            json!({"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "b", "image": "b:2"}]}),
            json!({"containers": [{"name": "s"}, {"name": "b", "image": "b:2"}, {"name": "a"}]}),
        ),
        (
            "$setElementOrder adds new items where the order says",
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
            json!({"$setElementOrder/containers": [{"name": "a"}, {"name": "n"}, {"name": "b"}],
                "containers": [{"name": "n", "image": "n:1"}]}),
            json!({"containers": [{"name": "a"}, {"name": "n", "image": "n:1"}, {"name": "b"}]}),
        ),
        (
            // Without $setElementOrder, upstream puts items the server lacks before the ones
            // only the server has.
            "imagePullSecrets merge by name, new ones first",
            json!({"imagePullSecrets": [{"name": "a"}]}),
            json!({"imagePullSecrets": [{"name": "b"}]}),
            json!({"imagePullSecrets": [{"name": "b"}, {"name": "a"}]}),
        ),
        (
            "initContainers and ephemeralContainers merge by name",
            json!({"initContainers": [{"name": "i", "image": "1"}],
                "ephemeralContainers": [{"name": "e", "image": "1"}]}),
            json!({"initContainers": [{"name": "i", "image": "2"}],
                "ephemeralContainers": [{"name": "f", "image": "1"}]}),
            json!({"initContainers": [{"name": "i", "image": "2"}],
                "ephemeralContainers": [{"name": "f", "image": "1"}, {"name": "e", "image": "1"}]}),
        ),
        (
            "new merged list on a missing field drops delete directives",
            json!({}),
            json!({"containers": [{"name": "a"}, {"name": "b", "$patch": "delete"}]}),
            json!({"containers": [{"name": "a"}]}),
        ),
    ]
}

#[test]
fn pod_spec_cases() {
    for (name, original, patch, expected) in spec_cases() {
        let out = pod_smp(&pod(original), &json!({"spec": patch}));
        assert_eq!(out["spec"], expected, "{name}");
        assert_eq!(
            out["metadata"],
            json!({"name": "p"}),
            "{name}: metadata untouched"
        );
    }
}

#[test]
fn finalizers_are_a_set_and_delete_from_primitive_list_removes() {
    let original = json!({"metadata": {"name": "p", "finalizers": ["a", "b"]}});
    let cases = vec![
        (
            "union without duplicates",
            json!({"metadata": {"finalizers": ["b", "c"]}}),
            json!(["a", "b", "c"]),
        ),
        (
            "deleteFromPrimitiveList",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            json!(["b"]),
        ),
        (
            "setElementOrder on primitives",
            json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
            json!(["c", "b", "a"]),
        ),
        (
            "null deletes the list",
            json!({"metadata": {"finalizers": null}}),
            Value::Null,
        ),
    ];
    for (name, patch, expected) in cases {
        let out = pod_smp(&original, &patch);
        assert_eq!(out["metadata"]["finalizers"], expected, "{name}");
    }
}

#[test]
fn owner_references_merge_by_uid_and_labels_merge() {
    let original = json!({"metadata": {"name": "p", "labels": {"a": "1"},
        "ownerReferences": [{"uid": "u1", "name": "rs1", "kind": "ReplicaSet"}]}});
    let patch = json!({"metadata": {"labels": {"b": "2"},
        "ownerReferences": [{"uid": "u1", "controller": true}, {"uid": "u2", "name": "x", "kind": "Job"}]}});
    let out = pod_smp(&original, &patch);
    assert_eq!(out["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([
            {"uid": "u1", "name": "rs1", "kind": "ReplicaSet", "controller": true},
            {"uid": "u2", "name": "x", "kind": "Job"}
        ])
    );
}

#[test]
fn status_conditions_merge_by_type_across_kinds() {
    let kinds = [
        ("", "Pod"),
        ("", "Node"),
        ("", "Namespace"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("", "ReplicationController"),
        ("", "PersistentVolumeClaim"),
        ("", "Service"),
    ];
    let original = json!({"status": {"conditions": [
        {"type": "Ready", "status": "False"}, {"type": "Other", "status": "True"}]}});
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    for (group, kind) in kinds {
        let out = smp(group, kind, &original, &patch).expect(kind);
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "Other", "status": "True"}]),
            "{kind}"
        );
    }
    // A kind whose status has no tagged conditions replaces the list.
    let out = smp("", "ConfigMap", &original, &patch).expect("configmap");
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}])
    );
}

#[test]
fn pod_templates_of_every_workload_merge_containers_by_name() {
    let template = |image: &str| {
        json!({"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "a", "image": image}, {"name": "b", "image": "b"}]}})
    };
    let patch_template = json!({"spec": {"containers": [{"name": "a", "image": "new"}]}});
    let cases: Vec<(&str, &str, Value, Value, &[&str])> = vec![
        (
            "apps",
            "Deployment",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "apps",
            "ReplicaSet",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "apps",
            "StatefulSet",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "apps",
            "DaemonSet",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "batch",
            "Job",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "",
            "ReplicationController",
            json!({"spec": {"template": template("old")}}),
            json!({"spec": {"template": patch_template}}),
            &["spec", "template"],
        ),
        (
            "",
            "PodTemplate",
            json!({"template": template("old")}),
            json!({"template": patch_template}),
            &["template"],
        ),
        (
            "batch",
            "CronJob",
            json!({"spec": {"jobTemplate": {"spec": {"template": template("old")}}}}),
            json!({"spec": {"jobTemplate": {"spec": {"template": patch_template}}}}),
            &["spec", "jobTemplate", "spec", "template"],
        ),
    ];
    for (group, kind, original, patch, path) in cases {
        let out = smp(group, kind, &original, &patch).expect(kind);
        let got = path.iter().fold(&out, |v, k| &v[*k]);
        assert_eq!(got, &template("new"), "{kind}");
    }
}

#[test]
fn service_ports_merge_by_port_and_node_lists() {
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let out = smp(
        "",
        "Service",
        &svc,
        &json!({"spec": {"ports": [{"port": 80, "name": "http"}]}}),
    )
    .expect("service");
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 8080, "name": "http"}, {"port": 443}])
    );

    let node = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "a", "effect": "NoSchedule"}]},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.1.1.1"}]}});
    let patch = json!({"spec": {"podCIDRs": ["fd00::/64"], "taints": [{"key": "b", "effect": "NoSchedule"}]},
        "status": {"addresses": [{"type": "Hostname", "address": "n1"}]}});
    let out = smp("", "Node", &node, &patch).expect("node");
    assert_eq!(out["spec"]["podCIDRs"], json!(["fd00::/64", "10.0.0.0/24"]));
    assert_eq!(
        out["spec"]["taints"],
        json!([{"key": "b", "effect": "NoSchedule"}])
    );
    assert_eq!(
        out["status"]["addresses"],
        json!([{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.1.1.1"}])
    );
}

#[test]
fn unknown_built_in_kinds_still_merge_metadata() {
    let original = json!({"metadata": {"finalizers": ["a"]}, "rules": [{"verbs": ["get"]}]});
    let patch = json!({"metadata": {"finalizers": ["b"]}, "rules": [{"verbs": ["list"]}]});
    let out = smp("rbac.authorization.k8s.io", "Role", &original, &patch).expect("role");
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    assert_eq!(out["rules"], json!([{"verbs": ["list"]}]));
}

#[test]
fn custom_resources_refuse_strategic_merge_with_415() {
    let err = apply_patch(
        PatchType::StrategicMerge,
        &json!({"spec": {}}),
        b"{}",
        PatchTarget::Custom,
    )
    .expect_err("custom resource");
    assert_eq!(err, PatchError::StrategicMergeNotSupported);
    assert_eq!(err.status_code(), 415);
    assert_eq!(
        err.to_string(),
        "strategic merge patch is not supported for custom resources"
    );
}

#[test]
fn malformed_strategic_patches_are_rejected_with_upstreams_codes() {
    let original =
        pod(json!({"containers": [{"name": "a"}], "volumes": [{"name": "v", "emptyDir": {}}]}));
    let cases: Vec<(&str, Value, PatchError)> = vec![
        (
            "patch is not an object",
            json!(["x"]),
            SmpError::BadJsonDoc.into(),
        ),
        (
            "retainKeys not a list",
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": "name"}]}}),
            SmpError::BadRetainKeys.into(),
        ),
        (
            "patch sets a key retainKeys drops",
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/x"}}]}}),
            SmpError::NotMatchingRetainKeys.into(),
        ),
        (
            "deleteFromPrimitiveList not a list",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            SmpError::BadPrimitiveList.into(),
        ),
        (
            "setElementOrder not a list",
            json!({"spec": {"$setElementOrder/containers": {"name": "a"}}}),
            SmpError::BadSetElementOrder.into(),
        ),
        (
            "list of lists",
            json!({"metadata": {"finalizers": [["a"]]}}),
            SmpError::ListOfLists.into(),
        ),
        (
            "missing merge key",
            json!({"spec": {"containers": [{"image": "x"}]}}),
            SmpError::Other(
                "map: {\"image\":\"x\"} does not contain declared merge key: name".into(),
            )
            .into(),
        ),
        (
            "merge directive in a list",
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            SmpError::Other("merging lists cannot yet be specified in the patch".into()).into(),
        ),
    ];
    for (name, patch, expected) in cases {
        let err = smp("", "Pod", &original, &patch).expect_err(name);
        assert_eq!(err, expected, "{name}");
    }
    let codes = [
        (SmpError::BadJsonDoc, 400),
        (SmpError::BadRetainKeys, 400),
        (SmpError::ListOfLists, 422),
        (SmpError::NotMatchingRetainKeys, 422),
    ];
    for (err, code) in codes {
        assert_eq!(PatchError::from(err).status_code(), code);
    }
    let garbage = apply_patch(
        PatchType::StrategicMerge,
        &original,
        b"{nope",
        PatchTarget::BuiltIn {
            group: "",
            kind: "Pod",
        },
    )
    .expect_err("garbage");
    assert_eq!(garbage.status_code(), 400);
}
