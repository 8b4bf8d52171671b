//! Mirror pods: the apiserver's read-only copies of static pods, owned by the node so that the
//! Node authorizer and NodeRestriction let the kubelet create and delete them.

use super::{CONFIG_MIRROR_ANNOTATION, parse_full_name, static_pod_hash};
use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};

/// Creates and deletes mirror pods in the apiserver.
#[derive(Clone)]
pub struct MirrorClient {
    client: Client,
    node_name: String,
}

/// The mirror to create for a static pod: a copy with the mirror annotation and the node as
/// its controller; what the apiserver assigns itself (uid, version, status) is left out.
pub fn mirror_pod_for(pod: &Pod, node_name: &str, node_uid: &str) -> Pod {
    let mut copy = pod.clone();
    let hash = static_pod_hash(pod).unwrap_or_default().to_string();
    copy.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(CONFIG_MIRROR_ANNOTATION.to_string(), hash);
    copy.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        name: node_name.to_string(),
        uid: node_uid.to_string(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    copy.metadata.uid = None;
    copy.metadata.resource_version = None;
    copy.metadata.creation_timestamp = None;
    copy.metadata.managed_fields = None;
    copy.status = None;
    copy
}

fn is_status(err: &kube::Error, codes: &[u16]) -> bool {
    matches!(err, kube::Error::Api(s) if codes.contains(&s.code))
}

impl MirrorClient {
    pub fn new(client: Client, node_name: impl Into<String>) -> Self {
        Self {
            client,
            node_name: node_name.into(),
        }
    }

    /// Creates the mirror of a static pod. An existing mirror of the same version is success;
    /// one of another version is an error (the caller deletes it first, as upstream).
    pub async fn create_mirror_pod(&self, pod: &Pod) -> anyhow::Result<()> {
        let node: Node = Api::<Node>::all(self.client.clone())
            .get(&self.node_name)
            .await
            .with_context(|| format!("failed to get node {} for its uid", self.node_name))?;
        let node_uid = node.metadata.uid.unwrap_or_default();
        let mirror = mirror_pod_for(pod, &self.node_name, &node_uid);
        let ns = mirror.metadata.namespace.clone().unwrap_or_default();
        let name = mirror.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        match api.create(&PostParams::default(), &mirror).await {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, &[409]) => {
                let existing = api.get(&name).await.with_context(|| {
                    format!("failed to read the existing mirror pod {ns}/{name}")
                })?;
                let want = static_pod_hash(pod);
                let have = existing
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(CONFIG_MIRROR_ANNOTATION))
                    .map(String::as_str);
                if have.is_some() && have == want {
                    Ok(())
                } else {
                    Err(e).with_context(|| {
                        format!("mirror pod {ns}/{name} exists with another version")
                    })
                }
            }
            Err(e) => Err(e).with_context(|| format!("failed to create mirror pod {ns}/{name}")),
        }
    }

    /// Deletes a mirror pod by full name (`name_namespace`), at once (grace 0); with a uid, only
    /// that object. Gone or replaced meanwhile counts as deleted. Returns whether it was done.
    pub async fn delete_mirror_pod(
        &self,
        full_name: &str,
        uid: Option<&str>,
    ) -> anyhow::Result<bool> {
        let (name, ns) = parse_full_name(full_name)?;
        tracing::info!(pod = %format!("{ns}/{name}"), uid = uid.unwrap_or(""), "deleting a mirror pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: uid.map(|u| Preconditions {
                uid: Some(u.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(e) if is_status(&e, &[404, 409]) => Ok(true),
            Err(e) => Err(e).with_context(|| format!("failed to delete mirror pod {ns}/{name}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::CONFIG_HASH_ANNOTATION;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn mirrors_carry_the_hash_and_the_node_as_controller() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web-n1".into()),
                namespace: Some("default".into()),
                uid: Some("abc".into()),
                resource_version: Some("7".into()),
                annotations: Some([(CONFIG_HASH_ANNOTATION.to_string(), "abc".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let m = mirror_pod_for(&pod, "n1", "node-uid");
        let ann = m.metadata.annotations.as_ref().expect("annotations");
        assert_eq!(
            ann.get(CONFIG_MIRROR_ANNOTATION).map(String::as_str),
            Some("abc")
        );
        assert_eq!(
            ann.get(CONFIG_HASH_ANNOTATION).map(String::as_str),
            Some("abc")
        );
        let owner = &m.metadata.owner_references.as_ref().expect("owners")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Node", "n1", "node-uid")
        );
        assert_eq!(owner.controller, Some(true));
        assert!(m.metadata.uid.is_none() && m.metadata.resource_version.is_none());
        assert!(crate::pod::is_mirror_pod(&m));
    }
}
