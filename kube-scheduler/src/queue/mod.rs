//! The scheduling queue (upstream's `PriorityQueue`, pkg/scheduler/backend/queue v1.33):
//! - activeQ: pods ready to be tried, in QueueSort order;
//! - backoffQ: pods that failed and wait out an exponential backoff;
//! - unschedulablePods: pods rejected until a cluster event that may help them (judged by the
//!   rejecting plugins' queueing hints), or gated by PreEnqueue.
//!
//! Pods popped for scheduling are tracked as in flight, and the events that arrive meanwhile are
//! kept, so that a pod which fails during an event that would have helped it is retried.

pub mod backoff;
pub mod heap;
pub mod hints;
pub mod in_flight;
pub mod metrics;
pub mod nominator;
#[cfg(test)]
mod tests;

pub use hints::{Strategy, pod_scheduling_property_changes, scheduler_name};
pub use nominator::nominated_node_name;

use crate::framework::events::{ClusterEvent, EventResource, action, events};
use crate::framework::registry::PodNominator;
use crate::framework::{Framework, PodInfo, QueuedPodInfo};
use crate::plugins::{pod_topology_spread, scheduling_gates};
use backoff::BackoffQueue;
use heap::{Heap, LessFn};
use hints::{HintMap, labels};
use in_flight::{InFlight, Object, RecordedEvent};
use k8s_openapi::api::core::v1::Pod;
use nominator::Nominator;
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often pods left in unschedulablePods too long are flushed (upstream's 30s).
pub const UNSCHEDULABLE_FLUSH_PERIOD: Duration = Duration::from_secs(30);
/// The backoff flusher's longest sleep; it otherwise wakes at the next expiry.
const BACKOFF_FLUSH_PERIOD: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct QueueOptions {
    pub pod_initial_backoff: Duration,
    pub pod_max_backoff: Duration,
    /// How long a pod may stay in unschedulablePods without any event moving it.
    pub pod_max_in_unschedulable_pods_duration: Duration,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            pod_initial_backoff: Duration::from_secs(1),
            pod_max_backoff: Duration::from_secs(10),
            pod_max_in_unschedulable_pods_duration: Duration::from_secs(5 * 60),
        }
    }
}

/// The time source (a fake one in tests).
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Where a pod went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubQueue {
    Active,
    Backoff,
    Unschedulable,
}

/// The key of a queued pod: its uid (namespace/name when it has none, as in hand-made tests).
pub(crate) fn pod_key(qpi: &QueuedPodInfo) -> &str {
    let uid = qpi.pod_info.uid();
    if uid.is_empty() {
        &qpi.pod_info.key
    } else {
        uid
    }
}

fn key_of(pod: &Pod) -> String {
    match pod.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.to_string(),
        _ => format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

/// Adds or removes the pod's rejections from `scheduler_unschedulable_pods`: counted when
/// it comes back rejected (or is gated), uncounted when it is tried again or deleted.
fn count_rejectors(qpi: &QueuedPodInfo, delta: f64) {
    let profile = scheduler_name(qpi.pod());
    for plugin in qpi.unschedulable_plugins.union(&qpi.pending_plugins) {
        metrics::unschedulable_reason(plugin, profile, delta);
    }
}

/// Whether the pod's last attempt failed with an error rather than a rejection.
pub(crate) fn is_error(qpi: &QueuedPodInfo) -> bool {
    qpi.consecutive_errors > 0
        || (qpi.unschedulable_plugins.is_empty() && qpi.pending_plugins.is_empty())
}

fn qpi_key(qpi: &QueuedPodInfo) -> &str {
    pod_key(qpi)
}

struct State {
    active: Heap<QueuedPodInfo>,
    backoff: BackoffQueue,
    unschedulable: HashMap<String, QueuedPodInfo>,
    /// How many of `unschedulable` are gated (the `gated` gauge).
    gated: usize,
    in_flight: InFlight,
    cycle: u64,
    closed: bool,
}

impl State {
    /// Adds or replaces a pod in unschedulablePods.
    fn unschedulable_insert(&mut self, qpi: QueuedPodInfo, event: &'static str) {
        let gated = qpi.gated;
        match self.unschedulable.insert(pod_key(&qpi).to_string(), qpi) {
            Some(prev) => {
                if prev.gated {
                    self.gated -= 1;
                }
            }
            None => metrics::incoming(metrics::UNSCHEDULABLE, event),
        }
        if gated {
            self.gated += 1;
        }
    }

    fn unschedulable_remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let qpi = self.unschedulable.remove(key)?;
        if qpi.gated {
            self.gated -= 1;
        }
        Some(qpi)
    }
}

