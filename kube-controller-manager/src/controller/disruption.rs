//! PodDisruptionBudget status: how many of the selected pods are expected and healthy, how
//! many must stay healthy, and so how many voluntary disruptions (evictions) are allowed now
//! (upstream's disruption controller). The apiserver's eviction subresource reads it.

pub mod scale;
pub mod stale;
pub mod status;

use super::utils::controller_ref::object_reference;
use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "disruption-controller";
/// Upstream runs a fixed two workers.
const WORKERS: usize = 2;

struct Controller {
    client: kube::Client,
    pdbs: Lister<PodDisruptionBudget>,
    pods: Lister<Pod>,
    finders: scale::Finders,
    recorder: EventRecorder,
    queue: RateLimitingQueue<String>,
    /// Pods whose DisruptionTarget condition may go stale.
    stale_queue: RateLimitingQueue<String>,
}

/// The budget's selector: a null one selects nothing, an empty one every pod.
fn pdb_selector(pdb: &PodDisruptionBudget) -> Option<Selector> {
    let selector = pdb.spec.as_ref()?.selector.as_ref()?;
    Selector::from_label_selector(Some(selector)).ok()
}

fn budgets_for_pod(pdbs: &Lister<PodDisruptionBudget>, pod: &Pod) -> Vec<String> {
    let Some(ns) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    pdbs.namespace(ns)
        .list()
        .into_iter()
        .filter(|pdb| pdb_selector(pdb).is_some_and(|s| s.matches(labels)))
        .map(|pdb| object_key(pdb.as_ref()))
        .collect()
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("disruption-controller").await?;
        let pdb_informer = ctx.informers.informer::<PodDisruptionBudget>();
        let pod_informer = ctx.informers.informer::<Pod>();
        let rs_informer = ctx.informers.informer::<ReplicaSet>();
        let deploy_informer = ctx.informers.informer::<Deployment>();
        let ss_informer = ctx.informers.informer::<StatefulSet>();
        let rc_informer = ctx.informers.informer::<ReplicationController>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("disruption");
        let stale_queue: RateLimitingQueue<String> =
            RateLimitingQueue::default_controller("stale_pod_disruption");
        let pdbs = pdb_informer.lister();

        let q = queue.clone();
        let enqueue = move |p: &PodDisruptionBudget| q.add(object_key(p));
        let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), enqueue);
        pdb_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p, _| on_add(p))
                .on_update(move |_, p| on_update(p))
                .on_delete(move |d| on_delete(d.object())),
        );

        let enqueue_for_pod = {
            let q = queue.clone();
            let stale_q = stale_queue.clone();
            let pdbs = pdbs.clone();
            move |pod: &Pod| {
                for key in budgets_for_pod(&pdbs, pod) {
                    q.add(key);
                }
                if let Some(wait) = stale::stale_in(pod, jiff::Timestamp::now()) {
                    stale_q.add_after(object_key(pod), wait);
                }
            }
        };
        let (on_add, on_update, on_delete) = (
            enqueue_for_pod.clone(),
            enqueue_for_pod.clone(),
            enqueue_for_pod,
        );
        pod_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| on_add(p))
                .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    if old.metadata.resource_version == new.metadata.resource_version {
                        return;
                    }
                    if old.metadata.labels != new.metadata.labels {
                        on_update(old);
                    }
                    on_update(new);
                })
                .on_delete(move |d| on_delete(d.object())),
        );

        let controller = Arc::new(Controller {
            client: client.clone(),
            pdbs,
            pods: pod_informer.lister(),
            finders: scale::Finders {
                client,
                replica_sets: rs_informer.lister(),
                deployments: deploy_informer.lister(),
                stateful_sets: ss_informer.lister(),
                replication_controllers: rc_informer.lister(),
            },
            recorder: ctx.recorder("controllermanager"),
            queue: queue.clone(),
            stale_queue: stale_queue.clone(),
        });
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            if !pdb_informer.wait_for_cache_sync(&shutdown).await
                || !pod_informer.wait_for_cache_sync(&shutdown).await
                || !rs_informer.wait_for_cache_sync(&shutdown).await
                || !deploy_informer.wait_for_cache_sync(&shutdown).await
                || !ss_informer.wait_for_cache_sync(&shutdown).await
                || !rc_informer.wait_for_cache_sync(&shutdown).await
            {
                return;
            }
            let c = controller.clone();
            let budgets = run_workers(
                NAME,
                queue,
                WORKERS,
                shutdown.clone(),
                move |key: String| {
                    let controller = c.clone();
                    async move { controller.sync(&key).await }
                },
            );
            let stale = run_workers(NAME, stale_queue, WORKERS, shutdown, move |key: String| {
                let controller = controller.clone();
                async move { controller.sync_stale_pod(&key).await }
            });
            futures::join!(budgets, stale);
        }) as super::Running))
    })
}

