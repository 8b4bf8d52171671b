//! EndpointSlices of Services: for every service with a selector, discovery.k8s.io/v1
//! EndpointSlices (per address family and port set, at most 100 endpoints each) listing the
//! pods it selects, kept with little churn (upstream's endpointslice controller).

pub mod desired;
pub mod reconcile;
pub mod tracker;
pub mod writer;

use super::endpoint::pods::{self, HEADLESS_LABEL};
use super::utils::services;
use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta};
use std::collections::BTreeMap;
use std::sync::Arc;
use tracker::Tracker;

const NAME: &str = "endpointslice-controller";
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// Upstream's `--max-endpoints-per-slice` default.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;
const TOPOLOGY_ZONE_LABEL: &str = "topology.kubernetes.io/zone";

struct Controller {
    client: kube::Client,
    services: Lister<Service>,
    pods: Lister<Pod>,
    nodes: Lister<Node>,
    slices: Lister<EndpointSlice>,
    tracker: Tracker,
    trigger_times: super::endpoint::trigger_time::TriggerTimeTracker,
}

/// The `namespace/service` a slice managed by `managed_by` belongs to.
pub fn owning_service(slice: &EndpointSlice, managed_by: &str) -> Option<String> {
    let labels = slice.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(managed_by) {
        return None;
    }
    let service = labels.get(SERVICE_NAME_LABEL)?;
    Some(format!(
        "{}/{service}",
        slice.metadata.namespace.as_deref().unwrap_or_default()
    ))
}

/// The slices of `namespace/name` managed by `managed_by`, from the cache.
pub fn managed_slices(
    slices: &Lister<EndpointSlice>,
    ns: &str,
    name: &str,
    managed_by: &str,
) -> Vec<Arc<EndpointSlice>> {
    slices.namespace(ns).list_matching(|s| {
        let labels = s.metadata.labels.as_ref();
        labels
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
            .map(String::as_str)
            == Some(name)
            && labels
                .and_then(|l| l.get(MANAGED_BY_LABEL))
                .map(String::as_str)
                == Some(managed_by)
    })
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("endpointslice-controller").await?;
        let service_informer = ctx.informers.informer::<Service>();
        let pod_informer = ctx.informers.informer::<Pod>();
        let node_informer = ctx.informers.informer::<Node>();
        let slice_informer = ctx.informers.informer::<EndpointSlice>();
        let queue: RateLimitingQueue<String> =
            RateLimitingQueue::default_controller("endpoint_slice");
        let services = service_informer.lister();

        services::enqueue_own_key(&service_informer, &queue);
        services::enqueue_services_selecting_pods(&pod_informer, &services, &queue);

        let controller = Arc::new(Controller {
            client,
            services,
            pods: pod_informer.lister(),
            nodes: node_informer.lister(),
            slices: slice_informer.lister(),
            tracker: Tracker::default(),
            trigger_times: Default::default(),
        });

        // Changes to our slices by anyone (and our own, once the cache sees them) resync the
        // service.
        services::enqueue_owning_service_of_slices(
            &slice_informer,
            &queue,
            MANAGED_BY,
            controller.clone(),
            |c: &Controller| &c.tracker,
        );

        let workers = ctx.settings.concurrent_service_endpoint_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                NAME,
                &[
                    &*service_informer,
                    &*pod_informer,
                    &*node_informer,
                    &*slice_informer,
                ],
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

impl Controller {
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), ns);
        let cached = managed_slices(&self.slices, ns, name, MANAGED_BY);
        let Some(service) = self.services.namespace(ns).get(name) else {
            // The garbage collector removes them by owner reference too; not waiting for it
            // keeps a deleted service from being served by stale slices.
            self.tracker.forget_service(key);
            self.trigger_times.delete_service(key);
            let plan = reconcile::Plan {
                delete: cached.iter().map(|s| (**s).clone()).collect(),
                ..Default::default()
            };
            return writer::apply(&api, &self.tracker, key, plan, None).await;
        };
        // Services without a selector get slices by hand (or mirrored from their Endpoints);
        // ExternalName services get none.
        let Some(selector) = pods::service_selector(&service) else {
            return Ok(());
        };
        if pods::is_external_name(&service) {
            return Ok(());
        }
        let cached_refs: Vec<&EndpointSlice> = cached.iter().map(|s| s.as_ref()).collect();
        if self.tracker.is_stale(key, &cached_refs) {
            anyhow::bail!("EndpointSlice informer cache is out of date for {key}");
        }
        let uid = service.metadata.uid.clone().unwrap_or_default();
        let (owned, foreign): (Vec<EndpointSlice>, Vec<EndpointSlice>) = cached
            .iter()
            .map(|s| (**s).clone())
            .partition(|s| owned_by(s, &uid));

        let selected = pods::selected_pods(&self.pods, &service, &selector);
        let zone_of = |node: &str| -> Option<Option<String>> {
            let node = self.nodes.get(node)?;
            Some(
                node.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(TOPOLOGY_ZONE_LABEL).cloned()),
            )
        };
        let (groups, errors) = desired::desired_groups(&service, &selected, &zone_of);
        let trigger = self
            .trigger_times
            .compute(key, &service, &selected)
            .map(pods::format_trigger_time);
        let labels = slice_labels(&service);
        let new_slice = |address_type: &str, ports: &[EndpointPort]| {
            new_slice_for(&service, &labels, address_type, ports)
        };
        let mut plan = reconcile::plan(
            &owned,
            &groups,
            MAX_ENDPOINTS_PER_SLICE,
            &labels,
            &new_slice,
        );
        // Slices of an earlier service of the same name.
        plan.delete.extend(foreign);
        if !plan.is_empty() {
            writer::apply(&api, &self.tracker, key, plan, trigger.as_deref()).await?;
        }
        if !errors.is_empty() {
            anyhow::bail!("{}", errors.join("; "));
        }
        Ok(())
    }
}

fn owned_by(slice: &EndpointSlice, uid: &str) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid && r.kind == "Service")
}

/// The service's labels plus the labels that tie a slice to it and to this controller.
fn slice_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.remove(HEADLESS_LABEL);
    if pods::is_headless(service) {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels.insert(
        SERVICE_NAME_LABEL.into(),
        service.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    labels
}

fn new_slice_for(
    service: &Service,
    labels: &BTreeMap<String, String>,
    address_type: &str,
    ports: &[EndpointPort],
) -> EndpointSlice {
    let name = service.metadata.name.clone().unwrap_or_default();
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: service.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name,
                uid: service.metadata.uid.clone().unwrap_or_default(),
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
