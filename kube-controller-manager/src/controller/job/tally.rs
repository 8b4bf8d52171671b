//! What a Job's pods say, read once per sync: active and terminating pods, finished pods not
//! yet counted, the completed and failed indexes, and the pod failure policy's verdicts.

use super::backoff::finish_time;
use super::failure_policy::{self, Action};
use super::indexes::{self, INDEX_FAILURE_COUNT};
use super::pods::{has_finalizer, is_active, is_failed, is_indexed, is_terminating, phase};
use crate::controller::utils::pods::is_pod_ready;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct Tally {
    pub active: Vec<Arc<Pod>>,
    pub terminating: Vec<Arc<Pod>>,
    pub ready: i32,
    /// Finished pods not counted yet: the old `uncountedTerminatedPods` plus new ones.
    pub uncounted_succeeded: Vec<String>,
    pub uncounted_failed: Vec<String>,
    /// Pods whose tracking finalizer can go (their end is recorded, or they are leaving).
    pub release: Vec<Arc<Pod>>,
    /// The first FailJob verdict of the pod failure policy among newly failed pods.
    pub fail_job: Option<String>,
    pub succeeded_indexes: BTreeSet<i32>,
    pub failed_indexes: BTreeSet<i32>,
    /// Consecutive counted failures since the last success, and when the last one ended.
    pub failures_since_success: u32,
    pub last_failure: Option<Timestamp>,
    /// Per index (backoffLimitPerIndex): failures so far and when the last one ended.
    pub index_failures: BTreeMap<i32, (i32, Option<Timestamp>)>,
}