pub struct SchedulingQueue {
    frameworks: HashMap<String, Arc<Framework>>,
    hints: HintMap,
    options: QueueOptions,
    clock: Clock,
    state: Mutex<State>,
    /// Kept apart from `state`: Filter reads it on every node, in parallel.
    nominator: RwLock<Nominator>,
    /// Wakes `pop` when a pod may be available (or the queue closed).
    pod_available: Notify,
    /// Wakes the backoff flusher when an earlier expiry arrives.
    backoff_changed: Notify,
    gauges: metrics::PendingGauges,
}

impl std::fmt::Debug for SchedulingQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pending_pods().1)
    }
}

impl SchedulingQueue {
    /// `frameworks` by scheduler name (profile); they share one QueueSort.
    pub fn new(frameworks: HashMap<String, Arc<Framework>>, options: QueueOptions) -> Self {
        Self::with_clock(frameworks, options, Arc::new(Instant::now))
    }

    pub fn with_clock(
        frameworks: HashMap<String, Arc<Framework>>,
        options: QueueOptions,
        clock: Clock,
    ) -> Self {
        let sort_fw = frameworks.values().next().cloned();
        let less: LessFn<QueuedPodInfo> = Arc::new(move |a, b| match &sort_fw {
            Some(fw) => fw.less(a, b),
            None => a.timestamp < b.timestamp,
        });
        let now = clock();
        let state = State {
            active: Heap::new(qpi_key, less.clone()),
            backoff: BackoffQueue::new(
                options.pod_initial_backoff,
                options.pod_max_backoff,
                now,
                less,
            ),
            unschedulable: HashMap::new(),
            gated: 0,
            in_flight: InFlight::default(),
            cycle: 0,
            closed: false,
        };
        Self {
            hints: HintMap::new(&frameworks),
            frameworks,
            options,
            clock,
            state: Mutex::new(state),
            nominator: RwLock::new(Nominator::default()),
            pod_available: Notify::new(),
            backoff_changed: Notify::new(),
            gauges: metrics::PendingGauges::new(),
        }
    }

    fn now(&self) -> Instant {
        (self.clock)()
    }

    fn new_qpi(&self, pod: Arc<Pod>) -> QueuedPodInfo {
        QueuedPodInfo::new(Arc::new(PodInfo::new(pod)), self.now())
    }

    fn update_gauges(&self, st: &State) {
        self.gauges.set(
            st.active.len(),
            st.backoff.len(),
            st.unschedulable.len() - st.gated,
            st.gated,
        );
    }

    /// Runs PreEnqueue of the pod's profile; a refusal gates it, naming the plugin as its
    /// rejector so that the plugin's events (e.g. its gates removed) release it.
    fn run_pre_enqueue(&self, qpi: &mut QueuedPodInfo) {
        let Some(fw) = self.frameworks.get(scheduler_name(qpi.pod())) else {
            qpi.gated = false;
            return;
        };
        let s = fw.run_pre_enqueue(qpi.pod());
        qpi.gated = !s.is_success();
        if qpi.gated && !s.plugin.is_empty() && !qpi.unschedulable_plugins.contains(&s.plugin) {
            metrics::unschedulable_reason(&s.plugin, scheduler_name(qpi.pod()), 1.0);
            qpi.unschedulable_plugins.insert(s.plugin);
        }
    }

