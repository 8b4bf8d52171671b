//! The pods of a Job: how they are built from the template, and how their state reads.

use super::indexes::{COMPLETION_INDEX, INDEX_FAILURE_COUNT};
use crate::controller::utils::pod_control::pod_from_template;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Held by every pod the controller creates until its end is counted in the Job's status.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_CONTROLLER_UID: &str = "controller-uid";
pub const LEGACY_JOB_NAME: &str = "job-name";
const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

pub fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == TRACKING_FINALIZER))
}

/// Neither finished nor being deleted: it counts toward parallelism.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// Being deleted but not finished yet.
pub fn is_terminating(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_some()
}

/// Whether `pod` counts as failed: phase Failed, or (without a pod failure policy and with
/// replacement of terminating pods) deleted before it succeeded, as upstream counts orphans
/// that never reach a phase.
pub fn is_failed(pod: &Pod, job: &Job) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    let spec = job.spec.as_ref();
    if spec.is_some_and(|s| s.pod_failure_policy.is_some()) || only_replace_failed(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && phase(pod) != "Succeeded"
}

/// `podReplacementPolicy: Failed`: a terminating pod is replaced only once it has failed.
pub fn only_replace_failed(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.pod_replacement_policy.as_deref())
        == Some("Failed")
}

/// The template the Job's pods are created from: its labels completed with the Job's
/// tracking labels and, for Indexed Jobs, `JOB_COMPLETION_INDEX` in every container.
pub fn base_template(job: &Job) -> PodTemplateSpec {
    let mut template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let meta = template.metadata.get_or_insert_with(Default::default);
    let labels = meta.labels.get_or_insert_with(Default::default);
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    // The apiserver adds these with the generated selector; a manual selector may not.
    let manual = job
        .spec
        .as_ref()
        .and_then(|s| s.manual_selector)
        .unwrap_or(false);
    if !manual {
        for (k, v) in [
            (LEGACY_CONTROLLER_UID, &uid),
            (CONTROLLER_UID, &uid),
            (LEGACY_JOB_NAME, &name),
            (JOB_NAME, &name),
        ] {
            labels.entry(k.to_string()).or_insert_with(|| v.clone());
        }
    }
    let indexed = is_indexed(job);
    if indexed && let Some(spec) = template.spec.as_mut() {
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            add_index_env(c);
        }
    }
    template
}

pub fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

fn add_index_env(c: &mut Container) {
    let env = c.env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == INDEX_ENV) {
        return;
    }
    env.push(EnvVar {
        name: INDEX_ENV.into(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.annotations['{COMPLETION_INDEX}']"),
            }),
            ..Default::default()
        }),
    });
}

/// One pod to create: from `template`, owned by the Job, with the tracking finalizer and,
/// for an index, its annotation, label, hostname and `<job>-<index>-` name prefix.
pub fn new_pod(
    job: &Job,
    template: &PodTemplateSpec,
    owner: OwnerReference,
    index: Option<(i32, i32)>,
) -> Pod {
    let ns = job.metadata.namespace.as_deref().unwrap_or("default");
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let mut pod = pod_from_template(ns, template, Some(owner));
    pod.metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(TRACKING_FINALIZER.into());
    if let Some((index, failures)) = index {
        let value = index.to_string();
        let annotations = pod
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(COMPLETION_INDEX.into(), value.clone());
        let per_index = job
            .spec
            .as_ref()
            .is_some_and(|s| s.backoff_limit_per_index.is_some());
        if per_index {
            annotations.insert(INDEX_FAILURE_COUNT.into(), failures.to_string());
        }
        pod.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX.into(), value);
        if let Some(spec) = pod.spec.as_mut() {
            spec.hostname = Some(format!("{job_name}-{index}"));
        }
        pod.metadata.generate_name = Some(generate_name_with_index(&job_name, index));
    }
    pod
}

/// `<job>-<index>-`, the job name shortened so the prefix leaves room for the random suffix
/// (upstream keeps prefixes within 58 characters).
fn generate_name_with_index(job: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let room = 58usize.saturating_sub(suffix.len());
    let mut end = job.len().min(room);
    while !job.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &job[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(mode: &str) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
            "spec": {"completionMode": mode, "backoffLimitPerIndex": 2, "template": {
                "metadata": {"labels": {"app": "pi"}},
                "spec": {"restartPolicy": "Never", "hostname": "mine",
                         "containers": [{"name": "c", "image": "busybox"}],
                         "initContainers": [{"name": "i", "image": "busybox"}]}}}
        }))
        .expect("job")
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "pi".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn indexed_pod() {
        let j = job("Indexed");
        let pod = new_pod(&j, &base_template(&j), owner(), Some((3, 1)));
        let meta = &pod.metadata;
        assert_eq!(meta.generate_name.as_deref(), Some("pi-3-"));
        assert_eq!(meta.finalizers, Some(vec![TRACKING_FINALIZER.to_string()]));
        let labels = meta.labels.as_ref().expect("labels");
        for (k, v) in [
            ("app", "pi"),
            (COMPLETION_INDEX, "3"),
            (CONTROLLER_UID, "u1"),
            (JOB_NAME, "pi"),
            (LEGACY_JOB_NAME, "pi"),
        ] {
            assert_eq!(labels.get(k).map(String::as_str), Some(v), "{k}");
        }
        let annotations = meta.annotations.as_ref().expect("annotations");
        assert_eq!(
            annotations.get(COMPLETION_INDEX).map(String::as_str),
            Some("3")
        );
        assert_eq!(
            annotations.get(INDEX_FAILURE_COUNT).map(String::as_str),
            Some("1")
        );
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.hostname.as_deref(), Some("pi-3"));
        for c in spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
        {
            let env = c.env.as_ref().expect("env");
            assert_eq!(env.len(), 1);
            assert_eq!(env[0].name, INDEX_ENV);
        }
    }

    #[test]
    fn non_indexed_pod() {
        let j = job("NonIndexed");
        let pod = new_pod(&j, &base_template(&j), owner(), None);
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
        assert!(pod.metadata.annotations.is_none());
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.hostname.as_deref(), Some("mine"));
        assert!(spec.containers[0].env.is_none());
    }

    #[test]
    fn long_names_are_shortened() {
        let name = "a".repeat(70);
        let got = generate_name_with_index(&name, 12);
        assert_eq!(got.len(), 58);
        assert!(got.ends_with("-12-"));
    }
}
