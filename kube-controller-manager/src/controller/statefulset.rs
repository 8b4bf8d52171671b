//! StatefulSet: pods with stable names, hostnames and storage, created, removed and updated
//! in ordinal order, with the pod templates kept as ControllerRevisions.

mod claims;
mod handlers;
mod identity;
mod plan;
mod revision;
mod status;
mod sync;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use crate::controller::utils::pods::add_controller_uid_index;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use std::sync::Arc;
use sync::Controller;

const NAME: &str = "statefulset-controller";

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(start(ctx))
}

async fn start(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for(NAME).await?;
    let workers = ctx.settings.concurrent_statefulset_syncs;
    let pod_informer = ctx.informers.informer::<Pod>();
    add_controller_uid_index(&pod_informer)?;
    let set_informer = ctx.informers.informer::<StatefulSet>();
    let rev_informer = ctx.informers.informer::<ControllerRevision>();
    let pvc_informer = ctx.informers.informer::<PersistentVolumeClaim>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("statefulset");
    let controller = Arc::new(Controller {
        client,
        sets: set_informer.lister(),
        pods: pod_informer.lister(),
        revisions: rev_informer.lister(),
        claims: pvc_informer.lister(),
        recorder: ctx.recorder(NAME),
        queue: queue.clone(),
    });

    let (s1, s2, s3) = (controller.clone(), controller.clone(), controller.clone());
    set_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<StatefulSet>, _| s1.on_set(s))
            .on_update(move |_, cur: &Arc<StatefulSet>| s2.on_set(cur))
            .on_delete(move |d| s3.on_set(d.object())),
    );
    let (p1, p2, p3) = (controller.clone(), controller.clone(), controller.clone());
    pod_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |p: &Arc<Pod>, _| p1.on_pod_add(p))
            .on_update(move |old: &Arc<Pod>, cur: &Arc<Pod>| p2.on_pod_update(old, cur))
            .on_delete(move |d| p3.on_owned_change(&d.object().metadata)),
    );
    let (r1, r2, r3) = (controller.clone(), controller.clone(), controller.clone());
    rev_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |r: &Arc<ControllerRevision>, _| r1.on_owned_change(&r.metadata))
            .on_update(move |_, r: &Arc<ControllerRevision>| r2.on_owned_change(&r.metadata))
            .on_delete(move |d| r3.on_owned_change(&d.object().metadata)),
    );

    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        for synced in [
            pod_informer.wait_for_cache_sync(&shutdown).await,
            set_informer.wait_for_cache_sync(&shutdown).await,
            rev_informer.wait_for_cache_sync(&shutdown).await,
            pvc_informer.wait_for_cache_sync(&shutdown).await,
        ] {
            if !synced {
                return;
            }
        }
        run_workers(NAME, queue, workers, shutdown, move |key| {
            let controller = controller.clone();
            async move { controller.sync(key).await }
        })
        .await;
    })))
}
