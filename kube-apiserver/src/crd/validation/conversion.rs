//! `spec.conversion`: the strategy, and for webhooks the client config and the
//! ConversionReview versions (upstream's paths use the internal field names,
//! `webhookClientConfig` and `conversionReviewVersions`).

use super::{enum_string, present, str_of};
use api_types::validation::names::{is_dns1035_label, is_valid_port_num};
use api_types::validation::{BadValue, ErrorList, FieldError, FieldPath};
use serde_json::Value;

pub(super) fn validate_conversion(
    conversion: Option<&Value>,
    preserve: bool,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(conversion) = present(conversion) else {
        return errs;
    };
    let strategy = str_of(conversion.get("strategy"));
    if !strategy.is_empty() && strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            &path.child("strategy"),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs.append(enum_string(
        &path.child("strategy"),
        strategy,
        &["None", "Webhook"],
    ));
    let webhook = present(conversion.get("webhook"));
    let client_config = webhook.and_then(|w| present(w.get("clientConfig")));
    let review_versions = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array);
    let cc_path = path.child("webhookClientConfig");
    let crv_path = path.child("conversionReviewVersions");
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(FieldError::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => errs.append(client_config_errors(cc, &cc_path)),
        }
        errs.append(review_version_errors(
            review_versions.map(Vec::as_slice).unwrap_or_default(),
            &crv_path,
        ));
    } else {
        let forbidden = "should not be set when strategy is not set to Webhook";
        if client_config.is_some() {
            errs.push(FieldError::forbidden(&cc_path, forbidden));
        }
        if review_versions.is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(&crv_path, forbidden));
        }
    }
    errs
}

fn client_config_errors(cc: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let url = present(cc.get("url")).and_then(Value::as_str);
    let service = present(cc.get("service"));
    match (url, service) {
        (Some(url), None) => errs.append(webhook_url_errors(url, &path.child("url"))),
        (None, Some(service)) => {
            let at = path.child("service");
            if str_of(service.get("name")).is_empty() {
                errs.push(FieldError::required(
                    &at.child("name"),
                    "service name is required",
                ));
            }
            if str_of(service.get("namespace")).is_empty() {
                errs.push(FieldError::required(
                    &at.child("namespace"),
                    "service namespace is required",
                ));
            }
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            let problems = is_valid_port_num(i32::try_from(port).unwrap_or(0));
            if !problems.is_empty() {
                errs.push(FieldError::invalid(
                    &at.child("port"),
                    port,
                    format!("port is not valid: {}", problems.join(", ")),
                ));
            }
            let p = str_of(service.get("path"));
            if p == "//" {
                errs.push(FieldError::invalid(
                    &at.child("path"),
                    p,
                    "segment[0] may not be empty",
                ));
            } else if !p.is_empty() && p != "/" && !p.starts_with('/') {
                errs.push(FieldError::invalid(
                    &at.child("path"),
                    p,
                    "must start with a '/'",
                ));
            }
        }
        _ => errs.push(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
    }
    errs
}

fn webhook_url_errors(url: &str, path: &FieldPath) -> ErrorList {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = ErrorList::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or_default();
    let (user, host) = authority
        .rsplit_once('@')
        .map_or(("", authority), |(u, h)| (u, h));
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if authority.contains('@') {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if rest.contains('#') {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

fn review_version_errors(versions: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if seen.contains(&v) {
            errs.push(FieldError::invalid(&path.index(i), v, "duplicate version"));
            continue;
        }
        seen.push(v);
        for problem in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), v, problem));
        }
        accepted |= v == "v1" || v == "v1beta1";
    }
    if !accepted {
        errs.push(FieldError::invalid(
            path,
            BadValue::string_list(&seen),
            "must include at least one of v1, v1beta1",
        ));
    }
    errs
}
