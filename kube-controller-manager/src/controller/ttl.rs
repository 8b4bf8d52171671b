//! The node TTL annotation: every node carries `node.alpha.kubernetes.io/ttl`, the seconds its
//! kubelet may cache secrets and configmaps, growing with the cluster size.

mod boundaries;

use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use boundaries::{ANNOTATION, TtlState};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;

const NAME: &str = "ttl-controller";

struct Ttl {
    client: kube::Client,
    nodes: Lister<Node>,
    state: Mutex<TtlState>,
}

impl Ttl {
    async fn sync(&self, name: String) -> anyhow::Result<()> {
        let Some(node) = self.nodes.get(&name) else {
            return Ok(());
        };
        let want = self.state.lock().ttl_seconds().to_string();
        let have = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION));
        if have == Some(&want) {
            return Ok(());
        }
        let patch = json!({"metadata": {"annotations": {ANNOTATION: want}}});
        Api::<Node>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| anyhow::anyhow!("setting the TTL annotation of node {name}: {e}"))?;
        Ok(())
    }

    /// Recomputes the step from the cache size; every node is resynced when the TTL changes.
    fn resize(&self, queue: &RateLimitingQueue<String>) {
        let count = self.nodes.indexer().len();
        if self.state.lock().resize(count) {
            for node in self.nodes.list() {
                if let Some(name) = node.metadata.name.clone() {
                    queue.add(name);
                }
            }
        }
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("ttl-controller").await?;
        let nodes = ctx.informers.informer::<Node>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(Ttl {
            client,
            nodes: nodes.lister(),
            state: Mutex::new(TtlState::default()),
        });
        let (c1, q1, q2, c3, q3) = (
            controller.clone(),
            queue.clone(),
            queue.clone(),
            controller.clone(),
            queue.clone(),
        );
        nodes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |n: &Arc<Node>, _| {
                    c1.resize(&q1);
                    if let Some(name) = n.metadata.name.clone() {
                        q1.add(name);
                    }
                })
                .on_update(move |_, n: &Arc<Node>| {
                    if let Some(name) = n.metadata.name.clone() {
                        q2.add(name);
                    }
                })
                .on_delete(move |_: &Deleted<Node>| c3.resize(&q3)),
        );
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(NAME, &[&*nodes], queue, 5, shutdown, move |name| {
                let controller = controller.clone();
                async move { controller.sync(name).await }
            })
            .await;
        }) as super::Running))
    })
}
