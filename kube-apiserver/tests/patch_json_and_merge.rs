//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386) through `apply_patch`.

use kube_apiserver::patch::{PatchError, PatchTarget, PatchType, apply_patch};
use serde_json::{Value, json};

const POD: PatchTarget<'static> = PatchTarget::BuiltIn {
    group: "",
    kind: "Pod",
};

fn json_patch(original: &Value, ops: &Value) -> Result<Value, PatchError> {
    apply_patch(PatchType::Json, original, ops.to_string().as_bytes(), POD)
}

fn merge_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    apply_patch(
        PatchType::Merge,
        original,
        patch.to_string().as_bytes(),
        POD,
    )
}

fn pod() -> Value {
    json!({
        "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    })
}

#[test]
fn json_patch_operations_apply_in_order() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "add a label",
            json!([{"op": "add", "path": "/metadata/labels/tier", "value": "front"}]),
            json!({"app": "web", "tier": "front"}),
        ),
        (
            "replace then test",
            json!([
                {"op": "replace", "path": "/metadata/labels/app", "value": "db"},
                {"op": "test", "path": "/metadata/labels/app", "value": "db"}
            ]),
            json!({"app": "db"}),
        ),
        (
            "remove",
            json!([{"op": "remove", "path": "/metadata/labels/app"}]),
            json!({}),
        ),
        (
            "copy and move",
            json!([
                {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/a2"},
                {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/a3"}
            ]),
            json!({"a2": "web", "a3": "web"}),
        ),
        (
            "escaped key",
            json!([{"op": "add", "path": "/metadata/labels/example.com~1role", "value": "x"}]),
            json!({"app": "web", "example.com/role": "x"}),
        ),
    ];
    for (name, ops, labels) in cases {
        let out = json_patch(&pod(), &ops).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out["metadata"]["labels"], labels, "{name}");
        assert_eq!(out["spec"], pod()["spec"], "{name}: spec untouched");
    }
}

#[test]
fn json_patch_failures_use_upstream_messages_and_422() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "test op fails",
            json!([{"op": "test", "path": "/metadata/labels/app", "value": "db"}]),
            "testing value /metadata/labels/app failed: test failed",
        ),
        (
            "remove a missing key",
            json!([{"op": "remove", "path": "/metadata/labels/nope"}]),
            "Unable to remove nonexistent key: nope: missing value",
        ),
        (
            "remove under a missing parent",
            json!([{"op": "remove", "path": "/metadata/annotations/a"}]),
            "remove operation does not apply: doc is missing path: \"/metadata/annotations/a\": missing value",
        ),
        (
            "add under a missing parent",
            json!([{"op": "add", "path": "/status/phase/x", "value": 1}]),
            "add operation does not apply: doc is missing path: \"/status/phase/x\": missing value",
        ),
        (
            "replace a missing key",
            json!([{"op": "replace", "path": "/metadata/namespace", "value": "x"}]),
            "replace operation does not apply: doc is missing key: /metadata/namespace: missing value",
        ),
        (
            "index out of range",
            json!([{"op": "remove", "path": "/spec/containers/3"}]),
            "Unable to access invalid index: 3: invalid index referenced",
        ),
        (
            "move from a missing path",
            json!([{"op": "move", "from": "/metadata/x", "path": "/metadata/y"}]),
            "move operation does not apply: doc is missing from path: /metadata/x: missing value",
        ),
    ];
    for (name, ops, message) in cases {
        let err = json_patch(&pod(), &ops).expect_err(name);
        assert_eq!(
            err,
            PatchError::JsonPatchFailed(message.to_string()),
            "{name}"
        );
        assert_eq!(err.status_code(), 422, "{name}");
    }
}

#[test]
fn json_patch_failure_after_a_success_changes_nothing() {
    let original = pod();
    let ops = json!([
        {"op": "add", "path": "/metadata/labels/x", "value": "1"},
        {"op": "test", "path": "/metadata/name", "value": "other"}
    ]);
    assert!(json_patch(&original, &ops).is_err());
    assert_eq!(original, pod());
}

#[test]
fn json_patch_operation_limit_is_upstreams() {
    let op = json!({"op": "test", "path": "/metadata/name", "value": "p"});
    let at_limit = Value::Array(vec![op.clone(); 10_000]);
    assert!(json_patch(&pod(), &at_limit).is_ok());
    let over = Value::Array(vec![op; 10_001]);
    let err = json_patch(&pod(), &over).expect_err("over the limit");
    assert_eq!(
        err.to_string(),
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    assert_eq!(err.status_code(), 413);
}

#[test]
fn malformed_json_patches_are_bad_requests() {
    for body in [
        &b"not json"[..],
        br#"{"op": "add"}"#,
        br#"[{"op": "frobnicate", "path": "/a"}]"#,
        br#"[{"op": "add", "value": 1}]"#,
    ] {
        let err = apply_patch(PatchType::Json, &pod(), body, POD).expect_err("malformed");
        assert!(matches!(err, PatchError::BadRequest(_)), "{err:?}");
        assert_eq!(err.status_code(), 400);
    }
}

/// The examples of RFC 7386, appendix A.
#[test]
fn merge_patch_rfc7386_examples() {
    let cases = vec![
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (json!({"a": "foo"}), json!(null), json!(null)),
        (json!({"a": "foo"}), json!("bar"), json!("bar")),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (original, patch, expected) in cases {
        let out = merge_patch(&original, &patch).expect("merge patch");
        assert_eq!(out, expected, "{original} + {patch}");
    }
}

#[test]
fn merge_patch_replaces_lists_even_with_a_merge_strategy() {
    let out = merge_patch(
        &pod(),
        &json!({"spec": {"containers": [{"name": "d", "image": "redis"}]}}),
    )
    .expect("merge patch");
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "d", "image": "redis"}])
    );
}

#[test]
fn patch_types_come_from_content_types() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        (
            "application/strategic-merge-patch+json",
            Some(PatchType::StrategicMerge),
        ),
        ("application/apply-patch+yaml", None),
        ("application/json", None),
    ];
    for (content_type, expected) in cases {
        assert_eq!(
            PatchType::from_content_type(content_type),
            expected,
            "{content_type}"
        );
    }
}
