//! One sync of a CronJob: reconcile its active Jobs, start the Job it is due for (as its
//! concurrency policy allows), clean up finished Jobs past the history limits, and requeue
//! itself for its next scheduled time.

use super::schedule::Schedule;
use super::times::{TOO_MANY_MISSED, due};
use crate::controller::utils::controller_ref::{
    controller_of, new_controller_ref, object_reference,
};
use anyhow::Context as _;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ObjectMeta, PostParams, PropagationPolicy};
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

pub const CONTROLLER_NAME: &str = "cronjob-controller";
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

pub struct Controller {
    pub client: Client,
    pub cronjobs: Lister<CronJob>,
    pub jobs: Lister<Job>,
    pub recorder: EventRecorder,
    pub queue: RateLimitingQueue<String>,
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

/// The terminal condition type of a Job (Complete or Failed), if it has finished.
pub fn finished_type(job: &Job) -> Option<&str> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// The name of the Job started for `scheduled`: the CronJob's name and the time in minutes.
pub fn job_name(cronjob: &str, scheduled: Timestamp) -> String {
    format!("{cronjob}-{}", scheduled.as_second().div_euclid(60))
}

/// RFC 3339 in the schedule's time zone, `Z` for UTC, as Go's `time.RFC3339`.
pub fn rfc3339(t: Timestamp, tz: &TimeZone) -> String {
    let zoned = t.to_zoned(tz.clone());
    if zoned.offset().seconds() == 0 {
        zoned.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

fn job_ref(job: &Job) -> ObjectReference {
    object_reference(&job.metadata, "batch/v1", "Job")
}

impl Controller {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(cj) = self.cronjobs.namespace(ns).get(name) else {
            return Ok(());
        };
        let now = Timestamp::now();
        let uid = cj.metadata.uid.clone();
        let jobs: Vec<Arc<Job>> = self.jobs.namespace(ns).list_matching(|j| {
            controller_of(&j.metadata).is_some_and(|r| Some(&r.uid) == uid.as_ref())
        });
        let old = cj.status.clone().unwrap_or_default();
        let mut status = old.clone();
        let cj_ref = object_reference(&cj.metadata, "batch/v1", "CronJob");
        self.reconcile_active(ns, &cj_ref, &jobs, &mut status)
            .await?;
        let requeue = self.schedule(&cj, &cj_ref, &mut status, now).await;
        self.cleanup(&cj, &cj_ref, &jobs).await;
        if status != old {
            let api: Api<CronJob> = Api::namespaced(self.client.clone(), ns);
            let mut updated = cj.as_ref().clone();
            updated.status = Some(status);
            match api
                .replace_status(name, &PostParams::default(), &updated)
                .await
            {
                Ok(_) => {}
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) => {
                    return Err(err).with_context(|| format!("updating cronjob {key} status"));
                }
            }
        }
        if let Some(after) = requeue? {
            self.queue.add_after(key, after);
        }
        Ok(())
    }

    /// Makes `status.active` list exactly the CronJob's unfinished Jobs, and records the
    /// last success.
    async fn reconcile_active(
        &self,
        ns: &str,
        cj_ref: &ObjectReference,
        jobs: &[Arc<Job>],
        status: &mut CronJobStatus,
    ) -> anyhow::Result<()> {
        let mut active = status.active.clone().unwrap_or_default();
        for job in jobs {
            let juid = job.metadata.uid.clone();
            let listed = active.iter().any(|r| r.uid == juid);
            match finished_type(job) {
                None if !listed => active.push(job_ref(job)),
                None => {}
                Some(ty) => {
                    if listed {
                        active.retain(|r| r.uid != juid);
                        let jname = job.metadata.name.clone().unwrap_or_default();
                        self.recorder.event(
                            cj_ref,
                            EventType::Normal,
                            "SawCompletedJob",
                            format!("Saw completed job: {jname}, condition: {ty}"),
                        );
                    }
                    if ty == "Complete"
                        && let Some(done) =
                            job.status.as_ref().and_then(|s| s.completion_time.clone())
                        && status
                            .last_successful_time
                            .as_ref()
                            .is_none_or(|t| t.0 < done.0)
                    {
                        status.last_successful_time = Some(done);
                    }
                }
            }
        }
        // Listed Jobs the cache does not have: gone, unless just created (ask the server).
        let api: Api<Job> = Api::namespaced(self.client.clone(), ns);
        let mut kept = Vec::with_capacity(active.len());
        for r in active {
            if jobs.iter().any(|j| j.metadata.uid == r.uid) {
                kept.push(r);
                continue;
            }
            let name = r.name.clone().unwrap_or_default();
            match api.get_opt(&name).await {
                Ok(Some(j)) if j.metadata.uid == r.uid && finished_type(&j).is_none() => {
                    kept.push(r)
                }
                Ok(_) => {}
                Err(err) => {
                    return Err(err).with_context(|| format!("reading job {ns}/{name}"));
                }
            }
        }
        status.active = (!kept.is_empty()).then_some(kept);
        Ok(())
    }

    /// Starts the Job the schedule is due for; returns when to sync again (None: only on
    /// a change of the CronJob).
    async fn schedule(
        &self,
        cj: &CronJob,
        cj_ref: &ObjectReference,
        status: &mut CronJobStatus,
        now: Timestamp,
    ) -> anyhow::Result<Option<Duration>> {
        if cj.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let spec = cj.spec.clone().unwrap_or_default();
        let default_tz = match &spec.time_zone {
            Some(name) => match TimeZone::get(name) {
                Ok(tz) => tz,
                Err(err) => {
                    self.recorder.event(
                        cj_ref,
                        EventType::Warning,
                        "UnknownTimeZone",
                        format!("invalid timeZone: {name:?}: {err}"),
                    );
                    return Ok(None);
                }
            },
            None => TimeZone::system(),
        };
        if spec.schedule.contains("TZ") {
            self.recorder.event(
                cj_ref,
                EventType::Warning,
                "UnsupportedSchedule",
                format!(
                    "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    spec.schedule
                ),
            );
        }
        let schedule = match Schedule::parse(&spec.schedule, default_tz) {
            Ok(s) => s,
            Err(err) => {
                self.recorder.event(
                    cj_ref,
                    EventType::Warning,
                    "InvalidSchedule",
                    format!("invalid schedule: {} : {err:#}", spec.schedule),
                );
                return Ok(None);
            }
        };
        if spec.suspend == Some(true) {
            return Ok(None);
        }
        let until_next = |now: Timestamp| {
            schedule.next(now).map(|next| {
                Duration::try_from(next.duration_since(now)).unwrap_or_default()
                    + Duration::from_millis(100)
            })
        };
        let created = cj.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
        let last = status.last_schedule_time.as_ref().map(|t| t.0);
        let d = due(
            &schedule,
            last,
            created,
            spec.starting_deadline_seconds,
            now,
        );
        if d.missed > TOO_MANY_MISSED {
            self.recorder.event(
                cj_ref,
                EventType::Warning,
                "TooManyMissedTimes",
                format!(
                    "too many missed start times: {}. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                    d.missed
                ),
            );
        }
        let Some(scheduled) = d.most_recent else {
            return Ok(until_next(now));
        };
        if let Some(sds) = spec.starting_deadline_seconds
            && scheduled.as_second() + sds < now.as_second()
        {
            self.recorder.event(
                cj_ref,
                EventType::Warning,
                "MissSchedule",
                format!(
                    "Missed scheduled time to start a job: {}",
                    rfc3339(scheduled, &schedule.tz)
                ),
            );
            return Ok(until_next(now));
        }
        let cj_name = cj.metadata.name.clone().unwrap_or_default();
        let name = job_name(&cj_name, scheduled);
        let active = status.active.clone().unwrap_or_default();
        if active
            .iter()
            .any(|r| r.name.as_deref() == Some(name.as_str()))
            || last == Some(scheduled)
        {
            return Ok(until_next(now));
        }
        match spec.concurrency_policy.as_deref() {
            Some("Forbid") if !active.is_empty() => {
                self.recorder.event(
                    cj_ref,
                    EventType::Normal,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                );
                return Ok(until_next(now));
            }
            Some("Replace") => {
                let ns = cj.metadata.namespace.clone().unwrap_or_default();
                let api: Api<Job> = Api::namespaced(self.client.clone(), &ns);
                for r in &active {
                    let jname = r.name.clone().unwrap_or_default();
                    self.delete_job(&api, cj_ref, &jname).await?;
                }
                status.active = None;
            }
            _ => {}
        }
        let job = self.new_job(cj, &name, scheduled, &schedule.tz);
        let ns = cj.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(self.client.clone(), &ns);
        let created = match api.create(&PostParams::default(), &job).await {
            Ok(j) => {
                self.recorder.event(
                    cj_ref,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created job {name}"),
                );
                j
            }
            Err(err) if is_already_exists(&err) => {
                // Created by an earlier sync whose status write was lost.
                match api.get_opt(&name).await? {
                    Some(j)
                        if controller_of(&j.metadata).map(|r| &r.uid)
                            == cj.metadata.uid.as_ref() =>
                    {
                        j
                    }
                    _ => return Ok(until_next(now)),
                }
            }
            Err(err) => {
                self.recorder.event(
                    cj_ref,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating job: {err}"),
                );
                return Err(err).with_context(|| format!("creating job {ns}/{name}"));
            }
        };
        if finished_type(&created).is_none() {
            let mut active = status.active.clone().unwrap_or_default();
            if !active.iter().any(|r| r.uid == created.metadata.uid) {
                active.push(job_ref(&created));
            }
            status.active = Some(active);
        }
        status.last_schedule_time = Some(Time(scheduled));
        Ok(until_next(now))
    }

    fn new_job(&self, cj: &CronJob, name: &str, scheduled: Timestamp, tz: &TimeZone) -> Job {
        let template = cj
            .spec
            .as_ref()
            .map(|s| s.job_template.clone())
            .unwrap_or_default();
        let tmeta = template.metadata.unwrap_or_default();
        let mut annotations = tmeta.annotations.unwrap_or_default();
        annotations.insert(SCHEDULED_TIMESTAMP.into(), rfc3339(scheduled, tz));
        Job {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: cj.metadata.namespace.clone(),
                labels: tmeta.labels,
                annotations: Some(annotations),
                owner_references: Some(vec![new_controller_ref(
                    &cj.metadata,
                    "batch/v1",
                    "CronJob",
                )]),
                ..Default::default()
            },
            spec: template.spec,
            status: None,
        }
    }

