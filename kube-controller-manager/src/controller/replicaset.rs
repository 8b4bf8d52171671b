//! ReplicaSet and ReplicationController: keep the desired number of pods matching a selector.
//! One implementation serves both (see `kind`), as upstream runs the ReplicaSet controller
//! over ReplicationControllers.

mod handlers;
mod kind;
mod status;
mod sync;

use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use crate::controller::utils::expectations::UidTrackingExpectations;
use crate::controller::utils::pod_control::PodControl;
use crate::controller::utils::pods::add_controller_uid_index;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use kind::ReplicatedSet;
use std::sync::Arc;
use sync::{BURST_REPLICAS, Controller};

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let workers = ctx.settings.concurrent_replicaset_syncs;
        let replica_sets = Some(ctx.informers.informer::<ReplicaSet>().lister());
        start::<ReplicaSet>(ctx, workers, replica_sets).await
    })
}

pub fn init_replication_controller(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let workers = ctx.settings.concurrent_rc_syncs;
        start::<ReplicationController>(ctx, workers, None).await
    })
}

async fn start<T: ReplicatedSet>(
    ctx: ControllerContext,
    workers: usize,
    replica_sets: Option<client_go_rs::listers::Lister<ReplicaSet>>,
) -> InitResult {
    let client = ctx.client_for(T::SERVICE_ACCOUNT).await?;
    let pod_informer = ctx.informers.informer::<Pod>();
    add_controller_uid_index(&pod_informer)?;
    let set_informer = ctx.informers.informer::<T>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller(T::QUEUE_NAME);
    let controller = Arc::new(Controller::<T> {
        client: client.clone(),
        sets: set_informer.lister(),
        pods: pod_informer.lister(),
        replica_sets,
        expectations: UidTrackingExpectations::new(),
        pod_control: PodControl::new(client, ctx.recorder(T::SERVICE_ACCOUNT)),
        queue: queue.clone(),
        burst_replicas: BURST_REPLICAS,
    });

    let (c1, c2, c3) = (controller.clone(), controller.clone(), controller.clone());
    set_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<T>, _| c1.on_set_add(s))
            .on_update(move |old: &Arc<T>, cur: &Arc<T>| c2.on_set_update(old, cur))
            .on_delete(move |d| c3.on_set_deleted(d)),
    );
    let (p1, p2, p3) = (controller.clone(), controller.clone(), controller.clone());
    pod_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |p: &Arc<Pod>, _| p1.on_pod_add(p))
            .on_update(move |old: &Arc<Pod>, cur: &Arc<Pod>| p2.on_pod_update(old, cur))
            .on_delete(move |d| p3.on_pod_deleted(d)),
    );

    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        run_workers_when_synced(
            T::CONTROLLER_NAME,
            &[&*pod_informer, &*set_informer],
            queue,
            workers,
            shutdown,
            move |key| {
                let controller = controller.clone();
                async move { controller.sync(key).await }
            },
        )
        .await;
    })))
}
