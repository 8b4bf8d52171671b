//! Validation and defaulting of CustomResourceDefinition objects (`apiextensions.k8s.io/v1`),
//! as upstream's `apis/apiextensions/validation` sees them after conversion to the internal
//! version: per-version schemas, subresources and printer columns that are identical in every
//! version are checked (and their errors pathed) at the top level (`spec.validation`,
//! `spec.subresources`, `spec.additionalPrinterColumns`), as upstream hoists them.

mod conversion;
mod selectable;
mod subresources;

use super::cel::CelValidator;
use super::schema::Structural;
use api_types::validation::names::{is_dns1035_label, is_dns1123_subdomain};
use api_types::validation::{
    BadValue, ErrorList, FIELD_IMMUTABLE_ERROR_MSG, FieldError, FieldPath,
};
use conversion::validate_conversion;
use selectable::validate_selectable_fields;
use serde_json::{Map, Value, json};
use subresources::{validate_columns, validate_subresources};

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
const ROOT_FIELDS_WITH_STATUS: &[(&str, &str)] = &[
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("required", "Required"),
    ("items", "Items"),
    ("properties", "Properties"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-validations", "XValidations"),
];

/// Applies upstream's v1 defaults: `names.singular` (lower-case kind), `names.listKind`
/// (`<kind>List`), `conversion.strategy: None`, a conversion service's port 443, and the
/// versions' `served`/`storage` flags written out.
pub fn default_crd(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if str_of(names.get("singular")).is_empty() {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if str_of(names.get("listKind")).is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut().filter_map(Value::as_object_mut) {
            for flag in ["served", "storage"] {
                v.entry(flag).or_insert(json!(false));
            }
        }
    }
}

/// Validates a CRD on create (`old` None) or update, as upstream's
/// `ValidateCustomResourceDefinition(Update)` (the generic object-meta checks are the
/// registry's).
pub fn validate_crd(new: &Value, old: Option<&Value>) -> ErrorList {
    let empty = Value::Object(Map::new());
    let spec = new.get("spec").filter(|s| s.is_object()).unwrap_or(&empty);
    let mut errs = ErrorList::new();
    if old.is_none() {
        errs.append(name_matches(new, spec));
    }
    errs.append(validate_spec(spec));
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&empty);
        errs.append(immutable_fields(spec, old_spec, is_established(old)));
    }
    let status = new.get("status").unwrap_or(&empty);
    errs.append(validate_names(
        status.get("acceptedNames").unwrap_or(&empty),
        &FieldPath::new("status").child("acceptedNames"),
    ));
    errs.append(stored_versions(status, spec));
    errs.append(api_approval(new, old));
    errs.append(preserve_unknown_fields(spec, old));
    errs
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

fn versions(spec: &Value) -> &[Value] {
    spec.get("versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn array_of(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn name_matches(crd: &Value, spec: &Value) -> ErrorList {
    let name = str_of(crd.get("metadata").and_then(|m| m.get("name")));
    let plural = str_of(spec.get("names").and_then(|n| n.get("plural")));
    let group = str_of(spec.get("group"));
    let mut errs = ErrorList::new();
    if !name.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            name,
            r#"must be spec.names.plural+"."+spec.group"#,
        ));
    }
    errs
}

/// Per-version fields that are the same (and set) in every version: upstream moves them to
/// the top level before validating.
struct Hoisted<'a> {
    validation: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: Option<&'a Value>,
    selectable: Option<&'a Value>,
}

fn hoist<'a>(versions: &'a [Value]) -> Hoisted<'a> {
    let same = |key: &str, set: fn(&Value) -> bool| -> Option<&'a Value> {
        let first = versions.first()?.get(key)?;
        versions
            .iter()
            .all(|v| v.get(key).is_some_and(|x| set(x) && x == first))
            .then_some(first)
    };
    let validation = same("schema", |v| !v.is_null());
    Hoisted {
        validation,
        subresources: same("subresources", |v| !v.is_null()),
        columns: same("additionalPrinterColumns", |v| {
            v.as_array().is_some_and(|a| !a.is_empty())
        }),
        // Upstream moves selectable fields up only together with the schema.
        selectable: validation.and_then(|_| {
            same("selectableFields", |v| {
                v.as_array().is_some_and(|a| !a.is_empty())
            })
        }),
    }
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources
        .and_then(|s| s.get("status"))
        .is_some_and(|s| !s.is_null())
}

