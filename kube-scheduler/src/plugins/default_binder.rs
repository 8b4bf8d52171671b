//! The DefaultBinder plugin: binds a pod by POSTing its `binding` subresource.

use crate::framework::{BindPlugin, CycleState, Plugin, PluginContext, PodInfo, Status};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "DefaultBinder";

pub struct DefaultBinder {
    client: kube::Client,
}

pub fn new(_args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DefaultBinder {
        client: ctx.client.clone(),
    }))
}

/// The body of `POST pods/<name>/binding`: the pod's identity (the uid makes the apiserver
/// refuse to bind a recreated pod of the same name) and the target node.
pub fn binding_body(pod: &Pod, node_name: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some(node_name.to_string()),
            ..Default::default()
        },
    }
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

#[async_trait]
impl BindPlugin for DefaultBinder {
    async fn bind(&self, _state: &CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let body = binding_body(&pod.pod, node_name);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), pod.namespace());
        // The answer is a `Status` object; only the HTTP outcome matters, so it is not typed.
        match api
            .create_subresource::<_, Value>("binding", pod.name(), &PostParams::default(), &body)
            .await
        {
            Ok(_) => Status::success(),
            Err(kube::Error::Api(status)) => Status::error(status.message),
            Err(e) => Status::error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::{pod, pod_info, test_context};

    #[test]
    fn binding_names_pod_uid_and_node() {
        let p = pod("p1", &[]);
        let b = binding_body(&p, "node-a");
        assert_eq!(b.metadata.name.as_deref(), Some("p1"));
        assert_eq!(b.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(b.metadata.uid.as_deref(), Some("uid-pod-p1"));
        assert_eq!(b.target.kind.as_deref(), Some("Node"));
        assert_eq!(b.target.name.as_deref(), Some("node-a"));
    }

    #[tokio::test]
    async fn unreachable_apiserver_is_an_error() {
        let ctx = test_context();
        let plugin = new(None, &ctx).expect("plugin");
        let binder = plugin.as_bind().expect("bind plugin");
        let info = pod_info(pod("p1", &[]));
        let s = binder.bind(&CycleState::new(), &info, "node-a").await;
        assert_eq!(s.code, crate::framework::Code::Error);
        assert!(!s.message().is_empty());
    }
}
