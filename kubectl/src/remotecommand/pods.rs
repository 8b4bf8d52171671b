//! Which pod and container a `logs`/`exec`/`attach`/`port-forward` argument stands for, as
//! upstream's polymorphic helpers choose them: a pod is itself; a workload or service is the
//! best of the pods its selector matches (upstream's `ByLogging` order).

use crate::factory::Factory;
use serde_json::Value;
use std::cmp::Ordering;
use std::time::{Duration, Instant};

/// The pod named by `NAME`, `pod/NAME` or another `TYPE/NAME` (waiting up to `timeout` for a
/// workload to have one, as upstream's `--pod-running-timeout`).
pub async fn pod_for(factory: &Factory, arg: &str, timeout: Duration) -> anyhow::Result<Value> {
    let mut pods = lookup(factory, arg, timeout).await?;
    Ok(pods.swap_remove(0))
}

/// Every pod `arg` stands for, best first (never empty), a missing object worded as `logs`
/// words it (with its namespace).
pub async fn pods_for(
    factory: &Factory,
    arg: &str,
    timeout: Duration,
) -> anyhow::Result<Vec<Value>> {
    let ns = factory.namespace();
    lookup(factory, arg, timeout).await.map_err(|err| {
        let missing = err
            .downcast_ref::<crate::errors::ApiError>()
            .filter(|api| api.is_not_found())
            .map(|api| api.message.clone());
        match missing {
            Some(message) => {
                anyhow::anyhow!("error from server (NotFound): {message} in namespace \"{ns}\"")
            }
            None => err,
        }
    })
}

/// `--pod-running-timeout` of `command`, checked and worded as upstream (`logs` words a zero
/// without the usage hint the others add).
pub fn running_timeout(text: &str, command: &str) -> anyhow::Result<Duration> {
    let secs = crate::cmd::logs::parse_duration(text).map_err(|e| {
        anyhow::anyhow!(
            "invalid argument \"{text}\" for \"--pod-running-timeout\" flag: {e}\nSee 'kubectl {command} --help' for usage."
        )
    })?;
    if secs <= 0.0 {
        let hint = if command == "logs" {
            String::new()
        } else {
            format!("\nSee 'kubectl {command} -h' for help and examples")
        };
        anyhow::bail!("--pod-running-timeout must be higher than zero{hint}");
    }
    Ok(Duration::from_secs_f64(secs))
}

async fn lookup(factory: &Factory, arg: &str, timeout: Duration) -> anyhow::Result<Vec<Value>> {
    let ns = factory.namespace();
    let Some((kind, name)) = arg.split_once('/') else {
        let pod = factory
            .get(&format!("/api/v1/namespaces/{ns}/pods/{arg}"))
            .await?;
        return Ok(vec![pod]);
    };
    let mapper = factory.discovery().mapper().await?;
    let Some(resource) = mapper.resolve(kind) else {
        anyhow::bail!("the server doesn't have a resource type \"{kind}\"");
    };
    let object = factory.get(&resource.object_path(Some(ns), name)).await?;
    if resource.group.is_empty() && resource.name == "pods" {
        return Ok(vec![object]);
    }
    let selector = selector_of(&resource.name, &object)?;
    let path = crate::resource::with_query(
        &format!("/api/v1/namespaces/{ns}/pods"),
        &[("labelSelector".to_owned(), selector)],
    );
    let deadline = Instant::now() + timeout;
    loop {
        let list = factory.get(&path).await?;
        let mut pods: Vec<Value> = list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !pods.is_empty() {
            pods.sort_by(by_logging);
            return Ok(pods);
        }
        if Instant::now() >= deadline {
            anyhow::bail!("timed out waiting for the condition");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The label selector (as a string) of a workload or service.
pub fn selector_of(resource: &str, object: &Value) -> anyhow::Result<String> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec_selector = object.pointer("/spec/selector");
    match resource {
        "services" | "replicationcontrollers" => {
            let map = spec_selector.and_then(Value::as_object);
            match map.filter(|m| !m.is_empty()) {
                Some(m) => Ok(labels_string(m)),
                None if resource == "services" => {
                    anyhow::bail!("invalid service '{name}': Service is defined without a selector")
                }
                None => anyhow::bail!("invalid replication controller '{name}': no selector"),
            }
        }
        "deployments" | "replicasets" | "statefulsets" | "daemonsets" | "jobs" => {
            Ok(label_selector_string(spec_selector.unwrap_or(&Value::Null)))
        }
        other => anyhow::bail!("selector for {other} not implemented"),
    }
}

fn labels_string(map: &serde_json::Map<String, Value>) -> String {
    let mut parts: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    parts.sort();
    parts.join(",")
}

/// A `metav1.LabelSelector` in the string syntax.
pub fn label_selector_string(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        parts.push(labels_string(m));
    }
    for expr in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let part = match expr.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        parts.push(part);
    }
    parts.retain(|p| !p.is_empty());
    parts.join(",")
}

