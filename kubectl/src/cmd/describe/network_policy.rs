//! `describeNetworkPolicy`: the pod selector, then the ingress and egress rules as upstream
//! spells them out (ports, port ranges, peers), then the policy types.

use super::pod::format_label_selector;
use super::writer::{PrefixWriter, annotations_multiline, arr, labels_multiline, obj, s, scalar};
use serde_json::Value;

/// `describeNetworkPolicy`.
pub fn describe(np: &Value) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(np, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(np, "/metadata/namespace")),
    );
    w.write(
        0,
        &format!(
            "Created on:\t{}\n",
            go_time_string(s(np, "/metadata/creationTimestamp"))
        ),
    );
    labels_multiline(&mut w, "", "Labels", obj(np, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(np, "/metadata/annotations"));
    let empty = Value::Null;
    let spec = np.get("spec").unwrap_or(&empty);
    w.write(0, "Spec:\n");
    w.write(1, "PodSelector: ");
    let selector = spec.get("podSelector").unwrap_or(&empty);
    let selects_all = obj(selector, "/matchLabels").is_none_or(|m| m.is_empty())
        && arr(selector, "/matchExpressions").is_empty();
    if selects_all {
        w.write(
            2,
            "<none> (Allowing the specific traffic to all pods in this namespace)\n",
        );
    } else {
        w.write(2, &format!("{}\n", format_label_selector(selector)));
    }
    let types: Vec<&str> = arr(spec, "/policyTypes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (kind, verb, peers, peer_title, any_peer) in [
        (
            "Ingress",
            "ingress",
            "/from",
            "From",
            "From: <any> (traffic not restricted by source)",
        ),
        (
            "Egress",
            "egress",
            "/to",
            "To",
            "To: <any> (traffic not restricted by destination)",
        ),
    ] {
        if !types.contains(&kind) {
            w.write(1, &format!("Not affecting {verb} traffic\n"));
            continue;
        }
        w.write(1, &format!("Allowing {verb} traffic:\n"));
        let rules = arr(spec, &format!("/{verb}"));
        if rules.is_empty() {
            w.write(
                0,
                &format!("    <none> (Selected pods are isolated for {verb} connectivity)\n"),
            );
        }
        for (i, rule) in rules.iter().enumerate() {
            rule_lines(&mut w, rule, peers, peer_title, any_peer);
            if i + 1 != rules.len() {
                w.write(0, "    ----------\n");
            }
        }
    }
    let types = if types.is_empty() {
        "<none>".to_owned()
    } else {
        types.join(", ")
    };
    w.write(1, &format!("Policy Types: {types}\n"));
    w.finish()
}

/// One rule's ports and peers, indented as upstream's `initialIndent` of four spaces.
fn rule_lines(w: &mut PrefixWriter, rule: &Value, peers: &str, title: &str, any_peer: &str) {
    const INDENT: &str = "    ";
    let ports = arr(rule, "/ports");
    if ports.is_empty() {
        w.write(
            0,
            &format!("{INDENT}To Port: <any> (traffic allowed to all ports)\n"),
        );
    }
    for port in ports {
        let protocol = match s(port, "/protocol") {
            "" => "TCP",
            p => p,
        };
        // Go prints an unset port (a nil pointer) as `<nil>`.
        let number = match port.get("port") {
            None | Some(Value::Null) => "<nil>".to_owned(),
            v => scalar(v),
        };
        match port.get("endPort").and_then(Value::as_i64) {
            Some(end) => w.write(
                0,
                &format!("{INDENT}To Port Range: {number}-{end}/{protocol}\n"),
            ),
            None => w.write(0, &format!("{INDENT}To Port: {number}/{protocol}\n")),
        }
    }
    let list = arr(rule, peers);
    if list.is_empty() {
        w.write(0, &format!("{INDENT}{any_peer}\n"));
    }
    for peer in list {
        w.write(0, &format!("{INDENT}{title}:\n"));
        let pods = peer.get("podSelector").filter(|v| v.is_object());
        let namespaces = peer.get("namespaceSelector").filter(|v| v.is_object());
        if let Some(ns) = namespaces {
            w.write(
                1,
                &format!("{INDENT}NamespaceSelector: {}\n", format_label_selector(ns)),
            );
        }
        if let Some(pods) = pods {
            w.write(
                1,
                &format!("{INDENT}PodSelector: {}\n", format_label_selector(pods)),
            );
        }
        if pods.is_none()
            && namespaces.is_none()
            && let Some(block) = peer.get("ipBlock").filter(|v| v.is_object())
        {
            let except: Vec<&str> = arr(block, "/except")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            w.write(1, &format!("{INDENT}IPBlock:\n"));
            w.write(2, &format!("{INDENT}CIDR: {}\n", s(block, "/cidr")));
            w.write(2, &format!("{INDENT}Except: {}\n", except.join(", ")));
        }
    }
}

/// Go's `time.Time.String()` in the local zone (`2006-01-02 15:04:05 -0700 MST`), which
/// upstream prints for a policy's creation time; the zero time when unset.
fn go_time_string(text: &str) -> String {
    let zone = jiff::tz::TimeZone::system();
    let Some(t) = super::writer::parse_time(text) else {
        return "0001-01-01 00:00:00 +0000 UTC".to_owned();
    };
    match jiff::Timestamp::from_second(t) {
        Ok(ts) => ts
            .to_zoned(zone)
            .strftime("%Y-%m-%d %H:%M:%S %z %Z")
            .to_string(),
        Err(_) => "0001-01-01 00:00:00 +0000 UTC".to_owned(),
    }
}