    async fn delete_job(
        &self,
        api: &Api<Job>,
        cj_ref: &ObjectReference,
        name: &str,
    ) -> anyhow::Result<()> {
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        match api.delete(name, &dp).await {
            Ok(_) => {
                self.recorder.event(
                    cj_ref,
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted job {name}"),
                );
                Ok(())
            }
            Err(err) if is_not_found(&err) => Ok(()),
            Err(err) => {
                self.recorder.event(
                    cj_ref,
                    EventType::Warning,
                    "FailedDelete",
                    format!("Deleted job: {err}"),
                );
                Err(err).with_context(|| format!("deleting job {name}"))
            }
        }
    }

    /// Deletes the oldest finished Jobs beyond successfulJobsHistoryLimit and
    /// failedJobsHistoryLimit.
    async fn cleanup(&self, cj: &CronJob, cj_ref: &ObjectReference, jobs: &[Arc<Job>]) {
        let ns = cj.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(self.client.clone(), &ns);
        for name in over_history_limits(cj, jobs) {
            if let Err(err) = self.delete_job(&api, cj_ref, &name).await {
                tracing::warn!(job = name, "cleaning up finished job: {err:#}");
            }
        }
    }
}

/// The finished Jobs past the CronJob's history limits, oldest first (by start time, Jobs
/// that never started first, as upstream sorts them).
pub fn over_history_limits(cj: &CronJob, jobs: &[Arc<Job>]) -> Vec<String> {
    let spec = cj.spec.clone().unwrap_or_default();
    let mut out = Vec::new();
    for (ty, limit) in [
        ("Complete", spec.successful_jobs_history_limit),
        ("Failed", spec.failed_jobs_history_limit),
    ] {
        let Some(limit) = limit else { continue };
        let mut done: Vec<&Arc<Job>> = jobs
            .iter()
            .filter(|j| finished_type(j) == Some(ty) && j.metadata.deletion_timestamp.is_none())
            .collect();
        let limit = limit.max(0) as usize;
        if done.len() <= limit {
            continue;
        }
        done.sort_by_key(|j| {
            let start = j
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .map(|t| t.0);
            (
                start.is_some(),
                start,
                j.metadata.creation_timestamp.as_ref().map(|t| t.0),
            )
        });
        let excess = done.len() - limit;
        out.extend(
            done.into_iter()
                .take(excess)
                .map(|j| j.metadata.name.clone().unwrap_or_default()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_limits() {
        let job = |name: &str, ty: Option<&str>, start: Option<&str>| -> Arc<Job> {
            let mut v = serde_json::json!({"metadata": {"name": name}, "status": {}});
            if let Some(ty) = ty {
                v["status"]["conditions"] = serde_json::json!([{"type": ty, "status": "True"}]);
            }
            if let Some(start) = start {
                v["status"]["startTime"] = serde_json::json!(start);
            }
            Arc::new(serde_json::from_value(v).expect("job"))
        };
        let jobs = vec![
            job("ok3", Some("Complete"), Some("2026-01-01T00:03:00Z")),
            job("ok1", Some("Complete"), Some("2026-01-01T00:01:00Z")),
            job("ok2", Some("Complete"), Some("2026-01-01T00:02:00Z")),
            job("bad1", Some("Failed"), Some("2026-01-01T00:01:00Z")),
            job("bad0", Some("Failed"), None),
            job("running", None, Some("2026-01-01T00:00:00Z")),
        ];
        let cj = |ok: Option<i32>, bad: Option<i32>| -> CronJob {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "c"}, "spec": {
                "schedule": "* * * * *", "jobTemplate": {},
                "successfulJobsHistoryLimit": ok, "failedJobsHistoryLimit": bad}}))
            .expect("cronjob")
        };
        assert_eq!(
            over_history_limits(&cj(Some(1), Some(1)), &jobs),
            vec!["ok1", "ok2", "bad0"]
        );
        assert_eq!(
            over_history_limits(&cj(Some(3), Some(0)), &jobs),
            vec!["bad0", "bad1"]
        );
        assert!(over_history_limits(&cj(None, None), &jobs).is_empty());
    }

    #[test]
    fn names_and_timestamps() {
        let t: Timestamp = "2026-01-01T10:05:00Z".parse().expect("ts");
        assert_eq!(
            job_name("hello", t),
            format!("hello-{}", t.as_second() / 60)
        );
        assert_eq!(rfc3339(t, &TimeZone::UTC), "2026-01-01T10:05:00Z");
        let tz = TimeZone::get("Etc/GMT-2").expect("tz");
        assert_eq!(rfc3339(t, &tz), "2026-01-01T12:05:00+02:00");
    }
}
