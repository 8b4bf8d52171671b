//! Tables of custom resources from a CRD version's `additionalPrinterColumns`, as upstream's
//! apiextensions `tableconvertor`: a `Name` column, then the CRD's columns in order (or `Age`
//! when it lists none), each cell the first value its JSONPath selects, typed as the column
//! says (a value of another type is a null cell).

use super::{TableOptions, format, row_value, table_value};
use client_go_rs::jsonpath::JsonPath;
use jiff::Timestamp;
use serde_json::{Value, json};

/// ObjectMeta's description of `name`, upstream's text for the Name column.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// ObjectMeta's description of `creationTimestamp`, upstream's text for the default Age
/// column.
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One printer column after the Name column.
#[derive(Debug, Clone)]
struct PrinterColumn {
    /// The `columnDefinitions` entry.
    definition: Value,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    ty: String,
    path: JsonPath,
}

/// The printer columns of one CRD version.
#[derive(Debug, Clone)]
pub struct CustomPrinter {
    columns: Vec<PrinterColumn>,
}

impl Default for CustomPrinter {
    /// The printer of a version without `additionalPrinterColumns`: Name and Age.
    fn default() -> Self {
        Self::new(&[]).unwrap_or(CustomPrinter {
            columns: Vec::new(),
        })
    }
}

impl CustomPrinter {
    /// Builds the printer from `spec.versions[*].additionalPrinterColumns`; none means
    /// upstream's default `Age` column. Refuses a column whose `jsonPath` is not a JSONPath
    /// starting with `.`, which the CRD validator reports.
    pub fn new(columns: &[Value]) -> Result<Self, String> {
        let default_age;
        let columns = if columns.is_empty() {
            default_age = [json!({
                "name": "Age",
                "type": "date",
                "description": CREATION_TIMESTAMP_DESCRIPTION,
                "jsonPath": ".metadata.creationTimestamp",
            })];
            &default_age[..]
        } else {
            columns
        };
        let columns = columns
            .iter()
            .map(PrinterColumn::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { columns })
    }

    /// The `columnDefinitions` of the table.
    pub fn column_definitions(&self) -> Vec<Value> {
        let name = json!({
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": NAME_DESCRIPTION,
            "priority": 0,
        });
        std::iter::once(name)
            .chain(self.columns.iter().map(|c| c.definition.clone()))
            .collect()
    }

    /// The cells of one object's row.
    pub fn cells(&self, object: &Value, now: Timestamp) -> Vec<Value> {
        let name = format::text(object, "/metadata/name");
        std::iter::once(Value::String(name.to_owned()))
            .chain(self.columns.iter().map(|c| c.cell(object, now)))
            .collect()
    }

    /// Prints `objects` as a Table.
    pub fn to_table(&self, objects: &[Value], opts: &TableOptions) -> Value {
        let rows = objects
            .iter()
            .map(|obj| row_value(self.cells(obj, opts.now).into(), obj, opts.include_object))
            .collect();
        table_value(self.column_definitions(), rows, opts)
    }
}

/// Checks a printer column's `jsonPath` as upstream does: it starts with `.` and parses as
/// a JSONPath of kubectl's dialect.
pub fn validate_json_path(path: &str) -> Result<(), String> {
    parse_column_path(path).map(drop)
}

fn parse_column_path(path: &str) -> Result<JsonPath, String> {
    if path.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if !path.starts_with('.') {
        return Err("must be a simple json path starting with .".to_owned());
    }
    JsonPath::parse(path).map_err(|err| format!("unrecognized column definition {path:?}: {err}"))
}

impl PrinterColumn {
    fn new(column: &Value) -> Result<PrinterColumn, String> {
        let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or("");
        let json_path = text("jsonPath");
        let path = parse_column_path(json_path)?;
        let description = match text("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            given => given.to_owned(),
        };
        let priority = column.get("priority").and_then(Value::as_i64).unwrap_or(0);
        Ok(PrinterColumn {
            definition: json!({
                "name": text("name"),
                "type": text("type"),
                "format": text("format"),
                "description": description,
                "priority": priority,
            }),
            ty: text("type").to_owned(),
            path,
        })
    }

    /// The first value the path selects, typed as the column says; null when there is none,
    /// when evaluation fails, or when it has another type.
    fn cell(&self, object: &Value, now: Timestamp) -> Value {
        let Ok(found) = self.path.find(object) else {
            return Value::Null;
        };
        let Some(value) = found.first() else {
            return Value::Null;
        };
        match (self.ty.as_str(), value) {
            (_, Value::Null) => Value::Null,
            ("string", value) => printed(value).map_or(Value::Null, Value::String),
            ("integer", Value::Number(n)) => n
                .as_i64()
                // Upstream truncates floats (and u64 past i64 saturates like Go's conversion).
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, Value::from),
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
            ("boolean", Value::Bool(b)) => Value::Bool(*b),
            ("date", Value::String(s)) => Value::String(age(s, now)),
            _ => Value::Null,
        }
    }
}

