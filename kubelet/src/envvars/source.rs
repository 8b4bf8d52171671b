//! Where the kubelet reads the ConfigMaps, Secrets and service account tokens that env vars
//! and volumes reference: a trait so the core can back it with its API client (and tests with
//! a map).

use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::{Api, PostParams};

/// Read access to the objects a pod's env and volumes reference.
#[async_trait::async_trait]
pub trait ObjectSource: Send + Sync {
    /// The ConfigMap `namespace/name`; `Ok(None)` when it does not exist.
    async fn config_map(&self, namespace: &str, name: &str) -> anyhow::Result<Option<ConfigMap>>;
    /// The Secret `namespace/name`; `Ok(None)` when it does not exist.
    async fn secret(&self, namespace: &str, name: &str) -> anyhow::Result<Option<Secret>>;
    /// `POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token`.
    async fn create_token(
        &self,
        namespace: &str,
        service_account: &str,
        request: &TokenRequest,
    ) -> anyhow::Result<TokenRequest>;
}

/// [`ObjectSource`] reading straight from the apiserver. Upstream caches through watches; a
/// GET per use keeps this simple, and the kubelet's node authorizer allows exactly these reads
/// for pods bound to the node.
#[derive(Clone)]
pub struct ClientSource {
    client: kube::Client,
}

impl ClientSource {
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

#[async_trait::async_trait]
impl ObjectSource for ClientSource {
    async fn config_map(&self, namespace: &str, name: &str) -> anyhow::Result<Option<ConfigMap>> {
        Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .with_context(|| format!("getting configmap {namespace}/{name}"))
    }

    async fn secret(&self, namespace: &str, name: &str) -> anyhow::Result<Option<Secret>> {
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .with_context(|| format!("getting secret {namespace}/{name}"))
    }

    async fn create_token(
        &self,
        namespace: &str,
        service_account: &str,
        request: &TokenRequest,
    ) -> anyhow::Result<TokenRequest> {
        Api::<ServiceAccount>::namespaced(self.client.clone(), namespace)
            .create_token_request(service_account, &PostParams::default(), request)
            .await
            .with_context(|| format!("requesting a token for {namespace}/{service_account}"))
    }
}
