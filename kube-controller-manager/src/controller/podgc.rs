//! Pod garbage collection: too many terminated pods, pods on nodes that are gone, and
//! terminating pods no kubelet will ever finish are force-deleted. Upstream runs this as a
//! pass every 20 s; here the same pass also runs right after a node deletion or a pod
//! finishing, so the obvious cases do not wait for the next tick.

mod gc;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use anyhow::Context;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAME: &str = "pod-garbage-collector-controller";
/// Upstream's gcCheckPeriod.
const GC_PERIOD: Duration = Duration::from_secs(20);
/// How long a node must be missing from the cache before its pods are orphans: the cache may
/// simply not have seen a new node yet.
const QUARANTINE: Duration = Duration::from_secs(40);
const PASS: &str = "gc";

struct PodGc {
    client: kube::Client,
    pods: Lister<Pod>,
    nodes: Lister<Node>,
    queue: RateLimitingQueue<String>,
    threshold: i32,
    /// Nodes whose deletion we watched: no need to wait out the quarantine for them.
    deleted_nodes: Mutex<HashSet<String>>,
    /// Nodes referenced by pods but missing from the cache, and since when.
    missing_since: Mutex<HashMap<String, Instant>>,
}

impl PodGc {
    async fn pass(&self) -> anyhow::Result<()> {
        let pods = self.pods.list();
        let nodes = self.nodes.list();
        let mut failed = 0;
        for pod in gc::terminating_out_of_service(&pods, &nodes) {
            failed += self.delete(&pod, None).await.is_err() as usize;
        }
        for pod in gc::terminated_to_delete(&pods, self.threshold) {
            failed += self.delete(&pod, None).await.is_err() as usize;
        }
        for pod in self.orphans(&pods, &nodes).await {
            let condition = json!({
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "lastTransitionTime": jiff::Timestamp::now().to_string(),
            });
            failed += self.delete(&pod, Some(condition)).await.is_err() as usize;
        }
        for pod in gc::unscheduled_terminating(&pods) {
            failed += self.delete(&pod, None).await.is_err() as usize;
        }
        anyhow::ensure!(failed == 0, "{failed} pods could not be garbage collected");
        Ok(())
    }

    /// Pods whose node is gone: missing from the cache for the quarantine (or seen deleted)
    /// and confirmed absent by a live GET.
    async fn orphans(&self, pods: &[Arc<Pod>], nodes: &[Arc<Node>]) -> Vec<Arc<Pod>> {
        let present: HashSet<&str> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        let referenced: HashSet<&str> = pods
            .iter()
            .filter_map(|p| gc::node_name(p))
            .filter(|n| !present.contains(n))
            .collect();
        let now = Instant::now();
        let candidates: Vec<String> = {
            let mut missing = self.missing_since.lock();
            let mut deleted = self.deleted_nodes.lock();
            let (due, next_check) =
                gc::orphan_candidates(&referenced, &mut missing, &mut deleted, now, QUARANTINE);
            if let Some(left) = next_check {
                self.queue.add_after(PASS.to_string(), left);
            }
            due
        };
        let api = Api::<Node>::all(self.client.clone());
        let mut gone = HashSet::new();
        for name in candidates {
            match api.get_opt(&name).await {
                Ok(None) => {
                    gone.insert(name);
                }
                Ok(Some(_)) => {
                    self.missing_since.lock().remove(&name);
                }
                Err(err) => tracing::warn!(node = %name, "checking whether the node exists: {err}"),
            }
        }
        pods.iter()
            .filter(|p| gc::node_name(p).is_some_and(|n| gone.contains(n)))
            .cloned()
            .collect()
    }

    /// Fails a pod that is not terminal yet (with `condition`), then deletes it at once.
    async fn delete(&self, pod: &Pod, condition: Option<serde_json::Value>) -> anyhow::Result<()> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        tracing::info!(pod = %format!("{ns}/{name}"), "garbage collecting pod");
        let api = Api::<Pod>::namespaced(self.client.clone(), ns);
        let result = async {
            if !gc::is_terminated(pod) {
                let conditions: Vec<_> = condition.into_iter().collect();
                let patch = json!({"status": {"phase": "Failed", "conditions": conditions}});
                api.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await?;
            }
            let mut params = DeleteParams::default().grace_period(0);
            params.preconditions = pod
                .metadata
                .uid
                .clone()
                .map(|uid| kube::api::Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                });
            api.delete(name, &params).await?;
            Ok::<_, kube::Error>(())
        }
        .await;
        match result {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(err) => {
                let err = anyhow::Error::new(err).context(format!("deleting pod {ns}/{name}"));
                tracing::warn!("{err:#}");
                Err(err)
            }
        }
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx
            .client_for("pod-garbage-collector")
            .await
            .context("pod garbage collector client")?;
        let pods = ctx.informers.informer::<Pod>();
        let nodes = ctx.informers.informer::<Node>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(PodGc {
            client,
            pods: pods.lister(),
            nodes: nodes.lister(),
            queue: queue.clone(),
            threshold: ctx.settings.terminated_pod_gc_threshold,
            deleted_nodes: Mutex::new(HashSet::new()),
            missing_since: Mutex::new(HashMap::new()),
        });
        let (c, q) = (controller.clone(), queue.clone());
        nodes.add_event_handler(EventHandlerFuncs::new().on_delete(
            move |d: &client_go_rs::informers::Deleted<Node>| {
                if let Some(name) = d.object().metadata.name.clone() {
                    c.deleted_nodes.lock().insert(name);
                }
                q.add(PASS.to_string());
            },
        ));
        let (qa, qu) = (queue.clone(), queue.clone());
        let threshold = ctx.settings.terminated_pod_gc_threshold;
        pods.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, initial| {
                    if !initial
                        && p.metadata.deletion_timestamp.is_some()
                        && gc::node_name(p).is_none()
                    {
                        qa.add(PASS.to_string());
                    }
                })
                .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    let finished =
                        threshold > 0 && gc::is_terminated(new) && !gc::is_terminated(old);
                    let stranded = new.metadata.deletion_timestamp.is_some()
                        && old.metadata.deletion_timestamp.is_none()
                        && gc::node_name(new).is_none();
                    if finished || stranded {
                        qu.add(PASS.to_string());
                    }
                }),
        );
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            if !pods.wait_for_cache_sync(&shutdown).await
                || !nodes.wait_for_cache_sync(&shutdown).await
            {
                return;
            }
            let ticker = {
                let queue = queue.clone();
                let shutdown = shutdown.clone();
                async move {
                    let mut tick = tokio::time::interval(GC_PERIOD);
                    loop {
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            _ = tick.tick() => queue.add(PASS.to_string()),
                        }
                    }
                }
            };
            let workers = run_workers(NAME, queue, 1, shutdown, move |_key| {
                let controller = controller.clone();
                async move { controller.pass().await }
            });
            tokio::join!(ticker, workers);
        }) as super::Running))
    })
}
