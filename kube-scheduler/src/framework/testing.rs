//! Builders for unit tests of plugins, the cache and the queue: nodes, pods and a plugin
//! context whose client points nowhere (plugins only list from informers in tests, filled by
//! hand through their indexers).

use super::cycle_state::CycleState;
use super::interface::{BindPlugin, Plugin};
use super::node_info::NodeInfo;
use super::parallelize::Parallelizer;
use super::pod_info::PodInfo;
use super::registry::PluginContext;
use super::status::Status;
use client_go_rs::informers::SharedInformerFactory;
use k8s_openapi::api::core::v1::{
    Container, Node, NodeStatus, PersistentVolumeClaimVolumeSource, Pod, PodSpec,
    ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// A plugin context for tests; must be called inside a tokio runtime (kube's client spawns).
pub fn test_context() -> PluginContext {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("static URL"));
    let client = kube::Client::try_from(config).expect("a client for a static URL");
    PluginContext {
        informers: Arc::new(SharedInformerFactory::new(client.clone(), None)),
        client,
        parallelizer: Parallelizer::new(2),
        recorder: None,
        nominator: Arc::new(OnceLock::new()),
    }
}

pub fn resources(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// A node with `allocatable` (and capacity) and labels; `kubernetes.io/hostname` is set.
pub fn node(name: &str, allocatable: &[(&str, &str)], labels: &[(&str, &str)]) -> Node {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.entry("kubernetes.io/hostname".into())
        .or_insert_with(|| name.to_string());
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-node-{name}")),
            labels: Some(l),
            ..Default::default()
        },
        status: Some(NodeStatus {
            allocatable: Some(resources(allocatable)),
            capacity: Some(resources(allocatable)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod in `default` with one container requesting `requests`.
pub fn pod(name: &str, requests: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-pod-{name}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: (!requests.is_empty()).then(|| ResourceRequirements {
                    requests: Some(resources(requests)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod in `default` whose volumes are the named PersistentVolumeClaims (volume = claim name).
pub fn pod_with_claims(name: &str, claims: &[&str]) -> Pod {
    let mut p = pod(name, &[]);
    if let Some(spec) = p.spec.as_mut() {
        spec.volumes = Some(
            claims
                .iter()
                .map(|c| Volume {
                    name: c.to_string(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: c.to_string(),
                        read_only: None,
                    }),
                    ..Default::default()
                })
                .collect(),
        );
    }
    p
}

pub fn pod_info(pod: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(Arc::new(pod)))
}

/// A NodeInfo for `node` with `pods` on it.
pub fn node_info(node: Node, pods: Vec<Pod>) -> NodeInfo {
    let mut info = NodeInfo::new(Some(Arc::new(node)));
    for p in pods {
        info.add_pod(pod_info(p));
    }
    info
}

/// A Bind plugin that binds nothing and succeeds (a profile needs one), named `TestBinder`.
pub struct NoopBinder;

impl Plugin for NoopBinder {
    fn name(&self) -> &'static str {
        "TestBinder"
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl BindPlugin for NoopBinder {
    async fn bind(&self, _: &CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}