fn validate_spec(spec: &Value) -> ErrorList {
    let path = FieldPath::new("spec");
    let mut errs = ErrorList::new();

    let group = str_of(spec.get("group"));
    if group.is_empty() {
        errs.push(FieldError::required(&path.child("group"), ""));
    } else {
        let problems = is_dns1123_subdomain(group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("group"),
                group,
                problems.join(","),
            ));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                &path.child("group"),
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    errs.append(enum_string(
        &path.child("scope"),
        str_of(spec.get("scope")),
        &["Cluster", "Namespaced"],
    ));

    let versions = versions(spec);
    let hoisted = hoist(versions);
    let per_version = |v: &'_ Value, key: &str, top: Option<&Value>| -> bool {
        top.is_none() && present(v.get(key)).is_some()
    };
    let top_schema = hoisted
        .validation
        .and_then(|v| present(v.get("openAPIV3Schema")));
    if top_schema.is_none() {
        for (i, v) in versions.iter().enumerate() {
            let has = per_version(v, "schema", hoisted.validation)
                && present(v["schema"].get("openAPIV3Schema")).is_some();
            if !has {
                errs.push(FieldError::required(
                    &path
                        .child("versions")
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let preserve = spec
        .get("preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if preserve
        && versions
            .iter()
            .any(|v| schema_has_defaults(v.get("schema")))
    {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut names: Vec<&str> = Vec::new();
    let mut unique = true;
    let any_status = has_status(hoisted.subresources)
        || versions.iter().any(|v| has_status(v.get("subresources")));
    for (i, v) in versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        if v.get("storage").and_then(Value::as_bool).unwrap_or(false) {
            storage += 1;
        }
        let name = str_of(v.get("name"));
        if names.contains(&name) {
            unique = false;
        }
        names.push(name);
        let problems = is_dns1035_label(name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &vpath.child("name"),
                name,
                problems.join(","),
            ));
        }
        let subresources = if hoisted.subresources.is_some() {
            hoisted.subresources
        } else {
            present(v.get("subresources"))
        };
        errs.append(deprecation_warning(v, &vpath));
        if hoisted.validation.is_none()
            && let Some(schema) = present(v.get("schema"))
        {
            errs.append(validate_validation(
                schema,
                has_status(subresources),
                &vpath.child("schema"),
            ));
        }
        if hoisted.subresources.is_none() {
            errs.append(validate_subresources(
                present(v.get("subresources")),
                &vpath.child("subresources"),
            ));
        }
        if hoisted.columns.is_none() {
            errs.append(validate_columns(
                v.get("additionalPrinterColumns"),
                &vpath.child("additionalPrinterColumns"),
            ));
        }
        if hoisted.selectable.is_none() {
            // A hoisted schema leaves the version without one, as upstream sees it.
            let schema = present(v.get("schema"))
                .filter(|_| hoisted.validation.is_none())
                .and_then(|s| present(s.get("openAPIV3Schema")));
            errs.append(validate_selectable_fields(
                array_of(v.get("selectableFields")),
                schema,
                &vpath.child("selectableFields"),
            ));
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            BadValue::json(versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            BadValue::json(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(first) = versions.first() {
        // Upstream's internal `spec.version` is the first version's name.
        let name = str_of(first.get("name"));
        let problems = is_dns1035_label(name);
        if !name.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("version"),
                name,
                problems.join(","),
            ));
        }
    }

    let empty = Value::Object(Map::new());
    let names_value = spec.get("names").unwrap_or(&empty);
    for key in ["plural", "singular", "kind", "listKind"] {
        if str_of(names_value.get(key)).is_empty() {
            errs.push(FieldError::required(&path.child("names").child(key), ""));
        }
    }
    errs.append(validate_names(names_value, &path.child("names")));
    if let Some(validation) = hoisted.validation {
        errs.append(validate_validation(
            validation,
            any_status,
            &path.child("validation"),
        ));
    }
    errs.append(validate_subresources(
        hoisted.subresources,
        &path.child("subresources"),
    ));
    errs.append(validate_columns(
        hoisted.columns,
        &path.child("additionalPrinterColumns"),
    ));
    errs.append(validate_selectable_fields(
        array_of(hoisted.selectable),
        top_schema,
        &path.child("selectableFields"),
    ));
    errs.append(validate_conversion(
        spec.get("conversion"),
        preserve,
        &path.child("conversion"),
    ));
    errs
}

fn enum_string(path: &FieldPath, value: &str, accepted: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if !accepted.contains(&value) {
        errs.push(FieldError::not_supported(path, value, accepted));
    }
    errs
}

fn schema_has_defaults(schema: Option<&Value>) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(m) => {
                present(m.get("default")).is_some()
                    || m.iter()
                        .any(|(k, v)| k != "default" && k != "enum" && k != "example" && walk(v))
            }
            Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    schema
        .and_then(|s| s.get("openAPIV3Schema"))
        .is_some_and(walk)
}

fn deprecation_warning(version: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(warning) = present(version.get("deprecationWarning")).and_then(Value::as_str) else {
        return errs;
    };
    let at = path.child("deprecationWarning");
    let deprecated = version
        .get("deprecated")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut problems = Vec::new();
    if !deprecated {
        problems.push("can only be set for deprecated versions".to_string());
    } else {
        if warning.len() > 256 {
            problems.push("must be <= 256 characters long".into());
        }
        if warning.is_empty() {
            problems.push("must not be an empty string".into());
        }
        if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
            problems.push(format!(
                "must only contain printable UTF-8 characters; control character found at index {i}"
            ));
        }
    }
    for p in problems {
        errs.push(FieldError::invalid(&at, warning, p));
    }
    errs
}

/// `spec.versions[*].schema` (or the hoisted `spec.validation`).
fn validate_validation(validation: &Value, status_enabled: bool, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(schema) = present(validation.get("openAPIV3Schema")) else {
        return errs;
    };
    let schema_path = path.child("openAPIV3Schema");
    if status_enabled && let Some(root) = schema.as_object() {
        errs.append(root_with_status(root, schema, &schema_path));
    }
    match Structural::new_at(schema, &schema_path) {
        Ok(_) => {
            if let Err(cel) = CelValidator::compile(schema, &schema_path) {
                errs.append(cel);
            }
        }
        Err(structural) => errs.append(structural),
    }
    errs
}

/// With the status subresource only `type: object` and value constraints may sit at the
/// root, so that `properties.status` carries everything about status.
fn root_with_status(root: &Map<String, Value>, schema: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let zero = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    };
    for (key, value) in root.iter().filter(|(_, v)| !zero(v)) {
        if key == "type" {
            if value.as_str() != Some("object") {
                errs.push(FieldError::invalid(
                    &path.child("type"),
                    BadValue::from(value),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
                break;
            }
            continue;
        }
        if !ROOT_FIELDS_WITH_STATUS.iter().any(|(json, _)| json == key) {
            let names: Vec<&str> = ROOT_FIELDS_WITH_STATUS.iter().map(|(_, go)| *go).collect();
            errs.push(FieldError::invalid(
                path,
                BadValue::json(schema),
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    names.join(" ")
                ),
            ));
            break;
        }
    }
    errs
}

/// `spec.names` and `status.acceptedNames`.
fn validate_names(names: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in ["plural", "singular"] {
        let value = str_of(names.get(key));
        let problems = is_dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                problems.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = str_of(names.get(key));
        let problems = is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    for (key, list) in [
        ("shortNames", names.get("shortNames")),
        ("categories", names.get("categories")),
    ] {
        for (i, item) in list
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let value = item.as_str().unwrap_or_default();
            let problems = is_dns1035_label(value);
            if !problems.is_empty() {
                errs.push(FieldError::invalid(
                    &path.child(key).index(i),
                    value,
                    problems.join(","),
                ));
            }
        }
    }
    let kind = str_of(names.get("kind"));
    if !kind.is_empty() && kind == str_of(names.get("listKind")) {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    errs
}

fn is_established(crd: &Value) -> bool {
    crd.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|conds| {
            conds.iter().any(|c| {
                str_of(c.get("type")) == "Established" && str_of(c.get("status")) == "True"
            })
        })
}

fn immutable_fields(spec: &Value, old_spec: &Value, established: bool) -> ErrorList {
    let path = FieldPath::new("spec");
    let mut errs = ErrorList::new();
    let mut check = |at: FieldPath, new: &str, old: &str| {
        if new != old {
            errs.push(FieldError::invalid(&at, new, FIELD_IMMUTABLE_ERROR_MSG));
        }
    };
    let name = |s: &Value, key: &str| str_of(s.get("names").and_then(|n| n.get(key))).to_string();
    if established {
        // These decide where objects are stored once the CRD serves.
        check(
            path.child("scope"),
            str_of(spec.get("scope")),
            str_of(old_spec.get("scope")),
        );
        check(
            path.child("names").child("kind"),
            &name(spec, "kind"),
            &name(old_spec, "kind"),
        );
    }
    check(
        path.child("group"),
        str_of(spec.get("group")),
        str_of(old_spec.get("group")),
    );
    check(
        path.child("names").child("plural"),
        &name(spec, "plural"),
        &name(old_spec, "plural"),
    );
    errs
}

/// `status.storedVersions` as upstream's strategy leaves it before validating: the current
/// storage version is added to what was stored; every listed version must still be served.
fn stored_versions(status: &Value, spec: &Value) -> ErrorList {
    let path = FieldPath::new("status").child("storedVersions");
    let mut stored: Vec<String> = status
        .get("storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let versions = versions(spec);
    if let Some(storage) = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
        .map(|v| str_of(v.get("name")).to_string())
        && !stored.contains(&storage)
    {
        stored.push(storage);
    }
    let mut errs = ErrorList::new();
    if stored.is_empty() {
        errs.push(FieldError::invalid(
            &path,
            BadValue::string_list(&stored),
            "must have at least one stored version",
        ));
        return errs;
    }
    for (i, v) in stored.iter().enumerate() {
        if !versions.iter().any(|x| str_of(x.get("name")) == v) {
            errs.push(FieldError::invalid(
                &path.index(i),
                v.as_str(),
                format!(
                    "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
                ),
            ));
        }
    }
    errs
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(PartialEq, Eq)]
enum Approval {
    Missing,
    Bypassed,
    Approved,
    Invalid,
}

fn approval(crd: &Value) -> (Approval, Option<&str>) {
    let annotation = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str);
    let state = match annotation {
        None => Approval::Missing,
        Some(a) if a.starts_with("unapproved") => Approval::Bypassed,
        Some(a) if is_request_uri(a) => Approval::Approved,
        Some(_) => Approval::Invalid,
    };
    (state, annotation)
}

/// `url.ParseRequestURI`: an absolute URI (scheme present) or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.starts_with('/') {
        return true;
    }
    s.split_once(':').is_some_and(|(scheme, _)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

fn api_approval(new: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let group = str_of(new.get("spec").and_then(|s| s.get("group")));
    if !is_protected_group(group) {
        return errs;
    }
    let (state, value) = approval(new);
    if old.is_some_and(|old| approval(old).0 == state) {
        return errs;
    }
    let at = FieldPath::new("metadata")
        .child("annotations")
        .key(APPROVAL_ANNOTATION);
    match state {
        Approval::Missing => errs.push(FieldError::required(
            &at,
            format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Approval::Invalid => errs.push(FieldError::invalid(
            &at,
            value.unwrap_or_default(),
            format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Approval::Approved | Approval::Bypassed => {}
    }
    errs
}

fn preserve_unknown_fields(spec: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let set = |s: Option<&Value>| {
        s.and_then(|s| s.get("preserveUnknownFields"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    if old.is_some_and(|o| set(o.get("spec"))) {
        return errs;
    }
    if set(Some(spec)) {
        errs.push(FieldError::invalid(
            &FieldPath::new("spec").child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
