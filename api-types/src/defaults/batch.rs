//! batch/v1 defaults: Job and CronJob.

use k8s_openapi::api::batch::v1::{CronJob, Job};

use super::pod::default_pod_template_spec;
use super::util::default_str;

/// Completions and parallelism 1 when both unset (parallelism 1 when only it is unset),
/// backoffLimit 6 (max int32 with backoffLimitPerIndex), completionMode NonIndexed, suspend
/// false, podReplacementPolicy (Failed with a podFailurePolicy, TerminatingOrFailed otherwise),
/// pod condition patterns status True, and the job's labels from its template when it has none.
pub fn default_job(job: &mut Job) {
    if let Some(spec) = job.spec.as_mut() {
        if spec.completions.is_none() && spec.parallelism.is_none() {
            spec.completions = Some(1);
        }
        spec.parallelism.get_or_insert(1);
        let backoff = if spec.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        };
        spec.backoff_limit.get_or_insert(backoff);
        default_str(&mut spec.completion_mode, "NonIndexed");
        spec.suspend.get_or_insert(false);
        if let Some(pfp) = spec.pod_failure_policy.as_mut() {
            for rule in &mut pfp.rules {
                for pattern in rule.on_pod_conditions.iter_mut().flatten() {
                    if pattern.status.is_empty() {
                        pattern.status = "True".into();
                    }
                }
            }
        }
        let replacement = if spec.pod_failure_policy.is_some() {
            "Failed"
        } else {
            "TerminatingOrFailed"
        };
        default_str(&mut spec.pod_replacement_policy, replacement);
        default_pod_template_spec(&mut spec.template);
        let template_labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone());
        if let Some(labels) = template_labels
            && job.metadata.labels.as_ref().is_none_or(|l| l.is_empty())
        {
            job.metadata.labels = Some(labels);
        }
    }
}

/// concurrencyPolicy Allow, suspend false, history limits 3 (successful) and 1 (failed), and
/// the job template's pod template defaults.
pub fn default_cron_job(cj: &mut CronJob) {
    let Some(spec) = cj.spec.as_mut() else { return };
    default_str(&mut spec.concurrency_policy, "Allow");
    spec.suspend.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
    if let Some(job_spec) = spec.job_template.spec.as_mut() {
        default_pod_template_spec(&mut job_spec.template);
    }
}
