//! The published schema of a custom resource's kind and list, from the CRD version's
//! `openAPIV3Schema`, shaped as upstream's CRD OpenAPI builder shapes it.

use super::ref_prefix;
use crate::openapi::definitions::meta;
use crate::openapi::operation::Flavor;
use serde_json::{Map, Value, json};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Keywords of a JSON schema that a structural schema does not carry, so upstream never
/// publishes them.
const UNPUBLISHED: &[&str] = &["example", "externalDocs", "$schema", "id", "definitions"];

fn flag(schema: &Map<String, Value>, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Calls `visit` on `schema` and then on its structural children (properties, items,
/// additionalProperties), depth first: the nodes upstream's structural visitor walks.
fn walk(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Value::Object(object) = schema else {
        return;
    };
    visit(object);
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(|p| walk(p, visit));
    }
    if let Some(items) = object.get_mut("items") {
        walk(items, visit);
    }
    if let Some(additional) = object.get_mut("additionalProperties") {
        walk(additional, visit);
    }
}

fn reference(name: &str, description: &str, flavor: Flavor) -> Value {
    json!({"$ref": format!("{}{name}", ref_prefix(flavor)), "description": description})
}

fn string_property(description: &str) -> Value {
    json!({"description": description, "type": "string"})
}

/// The schema of the kind: `openAPIV3Schema` unfolded (int-or-string alternatives), with
/// `apiVersion`, `kind` and `metadata` (ObjectMeta) at the root and in embedded resources;
/// for v2, reduced to what kubectl's v2 validation copes with. Without a schema, or for v2 of
/// a schema preserving unknown fields at the root, just an object.
pub fn kind_schema(schema: Option<&Value>, preserve_unknown_fields: bool, flavor: Flavor) -> Value {
    let Some(given) = schema.filter(|s| s.is_object()) else {
        return json!({"type": "object"});
    };
    let mut schema = given.clone();
    walk(&mut schema, &mut |s| {
        for key in UNPUBLISHED {
            s.remove(*key);
        }
        unfold_int_or_string(s);
    });
    let root_preserves = schema
        .as_object()
        .is_some_and(|s| flag(s, "x-kubernetes-preserve-unknown-fields"));
    if flavor == Flavor::V2 {
        if root_preserves || preserve_unknown_fields {
            // kubectl would refuse every field but these three otherwise.
            return json!({"type": "object"});
        }
        walk(&mut schema, &mut to_v2);
    }
    if let Value::Object(root) = &mut schema {
        let properties = root
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            properties.insert(
                "metadata".into(),
                reference(OBJECT_META, METADATA_DESCRIPTION, flavor),
            );
            properties.insert(
                "apiVersion".into(),
                string_property(API_VERSION_DESCRIPTION),
            );
            properties.insert("kind".into(), string_property(KIND_DESCRIPTION));
        }
    }
    walk(&mut schema, &mut |s| add_embedded_properties(s, flavor));
    schema
}

/// The schema of the list kind.
pub fn list_schema(
    item_definition: &str,
    kind: &str,
    list_kind: &str,
    plural: &str,
    flavor: Flavor,
) -> Value {
    json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "required": ["items"],
        "properties": {
            "apiVersion": string_property(API_VERSION_DESCRIPTION),
            "items": {
                "description": format!("List of {plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"),
                "type": "array",
                "items": {"$ref": format!("{}{item_definition}", ref_prefix(flavor))},
            },
            "kind": string_property(KIND_DESCRIPTION),
            "metadata": reference(meta::LIST_META, LIST_METADATA_DESCRIPTION, flavor),
        },
    })
}

/// Upstream's `Unfold`: an `x-kubernetes-int-or-string` node gets the integer-or-string
/// alternatives spelt out, in `anyOf` (or, when `anyOf` holds something else, in a leading
/// `allOf`), unless they already are.
fn unfold_int_or_string(schema: &mut Map<String, Value>) {
    if !flag(schema, "x-kubernetes-int-or-string") {
        return;
    }
    let alternatives = json!([{"type": "integer"}, {"type": "string"}]);
    let is_pattern = |any_of: Option<&Value>| any_of == Some(&alternatives);
    if is_pattern(schema.get("anyOf")) {
        return;
    }
    let first_all_of = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|all| all.first());
    if is_pattern(first_all_of.and_then(|s| s.get("anyOf"))) {
        return;
    }
    if !schema.contains_key("anyOf") {
        schema.insert("anyOf".into(), alternatives);
        return;
    }
    let mut all_of = vec![json!({"anyOf": alternatives})];
    if let Some(Value::Array(existing)) = schema.remove("allOf") {
        all_of.extend(existing);
    }
    schema.insert("allOf".into(), Value::Array(all_of));
}

