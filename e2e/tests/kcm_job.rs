//! The Job, CronJob and TTL-after-finished controllers for real: an apiserver and a
//! kube-controller-manager running `job,cronjob,ttl-after-finished`; the test plays the
//! kubelet (`mark_pod_running_ready`, `mark_pod_finished`). One cluster serves every case,
//! each in its own namespace, and the cases run concurrently: the slow ones (pod backoff,
//! the CronJob's next minute) overlap instead of adding up.

use e2e::apiserver::{ApiServer, Backend};
use e2e::controller_manager::{
    ControllerManager, list, mark_pod_finished, mark_pod_running_ready, wait_for,
};
use e2e::scheduler::{create, create_namespace, get, merge_patch};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

fn jobs(ns: &str) -> String {
    format!("/apis/batch/v1/namespaces/{ns}/jobs")
}

fn name(obj: &Value) -> String {
    obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn job(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    });
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn pods_of(api: &ApiServer, ns: &str, job: &str) -> Vec<Value> {
    list(api, &format!("/api/v1/namespaces/{ns}/pods"))
        .await
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == job)
        .collect()
}

fn is_active(pod: &Value) -> bool {
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    pod["metadata"]["deletionTimestamp"].is_null() && phase != "Succeeded" && phase != "Failed"
}

async fn active_pods(api: &ApiServer, ns: &str, job: &str) -> Vec<Value> {
    pods_of(api, ns, job)
        .await
        .into_iter()
        .filter(is_active)
        .collect()
}

fn condition<'a>(job: &'a Value, ty: &str) -> Option<&'a Value> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty && c["status"] == "True")
}

