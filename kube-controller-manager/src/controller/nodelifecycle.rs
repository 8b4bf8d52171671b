//! Node lifecycle (health, taints) and taint-based eviction.

mod eviction;
mod health;
mod labels;
mod monitor;
pub(crate) mod taints;
mod writes;
mod zones;

use super::worker::{run_workers, run_workers_when_synced};
use super::{ControllerContext, InitResult};
use client_go_rs::informers::{EventHandlerFuncs, SharedInformer};
use client_go_rs::listers::{IndexerError, object_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use std::sync::Arc;

/// The pod index by `spec.nodeName` both controllers share.
pub(crate) const PODS_BY_NODE: &str = "node-lifecycle/spec.nodeName";

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Adds the pods-by-node index once, whichever controller asks first.
pub(crate) fn index_pods_by_node(pods: &SharedInformer<Pod>) -> anyhow::Result<()> {
    match pods.add_indexer(PODS_BY_NODE, |pod: &Pod| {
        node_name(pod).map(str::to_string).into_iter().collect()
    }) {
        Ok(()) | Err(IndexerError::Conflict(_)) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        const NAME: &str = "node-lifecycle-controller";
        let client = ctx.client_for("node-controller").await?;
        let nodes = ctx.informers.informer::<Node>();
        let leases = ctx.informers.informer::<Lease>();
        let pods = ctx.informers.informer::<Pod>();
        index_pods_by_node(&pods)?;
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let (q_add, q_update) = (queue.clone(), queue.clone());
        nodes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |n: &Arc<Node>, _| q_add.add(object_key(n.as_ref())))
                .on_update(move |_, n: &Arc<Node>| q_update.add(object_key(n.as_ref()))),
        );
        let controller = Arc::new(monitor::NodeLifecycle::new(
            client,
            nodes.lister(),
            leases.lister(),
            pods.indexer().clone(),
            // Upstream reports node lifecycle events as `node-controller`.
            ctx.recorder("node-controller"),
            ctx.settings.clone(),
        ));
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            for synced in [
                nodes.wait_for_cache_sync(&shutdown).await,
                leases.wait_for_cache_sync(&shutdown).await,
                pods.wait_for_cache_sync(&shutdown).await,
            ] {
                if !synced {
                    return;
                }
            }
            let period = controller
                .settings
                .node_monitor_period
                .max(std::time::Duration::from_millis(100));
            let monitor = {
                let controller = controller.clone();
                let shutdown = shutdown.clone();
                async move {
                    let mut health = tokio::time::interval(period);
                    let mut taint = tokio::time::interval(monitor::TAINT_PASS_PERIOD);
                    health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    taint.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            _ = health.tick() => controller.monitor().await,
                            _ = taint.tick() => controller.taint_pass().await,
                        }
                    }
                }
            };
            let workers = run_workers(NAME, queue, 2, shutdown.clone(), move |name| {
                let controller = controller.clone();
                async move { controller.sync_no_schedule(name).await }
            });
            tokio::join!(monitor, workers);
        }) as super::Running))
    })
}

pub fn init_taint_eviction(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    use eviction::Key;
    Box::pin(async move {
        const NAME: &str = "taint-eviction-controller";
        let client = ctx.client_for("taint-eviction-controller").await?;
        let nodes = ctx.informers.informer::<Node>();
        let pods = ctx.informers.informer::<Pod>();
        index_pods_by_node(&pods)?;
        let queue = RateLimitingQueue::<Key>::default_controller(NAME);
        let (qa, qu, qd) = (queue.clone(), queue.clone(), queue.clone());
        pods.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| {
                    if node_name(p).is_some() {
                        qa.add(Key::Pod(object_key(p.as_ref())));
                    }
                })
                .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    let tolerations = |p: &Pod| p.spec.as_ref().map(|s| s.tolerations.clone());
                    if node_name(new).is_some()
                        && (node_name(old) != node_name(new)
                            || tolerations(old) != tolerations(new)
                            || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp)
                    {
                        qu.add(Key::Pod(object_key(new.as_ref())));
                    }
                })
                .on_delete(move |d| qd.add(Key::Pod(object_key(d.object().as_ref())))),
        );
        let (na, nu, nd) = (queue.clone(), queue.clone(), queue.clone());
        nodes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |n: &Arc<Node>, _| {
                    if taints::taints(n)
                        .iter()
                        .any(|t| t.effect == taints::NO_EXECUTE)
                    {
                        na.add(Key::Node(object_key(n.as_ref())));
                    }
                })
                .on_update(move |old: &Arc<Node>, new: &Arc<Node>| {
                    if eviction::no_execute_changed(old, new) {
                        nu.add(Key::Node(object_key(new.as_ref())));
                    }
                })
                .on_delete(move |d| nd.add(Key::Node(object_key(d.object().as_ref())))),
        );
        let controller = Arc::new(eviction::TaintEviction::new(
            client,
            pods.indexer().clone(),
            nodes.lister(),
            ctx.recorder(NAME),
            queue.clone(),
        ));
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(NAME, &[&*nodes, &*pods], queue, 8, shutdown, move |key| {
                let controller = controller.clone();
                async move { controller.sync(key).await }
            })
            .await;
        }) as super::Running))
    })
}
