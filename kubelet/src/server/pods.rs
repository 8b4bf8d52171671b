//! `/pods` (the kubelet's pods as a PodList), `/runningpods/` (what the runtime runs, as
//! pods) and `/spec/` (the machine's description, a subset of cAdvisor's MachineInfo).

use super::host::HostInterface;
use super::http::{Body, error, json};
use crate::container::ContainerState;
use http::{Response, StatusCode};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};
use std::sync::Arc;

fn pod_list(items: Vec<Value>) -> Value {
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
}

fn to_value(pod: &Pod) -> Value {
    serde_json::to_value(pod).unwrap_or(Value::Null)
}

pub fn pods(host: &Arc<dyn HostInterface>) -> Response<Body> {
    let items = host.pods().iter().map(|p| to_value(p)).collect();
    json(&pod_list(items))
}

/// Pods with running containers, each with only its identity and its running containers.
pub async fn running_pods(host: &Arc<dyn HostInterface>) -> Response<Body> {
    let pods = match host.runtime().get_pods(false).await {
        Ok(p) => p,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    };
    let items = pods
        .iter()
        .map(|p| {
            let containers = p
                .containers
                .iter()
                .filter(|(_, _, state)| *state == ContainerState::Running)
                .map(|(_, name, _)| Container {
                    name: name.clone(),
                    ..Default::default()
                })
                .collect();
            to_value(&Pod {
                metadata: ObjectMeta {
                    name: Some(p.name.clone()),
                    namespace: Some(p.namespace.clone()),
                    uid: Some(p.uid.clone()),
                    ..Default::default()
                },
                spec: Some(PodSpec {
                    containers,
                    ..Default::default()
                }),
                status: None,
            })
        })
        .collect();
    json(&pod_list(items))
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The machine as cAdvisor's `MachineInfo` names it (cores, memory, ids).
pub fn machine_info() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(1);
    let mhz = cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    let sockets = {
        let mut ids: Vec<&str> = cpuinfo
            .lines()
            .filter(|l| l.starts_with("physical id"))
            .filter_map(|l| l.split(':').nth(1))
            .map(str::trim)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len().max(1)
    };
    let memory = super::stats::proc::meminfo()
        .map(|m| m.total)
        .unwrap_or_default();
    json!({
        "timestamp": jiff::Timestamp::now().to_string(),
        "num_cores": cores,
        "num_physical_cores": cores,
        "num_sockets": sockets,
        "cpu_frequency_khz": (mhz * 1000.0) as u64,
        "memory_capacity": memory,
        "machine_id": read_trim("/etc/machine-id"),
        "system_uuid": read_trim("/sys/class/dmi/id/product_uuid"),
        "boot_id": read_trim("/proc/sys/kernel/random/boot_id"),
    })
}

pub fn spec() -> Response<Body> {
    json(&machine_info())
}
