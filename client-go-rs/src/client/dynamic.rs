//! The dynamic client: objects as `DynamicObject`, resources named at run time.

use api_types::registry::{self, ResourceInfo};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use kube::{Api, Client};

/// Errors resolving a resource name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// No served resource has that group/version/resource.
    #[error("the server could not find the requested resource {0}")]
    UnknownResource(String),
    /// No served resource has that group/version/kind.
    #[error("no matches for kind \"{kind}\" in version \"{api_version}\"")]
    UnknownKind {
        /// The kind asked for.
        kind: String,
        /// The `group/version` asked for.
        api_version: String,
    },
    /// kubectl-style name resolution found nothing.
    #[error("the server doesn't have a resource type \"{0}\"")]
    UnknownName(String),
}

/// A resource to reach dynamically: what the URL needs, and whether it is namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicResource {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl DynamicResource {
    /// A resource the registry does not know (a custom resource), described by hand.
    pub fn new(gvk: &GroupVersionKind, plural: &str, namespaced: bool) -> Self {
        Self {
            resource: ApiResource::from_gvk_with_plural(gvk, plural),
            namespaced,
        }
    }

    fn from_info(info: &ResourceInfo) -> Self {
        Self::new(
            &GroupVersionKind::gvk(info.group, info.version, info.kind),
            info.plural,
            info.namespaced,
        )
    }

    fn scope(&self) -> Scope {
        if self.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        }
    }
}

/// Builds `Api<DynamicObject>`s, as client-go's `dynamic.Interface`.
#[derive(Clone)]
pub struct DynamicClient {
    client: Client,
}

impl std::fmt::Debug for DynamicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicClient").finish_non_exhaustive()
    }
}

impl DynamicClient {
    /// A dynamic client over `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// Resolves `group`/`version`/`resource` (plural), e.g. `("apps", "v1", "deployments")`.
    pub fn resolve_resource(
        group: &str,
        version: &str,
        resource: &str,
    ) -> Result<DynamicResource, ClientError> {
        registry::by_group_version_resource(group, version, resource)
            .map(DynamicResource::from_info)
            .ok_or_else(|| {
                ClientError::UnknownResource(if group.is_empty() {
                    format!("{version}/{resource}")
                } else {
                    format!("{group}/{version}/{resource}")
                })
            })
    }

    /// Resolves `group`/`version`/`kind`, e.g. `("apps", "v1", "Deployment")`.
    pub fn resolve_kind(gvk: &GroupVersionKind) -> Result<DynamicResource, ClientError> {
        registry::by_group_version_kind(&gvk.group, &gvk.version, &gvk.kind)
            .map(DynamicResource::from_info)
            .ok_or_else(|| ClientError::UnknownKind {
                kind: gvk.kind.clone(),
                api_version: gvk.api_version(),
            })
    }

    /// Resolves a name as `kubectl get NAME` does (`deploy`, `deployments.apps`, `Pod`...).
    pub fn resolve_name(name: &str) -> Result<DynamicResource, ClientError> {
        registry::lookup(name)
            .map(DynamicResource::from_info)
            .ok_or_else(|| ClientError::UnknownName(name.to_string()))
    }

    /// The API of `resource` in `namespace` (every namespace if `None`); the namespace is
    /// ignored for cluster-scoped resources, as kubectl does.
    pub fn api(&self, resource: &DynamicResource, namespace: Option<&str>) -> Api<DynamicObject> {
        let api = Api::dynamic(self.client.clone(), &resource.resource, &resource.scope());
        match namespace {
            Some(ns) if resource.namespaced => api.constrain(ns),
            _ => api,
        }
    }

    /// [`api`](Self::api) for a group/version/resource.
    pub fn resource(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<Api<DynamicObject>, ClientError> {
        Ok(self.api(
            &Self::resolve_resource(group, version, resource)?,
            namespace,
        ))
    }

    /// [`api`](Self::api) for a group/version/kind.
    pub fn kind(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
    ) -> Result<Api<DynamicObject>, ClientError> {
        Ok(self.api(&Self::resolve_kind(gvk)?, namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offline_client() -> Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("static url"));
        Client::try_from(config).expect("client")
    }

    #[test]
    fn resolves_through_the_registry() {
        let d = DynamicClient::resolve_resource("apps", "v1", "deployments").expect("known");
        assert_eq!(d.resource.kind, "Deployment");
        assert_eq!(d.resource.api_version, "apps/v1");
        assert!(d.namespaced);
        let n =
            DynamicClient::resolve_kind(&GroupVersionKind::gvk("", "v1", "Node")).expect("known");
        assert_eq!(n.resource.plural, "nodes");
        assert!(!n.namespaced);
        let p = DynamicClient::resolve_name("po").expect("short name");
        assert_eq!(p.resource.kind, "Pod");
    }

    #[test]
    fn unknown_resources_are_errors() {
        assert_eq!(
            DynamicClient::resolve_resource("", "v1", "widgets")
                .unwrap_err()
                .to_string(),
            "the server could not find the requested resource v1/widgets"
        );
        assert_eq!(
            DynamicClient::resolve_kind(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
                .unwrap_err()
                .to_string(),
            "no matches for kind \"Widget\" in version \"example.com/v1\""
        );
        assert!(DynamicClient::resolve_name("nonsense").is_err());
    }

    #[tokio::test]
    async fn urls_follow_scope() {
        let dc = DynamicClient::new(offline_client());
        let deploys = dc
            .resource("apps", "v1", "deployments", Some("ns1"))
            .expect("known");
        assert_eq!(
            deploys.resource_url(),
            "/apis/apps/v1/namespaces/ns1/deployments"
        );
        let all = dc
            .resource("apps", "v1", "deployments", None)
            .expect("known");
        assert_eq!(all.resource_url(), "/apis/apps/v1/deployments");
        let nodes = dc
            .kind(&GroupVersionKind::gvk("", "v1", "Node"), Some("ns1"))
            .expect("known");
        assert_eq!(nodes.resource_url(), "/api/v1/nodes");
        let widgets = DynamicResource::new(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
            true,
        );
        assert_eq!(
            dc.api(&widgets, Some("a")).resource_url(),
            "/apis/example.com/v1/namespaces/a/widgets"
        );
    }

    #[tokio::test]
    async fn typed_helpers_build_the_right_urls() {
        use k8s_openapi::api::core::v1::{Node, Pod};
        let cs = super::super::Clientset::new(offline_client());
        assert_eq!(
            cs.namespaced::<Pod>("kube-system").resource_url(),
            "/api/v1/namespaces/kube-system/pods"
        );
        assert_eq!(cs.all::<Pod>().resource_url(), "/api/v1/pods");
        assert_eq!(cs.cluster::<Node>().resource_url(), "/api/v1/nodes");
    }
}
