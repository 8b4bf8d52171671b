use super::backoff::backoff_duration;
use super::*;
use crate::apis::config::ResolvedProfile;
use crate::framework::events::{ClusterEventWithHint, QueueingHint};
use crate::framework::testing::{NoopBinder, node, pod, pod_info, test_context};
use crate::framework::{
    Code, Plugin, PluginContext, PreEnqueuePlugin, QueueSortPlugin, Registry, Status,
};
use k8s_openapi::api::core::v1::{
    Affinity, Node, PodAffinity, PodAffinityTerm, PodSchedulingGate, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use std::collections::BTreeMap;

const FIT: &str = "TestFit";
const AFFINITY: &str = "TestAffinity";

/// Higher priority first, then earlier timestamp (PrioritySort's order).
struct Sort;
impl Plugin for Sort {
    fn name(&self) -> &'static str {
        "TestSort"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}
impl QueueSortPlugin for Sort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

/// Gates pods with scheduling gates; their removal releases them.
struct Gates;
impl Plugin for Gates {
    fn name(&self) -> &'static str {
        scheduling_gates::NAME
    }
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![ClusterEventWithHint::new(
            EventResource::UnscheduledPod,
            action::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        )]
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}
impl PreEnqueuePlugin for Gates {
    fn pre_enqueue(&self, pod: &Pod) -> Status {
        let gated = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_ref())
            .is_some_and(|g| !g.is_empty());
        if gated {
            Status::new(Code::Pending, "waiting for scheduling gates")
        } else {
            Status::success()
        }
    }
}

/// Rejects on nodes; only a node labelled `fits=true` is worth a retry.
struct Fit;
impl Plugin for Fit {
    fn name(&self) -> &'static str {
        FIT
    }
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::Node, action::ADD).with_hint(
                |_pod, _old, new| {
                    let fits = new
                        .and_then(|n| n.downcast_ref::<Node>())
                        .and_then(|n| n.metadata.labels.as_ref())
                        .is_some_and(|l| l.get("fits").is_some_and(|v| v == "true"));
                    if fits {
                        QueueingHint::Queue
                    } else {
                        QueueingHint::Skip
                    }
                },
            ),
            ClusterEventWithHint::new(EventResource::AssignedPod, action::UPDATE_POD_SCALE_DOWN),
        ]
    }
}

/// Rejects for pod affinity; any assigned pod added may help.
struct AffinityPlugin;
impl Plugin for AffinityPlugin {
    fn name(&self) -> &'static str {
        AFFINITY
    }
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![ClusterEventWithHint::new(
            EventResource::AssignedPod,
            action::ADD,
        )]
    }
}

type Factory = fn(Option<&Value>, &PluginContext) -> Result<Arc<dyn Plugin>, String>;

