//! Job: pods run to completion.

mod backoff;
mod conditions;
mod failure_policy;
mod finalizers;
mod indexes;
mod plan;
mod pods;
mod sync;
mod tally;

use super::utils::controller_ref::controller_of;
use super::utils::expectations::ControllerExpectations;
use super::utils::pod_control::PodControl;
use super::utils::pods::add_controller_uid_index;
use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use api_types::labels::Selector;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::{Lister, object_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;
use sync::{CONTROLLER_NAME, Controller};

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(CONTROLLER_NAME).await?;
        let job_informer = ctx.informers.informer::<Job>();
        let pod_informer = ctx.informers.informer::<Pod>();
        add_controller_uid_index(&pod_informer)?;
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("job");
        let recorder = ctx.recorder(CONTROLLER_NAME);
        let controller = Arc::new(Controller {
            client: client.clone(),
            jobs: job_informer.lister(),
            pods: pod_informer.lister(),
            expectations: ControllerExpectations::new(),
            pod_control: PodControl::new(client, recorder.clone()),
            recorder,
            finalizers: Default::default(),
            queue: queue.clone(),
        });

        let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
        job_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |j: &Arc<Job>, _| q1.add(object_key(j.as_ref())))
                .on_update(move |_, j: &Arc<Job>| q2.add(object_key(j.as_ref())))
                .on_delete(move |d: &Deleted<Job>| q3.add(object_key(d.object().as_ref()))),
        );
        let (c1, c2, c3) = (controller.clone(), controller.clone(), controller.clone());
        pod_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| {
                    if let Some(key) = owner_key(p) {
                        c1.expectations.creation_observed(&key);
                        if p.metadata.deletion_timestamp.is_some() {
                            c1.expectations.deletion_observed(&key);
                        }
                        c1.queue.add(key);
                    } else if controller_of(&p.metadata).is_none() {
                        // An orphan: the Jobs that select it may adopt it.
                        for key in selecting_jobs(&c1.jobs, p) {
                            c1.queue.add(key);
                        }
                    }
                })
                .on_update(move |old: &Arc<Pod>, cur: &Arc<Pod>| {
                    let old_key = owner_key(old);
                    let cur_key = owner_key(cur);
                    if let Some(key) = &old_key
                        && pods::has_finalizer(old)
                        && !pods::has_finalizer(cur)
                    {
                        c2.finalizers.observed(key, &pod_uid(cur));
                    }
                    if let Some(key) = &cur_key
                        && cur.metadata.deletion_timestamp.is_some()
                        && old.metadata.deletion_timestamp.is_none()
                    {
                        c2.expectations.deletion_observed(key);
                    }
                    if old_key != cur_key
                        && let Some(key) = old_key
                    {
                        c2.queue.add(key);
                    }
                    if let Some(key) = cur_key {
                        c2.queue.add(key);
                    }
                })
                .on_delete(move |d: &Deleted<Pod>| {
                    let pod = d.object();
                    if let Some(key) = owner_key(pod) {
                        c3.finalizers.observed(&key, &pod_uid(pod));
                        // Deletions already seen as a deletionTimestamp were counted then.
                        if pod.metadata.deletion_timestamp.is_none() {
                            c3.expectations.deletion_observed(&key);
                        }
                        c3.queue.add(key);
                    }
                }),
        );

        let shutdown = ctx.shutdown.clone();
        let workers = ctx.settings.concurrent_job_syncs;
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                CONTROLLER_NAME,
                &[&*pod_informer, &*job_informer],
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

/// The Jobs of `pod`'s namespace whose selector matches it.
fn selecting_jobs(jobs: &Lister<Job>, pod: &Pod) -> Vec<String> {
    let Some(ns) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    jobs.namespace(ns)
        .list()
        .iter()
        .filter(|j| {
            j.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .and_then(|sel| Selector::from_label_selector(Some(sel)).ok())
                .is_some_and(|sel| !sel.is_empty() && sel.matches(labels))
        })
        .map(|j| object_key(j.as_ref()))
        .collect()
}

fn pod_uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// The key of the Job controlling `pod`.
fn owner_key(pod: &Pod) -> Option<String> {
    let owner = controller_of(&pod.metadata)?;
    if owner.kind != "Job" || !owner.api_version.starts_with("batch/") {
        return None;
    }
    let ns = pod.metadata.namespace.as_deref()?;
    Some(format!("{ns}/{}", owner.name))
}
