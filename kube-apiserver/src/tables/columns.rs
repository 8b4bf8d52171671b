//! Column definitions (`columnDefinitions` of a `Table`).

use serde_json::{Value, json};

/// One column of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Human-readable name, e.g. `Nominated Node` (kubectl upper-cases it).
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    pub ty: &'static str,
    /// OpenAPI format: `name` for the object's name column, else empty.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i32,
}

impl Column {
    /// The JSON of the column definition.
    pub fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// A default-view column.
pub const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column {
        name,
        ty,
        format: "",
        description,
        priority: 0,
    }
}

/// A `-o wide` column.
pub const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column {
        priority: 1,
        ..col(name, ty, description)
    }
}

/// The NAME column.
pub const NAME: Column = Column {
    name: "Name",
    ty: "string",
    format: "name",
    description: "Name must be unique within a namespace.",
    priority: 0,
};

/// The AGE column.
pub const AGE: Column = col(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);

/// The CONTAINERS, IMAGES and SELECTOR wide columns of workloads.
pub const CONTAINERS: Column = wide(
    "Containers",
    "string",
    "Names of each container in the template.",
);
/// See [`CONTAINERS`].
pub const IMAGES: Column = wide(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
/// See [`CONTAINERS`].
pub const SELECTOR: Column = wide(
    "Selector",
    "string",
    "Label selector for the selected objects.",
);

/// Upstream's default table.
pub const DEFAULT: &[Column] = &[
    NAME,
    Column {
        name: "Created At",
        ty: "date",
        format: "",
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
        priority: 0,
    },
];
