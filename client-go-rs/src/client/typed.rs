//! Typed access, as client-go's clientset: one place to get an `Api<K>` of any built-in type.

use kube::core::NamespaceScope;
use kube::{Api, Client, Resource};

use super::dynamic::DynamicClient;

/// A client handing out typed and dynamic APIs; cheap to clone.
#[derive(Clone)]
pub struct Clientset {
    client: Client,
}

impl std::fmt::Debug for Clientset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clientset")
            .field("default_namespace", &self.client.default_namespace())
            .finish()
    }
}

impl Clientset {
    /// Wraps a kube client (see [`ClientConfig::build_client`](crate::config::ClientConfig)).
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// The underlying kube client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `K` objects of one namespace (`client.CoreV1().Pods(ns)`).
    pub fn namespaced<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource,
        K::DynamicType: Default,
        K::Scope: NamespaceScope,
    {
        Api::all(self.client.clone()).constrain(namespace)
    }

    /// `K` objects of every namespace (list and watch only), or a cluster-scoped `K`.
    pub fn all<K>(&self) -> Api<K>
    where
        K: Resource,
        K::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// A cluster-scoped `K` (`client.CoreV1().Nodes()`); the same as [`all`](Self::all), named
    /// for intent at call sites.
    pub fn cluster<K>(&self) -> Api<K>
    where
        K: Resource<Scope = kube::core::ClusterResourceScope>,
        K::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// The dynamic client over the same connection.
    pub fn dynamic(&self) -> DynamicClient {
        DynamicClient::new(self.client.clone())
    }
}