    /// Puts the pod in activeQ unless PreEnqueue gates it (then unschedulablePods).
    fn move_to_active(&self, st: &mut State, mut qpi: QueuedPodInfo, event: &'static str) -> bool {
        // Pods entering backoffQ already passed PreEnqueue.
        if event != labels::BACKOFF_COMPLETE {
            self.run_pre_enqueue(&mut qpi);
        }
        let key = pod_key(&qpi).to_string();
        if qpi.gated {
            if st.active.contains(&key) || st.backoff.contains(&key) {
                return false;
            }
            st.unschedulable_insert(qpi, event);
            return false;
        }
        if qpi.initial_attempt_timestamp.is_none() {
            qpi.initial_attempt_timestamp = Some(self.now());
        }
        st.unschedulable_remove(&key);
        st.backoff.remove(&key);
        if event == labels::UNSCHEDULED_POD_ADD || event == labels::UNSCHEDULED_POD_UPDATE {
            self.nominator.write().add(&qpi.pod_info, None);
        }
        st.active.push(qpi);
        metrics::incoming(metrics::ACTIVE, event);
        true
    }

    /// Puts the pod in backoffQ unless PreEnqueue gates it (then unschedulablePods): pods may
    /// be popped straight from backoffQ, so they are checked on the way in.
    fn move_to_backoff(&self, st: &mut State, mut qpi: QueuedPodInfo, event: &'static str) -> bool {
        self.run_pre_enqueue(&mut qpi);
        if qpi.gated {
            st.unschedulable_insert(qpi, event);
            return false;
        }
        let key = pod_key(&qpi).to_string();
        st.unschedulable_remove(&key);
        let expiry = st.backoff.expiry(&qpi);
        st.backoff.add(qpi);
        metrics::incoming(metrics::BACKOFF, event);
        if expiry.is_some() && st.backoff.next_expiry() == expiry {
            self.backoff_changed.notify_waiters();
        }
        true
    }

    fn requeue(
        &self,
        st: &mut State,
        qpi: QueuedPodInfo,
        strategy: Strategy,
        event: &'static str,
    ) -> SubQueue {
        match strategy {
            Strategy::Skip => {
                st.unschedulable_insert(qpi, event);
                SubQueue::Unschedulable
            }
            Strategy::AfterBackoff if st.backoff.is_backing_off(&qpi, self.now()) => {
                if self.move_to_backoff(st, qpi, event) {
                    SubQueue::Backoff
                } else {
                    SubQueue::Unschedulable
                }
            }
            _ => {
                if self.move_to_active(st, qpi, event) {
                    SubQueue::Active
                } else {
                    SubQueue::Unschedulable
                }
            }
        }
    }

