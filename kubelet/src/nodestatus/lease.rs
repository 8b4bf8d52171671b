//! The node's heartbeat: `kube-node-lease/<node>`, renewed every quarter of its duration, owned
//! by the Node so it goes away with it (upstream's nodelease controller).

use super::NodeHandle;
use anyhow::Context;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::PostParams;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// Keeps the lease renewed until `shutdown`.
pub struct LeaseController {
    api: Api<Lease>,
    handle: NodeHandle,
    duration_seconds: i32,
}

impl LeaseController {
    pub fn new(client: kube::Client, handle: NodeHandle, duration_seconds: i32) -> Self {
        Self {
            api: Api::namespaced(client, LEASE_NAMESPACE),
            handle,
            duration_seconds,
        }
    }

    /// Renews every `duration / 4`; after a failure retries sooner (upstream backs off from
    /// 200 ms up to 7 s).
    pub async fn run(self, shutdown: CancellationToken) {
        let interval = Duration::from_millis(self.duration_seconds as u64 * 250);
        let mut backoff = Duration::from_millis(200);
        loop {
            let wait = match self.renew().await {
                Ok(()) => {
                    backoff = Duration::from_millis(200);
                    interval
                }
                Err(err) => {
                    tracing::warn!(node = %self.handle.name(), "failed to renew the node lease: {err:#}");
                    let wait = backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(7));
                    wait
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    fn owner(&self) -> Option<Vec<OwnerReference>> {
        let node = self.handle.node()?;
        Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.metadata.name?,
            uid: node.metadata.uid?,
            ..OwnerReference::default()
        }])
    }

    /// One renewal: create the lease if missing, else bump renewTime (and fix the holder or
    /// the owner if needed).
    pub async fn renew(&self) -> anyhow::Result<()> {
        let name = self.handle.name().to_string();
        let now = MicroTime(jiff::Timestamp::now());
        let existing = self
            .api
            .get_opt(&name)
            .await
            .context("reading the node lease")?;
        let Some(mut lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(LEASE_NAMESPACE.into()),
                    owner_references: self.owner(),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(name.clone()),
                    lease_duration_seconds: Some(self.duration_seconds),
                    renew_time: Some(now),
                    ..LeaseSpec::default()
                }),
            };
            self.api
                .create(&PostParams::default(), &lease)
                .await
                .context("creating the node lease")?;
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some(name.clone());
        spec.lease_duration_seconds = Some(self.duration_seconds);
        spec.renew_time = Some(now);
        if lease
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty())
        {
            lease.metadata.owner_references = self.owner();
        }
        self.api
            .replace(&name, &PostParams::default(), &lease)
            .await
            .context("renewing the node lease")?;
        Ok(())
    }
}
