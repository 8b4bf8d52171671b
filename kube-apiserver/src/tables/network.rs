//! Networking: ingresses, networkpolicies, endpointslices.

use jiff::Timestamp;
use serde_json::Value;

use super::columns::{AGE, Column, NAME, col};
use super::core::load_balancer_ingress;
use super::format::{age, format_label_selector, list, text};
use super::{Printer, Row, RowFn};

const INGRESS: &[Column] = &[
    NAME,
    col("Class", "string", "The name of the IngressClass resource."),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against.",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer.",
    ),
    col("Ports", "string", "Ports of TLS configurations that open."),
    AGE,
];

const NETWORK_POLICY: &[Column] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.",
    ),
    AGE,
];

const ENDPOINT_SLICE: &[Column] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "Type of address carried by this EndpointSlice.",
    ),
    col("Ports", "string", "Network ports exposed by the endpoints."),
    col("Endpoints", "string", "Addresses of the endpoints."),
    AGE,
];

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    let (columns, row): (&'static [Column], RowFn) = match (group, resource) {
        ("networking.k8s.io", "ingresses") => (INGRESS, ingress),
        ("networking.k8s.io", "networkpolicies") => (NETWORK_POLICY, network_policy),
        ("discovery.k8s.io", "endpointslices") => (ENDPOINT_SLICE, endpoint_slice),
        _ => return None,
    };
    Some(Printer { columns, row })
}

/// Upstream's "a, b, c + N more..." lists, `<unset>` when empty.
fn with_more(items: Vec<String>, max: usize) -> String {
    let total = items.len();
    let shown = items.into_iter().take(max).collect::<Vec<_>>().join(",");
    if total > max {
        format!("{shown} + {} more...", total - max)
    } else if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

fn ingress(ing: &Value, now: Timestamp) -> Row {
    let class = text(ing, "/spec/ingressClassName");
    let rules = list(ing, "/spec/rules");
    const MAX_HOSTS: usize = 3;
    let hosts: Vec<&str> = rules
        .iter()
        .take(MAX_HOSTS)
        .map(|r| text(r, "/host"))
        .filter(|h| !h.is_empty())
        .collect();
    let hosts = if hosts.is_empty() {
        "*".to_string()
    } else if rules.len() > MAX_HOSTS {
        format!("{} + {} more...", hosts.join(","), rules.len() - MAX_HOSTS)
    } else {
        hosts.join(",")
    };
    let ports = if list(ing, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        text(ing, "/metadata/name").into(),
        if class.is_empty() { "<none>" } else { class }.into(),
        hosts.into(),
        load_balancer_ingress(list(ing, "/status/loadBalancer/ingress"))
            .join(",")
            .into(),
        ports.into(),
        age(ing, now),
    ]
    .into()
}

fn network_policy(np: &Value, now: Timestamp) -> Row {
    vec![
        text(np, "/metadata/name").into(),
        format_label_selector(np.pointer("/spec/podSelector")).into(),
        age(np, now),
    ]
    .into()
}

fn endpoint_slice(slice: &Value, now: Timestamp) -> Row {
    let ports = list(slice, "/ports")
        .iter()
        .map(|p| match p.get("port").and_then(Value::as_i64) {
            Some(n) => n.to_string(),
            None => match text(p, "/name") {
                "" => "<unset>".to_string(),
                name => name.to_string(),
            },
        })
        .collect();
    let addresses = list(slice, "/endpoints")
        .iter()
        .flat_map(|e| list(e, "/addresses"))
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    vec![
        text(slice, "/metadata/name").into(),
        text(slice, "/addressType").into(),
        with_more(ports, 3).into(),
        with_more(addresses, 3).into(),
        age(slice, now),
    ]
    .into()
}
