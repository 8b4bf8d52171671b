//! persistentvolume-protection-controller: a volume being deleted keeps
//! `kubernetes.io/pv-protection` while it is Bound to a claim.

use super::super::worker::run_workers_when_synced;
use super::super::{ControllerContext, InitResult, Running};
use super::finalizers::{has_finalizer, with_finalizer, without_finalizer};
use super::matching::volume_phase;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::{Api, PostParams};
use std::sync::Arc;

const NAME: &str = "pv-protection";
pub const FINALIZER: &str = "kubernetes.io/pv-protection";

/// What the controller does to a volume (pure, for tests).
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    None,
    AddFinalizer,
    RemoveFinalizer,
}

pub fn action(pv: &PersistentVolume) -> Action {
    let has = has_finalizer(&pv.metadata, FINALIZER);
    match (pv.metadata.deletion_timestamp.is_some(), has) {
        (false, false) => Action::AddFinalizer,
        // Upstream asks only the phase: the binder moves a volume out of Bound once its claim
        // is gone.
        (true, true) if volume_phase(pv) != "Bound" => Action::RemoveFinalizer,
        _ => Action::None,
    }
}

struct PvProtection {
    client: kube::Client,
    volumes: Lister<PersistentVolume>,
}

impl PvProtection {
    async fn sync(&self, name: String) -> anyhow::Result<()> {
        let Some(pv) = self.volumes.get(&name) else {
            return Ok(());
        };
        let finalizers = match action(&pv) {
            Action::None => return Ok(()),
            Action::AddFinalizer => with_finalizer(&pv.metadata, FINALIZER),
            Action::RemoveFinalizer => without_finalizer(&pv.metadata, FINALIZER),
        };
        let mut updated = (*pv).clone();
        updated.metadata.finalizers = Some(finalizers);
        Api::<PersistentVolume>::all(self.client.clone())
            .replace(&name, &PostParams::default(), &updated)
            .await
            .map_err(|e| {
                anyhow::anyhow!("updating the protection finalizer of volume {name}: {e}")
            })?;
        Ok(())
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("pv-protection-controller").await?;
        let volumes = ctx.informers.informer::<PersistentVolume>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(PvProtection {
            client,
            volumes: volumes.lister(),
        });
        let (q1, q2) = (queue.clone(), queue.clone());
        volumes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |v: &Arc<PersistentVolume>, _| {
                    if action(v) != Action::None {
                        q1.add(v.metadata.name.clone().unwrap_or_default());
                    }
                })
                .on_update(move |_, v: &Arc<PersistentVolume>| {
                    if action(v) != Action::None {
                        q2.add(v.metadata.name.clone().unwrap_or_default());
                    }
                }),
        );
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(NAME, &[&*volumes], queue, 1, shutdown, move |name| {
                let controller = controller.clone();
                async move { controller.sync(name).await }
            })
            .await;
        }) as Running))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decides_as_upstream() {
        let cases = [
            (json!({"metadata": {"name": "a"}}), Action::AddFinalizer),
            (
                json!({"metadata": {"name": "a", "finalizers": [FINALIZER]}}),
                Action::None,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": [FINALIZER]}, "status": {"phase": "Bound"}}),
                Action::None,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": [FINALIZER]}, "status": {"phase": "Released"}}),
                Action::RemoveFinalizer,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x"]}}),
                Action::None,
            ),
        ];
        for (pv, want) in cases {
            let pv: PersistentVolume = serde_json::from_value(pv.clone()).expect("pv");
            assert_eq!(action(&pv), want, "{pv:?}");
        }
    }
}
