//! The downward API's values: pod fields (`fieldRef`) and container resources
//! (`resourceFieldRef`), shared by env vars and downwardAPI/projected volume files.

use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{Container, Pod, ResourceFieldSelector};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use std::collections::BTreeMap;

/// A node's allocatable resources, as in `Node.status.allocatable`.
pub type Allocatable = BTreeMap<String, ApiQuantity>;

/// Upstream's `fieldpath.ExtractFieldPathAsString`: the `metadata.*` paths a downwardAPI volume
/// may project (and env vars too).
pub fn metadata_field(pod: &Pod, path: &str) -> Result<String, String> {
    let meta = &pod.metadata;
    if let Some((map, key)) = subscripted(path) {
        let source = match map {
            "metadata.labels" => &meta.labels,
            "metadata.annotations" => &meta.annotations,
            _ => return Err(format!("unsupported fieldPath: {path}")),
        };
        return Ok(source
            .as_ref()
            .and_then(|m| m.get(key))
            .cloned()
            .unwrap_or_default());
    }
    match path {
        "metadata.name" => Ok(meta.name.clone().unwrap_or_default()),
        "metadata.namespace" => Ok(meta.namespace.clone().unwrap_or_default()),
        "metadata.uid" => Ok(meta.uid.clone().unwrap_or_default()),
        "metadata.labels" => Ok(format_map(meta.labels.as_ref())),
        "metadata.annotations" => Ok(format_map(meta.annotations.as_ref())),
        _ => Err(format!("unsupported fieldPath: {path}")),
    }
}

/// `metadata.labels['app']` -> (`metadata.labels`, `app`).
fn subscripted(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (map, key) = inner.split_once("['")?;
    Some((map, key))
}

/// Upstream's `FormatMap`: `key="value"` lines sorted by key, values quoted as Go's `%q`.
pub fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    let Some(map) = map else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The pod-level fields an env var's `fieldRef` may also name, beyond metadata.
pub fn pod_field(
    pod: &Pod,
    path: &str,
    pod_ips: &[String],
    host_ips: &[String],
) -> Result<String, String> {
    let spec = pod.spec.as_ref();
    match path {
        "spec.nodeName" => Ok(spec.and_then(|s| s.node_name.clone()).unwrap_or_default()),
        "spec.serviceAccountName" => Ok(spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default()),
        "status.hostIP" => Ok(host_ips.first().cloned().unwrap_or_default()),
        "status.hostIPs" => Ok(host_ips.join(",")),
        "status.podIP" => Ok(pod_ips.first().cloned().unwrap_or_default()),
        "status.podIPs" => Ok(pod_ips.join(",")),
        _ => metadata_field(pod, path),
    }
}

fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

/// Upstream's `ExtractResourceValueByContainerNameAndNodeAllocatable`: a container's request or
/// limit divided by the divisor (rounded up); unset cpu/memory/ephemeral-storage limits read
/// as the node's allocatable.
pub fn resource_field(
    selector: &ResourceFieldSelector,
    pod: &Pod,
    container_name: &str,
    allocatable: &Allocatable,
) -> Result<String, String> {
    let container = find_container(pod, container_name)
        .ok_or_else(|| format!("container {container_name} not found"))?;
    let resources = container.resources.as_ref();
    let divisor = selector
        .divisor
        .as_ref()
        .map(|d| parse(&d.0))
        .transpose()?
        .filter(|d| !d.is_zero())
        .unwrap_or_else(|| Quantity::from_int(1));
    let (kind, name) = selector
        .resource
        .split_once('.')
        .ok_or_else(|| format!("unsupported container resource : {}", selector.resource))?;
    let supported =
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    if !supported || !matches!(kind, "limits" | "requests") {
        return Err(format!(
            "unsupported container resource : {}",
            selector.resource
        ));
    }
    let list = resources.and_then(|r| {
        if kind == "limits" {
            r.limits.as_ref()
        } else {
            r.requests.as_ref()
        }
    });
    let mut value = list
        .and_then(|l| l.get(name))
        .map(|q| parse(&q.0))
        .transpose()?;
    let defaults_to_node = kind == "limits" && !name.starts_with("hugepages-");
    if defaults_to_node
        && value.is_none_or(|v| v.is_zero())
        && let Some(node) = allocatable.get(name)
    {
        value = Some(parse(&node.0)?);
    }
    let value = value.unwrap_or(Quantity::ZERO);
    let (num, den) = if name == "cpu" {
        (value.milli_value(), divisor.milli_value())
    } else {
        (value.value(), divisor.value())
    };
    Ok(div_ceil(num, den.max(1)).to_string())
}

