//! An in-memory [`LeaseLock`], for tests of anything that elects a leader.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;

use super::lock::{LeaseLock, LockError};

/// A lease held in memory with apiserver-like resourceVersion checks. Clones share the
/// lease, so several candidates can compete for it.
#[derive(Clone)]
pub struct InMemoryLeaseLock {
    namespace: String,
    name: String,
    state: Arc<Mutex<Stored>>,
}

#[derive(Default)]
struct Stored {
    lease: Option<Lease>,
    revision: u64,
}

impl InMemoryLeaseLock {
    /// An absent lease `namespace/name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            state: Arc::default(),
        }
    }

    /// The stored lease, as a reader would see it.
    pub fn current(&self) -> Option<Lease> {
        self.state.lock().lease.clone()
    }
}

impl LeaseLock for InMemoryLeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, LockError>> {
        let lease = self.current();
        Box::pin(async move { Ok(lease) })
    }

    fn create(&self, spec: LeaseSpec) -> BoxFuture<'_, Result<Lease, LockError>> {
        let result = {
            let mut st = self.state.lock();
            if st.lease.is_some() {
                Err(LockError::Conflict(self.describe()))
            } else {
                st.revision += 1;
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        resource_version: Some(st.revision.to_string()),
                        ..Default::default()
                    },
                    spec: Some(spec),
                };
                st.lease = Some(lease.clone());
                Ok(lease)
            }
        };
        Box::pin(async move { result })
    }

    fn update(&self, mut lease: Lease) -> BoxFuture<'_, Result<Lease, LockError>> {
        let result = {
            let mut st = self.state.lock();
            let current_rv = st
                .lease
                .as_ref()
                .and_then(|l| l.metadata.resource_version.clone());
            if current_rv.is_none() || current_rv != lease.metadata.resource_version {
                Err(LockError::Conflict(self.describe()))
            } else {
                st.revision += 1;
                lease.metadata.resource_version = Some(st.revision.to_string());
                st.lease = Some(lease.clone());
                Ok(lease)
            }
        };
        Box::pin(async move { result })
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stale_resource_version_conflicts() {
        let lock = InMemoryLeaseLock::new("ns", "l");
        let first = lock.create(LeaseSpec::default()).await.unwrap();
        assert!(matches!(
            lock.create(LeaseSpec::default()).await,
            Err(LockError::Conflict(_))
        ));
        let second = lock.update(first.clone()).await.unwrap();
        assert_ne!(
            first.metadata.resource_version,
            second.metadata.resource_version
        );
        assert!(matches!(
            lock.update(first).await,
            Err(LockError::Conflict(_))
        ));
        assert!(lock.update(second).await.is_ok());
    }
}
