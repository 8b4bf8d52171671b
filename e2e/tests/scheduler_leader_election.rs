//! Two kube-schedulers with leader election on the `kube-system/kube-scheduler` Lease: a
//! scheduler binds nothing while another holds the lease, the standby does not steal a renewed
//! lease, and when the leader is killed (kill -9, so it cannot release the lease) the standby
//! takes over once the lease expires and schedules the next pod.

use e2e::apiserver::{ApiServer, Backend};
use e2e::scheduler::{self as sched, Node, Scheduler, pod};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler";
const LEASE_DURATION: Duration = Duration::from_secs(4);
/// A standby's tries are a retry period apart plus up to 1.2 times that in jitter, as
/// client-go's: with 1 s, seeing the last renewal and then the expiry could take 2 x 2.2 s on
/// top of the lease, close to the 12 s bound below on an idle machine. 500 ms halves that.
const CONFIG: &str = "
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
";
const NS: &str = "election";

/// A `MicroTime`, as the Lease's times are written.
fn micro_time(t: jiff::Timestamp) -> String {
    format!(
        "{}.{:06}Z",
        t.strftime("%Y-%m-%dT%H:%M:%S"),
        t.subsec_microsecond()
    )
}

async fn lease(api: &ApiServer) -> Option<Value> {
    sched::get(api, LEASE).await
}

async fn holder(api: &ApiServer) -> Option<String> {
    lease(api).await.and_then(|l| {
        l["spec"]["holderIdentity"]
            .as_str()
            .filter(|h| !h.is_empty())
            .map(String::from)
    })
}

async fn wait_for_holder_other_than(api: &ApiServer, not: &[&str]) -> String {
    let deadline = Instant::now() + sched::PATIENCE;
    loop {
        let current = holder(api).await;
        if let Some(h) = &current
            && !not.contains(&h.as_str())
        {
            return h.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the lease is still held by {current:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_leader_schedules_and_a_standby_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let api = ApiServer::start(&dir.path().join("apiserver"), Backend::Embedded)
        .await
        .unwrap();
    sched::create_namespace(&api, NS).await;
    Node::new("le-1").create(&api).await;

    // Someone else holds the lease (for an hour): a scheduler that is not leading binds nothing.
    let now = micro_time(jiff::Timestamp::now());
    let phantom = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-scheduler"},
        "spec": {"holderIdentity": "e2e-phantom", "leaseDurationSeconds": 3600,
                 "acquireTime": now, "renewTime": now}});
    sched::create(
        &api,
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        &phantom,
    )
    .await;
    let mut a = Scheduler::start(&dir.path().join("a"), &api, Some(CONFIG), &[])
        .await
        .unwrap();
    sched::create_pod(&api, NS, &pod("p0")).await;
    sched::assert_stays_pending(&api, NS, "p0", Duration::from_secs(3)).await;
    assert_eq!(holder(&api).await.as_deref(), Some("e2e-phantom"));

    // The phantom releases the lease as client-go does: A takes it and schedules.
    let release = json!({"spec": {"holderIdentity": null, "leaseDurationSeconds": 1,
                                  "renewTime": micro_time(jiff::Timestamp::now())}});
    sched::merge_patch(&api, LEASE, &release).await;
    let leader = wait_for_holder_other_than(&api, &["e2e-phantom"]).await;
    assert_eq!(sched::wait_for_pod_scheduled(&api, NS, "p0").await, "le-1");

    // B campaigns while A renews: the lease stays A's.
    let mut b = Scheduler::start(&dir.path().join("b"), &api, Some(CONFIG), &[])
        .await
        .unwrap();
    tokio::time::sleep(LEASE_DURATION).await;
    assert_eq!(holder(&api).await.as_deref(), Some(leader.as_str()));
    assert!(!b.exited(), "the standby exited:\n{}", b.logs());
    sched::create_pod(&api, NS, &pod("p1")).await;
    assert_eq!(sched::wait_for_pod_scheduled(&api, NS, "p1").await, "le-1");
    assert_eq!(holder(&api).await.as_deref(), Some(leader.as_str()));

    // kill -9 the leader: nothing may bind p2 until B holds the lease, then B binds it.
    a.kill();
    let killed = Instant::now();
    sched::create_pod(&api, NS, &pod("p2")).await;
    let deadline = killed + sched::PATIENCE;
    let (successor, bound_at) = loop {
        // The pod first, then the lease: a binding seen while the lease still names the dead
        // leader was made by a scheduler that was not leading.
        let p2 = sched::get_pod(&api, NS, "p2").await.unwrap();
        let current = holder(&api).await;
        if let Some(node) = sched::node_name(&p2) {
            assert_ne!(
                current.as_deref(),
                Some(leader.as_str()),
                "p2 was bound to {node} while the dead leader still held the lease"
            );
            break (current, killed.elapsed());
        }
        assert!(
            Instant::now() < deadline,
            "p2 was not scheduled after the leader died; lease holder {current:?}\n\
             ----- standby log -----\n{}",
            b.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let successor = successor.expect("a holder");
    assert_ne!(successor, "e2e-phantom");
    eprintln!("the standby bound a pod {bound_at:?} after the leader was killed");
    // A live leader has renewed within its renew deadline (3s), so the lease ran out no sooner
    // than 1s after the kill; the standby retries every 0.5-1.1 s, so it takes over well within
    // three lease durations (upstream's default lease is 15s: the configured one is in force).
    assert!(
        bound_at >= LEASE_DURATION - Duration::from_secs(3),
        "the standby took a lease that had not expired ({bound_at:?})"
    );
    assert!(
        bound_at < LEASE_DURATION * 3,
        "the standby took over only after {bound_at:?}"
    );
    let record = lease(&api).await.unwrap();
    assert_eq!(record["spec"]["leaseDurationSeconds"], 4, "{record}");
    assert!(!b.exited(), "the new leader exited:\n{}", b.logs());
    let status = b.stop().unwrap();
    assert!(status.success(), "kube-scheduler exited with {status}");
}