fn framework() -> Arc<Framework> {
    let plugins: [(&'static str, Factory); 5] = [
        ("TestSort", |_, _| Ok(Arc::new(Sort))),
        (scheduling_gates::NAME, |_, _| Ok(Arc::new(Gates))),
        (FIT, |_, _| Ok(Arc::new(Fit))),
        (AFFINITY, |_, _| Ok(Arc::new(AffinityPlugin))),
        ("TestBinder", |_, _| Ok(Arc::new(NoopBinder))),
    ];
    let mut registry = Registry::new();
    for (name, f) in plugins {
        registry.register(name, f);
    }
    let profile = ResolvedProfile {
        scheduler_name: hints::DEFAULT_SCHEDULER_NAME.into(),
        multi_point: plugins.iter().map(|(n, _)| (n.to_string(), 0)).collect(),
        ..Default::default()
    };
    Arc::new(Framework::new(&profile, &registry, test_context()).expect("test framework"))
}

/// A clock tests move by hand.
#[derive(Clone)]
struct FakeClock(Arc<parking_lot::Mutex<Instant>>);
impl FakeClock {
    fn advance(&self, d: Duration) {
        *self.0.lock() += d;
    }
}

fn queue_with(options: QueueOptions) -> (SchedulingQueue, FakeClock) {
    let clock = FakeClock(Arc::new(parking_lot::Mutex::new(Instant::now())));
    let c = clock.clone();
    let frameworks = HashMap::from([(hints::DEFAULT_SCHEDULER_NAME.to_string(), framework())]);
    let q = SchedulingQueue::with_clock(frameworks, options, Arc::new(move || *c.0.lock()));
    (q, clock)
}

fn queue() -> (SchedulingQueue, FakeClock) {
    queue_with(QueueOptions::default())
}

fn prio_pod(name: &str, priority: i32) -> Arc<Pod> {
    let mut p = pod(name, &[]);
    if let Some(s) = p.spec.as_mut() {
        s.priority = Some(priority);
    }
    Arc::new(p)
}

fn uid(name: &str) -> String {
    format!("uid-pod-{name}")
}

fn labelled_node(name: &str, fits: bool) -> Node {
    let v = if fits { "true" } else { "false" };
    node(name, &[("cpu", "1")], &[("fits", v)])
}

/// Adds the pod, pops it, and returns it rejected by `plugins`.
fn pop_and_reject(q: &SchedulingQueue, p: Arc<Pod>, plugins: &[&str]) -> Result<(), String> {
    q.add(p.clone());
    let mut qpi = q.try_pop_now().ok_or("nothing to pop")?;
    assert_eq!(
        qpi.pod_info.name(),
        p.metadata.name.as_deref().unwrap_or_default()
    );
    qpi.unschedulable_plugins = plugins.iter().map(|s| s.to_string()).collect();
    let cycle = q.scheduling_cycle();
    q.add_unschedulable_if_not_present(qpi, cycle)
}

#[tokio::test]
async fn pops_by_priority_then_arrival() {
    // (pod, priority) in arrival order; the clock moves between arrivals.
    type Arrivals = &'static [(&'static str, i32)];
    let cases: &[(Arrivals, &[&str])] = &[
        (
            &[("low", 1), ("high", 10), ("high2", 10)],
            &["high", "high2", "low"],
        ),
        (&[("a", 0), ("b", 0), ("c", 0)], &["a", "b", "c"]),
        (
            &[("a", -5), ("b", 0), ("c", 100), ("d", 0)],
            &["c", "b", "d", "a"],
        ),
    ];
    for (pods, want) in cases {
        let (q, clock) = queue();
        for (name, prio) in *pods {
            q.add(prio_pod(name, *prio));
            clock.advance(Duration::from_millis(10));
        }
        let got: Vec<String> = std::iter::from_fn(|| q.try_pop_now())
            .map(|p| p.pod_info.name().to_string())
            .collect();
        assert_eq!(&got, want, "arrivals {pods:?}");
    }
}

#[tokio::test]
async fn update_in_active_reorders_and_delete_removes() {
    let (q, clock) = queue();
    let a = prio_pod("a", 1);
    q.add(a.clone());
    clock.advance(Duration::from_millis(1));
    q.add(prio_pod("b", 5));
    q.update(&a, prio_pod("a", 10));
    q.delete(&prio_pod("b", 5));
    let popped = q.try_pop_now().expect("a is active");
    assert_eq!(
        (popped.pod_info.name(), popped.pod_info.priority()),
        ("a", 10)
    );
    assert_eq!(popped.attempts, 1);
    assert!(popped.initial_attempt_timestamp.is_some());
    assert!(q.try_pop_now().is_none());
}

#[test]
fn backoff_grows_and_is_capped() {
    let s = Duration::from_secs;
    let cases = [
        (0, s(1), s(10), s(0)),
        (1, s(1), s(10), s(1)),
        (2, s(1), s(10), s(2)),
        (3, s(1), s(10), s(4)),
        (4, s(1), s(10), s(8)),
        (5, s(1), s(10), s(10)),
        (6, s(1), s(10), s(10)),
        (200, s(1), s(10), s(10)),
        (3, s(5), s(5), s(5)),
    ];
    for (attempts, initial, max, want) in cases {
        assert_eq!(
            backoff_duration(attempts, initial, max),
            want,
            "attempts {attempts}"
        );
    }
}

