//! Expected patches are those upstream's `CreateThreeWayMergePatch` produces for the same
//! inputs (as `kubectl apply -v=8` shows them).

use serde_json::{Value, json};

use super::super::Schema;
use super::create_three_way_merge_patch;

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
}

fn pod_spec(containers: Value) -> Value {
    deployment(json!({"template": {"spec": {"containers": containers}}}))
}

#[test]
fn three_way_patches_like_upstream() {
    let cases: Vec<(&str, Value, Value, Value, Value)> = vec![
        (
            "replicas changed",
            deployment(json!({"replicas": 1})),
            deployment(json!({"replicas": 3})),
            deployment(json!({"replicas": 1, "paused": false})),
            json!({"spec": {"replicas": 3}}),
        ),
        (
            "unchanged config, fields set by others untouched",
            deployment(json!({"replicas": 1})),
            deployment(json!({"replicas": 1})),
            deployment(json!({"replicas": 1, "revisionHistoryLimit": 10})),
            json!({}),
        ),
        (
            "label removed from config",
            json!({"metadata": {"name": "d", "labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"name": "d", "labels": {"a": "1"}}}),
            json!({"metadata": {"name": "d", "labels": {"a": "1", "b": "2", "c": "3"}}}),
            json!({"metadata": {"labels": {"b": null}}}),
        ),
        (
            "env entry removed from a container",
            pod_spec(
                json!([{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            pod_spec(json!([{"name": "c", "env": [{"name": "A", "value": "1"}]}])),
            pod_spec(
                json!([{"name": "c", "image": "x", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "c"}],
                "containers": [{
                    "$setElementOrder/env": [{"name": "A"}],
                    "env": [{"$patch": "delete", "name": "B"}],
                    "name": "c"
                }]
            }}}}),
        ),
        (
            "container added, list merged by name",
            pod_spec(json!([{"name": "a", "image": "x"}])),
            pod_spec(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
            pod_spec(json!([{"name": "a", "image": "x"}])),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b", "image": "y"}]
            }}}}),
        ),
        (
            "container image changed",
            pod_spec(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
            pod_spec(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}])),
            pod_spec(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b", "image": "z"}]
            }}}}),
        ),
        (
            "finalizer removed (a primitive set)",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {
                "$deleteFromPrimitiveList/finalizers": ["b"],
                "$setElementOrder/finalizers": ["a"]
            }}),
        ),
        (
            "finalizer added",
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["a", "b"],
                "finalizers": ["b"]
            }}),
        ),
        (
            "strategy switched to Recreate: $retainKeys",
            deployment(
                json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}),
            ),
            deployment(json!({"strategy": {"type": "Recreate"}})),
            deployment(
                json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}),
            ),
            json!({"spec": {"strategy": {
                "$retainKeys": ["type"],
                "rollingUpdate": null,
                "type": "Recreate"
            }}}),
        ),
        (
            "field dropped from config and never applied before is left alone",
            json!({}),
            deployment(json!({"replicas": 2})),
            deployment(json!({"replicas": 2, "paused": true})),
            json!({}),
        ),
    ];
    for (name, original, modified, current, want) in cases {
        let got = create_three_way_merge_patch(
            &original,
            &modified,
            &current,
            Schema::for_kind("apps", "Deployment"),
            true,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn conflicts_refused_without_overwrite() {
    let original = deployment(json!({"replicas": 1}));
    let modified = deployment(json!({"replicas": 3}));
    let current = deployment(json!({"replicas": 5}));
    let schema = Schema::for_kind("apps", "Deployment");
    assert!(create_three_way_merge_patch(&original, &modified, &current, schema, false).is_err());
    assert!(create_three_way_merge_patch(&original, &modified, &current, schema, true).is_ok());
}

#[test]
fn bad_documents_are_errors() {
    let schema = Schema::for_kind("apps", "Deployment");
    let list = json!([1]);
    assert!(create_three_way_merge_patch(&list, &json!({}), &json!({}), schema, true).is_err());
}
