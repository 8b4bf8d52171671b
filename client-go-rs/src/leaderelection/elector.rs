//! The election loop: acquire, renew, step down, release.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use super::lock::LeaseLock;
use super::record::LeaderElectionRecord;

type StartedFn = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>;
type StoppedFn = Box<dyn FnOnce() + Send>;
type NewLeaderFn = Box<dyn Fn(&str) + Send + Sync>;

/// What to do when leadership changes.
pub struct LeaderCallbacks {
    on_started_leading: StartedFn,
    on_stopped_leading: Option<StoppedFn>,
    on_new_leader: Option<NewLeaderFn>,
}

impl LeaderCallbacks {
    /// `on_started_leading` is spawned as a task when this candidate becomes leader; its
    /// token is cancelled when leadership is lost or the election is cancelled, and the work
    /// must stop then.
    pub fn new<F, Fut>(on_started_leading: F) -> Self
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self {
            on_started_leading: Box::new(move |token| Box::pin(on_started_leading(token))),
            on_stopped_leading: None,
            on_new_leader: None,
        }
    }

    /// Called once when [`LeaderElector::run`] ends (as client-go, even if this candidate
    /// never led).
    pub fn on_stopped_leading(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_stopped_leading = Some(Box::new(f));
        self
    }

    /// Called with the holder's identity whenever a different holder is observed (this
    /// candidate included). It runs on the election task: it must return quickly.
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Box::new(f));
        self
    }
}

/// A read-only view of an election, usable while [`LeaderElector::run`] owns the elector.
#[derive(Clone)]
pub struct LeaderStatus {
    observed: Arc<Mutex<Observed>>,
    identity: String,
}

impl LeaderStatus {
    /// Whether this candidate holds the lock, as last observed.
    pub fn is_leader(&self) -> bool {
        self.observed.lock().record.holder_identity == self.identity
    }

    /// The last observed holder, if any.
    pub fn leader(&self) -> Option<String> {
        Some(self.observed.lock().record.holder_identity.clone()).filter(|h| !h.is_empty())
    }
}

struct Observed {
    record: LeaderElectionRecord,
    /// The lease as last read or written: its resourceVersion guards the next update.
    lease: Option<Lease>,
    /// When (on our own clock) the record last changed: expiry is judged from this, never
    /// from the timestamps in the record, so clock skew between candidates does not matter.
    time: Instant,
    reported_leader: String,
}

/// One candidate in a leader election on a `Lease` (client-go's `LeaderElector`).
pub struct LeaderElector {
    core: Core,
    on_started_leading: StartedFn,
    on_stopped_leading: Option<StoppedFn>,
}

/// The shareable part of the elector that the election loop borrows across awaits.
struct Core {
    config: LeaderElectionConfig,
    lock: Arc<dyn LeaseLock>,
    on_new_leader: Option<NewLeaderFn>,
    observed: Arc<Mutex<Observed>>,
}

impl LeaderElector {
    /// A candidate; fails if `config` breaks client-go's rules.
    pub fn new(
        config: LeaderElectionConfig,
        lock: Arc<dyn LeaseLock>,
        callbacks: LeaderCallbacks,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            core: Core {
                config,
                lock,
                on_new_leader: callbacks.on_new_leader,
                observed: Arc::new(Mutex::new(Observed {
                    record: LeaderElectionRecord::default(),
                    lease: None,
                    time: Instant::now(),
                    reported_leader: String::new(),
                })),
            },
            on_started_leading: callbacks.on_started_leading,
            on_stopped_leading: callbacks.on_stopped_leading,
        })
    }

    /// A view of this election's state.
    pub fn status(&self) -> LeaderStatus {
        LeaderStatus {
            observed: Arc::clone(&self.core.observed),
            identity: self.core.config.identity.clone(),
        }
    }

    /// Competes until this candidate leads, then renews until leadership is lost or `cancel`
    /// fires; releases the lock if configured, calls `on_stopped_leading` and returns.
    pub async fn run(self, cancel: CancellationToken) {
        let Self {
            core,
            on_started_leading,
            on_stopped_leading,
        } = self;
        if core.acquire(&cancel).await {
            let leading = cancel.child_token();
            tokio::spawn(on_started_leading(leading.clone()));
            core.renew(&leading).await;
            leading.cancel();
            if core.config.release_on_cancel {
                core.release().await;
            }
        }
        if let Some(stopped) = on_stopped_leading {
            stopped();
        }
    }
}

impl Core {
    fn is_leader(&self) -> bool {
        self.observed.lock().record.holder_identity == self.config.identity
    }