#[tokio::test]
async fn error_pods_wait_out_their_backoff() {
    // (rejecting plugins, consecutive errors the scheduler counted): both are errors.
    let cases: [(&[&str], u32); 2] = [(&[], 1), (&[FIT], 2)];
    for (plugins, errors) in cases {
        let (q, clock) = queue();
        q.add(prio_pod("p", 0));
        let mut qpi = q.try_pop_now().expect("active");
        qpi.unschedulable_plugins = plugins.iter().map(|s| s.to_string()).collect();
        qpi.consecutive_errors = errors;
        q.add_unschedulable_if_not_present(qpi, 1)
            .expect("requeued");
        assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Backoff));
        // Never popped early.
        assert!(q.try_pop_now().is_none(), "{plugins:?}");
        q.flush_backoff_completed();
        assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Backoff));
        // One attempt: 1s, truncated to its one-second window.
        clock.advance(Duration::from_secs(1));
        q.flush_backoff_completed();
        assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Active));
        let again = q.try_pop_now().expect("backoff over");
        assert_eq!(again.attempts, 2);
        assert_eq!(again.consecutive_errors, errors);
        assert_eq!(q.in_flight_pods(), 1);
        q.done(&uid("p"));
        assert_eq!(q.in_flight_pods(), 0);
    }
}

#[tokio::test]
async fn backoff_doubles_with_attempts() {
    let (q, clock) = queue();
    q.add(prio_pod("p", 0));
    // Attempt n waits 2^(n-1) seconds (the clock starts on a window boundary).
    for (attempt, wait) in [(1u32, 1u64), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10)] {
        let mut qpi = q.try_pop_now().expect("active");
        assert_eq!(qpi.attempts, attempt);
        qpi.consecutive_errors = 1;
        q.add_unschedulable_if_not_present(qpi, 0)
            .expect("requeued");
        clock.advance(Duration::from_secs(wait) - Duration::from_millis(1));
        q.flush_backoff_completed();
        assert_eq!(
            q.sub_queue_of(&uid("p")),
            Some(SubQueue::Backoff),
            "attempt {attempt}"
        );
        clock.advance(Duration::from_millis(1));
        q.flush_backoff_completed();
        assert_eq!(
            q.sub_queue_of(&uid("p")),
            Some(SubQueue::Active),
            "attempt {attempt}"
        );
    }
}

#[tokio::test]
async fn rejected_pods_in_backoff_are_popped_when_active_is_idle() {
    let (q, _clock) = queue();
    pop_and_reject(&q, prio_pod("p", 0), &[FIT]).expect("requeued");
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&labelled_node("n", true)));
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Backoff));
    // A pod in activeQ goes first.
    q.add(prio_pod("fresh", -100));
    assert_eq!(
        q.try_pop_now()
            .map(|x| x.pod_info.name().to_string())
            .as_deref(),
        Some("fresh")
    );
    assert_eq!(
        q.try_pop_now()
            .map(|x| x.pod_info.name().to_string())
            .as_deref(),
        Some("p")
    );
}

#[tokio::test]
async fn gated_pods_wait_for_their_gates_to_go() {
    let (q, _clock) = queue();
    let mut gated = pod("g", &[]);
    if let Some(s) = gated.spec.as_mut() {
        s.scheduling_gates = Some(vec![PodSchedulingGate {
            name: "example.com/wait".into(),
        }]);
    }
    let gated = Arc::new(gated);
    q.add(gated.clone());
    assert_eq!(q.sub_queue_of(&uid("g")), Some(SubQueue::Unschedulable));
    let stored = q.get(&uid("g")).expect("queued");
    assert!(stored.gated);
    assert!(
        stored
            .unschedulable_plugins
            .contains(scheduling_gates::NAME)
    );
    assert!(q.try_pop_now().is_none());
    assert_eq!(
        q.pending_pods().1,
        "activeQ:0; backoffQ:0; unschedulablePods:1"
    );
    // Other events leave it alone, even the ones that move everything.
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&labelled_node("n", true)));
    q.move_all_to_active_or_backoff(events::UNSCHEDULABLE_TIMEOUT, None, None);
    assert_eq!(q.sub_queue_of(&uid("g")), Some(SubQueue::Unschedulable));
    // An update that keeps the gates keeps it gated.
    let mut relabelled = (*gated).clone();
    relabelled.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
    q.update(&gated, Arc::new(relabelled.clone()));
    assert!(q.get(&uid("g")).is_some_and(|x| x.gated));
    let mut released = relabelled.clone();
    if let Some(s) = released.spec.as_mut() {
        s.scheduling_gates = None;
    }
    q.update(&relabelled, Arc::new(released));
    assert_eq!(q.sub_queue_of(&uid("g")), Some(SubQueue::Active));
    let popped = q.try_pop_now().expect("released");
    assert!(!popped.gated);
    assert!(popped.unschedulable_plugins.is_empty());
}