/// Reads `pods` (the Job's own) against the Job's status. `releasing_all` (Job finished or
/// being deleted) releases every tracked pod; `pending` are the pods whose finalizer removal
/// the cache has not shown yet (already counted: left alone).
pub fn tally(
    job: &Job,
    pods: &[Arc<Pod>],
    releasing_all: bool,
    pending: &HashSet<String>,
) -> Tally {
    let spec = job.spec.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();
    let completions = spec.completions.unwrap_or(0);
    let indexed = is_indexed(job);
    let per_index = spec.backoff_limit_per_index;
    let uncounted = status.uncounted_terminated_pods.unwrap_or_default();
    let old_succeeded: HashSet<String> = uncounted
        .succeeded
        .unwrap_or_default()
        .into_iter()
        .collect();
    let old_failed: HashSet<String> = uncounted.failed.unwrap_or_default().into_iter().collect();
    let mut t = Tally {
        uncounted_succeeded: old_succeeded.iter().cloned().collect(),
        uncounted_failed: old_failed.iter().cloned().collect(),
        ..Default::default()
    };
    t.uncounted_succeeded.sort();
    t.uncounted_failed.sort();
    if indexed {
        t.succeeded_indexes = indexes::parse(status.completed_indexes.as_deref(), completions);
        t.failed_indexes = indexes::parse(status.failed_indexes.as_deref(), completions);
    }
    let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    // Indexes of pods already recorded as succeeded but not counted yet.
    for pod in pods {
        if old_succeeded.contains(&uid(pod))
            && let Some(ix) = indexes::of_pod(pod, completions)
        {
            t.succeeded_indexes.insert(ix);
        }
    }
    let mut last_success: Option<Timestamp> = None;
    let mut failures: Vec<Timestamp> = Vec::new();
    for pod in pods {
        if is_active(pod) {
            t.active.push(pod.clone());
            if is_pod_ready(pod) {
                t.ready += 1;
            }
        }
        if is_terminating(pod) {
            t.terminating.push(pod.clone());
        }
        let succeeded = phase(pod) == "Succeeded";
        let failed = !succeeded && is_failed(pod, job);
        let index = indexes::of_pod(pod, completions);
        let verdict = if phase(pod) == "Failed" {
            failure_policy::evaluate(spec.pod_failure_policy.as_ref(), pod)
        } else {
            Action::Count
        };
        if succeeded {
            let at = finish_time(pod);
            last_success = last_success.max(at);
        } else if failed && verdict != Action::Ignore {
            if let Some(at) = finish_time(pod) {
                failures.push(at);
            }
            if let (Some(ix), Some(_)) = (index, per_index) {
                let count = indexes::pod_counter(pod, INDEX_FAILURE_COUNT) + 1;
                let entry = t.index_failures.entry(ix).or_insert((0, None));
                entry.0 = entry.0.max(count);
                entry.1 = entry.1.max(finish_time(pod));
            }
        }
        if !has_finalizer(pod) || pending.contains(&uid(pod)) {
            continue;
        }
        if succeeded || failed || pod.metadata.deletion_timestamp.is_some() || releasing_all {
            t.release.push(pod.clone());
        }
        let id = uid(pod);
        if old_succeeded.contains(&id) || old_failed.contains(&id) {
            continue;
        }
        if succeeded {
            if !indexed {
                t.uncounted_succeeded.push(id);
            } else if let Some(ix) = index
                && t.succeeded_indexes.insert(ix)
            {
                t.uncounted_succeeded.push(id);
            }
        } else if failed {
            match verdict {
                Action::Ignore => {}
                Action::FailJob(message) => {
                    t.fail_job.get_or_insert(message);
                    t.uncounted_failed.push(id);
                }
                Action::FailIndex => {
                    t.uncounted_failed.push(id);
                    if let (Some(ix), Some(_)) = (index, per_index) {
                        t.failed_indexes.insert(ix);
                    }
                }
                Action::Count => {
                    t.uncounted_failed.push(id);
                    if let (Some(ix), Some(limit)) = (index, per_index)
                        && indexes::pod_counter(pod, INDEX_FAILURE_COUNT) + 1 > limit
                    {
                        t.failed_indexes.insert(ix);
                    }
                }
            }
        }
    }
    // A succeeded index is never also failed.
    let done = t.succeeded_indexes.clone();
    t.failed_indexes.retain(|ix| !done.contains(ix));
    let recent: Vec<Timestamp> = failures
        .into_iter()
        .filter(|at| last_success.is_none_or(|s| *at > s))
        .collect();
    t.failures_since_success = recent.len() as u32;
    t.last_failure = recent.into_iter().max();
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(name: &str, phase: &str, index: Option<i32>, extra: Value) -> Arc<Pod> {
        let mut v = json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name,
                         "finalizers": ["batch.kubernetes.io/job-tracking"],
                         "annotations": {}},
            "status": {"phase": phase, "containerStatuses": [{"name": "c", "image": "i",
                "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": if phase == "Failed" { 1 } else { 0 },
                                          "finishedAt": "2026-01-01T00:00:00Z"}}}]}
        });
        if let Some(ix) = index {
            v["metadata"]["annotations"][indexes::COMPLETION_INDEX] = json!(ix.to_string());
        }
        merge(&mut v, extra);
        Arc::new(serde_json::from_value(v).expect("pod"))
    }

    fn merge(a: &mut Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn job(spec: Value, status: Value) -> Job {
        serde_json::from_value(json!({"metadata": {"name": "j", "namespace": "ns"},
            "spec": spec, "status": status}))
        .expect("job")
    }

    #[test]
    fn non_indexed_counts_new_finished_pods_once() {
        let j = job(
            json!({"completions": 3, "template": {}}),
            json!({"uncountedTerminatedPods": {"succeeded": ["s0"]}}),
        );
        let pods = vec![
            pod("s0", "Succeeded", None, json!({})),
            pod("s1", "Succeeded", None, json!({})),
            pod("f1", "Failed", None, json!({})),
            pod(
                "r1",
                "Running",
                None,
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            ),
            pod(
                "d1",
                "Running",
                None,
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            ),
            pod(
                "old",
                "Succeeded",
                None,
                json!({"metadata": {"finalizers": []}}),
            ),
        ];
        let t = tally(&j, &pods, false, &HashSet::new());
        assert_eq!(t.uncounted_succeeded, vec!["s0", "s1"]);
        // A pod deleted before it finished counts as failed without a failure policy.
        assert_eq!(t.uncounted_failed, vec!["f1", "d1"]);
        assert_eq!(t.active.len(), 1);
        assert_eq!(t.ready, 1);
        assert_eq!(t.terminating.len(), 1);
        let released: Vec<_> = t
            .release
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(released, vec!["s0", "s1", "f1", "d1"]);
        // The failures ended no later than the last success.
        assert_eq!(t.failures_since_success, 0);
    }

    #[test]
    fn indexed_with_policy_and_per_index_limit() {
        let j = job(
            json!({"completions": 4, "completionMode": "Indexed", "backoffLimitPerIndex": 1,
                   "template": {},
                   "podFailurePolicy": {"rules": [
                       {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]},
                        "onPodConditions": null}]}}),
            json!({"completedIndexes": "0"}),
        );
        let failed_twice = pod(
            "f2",
            "Failed",
            Some(2),
            json!({"metadata": {"annotations": {INDEX_FAILURE_COUNT: "1"}},
                   "status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "",
                       "ready": false, "restartCount": 0,
                       "state": {"terminated": {"exitCode": 2, "finishedAt": "2026-01-01T00:00:05Z"}}}]}}),
        );
        let pods = vec![
            pod("s0", "Succeeded", Some(0), json!({})),
            pod("s1", "Succeeded", Some(1), json!({})),
            pod("ignored", "Failed", Some(3), json!({})),
            failed_twice,
        ];
        let t = tally(&j, &pods, false, &HashSet::new());
        // Index 0 was already complete: its second success is not counted.
        assert_eq!(t.uncounted_succeeded, vec!["s1"]);
        assert_eq!(
            t.succeeded_indexes.iter().copied().collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(t.uncounted_failed, vec!["f2"]);
        assert_eq!(
            t.failed_indexes.iter().copied().collect::<Vec<_>>(),
            vec![2]
        );
        assert_eq!(t.index_failures.get(&2).map(|f| f.0), Some(2));
        assert!(!t.index_failures.contains_key(&3));
        assert_eq!(t.failures_since_success, 1);
    }
}
