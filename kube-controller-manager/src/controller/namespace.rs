//! Namespace deletion: empties a terminating namespace, then finalizes it.

mod conditions;
mod deleter;
mod discovery;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use deleter::{Deleter, Outcome};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Namespace;
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "namespace";

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("namespace-controller").await?;
        let informer = ctx.informers.informer::<Namespace>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller(NAME);
        let enqueue = {
            let queue = queue.clone();
            move |ns: &Namespace| {
                if ns.metadata.deletion_timestamp.is_some()
                    && let Some(name) = ns.metadata.name.clone()
                {
                    queue.add(name);
                }
            }
        };
        let on_add = enqueue.clone();
        informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |ns: &Arc<Namespace>, _| on_add(ns))
                .on_update(move |_, ns: &Arc<Namespace>| enqueue(ns)),
        );
        let shutdown = ctx.shutdown.clone();
        let workers = ctx.settings.concurrent_namespace_syncs;
        let resync = ctx.settings.namespace_sync_period;
        let running: super::Running = Box::pin(async move {
            if !informer.wait_for_cache_sync(&shutdown).await {
                return;
            }
            // Upstream's informer resync: terminating namespaces are looked at again every
            // `--namespace-sync-period` whatever happened.
            let lister = informer.lister();
            let resync_queue = queue.clone();
            let resync_shutdown = shutdown.clone();
            tokio::spawn(async move {
                if resync.is_zero() {
                    return;
                }
                loop {
                    tokio::select! {
                        _ = resync_shutdown.cancelled() => return,
                        _ = tokio::time::sleep(resync) => {}
                    }
                    for ns in lister.list() {
                        if ns.metadata.deletion_timestamp.is_some()
                            && let Some(name) = ns.metadata.name.clone()
                        {
                            resync_queue.add(name);
                        }
                    }
                }
            });
            let deleter = Arc::new(Deleter { client });
            let requeue = queue.clone();
            run_workers(NAME, queue, workers, shutdown, move |name: String| {
                let deleter = deleter.clone();
                let requeue = requeue.clone();
                async move {
                    let started = std::time::Instant::now();
                    let outcome = deleter.delete(&name).await;
                    tracing::debug!(namespace = %name, elapsed = ?started.elapsed(), ?outcome, "finished syncing namespace");
                    match outcome? {
                        Outcome::Done => {}
                        Outcome::Remaining(estimate) => {
                            let secs = u64::try_from(estimate / 2 + 1).unwrap_or(1);
                            requeue.add_after(name, Duration::from_secs(secs));
                        }
                    }
                    Ok(())
                }
            })
            .await;
        });
        Ok(Some(running))
    })
}