#[tokio::test]
async fn events_move_pods_their_rejectors_care_about() {
    struct Case {
        name: &'static str,
        rejectors: &'static [&'static str],
        event: ClusterEvent,
        node: Option<Node>,
        want: SubQueue,
    }
    let cases = [
        Case {
            name: "hint says queue",
            rejectors: &[FIT],
            event: events::NODE_ADD,
            node: Some(labelled_node("n", true)),
            want: SubQueue::Backoff,
        },
        Case {
            name: "hint says skip",
            rejectors: &[FIT],
            event: events::NODE_ADD,
            node: Some(labelled_node("n", false)),
            want: SubQueue::Unschedulable,
        },
        Case {
            name: "rejector did not register the event",
            rejectors: &[AFFINITY],
            event: events::NODE_ADD,
            node: Some(labelled_node("n", true)),
            want: SubQueue::Unschedulable,
        },
        Case {
            name: "one of two rejectors queues",
            rejectors: &[AFFINITY, FIT],
            event: events::NODE_ADD,
            node: Some(labelled_node("n", true)),
            want: SubQueue::Backoff,
        },
        Case {
            name: "an event no plugin registered",
            rejectors: &[FIT],
            event: ClusterEvent::new(EventResource::PersistentVolume, action::ADD, "PvAdd"),
            node: None,
            want: SubQueue::Unschedulable,
        },
        Case {
            name: "unschedulable timeout moves everything",
            rejectors: &[AFFINITY],
            event: events::UNSCHEDULABLE_TIMEOUT,
            node: None,
            want: SubQueue::Backoff,
        },
    ];
    for c in cases {
        let (q, _clock) = queue();
        pop_and_reject(&q, prio_pod("p", 0), c.rejectors).expect("requeued");
        assert_eq!(
            q.sub_queue_of(&uid("p")),
            Some(SubQueue::Unschedulable),
            "{}",
            c.name
        );
        let new = c.node.as_ref().map(|n| n as &dyn Any);
        q.move_all_to_active_or_backoff(c.event, None, new);
        assert_eq!(q.sub_queue_of(&uid("p")), Some(c.want), "{}", c.name);
    }
}

#[tokio::test]
async fn a_pod_whose_backoff_ended_goes_straight_to_active() {
    let (q, clock) = queue();
    pop_and_reject(&q, prio_pod("p", 0), &[FIT]).expect("requeued");
    clock.advance(Duration::from_secs(2));
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&labelled_node("n", true)));
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Active));
}

#[tokio::test]
async fn leftover_unschedulable_pods_are_flushed() {
    let (q, clock) = queue();
    pop_and_reject(&q, prio_pod("p", 0), &[FIT]).expect("requeued");
    clock.advance(Duration::from_secs(60));
    q.flush_unschedulable_leftover();
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Unschedulable));
    clock.advance(Duration::from_secs(4 * 60 + 1));
    q.flush_unschedulable_leftover();
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Active));
}

#[tokio::test]
async fn run_flushes_backoff_when_it_ends() {
    let frameworks = HashMap::from([(hints::DEFAULT_SCHEDULER_NAME.to_string(), framework())]);
    let q = Arc::new(SchedulingQueue::new(frameworks, QueueOptions::default()));
    let shutdown = CancellationToken::new();
    q.run(shutdown.clone());
    // An error: kept in backoffQ (never popped early) until the flusher moves it.
    pop_and_reject(&q, prio_pod("p", 0), &[]).expect("requeued");
    let deadline = Instant::now() + Duration::from_secs(3);
    while q.sub_queue_of(&uid("p")) != Some(SubQueue::Active) {
        assert!(
            Instant::now() < deadline,
            "not flushed: {:?}",
            q.sub_queue_of(&uid("p"))
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
}

#[tokio::test]
async fn events_during_an_attempt_requeue_the_pod() {
    // (node seen while the pod was in flight, where the pod goes when it fails)
    let cases = [
        (Some(labelled_node("n", true)), SubQueue::Backoff),
        (Some(labelled_node("n", false)), SubQueue::Unschedulable),
        (None, SubQueue::Unschedulable),
    ];
    for (seen, want) in cases {
        let (q, _clock) = queue();
        q.add(prio_pod("p", 0));
        let mut qpi = q.try_pop_now().expect("active");
        if let Some(n) = &seen {
            q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(n));
            assert_eq!(q.in_flight_events(), 1);
        }
        qpi.unschedulable_plugins.insert(FIT.into());
        q.add_unschedulable_if_not_present(qpi, 1)
            .expect("requeued");
        assert_eq!(q.sub_queue_of(&uid("p")), Some(want), "seen {seen:?}");
        assert_eq!((q.in_flight_pods(), q.in_flight_events()), (0, 0));
    }
}

#[tokio::test]
async fn events_are_kept_only_while_some_pod_needs_them() {
    let (q, _clock) = queue();
    let fits = labelled_node("n", true);
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&fits));
    assert_eq!(q.in_flight_events(), 0, "nothing in flight");
    q.add(prio_pod("a", 1));
    q.add(prio_pod("b", 0));
    let a = q.try_pop_now().expect("a");
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&fits));
    let b = q.try_pop_now().expect("b");
    q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&fits));
    assert_eq!(q.in_flight_events(), 2);
    // b started after the first event; a still needs both.
    q.done(b.pod_info.uid());
    assert_eq!(q.in_flight_events(), 2);
    q.done(a.pod_info.uid());
    assert_eq!(q.in_flight_events(), 0);
}

