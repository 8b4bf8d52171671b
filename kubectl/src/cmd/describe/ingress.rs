//! `describeIngressV1`: the default backend, TLS, the rules table and each service backend's
//! ready endpoints (from the service's EndpointSlices, as kubectl 1.33 looks them up).

use super::core::format_endpoint_slices;
use super::events;
use super::writer::{PrefixWriter, annotations_multiline, arr, int, labels_multiline, obj, s};
use crate::errors::ApiError;
use crate::factory::Factory;
use serde_json::Value;
use std::collections::BTreeMap;

/// A backend service as the describer found it: the service and its slices, or the error
/// text upstream prints in place of the endpoints.
pub type Lookup = BTreeMap<String, Result<(Value, Vec<Value>), String>>;

/// Fetches every service the ingress names, each once, in the order upstream asks (the
/// service, then its slices) so the first failure is the one reported.
pub async fn lookup(factory: &Factory, ing: &Value) -> Lookup {
    let namespace = s(ing, "/metadata/namespace");
    let mut backends: Vec<&Value> = ing.pointer("/spec/defaultBackend").into_iter().collect();
    for rule in arr(ing, "/spec/rules") {
        backends.extend(
            arr(rule, "/http/paths")
                .iter()
                .filter_map(|p| p.get("backend")),
        );
    }
    let names = backends
        .iter()
        .filter_map(|b| b.pointer("/service/name").and_then(Value::as_str));
    let mut found = Lookup::new();
    for name in names {
        if found.contains_key(name) {
            continue;
        }
        let service = factory
            .get(&format!("/api/v1/namespaces/{namespace}/services/{name}"))
            .await;
        let result = match service {
            Err(err) => Err(message(&err)),
            Ok(service) => factory
                .get(&format!(
                    "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D{name}"
                ))
                .await
                .map(|list| (service, arr(&list, "/items").to_vec()))
                .map_err(|err| message(&err)),
        };
        found.insert(name.to_owned(), result);
    }
    found
}

fn message(err: &anyhow::Error) -> String {
    match err.downcast_ref::<ApiError>() {
        Some(api) => api.message.clone(),
        None => format!("{err:#}"),
    }
}

/// `describeIngressV1`.
pub fn describe(ing: &Value, found: &Lookup, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(ing, "/metadata/name")));
    labels_multiline(&mut w, "", "Labels", obj(ing, "/metadata/labels"));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(ing, "/metadata/namespace")),
    );
    w.write(0, &format!("Address:\t{}\n", addresses(ing)));
    let class = ing
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    w.write(0, &format!("Ingress Class:\t{class}\n"));
    let default = match ing
        .pointer("/spec/defaultBackend")
        .filter(|v| v.is_object())
    {
        Some(b) => backend(b, found),
        None => "<default>".to_owned(),
    };
    w.write(0, &format!("Default backend:\t{default}\n"));
    let tls = arr(ing, "/spec/tls");
    if !tls.is_empty() {
        w.write(0, "TLS:\n");
        for t in tls {
            let hosts: Vec<&str> = arr(t, "/hosts").iter().filter_map(Value::as_str).collect();
            let secret = s(t, "/secretName");
            if secret.is_empty() {
                w.write(1, &format!("SNI routes {}\n", hosts.join(",")));
            } else {
                w.write(1, &format!("{secret} terminates {}\n", hosts.join(",")));
            }
        }
    }
    w.write(0, "Rules:\n  Host\tPath\tBackends\n");
    w.write(1, "----\t----\t--------\n");
    let mut count = 0;
    for rule in arr(ing, "/spec/rules") {
        let Some(http) = rule.get("http").filter(|v| v.is_object()) else {
            continue;
        };
        count += 1;
        let host = match s(rule, "/host") {
            "" => "*",
            host => host,
        };
        w.write(1, &format!("{host}\t\n"));
        for path in arr(http, "/paths") {
            let text = path
                .get("backend")
                .map(|b| backend(b, found))
                .unwrap_or_default();
            w.write(2, &format!("\t{} \t{text}\n", s(path, "/path")));
        }
    }
    if count == 0 {
        w.write(1, &format!("*\t*\t{default}\n"));
    }
    annotations_multiline(&mut w, "Annotations", obj(ing, "/metadata/annotations"));
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `ingressLoadBalancerStatusStringerV1` (wide): the distinct IPs or hostnames, sorted.
fn addresses(ing: &Value) -> String {
    let mut all: Vec<&str> = arr(ing, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| match s(i, "/ip") {
            "" => s(i, "/hostname"),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    all.sort();
    all.dedup();
    all.join(",")
}

/// `describeBackendV1`: `name:port (endpoints)` for a service, the reference for a resource.
fn backend(b: &Value, found: &Lookup) -> String {
    if let Some(service) = b.get("service").filter(|v| v.is_object()) {
        let name = s(service, "/name");
        let number = int(service, "/port/number");
        let port_name = s(service, "/port/name");
        let port = if number != 0 {
            number.to_string()
        } else {
            port_name.to_owned()
        };
        let label = format!("{name}:{port}");
        return match found.get(name) {
            None => label,
            Some(Err(err)) => format!("{label} (<error: {err}>)"),
            Some(Ok((svc, slices))) => {
                // The last service port matching by number or name wins, as upstream's loop.
                let mut matched = "";
                for sp in arr(svc, "/spec/ports") {
                    if (number != 0 && number == int(sp, "/port"))
                        || (!port_name.is_empty() && port_name == s(sp, "/name"))
                    {
                        matched = s(sp, "/name");
                    }
                }
                format!("{label} ({})", format_endpoint_slices(slices, matched))
            }
        };
    }
    if let Some(r) = b.get("resource").filter(|v| v.is_object()) {
        let group = r
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        return format!(
            "APIGroup: {group}, Kind: {}, Name: {}",
            s(r, "/kind"),
            s(r, "/name")
        );
    }
    String::new()
}