fn condition_types(job: &Value) -> Vec<String> {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "True")
        .map(|c| c["type"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Waits for the Job's `ty` condition (True) and returns the Job.
async fn wait_condition(api: &ApiServer, ns: &str, job: &str, ty: &str) -> Value {
    let path = format!("{}/{job}", jobs(ns));
    wait_for(&format!("job {ns}/{job} condition {ty}"), || async {
        let j = get(api, &path).await.ok_or("no job")?;
        if condition(&j, ty).is_some() {
            Ok(j)
        } else {
            Err(j["status"].to_string())
        }
    })
    .await
}

/// Waits for `count` active pods of the Job and returns them.
async fn wait_active(api: &ApiServer, ns: &str, job: &str, count: usize) -> Vec<Value> {
    wait_for(&format!("{count} active pods of {ns}/{job}"), || async {
        let pods = active_pods(api, ns, job).await;
        if pods.len() == count {
            Ok(pods)
        } else {
            Err(format!("{} active", pods.len()))
        }
    })
    .await
}

/// backoffLimit 2: the third failed pod fails the Job (the re-creations wait 10 s and 20 s).
async fn backoff_limit(api: &ApiServer) {
    let ns = "backoff";
    create_namespace(api, ns).await;
    create(api, &jobs(ns), &job("fail", json!({"backoffLimit": 2}))).await;
    for round in 0..3 {
        let pods = wait_for_long(&format!("pod #{round} of backoff job"), 90, || async {
            let pods = active_pods(api, ns, "fail").await;
            if pods.len() == 1 {
                Ok(pods)
            } else {
                Err(format!("{} active", pods.len()))
            }
        })
        .await;
        let pod = &pods[0];
        let meta = &pod["metadata"];
        assert!(
            meta["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == "batch.kubernetes.io/job-tracking")),
            "{meta}"
        );
        for label in [
            "batch.kubernetes.io/controller-uid",
            "controller-uid",
            "job-name",
        ] {
            assert!(meta["labels"][label].is_string(), "{label}: {meta}");
        }
        mark_pod_finished(api, pod, 1).await;
    }
    let j = wait_condition(api, ns, "fail", "Failed").await;
    assert_eq!(
        condition(&j, "Failed").expect("Failed")["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        condition_types(&j),
        vec!["FailureTarget", "Failed"],
        "{}",
        j["status"]
    );
    assert_eq!(j["status"]["failed"], 3, "{}", j["status"]);
    let pods = pods_of(api, ns, "fail").await;
    assert_eq!(pods.len(), 3, "no pod after the limit");
    // Every failure is counted, so no pod keeps the tracking finalizer.
    wait_for("tracking finalizers removed", || async {
        let pods = pods_of(api, ns, "fail").await;
        let held = pods
            .iter()
            .filter(|p| {
                p["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == "batch.kubernetes.io/job-tracking"))
            })
            .count();
        if held == 0 {
            Ok(())
        } else {
            Err(format!("{held} pods hold finalizers"))
        }
    })
    .await;
}

/// Indexed, completions 5 and parallelism 2: each index succeeds exactly once.
async fn indexed(api: &ApiServer) {
    let ns = "indexed";
    create_namespace(api, ns).await;
    create(
        api,
        &jobs(ns),
        &job(
            "idx",
            json!({"completions": 5, "parallelism": 2, "completionMode": "Indexed"}),
        ),
    )
    .await;
    let path = format!("{}/idx", jobs(ns));
    let finished = std::sync::Mutex::new(BTreeSet::new());
    wait_for("indexed job complete", || async {
        let active = active_pods(api, ns, "idx").await;
        if active.len() > 2 {
            panic!("{} active pods, parallelism is 2", active.len());
        }
        for pod in active {
            let first = finished.lock().expect("lock").insert(name(&pod));
            if first {
                mark_pod_finished(api, &pod, 0).await;
            }
        }
        let j = get(api, &path).await.ok_or("no job")?;
        condition(&j, "Complete")
            .map(|_| ())
            .ok_or_else(|| j["status"].to_string())
    })
    .await;
    let j = get(api, &path).await.expect("job");
    assert_eq!(j["status"]["completedIndexes"], "0-4", "{}", j["status"]);
    assert_eq!(j["status"]["succeeded"], 5, "{}", j["status"]);
    assert_eq!(condition_types(&j), vec!["SuccessCriteriaMet", "Complete"]);
    assert!(j["status"]["completionTime"].is_string());
    let mut per_index: BTreeMap<String, usize> = BTreeMap::new();
    for pod in pods_of(api, ns, "idx").await {
        let index = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .expect("index annotation")
            .to_string();
        assert_eq!(
            pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
            index.as_str()
        );
        assert_eq!(pod["spec"]["hostname"], format!("idx-{index}"));
        let env = &pod["spec"]["containers"][0]["env"][0];
        assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
        assert_eq!(
            env["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        if pod["status"]["phase"] == "Succeeded" {
            *per_index.entry(index).or_default() += 1;
        }
    }
    let want: BTreeMap<String, usize> = (0..5).map(|i| (i.to_string(), 1)).collect();
    assert_eq!(per_index, want);
}

/// activeDeadlineSeconds 2: the Job fails with DeadlineExceeded and its pods are deleted.
async fn deadline(api: &ApiServer) {
    let ns = "deadline";
    create_namespace(api, ns).await;
    create(
        api,
        &jobs(ns),
        &job(
            "slow",
            json!({"parallelism": 2, "completions": 2, "activeDeadlineSeconds": 2}),
        ),
    )
    .await;
    for pod in wait_active(api, ns, "slow", 2).await {
        mark_pod_running_ready(api, &pod).await;
    }
    let j = wait_condition(api, ns, "slow", "Failed").await;
    assert_eq!(
        condition(&j, "Failed").expect("Failed")["reason"],
        "DeadlineExceeded"
    );
    assert_eq!(
        condition(&j, "FailureTarget").expect("target")["reason"],
        "DeadlineExceeded"
    );
    assert_eq!(j["status"]["active"], 0, "{}", j["status"]);
    let left = pods_of(api, ns, "slow").await;
    assert!(left.is_empty(), "pods left: {left:?}");
}

/// Suspending deletes the active pods; resuming creates them again and restarts the clock.
async fn suspend_resume(api: &ApiServer) {
    let ns = "suspend";
    create_namespace(api, ns).await;
    create(
        api,
        &jobs(ns),
        &job("sus", json!({"parallelism": 2, "completions": 4})),
    )
    .await;
    let path = format!("{}/sus", jobs(ns));
    wait_active(api, ns, "sus", 2).await;
    merge_patch(api, &path, &json!({"spec": {"suspend": true}})).await;
    let j = wait_condition(api, ns, "sus", "Suspended").await;
    assert_eq!(
        condition(&j, "Suspended").expect("cond")["reason"],
        "JobSuspended"
    );
    wait_for("suspended job without pods", || async {
        let all = pods_of(api, ns, "sus").await;
        let j = get(api, &path).await.ok_or("no job")?;
        if all.is_empty() && j["status"]["active"] == 0 {
            Ok(())
        } else {
            Err(format!("{} pods, status {}", all.len(), j["status"]))
        }
    })
    .await;
    merge_patch(api, &path, &json!({"spec": {"suspend": false}})).await;
    wait_active(api, ns, "sus", 2).await;
    let j = wait_for("Suspended condition False", || async {
        let j = get(api, &path).await.ok_or("no job")?;
        let cond = j["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Suspended"))
            .cloned()
            .unwrap_or_default();
        if cond["status"] == "False" && cond["reason"] == "JobResumed" {
            Ok(j)
        } else {
            Err(cond.to_string())
        }
    })
    .await;
    assert!(j["status"]["startTime"].is_string());
}

/// A FailJob rule on exit code 42 fails the Job at the first such pod.
async fn pod_failure_policy(api: &ApiServer) {
    let ns = "pfp";
    create_namespace(api, ns).await;
    let spec = json!({"backoffLimit": 6, "podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    ]}});
    create(api, &jobs(ns), &job("exit42", spec)).await;
    let pods = wait_active(api, ns, "exit42", 1).await;
    mark_pod_finished(api, &pods[0], 42).await;
    let j = wait_condition(api, ns, "exit42", "Failed").await;
    let failed = condition(&j, "Failed").expect("Failed");
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("exit code 42")),
        "{failed}"
    );
    assert_eq!(j["status"]["failed"], 1, "{}", j["status"]);
    assert_eq!(pods_of(api, ns, "exit42").await.len(), 1);
}

/// backoffLimitPerIndex 0: index 0 fails for good at its first failure while index 1
/// succeeds; the Job fails with FailedIndexes once every index is settled.
async fn per_index_backoff(api: &ApiServer) {
    let ns = "perindex";
    create_namespace(api, ns).await;
    let spec = json!({"completions": 2, "parallelism": 2, "completionMode": "Indexed",
                      "backoffLimitPerIndex": 0});
    create(api, &jobs(ns), &job("pix", spec)).await;
    for pod in wait_active(api, ns, "pix", 2).await {
        let index = &pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
        assert_eq!(
            pod["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"],
            "0"
        );
        let exit_code = if index == "0" { 1 } else { 0 };
        mark_pod_finished(api, &pod, exit_code).await;
    }
    let j = wait_condition(api, ns, "pix", "Failed").await;
    assert_eq!(
        condition(&j, "Failed").expect("Failed")["reason"],
        "FailedIndexes"
    );
    assert_eq!(j["status"]["failedIndexes"], "0", "{}", j["status"]);
    assert_eq!(j["status"]["completedIndexes"], "1", "{}", j["status"]);
    assert_eq!(
        pods_of(api, ns, "pix").await.len(),
        2,
        "no retry of index 0"
    );
}

/// An Ignore rule on DisruptionTarget: the disrupted pod is replaced at once (no backoff)
/// and not counted as failed.
async fn ignored_disruption(api: &ApiServer) {
    let ns = "disrupted";
    create_namespace(api, ns).await;
    let spec = json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]}});
    create(api, &jobs(ns), &job("evicted", spec)).await;
    let pods = wait_active(api, ns, "evicted", 1).await;
    let first = name(&pods[0]);
    let now = jiff::Timestamp::now().to_string();
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/pods/{first}/status"),
        &json!({"status": {"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
             "lastTransitionTime": now},
        ]}}),
    )
    .await;
    let replacement = wait_active(api, ns, "evicted", 1).await;
    assert_ne!(name(&replacement[0]), first);
    mark_pod_finished(api, &replacement[0], 0).await;
    let j = wait_condition(api, ns, "evicted", "Complete").await;
    assert!(
        j["status"]["failed"].is_null() || j["status"]["failed"] == 0,
        "{}",
        j["status"]
    );
    assert_eq!(j["status"]["succeeded"], 1);
}

