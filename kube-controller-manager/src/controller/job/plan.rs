//! Which pods to create and delete to move a running Job toward its parallelism, honouring
//! the failure backoff.

use super::backoff;
use super::indexes;
use super::pods::{is_indexed, only_replace_failed, phase};
use super::tally::Tally;
use crate::controller::utils::pods::is_pod_ready;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Plan {
    /// One entry per pod: its (index, failures of that index) for Indexed Jobs.
    pub create: Vec<Option<(i32, i32)>>,
    pub delete: Vec<Arc<Pod>>,
    /// Pods held back by the backoff: sync again after this long.
    pub retry_after: Option<Duration>,
}

/// Orders pods so the cheapest to lose come first: not ready, not running, newest.
fn rank_for_deletion(pods: &mut [Arc<Pod>]) {
    pods.sort_by_key(|p| {
        (
            is_pod_ready(p),
            phase(p) == "Running",
            Reverse(p.metadata.creation_timestamp.as_ref().map(|t| t.0)),
        )
    });
}

pub fn plan(job: &Job, t: &Tally, now: Timestamp) -> Plan {
    let spec = job.spec.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();
    let parallelism = spec.parallelism.unwrap_or(1).max(0) as usize;
    let blocking = if only_replace_failed(job) {
        t.terminating.len()
    } else {
        0
    };
    let global_wait = backoff::remaining(t.failures_since_success, t.last_failure, now);
    let mut plan = Plan::default();
    let active = t.active.clone();
    if !is_indexed(job) {
        let succeeded = status.succeeded.unwrap_or(0) as usize + t.uncounted_succeeded.len();
        let want = match spec.completions {
            // A work-queue Job: once a pod succeeded, the others finish on their own.
            None if succeeded > 0 => active.len().min(parallelism),
            None => parallelism,
            Some(c) => (c.max(0) as usize)
                .saturating_sub(succeeded)
                .min(parallelism),
        };
        if active.len() > want {
            let mut extra = active;
            rank_for_deletion(&mut extra);
            extra.truncate(extra.len() - want);
            plan.delete = extra;
        } else if active.len() + blocking < want {
            if global_wait > Duration::ZERO {
                plan.retry_after = Some(global_wait);
            } else {
                plan.create = vec![None; want - active.len() - blocking];
            }
        }
        return plan;
    }
    let completions = spec.completions.unwrap_or(0);
    let mut by_index: BTreeMap<i32, Vec<Arc<Pod>>> = BTreeMap::new();
    for pod in active {
        match indexes::of_pod(&pod, completions) {
            Some(ix) if !t.succeeded_indexes.contains(&ix) && !t.failed_indexes.contains(&ix) => {
                by_index.entry(ix).or_default().push(pod)
            }
            // No valid index, or one already settled: the pod has nothing to do.
            _ => plan.delete.push(pod),
        }
    }
    let mut kept: Vec<Arc<Pod>> = Vec::new();
    for pods in by_index.values_mut() {
        rank_for_deletion(pods);
        // The last is the one most worth keeping.
        if let Some(keep) = pods.pop() {
            kept.push(keep);
        }
        plan.delete.append(pods);
    }
    if kept.len() > parallelism {
        rank_for_deletion(&mut kept);
        let extra = kept.len() - parallelism;
        plan.delete.extend(kept.drain(..extra));
        return plan;
    }
    let busy: BTreeSet<i32> = by_index.keys().copied().collect();
    let terminating: BTreeSet<i32> = if blocking > 0 {
        t.terminating
            .iter()
            .filter_map(|p| indexes::of_pod(p, completions))
            .collect()
    } else {
        BTreeSet::new()
    };
    let mut slots = parallelism.saturating_sub(kept.len() + terminating.len());
    let per_index = spec.backoff_limit_per_index.is_some();
    for ix in 0..completions {
        if slots == 0 {
            break;
        }
        if t.succeeded_indexes.contains(&ix)
            || t.failed_indexes.contains(&ix)
            || busy.contains(&ix)
            || terminating.contains(&ix)
        {
            continue;
        }
        let (failures, last) = t.index_failures.get(&ix).copied().unwrap_or((0, None));
        let wait = if per_index {
            backoff::remaining(failures.max(0) as u32, last, now)
        } else {
            global_wait
        };
        if wait > Duration::ZERO {
            plan.retry_after = Some(plan.retry_after.map_or(wait, |w| w.min(wait)));
            continue;
        }
        plan.create.push(Some((ix, failures)));
        slots -= 1;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::super::tally::tally;
    use super::*;
    use serde_json::json;

    fn job(spec: serde_json::Value) -> Job {
        serde_json::from_value(json!({"metadata": {"name": "j", "namespace": "ns"}, "spec": spec}))
            .expect("job")
    }

    fn pod(name: &str, phase: &str, index: Option<i32>, finished: &str) -> Arc<Pod> {
        let mut annotations = serde_json::Map::new();
        if let Some(ix) = index {
            annotations.insert(indexes::COMPLETION_INDEX.into(), json!(ix.to_string()));
        }
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "uid": name, "annotations": annotations,
                             "finalizers": ["batch.kubernetes.io/job-tracking"],
                             "creationTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"phase": phase, "containerStatuses": [{"name": "c", "image": "i",
                    "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 1, "finishedAt": finished}}}]}
            }))
            .expect("pod"),
        )
    }

    fn now() -> Timestamp {
        "2026-01-01T00:01:00Z".parse().expect("ts")
    }

    /// (completions, parallelism, pods, creates, deletes, retry)
    type Case = (Option<i32>, i32, Vec<Arc<Pod>>, usize, usize, bool);

    #[test]
    fn non_indexed() {
        let t0 = "2026-01-01T00:00:00Z";
        let recent = "2026-01-01T00:00:55Z";
        let cases: Vec<Case> = vec![
            (Some(5), 2, vec![], 2, 0, false),
            (Some(5), 2, vec![pod("a", "Running", None, t0)], 1, 0, false),
            (
                Some(2),
                3,
                vec![pod("s", "Succeeded", None, t0)],
                1,
                0,
                false,
            ),
            (
                Some(1),
                1,
                vec![pod("a", "Running", None, t0), pod("b", "Pending", None, t0)],
                0,
                1,
                false,
            ),
            // A failure 5 s ago owes 10 s of backoff.
            (
                Some(1),
                1,
                vec![pod("f", "Failed", None, recent)],
                0,
                0,
                true,
            ),
            (Some(1), 1, vec![pod("f", "Failed", None, t0)], 1, 0, false),
            (None, 2, vec![pod("s", "Succeeded", None, t0)], 0, 0, false),
            (None, 2, vec![], 2, 0, false),
        ];
        for (i, (completions, parallelism, pods, creates, deletes, retry)) in
            cases.into_iter().enumerate()
        {
            let j = job(
                json!({"completions": completions, "parallelism": parallelism, "template": {}}),
            );
            let t = tally(&j, &pods, false, &Default::default());
            let p = plan(&j, &t, now());
            assert_eq!(p.create.len(), creates, "case {i}");
            assert_eq!(p.delete.len(), deletes, "case {i}");
            assert_eq!(p.retry_after.is_some(), retry, "case {i}");
        }
    }

    #[test]
    fn indexed_fills_lowest_free_indexes_and_drops_duplicates() {
        let t0 = "2026-01-01T00:00:00Z";
        let j = job(
            json!({"completions": 5, "parallelism": 3, "completionMode": "Indexed", "template": {}}),
        );
        let pods = vec![
            pod("s0", "Succeeded", Some(0), t0),
            pod("a1", "Running", Some(1), t0),
            pod("a1b", "Pending", Some(1), t0),
            pod("bad", "Running", None, t0),
        ];
        let t = tally(&j, &pods, false, &Default::default());
        let p = plan(&j, &t, now());
        assert_eq!(p.create, vec![Some((2, 0)), Some((3, 0))]);
        let mut deleted: Vec<_> = p
            .delete
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        deleted.sort();
        assert_eq!(deleted, vec!["a1b", "bad"]);
    }
}
