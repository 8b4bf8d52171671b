//! `subresources.scale` paths and `additionalPrinterColumns`.

use super::{present, str_of};
use crate::tables::custom::CustomPrinter;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;

const PRINTER_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

const PRINTER_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];

pub(super) fn validate_subresources(subresources: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(scale) = subresources.and_then(|s| present(s.get("scale"))) else {
        return errs;
    };
    for (key, under) in [
        ("specReplicasPath", ".spec."),
        ("statusReplicasPath", ".status."),
    ] {
        let at = path.child("scale").child(key);
        let value = str_of(scale.get(key));
        if value.is_empty() {
            errs.push(FieldError::required(&at, ""));
            continue;
        }
        let simple = simple_json_path(value, &at);
        if !simple.is_empty() {
            errs.append(simple);
        } else if !value.starts_with(under) {
            let dir = under.trim_matches('.');
            errs.push(FieldError::invalid(
                &at,
                value,
                format!("should be a json path under .{dir}"),
            ));
        }
    }
    let selector = str_of(scale.get("labelSelectorPath"));
    if !selector.is_empty() {
        let at = path.child("scale").child("labelSelectorPath");
        let simple = simple_json_path(selector, &at);
        if !simple.is_empty() {
            errs.append(simple);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &at,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

fn simple_json_path(s: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if s.is_empty() {
        errs.push(FieldError::invalid(path, s, "must not be empty"));
    } else if !s.starts_with('.') {
        errs.push(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ));
    }
    errs
}

pub(super) fn validate_columns(columns: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(columns) = columns.and_then(Value::as_array) else {
        return errs;
    };
    for (i, col) in columns.iter().enumerate() {
        let at = path.index(i);
        if str_of(col.get("name")).is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        }
        let kind = str_of(col.get("type"));
        let types = format!("must be one of {}", PRINTER_TYPES.join(","));
        if kind.is_empty() {
            errs.push(FieldError::required(&at.child("type"), types));
        } else if !PRINTER_TYPES.contains(&kind) {
            errs.push(FieldError::invalid(&at.child("type"), kind, types));
        }
        let format = str_of(col.get("format"));
        if !format.is_empty() && !PRINTER_FORMATS.contains(&format) {
            errs.push(FieldError::invalid(
                &at.child("format"),
                format,
                format!("must be one of {}", PRINTER_FORMATS.join(",")),
            ));
        }
        let json_path = str_of(col.get("jsonPath"));
        let json_path_at = at.child("JSONPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(&json_path_at, ""));
            continue;
        }
        let simple = simple_json_path(json_path, &json_path_at);
        if !simple.is_empty() {
            errs.append(simple);
        } else if let Err(msg) = CustomPrinter::new(std::slice::from_ref(col)) {
            errs.push(FieldError::invalid(&json_path_at, json_path, msg));
        }
    }
    errs
}
