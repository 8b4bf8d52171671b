//! The patch and list extensions of fields (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`),
//! read from the strategic-merge table of the patch module. k8s-openapi does not carry these.
//!
//! The table names its own (partly shared) type names, so it is walked alongside the real
//! schemas: start at each kind's definition, and for each field the table lists, annotate that
//! property and follow its `$ref` with the table's type for the field.

use super::definitions::V3_REF_PREFIX;
use super::kinds::KindSchema;
use crate::patch::strategic::strategies::{FieldMeta, KINDS, Strategy, TYPES};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Lists whose map keys are more than the merge key (`+listMapKey` repeated upstream); every
/// other merged list of objects is keyed by its merge key alone.
const MULTI_KEY_LISTS: &[(&str, &str, &[&str])] = &[
    (
        "io.k8s.api.core.v1.Container",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.ServiceSpec",
        "ports",
        &["port", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
];

/// Annotates the fields of every kind the patch table knows.
pub fn annotate(schemas: &mut Map<String, Value>, kinds: &[KindSchema]) {
    let mut visited = HashSet::new();
    for (group, kind, root) in KINDS {
        // Every served version of the kind: the table is per group, like strategic merge.
        for entry in kinds
            .iter()
            .filter(|k| k.group == *group && k.kind == *kind)
        {
            walk(schemas, &(entry.name)(), root, &mut visited);
        }
    }
}

fn walk(
    schemas: &mut Map<String, Value>,
    definition: &str,
    type_name: &'static str,
    visited: &mut HashSet<(String, &'static str)>,
) {
    if !visited.insert((definition.to_owned(), type_name)) {
        return;
    }
    let Some(table) = TYPES.iter().find(|t| t.name == type_name) else {
        return;
    };
    for field in table.fields {
        let Some(property) = schemas
            .get_mut(definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(field.name))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        annotate_field(property, definition, field);
        let target = referenced_definition(property);
        if let (Some(target), Some(next)) = (target, field.type_name) {
            walk(schemas, &target, next, visited);
        }
    }
}

/// The definition a property (or, for a list, each element) refers to.
fn referenced_definition(property: &Map<String, Value>) -> Option<String> {
    let schema = match property.get("items") {
        Some(Value::Object(items)) => items,
        _ => property,
    };
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(V3_REF_PREFIX))
        .map(str::to_owned)
}

fn annotate_field(property: &mut Map<String, Value>, definition: &str, field: &FieldMeta) {
    let mut strategy = Vec::new();
    match field.strategy {
        Strategy::Merge => strategy.push("merge"),
        Strategy::Replace => strategy.push("replace"),
        Strategy::Default => {}
    }
    if field.retain_keys {
        strategy.push("retainKeys");
    }
    if !strategy.is_empty() {
        property.insert(
            "x-kubernetes-patch-strategy".to_owned(),
            json!(strategy.join(",")),
        );
    }
    if let Some(key) = field.merge_key {
        property.insert("x-kubernetes-patch-merge-key".to_owned(), json!(key));
    }
    let is_list = property.get("type").and_then(Value::as_str) == Some("array");
    if !is_list || field.strategy != Strategy::Merge {
        return;
    }
    match field.merge_key {
        // A merged list of objects is a map keyed by the merge key (or by more keys).
        Some(key) => {
            let keys = MULTI_KEY_LISTS
                .iter()
                .find(|(d, f, _)| *d == definition && *f == field.name)
                .map_or_else(|| vec![key], |(_, _, keys)| keys.to_vec());
            property.insert("x-kubernetes-list-type".to_owned(), json!("map"));
            property.insert("x-kubernetes-list-map-keys".to_owned(), json!(keys));
        }
        // A merged list of scalars is a set.
        None => {
            property.insert("x-kubernetes-list-type".to_owned(), json!("set"));
        }
    }
}
