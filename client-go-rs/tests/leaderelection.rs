//! Leader election against an in-memory lease, on tokio's paused clock.
//!
//! End-to-end tests against a real apiserver (with `KubeLeaseLock`) come once the apiserver
//! binary exists.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use client_go_rs::leaderelection::{
    InMemoryLeaseLock, LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector,
    LeaseLock, LockError,
};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A lock whose operations can be made to fail, to simulate an unreachable apiserver.
struct FlakyLock {
    inner: InMemoryLeaseLock,
    failing: AtomicBool,
}

impl FlakyLock {
    fn fail<T: Send + 'static>(&self) -> Option<BoxFuture<'_, Result<T, LockError>>> {
        self.failing.load(Ordering::SeqCst).then(|| {
            let err = LockError::Backend("injected failure".into());
            Box::pin(async move { Err(err) }) as BoxFuture<'_, _>
        })
    }
}

impl LeaseLock for FlakyLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, LockError>> {
        self.fail().unwrap_or_else(|| self.inner.get())
    }
    fn create(&self, spec: LeaseSpec) -> BoxFuture<'_, Result<Lease, LockError>> {
        self.fail().unwrap_or_else(|| self.inner.create(spec))
    }
    fn update(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, LockError>> {
        self.fail().unwrap_or_else(|| self.inner.update(lease))
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Started,
    LeadingCancelled,
    Stopped,
    NewLeader(String),
}

type Log = Arc<Mutex<Vec<(Instant, String, Event)>>>;

struct Candidate {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn spawn_candidate(
    id: &str,
    lock: Arc<dyn LeaseLock>,
    release_on_cancel: bool,
    log: &Log,
) -> Candidate {
    let mut config = LeaderElectionConfig::new(id);
    config.release_on_cancel = release_on_cancel;
    let push = {
        let log = log.clone();
        let id = id.to_owned();
        move |e: Event| log.lock().push((Instant::now(), id.clone(), e))
    };
    let (p1, p2, p3) = (push.clone(), push.clone(), push);
    let callbacks = LeaderCallbacks::new(move |token: CancellationToken| async move {
        p1(Event::Started);
        token.cancelled().await;
        p1(Event::LeadingCancelled);
    })
    .on_stopped_leading(move || p2(Event::Stopped))
    .on_new_leader(move |who| p3(Event::NewLeader(who.to_owned())));
    let elector = LeaderElector::new(config, lock, callbacks).expect("valid config");
    let cancel = CancellationToken::new();
    let task = tokio::spawn(elector.run(cancel.clone()));
    Candidate { cancel, task }
}

fn events_of(log: &Log, id: &str) -> Vec<Event> {
    log.lock()
        .iter()
        .filter(|(_, who, _)| who == id)
        .map(|(_, _, e)| e.clone())
        .collect()
}

fn time_of(log: &Log, id: &str, event: &Event) -> Option<Instant> {
    log.lock()
        .iter()
        .find(|(_, who, e)| who == id && e == event)
        .map(|(t, _, _)| *t)
}

fn record(lock: &InMemoryLeaseLock) -> LeaderElectionRecord {
    LeaderElectionRecord::from_spec(lock.current().expect("lease exists").spec.as_ref())
}

#[tokio::test(start_paused = true)]
async fn creates_the_lease_and_only_one_candidate_leads() {
    let lock = InMemoryLeaseLock::new("kube-system", "kube-controller-manager");
    let log = Log::default();
    let a = spawn_candidate("a", Arc::new(lock.clone()), false, &log);
    tokio::time::sleep(secs(1)).await;
    let b = spawn_candidate("b", Arc::new(lock.clone()), false, &log);
    // A minute of renewals and retries.
    tokio::time::sleep(secs(60)).await;

    assert_eq!(
        events_of(&log, "a"),
        vec![Event::NewLeader("a".into()), Event::Started]
    );
    assert_eq!(events_of(&log, "b"), vec![Event::NewLeader("a".into())]);
    let r = record(&lock);
    assert_eq!(r.holder_identity, "a");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.leader_transitions, 0);
    // The holder keeps renewing: every renewal is a write that bumps the resourceVersion.
    let rv: u64 = lock
        .current()
        .and_then(|l| l.metadata.resource_version)
        .and_then(|rv| rv.parse().ok())
        .expect("numeric resourceVersion");
    assert!(rv >= 25, "only {rv} writes in 60 s with a 2 s retry period");

    a.cancel.cancel();
    b.cancel.cancel();
    a.task.await.unwrap();
    b.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn another_candidate_takes_over_only_after_the_lease_expires() {
    let lock = InMemoryLeaseLock::new("ns", "l");
    let log = Log::default();
    let a = spawn_candidate("a", Arc::new(lock.clone()), false, &log);
    tokio::time::sleep(secs(1)).await;
    let b = spawn_candidate("b", Arc::new(lock.clone()), false, &log);
    tokio::time::sleep(secs(20)).await;

    // "a" dies without releasing: its renewals just stop.
    a.task.abort();
    let crashed = Instant::now();
    tokio::time::sleep(secs(30)).await;

    let took_over = time_of(&log, "b", &Event::Started).expect("b never took over");
    let waited = took_over - crashed;
    // b must wait the full 15 s lease from when it saw the last renewal. A candidate polls
    // every retry period stretched by up to 120% jitter (client-go's factor), so it may see
    // the last renewal up to one such poll after it, and take over up to one poll after the
    // lease ran out: 2 s x 2.2 = 4.4 s each way.
    assert!(waited >= secs(15) - secs(2), "took over after {waited:?}");
    assert!(
        waited <= secs(15) + Duration::from_millis(8800),
        "took over after {waited:?}"
    );
    assert!(events_of(&log, "b").contains(&Event::NewLeader("b".into())));
    let r = record(&lock);
    assert_eq!(r.holder_identity, "b");
    assert_eq!(r.leader_transitions, 1);

    b.cancel.cancel();
    b.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_lets_the_other_take_over_at_once() {
    let lock = InMemoryLeaseLock::new("ns", "l");
    let log = Log::default();
    let a = spawn_candidate("a", Arc::new(lock.clone()), true, &log);
    tokio::time::sleep(secs(1)).await;
    let b = spawn_candidate("b", Arc::new(lock.clone()), false, &log);
    tokio::time::sleep(secs(10)).await;

    a.cancel.cancel();
    a.task.await.unwrap();
    let released_at = Instant::now();
    let r = record(&lock);
    assert_eq!(r.holder_identity, "", "holder not cleared on release");
    assert_eq!(r.lease_duration_seconds, 1);
    // The leading task and on_stopped_leading run concurrently (as in client-go), so only
    // the set of events is fixed.
    let mut events = events_of(&log, "a");
    events.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        events,
        vec![
            Event::LeadingCancelled,
            Event::NewLeader("a".into()),
            Event::Started,
            Event::Stopped
        ]
    );

    tokio::time::sleep(secs(10)).await;
    let took_over = time_of(&log, "b", &Event::Started).expect("b never took over");
    // At its next retry (2 s plus up to 120% jitter), far sooner than the 15 s lease.
    assert!(
        took_over - released_at <= secs(5),
        "{:?}",
        took_over - released_at
    );
    let r = record(&lock);
    assert_eq!(r.holder_identity, "b");
    assert_eq!(r.leader_transitions, 1);

    b.cancel.cancel();
    b.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn renew_failure_past_the_deadline_stops_leading() {
    let lock = Arc::new(FlakyLock {
        inner: InMemoryLeaseLock::new("ns", "l"),
        failing: AtomicBool::new(false),
    });
    let log = Log::default();
    let a = spawn_candidate("a", lock.clone(), false, &log);
    tokio::time::sleep(secs(5)).await;
    assert!(events_of(&log, "a").contains(&Event::Started));

    lock.failing.store(true, Ordering::SeqCst);
    let broke = Instant::now();
    tokio::time::timeout(secs(60), a.task)
        .await
        .expect("run did not return after renewals failed")
        .unwrap();
    let cancelled = time_of(&log, "a", &Event::LeadingCancelled).expect("leading not cancelled");
    // The last success was at most one retry period before the break; then retries for the
    // whole 10 s renew deadline.
    let after = cancelled - broke;
    assert!(
        after >= secs(10) - secs(2) && after <= secs(12),
        "{after:?}"
    );
    assert!(events_of(&log, "a").contains(&Event::Stopped));
    // Without release_on_cancel the lease still names "a" until it expires.
    assert_eq!(record(&lock.inner).holder_identity, "a");
}

#[tokio::test(start_paused = true)]
async fn cancel_before_leading_returns_and_reports_stopped() {
    let lock = InMemoryLeaseLock::new("ns", "l");
    let log = Log::default();
    let a = spawn_candidate("a", Arc::new(lock.clone()), false, &log);
    tokio::time::sleep(secs(1)).await;
    let b = spawn_candidate("b", Arc::new(lock.clone()), true, &log);
    tokio::time::sleep(secs(5)).await;
    b.cancel.cancel();
    b.task.await.unwrap();
    // b never led, so it did not touch the lease on the way out.
    assert_eq!(
        events_of(&log, "b"),
        vec![Event::NewLeader("a".into()), Event::Stopped]
    );
    assert_eq!(record(&lock).holder_identity, "a");
    a.cancel.cancel();
    a.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn status_reports_the_observed_leader() {
    let lock = InMemoryLeaseLock::new("ns", "l");
    let elector = LeaderElector::new(
        LeaderElectionConfig::new("me"),
        Arc::new(lock.clone()),
        LeaderCallbacks::new(|token: CancellationToken| async move { token.cancelled().await }),
    )
    .unwrap();
    let status = elector.status();
    assert!(!status.is_leader());
    assert_eq!(status.leader(), None);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(elector.run(cancel.clone()));
    tokio::time::sleep(secs(3)).await;
    assert!(status.is_leader());
    assert_eq!(status.leader().as_deref(), Some("me"));
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn invalid_config_is_rejected() {
    let mut config = LeaderElectionConfig::new("x");
    config.renew_deadline = secs(20);
    let r = LeaderElector::new(
        config,
        Arc::new(InMemoryLeaseLock::new("ns", "l")),
        LeaderCallbacks::new(|_| async {}),
    );
    assert!(r.is_err());
}
