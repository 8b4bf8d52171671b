//! `create ingress`: rules written `host/path=service:port[,tls[=secret]]`.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use clap::Args;
use serde_json::{Map, Value, json};

/// Flags of `create ingress`.
#[derive(Debug, Clone, Args)]
pub struct IngressArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Rule in format host/path=service:port[,tls=secretname].
    #[arg(long, value_name = "stringArray")]
    pub rule: Vec<String>,
    /// Ingress Class to be used
    #[arg(long = "class", value_name = "string")]
    pub class: Option<String>,
    /// Default service for backend, in format of svcname:port
    #[arg(long, value_name = "string")]
    pub default_backend: Option<String>,
    /// Annotation to insert in the ingress object, in the format annotation=value
    #[arg(long, value_name = "stringArray")]
    pub annotation: Vec<String>,
}

fn word(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// Upstream's rule pattern, checked by hand: `[\w*.-]*` host, `/...` path, `=svc:port`, then
/// an optional `,tls[=secret]`.
fn valid_rule(rule: &str) -> bool {
    let Some(slash) = rule.find('/') else {
        return false;
    };
    let host = &rule[..slash];
    if !host
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '*' | '-' | '.'))
    {
        return false;
    }
    let rest = &rule[slash..];
    let (main, tls) = match rest.rfind(",tls") {
        Some(i) => (&rest[..i], Some(&rest[i + 4..])),
        None => (rest, None),
    };
    if let Some(tls) = tls {
        let secret = tls.strip_prefix('=').unwrap_or(tls);
        if !secret.is_empty() && !word(secret) {
            return false;
        }
    }
    let Some(eq) = main.rfind('=') else {
        return false;
    };
    match main[eq + 1..].split_once(':') {
        Some((svc, port)) => word(svc) && word(port),
        None => false,
    }
}

fn backend(spec: &str) -> Value {
    let (name, port) = spec.split_once(':').unwrap_or((spec, ""));
    let port = match port.parse::<i32>() {
        Ok(n) => json!({"number": n}),
        Err(_) => json!({"name": port}),
    };
    json!({"service": {"name": name, "port": port}})
}

fn http_path(path_svc: &str) -> Value {
    let (path, svc) = path_svc.split_once('=').unwrap_or((path_svc, ""));
    let mut path = format!("/{path}");
    let mut path_type = "Exact";
    if path.ends_with('*') {
        path.pop();
        path_type = "Prefix";
    }
    json!({"path": path, "pathType": path_type, "backend": backend(svc)})
}

fn tls_entries(rules: &[String]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for rule in rules {
        let parts: Vec<&str> = rule.split("tls").collect();
        if parts.len() != 2 {
            continue;
        }
        let host = rule.split('/').next().unwrap_or("").to_owned();
        let secret = parts[1].split('=').nth(1).unwrap_or("").to_owned();
        if seen.contains(&host) {
            continue;
        }
        seen.push(host.clone());
        let same_secret = out
            .iter_mut()
            .find(|t| t.get("secretName").and_then(Value::as_str).unwrap_or("") == secret);
        if let Some(entry) = same_secret {
            match entry.get_mut("hosts").and_then(Value::as_array_mut) {
                Some(hosts) => hosts.push(json!(host)),
                None => entry["hosts"] = json!([host]),
            }
            continue;
        }
        let mut entry = json!({});
        if !host.is_empty() {
            entry["hosts"] = json!([host]);
        }
        if !secret.is_empty() {
            entry["secretName"] = json!(secret);
        }
        if entry.as_object().is_some_and(|o| !o.is_empty()) {
            out.push(entry);
        }
    }
    out
}

fn ingress_rules(rules: &[String]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for rule in rules {
        let without_tls = rule.split(",tls").next().unwrap_or(rule);
        let (host, path_svc) = without_tls.split_once('/').unwrap_or((without_tls, ""));
        let path = http_path(path_svc);
        let existing = out
            .iter_mut()
            .find(|r| r.get("host").and_then(Value::as_str).unwrap_or("") == host);
        if let Some(r) = existing
            && let Some(paths) = r.pointer_mut("/http/paths").and_then(Value::as_array_mut)
        {
            paths.push(path);
            continue;
        }
        let mut entry = json!({"http": {"paths": [path]}});
        if !host.is_empty() {
            entry["host"] = json!(host);
        }
        out.push(entry);
    }
    out
}

pub fn ingress(name: &str, args: &IngressArgs) -> anyhow::Result<Value> {
    let backend_ok = |b: &str| matches!(b.split_once(':'), Some((s, p)) if word(s) && word(p));
    if let Some(b) = &args.default_backend
        && !backend_ok(b)
    {
        anyhow::bail!("default-backend should be in format servicename:serviceport");
    }
    if args.default_backend.is_none() && args.rule.is_empty() {
        anyhow::bail!(
            "not enough information provided: every ingress has to either specify a default-backend (which catches all traffic) or a list of rules (which catch specific paths)"
        );
    }
    for rule in &args.rule {
        if !valid_rule(rule) {
            anyhow::bail!(
                "rule {rule} is invalid and should be in format host/path=svcname:svcport[,tls[=secret]]"
            );
        }
    }
    let mut annotations = Map::new();
    for a in &args.annotation {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        annotations.insert(k.to_owned(), json!(v));
    }
    let mut metadata = json!({"name": name, "creationTimestamp": null});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    let mut spec = json!({});
    if let Some(class) = args.class.as_deref().filter(|c| !c.is_empty()) {
        spec["ingressClassName"] = json!(class);
    }
    if let Some(b) = &args.default_backend {
        spec["defaultBackend"] = backend(b);
    }
    let tls = tls_entries(&args.rule);
    if !tls.is_empty() {
        spec["tls"] = json!(tls);
    }
    let rules = ingress_rules(&args.rule);
    if !rules.is_empty() {
        spec["rules"] = json!(rules);
    }
    Ok(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": metadata, "spec": spec, "status": {"loadBalancer": {}},
    }))
}

pub async fn run(global: &GlobalOptions, args: &IngressArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "ingress")?;
    let object = ingress(name, args)?;
    send::send(
        global,
        &args.common,
        object,
        true,
        Wrap::Colon("failed to create ingress"),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        for (rule, ok) in [
            ("foo.com/bar*=svc:8080,tls=sec", true),
            ("/path=svc2:http", true),
            ("foo.com/=svc:80,tls", true),
            ("foo", false),
            ("foo.com/x=svc", false),
            ("a b/x=svc:80", false),
        ] {
            assert_eq!(valid_rule(rule), ok, "{rule}");
        }
        let rules: Vec<String> = vec!["a.com/x*=s:80,tls=t".into(), "a.com/y=s:http".into()];
        let got = ingress_rules(&rules);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["http"]["paths"][0]["pathType"], "Prefix");
        assert_eq!(
            got[0]["http"]["paths"][1]["backend"]["service"]["port"],
            json!({"name": "http"})
        );
        assert_eq!(
            tls_entries(&rules),
            vec![json!({"hosts": ["a.com"], "secretName": "t"})]
        );
    }
}