    /// Waits for a pod to schedule; `None` once the queue is closed. The pod counts as in
    /// flight until `done` (or `add_unschedulable_if_not_present`).
    pub async fn pop(&self) -> Option<QueuedPodInfo> {
        loop {
            let notified = self.pod_available.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.state.lock();
                if st.closed {
                    return None;
                }
                if let Some(qpi) = self.try_pop(&mut st) {
                    return Some(qpi);
                }
            }
            notified.await;
        }
    }

    /// Pops without waiting.
    pub fn try_pop_now(&self) -> Option<QueuedPodInfo> {
        let mut st = self.state.lock();
        if st.closed {
            return None;
        }
        self.try_pop(&mut st)
    }

    fn try_pop(&self, st: &mut State) -> Option<QueuedPodInfo> {
        // An idle activeQ takes the rejected pod nearest to the end of its backoff rather than
        // leave the scheduler waiting (SchedulerPopFromBackoffQ, on by default in v1.33).
        let mut qpi = match st.active.pop() {
            Some(q) => q,
            None => {
                let q = st.backoff.pop_early()?;
                metrics::incoming(metrics::ACTIVE, labels::POP_FROM_BACKOFF_Q);
                q
            }
        };
        qpi.attempts += 1;
        if qpi.initial_attempt_timestamp.is_none() {
            qpi.initial_attempt_timestamp = Some(self.now());
        }
        st.cycle += 1;
        st.in_flight.start(pod_key(&qpi));
        count_rejectors(&qpi, -1.0);
        qpi.unschedulable_plugins.clear();
        qpi.pending_plugins.clear();
        self.update_gauges(st);
        Some(qpi)
    }

    /// Scheduling cycles started so far (each pop starts one).
    pub fn scheduling_cycle(&self) -> u64 {
        self.state.lock().cycle
    }

    /// Ends the in-flight tracking of a popped pod (bound, or given up).
    pub fn done(&self, uid: &str) {
        self.state.lock().in_flight.done(uid);
    }

    /// A new pending pod.
    pub fn add(&self, pod: Arc<Pod>) {
        let mut st = self.state.lock();
        let qpi = self.new_qpi(pod);
        if self.move_to_active(&mut st, qpi, labels::UNSCHEDULED_POD_ADD) {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(&st);
    }

    /// A pending pod changed: updated where it is, and, when it was unschedulable, moved if
    /// its rejectors' hints say the change may help (e.g. its scheduling gates removed).
    pub fn update(&self, old: &Pod, new: Arc<Pod>) {
        let mut st = self.state.lock();
        let events = pod_scheduling_property_changes(old, &new);
        let key = key_of(&new);
        if st.in_flight.contains(&key) {
            // The attempt in progress will be judged against these when it fails.
            let old_obj: Object = Arc::new(old.clone());
            let new_obj: Object = new.clone();
            let recorded = events
                .iter()
                .map(|e| RecordedEvent {
                    event: *e,
                    old: Some(old_obj.clone()),
                    new: Some(new_obj.clone()),
                    opaque: false,
                })
                .collect();
            st.in_flight.add_if_pod_in_flight(&key, recorded);
            return;
        }
        let old_key = key_of(old);
        let new_info = Arc::new(PodInfo::new(new.clone()));
        if let Some(mut qpi) = st.active.get(&old_key).cloned() {
            qpi.pod_info = new_info.clone();
            st.active.push(qpi);
            self.nominator.write().update(old, &new_info);
            return;
        }
        if let Some(mut qpi) = st.backoff.remove(&old_key) {
            qpi.pod_info = new_info.clone();
            st.backoff.add(qpi);
            self.nominator.write().update(old, &new_info);
            return;
        }
        if let Some(stored) = st.unschedulable.get_mut(&old_key) {
            stored.pod_info = new_info.clone();
            let qpi = stored.clone();
            self.nominator.write().update(old, &new_info);
            let old_any: &dyn Any = old;
            let new_any: &dyn Any = &new;
            for e in &events {
                let strategy =
                    self.hints
                        .worth_requeuing(&qpi, e, Some(old_any), Some(new_any), false);
                let to = self.requeue(&mut st, qpi.clone(), strategy, e.label);
                if to != SubQueue::Unschedulable {
                    self.pod_available.notify_waiters();
                    break;
                }
            }
            self.update_gauges(&st);
            return;
        }
        let qpi = QueuedPodInfo::new(new_info, self.now());
        if self.move_to_active(&mut st, qpi, labels::UNSCHEDULED_POD_UPDATE) {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(&st);
    }

    /// A pending pod was deleted (or got bound by someone else).
    pub fn delete(&self, pod: &Pod) {
        let mut st = self.state.lock();
        self.nominator.write().delete(pod);
        let key = key_of(pod);
        let removed = match st.active.remove(&key) {
            Some(q) => Some(q),
            None => match st.backoff.remove(&key) {
                Some(q) => Some(q),
                None => st.unschedulable_remove(&key),
            },
        };
        if let Some(q) = removed {
            count_rejectors(&q, -1.0);
        }
        self.update_gauges(&st);
    }

    /// Moves the pods to activeQ at once, whatever their backoff (plugins' `Activate`, e.g.
    /// a gang whose last member arrived). A pod in flight is requeued when it comes back.
    pub fn activate(&self, pods: &[Arc<Pod>]) {
        let mut st = self.state.lock();
        let mut activated = false;
        for pod in pods {
            let key = key_of(pod);
            let found = match st.unschedulable_remove(&key) {
                Some(q) => Some(q),
                None => st.backoff.remove(&key),
            };
            match found {
                Some(qpi) => activated |= self.move_to_active(&mut st, qpi, labels::FORCE_ACTIVATE),
                None => {
                    let e = RecordedEvent {
                        event: events::FORCE_ACTIVATE,
                        old: None,
                        new: Some(pod.clone()),
                        opaque: false,
                    };
                    st.in_flight.add_if_pod_in_flight(&key, vec![e]);
                }
            }
        }
        if activated {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(&st);
    }

    /// Returns a pod whose attempt failed. Rejected pods go to unschedulablePods unless an
    /// event during the attempt may have helped them (then backoffQ, or activeQ when the
    /// backoff is over); pods that failed with an error (no rejecting plugin, or
    /// `consecutive_errors` set, which the caller counts) go to backoffQ.
    /// `_pod_scheduling_cycle` is upstream's moveRequestCycle check, which the in-flight
    /// events replace when queueing hints are on (the default since v1.32).
    pub fn add_unschedulable_if_not_present(
        &self,
        mut qpi: QueuedPodInfo,
        _pod_scheduling_cycle: u64,
    ) -> Result<(), String> {
        let mut st = self.state.lock();
        let key = pod_key(&qpi).to_string();
        let present = if st.unschedulable.contains_key(&key) {
            Some("unschedulable queue")
        } else if st.active.contains(&key) {
            Some("the active queue")
        } else if st.backoff.contains(&key) {
            Some("the backoff queue")
        } else {
            None
        };
        if let Some(queue) = present {
            st.in_flight.done(&key);
            return Err(format!(
                "Pod {} is already present in {queue}",
                qpi.pod_info.key
            ));
        }
        qpi.timestamp = self.now();
        count_rejectors(&qpi, 1.0);
        let strategy = self.strategy_for_in_flight(&st, &qpi);
        let to = self.requeue(&mut st, qpi, strategy, labels::SCHEDULE_ATTEMPT_FAILURE);
        st.in_flight.done(&key);
        if to != SubQueue::Unschedulable {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(&st);
        Ok(())
    }

    /// The strongest answer any event seen during the pod's attempt gives.
    fn strategy_for_in_flight(&self, st: &State, qpi: &QueuedPodInfo) -> Strategy {
        let Some(events) = st.in_flight.events_for(pod_key(qpi)) else {
            return Strategy::AfterBackoff;
        };
        if is_error(qpi) {
            return Strategy::AfterBackoff;
        }
        let mut best = Strategy::Skip;
        for e in &events {
            let s = self.hints.worth_requeuing(
                qpi,
                &e.event,
                e.old.as_deref().map(|o| o as &dyn Any),
                e.new.as_deref().map(|o| o as &dyn Any),
                e.opaque,
            );
            if s == Strategy::Immediately {
                return s;
            }
            if s == Strategy::AfterBackoff && qpi.pending_plugins.is_empty() {
                return s;
            }
            best = best.max(s);
        }
        best
    }

    /// A cluster event: moves the unschedulable pods it may help (by their rejectors'
    /// registrations and hints) to backoffQ or activeQ. `UnschedulableTimeout` and
    /// `ForceActivate` move every pod.
    pub fn move_all_to_active_or_backoff(
        &self,
        event: ClusterEvent,
        old: Option<&dyn Any>,
        new: Option<&dyn Any>,
    ) {
        let mut st = self.state.lock();
        if !self.hints.is_event_of_interest(&event) {
            return;
        }
        self.move_pods(&mut st, |_| true, event, old, new);
    }

    /// A pod was bound: it may satisfy pending pods' affinity or topology spread.
    pub fn assigned_pod_added(&self, pod: &PodInfo) {
        let mut st = self.state.lock();
        if !self.hints.is_event_of_interest(&events::ASSIGNED_POD_ADD) {
            return;
        }
        let new: &dyn Any = &pod.pod;
        self.move_pods(
            &mut st,
            |q| may_help_cross_topology(q, pod),
            events::ASSIGNED_POD_ADD,
            None,
            Some(new),
        );
    }

    /// A bound pod changed. Only a scale-down can help pods rejected for resources; any
    /// other change matters only to pods whose affinity or spread it touches.
    pub fn assigned_pod_updated(&self, old: &Pod, new: &PodInfo, event: ClusterEvent) {
        let mut st = self.state.lock();
        if !self.hints.is_event_of_interest(&event) {
            return;
        }
        let scale_down = ClusterEvent::new(
            EventResource::AssignedPod,
            action::UPDATE_POD_SCALE_DOWN,
            "",
        );
        let all = scale_down.covers(&event);
        let old_any: &dyn Any = old;
        let new_any: &dyn Any = &new.pod;
        self.move_pods(
            &mut st,
            |q| all || may_help_cross_topology(q, new),
            event,
            Some(old_any),
            Some(new_any),
        );
    }

    /// Moves the unschedulable pods `candidate` selects that the event may help. Hints are
    /// asked first, on shared references, so that an event which helps nobody costs no copies.
    fn move_pods(
        &self,
        st: &mut State,
        candidate: impl Fn(&QueuedPodInfo) -> bool,
        event: ClusterEvent,
        old: Option<&dyn Any>,
        new: Option<&dyn Any>,
    ) {
        let to_move: Vec<(String, Strategy)> = st
            .unschedulable
            .iter()
            .filter(|(_, q)| {
                // Only an update of the pod itself lifts scheduling gates; skipping them here
                // keeps events cheap when thousands of gated pods wait.
                !(q.gated && q.unschedulable_plugins.contains(scheduling_gates::NAME))
                    && candidate(q)
            })
            .filter_map(|(k, q)| {
                let s = self.hints.worth_requeuing(q, &event, old, new, false);
                (s != Strategy::Skip).then(|| (k.clone(), s))
            })
            .collect();
        let mut moved = false;
        for (key, strategy) in to_move {
            let Some(qpi) = st.unschedulable_remove(&key) else {
                continue;
            };
            if self.requeue(st, qpi, strategy, event.label) != SubQueue::Unschedulable {
                moved = true;
            }
        }
        st.in_flight
            .add_if_any(|| RecordedEvent::capture(event, old, new));
        if moved {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(st);
    }

    /// Moves every pod whose backoff is over from backoffQ to activeQ.
    pub fn flush_backoff_completed(&self) {
        let mut st = self.state.lock();
        let now = self.now();
        let mut moved = false;
        for qpi in st.backoff.pop_completed(now) {
            moved |= self.move_to_active(&mut st, qpi, labels::BACKOFF_COMPLETE);
        }
        if moved {
            self.pod_available.notify_waiters();
        }
        self.update_gauges(&st);
    }

    /// Retries pods that no event moved for `pod_max_in_unschedulable_pods_duration`.
    pub fn flush_unschedulable_leftover(&self) {
        let mut st = self.state.lock();
        let now = self.now();
        let max = self.options.pod_max_in_unschedulable_pods_duration;
        let stale = |q: &QueuedPodInfo| now.saturating_duration_since(q.timestamp) > max;
        // The timeout is an event only when it moves someone: recorded for in-flight pods
        // every 30 seconds, it would send each failing pod to backoffQ.
        if !st.unschedulable.values().any(stale) {
            return;
        }
        self.move_pods(&mut st, stale, events::UNSCHEDULABLE_TIMEOUT, None, None);
    }

    fn next_backoff_expiry(&self) -> Option<Instant> {
        self.state.lock().backoff.next_expiry()
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Starts the flushers: backoffQ at each backoff's end (at least every second), and
    /// leftover unschedulable pods every 30 seconds. They stop with `shutdown` or `close`.
    pub fn run(self: &Arc<Self>, shutdown: CancellationToken) {
        let q = self.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let changed = q.backoff_changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if q.is_closed() {
                    return;
                }
                let wait = q
                    .next_backoff_expiry()
                    .map_or(BACKOFF_FLUSH_PERIOD, |e| {
                        e.saturating_duration_since(Instant::now())
                    })
                    .clamp(Duration::from_millis(1), BACKOFF_FLUSH_PERIOD);
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                    _ = &mut changed => {}
                }
                q.flush_backoff_completed();
            }
        });
        let q = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UNSCHEDULABLE_FLUSH_PERIOD);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if q.is_closed() {
                    return;
                }
                q.flush_unschedulable_leftover();
            }
        });
    }

    /// Ends `pop` waits (they answer `None`) and the flushers.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.pod_available.notify_waiters();
        self.backoff_changed.notify_waiters();
    }

    /// Every pending pod, and upstream's summary of where they are.
    pub fn pending_pods(&self) -> (Vec<Arc<Pod>>, String) {
        let st = self.state.lock();
        let mut pods: Vec<Arc<Pod>> = st.active.iter().map(|q| q.pod_info.pod.clone()).collect();
        pods.extend(st.backoff.iter().map(|q| q.pod_info.pod.clone()));
        pods.extend(st.unschedulable.values().map(|q| q.pod_info.pod.clone()));
        let summary = format!(
            "activeQ:{}; backoffQ:{}; unschedulablePods:{}",
            st.active.len(),
            st.backoff.len(),
            st.unschedulable.len()
        );
        (pods, summary)
    }

    /// Which sub-queue holds the pod (by uid), if any.
    pub fn sub_queue_of(&self, uid: &str) -> Option<SubQueue> {
        let st = self.state.lock();
        if st.active.contains(uid) {
            Some(SubQueue::Active)
        } else if st.backoff.contains(uid) {
            Some(SubQueue::Backoff)
        } else if st.unschedulable.contains_key(uid) {
            Some(SubQueue::Unschedulable)
        } else {
            None
        }
    }

    /// The queued copy of a pod (by uid), wherever it waits.
    pub fn get(&self, uid: &str) -> Option<QueuedPodInfo> {
        let st = self.state.lock();
        st.active
            .get(uid)
            .or_else(|| st.backoff.get(uid))
            .or_else(|| st.unschedulable.get(uid))
            .cloned()
    }

    /// Pods being scheduled (popped, not yet done or returned).
    pub fn in_flight_pods(&self) -> usize {
        self.state.lock().in_flight.pods()
    }

    /// Events kept for in-flight pods.
    pub fn in_flight_events(&self) -> usize {
        self.state.lock().in_flight.events()
    }

    /// The node the queue holds the pod nominated to.
    pub fn nominated_node_name(&self, pod: &Pod) -> Option<String> {
        self.nominator.read().node_of(pod).map(str::to_string)
    }
}

