//! One sync of a Job: read its pods, decide its outcome, create or delete pods, and record
//! the result in its status with upstream's three steps for finished pods (record them as
//! uncounted, drop their tracking finalizer, then count them).

use super::conditions::{
    self, COMPLETE, FAILED, FAILURE_TARGET, SUCCESS_CRITERIA_MET, SUSPENDED, finished,
};
use super::finalizers::FinalizerExpectations;
use super::indexes;
use super::pods::{TRACKING_FINALIZER, base_template, has_finalizer, is_indexed, new_pod};
use super::tally::{Tally, tally};
use crate::controller::utils::controller_ref::{
    ClaimOwner, claim_objects, controller_of, new_controller_ref, object_reference, recheck_owner,
};
use crate::controller::utils::expectations::ControllerExpectations;
use crate::controller::utils::pod_control::PodControl;
use crate::controller::utils::pods::{pods_by_controller, slow_start_batch};
use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

pub const CONTROLLER_NAME: &str = "job-controller";
const MANAGED_BY_US: &str = "kubernetes.io/job-controller";

pub struct Controller {
    pub client: Client,
    pub jobs: Lister<Job>,
    pub pods: Lister<Pod>,
    pub expectations: ControllerExpectations,
    pub pod_control: PodControl,
    pub recorder: EventRecorder,
    pub finalizers: FinalizerExpectations,
    pub queue: RateLimitingQueue<String>,
}

/// How a Job ends: the interim condition (FailureTarget / SuccessCriteriaMet) is written
/// first; the terminal one (Failed / Complete) once no pod of the Job is left running.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    pub failed: bool,
    pub reason: String,
    pub message: String,
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

impl Controller {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(job) = self.jobs.namespace(ns).get(name) else {
            self.expectations.delete(&key);
            self.finalizers.delete(&key);
            return self.release_orphans(&key, ns, name).await;
        };
        let spec = job.spec.clone().unwrap_or_default();
        if spec
            .managed_by
            .as_deref()
            .is_some_and(|m| m != MANAGED_BY_US)
        {
            return Ok(());
        }
        let now = Timestamp::now();
        let satisfied = self.expectations.satisfied(&key);
        let pods = self.claim_pods(&job).await?;
        let done_before = finished(&job).cloned();
        let deleting = job.metadata.deletion_timestamp.is_some();
        let pending = self.finalizers.pending(&key);
        let t = tally(&job, &pods, done_before.is_some() || deleting, &pending);
        let old_status = job.status.clone().unwrap_or_default();
        let mut status = old_status.clone();
        let job_ref = object_reference(&job.metadata, "batch/v1", "Job");
        let indexed = is_indexed(&job);
        let succeeded_total = if indexed {
            t.succeeded_indexes.len() as i32
        } else {
            status.succeeded.unwrap_or(0) + t.uncounted_succeeded.len() as i32
        };
        let failed_total = status.failed.unwrap_or(0) + t.uncounted_failed.len() as i32;

