//! `-o json` of objects upstream holds as Go structs (those `create deployment`, `run`, `expose`,
//! `set`, `autoscale`, `rollout pause`... build or get back): Go's encoding/json writes struct
//! fields in declaration order (`kind` before `apiVersion`), with zero values for fields that
//! lack `omitempty`. Objects upstream holds as maps (`get`, `apply`, `label`, `patch`...) keep
//! the sorted keys of [`super::json`]. The order is data taken from upstream's binary
//! (`order.txt`, see `hack/go-field-order/extract.py`).

mod encode;
mod table;

pub use encode::Ordered;
use encode::encode_struct;
use serde_json::Value;
use std::borrow::Cow;

/// `object` as upstream prints it with `-o json` when it holds it as its Go struct. A kind
/// missing from the table is printed with sorted keys.
pub fn to_go_json(object: &Value) -> String {
    super::json::to_go_json_of(&ordered(object))
}

/// `object` decoded into its Go struct and encoded again, as upstream's yaml, jsonpath and
/// template printers see it: zero values of non-omitempty fields added, empty omitempty ones
/// and unknown fields dropped (keys sorted again).
pub fn as_typed(object: &Value) -> Value {
    serde_json::to_value(ordered(object)).unwrap_or_else(|_| object.clone())
}

/// `value` encoded as Go struct `name` (a key of `order.txt`, e.g. `version.Info`), for
/// documents that carry no kind.
pub fn ordered_as<'a>(name: &str, value: &'a Value) -> Ordered<'a> {
    encode_struct(name, value.as_object())
}

fn ordered(object: &Value) -> Ordered<'_> {
    // A List of typed objects: each item is its own struct.
    if object.get("kind").and_then(Value::as_str) == Some("List")
        && let Some(items) = object.get("items").and_then(Value::as_array)
    {
        return Ordered::Object(vec![
            ("kind", leaf(&object["kind"])),
            ("apiVersion", leaf(&object["apiVersion"])),
            (
                "metadata",
                Ordered::Leaf(Cow::Owned(
                    object.get("metadata").cloned().unwrap_or_default(),
                )),
            ),
            ("items", Ordered::Array(items.iter().map(ordered).collect())),
        ]);
    }
    match struct_name(object) {
        Some(name) if table::fields(&name).is_some() => encode_struct(&name, object.as_object()),
        _ => leaf(object),
    }
}

fn leaf(value: &Value) -> Ordered<'_> {
    Ordered::Leaf(Cow::Borrowed(value))
}

/// `apps/v1.Deployment` for apiVersion `apps/v1`, kind `Deployment`: the Go package of a group
/// is the first label of its name (`rbac.authorization.k8s.io` is `rbac`), `core` for the
/// legacy group.
fn struct_name(object: &Value) -> Option<String> {
    let kind = object.get("kind")?.as_str()?;
    let api_version = object.get("apiVersion")?.as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next()?,
    };
    Some(format!("{package}/{version}.{kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn struct_names() {
        for (api_version, kind, want) in [
            ("v1", "Pod", "core/v1.Pod"),
            ("apps/v1", "Deployment", "apps/v1.Deployment"),
            ("rbac.authorization.k8s.io/v1", "Role", "rbac/v1.Role"),
            ("networking.k8s.io/v1", "Ingress", "networking/v1.Ingress"),
            (
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                "autoscaling/v2.HorizontalPodAutoscaler",
            ),
        ] {
            let object = json!({"apiVersion": api_version, "kind": kind});
            assert_eq!(struct_name(&object).as_deref(), Some(want));
            assert!(table::fields(want).is_some(), "{want}");
        }
    }

    #[test]
    fn configmap_as_upstream_prints_it() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "data": {"b": "2", "a": "1"}, "metadata": {"name": "c", "namespace": "default"}});
        assert_eq!(
            to_go_json(&object),
            "{\n    \"kind\": \"ConfigMap\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {\n        \"name\": \"c\",\n        \"namespace\": \"default\",\n        \"creationTimestamp\": null\n    },\n    \"data\": {\n        \"a\": \"1\",\n        \"b\": \"2\"\n    }\n}\n"
        );
    }

    #[test]
    fn unknown_kinds_keep_sorted_keys() {
        let object = json!({"kind": "Widget", "apiVersion": "example.com/v1", "b": 1, "a": 2});
        assert_eq!(to_go_json(&object), super::super::json::to_go_json(&object));
    }
}