/// Whether an assigned pod may help this unschedulable one: it was rejected by
/// PodTopologySpread in the same namespace, or a required affinity term of it selects the pod.
/// A term with a namespace selector counts when its label selector matches, as namespaces'
/// labels are not at hand here (the plugin's hint decides).
fn may_help_cross_topology(q: &QueuedPodInfo, pod: &PodInfo) -> bool {
    let pi = &q.pod_info;
    (q.unschedulable_plugins.contains(pod_topology_spread::NAME)
        && pi.namespace() == pod.namespace())
        || pi.required_affinity_terms.iter().any(|t| {
            t.matches(pod, None)
                || (t.namespace_selector.is_some() && t.selector.matches(pod.labels()))
        })
}

impl PodNominator for SchedulingQueue {
    fn has_nominated_pods(&self) -> bool {
        !self.nominator.read().is_empty()
    }

    fn nominated_pods_for_node(&self, node_name: &str) -> Vec<Arc<PodInfo>> {
        self.nominator.read().pods_for_node(node_name)
    }

    fn add_nominated_pod(&self, pod: &Arc<PodInfo>, node_name: &str) {
        let node = (!node_name.is_empty()).then_some(node_name);
        self.nominator.write().add(pod, node);
    }

    fn delete_nominated_pod(&self, pod: &PodInfo) {
        self.nominator.write().delete(&pod.pod);
    }
}