fn phase_rank(pod: &Value) -> u8 {
    match pod.pointer("/status/phase").and_then(Value::as_str) {
        Some("Unknown") => 1,
        Some("Pending") => 2,
        _ => 0,
    }
}

fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn max_restarts(pod: &Value) -> i64 {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .max()
        .unwrap_or(0)
}

/// Upstream's `ByLogging`: scheduled, running, ready, most restarts, oldest first.
pub fn by_logging(a: &Value, b: &Value) -> Ordering {
    let node = |p: &Value| {
        p.pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    };
    let created = |p: &Value| {
        p.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .unwrap_or("~")
            .to_owned()
    };
    node(b)
        .cmp(&node(a))
        .then(phase_rank(a).cmp(&phase_rank(b)))
        .then(ready(b).cmp(&ready(a)))
        .then(max_restarts(b).cmp(&max_restarts(a)))
        .then(created(a).cmp(&created(b)))
}

/// Every container name as upstream lists them in "Defaulted container" notes.
pub fn all_container_names(pod: &Value) -> String {
    let names = |key: &str, suffix: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str))
            .map(|n| format!("{n}{suffix}"))
            .collect()
    };
    let mut all = names("initContainers", " (init)");
    all.extend(names("containers", ""));
    all.extend(names("ephemeralContainers", " (ephem)"));
    all.join(", ")
}

fn has_container(pod: &Value, name: &str) -> bool {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .any(|c| c.get("name").and_then(Value::as_str) == Some(name))
}

/// Upstream's `FindOrDefaultContainerByName`: the named container, else the
/// `kubectl.kubernetes.io/default-container` annotation's, else the first (with a note on
/// stderr when there was a choice, unless `quiet`).
pub fn default_container(pod: &Value, name: Option<&str>, quiet: bool) -> anyhow::Result<String> {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        anyhow::ensure!(
            has_container(pod, name),
            "container {name} not found in pod {pod_name}"
        );
        return Ok(name.to_owned());
    }
    if let Some(annotated) = pod
        .pointer("/metadata/annotations/kubectl.kubernetes.io~1default-container")
        .and_then(Value::as_str)
        .filter(|n| has_container(pod, n))
    {
        return Ok(annotated.to_owned());
    }
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(first) = containers
        .first()
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
    else {
        let ns = pod
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        anyhow::bail!("pod {ns}/{pod_name} does not have any containers");
    };
    let others = containers.len() > 1
        || ["initContainers", "ephemeralContainers"].iter().any(|k| {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        });
    if others && !quiet {
        eprintln!(
            "Defaulted container \"{first}\" out of: {}",
            all_container_names(pod)
        );
    }
    Ok(first.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let cases = [
            (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
            (
                json!({"matchLabels": {"app": "x"}, "matchExpressions": [
                    {"key": "t", "operator": "In", "values": ["p", "q"]},
                    {"key": "u", "operator": "NotIn", "values": ["r"]},
                    {"key": "v", "operator": "Exists"},
                    {"key": "w", "operator": "DoesNotExist"}]}),
                "app=x,t in (p,q),u notin (r),v,!w",
            ),
            (json!({}), ""),
        ];
        for (sel, want) in cases {
            assert_eq!(label_selector_string(&sel), want);
        }
        let svc = json!({"metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}}});
        assert_eq!(selector_of("services", &svc).unwrap(), "app=web");
        let bare = json!({"metadata": {"name": "s"}, "spec": {}});
        assert_eq!(
            selector_of("services", &bare).unwrap_err().to_string(),
            "invalid service 's': Service is defined without a selector"
        );
    }

    #[test]
    fn logging_order_prefers_scheduled_running_ready_pods() {
        let pod = |name: &str, node: &str, phase: &str, ready: bool| {
            json!({"metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"},
                "spec": {"nodeName": node},
                "status": {"phase": phase, "conditions": [
                    {"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
        };
        let mut pods = [
            pod("unscheduled", "", "Pending", false),
            pod("pending", "n", "Pending", false),
            pod("running", "n", "Running", false),
            pod("ready", "n", "Running", true),
        ];
        pods.sort_by(by_logging);
        let names: Vec<&str> = pods
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ready", "running", "pending", "unscheduled"]);
    }

    #[test]
    fn containers_default_as_upstream() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "annotations": {}},
            "spec": {"initContainers": [{"name": "i"}],
                "containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(all_container_names(&pod), "i (init), a, b");
        assert_eq!(default_container(&pod, None, true).unwrap(), "a");
        assert_eq!(default_container(&pod, Some("b"), true).unwrap(), "b");
        assert_eq!(
            default_container(&pod, Some("z"), true)
                .unwrap_err()
                .to_string(),
            "container z not found in pod p"
        );
        let mut annotated = pod.clone();
        annotated["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] =
            json!("b");
        assert_eq!(default_container(&annotated, None, true).unwrap(), "b");
    }
}
