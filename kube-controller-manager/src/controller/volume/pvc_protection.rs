//! persistentvolumeclaim-protection-controller: a claim being deleted keeps
//! `kubernetes.io/pvc-protection` while a scheduled, non-terminal pod uses it.

use super::super::utils::controller_ref::controller_of;
use super::super::worker::run_workers_when_synced;
use super::super::{ControllerContext, InitResult, Running};
use super::finalizers::{has_finalizer, with_finalizer, without_finalizer};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, PostParams};
use std::sync::Arc;

const NAME: &str = "pvc-protection";
pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The claims a pod's volumes name: direct claims and generic ephemeral `<pod>-<volume>`.
pub fn pod_claim_names(pod: &Pod) -> Vec<String> {
    pod_claims(pod).into_iter().map(|(name, _)| name).collect()
}

/// Each claim name with whether it comes from an ephemeral volume.
fn pod_claims(pod: &Pod) -> Vec<(String, bool)> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some((c.claim_name.clone(), false))
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| (format!("{pod_name}-{}", v.name), true))
            }
        })
        .collect()
}

/// Whether `pod` keeps `claim` in use: only scheduled pods count (the kubelet refuses to start
/// a pod whose claim is being deleted), terminal ones and ones force-deleted or done with by
/// the kubelet (deletion grace 0) do not, and an ephemeral volume uses the claim of that name
/// only if the claim was made for the pod.
pub fn pod_uses_claim(pod: &Pod, claim: &PersistentVolumeClaim) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    if pod.metadata.deletion_timestamp.is_some()
        && pod.metadata.deletion_grace_period_seconds == Some(0)
    {
        return false;
    }
    if pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty)
    {
        return false;
    }
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    pod_claims(pod).iter().any(|(c, ephemeral)| {
        c == name
            && (!ephemeral
                || controller_of(&claim.metadata)
                    .is_some_and(|r| Some(&r.uid) == pod.metadata.uid.as_ref()))
    })
}

struct PvcProtection {
    client: kube::Client,
    claims: Lister<PersistentVolumeClaim>,
    pods: Lister<Pod>,
}

impl PvcProtection {
    async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(pvc) = self.claims.namespace(ns).get(name) else {
            return Ok(());
        };
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        let deleting = pvc.metadata.deletion_timestamp.is_some();
        if !deleting && !has_finalizer(&pvc.metadata, FINALIZER) {
            let mut updated = (*pvc).clone();
            updated.metadata.finalizers = Some(with_finalizer(&pvc.metadata, FINALIZER));
            api.replace(name, &PostParams::default(), &updated)
                .await
                .map_err(|e| {
                    anyhow::anyhow!("adding the protection finalizer to claim {key}: {e}")
                })?;
            return Ok(());
        }
        if !deleting || !has_finalizer(&pvc.metadata, FINALIZER) {
            return Ok(());
        }
        let in_cache = self
            .pods
            .namespace(ns)
            .list()
            .iter()
            .any(|p| pod_uses_claim(p, &pvc));
        if in_cache {
            return Ok(());
        }
        // The informer may not have seen a pod created just now: confirm with a live list
        // before letting the claim go, as upstream.
        let live = Api::<Pod>::namespaced(self.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .map_err(|e| anyhow::anyhow!("listing pods of namespace {ns}: {e}"))?;
        if live.items.iter().any(|p| pod_uses_claim(p, &pvc)) {
            return Ok(());
        }
        let mut updated = (*pvc).clone();
        updated.metadata.finalizers = Some(without_finalizer(&pvc.metadata, FINALIZER));
        api.replace(name, &PostParams::default(), &updated)
            .await
            .map_err(|e| {
                anyhow::anyhow!("removing the protection finalizer of claim {key}: {e}")
            })?;
        Ok(())
    }
}

