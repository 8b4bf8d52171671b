//! `fieldValidation`: fields an object's schema does not know are dropped (as upstream's typed
//! decoding drops them) and reported: a 400 under `Strict`, `Warning` headers under `Warn` (the
//! default), nothing under `Ignore`.

use super::query::Query;
use crate::crd::CustomResource;
use crate::http::body::{decode, decode_yaml_located};
use crate::http::duplicate_fields::{self, Duplicate};
use crate::http::negotiation::InputFormat;
use crate::http::status::ApiError;
use crate::http::status::go_quote;
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
    pub fn check(
        self,
        info: &ResourceInfo,
        custom: Option<&CustomResource>,
        object: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let unknown = prune_unknown_fields(info, custom, object);
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

/// What decoding found besides the object.
enum Found {
    /// JSON: duplicate keys with their paths and positions.
    Json(Vec<Duplicate>),
    /// YAML: go-yaml's `line <n>: key "<k>" already set in map` messages.
    Yaml(Vec<String>),
    Nothing,
}

impl FieldValidation {
    /// Decodes the body of a create or update (noting duplicate keys), checks its kind and
    /// prunes unknown fields; answers with the object and the warnings to send, or the 400 of
    /// `Strict`, worded as upstream's typed decoding words them.
    pub fn decode_and_check(
        self,
        info: &ResourceInfo,
        custom: Option<&CustomResource>,
        bytes: &[u8],
        format: InputFormat,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let (mut object, found) = match format {
            InputFormat::Json => {
                let (value, duplicates) = duplicate_fields::decode_json(bytes).map_err(|e| {
                    ApiError::bad_request(format!(
                        "couldn't get version/kind; json parse error: {e}"
                    ))
                })?;
                (value, Found::Json(duplicates))
            }
            InputFormat::Yaml => {
                let (value, lines) = decode_yaml_located(bytes, self != Self::Ignore)?;
                (value, Found::Yaml(lines))
            }
            InputFormat::Protobuf => (decode(bytes, format)?, Found::Nothing),
        };
        crate::rest::handler::check_kind(info, &mut object)?;
        let unknown = prune_unknown_fields(info, custom, &mut object);
        if self == Self::Ignore {
            return Ok((object, Vec::new()));
        }
        let unknown_message = |path: &String| format!("unknown field {}", go_quote(path));
        // Strict joins the problems with ", "; go-yaml's own are one error of many lines.
        let (warnings, strict) = match found {
            Found::Yaml(lines) if !lines.is_empty() => {
                let mut strict = vec![format!("yaml: unmarshal errors:\n  {}", lines.join("\n  "))];
                strict.extend(unknown.iter().map(unknown_message));
                let mut warnings = lines;
                warnings.extend(unknown.iter().map(unknown_message));
                (warnings, strict)
            }
            Found::Json(duplicates) if !duplicates.is_empty() => {
                let messages = json_problems(bytes, duplicates, &unknown);
                (messages.clone(), messages)
            }
            _ => {
                let messages: Vec<String> = unknown.iter().map(unknown_message).collect();
                (messages.clone(), messages)
            }
        };
        match self {
            _ if warnings.is_empty() => Ok((object, Vec::new())),
            Self::Strict => Err(ApiError::bad_request(format!(
                "{kind} in version {version} cannot be handled as a {kind}: strict decoding error: {}",
                strict.join(", "),
                kind = info.kind,
                version = go_quote(info.version),
            ))),
            _ => Ok((object, warnings)),
        }
    }

    /// [`FieldValidation::check`] of a patched object, with the duplicate keys of the patch
    /// itself reported first, as upstream does (`json patch duplicate field "[1].path"` for
    /// a JSON patch's operations).
    pub fn check_patched(
        self,
        info: &ResourceInfo,
        custom: Option<&CustomResource>,
        patched: &mut Value,
        patch_duplicates: &[String],
    ) -> Result<Vec<String>, ApiError> {
        let mut messages = patch_duplicates.to_vec();
        messages.extend(
            prune_unknown_fields(info, custom, patched)
                .iter()
                .map(|path| format!("unknown field {}", go_quote(path))),
        );
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

/// The problems of a patch body itself, in document order: every duplicate key of a merge or
/// strategic merge patch; of a JSON patch, the duplicate and unknown fields of its operations
/// (`json patch duplicate field "[1].path"`, `json patch unknown field "[0].foo"`), not those
/// inside their values.
pub fn patch_duplicates(json_patch: bool, bytes: &[u8]) -> Vec<String> {
    let Ok((patch, duplicates)) = duplicate_fields::decode_json(bytes) else {
        return Vec::new();
    };
    if !json_patch {
        return duplicates
            .iter()
            .map(|d| format!("duplicate field {}", go_quote(&d.path)))
            .collect();
    }
    let is_operation_field = |path: &str| {
        // `[1].path`: an operation's own field.
        path.strip_prefix('[')
            .and_then(|p| p.split_once("]."))
            .is_some_and(|(index, field)| {
                index.bytes().all(|b| b.is_ascii_digit()) && !field.contains(['.', '['])
            })
    };
    let mut problems: Vec<(usize, String)> = duplicates
        .into_iter()
        .filter(|d| is_operation_field(&d.path))
        .map(|d| {
            let message = format!("json patch duplicate field {}", go_quote(&d.path));
            (d.position, message)
        })
        .collect();
    let unknown: Vec<String> = patch
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(index, operation)| {
            operation
                .as_object()
                .into_iter()
                .flat_map(|fields| fields.keys())
                .filter(|key| !matches!(key.as_str(), "op" | "path" | "value" | "from"))
                .map(move |key| format!("[{index}].{key}"))
        })
        .collect();
    if !unknown.is_empty() {
        let positions = duplicate_fields::key_positions(bytes, &unknown);
        problems.extend(unknown.iter().map(|path| {
            let position = positions.get(path).copied().unwrap_or(usize::MAX);
            (
                position,
                format!("json patch unknown field {}", go_quote(path)),
            )
        }));
        problems.sort_by_key(|(position, _)| *position);
    }
    problems.into_iter().map(|(_, message)| message).collect()
}

/// A JSON body's duplicate and unknown fields in document order; a field both unknown and
/// duplicated (or inside an unknown one) is only unknown, as upstream's typed decoding has it.
fn json_problems(bytes: &[u8], duplicates: Vec<Duplicate>, unknown: &[String]) -> Vec<String> {
    let under_unknown = |path: &str| {
        unknown.iter().any(|u| {
            path.strip_prefix(u.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
    };
    let mut problems: Vec<(usize, String)> = duplicates
        .into_iter()
        .filter(|d| !under_unknown(&d.path))
        .map(|d| (d.position, format!("duplicate field {}", go_quote(&d.path))))
        .collect();
    if !unknown.is_empty() {
        let positions = duplicate_fields::key_positions(bytes, unknown);
        problems.extend(unknown.iter().map(|path| {
            (
                positions.get(path).copied().unwrap_or(usize::MAX),
                format!("unknown field {}", go_quote(path)),
            )
        }));
        problems.sort_by_key(|(position, _)| *position);
    }
    problems.into_iter().map(|(_, message)| message).collect()
}

/// Removes the fields of `object` its kind's schema does not define; returns their paths
/// (`spec.template.spec.containers[0].bogus`). A custom resource is pruned by its structural
/// schema; kinds without a schema are left alone.
pub fn prune_unknown_fields(
    info: &ResourceInfo,
    custom: Option<&CustomResource>,
    object: &mut Value,
) -> Vec<String> {
    if let Some(custom) = custom {
        return custom
            .schema
            .as_ref()
            .map(|schema| schema.prune(object))
            .unwrap_or_default();
    }
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
        let unknown = prune_unknown_fields(info, None, &mut deployment);
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
            prune_unknown_fields(info, None, &mut deployment).is_empty(),
            "pruning is complete"
        );
    }

    #[test]
    fn problems_of_a_patch_itself() {
        let merge = br#"{"spec": {"paused": true, "paused": false, "x": {"a": 1, "a": 2}}}"#;
        assert_eq!(
            patch_duplicates(false, merge),
            [
                "duplicate field \"spec.paused\"",
                "duplicate field \"spec.x.a\""
            ]
        );
        let json_patch = br#"[
            {"op": "add", "path": "/spec/a", "value": "v", "foo": "bar"},
            {"op": "add", "path": "/spec/b", "path": "/spec/c", "value": {"k": 1, "k": 2}}
        ]"#;
        assert_eq!(
            patch_duplicates(true, json_patch),
            [
                "json patch unknown field \"[0].foo\"",
                "json patch duplicate field \"[1].path\""
            ]
        );
        assert!(patch_duplicates(true, b"not json").is_empty());
    }

    #[test]
    fn modes() {
        let info = by_group_version_resource("", "v1", "configmaps").unwrap();
        let object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dta": {}});
        let strict = FieldValidation::Strict
            .check(info, None, &mut object.clone())
            .unwrap_err();
        assert_eq!(strict.code().as_u16(), 400);
        assert_eq!(
            strict.message(),
            "strict decoding error: unknown field \"dta\""
        );
        assert_eq!(
            FieldValidation::Warn
                .check(info, None, &mut object.clone())
                .unwrap(),
            ["unknown field \"dta\""]
        );
        assert!(
            FieldValidation::Ignore
                .check(info, None, &mut object.clone())
                .unwrap()
                .is_empty()
        );
        assert!(FieldValidation::from_query(&Query::parse(Some("fieldValidation=Loose"))).is_err());
    }
}
