//! Server-side printing: lists of objects as a `meta.k8s.io/v1` `Table`, with upstream's printer
//! columns for the built-in resources (what `kubectl get` shows) and the default NAME / CREATED AT
//! table for anything else.
//!
//! Like upstream's server-side printers, every row carries all columns, wide ones (priority 1)
//! included; the client picks which to show.

mod apiserver;
mod apps;
mod cluster;
mod columns;
mod core;
pub mod custom;
pub mod format;
mod network;
mod pods;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

pub use columns::Column;

/// What each row carries besides its cells (upstream's `includeObject` table option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (upstream's default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` option (`None`, `Metadata`, `Object`); empty means the default.
    pub fn parse(value: &str) -> Option<IncludeObject> {
        match value {
            "" | "Metadata" => Some(IncludeObject::Metadata),
            "None" => Some(IncludeObject::None),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

/// How to build a table.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// What each row carries besides its cells.
    pub include_object: IncludeObject,
    /// The instant AGE and similar columns are measured against.
    pub now: Timestamp,
    /// The list's `metadata.resourceVersion`, set by the caller.
    pub resource_version: Option<String>,
    /// The list's `metadata.continue`, set by the caller.
    pub continue_token: Option<String>,
    /// The list's `metadata.remainingItemCount`, set by the caller.
    pub remaining_item_count: Option<i64>,
}

impl TableOptions {
    /// Options with the default `includeObject`, no list metadata, measured against `now`.
    pub fn at(now: Timestamp) -> TableOptions {
        TableOptions {
            include_object: IncludeObject::default(),
            now,
            resource_version: None,
            continue_token: None,
            remaining_item_count: None,
        }
    }
}

/// One printed row: its cells and, for pods, the row conditions upstream sets.
pub(crate) struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// Fills the cells of one object's row, given the instant ages are measured against.
pub(crate) type RowFn = fn(&Value, Timestamp) -> Row;

/// The columns of a resource and how to fill them from one object.
pub(crate) struct Printer {
    pub columns: &'static [Column],
    pub row: RowFn,
}

/// The printer of a built-in resource, or `None` for the default table.
fn printer_for(group: &str, resource: &str) -> Option<Printer> {
    pods::printer(group, resource)
        .or_else(|| apps::printer(group, resource))
        .or_else(|| core::printer(group, resource))
        .or_else(|| network::printer(group, resource))
        .or_else(|| cluster::printer(group, resource))
        .or_else(|| apiserver::printer(group, resource))
}

/// The columns a table of `group`/`resource` has.
pub fn columns_for(group: &str, resource: &str) -> &'static [Column] {
    printer_for(group, resource).map_or(columns::DEFAULT, |p| p.columns)
}

/// Prints `objects` (all of `group`/`resource`) as a `meta.k8s.io/v1` `Table`.
pub fn to_table(group: &str, resource: &str, objects: &[Value], opts: &TableOptions) -> Value {
    let printer = printer_for(group, resource).unwrap_or(Printer {
        columns: columns::DEFAULT,
        row: default_row,
    });
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| row_value((printer.row)(obj, opts.now), obj, opts.include_object))
        .collect();
    let columns = printer.columns.iter().map(Column::definition).collect();
    table_value(columns, rows, opts)
}

/// One row of a table: its cells, conditions and what `includeObject` asks of `obj`.
fn row_value(row: Row, obj: &Value, include: IncludeObject) -> Value {
    let mut out = Map::new();
    out.insert("cells".into(), Value::Array(row.cells));
    if let Some(conditions) = row.conditions {
        out.insert("conditions".into(), conditions);
    }
    if let Some(object) = row_object(obj, include) {
        out.insert("object".into(), object);
    }
    Value::Object(out)
}

/// The `Table` of `columns` (definitions) and `rows`, with the list metadata of `opts`.
fn table_value(columns: Vec<Value>, rows: Vec<Value>, opts: &TableOptions) -> Value {
    let mut metadata = Map::new();
    if let Some(rv) = &opts.resource_version {
        metadata.insert("resourceVersion".into(), rv.clone().into());
    }
    if let Some(token) = &opts.continue_token {
        metadata.insert("continue".into(), token.clone().into());
    }
    if let Some(n) = opts.remaining_item_count {
        metadata.insert("remainingItemCount".into(), n.into());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// What a row carries as `object`.
fn row_object(obj: &Value, include: IncludeObject) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(obj.clone()),
        IncludeObject::Metadata => Some(json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        })),
    }
}

/// Upstream's default table: NAME and CREATED AT (the timestamp itself, not an age).
fn default_row(obj: &Value, _now: Timestamp) -> Row {
    vec![
        format::text(obj, "/metadata/name").into(),
        format::text(obj, "/metadata/creationTimestamp").into(),
    ]
    .into()
}
