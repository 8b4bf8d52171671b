//! CronJob: Jobs created on schedule. Event-driven: each sync requeues the CronJob for its
//! next scheduled time.

mod schedule;
mod sync;
mod times;

use super::utils::controller_ref::controller_of;
use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::object_key;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use std::sync::Arc;
use sync::{CONTROLLER_NAME, Controller};

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(CONTROLLER_NAME).await?;
        let cj_informer = ctx.informers.informer::<CronJob>();
        let job_informer = ctx.informers.informer::<Job>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("cronjob");
        let controller = Arc::new(Controller {
            client,
            cronjobs: cj_informer.lister(),
            jobs: job_informer.lister(),
            recorder: ctx.recorder(CONTROLLER_NAME),
            queue: queue.clone(),
        });

        let (q1, q2) = (queue.clone(), queue.clone());
        cj_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |c: &Arc<CronJob>, _| q1.add(object_key(c.as_ref())))
                .on_update(move |_, c: &Arc<CronJob>| q2.add(object_key(c.as_ref()))),
        );
        let (q3, q4, q5) = (queue.clone(), queue.clone(), queue.clone());
        job_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |j: &Arc<Job>, _| enqueue_owner(&q3, j))
                .on_update(move |old: &Arc<Job>, cur: &Arc<Job>| {
                    enqueue_owner(&q4, old);
                    enqueue_owner(&q4, cur);
                })
                .on_delete(move |d: &Deleted<Job>| enqueue_owner(&q5, d.object())),
        );

        let shutdown = ctx.shutdown.clone();
        let workers = ctx.settings.concurrent_cron_job_syncs;
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                CONTROLLER_NAME,
                &[&*cj_informer, &*job_informer],
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

fn enqueue_owner(queue: &RateLimitingQueue<String>, job: &Job) {
    let Some(owner) = controller_of(&job.metadata) else {
        return;
    };
    if owner.kind != "CronJob" {
        return;
    }
    if let Some(ns) = job.metadata.namespace.as_deref() {
        queue.add(format!("{ns}/{}", owner.name));
    }
}