/// ttlSecondsAfterFinished 1: the finished Job is deleted in the foreground (no garbage
/// collector runs here, so it stays marked with the foregroundDeletion finalizer).
async fn ttl_after_finished(api: &ApiServer) {
    let ns = "ttl";
    create_namespace(api, ns).await;
    create(
        api,
        &jobs(ns),
        &job("short", json!({"ttlSecondsAfterFinished": 1})),
    )
    .await;
    let pods = wait_active(api, ns, "short", 1).await;
    mark_pod_finished(api, &pods[0], 0).await;
    wait_condition(api, ns, "short", "Complete").await;
    let path = format!("{}/short", jobs(ns));
    let deleted = wait_for("job deleted after its TTL", || async {
        let j = get(api, &path)
            .await
            .ok_or_else(|| "job gone: no foreground finalizer".to_string())?;
        let foreground = j["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "foregroundDeletion"));
        if j["metadata"]["deletionTimestamp"].is_string() && foreground {
            Ok(j)
        } else {
            Err(j["metadata"].to_string())
        }
    })
    .await;
    // Checked on the object rather than by timing the poll, which lags on a loaded machine.
    let at =
        |v: &Value| -> jiff::Timestamp { v.as_str().expect("timestamp").parse().expect("rfc3339") };
    let ttl = at(&deleted["metadata"]["deletionTimestamp"])
        .duration_since(at(&deleted["status"]["completionTime"]));
    assert!(ttl.as_secs() >= 1, "deleted {ttl:?} after completion");
}

/// `* * * * *` with Forbid: a Job for the latest minute, and none for the next minute while
/// it runs. The CronJob starts suspended with a lastScheduleTime minutes ago, so its first
/// Job is due at once; the one wait for a minute boundary is the Forbid check.
async fn cronjob_forbid(api: &ApiServer) {
    let ns = "cron";
    create_namespace(api, ns).await;
    let path = format!("/apis/batch/v1/namespaces/{ns}/cronjobs");
    let template = job("x", json!({}))["spec"].clone();
    create(
        api,
        &path,
        &json!({"metadata": {"name": "tick"}, "spec": {
            "schedule": "* * * * *", "concurrencyPolicy": "Forbid", "suspend": true,
            "jobTemplate": {"spec": template}}}),
    )
    .await;
    let earlier = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(3);
    merge_patch(
        api,
        &format!("{path}/tick/status"),
        &json!({"status": {"lastScheduleTime": earlier.to_string()}}),
    )
    .await;
    merge_patch(
        api,
        &format!("{path}/tick"),
        &json!({"spec": {"suspend": false}}),
    )
    .await;
    let first = wait_for("the CronJob's first job", || async {
        let all = list(api, &jobs(ns)).await;
        match all.as_slice() {
            [one] => Ok(one.clone()),
            other => Err(format!("{} jobs", other.len())),
        }
    })
    .await;
    let scheduled =
        first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            .as_str()
            .expect("scheduled timestamp annotation");
    let scheduled: jiff::Timestamp = scheduled.parse().expect("RFC 3339");
    assert_eq!(scheduled.as_second() % 60, 0);
    assert_eq!(name(&first), format!("tick-{}", scheduled.as_second() / 60));
    assert_eq!(first["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    wait_for("the job listed as active", || async {
        let cj = get(api, &format!("{path}/tick"))
            .await
            .ok_or("no cronjob")?;
        let active = cj["status"]["active"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if active.len() == 1 && active[0]["name"] == name(&first).as_str() {
            Ok(())
        } else {
            Err(cj["status"].to_string())
        }
    })
    .await;
    // The next minute comes while the first job runs: Forbid skips it, with an event.
    wait_for_long("JobAlreadyActive event", 90, || async {
        let events = list(api, &format!("/api/v1/namespaces/{ns}/events")).await;
        if events.iter().any(|e| e["reason"] == "JobAlreadyActive") {
            Ok(())
        } else {
            Err(format!("{} events", events.len()))
        }
    })
    .await;
    assert_eq!(
        list(api, &jobs(ns)).await.len(),
        1,
        "Forbid started a second job"
    );
    // The first job finishing shows up as the CronJob's last success.
    let pods = wait_active(api, ns, &name(&first), 1).await;
    mark_pod_finished(api, &pods[0], 0).await;
    wait_for("lastSuccessfulTime", || async {
        let cj = get(api, &format!("{path}/tick"))
            .await
            .ok_or("no cronjob")?;
        // The next minute may already have started another job; the first must be gone.
        let first_active = cj["status"]["active"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["uid"] == first["metadata"]["uid"]));
        if cj["status"]["lastSuccessfulTime"].is_string() && !first_active {
            Ok(())
        } else {
            Err(cj["status"].to_string())
        }
    })
    .await;
}

/// `wait_for` with a longer guard, for the waits that span a backoff or a minute boundary.
async fn wait_for_long<T, F, Fut>(what: &str, secs: u64, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out waiting for {what}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_cronjob_and_ttl_controllers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let api = ApiServer::start(&dir.path().join("apiserver"), Backend::Embedded)
        .await
        .expect("apiserver");
    let cm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &["--controllers=job,cronjob,ttl-after-finished"],
    )
    .await
    .expect("kube-controller-manager");
    let cases = async {
        tokio::join!(
            backoff_limit(&api),
            indexed(&api),
            deadline(&api),
            suspend_resume(&api),
            pod_failure_policy(&api),
            per_index_backoff(&api),
            ignored_disruption(&api),
            ttl_after_finished(&api),
            cronjob_forbid(&api),
        )
    };
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(cases)).await;
    if let Err(panic) = outcome {
        eprintln!("----- kube-controller-manager log -----\n{}", cm.logs());
        std::panic::resume_unwind(panic);
    }
}
