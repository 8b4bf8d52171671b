//! Core kinds without pods inside: Service, Namespace (with its quotas and limit ranges),
//! ConfigMap, Secret (sizes only) and ServiceAccount.

use super::events;
use super::writer::{
    PrefixWriter, annotations_multiline, arr, int, labels_multiline, obj, s, scalar,
};
use serde_json::Value;

/// `labels.FormatLabels`: sorted `k=v` joined by commas, `<none>` when empty.
pub fn format_labels(map: Option<&serde_json::Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", scalar(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        return "<none>".to_owned();
    }
    pairs.sort();
    pairs.join(",")
}

fn header(w: &mut PrefixWriter, o: &Value) {
    w.write(0, &format!("Name:\t{}\n", s(o, "/metadata/name")));
    w.write(0, &format!("Namespace:\t{}\n", s(o, "/metadata/namespace")));
    labels_multiline(w, "", "Labels", obj(o, "/metadata/labels"));
    annotations_multiline(w, "Annotations", obj(o, "/metadata/annotations"));
}

/// `describeService`; `slices` are the service's EndpointSlices.
pub fn service(svc: &Value, slices: &[Value], events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, svc);
    w.write(
        0,
        &format!("Selector:\t{}\n", format_labels(obj(svc, "/spec/selector"))),
    );
    w.write(0, &format!("Type:\t{}\n", s(svc, "/spec/type")));
    let policy = s(svc, "/spec/ipFamilyPolicy");
    if !policy.is_empty() {
        w.write(0, &format!("IP Family Policy:\t{policy}\n"));
    }
    let join = |field: &str| {
        arr(svc, field)
            .iter()
            .map(|v| scalar(Some(v)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let or_none = |text: String| {
        if text.is_empty() {
            "<none>".to_owned()
        } else {
            text
        }
    };
    w.write(
        0,
        &format!("IP Families:\t{}\n", or_none(join("/spec/ipFamilies"))),
    );
    w.write(0, &format!("IP:\t{}\n", s(svc, "/spec/clusterIP")));
    w.write(0, &format!("IPs:\t{}\n", or_none(join("/spec/clusterIPs"))));
    let external = join("/spec/externalIPs");
    if !external.is_empty() {
        w.write(0, &format!("External IPs:\t{external}\n"));
    }
    for (field, title) in [
        ("/spec/loadBalancerIP", "Desired LoadBalancer IP"),
        ("/spec/externalName", "External Name"),
    ] {
        let v = s(svc, field);
        if !v.is_empty() {
            w.write(0, &format!("{title}:\t{v}\n"));
        }
    }
    let ingress = arr(svc, "/status/loadBalancer/ingress");
    if !ingress.is_empty() {
        let list: Vec<String> = ingress
            .iter()
            .map(|i| {
                let ip = s(i, "/ip");
                if ip.is_empty() {
                    s(i, "/hostname").to_owned()
                } else {
                    let mode = s(i, "/ipMode");
                    if mode.is_empty() {
                        ip.to_owned()
                    } else {
                        format!("{ip} ({mode})")
                    }
                }
            })
            .collect();
        w.write(0, &format!("LoadBalancer Ingress:\t{}\n", list.join(", ")));
    }
    for p in arr(svc, "/spec/ports") {
        let name = s(p, "/name");
        let shown = if name.is_empty() { "<unset>" } else { name };
        let proto = s(p, "/protocol");
        w.write(0, &format!("Port:\t{shown}\t{}/{proto}\n", int(p, "/port")));
        w.write(
            0,
            &format!("TargetPort:\t{}/{proto}\n", scalar(p.get("targetPort"))),
        );
        let node_port = int(p, "/nodePort");
        if node_port != 0 {
            w.write(0, &format!("NodePort:\t{shown}\t{node_port}/{proto}\n"));
        }
        w.write(
            0,
            &format!("Endpoints:\t{}\n", format_endpoint_slices(slices, name)),
        );
    }
    w.write(
        0,
        &format!("Session Affinity:\t{}\n", s(svc, "/spec/sessionAffinity")),
    );
    let etp = s(svc, "/spec/externalTrafficPolicy");
    if !etp.is_empty() {
        w.write(0, &format!("External Traffic Policy:\t{etp}\n"));
    }
    let itp = s(svc, "/spec/internalTrafficPolicy");
    if !itp.is_empty() {
        w.write(0, &format!("Internal Traffic Policy:\t{itp}\n"));
    }
    let hc = int(svc, "/spec/healthCheckNodePort");
    if hc != 0 {
        w.write(0, &format!("HealthCheck NodePort:\t{hc}\n"));
    }
    let ranges = join("/spec/loadBalancerSourceRanges");
    if !ranges.is_empty() {
        w.write(0, &format!("LoadBalancer Source Ranges:\t{ranges}\n"));
    }
    let td = s(svc, "/spec/trafficDistribution");
    if !td.is_empty() {
        w.write(0, &format!("Traffic Distribution:\t{td}\n"));
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `formatEndpointSlices` for one port name: up to three ready `ip:port`, then `+ N more...`.
pub fn format_endpoint_slices(slices: &[Value], port_name: &str) -> String {
    if slices.is_empty() {
        return "<none>".to_owned();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let (mut more, mut count) = (false, 0usize);
    let ready = |e: &Value| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false);
    for slice in slices {
        let ports = arr(slice, "/ports");
        let endpoints = arr(slice, "/endpoints");
        if ports.is_empty() {
            for e in endpoints {
                more |= list.len() == MAX;
                if !ready(e) {
                    continue;
                }
                if !more {
                    list.push(s(e, "/addresses/0").to_owned());
                }
                count += 1;
            }
            continue;
        }
        for port in ports.iter().filter(|p| s(p, "/name") == port_name) {
            for e in endpoints {
                more |= list.len() == MAX;
                if !ready(e) {
                    continue;
                }
                if !more {
                    let addr = s(e, "/addresses/0");
                    let host = if addr.contains(':') {
                        format!("[{addr}]")
                    } else {
                        addr.to_owned()
                    };
                    list.push(format!("{host}:{}", int(port, "/port")));
                }
                count += 1;
            }
        }
    }
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", count - MAX)
    } else {
        text
    }
}

/// ConfigMap: every data value in full, binary data as sizes.
pub fn config_map(cm: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, cm);
    w.write(0, "\nData\n====\n");
    if let Some(data) = obj(cm, "/data") {
        let mut keys: Vec<&String> = data.keys().collect();
        keys.sort();
        for k in keys {
            w.write(0, &format!("{k}:\n----\n"));
            w.write(0, &format!("{}\n", scalar(data.get(k))));
            w.write(0, "\n");
        }
    }
    w.write(0, "\nBinaryData\n====\n");
    if let Some(data) = obj(cm, "/binaryData") {
        let mut keys: Vec<&String> = data.keys().collect();
        keys.sort();
        for k in keys {
            w.write(
                0,
                &format!("{k}: {} bytes\n", decoded_len(&scalar(data.get(k)))),
            );
        }
    }
    w.write(0, "\n");
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// The length of base64 `text` once decoded, without decoding it.
fn decoded_len(text: &str) -> usize {
    let text = text.trim_end_matches('=');
    text.len() * 3 / 4
}

/// Secret: data sizes only (a service account token is shown, as upstream does).
pub fn secret(secret: &Value) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, secret);
    let t = s(secret, "/type");
    w.write(0, &format!("\nType:\t{t}\n"));
    w.write(0, "\nData\n====\n");
    if let Some(data) = obj(secret, "/data") {
        let mut keys: Vec<&String> = data.keys().collect();
        keys.sort();
        for k in keys {
            let encoded = scalar(data.get(k));
            if k == "token" && t == "kubernetes.io/service-account-token" {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&encoded)
                    .unwrap_or_default();
                w.write(0, &format!("{k}:\t{}\n", String::from_utf8_lossy(&bytes)));
            } else {
                w.write(0, &format!("{k}:\t{} bytes\n", decoded_len(&encoded)));
            }
        }
    }
    w.finish()
}