/// A `date` cell: upstream prints the age (`ConvertToHumanReadableDateType`), `<unknown>` for
/// an empty timestamp and `<invalid>` for one that does not parse.
fn age(value: &str, now: Timestamp) -> String {
    if value.is_empty() {
        return "<unknown>".to_owned();
    }
    match format::timestamp(value) {
        Some(t) => format::human_duration(now.as_second() - t.as_second()),
        None => "<invalid>".to_owned(),
    }
}

/// How upstream's JSONPath printer writes a value: strings as they are, objects and arrays as
/// compact JSON, numbers and booleans as Go's `%v` does.
fn printed(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => go_float(f),
            _ => n.to_string(),
        }),
        Value::Array(_) | Value::Object(_) => serde_json::to_string(value).ok(),
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest
/// representation, in exponent form (`1e+06`, `1e-05`) when the exponent is below -4 or at
/// least 6. JSON integers never get here: they print as integers, as Go's int64 values do.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f.is_sign_positive() { "+Inf" } else { "-Inf" }.to_owned();
    }
    // Rust's `{:e}` is the shortest round-trip mantissa with its exponent.
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return f.to_string();
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        f.to_string()
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::IncludeObject;

    fn now() -> Timestamp {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    fn crontab() -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "cron-1", "creationTimestamp": "2024-05-01T11:55:00Z"},
            "spec": {
                "cronSpec": "* * * * */5",
                "replicas": 3,
                "ratio": 0.5,
                "paused": false,
                "image": {"name": "busybox", "tag": "1.36"},
                "containers": [{"name": "a"}, {"name": "b"}],
                "lastRun": "2024-05-01T10:00:00Z",
            },
            "status": {
                "conditions": [
                    {"type": "Synced", "status": "False"},
                    {"type": "Ready", "status": "True"},
                ],
            },
        })
    }

    fn column(name: &str, ty: &str, path: &str) -> Value {
        json!({"name": name, "type": ty, "jsonPath": path})
    }

    #[test]
    fn default_columns_are_name_and_age() {
        let printer = CustomPrinter::new(&[]).unwrap();
        let defs = printer.column_definitions();
        let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Age"]);
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[1]["type"], "date");
        assert_eq!(
            printer.cells(&crontab(), now()),
            [json!("cron-1"), json!("5m")]
        );
    }

    #[test]
    fn listed_columns_follow_name_in_order() {
        let printer = CustomPrinter::new(&[
            json!({"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec",
                   "description": "the schedule", "priority": 1}),
            column("Replicas", "integer", ".spec.replicas"),
        ])
        .unwrap();
        let defs = printer.column_definitions();
        assert_eq!(defs.len(), 3);
        assert_eq!(
            defs[1],
            json!({"name": "Spec", "type": "string", "format": "", "description": "the schedule", "priority": 1})
        );
        assert_eq!(
            defs[2]["description"],
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        assert_eq!(
            printer.cells(&crontab(), now()),
            [json!("cron-1"), json!("* * * * */5"), json!(3)]
        );
    }

    #[test]
    fn cells_are_typed_as_their_column() {
        let printer = CustomPrinter::new(&[
            column(
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            column("First", "string", ".spec.containers[*].name"),
            column("Image", "string", ".spec.image"),
            column("Replicas", "string", ".spec.replicas"),
            column("Ratio", "number", ".spec.ratio"),
            column("RatioInt", "integer", ".spec.ratio"),
            column("Paused", "boolean", ".spec.paused"),
            column("WrongType", "integer", ".spec.cronSpec"),
            column("Missing", "string", ".spec.nothing"),
            column("LastRun", "date", ".spec.lastRun"),
            column("BadDate", "date", ".spec.cronSpec"),
            column("OutOfBounds", "string", ".spec.containers[7].name"),
        ])
        .unwrap();
        assert_eq!(
            printer.cells(&crontab(), now()),
            [
                json!("cron-1"),
                json!("True"),
                json!("a"),
                json!("{\"name\":\"busybox\",\"tag\":\"1.36\"}"),
                json!("3"),
                json!(0.5),
                json!(0),
                json!(false),
                Value::Null,
                Value::Null,
                json!("120m"),
                json!("<invalid>"),
                Value::Null,
            ]
        );
    }

    #[test]
    fn bad_json_paths_are_refused() {
        assert!(CustomPrinter::new(&[column("X", "string", "spec.replicas")]).is_err());
        assert!(CustomPrinter::new(&[column("X", "string", "")]).is_err());
        assert!(CustomPrinter::new(&[column("X", "string", ".spec[")]).is_err());
        assert!(validate_json_path(".spec.replicas").is_ok());
    }

    #[test]
    fn table_carries_rows_and_list_metadata() {
        let printer =
            CustomPrinter::new(&[column("Replicas", "integer", ".spec.replicas")]).unwrap();
        let mut opts = TableOptions::at(now());
        opts.resource_version = Some("42".into());
        opts.include_object = IncludeObject::None;
        let table = printer.to_table(&[crontab()], &opts);
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["metadata"]["resourceVersion"], "42");
        assert_eq!(table["rows"][0]["cells"], json!(["cron-1", 3]));
        assert!(table["rows"][0].get("object").is_none());
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1000000.0), "1e+06");
        assert_eq!(go_float(123456789.5), "1.234567895e+08");
    }
}
