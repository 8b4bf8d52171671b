//! Mirrors the Endpoints of services without a selector (written by hand, not by the
//! endpoints controller) into EndpointSlices, as upstream's endpointslice-mirroring
//! controller.

pub mod desired;

use super::endpointslice::reconcile::{self, Plan};
use super::endpointslice::tracker::Tracker;
use super::endpointslice::writer;
use super::endpointslice::{MANAGED_BY_LABEL, SERVICE_NAME_LABEL, managed_slices};
use super::utils::services;
use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta};
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "endpointslice-mirroring-controller";
const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

struct Controller {
    client: kube::Client,
    services: Lister<Service>,
    endpoints: Lister<Endpoints>,
    slices: Lister<EndpointSlice>,
    tracker: Tracker,
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("endpointslicemirroring-controller").await?;
        let service_informer = ctx.informers.informer::<Service>();
        let endpoints_informer = ctx.informers.informer::<Endpoints>();
        let slice_informer = ctx.informers.informer::<EndpointSlice>();
        let queue: RateLimitingQueue<String> =
            RateLimitingQueue::default_controller("endpoint_slice_mirroring");

        services::enqueue_own_key(&service_informer, &queue);
        services::enqueue_own_key(&endpoints_informer, &queue);

        let controller = Arc::new(Controller {
            client,
            services: service_informer.lister(),
            endpoints: endpoints_informer.lister(),
            slices: slice_informer.lister(),
            tracker: Tracker::default(),
        });
        services::enqueue_owning_service_of_slices(
            &slice_informer,
            &queue,
            MANAGED_BY,
            controller.clone(),
            |c: &Controller| &c.tracker,
        );

        let workers = ctx.settings.mirroring_concurrent_service_endpoint_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                NAME,
                &[&*service_informer, &*endpoints_informer, &*slice_informer],
                queue,
                workers,
                shutdown,
                move |key: String| {
                    let controller = controller.clone();
                    async move { controller.sync(&key).await }
                },
            )
            .await;
        }) as super::Running))
    })
}

/// Endpoints that are mirrored: not marked to skip and not a leader-election lock.
fn should_mirror(endpoints: &Endpoints) -> bool {
    let skip = endpoints
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SKIP_MIRROR_LABEL))
        .is_some_and(|v| v == "true");
    let leader = endpoints
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
    !skip && !leader
}

impl Controller {
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), ns);
        let cached = managed_slices(&self.slices, ns, name, MANAGED_BY);
        let cached_refs: Vec<&EndpointSlice> = cached.iter().map(|s| s.as_ref()).collect();
        if self.tracker.is_stale(key, &cached_refs) {
            anyhow::bail!("EndpointSlice informer cache is out of date for {key}");
        }
        let service = self.services.namespace(ns).get(name);
        let endpoints = self.endpoints.namespace(ns).get(name);
        // Only the Endpoints of an existing selectorless service are mirrored; anything else
        // leaves no mirrored slices behind.
        let mirrored = match (&service, &endpoints) {
            (Some(service), Some(endpoints)) => {
                let has_selector = service
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .is_some();
                (!has_selector && should_mirror(endpoints)).then_some(endpoints)
            }
            _ => None,
        };
        let Some(endpoints) = mirrored else {
            let plan = Plan {
                delete: cached.iter().map(|s| (**s).clone()).collect(),
                ..Default::default()
            };
            return writer::apply(&api, &self.tracker, key, plan, None).await;
        };
        let (groups, truncated) = desired::desired_groups(endpoints);
        if truncated {
            tracing::warn!(
                endpoints = key,
                "Endpoints subset over {} addresses: mirroring only the first",
                desired::MAX_ENDPOINTS_PER_SUBSET
            );
        }
        let uid = endpoints.metadata.uid.clone().unwrap_or_default();
        let (owned, foreign): (Vec<EndpointSlice>, Vec<EndpointSlice>) = cached
            .iter()
            .map(|s| (**s).clone())
            .partition(|s| owned_by(s, &uid));
        let labels = slice_labels(endpoints);
        let new_slice = |address_type: &str, ports: &[EndpointPort]| {
            new_slice_for(endpoints, &labels, address_type, ports)
        };
        let mut plan = reconcile::plan(
            &owned,
            &groups,
            desired::MAX_ENDPOINTS_PER_SUBSET,
            &labels,
            &new_slice,
        );
        plan.delete.extend(foreign);
        if plan.is_empty() {
            return Ok(());
        }
        let trigger = endpoints
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(TRIGGER_TIME_ANNOTATION).cloned());
        writer::apply(&api, &self.tracker, key, plan, trigger.as_deref()).await
    }
}

fn owned_by(slice: &EndpointSlice, uid: &str) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid && r.kind == "Endpoints")
}

fn slice_labels(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
    labels.insert(
        SERVICE_NAME_LABEL.into(),
        endpoints.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    labels
}

fn new_slice_for(
    endpoints: &Endpoints,
    labels: &BTreeMap<String, String>,
    address_type: &str,
    ports: &[EndpointPort],
) -> EndpointSlice {
    let name = endpoints.metadata.name.clone().unwrap_or_default();
    let mut annotations = endpoints.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(LAST_APPLIED_ANNOTATION);
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: endpoints.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Endpoints".into(),
                name,
                uid: endpoints.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: address_type.to_string(),
        ports: Some(ports.to_vec()),
        endpoints: Vec::new(),
    }
}
