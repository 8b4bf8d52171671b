//! Finished Jobs deleted after ttlSecondsAfterFinished: each finished Job with a TTL is
//! requeued for the moment it expires, re-read from the server and deleted in the
//! foreground (its pods first).

use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, Preconditions, PropagationPolicy};
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

const CONTROLLER_NAME: &str = "ttl-after-finished-controller";

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for(CONTROLLER_NAME).await?;
        let informer = ctx.informers.informer::<Job>();
        let queue: RateLimitingQueue<String> =
            RateLimitingQueue::default_controller("ttl_jobs_to_delete");
        let (q1, q2) = (queue.clone(), queue.clone());
        informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |j: &Arc<Job>, _| enqueue_if_needed(&q1, j))
                .on_update(move |_, j: &Arc<Job>| enqueue_if_needed(&q2, j)),
        );
        let controller = Arc::new(Controller {
            client,
            jobs: informer.lister(),
            queue: queue.clone(),
        });
        let shutdown = ctx.shutdown.clone();
        let workers = ctx.settings.concurrent_ttl_after_finished_syncs;
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                CONTROLLER_NAME,
                &[&*informer],
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

fn enqueue_if_needed(queue: &RateLimitingQueue<String>, job: &Job) {
    if expires_at(job).is_some() {
        queue.add(object_key(job));
    }
}

/// When a finished Job with a TTL expires: its Complete or Failed condition's transition
/// time plus the TTL. None for Jobs without a TTL, unfinished, or already being deleted.
pub fn expires_at(job: &Job) -> Option<Timestamp> {
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = job
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")?;
    let at = finished.last_transition_time.as_ref()?.0;
    Some(at + SignedDuration::from_secs(i64::from(ttl)))
}

struct Controller {
    client: Client,
    jobs: Lister<Job>,
    queue: RateLimitingQueue<String>,
}

impl Controller {
    async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(cached) = self.jobs.namespace(ns).get(name) else {
            return Ok(());
        };
        let now = Timestamp::now();
        let Some(expiry) = expires_at(&cached) else {
            return Ok(());
        };
        if expiry > now {
            self.queue.add_after(key, until(expiry, now));
            return Ok(());
        }
        // The cache may be stale (TTL changed, Job restarted): decide on a fresh read.
        let api: Api<Job> = Api::namespaced(self.client.clone(), ns);
        let Some(fresh) = api
            .get_opt(name)
            .await
            .with_context(|| format!("reading job {key}"))?
        else {
            return Ok(());
        };
        let Some(expiry) = expires_at(&fresh) else {
            return Ok(());
        };
        if expiry > now {
            self.queue.add_after(key, until(expiry, now));
            return Ok(());
        }
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                resource_version: fresh.metadata.resource_version.clone(),
            }),
            ..Default::default()
        };
        match api.delete(name, &dp).await {
            Ok(_) => {
                tracing::info!(job = key, "deleted finished job after its TTL");
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(err) => Err(err).with_context(|| format!("deleting job {key}")),
        }
    }
}

fn until(at: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or_default() + Duration::from_millis(100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expiry() {
        let job = |ttl: Option<i32>, cond: Option<(&str, &str)>, deleting: bool| -> Job {
            let mut v = json!({"metadata": {"name": "j"}, "spec": {"template": {}}, "status": {}});
            if let Some(ttl) = ttl {
                v["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
            }
            if let Some((ty, st)) = cond {
                v["status"]["conditions"] = json!([{"type": ty, "status": st,
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
            }
            if deleting {
                v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z");
            }
            serde_json::from_value(v).expect("job")
        };
        let at = |s: &str| Some(s.parse::<Timestamp>().expect("ts"));
        let cases = [
            (
                job(Some(5), Some(("Complete", "True")), false),
                at("2026-01-01T00:00:05Z"),
            ),
            (
                job(Some(0), Some(("Failed", "True")), false),
                at("2026-01-01T00:00:00Z"),
            ),
            (job(None, Some(("Complete", "True")), false), None),
            (job(Some(5), Some(("Complete", "False")), false), None),
            (
                job(Some(5), Some(("SuccessCriteriaMet", "True")), false),
                None,
            ),
            (job(Some(5), None, false), None),
            (job(Some(5), Some(("Complete", "True")), true), None),
        ];
        for (i, (j, want)) in cases.into_iter().enumerate() {
            assert_eq!(expires_at(&j), want, "case {i}");
        }
    }
}