fn claim_needs_sync(pvc: &PersistentVolumeClaim) -> bool {
    let has = has_finalizer(&pvc.metadata, FINALIZER);
    (pvc.metadata.deletion_timestamp.is_some() && has)
        || (pvc.metadata.deletion_timestamp.is_none() && !has)
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("pvc-protection-controller").await?;
        let claims = ctx.informers.informer::<PersistentVolumeClaim>();
        let pods = ctx.informers.informer::<Pod>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(PvcProtection {
            client,
            claims: claims.lister(),
            pods: pods.lister(),
        });
        let (q1, q2) = (queue.clone(), queue.clone());
        claims.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |c: &Arc<PersistentVolumeClaim>, _| {
                    if claim_needs_sync(c) {
                        q1.add(object_key(c.as_ref()));
                    }
                })
                .on_update(move |_, c: &Arc<PersistentVolumeClaim>| {
                    if claim_needs_sync(c) {
                        q2.add(object_key(c.as_ref()));
                    }
                }),
        );
        // A pod event can free a claim being deleted: requeue only those.
        let lister = claims.lister();
        let pod_queue = queue.clone();
        let enqueue_pod_claims = Arc::new(move |pod: &Pod| {
            let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
            for claim in pod_claim_names(pod) {
                if lister
                    .namespace(ns)
                    .get(&claim)
                    .is_some_and(|c| c.metadata.deletion_timestamp.is_some())
                {
                    pod_queue.add(format!("{ns}/{claim}"));
                }
            }
        });
        let (e1, e2, e3) = (
            enqueue_pod_claims.clone(),
            enqueue_pod_claims.clone(),
            enqueue_pod_claims.clone(),
        );
        pods.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| e1(p))
                .on_update(move |_, p: &Arc<Pod>| e2(p))
                .on_delete(move |d: &Deleted<Pod>| e3(d.object())),
        );
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(NAME, &[&*claims, &*pods], queue, 1, shutdown, move |key| {
                let controller = controller.clone();
                async move { controller.sync(key).await }
            })
            .await;
        }) as Running))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(extra: serde_json::Value) -> Pod {
        let mut v = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
            "spec": {"nodeName": "n1", "containers": [], "volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "direct"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
            ]},
            "status": {"phase": "Running"}
        });
        for (k, val) in extra.as_object().into_iter().flatten() {
            for (k2, v2) in val.as_object().into_iter().flatten() {
                v[k][k2] = v2.clone();
            }
        }
        serde_json::from_value(v).expect("pod")
    }

    fn claim(name: &str, owner_uid: Option<&str>) -> PersistentVolumeClaim {
        let owners: Vec<_> = owner_uid
            .map(|u| json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": u, "controller": true}))
            .into_iter()
            .collect();
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "ns", "ownerReferences": owners}}),
        )
        .expect("claim")
    }

    #[test]
    fn which_pods_use_a_claim() {
        let cases = [
            (
                "running pod, direct claim",
                pod(json!({})),
                claim("direct", None),
                true,
            ),
            ("other claim", pod(json!({})), claim("else", None), false),
            (
                "unscheduled",
                pod(json!({"spec": {"nodeName": ""}})),
                claim("direct", None),
                false,
            ),
            (
                "succeeded",
                pod(json!({"status": {"phase": "Succeeded"}})),
                claim("direct", None),
                false,
            ),
            (
                "failed",
                pod(json!({"status": {"phase": "Failed"}})),
                claim("direct", None),
                false,
            ),
            (
                "pending but scheduled",
                pod(json!({"status": {"phase": "Pending"}})),
                claim("direct", None),
                true,
            ),
            (
                "force-deleted",
                pod(
                    json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}}),
                ),
                claim("direct", None),
                false,
            ),
            (
                "terminating with grace",
                pod(
                    json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}}),
                ),
                claim("direct", None),
                true,
            ),
            (
                "ephemeral claim of the pod",
                pod(json!({})),
                claim("p-scratch", Some("pod-uid")),
                true,
            ),
            (
                "ephemeral name, not the pod's claim",
                pod(json!({})),
                claim("p-scratch", Some("other")),
                false,
            ),
        ];
        for (name, pod, claim, want) in cases {
            assert_eq!(pod_uses_claim(&pod, &claim), want, "{name}");
        }
    }
}
