//! Deployment: ReplicaSets rolled out by strategy (rolling update or recreate), with
//! revisions, pause, proportional scaling and the progress deadline, as upstream's
//! deployment controller.

mod annotations;
mod conditions;
mod hash;
mod proportion;
mod replicas;
mod rollout;
mod sync;

use super::utils::controller_ref::controller_of;
use super::{ControllerContext, InitResult};
use api_types::labels::Selector;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::{Lister, object_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ObjectMeta;
use std::sync::Arc;
use sync::{CONTROLLER_NAME, Controller};

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(CONTROLLER_NAME).await?;
        let d_informer = ctx.informers.informer::<Deployment>();
        let rs_informer = ctx.informers.informer::<ReplicaSet>();
        let pod_informer = ctx.informers.informer::<Pod>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("deployment");
        let deployments = d_informer.lister();

        let q = queue.clone();
        let q2 = queue.clone();
        let q3 = queue.clone();
        d_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |d: &Arc<Deployment>, _| q.add(object_key(d.as_ref())))
                .on_update(move |_, d: &Arc<Deployment>| q2.add(object_key(d.as_ref())))
                .on_delete(move |d: &Deleted<Deployment>| q3.add(object_key(d.object().as_ref()))),
        );

        let (q, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
        let (l, l2, l3) = (
            deployments.clone(),
            deployments.clone(),
            deployments.clone(),
        );
        rs_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |rs: &Arc<ReplicaSet>, _| enqueue_for_rs(&q, &l, &rs.metadata, true))
                .on_update(move |old: &Arc<ReplicaSet>, new: &Arc<ReplicaSet>| {
                    if old.metadata.resource_version == new.metadata.resource_version {
                        return;
                    }
                    let old_ref = controller_of(&old.metadata).map(|r| r.uid.clone());
                    let new_ref = controller_of(&new.metadata).map(|r| r.uid.clone());
                    if old_ref != new_ref {
                        enqueue_for_rs(&q2, &l2, &old.metadata, false);
                    }
                    let orphan_relabelled =
                        new_ref.is_none() && old.metadata.labels != new.metadata.labels;
                    enqueue_for_rs(
                        &q2,
                        &l2,
                        &new.metadata,
                        orphan_relabelled || old_ref != new_ref,
                    );
                })
                .on_delete(move |rs: &Deleted<ReplicaSet>| {
                    enqueue_for_rs(&q3, &l3, &rs.object().metadata, false)
                }),
        );

        let q = queue.clone();
        let (l, rsl) = (deployments.clone(), rs_informer.lister());
        pod_informer.add_event_handler(EventHandlerFuncs::new().on_delete(
            move |pod: &Deleted<Pod>| {
                // Only Recreate cares: it waits for the old pods to be gone.
                let pod = pod.object();
                let Some(rs_ref) = controller_of(&pod.metadata).filter(|r| r.kind == "ReplicaSet")
                else {
                    return;
                };
                let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                let Some(rs) = rsl
                    .namespace(ns)
                    .get(&rs_ref.name)
                    .filter(|rs| rs.metadata.uid.as_ref() == Some(&rs_ref.uid))
                else {
                    return;
                };
                if let Some(d) = owner_deployment(&l, &rs.metadata)
                    && replicas::is_recreate(&d)
                {
                    q.add(object_key(d.as_ref()));
                }
            },
        ));

        let controller = Controller {
            client,
            deployments,
            replicasets: rs_informer.lister(),
            pods: pod_informer.lister(),
            queue: queue.clone(),
            recorder: ctx.recorder(CONTROLLER_NAME),
        };
        let workers = ctx.settings.concurrent_deployment_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            super::worker::run_workers_when_synced(
                CONTROLLER_NAME,
                &[&*d_informer, &*rs_informer, &*pod_informer],
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

/// The Deployment controlling a ReplicaSet (by controllerRef, same uid), from the cache.
fn owner_deployment(
    deployments: &Lister<Deployment>,
    meta: &ObjectMeta,
) -> Option<Arc<Deployment>> {
    let r = controller_of(meta).filter(|r| r.kind == "Deployment")?;
    let ns = meta.namespace.as_deref().unwrap_or_default();
    deployments
        .namespace(ns)
        .get(&r.name)
        .filter(|d| d.metadata.uid.as_ref() == Some(&r.uid))
}

/// Enqueues the owner of a ReplicaSet; for an orphan (when `orphans` is set), every
/// Deployment whose selector matches it, as one of them may adopt it.
fn enqueue_for_rs(
    queue: &RateLimitingQueue<String>,
    deployments: &Lister<Deployment>,
    meta: &ObjectMeta,
    orphans: bool,
) {
    if controller_of(meta).is_some() {
        if let Some(d) = owner_deployment(deployments, meta) {
            queue.add(object_key(d.as_ref()));
        }
        return;
    }
    if !orphans || meta.deletion_timestamp.is_some() {
        return;
    }
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let empty = Default::default();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    for d in deployments.namespace(ns).list() {
        let selector = d
            .spec
            .as_ref()
            .map(|s| Selector::from_label_selector(Some(&s.selector)));
        if let Some(Ok(selector)) = selector
            && !selector.is_empty()
            && selector.matches(labels)
        {
            queue.add(object_key(d.as_ref()));
        }
    }
}