#[tokio::test]
async fn an_update_during_an_attempt_is_judged_when_it_fails() {
    let (q, _clock) = queue();
    let mut gated = pod("g", &[]);
    if let Some(s) = gated.spec.as_mut() {
        s.scheduling_gates = Some(vec![PodSchedulingGate { name: "x".into() }]);
    }
    // Pretend it was popped ungated and a gate-removal arrives while in flight.
    let plain = Arc::new(pod("g", &[]));
    q.add(plain.clone());
    let mut qpi = q.try_pop_now().expect("active");
    q.update(&gated, plain.clone());
    assert_eq!(q.in_flight_events(), 1);
    qpi.unschedulable_plugins
        .insert(scheduling_gates::NAME.into());
    q.add_unschedulable_if_not_present(qpi, 1)
        .expect("requeued");
    assert_ne!(q.sub_queue_of(&uid("g")), Some(SubQueue::Unschedulable));
}

#[tokio::test]
async fn returning_a_queued_pod_is_an_error() {
    let (q, _clock) = queue();
    let p = prio_pod("p", 0);
    q.add(p.clone());
    let qpi = q.try_pop_now().expect("active");
    q.add(p);
    let err = q
        .add_unschedulable_if_not_present(qpi, 1)
        .expect_err("already queued");
    assert_eq!(err, "Pod default/p is already present in the active queue");
    assert_eq!(q.in_flight_pods(), 0);
}

#[tokio::test]
async fn assigned_pods_move_pods_whose_affinity_they_satisfy() {
    let (q, _clock) = queue();
    let mut p = (*prio_pod("p", 0)).clone();
    if let Some(s) = p.spec.as_mut() {
        s.affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        match_labels: Some(BTreeMap::from([("app".into(), "db".into())])),
                        ..Default::default()
                    }),
                    topology_key: "kubernetes.io/hostname".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    pop_and_reject(&q, Arc::new(p), &[AFFINITY]).expect("requeued");
    let bound = |app: &str| {
        let mut b = pod(&format!("bound-{app}"), &[]);
        b.metadata.labels = Some(BTreeMap::from([("app".into(), app.into())]));
        if let Some(s) = b.spec.as_mut() {
            s.node_name = Some("n1".into());
        }
        pod_info(b)
    };
    q.assigned_pod_added(&bound("web"));
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Unschedulable));
    q.assigned_pod_added(&bound("db"));
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Backoff));
}

#[tokio::test]
async fn assigned_pod_scale_down_reaches_resource_rejections() {
    let (q, _clock) = queue();
    pop_and_reject(&q, prio_pod("p", 0), &[FIT]).expect("requeued");
    let old = pod("bound", &[("cpu", "2")]);
    let new = pod_info(pod("bound", &[("cpu", "1")]));
    let events = pod_scheduling_property_changes(&old, &new.pod);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].action, action::UPDATE_POD_SCALE_DOWN);
    let mut assigned = events[0];
    assigned.resource = EventResource::AssignedPod;
    q.assigned_pod_updated(&old, &new, assigned);
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Backoff));
}

