//! Namespaces with their resource quotas and limit ranges, and those two kinds on their own.

use super::writer::{
    PrefixWriter, annotations_multiline, arr, labels_multiline, obj, rfc1123z, s, scalar,
};
use serde_json::Value;

/// `describeNamespace`; `None` lists mean the server does not serve them.
pub fn namespace(ns: &Value, quotas: Option<&[Value]>, limits: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(ns, "/metadata/name")));
    labels_multiline(&mut w, "", "Labels", obj(ns, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(ns, "/metadata/annotations"));
    w.write(0, &format!("Status:\t{}\n", s(ns, "/status/phase")));
    let conditions = arr(ns, "/status/conditions");
    if !conditions.is_empty() {
        w.write(0, "Conditions:\n");
        w.write(1, "Type\tStatus\tLastTransitionTime\tReason\tMessage\n");
        w.write(1, "----\t------\t------------------\t------\t-------\n");
        for c in conditions {
            w.write(
                1,
                &format!(
                    "{}\t{}\t{}\t{}\t{}\n",
                    s(c, "/type"),
                    s(c, "/status"),
                    rfc1123z(s(c, "/lastTransitionTime")),
                    s(c, "/reason"),
                    s(c, "/message")
                ),
            );
        }
    }
    if let Some(quotas) = quotas {
        w.write(0, "\n");
        resource_quotas(&mut w, quotas);
    }
    if let Some(limits) = limits {
        w.write(0, "\n");
        limit_ranges(&mut w, limits);
    }
    w.finish()
}

fn resource_quotas(w: &mut PrefixWriter, quotas: &[Value]) {
    if quotas.is_empty() {
        w.write(0, "No resource quota.\n");
        return;
    }
    let mut sorted: Vec<&Value> = quotas.iter().collect();
    sorted.sort_by(|a, b| s(a, "/metadata/name").cmp(s(b, "/metadata/name")));
    w.write(0, "Resource Quotas\n");
    for q in sorted {
        w.write(1, &format!("Name:\t{}\n", s(q, "/metadata/name")));
        quota_table(w, q, 1, "* ", "---");
    }
}

/// A quota's scopes and its Resource/Used/Hard table, at `level`. Upstream's namespace and
/// quota describers differ only in the scope bullet and the width of the dashes.
fn quota_table(w: &mut PrefixWriter, q: &Value, level: usize, bullet: &str, dashes: &str) {
    let mut scopes: Vec<String> = arr(q, "/spec/scopes")
        .iter()
        .map(|v| scalar(Some(v)))
        .collect();
    if !scopes.is_empty() {
        scopes.sort();
        w.write(level, &format!("Scopes:\t{}\n", scopes.join(", ")));
        for scope in &scopes {
            if let Some(help) = scope_help(scope) {
                w.write(level, &format!("{bullet}{help}\n"));
            }
        }
    }
    w.write(level, "Resource\tUsed\tHard\n");
    w.write(level, &format!("--------\t{dashes}\t{dashes}\n"));
    let hard = obj(q, "/status/hard");
    let mut names: Vec<&String> = hard.map(|h| h.keys().collect()).unwrap_or_default();
    names.sort();
    for name in names {
        let used = q
            .pointer(&format!("/status/used/{}", name.replace('/', "~1")))
            .map(|u| scalar(Some(u)))
            .unwrap_or_else(|| "0".to_owned());
        let limit = scalar(hard.and_then(|h| h.get(name)));
        w.write(level, &format!("{name}\t{used}\t{limit}\n"));
    }
}

fn scope_help(scope: &str) -> Option<&'static str> {
    Some(match scope {
        "Terminating" => {
            "Matches all pods that have an active deadline. These pods have a limited lifespan on a node before being actively terminated by the system."
        }
        "NotTerminating" => {
            "Matches all pods that do not have an active deadline. These pods usually include long running pods whose container command is not expected to terminate."
        }
        "BestEffort" => {
            "Matches all pods that do not have resource requirements set. These pods have a best effort quality of service."
        }
        "NotBestEffort" => {
            "Matches all pods that have at least one resource requirement set. These pods have a burstable or guaranteed quality of service."
        }
        _ => return None,
    })
}

fn limit_ranges(w: &mut PrefixWriter, limits: &[Value]) {
    if limits.is_empty() {
        w.write(0, "No LimitRange resource.\n");
        return;
    }
    w.write(0, "Resource Limits\n Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n");
    w.write(
        0,
        " ----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n",
    );
    for lr in limits {
        limit_range_rows(w, lr, " ");
    }
}

/// `describeLimitRangeSpec`: one row per limit item and resource.
fn limit_range_rows(w: &mut PrefixWriter, lr: &Value, prefix: &str) {
    for item in arr(lr, "/spec/limits") {
        let fields = [
            "min",
            "max",
            "defaultRequest",
            "default",
            "maxLimitRequestRatio",
        ];
        // Upstream walks a Go map here, so its row order is unspecified; sorted is one of them.
        let mut names: Vec<String> = fields
            .iter()
            .filter_map(|f| obj(item, &format!("/{f}")))
            .flat_map(|m| m.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            let cell = |f: &str| {
                item.pointer(&format!("/{f}/{name}"))
                    .map(|v| scalar(Some(v)))
                    .unwrap_or_else(|| "-".to_owned())
            };
            w.write(
                0,
                &format!(
                    "{prefix}{}\t{name}\t{}\t{}\t{}\t{}\t{}\n",
                    s(item, "/type"),
                    cell("min"),
                    cell("max"),
                    cell("defaultRequest"),
                    cell("default"),
                    cell("maxLimitRequestRatio")
                ),
            );
        }
    }
}

/// `describeQuota`.
pub fn resource_quota(q: &Value) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(q, "/metadata/name")));
    w.write(0, &format!("Namespace:\t{}\n", s(q, "/metadata/namespace")));
    quota_table(&mut w, q, 0, " * ", "----");
    w.finish()
}

/// `describeLimitRange`.
pub fn limit_range(lr: &Value) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(lr, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(lr, "/metadata/namespace")),
    );
    w.write(
        0,
        "Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n",
    );
    w.write(
        0,
        "----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n",
    );
    limit_range_rows(&mut w, lr, "");
    w.finish()
}