impl Controller {
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let Some(pdb) = self.pdbs.namespace(ns).get(name) else {
            return Ok(());
        };
        let reference = object_reference(&pdb.metadata, "policy/v1", "PodDisruptionBudget");
        let pods = match pdb_selector(&pdb) {
            Some(selector) => self.pods.namespace(ns).list_selected(&selector),
            None => Vec::new(),
        };
        if pods.is_empty() {
            self.recorder.event(
                &reference,
                EventType::Normal,
                "NoPods",
                "No matching pods found",
            );
        }
        let spec = pdb.spec.clone().unwrap_or_default();
        let needs_scale = spec.max_unavailable.is_some()
            || matches!(
                spec.min_available,
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(_))
            );
        let scales = if needs_scale {
            self.finders.resolve(ns, &pods).await
        } else {
            Default::default()
        };
        let scale_of =
            |_: &Pod, owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference| {
                match scales.get(&owner.uid) {
                    Some(Ok(scale)) => Ok(scale.clone()),
                    Some(Err(e)) => Err(anyhow::anyhow!("{e}")),
                    None => Err(anyhow::anyhow!("no scale found for {}", owner.name)),
                }
            };
        let now = jiff::Timestamp::now();
        let (expected, desired, unmanaged) =
            match status::expected_and_desired(&pdb, &pods, &scale_of) {
                Ok(counts) => counts,
                Err(err) => {
                    self.recorder.event(
                        &reference,
                        EventType::Warning,
                        "CalculateExpectedPodCountFailed",
                        format!("Failed to calculate the number of expected pods: {err:#}"),
                    );
                    self.fail_safe(&pdb, &format!("{err:#}"), now).await?;
                    return Err(err).context(format!("PodDisruptionBudget {key}"));
                }
            };
        if !unmanaged.is_empty() {
            self.recorder.event(
                &reference,
                EventType::Warning,
                "UnmanagedPods",
                format!(
                    "Pods selected by this PodDisruptionBudget were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value. Unmanaged pods: {}",
                    unmanaged.join(", ")
                ),
            );
        }
        let (disrupted, recheck) = status::pending_disruptions(&pdb, &pods, now);
        let healthy = status::count_healthy(&pods, &disrupted);
        let new_status = status::build_status(&pdb, healthy, desired, expected, disrupted, now);
        if pdb.status.as_ref() != Some(&new_status) {
            let mut updated = (*pdb).clone();
            updated.status = Some(new_status);
            self.write_status(&updated).await?;
        }
        if let Some(at) = recheck {
            let wait = at.duration_since(now).unsigned_abs();
            self.queue
                .add_after(key.to_string(), wait + Duration::from_millis(100));
        }
        Ok(())
    }

    /// Resets a DisruptionTarget condition whose pod was not deleted in time.
    async fn sync_stale_pod(&self, key: &str) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let Some(pod) = self.pods.namespace(ns).get(name) else {
            return Ok(());
        };
        match stale::stale_in(&pod, jiff::Timestamp::now()) {
            None => Ok(()),
            Some(wait) if wait > Duration::ZERO => {
                self.stale_queue.add_after(key.to_string(), wait);
                Ok(())
            }
            Some(_) => {
                let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
                let patch = serde_json::json!({"status": {"conditions": [{
                    "type": stale::DISRUPTION_TARGET,
                    "status": "False",
                    "lastTransitionTime": jiff::Timestamp::now().to_string(),
                }]}});
                api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                    .with_context(|| {
                        format!("resetting the DisruptionTarget condition of {key}")
                    })?;
                Ok(())
            }
        }
    }

    /// What a budget says when its status cannot be computed: no disruption allowed.
    async fn fail_safe(
        &self,
        pdb: &PodDisruptionBudget,
        message: &str,
        now: jiff::Timestamp,
    ) -> anyhow::Result<()> {
        let mut updated = pdb.clone();
        let status = updated.status.get_or_insert_default();
        status.disruptions_allowed = 0;
        let observed = status.observed_generation;
        let conditions = status.conditions.get_or_insert_default();
        status::set_condition(
            conditions,
            false,
            status::SYNC_FAILED,
            message,
            observed,
            now,
        );
        if updated.status != pdb.status {
            self.write_status(&updated).await?;
        }
        Ok(())
    }

    async fn write_status(&self, pdb: &PodDisruptionBudget) -> anyhow::Result<()> {
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let name = pdb.metadata.name.as_deref().unwrap_or_default();
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), ns);
        api.replace_status(name, &PostParams::default(), pdb)
            .await
            .with_context(|| format!("updating the status of PodDisruptionBudget {ns}/{name}"))?;
        Ok(())
    }
}
