//! The parts of a structural schema that CEL rules need: the shape of each node (to turn JSON
//! into CEL values, and to correlate old and new values), with the compiled rules at it.

use super::rule::CompiledRule;
use serde_json::Value;
use std::collections::BTreeMap;

/// One schema node, and everything under it.
#[derive(Debug, Default)]
pub(super) struct Node {
    /// `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`), empty when unset.
    pub ty: String,
    /// `format` of a string (`byte`, `date`, `date-time`, `duration` change the CEL type).
    pub format: Option<String>,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`: the node is a whole object with its own metadata.
    pub embedded: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `items`.
    pub items: Option<Box<Node>>,
    /// `additionalProperties` when it is a schema.
    pub additional: Option<Box<Node>>,
    /// The compiled `x-kubernetes-validations` of this node.
    pub rules: Vec<CompiledRule>,
    /// Whether this node or one under it has rules (the walk skips the rest).
    pub has_rules: bool,
}

impl Node {
    /// Reads the shape of `schema` (rules are compiled separately, by the caller).
    pub fn shape(schema: &Value) -> Node {
        let str_of = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_string);
        let bool_of = |key: &str| schema.get(key).and_then(Value::as_bool).unwrap_or(false);
        let mut node = Node {
            ty: str_of("type").unwrap_or_default(),
            format: str_of("format"),
            int_or_string: bool_of("x-kubernetes-int-or-string"),
            embedded: bool_of("x-kubernetes-embedded-resource"),
            list_type: str_of("x-kubernetes-list-type"),
            list_map_keys: schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            ..Node::default()
        };
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                node.properties.insert(name.clone(), Node::shape(prop));
            }
        }
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            node.items = Some(Box::new(Node::shape(items)));
        }
        if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
            node.additional = Some(Box::new(Node::shape(additional)));
        }
        node
    }

    /// The value type upstream shows as the bad value of a failed rule (`"object"`, ...).
    pub fn type_name(&self) -> &str {
        &self.ty
    }

    /// Whether old and new items of this array can be paired (only `map` lists, by their keys).
    pub fn correlates_items(&self) -> bool {
        self.list_type.as_deref() == Some("map")
    }
}
