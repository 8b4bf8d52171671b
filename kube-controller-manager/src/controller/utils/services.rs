//! Informer wiring the endpoints, endpointslice and endpointslice-mirroring controllers share:
//! each of them syncs per service, so every event is mapped to the keys of the services it
//! concerns.

use crate::controller::endpoint::pods::services_selecting;
use crate::controller::endpointslice::owning_service;
use crate::controller::endpointslice::tracker::Tracker;
use client_go_rs::informers::{EventHandlerFuncs, InformerObject, SharedInformer};
use client_go_rs::listers::{Lister, object_key};
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::sync::Arc;

/// Queues the object's own key on every event: for objects named as their service (the
/// service itself, its Endpoints).
pub fn enqueue_own_key<K: InformerObject>(
    informer: &SharedInformer<K>,
    queue: &RateLimitingQueue<String>,
) {
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |o: &Arc<K>, _| q1.add(object_key(o.as_ref())))
            .on_update(move |_, o: &Arc<K>| q2.add(object_key(o.as_ref())))
            .on_delete(move |d| q3.add(object_key(d.object().as_ref()))),
    );
}

/// Queues the services selecting a pod; on update those selecting its old or its new labels,
/// so a service the pod left is synced too. Resyncs (same resource version) are skipped.
pub fn enqueue_services_selecting_pods(
    pod_informer: &SharedInformer<Pod>,
    services: &Lister<Service>,
    queue: &RateLimitingQueue<String>,
) {
    let enqueue = {
        let q = queue.clone();
        let services = services.clone();
        move |pods: &[&Pod]| {
            for key in services_selecting(&services, pods) {
                q.add(key);
            }
        }
    };
    let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), enqueue);
    pod_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |p: &Arc<Pod>, _| on_add(&[p]))
            .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                if old.metadata.resource_version != new.metadata.resource_version {
                    on_update(&[old, new]);
                }
            })
            .on_delete(move |d| on_delete(&[d.object()])),
    );
}

/// Queues the service owning a slice managed by `managed_by` on any change to it, whoever made
/// it; a deleted slice is also no longer expected by the controller's `tracker`.
pub fn enqueue_owning_service_of_slices<C: Send + Sync + 'static>(
    slice_informer: &SharedInformer<EndpointSlice>,
    queue: &RateLimitingQueue<String>,
    managed_by: &'static str,
    controller: Arc<C>,
    tracker: fn(&C) -> &Tracker,
) {
    let (q1, q2) = (queue.clone(), queue.clone());
    let on_change = move |s: &EndpointSlice| {
        if let Some(key) = owning_service(s, managed_by) {
            q1.add(key);
        }
    };
    let on_change2 = on_change.clone();
    slice_informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<EndpointSlice>, _| on_change(s))
            .on_update(move |_, s: &Arc<EndpointSlice>| on_change2(s))
            .on_delete(move |d| {
                let s = d.object();
                if let Some(key) = owning_service(s, managed_by) {
                    if let Some(uid) = &s.metadata.uid {
                        tracker(&controller).forget_slice(&key, uid);
                    }
                    q2.add(key);
                }
            }),
    );
}
