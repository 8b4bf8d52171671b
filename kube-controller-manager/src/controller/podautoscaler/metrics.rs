//! What the autoscaler reads through the apiserver: the target's scale subresource (any kind
//! with one, resolved by discovery unless it is one of the built-in workloads) and pod usage
//! from the resource metrics API (`metrics.k8s.io`, served by an aggregated metrics server).

use super::replicas::PodMetric;
use api_types::resource::Quantity;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// The built-in scalable workloads, resolved without a discovery round trip.
fn known_resource(api_version: &str, kind: &str) -> Option<&'static str> {
    Some(match (api_version, kind) {
        ("apps/v1", "Deployment") => "deployments",
        ("apps/v1", "ReplicaSet") => "replicasets",
        ("apps/v1", "StatefulSet") => "statefulsets",
        ("v1", "ReplicationController") => "replicationcontrollers",
        _ => return None,
    })
}

/// An API for the scale target's kind in `ns`.
pub async fn target_api(
    client: &kube::Client,
    ns: &str,
    api_version: &str,
    kind: &str,
) -> anyhow::Result<Api<DynamicObject>> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = match known_resource(api_version, kind) {
        Some(plural) => ApiResource::from_gvk_with_plural(&gvk, plural),
        None => {
            kube::discovery::pinned_kind(client, &gvk)
                .await
                .map_err(|err| {
                    anyhow::anyhow!("unable to find the kind {kind} in {api_version}: {err}")
                })?
                .0
        }
    };
    Ok(Api::namespaced_with(client.clone(), ns, &resource))
}

/// How a failed metrics API call reads, as client-go phrases the common statuses.
fn describe(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(s) if s.code == 404 => {
            "the server could not find the requested resource (get pods.metrics.k8s.io)".into()
        }
        kube::Error::Api(s) if s.code == 503 => {
            "the server is currently unable to handle the request (get pods.metrics.k8s.io)".into()
        }
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Usage of `resource` per pod selected by `selector` (summed over its containers, or only
/// `container`); pods lacking a sample for a container are left out, as missing.
pub async fn pod_usage(
    client: &kube::Client,
    ns: &str,
    selector: &str,
    resource: &str,
    container: Option<&str>,
) -> Result<BTreeMap<String, PodMetric>, String> {
    let gvk = GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "pods");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|err| {
            format!(
                "unable to fetch metrics from resource metrics API: {}",
                describe(&err)
            )
        })?;
    if list.items.is_empty() {
        return Err("no metrics returned from resource metrics API".into());
    }
    Ok(list
        .items
        .iter()
        .filter_map(|m| {
            Some((
                m.metadata.name.clone()?,
                sample(&m.data, resource, container)?,
            ))
        })
        .collect())
}

fn sample(data: &serde_json::Value, resource: &str, container: Option<&str>) -> Option<PodMetric> {
    let containers = data["containers"].as_array()?;
    let mut value = 0i64;
    let mut found = false;
    for c in containers {
        if container.is_some_and(|want| c["name"] != want) {
            continue;
        }
        let usage = Quantity::parse(c["usage"][resource].as_str()?)?;
        value = value.saturating_add(i64::try_from(usage.milli_value()).unwrap_or(i64::MAX));
        found = true;
    }
    if !found {
        return None;
    }
    let timestamp = data["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    Some(PodMetric {
        value,
        timestamp,
        window: data["window"]
            .as_str()
            .and_then(go_duration)
            .unwrap_or(Duration::from_secs(30)),
    })
}

/// A Go duration as metrics-server writes one (`30s`, `1m0.5s`, `15.2s`).
fn go_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..end].parse().ok()?;
        let unit_len = rest[end..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len() - end);
        let scale = match &rest[end..end + unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[end + unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(go_duration("1m0.5s"), Some(Duration::from_millis(60_500)));
        assert_eq!(go_duration("bogus"), None);
    }

    #[test]
    fn samples_sum_containers_or_pick_one() {
        let data = json!({"timestamp": "2026-01-01T00:00:00Z", "window": "15s", "containers": [
            {"name": "a", "usage": {"cpu": "250m", "memory": "1Mi"}},
            {"name": "b", "usage": {"cpu": "1000000n", "memory": "1Mi"}},
        ]});
        let all = sample(&data, "cpu", None).expect("sample");
        assert_eq!((all.value, all.window), (251, Duration::from_secs(15)));
        assert_eq!(sample(&data, "cpu", Some("a")).map(|m| m.value), Some(250));
        assert_eq!(sample(&data, "cpu", Some("c")), None);
        assert_eq!(sample(&data, "gpu", None), None);
    }
}
