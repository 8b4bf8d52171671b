//! `x-kubernetes-embedded-resource` values: `apiVersion` and `kind` are required and their
//! `metadata` is ObjectMeta (upstream's `schema/objectmeta/validation.go`).

use super::node::Node;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use api_types::validation::names::is_dns1035_label;
use api_types::validation::{
    BadValue, FieldError, FieldPath, name_is_path_segment, validate_object_meta,
};
use serde_json::{Map, Value};

/// Checks every embedded resource inside `object` (the resource root itself is checked by the
/// generic object-meta validation).
pub(crate) fn validate(path: &FieldPath, s: &Node, object: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk_object(path, s, object, &mut errs);
    errs
}

fn walk(path: &FieldPath, s: &Node, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            if s.embedded {
                embedded_resource(path, map, errs);
            }
            walk_object(path, s, map, errs);
        }
        Value::Array(list) => {
            if let Some(items) = &s.items {
                for (i, v) in list.iter().enumerate() {
                    walk(&path.index(i), items, v, errs);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(path: &FieldPath, s: &Node, map: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    for (k, v) in map {
        if let Some(prop) = s.properties.get(k) {
            walk(&path.child(k.as_str()), prop, v, errs);
        } else if let Some(a) = s.additional_schema() {
            walk(&path.key(k.as_str()), a, v, errs);
        }
    }
}

fn embedded_resource(path: &FieldPath, x: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    for key in ["apiVersion", "kind"] {
        if !x.contains_key(key) {
            errs.push(FieldError::required(&path.child(key), "must not be empty"));
        }
    }
    for (k, v) in x {
        let at = path.child(k.as_str());
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &at,
                    BadValue::from(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(&at, "", "must not be empty")),
                Some(gv) if gv.matches('/').count() > 1 => errs.push(FieldError::invalid(
                    &at,
                    gv,
                    format!("unexpected GroupVersion string: {gv}"),
                )),
                Some(_) => {}
            },
            "kind" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &at,
                    BadValue::from(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(&at, "", "must not be empty")),
                Some(kind) => {
                    let problems = is_dns1035_label(&kind.to_lowercase());
                    if !problems.is_empty() {
                        errs.push(FieldError::invalid(
                            &at,
                            kind,
                            format!(
                                "may have mixed case, but should otherwise match: {}",
                                problems.join(",")
                            ),
                        ));
                    }
                }
            },
            "metadata" => match serde_json::from_value::<ObjectMeta>(v.clone()) {
                Err(err) => errs.push(FieldError::invalid(&at, BadValue::from(v), err.to_string())),
                Ok(mut meta) => {
                    if meta.name.as_deref().unwrap_or_default().is_empty() {
                        // Upstream fills a name so an absent one is not an error.
                        meta.name = Some("fakename".into());
                    }
                    let namespaced = meta.namespace.as_deref().is_some_and(|n| !n.is_empty());
                    errs.extend(validate_object_meta(
                        &meta,
                        namespaced,
                        name_is_path_segment,
                        &at,
                    ));
                }
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use api_types::validation::ErrorList;
    use serde_json::json;

    #[test]
    fn embedded_resources_need_type_meta_and_valid_metadata() {
        let schema = json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}});
        let mut errs = ErrorList::new();
        let node = parse(&schema, &FieldPath::root(), &mut errs);
        let data = json!({"template": {"kind": "bad_kind", "metadata": {"labels": {"a b": "c"}}}});
        let text = ErrorList::from(validate(
            &FieldPath::root(),
            &node,
            data.as_object().unwrap(),
        ))
        .to_string();
        for want in [
            "template.apiVersion: Required value: must not be empty",
            "template.kind: Invalid value: \"bad_kind\": may have mixed case, but should otherwise match:",
            "template.metadata.labels: Invalid value: \"a b\"",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
        let ok =
            json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}});
        assert!(validate(&FieldPath::root(), &node, ok.as_object().unwrap()).is_empty());
    }
}