        let outcome = if done_before.is_some() || deleting {
            None
        } else {
            outcome(&job, &t, succeeded_total, failed_total, now)
        };
        let mut active = t.active.clone();
        let mut changed_pods = false;
        if let Some(o) = &outcome {
            let (ty, reason) = if o.failed {
                (FAILURE_TARGET, o.reason.as_str())
            } else {
                (SUCCESS_CRITERIA_MET, o.reason.as_str())
            };
            conditions::set(&mut status, ty, "True", reason, &o.message, now);
        }
        if outcome.is_some() || done_before.is_some() || deleting {
            if !active.is_empty() {
                let deleted = self.delete_pods(&key, &job_ref, &active).await;
                changed_pods = true;
                active.retain(|p| !deleted.contains(&uid(p)));
            }
        } else {
            changed_pods = self
                .manage(
                    &key,
                    &job,
                    &job_ref,
                    &t,
                    &mut status,
                    &mut active,
                    now,
                    satisfied,
                )
                .await;
        }
        status.active = Some(active.len() as i32);
        status.ready = Some(t.ready.min(active.len() as i32));
        status.terminating = Some(t.terminating.len() as i32);
        if indexed {
            status.completed_indexes = Some(indexes::format(&t.succeeded_indexes));
            if spec.backoff_limit_per_index.is_some() {
                status.failed_indexes = Some(indexes::format(&t.failed_indexes));
            }
        }
        status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
            succeeded: Some(t.uncounted_succeeded.clone()),
            failed: Some(t.uncounted_failed.clone()),
        });
        // Step 1: record the finished pods before their finalizers go.
        let mut job = job.as_ref().clone();
        if status != old_status {
            job = self.write_status(&job, status.clone()).await?;
        }
        // Step 2: drop the finalizers.
        let released = self.release(&key, &t.release).await;
        // Step 3: count what is released (or gone) and, when nothing is left, finish.
        let present: std::collections::HashMap<String, bool> = pods
            .iter()
            .map(|p| (uid(p), has_finalizer(p) && !released.contains(&uid(p))))
            .collect();
        let still_tracked = |id: &String| present.get(id).copied().unwrap_or(false);
        let (keep_s, flush_s): (Vec<String>, Vec<String>) = t
            .uncounted_succeeded
            .iter()
            .cloned()
            .partition(still_tracked);
        let (keep_f, flush_f): (Vec<String>, Vec<String>) =
            t.uncounted_failed.iter().cloned().partition(still_tracked);
        if indexed {
            status.succeeded = Some(t.succeeded_indexes.len() as i32);
        } else {
            status.succeeded = Some(status.succeeded.unwrap_or(0) + flush_s.len() as i32);
        }
        status.failed = Some(status.failed.unwrap_or(0) + flush_f.len() as i32);
        let nothing_tracked = keep_s.is_empty() && keep_f.is_empty();
        status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
            succeeded: Some(keep_s),
            failed: Some(keep_f),
        });
        let ending = outcome.clone().or_else(|| interim(&status));
        if let Some(o) = ending
            && done_before.is_none()
            && !deleting
            && !changed_pods
            && active.is_empty()
            && t.terminating.is_empty()
            && nothing_tracked
        {
            let ty = if o.failed { FAILED } else { COMPLETE };
            conditions::set(&mut status, ty, "True", &o.reason, &o.message, now);
            if o.failed {
                self.recorder
                    .event(&job_ref, EventType::Warning, &o.reason, o.message.clone());
            } else {
                status.completion_time = Some(Time(now));
                self.recorder
                    .event(&job_ref, EventType::Normal, "Completed", "Job completed");
            }
        }
        if Some(&status) != job.status.as_ref() && !deleting {
            self.write_status(&job, status).await?;
        }
        if done_before.is_none()
            && spec.suspend != Some(true)
            && let (Some(ads), Some(start)) = (
                spec.active_deadline_seconds,
                job.status.as_ref().and_then(|s| s.start_time.as_ref()),
            )
        {
            let deadline = start.0 + jiff::SignedDuration::from_secs(ads);
            let left = Duration::try_from(deadline.duration_since(now)).unwrap_or_default();
            self.queue
                .add_after(key.clone(), left + Duration::from_millis(100));
        }
        Ok(())
    }

    /// Creates and deletes pods toward the desired parallelism; returns whether it wrote any.
    #[allow(clippy::too_many_arguments)]
    async fn manage(
        &self,
        key: &str,
        job: &Arc<Job>,
        job_ref: &ObjectReference,
        t: &Tally,
        status: &mut JobStatus,
        active: &mut Vec<Arc<Pod>>,
        now: Timestamp,
        satisfied: bool,
    ) -> bool {
        let spec = job.spec.clone().unwrap_or_default();
        if spec.suspend == Some(true) {
            if conditions::set(
                status,
                SUSPENDED,
                "True",
                "JobSuspended",
                "Job suspended",
                now,
            ) {
                self.recorder
                    .event(job_ref, EventType::Normal, "Suspended", "Job suspended");
            }
            if active.is_empty() || !satisfied {
                return false;
            }
            let deleted = self.delete_pods(key, job_ref, active).await;
            active.retain(|p| !deleted.contains(&uid(p)));
            return true;
        }
        if conditions::is_true(status, SUSPENDED) {
            conditions::set(status, SUSPENDED, "False", "JobResumed", "Job resumed", now);
            self.recorder
                .event(job_ref, EventType::Normal, "Resumed", "Job resumed");
            // The deadline counts the time the Job is continuously active.
            status.start_time = Some(Time(now));
        }
        if status.start_time.is_none() {
            status.start_time = Some(Time(now));
        }
        if !satisfied {
            return false;
        }
        let plan = super::plan::plan(job, t, now);
        if let Some(wait) = plan.retry_after {
            self.queue
                .add_after(key.to_string(), wait + Duration::from_millis(100));
        }
        let mut wrote = false;
        if !plan.delete.is_empty() {
            let deleted = self.delete_pods(key, job_ref, &plan.delete).await;
            active.retain(|p| !deleted.contains(&uid(p)));
            wrote = true;
        }
        if !plan.create.is_empty() {
            let created = self.create_pods(key, job, job_ref, &plan.create).await;
            active.extend(created.into_iter().map(Arc::new));
            wrote = true;
        }
        wrote
    }

    async fn create_pods(
        &self,
        key: &str,
        job: &Job,
        job_ref: &ObjectReference,
        create: &[Option<(i32, i32)>],
    ) -> Vec<Pod> {
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let template = base_template(job);
        let owner = new_controller_ref(&job.metadata, "batch/v1", "Job");
        let n = create.len();
        self.expectations.expect_creations(key, n as i64);
        let created = parking_lot::Mutex::new(Vec::new());
        let (ok, err) = slow_start_batch(n, 1, |i| {
            let pod = new_pod(job, &template, owner.clone(), create[i]);
            let (ns, created) = (ns.clone(), &created);
            async move {
                let p = self.pod_control.create_pod(&ns, &pod, job_ref).await?;
                created.lock().push(p);
                Ok(())
            }
        })
        .await;
        if ok < n {
            // Creates not issued or refused will never be observed.
            self.expectations
                .lower_expectations(key, (n - ok) as i64, 0);
        }
        if let Some(err) = err {
            tracing::warn!(job = key, "creating pods: {err:#}");
        }
        created.into_inner()
    }

    /// Deletes `pods` (dropping their tracking finalizer first, so a pod the controller
    /// removes is not counted as failed); returns the uids deleted.
    async fn delete_pods(
        &self,
        key: &str,
        job_ref: &ObjectReference,
        pods: &[Arc<Pod>],
    ) -> HashSet<String> {
        self.expectations.expect_deletions(key, pods.len() as i64);
        let mut deleted = HashSet::new();
        for pod in pods {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let mut result = Ok(());
            if has_finalizer(pod) {
                result = self.remove_finalizer(key, pod).await;
            }
            if result.is_ok() {
                result = self.pod_control.delete_pod(&ns, &name, job_ref).await;
            }
            match result {
                Ok(()) => {
                    deleted.insert(uid(pod));
                }
                Err(err) => {
                    self.expectations.lower_expectations(key, 0, 1);
                    tracing::warn!(job = key, pod = name, "deleting pod: {err:#}");
                }
            }
        }
        deleted
    }

    /// Drops the tracking finalizer of `pods`; returns the uids done (or gone).
    async fn release(&self, key: &str, pods: &[Arc<Pod>]) -> HashSet<String> {
        let results =
            futures::future::join_all(pods.iter().map(|p| self.remove_finalizer(key, p))).await;
        pods.iter()
            .zip(results)
            .filter_map(|(p, r)| match r {
                Ok(()) => Some(uid(p)),
                Err(err) => {
                    tracing::warn!("removing the tracking finalizer: {err:#}");
                    None
                }
            })
            .collect()
    }

    /// Removes the tracking finalizer of `pod` (of the Job `key`), expecting to see it gone.
    async fn remove_finalizer(&self, key: &str, pod: &Pod) -> anyhow::Result<()> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let pod_uid = uid(pod);
        self.finalizers.expect(key, &pod_uid);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let patch = serde_json::json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER],
        }});
        match api
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if is_not_found(&err) => {
                self.finalizers.observed(key, &pod_uid);
                Ok(())
            }
            Err(err) => {
                self.finalizers.observed(key, &pod_uid);
                Err(err).with_context(|| format!("patching pod {ns}/{name}"))
            }
        }
    }

    async fn write_status(&self, job: &Job, status: JobStatus) -> anyhow::Result<Job> {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(self.client.clone(), ns);
        let mut updated = job.clone();
        updated.status = Some(status);
        api.replace_status(name, &PostParams::default(), &updated)
            .await
            .with_context(|| format!("updating the status of job {ns}/{name}"))
    }

    /// The Job's pods: its own plus the orphans its selector matches (adopted), without the
    /// ones that no longer match (released).
    async fn claim_pods(&self, job: &Arc<Job>) -> anyhow::Result<Vec<Arc<Pod>>> {
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let name = job.metadata.name.clone().unwrap_or_default();
        let job_uid = job.metadata.uid.clone().unwrap_or_default();
        let candidates = pods_by_controller(&self.pods, &ns, &job_uid, true)
            .unwrap_or_else(|| self.pods.namespace(&ns).list());
        let selector = job.spec.as_ref().and_then(|s| s.selector.as_ref());
        let Some(selector) = selector else {
            let uid = job.metadata.uid.clone();
            return Ok(candidates
                .into_iter()
                .filter(|p| controller_of(&p.metadata).map(|r| Some(&r.uid)) == Some(uid.as_ref()))
                .collect());
        };
        let selector = Selector::from_label_selector(Some(selector))
            .map_err(|e| anyhow::anyhow!("invalid selector of job {ns}/{name}: {e}"))?;
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let jobs_api: Api<Job> = Api::namespaced(self.client.clone(), &ns);
        let owner = ClaimOwner {
            meta: &job.metadata,
            api_version: "batch/v1",
            kind: "Job",
        };
        let uid = job.metadata.uid.clone();
        claim_objects(&pods_api, owner, &selector, candidates, || async move {
            recheck_owner(&jobs_api, &name, uid.as_deref()).await
        })
        .await
    }

    /// A deleted Job's pods keep no tracking finalizer: nobody would remove it.
    async fn release_orphans(&self, key: &str, ns: &str, name: &str) -> anyhow::Result<()> {
        let orphans = self.pods.namespace(ns).list_matching(|p| {
            has_finalizer(p)
                && controller_of(&p.metadata).is_some_and(|r| r.kind == "Job" && r.name == name)
        });
        let released = self.release(key, &orphans).await;
        if released.len() < orphans.len() {
            anyhow::bail!("tracking finalizers of job {ns}/{name}'s pods not all removed");
        }
        Ok(())
    }
}