fn parse(text: &str) -> Result<Quantity, String> {
    Quantity::parse(text).ok_or_else(|| format!("invalid quantity {text:?}"))
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) != 0 { q + 1 } else { q }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod() -> Pod {
        let resources = ResourceRequirements {
            limits: Some(
                [("cpu", "500m"), ("memory", "64Mi")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), ApiQuantity(v.to_string())))
                    .collect(),
            ),
            requests: Some(
                [("cpu", "250m"), ("memory", "32Mi")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), ApiQuantity(v.to_string())))
                    .collect(),
            ),
            ..Default::default()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u-1".into()),
                labels: Some([("app".into(), "web".into()), ("b".into(), "x\"y".into())].into()),
                annotations: Some([("note".into(), "a\nb".into())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("n1".into()),
                service_account_name: Some("sa".into()),
                containers: vec![
                    Container {
                        name: "c".into(),
                        resources: Some(resources),
                        ..Default::default()
                    },
                    Container {
                        name: "bare".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn pod_fields() {
        let pod = pod();
        let pod_ips = vec!["10.0.0.5".to_string(), "fd00::5".to_string()];
        let host_ips = vec!["192.168.1.1".to_string()];
        let cases = [
            ("metadata.name", Ok("p")),
            ("metadata.namespace", Ok("ns")),
            ("metadata.uid", Ok("u-1")),
            ("metadata.labels['app']", Ok("web")),
            ("metadata.labels['missing']", Ok("")),
            ("metadata.annotations['note']", Ok("a\nb")),
            ("metadata.labels", Ok("app=\"web\"\nb=\"x\\\"y\"")),
            ("metadata.annotations", Ok("note=\"a\\nb\"")),
            ("spec.nodeName", Ok("n1")),
            ("spec.serviceAccountName", Ok("sa")),
            ("status.podIP", Ok("10.0.0.5")),
            ("status.podIPs", Ok("10.0.0.5,fd00::5")),
            ("status.hostIP", Ok("192.168.1.1")),
            ("status.hostIPs", Ok("192.168.1.1")),
            ("spec.hostname", Err("unsupported fieldPath: spec.hostname")),
            (
                "metadata.other['x']",
                Err("unsupported fieldPath: metadata.other['x']"),
            ),
        ];
        for (path, want) in cases {
            let got = pod_field(&pod, path, &pod_ips, &host_ips);
            assert_eq!(
                got.as_deref(),
                want.map_err(String::from).as_deref(),
                "{path}"
            );
        }
    }

    #[test]
    fn resource_fields() {
        let pod = pod();
        let allocatable: Allocatable = [("cpu", "2"), ("memory", "4Gi")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), ApiQuantity(v.to_string())))
            .collect();
        let cases = [
            ("c", "limits.cpu", None, Ok("1")),
            ("c", "limits.cpu", Some("1m"), Ok("500")),
            ("c", "requests.cpu", Some("100m"), Ok("3")),
            ("c", "limits.memory", None, Ok("67108864")),
            ("c", "limits.memory", Some("1Mi"), Ok("64")),
            ("c", "requests.memory", Some("1Mi"), Ok("32")),
            ("c", "limits.memory", Some("0"), Ok("67108864")),
            ("bare", "limits.cpu", None, Ok("2")),
            ("bare", "limits.memory", Some("1Gi"), Ok("4")),
            ("bare", "requests.cpu", None, Ok("0")),
            ("bare", "limits.ephemeral-storage", None, Ok("0")),
            (
                "c",
                "limits.gpu",
                None,
                Err("unsupported container resource : limits.gpu"),
            ),
            ("nope", "limits.cpu", None, Err("container nope not found")),
        ];
        for (container, resource, divisor, want) in cases {
            let selector = ResourceFieldSelector {
                container_name: None,
                divisor: divisor.map(|d| ApiQuantity(d.to_string())),
                resource: resource.to_string(),
            };
            let got = resource_field(&selector, &pod, container, &allocatable);
            assert_eq!(
                got.as_deref(),
                want.map_err(String::from).as_deref(),
                "{container} {resource} {divisor:?}"
            );
        }
    }
}
