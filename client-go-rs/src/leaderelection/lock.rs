//! Access to the `Lease` object behind a small trait, so the election can be tested without
//! an apiserver.

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;

/// Why a lock operation failed. Every failure is a failed election attempt; the election
/// retries.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else changed or created the lease first (optimistic concurrency).
    #[error("conflict on lease {0}")]
    Conflict(String),
    /// Any other failure of the backend.
    #[error("lease backend error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// One `Lease` object: read it, create it, or replace it under optimistic concurrency.
pub trait LeaseLock: Send + Sync {
    /// The lease, or `None` if it does not exist.
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, LockError>>;
    /// Creates the lease with `spec`; [`LockError::Conflict`] if it already exists.
    fn create(&self, spec: LeaseSpec) -> BoxFuture<'_, Result<Lease, LockError>>;
    /// Replaces the lease; `lease.metadata.resource_version` must be the current one, or the
    /// update fails with [`LockError::Conflict`].
    fn update(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, LockError>>;
    /// `namespace/name`, for logs.
    fn describe(&self) -> String;
}

/// A [`LeaseLock`] on a real apiserver through `kube::Api<Lease>`.
pub struct KubeLeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
}

impl KubeLeaseLock {
    /// The lease `namespace/name` reached through `client`.
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

fn map_kube_error(what: &str, err: kube::Error) -> LockError {
    match &err {
        kube::Error::Api(status) if status.is_conflict() || status.is_already_exists() => {
            LockError::Conflict(what.to_owned())
        }
        _ => LockError::Backend(Box::new(err)),
    }
}

impl LeaseLock for KubeLeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, LockError>> {
        Box::pin(async move {
            self.api
                .get_opt(&self.name)
                .await
                .map_err(|e| map_kube_error(&self.describe(), e))
        })
    }

    fn create(&self, spec: LeaseSpec) -> BoxFuture<'_, Result<Lease, LockError>> {
        Box::pin(async move {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(spec),
            };
            self.api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| map_kube_error(&self.describe(), e))
        })
    }

    fn update(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, LockError>> {
        Box::pin(async move {
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map_err(|e| map_kube_error(&self.describe(), e))
        })
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}