#[tokio::test]
async fn activate_moves_pods_to_active_at_once() {
    let (q, _clock) = queue();
    pop_and_reject(&q, prio_pod("u", 0), &[FIT]).expect("requeued");
    pop_and_reject(&q, prio_pod("e", 0), &[]).expect("requeued");
    assert_eq!(q.sub_queue_of(&uid("e")), Some(SubQueue::Backoff));
    q.activate(&[prio_pod("u", 0), prio_pod("e", 0), prio_pod("unknown", 0)]);
    assert_eq!(q.sub_queue_of(&uid("u")), Some(SubQueue::Active));
    assert_eq!(q.sub_queue_of(&uid("e")), Some(SubQueue::Active));
    assert_eq!(q.sub_queue_of(&uid("unknown")), None);
}

#[tokio::test]
async fn pop_waits_for_a_pod_and_ends_on_close() {
    let frameworks = HashMap::from([(hints::DEFAULT_SCHEDULER_NAME.to_string(), framework())]);
    let q = Arc::new(SchedulingQueue::new(frameworks, QueueOptions::default()));
    let popper = {
        let q = q.clone();
        tokio::spawn(async move { q.pop().await.map(|p| p.pod_info.name().to_string()) })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!popper.is_finished());
    q.add(prio_pod("p", 0));
    let got = tokio::time::timeout(Duration::from_secs(2), popper).await;
    assert_eq!(
        got.ok().and_then(Result::ok).flatten().as_deref(),
        Some("p")
    );
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.pop().await.is_none() })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    q.close();
    let closed = tokio::time::timeout(Duration::from_secs(2), waiter).await;
    assert_eq!(closed.ok().and_then(Result::ok), Some(true));
}

#[tokio::test]
async fn nominations_follow_pods() {
    let (q, _clock) = queue();
    let mut p = pod("p", &[]);
    p.status = Some(PodStatus {
        nominated_node_name: Some("n1".into()),
        ..Default::default()
    });
    let p = Arc::new(p);
    q.add(p.clone());
    let names = |node: &str| -> Vec<String> {
        q.nominated_pods_for_node(node)
            .iter()
            .map(|x| x.name().to_string())
            .collect()
    };
    assert_eq!(names("n1"), ["p"]);
    // Preemption nominates it elsewhere; an update without nomination keeps that.
    q.add_nominated_pod(&pod_info((*p).clone()), "n2");
    assert!(names("n1").is_empty());
    assert_eq!(names("n2"), ["p"]);
    let mut plain = (*p).clone();
    plain.status = None;
    let mut plain2 = plain.clone();
    plain2.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
    q.update(&plain, Arc::new(plain2.clone()));
    assert_eq!(names("n2"), ["p"]);
    assert_eq!(q.nominated_node_name(&plain2).as_deref(), Some("n2"));
    // A bound pod holds no nomination.
    let mut bound = pod("b", &[]);
    if let Some(s) = bound.spec.as_mut() {
        s.node_name = Some("n3".into());
    }
    q.add_nominated_pod(&pod_info(bound), "n3");
    assert!(names("n3").is_empty());
    q.delete_nominated_pod(&pod_info(plain2.clone()));
    assert!(names("n2").is_empty());
    q.add_nominated_pod(&pod_info(plain2.clone()), "n4");
    q.delete(&plain2);
    assert!(names("n4").is_empty());
}

#[tokio::test]
async fn pending_pods_lists_every_sub_queue() {
    let (q, _clock) = queue();
    pop_and_reject(&q, prio_pod("u", 0), &[FIT]).expect("requeued");
    pop_and_reject(&q, prio_pod("e", 0), &[]).expect("requeued");
    q.add(prio_pod("a", 0));
    let (pods, summary) = q.pending_pods();
    let mut names: Vec<String> = pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "e", "u"]);
    assert_eq!(summary, "activeQ:1; backoffQ:1; unschedulablePods:1");
}

#[tokio::test]
async fn a_flush_that_moves_nobody_is_no_event_for_in_flight_pods() {
    let (q, clock) = queue();
    pop_and_reject(&q, prio_pod("u", 0), &[FIT]).expect("requeued");
    q.add(prio_pod("p", 0));
    let mut qpi = q.try_pop_now().expect("p");
    clock.advance(Duration::from_secs(10));
    q.flush_unschedulable_leftover();
    assert_eq!(q.in_flight_events(), 0);
    qpi.unschedulable_plugins.insert(FIT.into());
    q.add_unschedulable_if_not_present(qpi, 2)
        .expect("requeued");
    assert_eq!(q.sub_queue_of(&uid("p")), Some(SubQueue::Unschedulable));
    assert_eq!(q.sub_queue_of(&uid("u")), Some(SubQueue::Unschedulable));
}

