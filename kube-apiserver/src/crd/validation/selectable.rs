//! `selectableFields`: at most eight distinct paths to string, boolean or integer fields of
//! the version's schema, outside of metadata.

use super::str_of;
use crate::crd::schema::Structural;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;

const MAX_SELECTABLE_FIELDS: usize = 8;

/// Checks a version's (or the hoisted) `selectableFields` against its schema.
pub(super) fn validate_selectable_fields(
    fields: &[Value],
    schema: Option<&Value>,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if fields.is_empty() {
        return errs;
    }
    let Some(schema) = schema else {
        errs.push(FieldError::invalid(
            path,
            "",
            "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
        ));
        return errs;
    };
    // A schema that is not structural has its own errors; its fields cannot be judged.
    let Ok(structural) = Structural::new(schema) else {
        return errs;
    };
    let mut unique: Vec<&str> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = path.index(i).child("jsonPath");
        let json_path = str_of(field.get("jsonPath"));
        if json_path.is_empty() {
            errs.push(FieldError::required(&at, ""));
            continue;
        }
        let kind = match structural.field_type(json_path) {
            Ok(kind) => kind,
            Err(why) => {
                errs.push(FieldError::invalid(
                    &at,
                    json_path,
                    format!("is an invalid path: {why}"),
                ));
                continue;
            }
        };
        let canonical = json_path.trim_end_matches('.');
        if canonical == ".metadata" || canonical.starts_with(".metadata.") {
            errs.push(FieldError::invalid(
                &at,
                json_path,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(kind, "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &at,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&canonical) {
            errs.push(FieldError::duplicate(&at, json_path));
        } else {
            unique.push(canonical);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            path,
            unique.len(),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    errs
}