/// The outcome the pods and the spec call for, if the Job is done.
pub(super) fn outcome(
    job: &Job,
    t: &Tally,
    succeeded: i32,
    failed: i32,
    now: Timestamp,
) -> Option<Outcome> {
    let spec = job.spec.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();
    if let Some(o) = interim(&status) {
        return Some(o);
    }
    let fail = |reason: &str, message: &str| {
        Some(Outcome {
            failed: true,
            reason: reason.into(),
            message: message.into(),
        })
    };
    if let Some(message) = &t.fail_job {
        return fail("PodFailurePolicy", message);
    }
    let per_index = spec.backoff_limit_per_index.is_some();
    let completions = spec.completions.unwrap_or(0);
    if per_index {
        if spec
            .max_failed_indexes
            .is_some_and(|max| t.failed_indexes.len() as i32 > max)
        {
            return fail(
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            );
        }
    } else if failed > spec.backoff_limit.unwrap_or(6) {
        return fail(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        );
    }
    if spec.suspend != Some(true)
        && let (Some(ads), Some(start)) = (spec.active_deadline_seconds, &status.start_time)
        && now.duration_since(start.0).as_secs() >= ads
    {
        return fail(
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        );
    }
    if per_index
        && !t.failed_indexes.is_empty()
        && (t.failed_indexes.len() + t.succeeded_indexes.len()) as i32 >= completions
    {
        return fail("FailedIndexes", "Job has failed indexes");
    }
    let success = |reason: &str, message: String| {
        Some(Outcome {
            failed: false,
            reason: reason.into(),
            message,
        })
    };
    if is_indexed(job)
        && let Some(policy) = &spec.success_policy
        && let Some(message) =
            conditions::success_policy_met(policy, &t.succeeded_indexes, completions)
    {
        return success("SuccessPolicy", message);
    }
    let reached = match spec.completions {
        Some(c) => succeeded >= c,
        None => succeeded > 0 && t.active.is_empty() && t.terminating.is_empty(),
    };
    if reached {
        return success(
            "CompletionsReached",
            "Reached expected number of succeeded pods".into(),
        );
    }
    None
}