    /// Retries every retry period (with jitter) until the lock is ours or `cancel` fires.
    async fn acquire(&self, cancel: &CancellationToken) -> bool {
        tracing::info!(lock = %self.lock.describe(), identity = %self.config.identity,
            "attempting to acquire leader lease");
        loop {
            if cancel.is_cancelled() {
                return false;
            }
            let acquired = tokio::select! {
                _ = cancel.cancelled() => return false,
                ok = self.try_acquire_or_renew() => ok,
            };
            self.maybe_report_transition();
            if acquired {
                tracing::info!(lock = %self.lock.describe(), "successfully acquired lease");
                return true;
            }
            let jitter = rand::random::<f64>() * JITTER_FACTOR;
            let wait = self.config.retry_period.mul_f64(1.0 + jitter);
            tokio::select! {
                _ = cancel.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every retry period; returns once a renewal has failed for the whole renew
    /// deadline, or `leading` is cancelled.
    async fn renew(&self, leading: &CancellationToken) {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            let renewed = loop {
                let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew());
                let ok = tokio::select! {
                    _ = leading.cancelled() => break false,
                    r = attempt => r.unwrap_or(false),
                };
                self.maybe_report_transition();
                if ok {
                    break true;
                }
                tokio::select! {
                    _ = leading.cancelled() => break false,
                    _ = tokio::time::sleep_until(deadline) => break false,
                    _ = tokio::time::sleep(self.config.retry_period) => {}
                }
            };
            if !renewed {
                if !leading.is_cancelled() {
                    tracing::info!(lock = %self.lock.describe(), "failed to renew lease");
                }
                leading.cancel();
                return;
            }
            tokio::select! {
                _ = leading.cancelled() => return,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    /// One attempt: create the lease, renew it, or take it over if it has expired.
    async fn try_acquire_or_renew(&self) -> bool {
        let now = Timestamp::now();
        let mut desired = LeaderElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };

        let current = match self.lock.get().await {
            Ok(current) => current,
            Err(err) => {
                tracing::warn!(lock = %self.lock.describe(), error = %err,
                    "error retrieving lease");
                return false;
            }
        };
        let Some(current) = current else {
            return match self.lock.create(desired.to_spec()).await {
                Ok(lease) => {
                    self.set_observed(desired, lease);
                    true
                }
                Err(err) => {
                    tracing::warn!(lock = %self.lock.describe(), error = %err,
                        "error creating lease");
                    false
                }
            };
        };

        let old = LeaderElectionRecord::from_spec(current.spec.as_ref());
        {
            let mut obs = self.observed.lock();
            if obs.record != old {
                obs.record = old.clone();
                obs.time = Instant::now();
            }
            obs.lease = Some(current.clone());
            let expires = obs.time + Duration::from_secs(old.lease_duration_seconds.max(0) as u64);
            let held_by_other =
                !old.holder_identity.is_empty() && old.holder_identity != self.config.identity;
            if held_by_other && expires > Instant::now() {
                tracing::debug!(holder = %old.holder_identity, "lease held and not yet expired");
                return false;
            }
        }

        if old.holder_identity == self.config.identity {
            desired.acquire_time = old.acquire_time;
            desired.leader_transitions = old.leader_transitions;
        } else {
            desired.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        let mut lease = current;
        desired.apply_to(lease.spec.get_or_insert_with(Default::default));
        match self.lock.update(lease).await {
            Ok(lease) => {
                self.set_observed(desired, lease);
                true
            }
            Err(err) => {
                tracing::warn!(lock = %self.lock.describe(), error = %err,
                    "failed to update lease");
                false
            }
        }
    }

    /// Gives the lock up so another candidate can take it without waiting for expiry.
    async fn release(&self) {
        let (lease, transitions) = {
            let obs = self.observed.lock();
            (obs.lease.clone(), obs.record.leader_transitions)
        };
        if !self.is_leader() {
            return;
        }
        let Some(mut lease) = lease else {
            return;
        };
        let now = Timestamp::now();
        let record = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: transitions,
        };
        record.apply_to(lease.spec.get_or_insert_with(Default::default));
        match self.lock.update(lease).await {
            Ok(lease) => self.set_observed(record, lease),
            Err(err) => {
                tracing::warn!(lock = %self.lock.describe(), error = %err,
                    "failed to release lease");
            }
        }
    }

    fn set_observed(&self, record: LeaderElectionRecord, lease: Lease) {
        let mut obs = self.observed.lock();
        obs.record = record;
        obs.lease = Some(lease);
        obs.time = Instant::now();
    }

    fn maybe_report_transition(&self) {
        let holder = {
            let mut obs = self.observed.lock();
            if obs.record.holder_identity == obs.reported_leader
                || obs.record.holder_identity.is_empty()
            {
                return;
            }
            obs.reported_leader = obs.record.holder_identity.clone();
            obs.reported_leader.clone()
        };
        if let Some(f) = &self.on_new_leader {
            f(&holder);
        }
    }
}