/// ServiceAccount: image pull, mountable and token secrets (`(not found)` for those missing
/// from `secrets`, the namespace's secrets when they could be listed), then events.
pub fn service_account(sa: &Value, secrets: Option<&[Value]>, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, sa);
    let names =
        |field: &str| -> Vec<&str> { arr(sa, field).iter().map(|v| s(v, "/name")).collect() };
    let pull = names("/imagePullSecrets");
    let mount = names("/secrets");
    let existing: Option<Vec<&str>> =
        secrets.map(|list| list.iter().map(|x| s(x, "/metadata/name")).collect());
    let tokens: Vec<&str> = secrets
        .unwrap_or_default()
        .iter()
        .filter(|x| {
            s(x, "/type") == "kubernetes.io/service-account-token"
                && s(
                    x,
                    "/metadata/annotations/kubernetes.io~1service-account.name",
                ) == s(sa, "/metadata/name")
                && s(
                    x,
                    "/metadata/annotations/kubernetes.io~1service-account.uid",
                ) == s(sa, "/metadata/uid")
        })
        .map(|x| s(x, "/metadata/name"))
        .collect();
    let missing = |name: &str| {
        existing.as_ref().is_some_and(|e| !e.contains(&name))
            && (pull.contains(&name) || mount.contains(&name))
    };
    for (header, list) in [
        ("Image pull secrets:", &pull),
        ("Mountable secrets: ", &mount),
        ("Tokens:            ", &tokens),
    ] {
        if list.is_empty() {
            w.write(0, &format!("{header}\t<none>\n"));
            continue;
        }
        let mut prefix = header;
        for name in list.iter() {
            let note = if missing(name) { " (not found)" } else { "" };
            w.write(0, &format!("{prefix}\t{name}{note}\n"));
            prefix = "                   ";
        }
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}