/// The outcome already decided by an interim condition.
fn interim(status: &JobStatus) -> Option<Outcome> {
    let from = |ty: &str, failed: bool| {
        conditions::find(status, ty)
            .filter(|c| c.status == "True")
            .map(|c| Outcome {
                failed,
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
            })
    };
    from(FAILURE_TARGET, true).or_else(|| from(SUCCESS_CRITERIA_MET, false))
}

fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("ts")
    }

    /// (spec, status, tally, succeeded, failed, expected reason)
    type Case = (
        serde_json::Value,
        serde_json::Value,
        Tally,
        i32,
        i32,
        Option<&'static str>,
    );

    #[test]
    fn outcomes() {
        let now = ts("2026-01-01T00:01:00Z");
        let cases: Vec<Case> = vec![
            (
                json!({"completions": 2, "backoffLimit": 2}),
                json!({}),
                Tally::default(),
                1,
                2,
                None,
            ),
            (
                json!({"completions": 2, "backoffLimit": 2}),
                json!({}),
                Tally::default(),
                1,
                3,
                Some("BackoffLimitExceeded"),
            ),
            (
                json!({"completions": 2}),
                json!({}),
                Tally::default(),
                2,
                0,
                Some("CompletionsReached"),
            ),
            (
                json!({}),
                json!({}),
                Tally::default(),
                1,
                0,
                Some("CompletionsReached"),
            ),
            (
                json!({"completions": 2}),
                json!({}),
                Tally {
                    fail_job: Some("exit 42".into()),
                    ..Default::default()
                },
                2,
                1,
                Some("PodFailurePolicy"),
            ),
            (
                json!({"completions": 2, "activeDeadlineSeconds": 30}),
                json!({"startTime": "2026-01-01T00:00:00Z"}),
                Tally::default(),
                0,
                0,
                Some("DeadlineExceeded"),
            ),
            (
                json!({"completions": 2, "activeDeadlineSeconds": 90}),
                json!({"startTime": "2026-01-01T00:00:00Z"}),
                Tally::default(),
                0,
                0,
                None,
            ),
            // A suspended Job does not run out of time.
            (
                json!({"completions": 2, "activeDeadlineSeconds": 30, "suspend": true}),
                json!({"startTime": "2026-01-01T00:00:00Z"}),
                Tally::default(),
                0,
                0,
                None,
            ),
            (
                json!({"completions": 4, "completionMode": "Indexed", "backoffLimitPerIndex": 1,
                    "maxFailedIndexes": 1}),
                json!({}),
                Tally {
                    failed_indexes: [0, 1].into(),
                    ..Default::default()
                },
                0,
                9,
                Some("MaxFailedIndexesExceeded"),
            ),
            (
                json!({"completions": 2, "completionMode": "Indexed", "backoffLimitPerIndex": 1}),
                json!({}),
                Tally {
                    failed_indexes: [0].into(),
                    succeeded_indexes: [1].into(),
                    ..Default::default()
                },
                1,
                2,
                Some("FailedIndexes"),
            ),
            (
                json!({"completions": 4, "completionMode": "Indexed",
                    "successPolicy": {"rules": [{"succeededCount": 2}]}}),
                json!({}),
                Tally {
                    succeeded_indexes: [0, 3].into(),
                    ..Default::default()
                },
                2,
                0,
                Some("SuccessPolicy"),
            ),
            // An interim condition already written decides.
            (
                json!({"completions": 2}),
                json!({"conditions": [{"type": "FailureTarget", "status": "True",
                                    "reason": "DeadlineExceeded"}]}),
                Tally::default(),
                0,
                0,
                Some("DeadlineExceeded"),
            ),
        ];
        for (i, (mut spec, status, t, succeeded, failed, want)) in cases.into_iter().enumerate() {
            spec["template"] = json!({});
            let job: Job = serde_json::from_value(json!({"metadata": {"name": "j"},
                "spec": spec, "status": status}))
            .expect("job");
            let got = outcome(&job, &t, succeeded, failed, now);
            assert_eq!(got.map(|o| o.reason), want.map(String::from), "case {i}");
        }
    }
}
