//! DaemonSet: one pod per eligible node, rolled out by revision (RollingUpdate with
//! maxUnavailable/maxSurge, or OnDelete), as upstream's daemonset controller.

mod backoff;
mod eligibility;
mod handlers;
mod history;
mod plan;
mod revision;
mod status;
mod sync;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use crate::controller::utils::expectations::ControllerExpectations;
use crate::controller::utils::pod_control::PodControl;
use crate::controller::utils::pods::add_controller_uid_index;
use backoff::FailedPodsBackoff;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use std::sync::Arc;
use std::time::{Duration, Instant};
use sync::Controller;

const NAME: &str = "daemonset-controller";

/// How often idle failed-pod backoff entries are dropped (upstream's `BackoffGCInterval`).
const BACKOFF_GC_INTERVAL: Duration = Duration::from_secs(60);

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(NAME).await?;
        let pod_informer = ctx.informers.informer::<Pod>();
        add_controller_uid_index(&pod_informer)?;
        let ds_informer = ctx.informers.informer::<DaemonSet>();
        let node_informer = ctx.informers.informer::<Node>();
        let rev_informer = ctx.informers.informer::<ControllerRevision>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("daemonset");
        let controller = Arc::new(Controller {
            client: client.clone(),
            daemonsets: ds_informer.lister(),
            pods: pod_informer.lister(),
            nodes: node_informer.lister(),
            revisions: rev_informer.lister(),
            expectations: ControllerExpectations::new(),
            pod_control: PodControl::new(client, ctx.recorder(NAME)),
            queue: queue.clone(),
            backoff: FailedPodsBackoff::default(),
        });

        let (c1, c2, c3) = (controller.clone(), controller.clone(), controller.clone());
        ds_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |d: &Arc<DaemonSet>, _| c1.on_ds_add(d))
                .on_update(move |o: &Arc<DaemonSet>, c: &Arc<DaemonSet>| c2.on_ds_update(o, c))
                .on_delete(move |d| c3.on_ds_deleted(d)),
        );
        let (p1, p2, p3) = (controller.clone(), controller.clone(), controller.clone());
        pod_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| p1.on_pod_add(p))
                .on_update(move |o: &Arc<Pod>, c: &Arc<Pod>| p2.on_pod_update(o, c))
                .on_delete(move |d| p3.on_pod_deleted(d)),
        );
        let (n1, n2, n3) = (controller.clone(), controller.clone(), controller.clone());
        node_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |n: &Arc<Node>, _| n1.on_node_add(n))
                .on_update(move |o: &Arc<Node>, c: &Arc<Node>| n2.on_node_update(o, c))
                .on_delete(move |d| n3.on_node_deleted(d)),
        );
        let (r1, r2, r3) = (controller.clone(), controller.clone(), controller.clone());
        rev_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |r: &Arc<ControllerRevision>, _| r1.on_revision_add(r))
                .on_update(
                    move |o: &Arc<ControllerRevision>, c: &Arc<ControllerRevision>| {
                        r2.on_revision_update(o, c)
                    },
                )
                .on_delete(move |d| r3.on_revision_deleted(d)),
        );

        let workers = ctx.settings.concurrent_daemonset_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            if !pod_informer.wait_for_cache_sync(&shutdown).await
                || !ds_informer.wait_for_cache_sync(&shutdown).await
                || !node_informer.wait_for_cache_sync(&shutdown).await
                || !rev_informer.wait_for_cache_sync(&shutdown).await
            {
                return;
            }
            let gc_controller = controller.clone();
            let gc_shutdown = shutdown.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(BACKOFF_GC_INTERVAL);
                loop {
                    tokio::select! {
                        _ = gc_shutdown.cancelled() => return,
                        _ = tick.tick() => gc_controller.backoff.gc(Instant::now()),
                    }
                }
            });
            run_workers(NAME, queue, workers, shutdown, move |key| {
                let controller = controller.clone();
                async move { controller.sync(key).await }
            })
            .await;
        }) as futures::future::BoxFuture<'static, ()>))
    })
}