/// Keeps gauges by `name{label values}`, to read the pending-pods gauges back.
#[derive(Default)]
struct GaugeRecorder(parking_lot::Mutex<HashMap<String, Arc<std::sync::atomic::AtomicU64>>>);

impl GaugeRecorder {
    fn value(&self, series: &str) -> f64 {
        self.0.lock().get(series).map_or(f64::NAN, |a| {
            f64::from_bits(a.load(std::sync::atomic::Ordering::Relaxed))
        })
    }
}

impl ::metrics::Recorder for GaugeRecorder {
    fn describe_counter(
        &self,
        _: ::metrics::KeyName,
        _: Option<::metrics::Unit>,
        _: ::metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: ::metrics::KeyName,
        _: Option<::metrics::Unit>,
        _: ::metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: ::metrics::KeyName,
        _: Option<::metrics::Unit>,
        _: ::metrics::SharedString,
    ) {
    }
    fn register_counter(
        &self,
        _: &::metrics::Key,
        _: &::metrics::Metadata<'_>,
    ) -> ::metrics::Counter {
        ::metrics::Counter::noop()
    }
    fn register_gauge(
        &self,
        key: &::metrics::Key,
        _: &::metrics::Metadata<'_>,
    ) -> ::metrics::Gauge {
        let labels: Vec<&str> = key.labels().map(|l| l.value()).collect();
        let series = format!("{}{{{}}}", key.name(), labels.join(","));
        ::metrics::Gauge::from_arc(self.0.lock().entry(series).or_default().clone())
    }
    fn register_histogram(
        &self,
        _: &::metrics::Key,
        _: &::metrics::Metadata<'_>,
    ) -> ::metrics::Histogram {
        ::metrics::Histogram::noop()
    }
}

#[tokio::test]
async fn pending_pods_gauges_follow_the_sub_queues() {
    let recorder = GaugeRecorder::default();
    let (q, _clock) = ::metrics::with_local_recorder(&recorder, queue);
    let gauges = |r: &GaugeRecorder| {
        ["active", "backoff", "unschedulable", "gated"]
            .map(|s| r.value(&format!("scheduler_pending_pods{{{s}}}")))
    };
    pop_and_reject(&q, prio_pod("u", 0), &[FIT]).expect("requeued");
    pop_and_reject(&q, prio_pod("e", 0), &[]).expect("requeued");
    q.add(prio_pod("a", 0));
    let mut gated = pod("g", &[]);
    if let Some(s) = gated.spec.as_mut() {
        s.scheduling_gates = Some(vec![PodSchedulingGate { name: "x".into() }]);
    }
    q.add(Arc::new(gated.clone()));
    assert_eq!(gauges(&recorder), [1.0, 1.0, 1.0, 1.0]);
    q.delete(&gated);
    q.delete(&prio_pod("u", 0));
    assert_eq!(gauges(&recorder), [1.0, 1.0, 0.0, 0.0]);
    q.try_pop_now().expect("a");
    assert_eq!(gauges(&recorder), [0.0, 1.0, 0.0, 0.0]);
}

#[tokio::test]
async fn a_pending_plugin_that_queues_skips_the_backoff() {
    // (plugin set the rejector is in, where a helpful event sends the backing-off pod)
    let cases = [(true, SubQueue::Active), (false, SubQueue::Backoff)];
    for (pending, want) in cases {
        let (q, _clock) = queue();
        q.add(prio_pod("p", 0));
        let mut qpi = q.try_pop_now().expect("active");
        if pending {
            qpi.pending_plugins.insert(FIT.into());
        } else {
            qpi.unschedulable_plugins.insert(FIT.into());
        }
        q.add_unschedulable_if_not_present(qpi, 1)
            .expect("requeued");
        q.move_all_to_active_or_backoff(events::NODE_ADD, None, Some(&labelled_node("n", true)));
        assert_eq!(q.sub_queue_of(&uid("p")), Some(want), "pending {pending}");
    }
}
