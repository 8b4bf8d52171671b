//! ephemeral-volume-controller: every `ephemeral.volumeClaimTemplate` volume of a pod gets
//! its claim `<pod>-<volume>`, owned by the pod.

use super::super::utils::controller_ref::{controller_of, new_controller_ref, object_reference};
use super::super::worker::run_workers_when_synced;
use super::super::{ControllerContext, InitResult, Running};
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use std::sync::Arc;

const NAME: &str = "ephemeral_volume";

fn has_ephemeral(pod: &Pod) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .any(|v| v.ephemeral.is_some())
}

/// The claim to create for each ephemeral volume of `pod`.
pub fn desired_claims(pod: &Pod) -> Vec<(String, PersistentVolumeClaim)> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let Some(template) = v
            .ephemeral
            .as_ref()
            .and_then(|e| e.volume_claim_template.as_ref())
        else {
            continue;
        };
        let name = format!("{pod_name}-{}", v.name);
        let meta = template.metadata.clone().unwrap_or_default();
        let claim = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: pod.metadata.namespace.clone(),
                labels: meta.labels,
                annotations: meta.annotations,
                owner_references: Some(vec![new_controller_ref(&pod.metadata, "v1", "Pod")]),
                ..Default::default()
            },
            spec: Some(template.spec.clone()),
            status: None,
        };
        out.push((v.name.clone(), claim));
    }
    out
}

struct Ephemeral {
    client: kube::Client,
    pods: Lister<Pod>,
    claims: Lister<PersistentVolumeClaim>,
    recorder: EventRecorder,
}

impl Ephemeral {
    async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(pod) = self.pods.namespace(ns).get(name) else {
            return Ok(());
        };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        for (volume, claim) in desired_claims(&pod) {
            let claim_name = claim.metadata.name.clone().unwrap_or_default();
            let result = match self.claims.namespace(ns).get(&claim_name) {
                Some(existing) => {
                    let owned = controller_of(&existing.metadata)
                        .is_some_and(|r| Some(&r.uid) == pod.metadata.uid.as_ref());
                    if owned {
                        Ok(())
                    } else {
                        Err(format!(
                            "PVC {ns}/{claim_name} was not created for pod {ns}/{name} (pod is not owner)"
                        ))
                    }
                }
                None => match api.create(&PostParams::default(), &claim).await {
                    Ok(_) => Ok(()),
                    // The informer has not seen it yet; the next sync checks the owner.
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                    Err(e) => Err(format!("create PVC {claim_name}: {e}")),
                },
            };
            if let Err(err) = result {
                self.recorder.event(
                    &object_reference(&pod.metadata, "v1", "Pod"),
                    EventType::Warning,
                    "FailedBinding",
                    format!("ephemeral volume {volume}: {err}"),
                );
                anyhow::bail!("pod {key}, ephemeral volume {volume}: {err}");
            }
        }
        Ok(())
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("ephemeral-volume-controller").await?;
        let pods = ctx.informers.informer::<Pod>();
        let claims = ctx.informers.informer::<PersistentVolumeClaim>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(Ephemeral {
            client,
            pods: pods.lister(),
            claims: claims.lister(),
            recorder: ctx.recorder("ephemeral_volume"),
        });
        let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
        pods.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| {
                    if has_ephemeral(p) {
                        q1.add(object_key(p.as_ref()));
                    }
                })
                .on_update(move |_, p: &Arc<Pod>| {
                    if has_ephemeral(p) {
                        q2.add(object_key(p.as_ref()));
                    }
                }),
        );
        // A claim deleted under a live pod is recreated.
        claims.add_event_handler(EventHandlerFuncs::new().on_delete(
            move |d: &Deleted<PersistentVolumeClaim>| {
                let c = d.object();
                if let Some(owner) = controller_of(&c.metadata).filter(|r| r.kind == "Pod") {
                    let ns = c.metadata.namespace.as_deref().unwrap_or_default();
                    q3.add(format!("{ns}/{}", owner.name));
                }
            },
        ));
        let shutdown = ctx.shutdown.clone();
        // Upstream's `--concurrent-ephemeralvolume-syncs` default; the flag is not parsed here.
        let workers = 5;
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                NAME,
                &[&*pods, &*claims],
                queue,
                workers,
                shutdown,
                move |key| {
                    let controller = controller.clone();
                    async move { controller.sync(key).await }
                },
            )
            .await;
        }) as Running))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_follow_the_template() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "p1"},
            "spec": {"containers": [], "volumes": [
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
                {"name": "plain", "emptyDir": {}}
            ]}
        }))
        .expect("pod");
        let claims = desired_claims(&pod);
        assert_eq!(claims.len(), 1);
        let (volume, claim) = &claims[0];
        assert_eq!(volume, "scratch");
        assert_eq!(claim.metadata.name.as_deref(), Some("web-scratch"));
        assert_eq!(
            claim
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("a"))
                .map(String::as_str),
            Some("b")
        );
        let owner = controller_of(&claim.metadata).expect("owner");
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.uid.as_str(),
                owner.block_owner_deletion
            ),
            ("Pod", "p1", Some(true))
        );
        assert_eq!(
            claim.spec.as_ref().and_then(|s| s.access_modes.clone()),
            Some(vec!["ReadWriteOnce".to_string()])
        );
    }
}
