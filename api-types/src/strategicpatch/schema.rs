//! Walking the patch-strategy table alongside the object: a [`Schema`] is "the type of the value
//! we are in", and asking it for a field gives that field's strategy and the schema below it.

use super::strategies::{FieldMeta, KINDS, Strategy, TYPES, TypeDef};

/// The type of the value being merged, or nothing known (an untagged subtree).
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    ty: Option<&'static TypeDef>,
}

impl Schema {
    /// A subtree with no strategies: maps merge, lists are replaced.
    pub const UNKNOWN: Schema = Schema { ty: None };

    /// The schema of a top-level object of a built-in kind. Kinds missing from the table get
    /// the generic object (only `metadata` has strategies), which is right for the many kinds
    /// whose types carry no tags.
    pub fn for_kind(group: &str, kind: &str) -> Schema {
        let root = KINDS
            .iter()
            .find(|(g, k, _)| *g == group && *k == kind)
            .map_or("Object", |(_, _, t)| *t);
        Schema::named(root)
    }

    /// The schema of a type by its name in the table.
    pub fn named(name: &str) -> Schema {
        Schema {
            ty: TYPES.iter().find(|t| t.name == name),
        }
    }

    /// The name of the type, for error messages.
    pub fn name(&self) -> &'static str {
        self.ty.map_or("unknown", |t| t.name)
    }

    /// The strategy of `field` and the schema of its value (of each element, for a list).
    pub fn field(&self, field: &str) -> (FieldMeta, Schema) {
        let found = self
            .ty
            .and_then(|t| t.fields.iter().find(|f| f.name == field));
        match found {
            Some(meta) => (*meta, meta.type_name.map_or(Schema::UNKNOWN, Schema::named)),
            None => (UNTAGGED, Schema::UNKNOWN),
        }
    }
}

/// The strategy of a field the table does not list.
const UNTAGGED: FieldMeta = FieldMeta {
    name: "",
    type_name: None,
    strategy: Strategy::Default,
    merge_key: None,
    retain_keys: false,
};
