//! HorizontalPodAutoscaler (autoscaling/v2): scales a target's scale subresource to keep its
//! pods' resource utilization at the target, from the resource metrics API when one is served,
//! reporting its absence in the conditions otherwise; resynced every
//! `--horizontal-pod-autoscaler-sync-period`, as upstream.

mod behavior;
mod metrics;
mod replicas;
mod sync;

use super::{ControllerContext, InitResult};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::object_key;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;
use sync::{CONTROLLER_NAME, Controller};

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(CONTROLLER_NAME).await?;
        let hpa_informer = ctx.informers.informer::<HorizontalPodAutoscaler>();
        let pod_informer = ctx.informers.informer::<Pod>();
        let queue: RateLimitingQueue<String> =
            RateLimitingQueue::default_controller("horizontalpodautoscaler");
        let (q, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
        hpa_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |h: &Arc<HorizontalPodAutoscaler>, _| q.add(object_key(h.as_ref())))
                .on_update(move |old: &Arc<HorizontalPodAutoscaler>, new| {
                    // Our own status writes need no new look; spec changes do.
                    if old.spec != new.spec || old.metadata.labels != new.metadata.labels {
                        q2.add(object_key(new.as_ref()));
                    }
                })
                .on_delete(move |h: &Deleted<HorizontalPodAutoscaler>| {
                    q3.add(object_key(h.object().as_ref()))
                }),
        );
        let controller = Controller {
            client,
            hpas: hpa_informer.lister(),
            pods: pod_informer.lister(),
            queue: queue.clone(),
            recorder: ctx.recorder(CONTROLLER_NAME),
            resync: ctx.settings.horizontal_pod_autoscaler_sync_period,
            recommendations: Default::default(),
            scale_events: Default::default(),
        };
        let workers = ctx.settings.concurrent_horizontal_pod_autoscaler_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            super::worker::run_workers_when_synced(
                CONTROLLER_NAME,
                &[&*hpa_informer, &*pod_informer],
                queue,
                workers,
                shutdown,
                move |key| {
                    let controller = controller.clone();
                    async move { controller.sync(key).await }
                },
            )
            .await;
        }) as super::Running))
    })
}
