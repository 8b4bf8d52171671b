//! `fieldValidation`: fields an object's schema does not know are dropped (as upstream's typed
//! decoding drops them) and reported: a 400 under `Strict`, `Warning` headers under `Warn` (the
//! default), nothing under `Ignore`.

use super::query::Query;
use crate::http::status::ApiError;
use crate::openapi::definitions::{Definitions, V3_REF_PREFIX};
use crate::openapi::kinds;
use api_types::registry::ResourceInfo;
use serde_json::{Map, Value};

/// How unknown fields are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The mode a request asks for (upstream's default is Warn).
    pub fn from_query(query: &Query) -> Result<Self, ApiError> {
        match query.get("fieldValidation") {
            None | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }

    /// Prunes `object` and answers as the mode says: the warnings to send, or a 400.
    pub fn check(self, info: &ResourceInfo, object: &mut Value) -> Result<Vec<String>, ApiError> {
        let unknown = prune_unknown_fields(info, object);
        let messages: Vec<String> = unknown
            .iter()
            .map(|path| format!("unknown field {}", crate::http::status::go_quote(path)))
            .collect();
        match self {
            _ if messages.is_empty() => Ok(Vec::new()),
            Self::Ignore => Ok(Vec::new()),
            Self::Warn => Ok(messages),
            Self::Strict => Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                messages.join(", ")
            ))),
        }
    }
}

/// Removes the fields of `object` its kind's schema does not define; returns their paths
/// (`spec.template.spec.containers[0].bogus`). Kinds without a schema are left alone.
pub fn prune_unknown_fields(info: &ResourceInfo, object: &mut Value) -> Vec<String> {
    let defs = crate::openapi::definitions();
    let Some(kind) = kinds::find(&defs.kinds, info.group, info.version, info.kind) else {
        return Vec::new();
    };
    let Some(schema) = defs.schemas.get((kind.name)().as_ref()) else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    walk(defs, schema, object, "", &mut unknown);
    unknown
}

/// Follows `$ref` (also inside the `allOf` wrapper v3 uses for described references).
fn resolve<'a>(defs: &'a Definitions, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        let reference = current
            .get("$ref")
            .or_else(|| current.get("allOf")?.as_array()?.first()?.get("$ref"))
            .and_then(Value::as_str);
        match reference
            .and_then(|r| r.strip_prefix(V3_REF_PREFIX))
            .and_then(|name| defs.schemas.get(name))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(
    defs: &Definitions,
    schema: &Value,
    value: &mut Value,
    path: &str,
    unknown: &mut Vec<String>,
) {
    let schema = resolve(defs, schema);
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                walk_properties(defs, properties, map, path, unknown);
            } else if let Some(items) = schema.get("additionalProperties").filter(|a| a.is_object())
            {
                for (key, item) in map.iter_mut() {
                    walk(defs, items, item, &join(path, key), unknown);
                }
            }
            // An object schema with neither (RawExtension, FieldsV1) holds anything.
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter_mut().enumerate() {
                    walk(
                        defs,
                        item_schema,
                        item,
                        &format!("{path}[{index}]"),
                        unknown,
                    );
                }
            }
        }
        _ => {}
    }
}

fn walk_properties(
    defs: &Definitions,
    properties: &Map<String, Value>,
    map: &mut Map<String, Value>,
    path: &str,
    unknown: &mut Vec<String>,
) {
    let mut remove = Vec::new();
    for (key, item) in map.iter_mut() {
        match properties.get(key) {
            Some(property) => walk(defs, property, item, &join(path, key), unknown),
            None => {
                unknown.push(join(path, key));
                remove.push(key.clone());
            }
        }
    }
    for key in remove {
        map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::registry::by_group_version_resource;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_and_pruned() {
        let info = by_group_version_resource("apps", "v1", "deployments").unwrap();
        let mut deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"any": "label"}, "bogusMeta": 1},
            "spec": {"replicas": 1, "bogusField": true,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                    {"name": "c", "image": "i", "imagePullPolicy": "Always", "bogus": "x",
                     "resources": {"limits": {"cpu": "1"}}}
                ]}}},
        });
        let unknown = prune_unknown_fields(info, &mut deployment);
        assert_eq!(
            unknown,
            [
                "metadata.bogusMeta",
                "spec.bogusField",
                "spec.template.spec.containers[0].bogus"
            ]
        );
        assert!(deployment["spec"].get("bogusField").is_none());
        assert_eq!(
            deployment["metadata"]["labels"]["any"], "label",
            "map keys are not fields"
        );
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1"
        );
        assert!(
            prune_unknown_fields(info, &mut deployment).is_empty(),
            "pruning is complete"
        );
    }

    #[test]
    fn modes() {
        let info = by_group_version_resource("", "v1", "configmaps").unwrap();
        let object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dta": {}});
        let strict = FieldValidation::Strict
            .check(info, &mut object.clone())
            .unwrap_err();
        assert_eq!(strict.code().as_u16(), 400);
        assert_eq!(
            strict.message(),
            "strict decoding error: unknown field \"dta\""
        );
        assert_eq!(
            FieldValidation::Warn
                .check(info, &mut object.clone())
                .unwrap(),
            ["unknown field \"dta\""]
        );
        assert!(
            FieldValidation::Ignore
                .check(info, &mut object.clone())
                .unwrap()
                .is_empty()
        );
        assert!(FieldValidation::from_query(&Query::parse(Some("fieldValidation=Loose"))).is_err());
    }
}
