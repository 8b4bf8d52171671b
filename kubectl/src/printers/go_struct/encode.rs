//! A JSON object as Go's encoding/json writes it after decoding it into its API struct: fields
//! in declaration order, unknown fields dropped, and the zero values of fields without
//! `omitempty` filled in (`"creationTimestamp": null`, `"status": {}`, `"resources": {}`).

use super::table::{self, Ty};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A JSON value whose objects keep the order they were built in.
#[derive(Debug, PartialEq)]
pub enum Ordered<'a> {
    Leaf(Cow<'a, Value>),
    Object(Vec<(&'a str, Ordered<'a>)>),
    Array(Vec<Ordered<'a>>),
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Leaf(value) => value.serialize(s),
            Ordered::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Ordered::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

fn owned<'a>(value: Value) -> Ordered<'a> {
    Ordered::Leaf(Cow::Owned(value))
}

/// Struct `name` holding `object` (absent or null: the zero struct).
pub fn encode_struct<'a>(name: &str, object: Option<&'a Map<String, Value>>) -> Ordered<'a> {
    let mut out = Vec::new();
    push_fields(name, object, &mut out);
    Ordered::Object(out)
}

fn push_fields<'a>(
    name: &str,
    object: Option<&'a Map<String, Value>>,
    out: &mut Vec<(&'a str, Ordered<'a>)>,
) {
    let Some(fields) = table::fields(name) else {
        // Not in the table: keep what there is, sorted as the map already is.
        out.extend(
            object
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), leaf(v))),
        );
        return;
    };
    for field in fields {
        match (&field.ty, field.embedded) {
            (Ty::Struct(inner), true) => push_fields(inner, object, out),
            _ => {
                let value = object.and_then(|o| o.get_key_value(field.name));
                let key = value.map_or(field.name, |(k, _)| k.as_str());
                if let Some(encoded) =
                    encode_field(&field.ty, value.map(|(_, v)| v), field.omitempty)
                {
                    out.push((key, encoded));
                }
            }
        }
    }
}

fn leaf(value: &Value) -> Ordered<'_> {
    Ordered::Leaf(Cow::Borrowed(value))
}

/// A field's output, `None` when omitempty drops it. JSON null decodes to Go's zero value.
fn encode_field<'a>(ty: &Ty, value: Option<&'a Value>, omitempty: bool) -> Option<Ordered<'a>> {
    let value = value.filter(|v| !v.is_null());
    let empty = match (ty, value) {
        (_, None) => true,
        (Ty::String | Ty::Bytes, Some(Value::String(s))) => s.is_empty(),
        (Ty::Int | Ty::Float, Some(Value::Number(n))) => n.as_f64() == Some(0.0),
        (Ty::Bool, Some(Value::Bool(b))) => !b,
        (Ty::List(_), Some(Value::Array(a))) => a.is_empty(),
        (Ty::Map(_), Some(Value::Object(m))) => m.is_empty(),
        _ => false,
    };
    // omitempty never drops a struct (Go has no empty struct to test).
    let is_struct = matches!(ty, Ty::Struct(_) | Ty::Marshaller(_));
    if empty && omitempty && !is_struct {
        return None;
    }
    Some(match value {
        Some(value) => encode_value(ty, value),
        None => zero(ty),
    })
}

/// A present value of type `ty`.
fn encode_value<'a>(ty: &Ty, value: &'a Value) -> Ordered<'a> {
    match (ty, value) {
        (Ty::Ptr(inner), _) => encode_value(inner, value),
        (Ty::Struct(name), Value::Object(object)) => encode_struct(name, Some(object)),
        (Ty::Struct(name), Value::Null) => encode_struct(name, None),
        (Ty::List(inner), Value::Array(items)) => {
            Ordered::Array(items.iter().map(|item| encode_value(inner, item)).collect())
        }
        (Ty::Map(inner), Value::Object(map)) => Ordered::Object(
            map.iter()
                .map(|(k, v)| (k.as_str(), encode_value(inner, v)))
                .collect(),
        ),
        _ => leaf(value),
    }
}

/// The zero value of `ty` as Go writes it.
fn zero<'a>(ty: &Ty) -> Ordered<'a> {
    match ty {
        Ty::String | Ty::Bytes => owned(Value::String(String::new())),
        Ty::Int | Ty::Float => owned(Value::from(0)),
        Ty::Bool => owned(Value::Bool(false)),
        Ty::Struct(name) => encode_struct(name, None),
        Ty::Marshaller(name) => owned(match *name {
            "meta/v1.Duration" => Value::from("0s"),
            "resource.Quantity" => Value::from("0"),
            "intstr.IntOrString" => Value::from(0),
            // Time, MicroTime, FieldsV1, RawExtension: null.
            _ => Value::Null,
        }),
        Ty::Any | Ty::Ptr(_) | Ty::List(_) | Ty::Map(_) => owned(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(ordered: &Ordered) -> Vec<String> {
        match ordered {
            Ordered::Object(fields) => fields.iter().map(|(k, _)| k.to_string()).collect(),
            _ => vec![],
        }
    }

    #[test]
    fn deployment_keys_in_go_order_with_zero_values() {
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "labels": {"app": "x"}},
            "spec": {"template": {"spec": {"containers": [{"image": "nginx", "name": "nginx"}]}},
                     "replicas": 1, "selector": {"matchLabels": {"app": "x"}}},
            "unknown": 1,
        });
        let ordered = encode_struct("apps/v1.Deployment", object.as_object());
        assert_eq!(
            keys(&ordered),
            ["kind", "apiVersion", "metadata", "spec", "status"]
        );
        let text = serde_json::to_string(&ordered).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"kind":"Deployment","apiVersion":"apps/v1","#,
                r#""metadata":{"name":"x","creationTimestamp":null,"labels":{"app":"x"}},"#,
                r#""spec":{"replicas":1,"selector":{"matchLabels":{"app":"x"}},"#,
                r#""template":{"metadata":{"creationTimestamp":null},"spec":{"containers":"#,
                r#"[{"name":"nginx","image":"nginx","resources":{}}]}},"strategy":{}},"#,
                r#""status":{}}"#
            )
        );
    }

    #[test]
    fn omitempty_pointers_slices_and_scalars() {
        // A set pointer stays even when it points at a zero; nil and empty collections go.
        let object =
            json!({"spec": {"replicas": 0, "paused": false, "revisionHistoryLimit": null}});
        let ordered = encode_struct("apps/v1.Deployment", object.as_object());
        let text = serde_json::to_string(&ordered).unwrap();
        assert!(
            text.contains(r#""spec":{"replicas":0,"selector":null,"template""#),
            "{text}"
        );
        // A non-omitempty slice: nil is null, empty is [].
        let role = json!({"rules": []});
        let text = serde_json::to_string(&encode_struct("rbac/v1.Role", role.as_object())).unwrap();
        assert!(text.ends_with(r#""rules":[]}"#), "{text}");
        let text = serde_json::to_string(&encode_struct("rbac/v1.Role", None)).unwrap();
        assert!(text.ends_with(r#""rules":null}"#), "{text}");
    }
}