/// Upstream's `ToStructuralOpenAPIV2`, on one node: no junctors, no `nullable` (a nullable
/// node loses its type and children), no children under `x-kubernetes-preserve-unknown-fields`,
/// no `array` without items nor `object` preserving unknown fields, and nullable properties
/// not required.
fn to_v2(schema: &mut Map<String, Value>) {
    for key in ["allOf", "anyOf", "oneOf", "not"] {
        schema.remove(key);
    }
    if flag(schema, "nullable") {
        for key in ["type", "items", "properties"] {
            schema.remove(key);
        }
    }
    schema.remove("nullable");
    let preserves = flag(schema, "x-kubernetes-preserve-unknown-fields");
    if preserves {
        schema.remove("items");
        schema.remove("properties");
    }
    let ty = schema.get("type").and_then(Value::as_str);
    if (ty == Some("array") && !schema.contains_key("items")) || (preserves && ty == Some("object"))
    {
        schema.remove("type");
    }
    let nullable_properties: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, p)| p.get("nullable") == Some(&Value::Bool(true)))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let nullable_values = schema
        .get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        == Some(&Value::Bool(true));
    if nullable_values {
        schema.remove("required");
    } else if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| {
            !r.as_str()
                .is_some_and(|r| nullable_properties.iter().any(|n| n == r))
        });
        if required.is_empty() {
            schema.remove("required");
        }
    }
}

/// An `x-kubernetes-embedded-resource` node gets `apiVersion`, `kind` (both required) and
/// `metadata` as a top-level object has them; not in v2 where it preserves unknown fields
/// (kubectl would then refuse the unknown ones).
fn add_embedded_properties(schema: &mut Map<String, Value>, flavor: Flavor) {
    if !flag(schema, "x-kubernetes-embedded-resource")
        || (flavor == Flavor::V2 && flag(schema, "x-kubernetes-preserve-unknown-fields"))
    {
        return;
    }
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "apiVersion".into(),
            string_property(EMBEDDED_API_VERSION_DESCRIPTION),
        );
        properties.insert("kind".into(), string_property(EMBEDDED_KIND_DESCRIPTION));
        properties.insert(
            "metadata".into(),
            reference(OBJECT_META, METADATA_DESCRIPTION, flavor),
        );
    }
    let required = schema
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(required) = required {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(field.into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crontab_schema() -> Value {
        json!({
            "type": "object",
            "description": "A cron job.",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                "spec": {
                    "type": "object",
                    "description": "What to run.",
                    "example": {"cronSpec": "* * * * *"},
                    "required": ["cronSpec", "note"],
                    "properties": {
                        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "note": {"type": "string", "nullable": true},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true},
                        "anything": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                     "properties": {"known": {"type": "string"}}},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        })
    }

    #[test]
    fn v3_fills_in_type_meta_and_unfolds() {
        let schema = kind_schema(Some(&crontab_schema()), false, Flavor::V3);
        let props = &schema["properties"];
        assert_eq!(
            props["metadata"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(props["apiVersion"]["type"], "string");
        assert_eq!(props["kind"]["description"], KIND_DESCRIPTION);
        let spec = &props["spec"];
        assert_eq!(spec["description"], "What to run.");
        assert!(spec.get("example").is_none());
        assert!(spec["properties"]["cronSpec"]["pattern"].is_string());
        assert_eq!(
            spec["properties"]["port"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(spec["properties"]["note"]["nullable"], true);
        let template = &spec["properties"]["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert!(template["properties"]["metadata"]["$ref"].is_string());
        assert_eq!(
            spec["properties"]["anything"]["properties"]["known"]["type"],
            "string"
        );
    }

    #[test]
    fn v2_drops_what_kubectl_cannot_validate() {
        let schema = kind_schema(Some(&crontab_schema()), false, Flavor::V2);
        assert_eq!(
            schema["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let spec = &schema["properties"]["spec"];
        assert!(spec["properties"]["port"].get("anyOf").is_none());
        assert!(spec["properties"]["note"].get("type").is_none());
        assert!(spec["properties"]["note"].get("nullable").is_none());
        assert_eq!(spec["required"], json!(["cronSpec"]));
        let anything = &spec["properties"]["anything"];
        assert!(anything.get("properties").is_none());
        assert!(anything.get("type").is_none());
        // Embedded resources preserving unknown fields get no metadata in v2.
        assert!(spec["properties"]["template"].get("required").is_none());
        assert_eq!(spec["properties"]["tags"]["type"], "array");
    }

    #[test]
    fn preserving_roots_and_missing_schemas_are_plain_objects() {
        let preserving = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert_eq!(
            kind_schema(Some(&preserving), false, Flavor::V2),
            json!({"type": "object"})
        );
        assert_eq!(
            kind_schema(Some(&crontab_schema()), true, Flavor::V2),
            json!({"type": "object"})
        );
        assert!(
            kind_schema(Some(&preserving), false, Flavor::V3)["properties"]["metadata"].is_object()
        );
        assert_eq!(
            kind_schema(None, false, Flavor::V3),
            json!({"type": "object"})
        );
    }

    #[test]
    fn int_or_string_with_other_alternatives_goes_to_all_of() {
        let mut node = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"maximum": 3}]});
        if let Value::Object(map) = &mut node {
            unfold_int_or_string(map);
        }
        assert_eq!(
            node["allOf"][0]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(node["anyOf"], json!([{"maximum": 3}]));
    }

    #[test]
    fn list_schema_refers_to_the_kind() {
        let list = list_schema(
            "com.example.stable.v1.CronTab",
            "CronTab",
            "CronTabList",
            "crontabs",
            Flavor::V3,
        );
        assert_eq!(list["description"], "CronTabList is a list of CronTab");
        assert_eq!(
            list["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTab"
        );
        assert_eq!(list["required"], json!(["items"]));
    }
}
