//! The rules a CRD schema must follow: upstream's structural-schema invariants and
//! completeness (`apiextensions-apiserver/pkg/apiserver/schema/validation.go`, `complete.go`)
//! and the per-keyword checks of the CRD's OpenAPI schema validation (list and map types,
//! where defaults may appear, `additionalProperties` next to `properties`).

use super::node::{Additional, Node};
use api_types::validation::{BadValue, ErrorList, FieldError, FieldPath};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Structural invariants and completeness, sorted by message as upstream sorts them.
pub(crate) fn check_structural(root: &Node, path: &FieldPath) -> ErrorList {
    let mut errs = Vec::new();
    invariants(root, Level::Root, path, &mut errs);
    completeness(root, path, &mut errs);
    errs.sort_by_key(|e: &FieldError| e.to_string());
    errs.into()
}

fn invariants(s: &Node, lvl: Level, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.type_ == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &path.child("items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(
            v,
            Level::Field,
            &path.child("properties").key(k.as_str()),
            errs,
        );
    }
    if let Some(additional) = &s.additional {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Additional::Schema(a) = additional {
            invariants(a, Level::Field, &path.child("additionalProperties"), errs);
        }
    }
    if s.int_or_string && s.preserve_unknown {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    value_validation(
        s,
        is_int_or_string_any_of(&s.any_of),
        is_int_or_string_all_of(s),
        path,
        errs,
    );

    let check_metadata = lvl == Level::Root || s.embedded;
    if s.embedded && s.type_ != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if s.type_.is_empty() {
            FieldError::required(&path.child("type"), msg)
        } else {
            FieldError::invalid(&path.child("type"), s.type_.as_str(), msg)
        });
    } else if s.type_.is_empty() && !s.int_or_string && !s.preserve_unknown {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&path.child("type"), msg));
    }
    if s.embedded && s.additional.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            s.type_.as_str(),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for key in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(key).filter(|p| p.type_ != "string") {
                errs.push(FieldError::invalid(
                    &path.child("properties").key(key).child("type"),
                    p.type_.as_str(),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = s.properties.get("metadata") {
        let meta_path = path.child("properties").key("metadata");
        if check_metadata && meta.type_ != "object" {
            errs.push(FieldError::invalid(
                &meta_path.child("type"),
                meta.type_.as_str(),
                "must be object",
            ));
        }
        if lvl == Level::Root && !metadata_only_restricts_names(meta) {
            errs.push(FieldError::forbidden(
                &meta_path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.embedded && !s.preserve_unknown && s.properties.is_empty() {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root `metadata` may carry a type and a default (checked elsewhere) and restrict `name`
/// and `generateName`; anything else would narrow ObjectMeta.
fn metadata_only_restricts_names(m: &Node) -> bool {
    let mut names_only = m.clone();
    let keys: Vec<&str> = names_only.properties.keys().map(String::as_str).collect();
    let only_names = !keys.is_empty() && keys.iter().all(|k| *k == "name" || *k == "generateName");
    if only_names {
        names_only.properties.clear();
    }
    names_only.type_.clear();
    names_only.default = None;
    let empty = Node::default();
    format!("{names_only:?}") == format!("{empty:?}")
}

/// `anyOf: [{type: integer}, {type: string}]` exactly: the int-or-string shape that may name
/// types under a junctor.
fn is_int_or_string_any_of(any_of: &[Node]) -> bool {
    let only_type = |n: &Node, t: &str| {
        let mut bare = Node {
            type_: t.to_string(),
            ..Node::default()
        };
        bare.type_ = t.to_string();
        format!("{n:?}") == format!("{bare:?}")
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn is_int_or_string_all_of(s: &Node) -> bool {
    s.all_of
        .first()
        .is_some_and(|first| is_int_or_string_any_of(&first.any_of))
}

fn value_validation(
    v: &Node,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, c) in v.any_of.iter().enumerate() {
            nested(c, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, c) in v.all_of.iter().enumerate() {
        nested(
            c,
            skip_first_all_of_any_of && i == 0,
            &path.child("allOf").index(i),
            errs,
        );
    }
    for (i, c) in v.one_of.iter().enumerate() {
        nested(c, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(not) = &v.not {
        nested(not, false, &path.child("not"), errs);
    }
}

/// A clause under a junctor: it may only constrain values, never declare structure.
fn nested(v: &Node, skip_any_of: bool, path: &FieldPath, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(items) = &v.items {
        nested(items, false, &path.child("items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &path.child("properties").key(k.as_str()), errs);
    }
    let mut forbid = |key: &str, msg: &str| errs.push(FieldError::forbidden(&path.child(key), msg));
    if !v.type_.is_empty() {
        forbid("type", "must be empty to be structural");
    }
    if v.additional.is_some() {
        forbid("additionalProperties", "must be undefined to be structural");
    }
    if v.default.is_some() {
        forbid("default", "must be undefined to be structural");
    }
    if v.has_title {
        forbid("title", "must be empty to be structural");
    }
    if v.has_description {
        forbid("description", "must be empty to be structural");
    }
    if v.nullable {
        forbid("nullable", "must be false to be structural");
    }
    if v.has_external_docs {
        forbid("externalDocs", "must be undefined to be structural");
    }
    if v.preserve_unknown {
        forbid(
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.embedded {
        forbid(
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.int_or_string {
        forbid(
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if !v.list_map_keys.is_empty() {
        forbid(
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.list_type.is_some() {
        forbid(
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.map_type.is_some() {
        forbid(
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if v.has_validations {
        forbid("x-kubernetes-validations", "must be empty to be structural");
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Every field or array a junctor clause speaks of must be specified outside of it (checked
/// for the root's clauses, as upstream does).
fn completeness(root: &Node, path: &FieldPath, errs: &mut Vec<FieldError>) {
    junctor_completeness(root, Some(root), path, path, errs);
}

fn junctor_completeness(
    v: &Node,
    s: Option<&Node>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = &v.not {
        nested_completeness(not, s, s_path, &v_path.child("not"), errs);
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, c) in list.iter().enumerate() {
            nested_completeness(c, s, s_path, &v_path.child(name).index(i), errs);
        }
    }
}

fn nested_completeness(
    v: &Node,
    s: Option<&Node>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    junctor_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(items) = &v.items {
        nested_completeness(
            items,
            s.items.as_deref(),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, p) in &v.properties {
        nested_completeness(
            p,
            s.properties.get(k),
            &s_path.child("properties").key(k.as_str()),
            &v_path.child("properties").key(k.as_str()),
            errs,
        );
    }
}

/// Where defaults are allowed while walking the schema.
#[derive(Clone)]
struct Walk {
    defaults_forbidden: Option<String>,
    inside_resource_meta: bool,
}

/// The CRD's per-keyword OpenAPI schema checks.
pub(crate) fn check_openapi(root: &Node, path: &FieldPath) -> ErrorList {
    let mut errs = Vec::new();
    if root.nullable {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let walk = Walk {
        defaults_forbidden: None,
        inside_resource_meta: false,
    };
    openapi(root, path, &walk, true, &mut errs);
    errs.into()
}

fn openapi(s: &Node, path: &FieldPath, walk: &Walk, is_root: bool, errs: &mut Vec<FieldError>) {
    if s.default.is_some()
        && let Some(reason) = &walk.defaults_forbidden
    {
        errs.push(FieldError::forbidden(
            &path.child("default"),
            format!("must not be set {reason}"),
        ));
    }
    if walk.inside_resource_meta && s.embedded {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if s.unique_items {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(additional) = &s.additional {
        if !s.properties.is_empty() && !matches!(additional, Additional::Bool(true)) {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Additional::Schema(a) = additional {
            let mut sub = walk.clone();
            if walk.inside_resource_meta {
                sub.defaults_forbidden =
                    Some("inside additionalProperties applying to object metadata".into());
            }
            openapi(a, &path.child("additionalProperties"), &sub, false, errs);
        }
    }
    for (k, p) in &s.properties {
        let mut sub = walk.clone();
        if (is_root || s.embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_resource_meta = true;
            if is_root {
                sub.defaults_forbidden = Some(format!("in top-level {k}"));
            }
        }
        openapi(
            p,
            &path.child("properties").key(k.as_str()),
            &sub,
            false,
            errs,
        );
    }
    if let Some(not) = &s.not {
        openapi(not, &path.child("not"), walk, false, errs);
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, c) in list.iter().enumerate() {
            openapi(c, &path.child(name).index(i), walk, false, errs);
        }
    }
    if let Some(items) = &s.items {
        openapi(items, &path.child("items"), walk, false, errs);
    }
    list_and_map_types(s, path, errs);
}

fn list_and_map_types(s: &Node, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if let Some(map_type) = &s.map_type {
        type_must_be(
            s,
            "object",
            "x-kubernetes-map-type is specified",
            path,
            errs,
        );
        if map_type != "atomic" && map_type != "granular" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                map_type.as_str(),
                &["atomic", "granular"],
            ));
        }
    }
    if let Some(list_type) = &s.list_type {
        if s.type_ != "array" {
            type_must_be(
                s,
                "array",
                "x-kubernetes-list-type is specified",
                path,
                errs,
            );
        } else if list_type == "set"
            && let Some(items) = &s.items
        {
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match items.type_.as_str() {
                "array" if items.list_type.as_deref().is_some_and(|t| t != "atomic") => {
                    errs.push(FieldError::invalid(
                        &path.child("items").child("x-kubernetes-list-type"),
                        items.list_type.as_deref().unwrap_or_default(),
                        msg,
                    ))
                }
                "object" if items.map_type.as_deref() != Some("atomic") => {
                    errs.push(FieldError::invalid(
                        &path.child("items").child("x-kubernetes-map-type"),
                        list_type_value(items),
                        msg,
                    ))
                }
                _ => {}
            }
        }
        if !matches!(list_type.as_str(), "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-list-type"),
                list_type.as_str(),
                &["atomic", "set", "map"],
            ));
        }
    }
    if !s.list_map_keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match s.list_type.as_deref() {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                msg,
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                other,
                msg,
            )),
        }
    }
    if s.list_type.as_deref() == Some("map") {
        list_map(s, path, errs);
    }
    if let (Some(list_type @ ("set" | "map")), Some(items)) = (s.list_type.as_deref(), &s.items) {
        if items.nullable {
            errs.push(FieldError::forbidden(
                &path.child("items").child("nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
            ));
        }
        if list_type == "map" {
            for k in &s.list_map_keys {
                let Some(key) = items.properties.get(k) else {
                    continue;
                };
                let key_path = path.child("items").child("properties").key(k.as_str());
                if !items.required.contains(k) && key.default.is_none() {
                    errs.push(FieldError::required(
                        &key_path.child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if key.nullable {
                    errs.push(FieldError::forbidden(
                        &key_path.child("nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

/// Upstream reports the item's list type as the value of this error (even when checking the
/// map type); keep that shape, with null for an unset list type.
fn list_type_value(items: &Node) -> BadValue {
    match &items.list_type {
        Some(t) => BadValue::from(t.as_str()),
        None => BadValue::Null,
    }
}

fn type_must_be(s: &Node, want: &str, when: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.type_ == want {
        return;
    }
    let msg = format!("must be {want} if {when}");
    errs.push(if s.type_.is_empty() {
        FieldError::required(&path.child("type"), msg)
    } else {
        FieldError::invalid(&path.child("type"), s.type_.as_str(), msg)
    });
}

fn list_map(s: &Node, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.list_map_keys.is_empty() {
        errs.push(FieldError::required(
            &path.child("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = &s.items else {
        errs.push(FieldError::required(
            &path.child("items"),
            "must have a schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    if items.type_ != "object" {
        errs.push(FieldError::invalid(
            &path.child("items").child("type"),
            items.type_.as_str(),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys_value = BadValue::string_list(&s.list_map_keys);
    let mut seen = Vec::new();
    for k in &s.list_map_keys {
        match items.properties.get(k) {
            Some(p) if p.type_ == "array" || p.type_ == "object" => errs.push(FieldError::invalid(
                &path
                    .child("items")
                    .child("properties")
                    .key(k.as_str())
                    .child("type"),
                items.type_.as_str(),
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
            )),
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k) {
            errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use serde_json::{Value, json};

    fn structural(v: Value) -> String {
        let mut errs = ErrorList::new();
        let n = parse(&v, &FieldPath::new("s"), &mut errs);
        assert!(errs.is_empty(), "{errs}");
        check_structural(&n, &FieldPath::new("s")).to_string()
    }

    fn openapi_errs(v: Value) -> String {
        let mut errs = ErrorList::new();
        let n = parse(&v, &FieldPath::new("s"), &mut errs);
        check_openapi(&n, &FieldPath::new("s")).to_string()
    }

    #[test]
    fn missing_types_are_reported_per_level() {
        let text = structural(json!({
            "properties": {
                "spec": {"properties": {"list": {"type": "array", "items": {}}}},
                "bag": {"type": "array"},
            }
        }));
        for want in [
            "s.type: Required value: must not be empty at the root",
            "s.properties[spec].type: Required value: must not be empty for specified object fields",
            "s.properties[spec].properties[list].items.type: Required value: must not be empty for specified array items",
            "s.properties[bag].items: Required value: must be specified",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }

    #[test]
    fn int_or_string_and_preserve_need_no_type() {
        let ok = structural(json!({
            "type": "object",
            "properties": {
                "port": {"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "blob": {"x-kubernetes-preserve-unknown-fields": true},
            }
        }));
        assert_eq!(ok, "");
    }

    #[test]
    fn junctors_may_not_declare_structure() {
        let text = structural(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "default": 1, "nullable": true,
                       "properties": {"metadata": {}, "b": {}}}],
        }));
        for want in [
            "s.anyOf[0].type: Forbidden: must be empty to be structural",
            "s.anyOf[0].default: Forbidden: must be undefined to be structural",
            "s.anyOf[0].nullable: Forbidden: must be false to be structural",
            "s.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
            "s.properties[b]: Required value: because it is defined in s.anyOf[0].properties[b]",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }

    #[test]
    fn metadata_at_root_only_restricts_names() {
        assert_eq!(
            structural(json!({"type": "object", "properties": {"metadata": {
                "type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}})),
            ""
        );
        assert!(
            structural(json!({"type": "object", "properties": {"metadata": {
                "type": "object", "properties": {"labels": {"type": "object"}}}}}))
            .contains("s.properties[metadata]: Forbidden: must not specify anything other than name and generateName")
        );
    }

    #[test]
    fn embedded_resources_and_root_rules() {
        let text = structural(json!({
            "type": "array", "items": {"type": "string"},
            "additionalProperties": {"type": "string"},
            "properties": {"obj": {"x-kubernetes-embedded-resource": true}},
        }));
        for want in [
            "s.type: Invalid value: \"array\": must be object at the root",
            "s.additionalProperties: Forbidden: must not be used at the root",
            "s.properties[obj].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            "s.properties[obj].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }

    #[test]
    fn list_types_and_map_keys() {
        let text = openapi_errs(json!({
            "type": "object",
            "properties": {
                "a": {"type": "array", "x-kubernetes-list-type": "map",
                      "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "b": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["k", "missing"],
                      "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "c": {"type": "string", "x-kubernetes-list-type": "bag"},
                "d": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["x"]},
            }
        }));
        for want in [
            "s.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "s.properties[b].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"missing\"]: entries must all be names of item properties",
            "s.properties[b].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            "s.properties[c].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified",
            "s.properties[c].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"",
            "s.properties[d].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }

    #[test]
    fn defaults_forbidden_in_top_level_meta_and_mutual_exclusion() {
        let text = openapi_errs(json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "default": {}},
                "m": {"type": "object", "properties": {"x": {"type": "string"}},
                      "additionalProperties": {"type": "string"}},
                "u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            }
        }));
        for want in [
            "s.properties[metadata].default: Forbidden: must not be set in top-level metadata",
            "s.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "s.properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }
}
