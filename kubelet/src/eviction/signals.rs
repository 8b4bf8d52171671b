//! Eviction signals, their observations and the thresholds met, and the node conditions they
//! raise (held for the pressure transition period), as upstream's eviction helpers.

use crate::app::config::{EvictionThreshold, ThresholdValue};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The signals upstream's eviction manager knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    MemoryAvailable,
    AllocatableMemoryAvailable,
    NodeFsAvailable,
    NodeFsInodesFree,
    ImageFsAvailable,
    ImageFsInodesFree,
    ContainerFsAvailable,
    ContainerFsInodesFree,
    PidAvailable,
}

const NAMES: &[(Signal, &str)] = &[
    (Signal::MemoryAvailable, "memory.available"),
    (
        Signal::AllocatableMemoryAvailable,
        "allocatableMemory.available",
    ),
    (Signal::NodeFsAvailable, "nodefs.available"),
    (Signal::NodeFsInodesFree, "nodefs.inodesFree"),
    (Signal::ImageFsAvailable, "imagefs.available"),
    (Signal::ImageFsInodesFree, "imagefs.inodesFree"),
    (Signal::ContainerFsAvailable, "containerfs.available"),
    (Signal::ContainerFsInodesFree, "containerfs.inodesFree"),
    (Signal::PidAvailable, "pid.available"),
];

/// The node condition a crossed signal raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    MemoryPressure,
    DiskPressure,
    PidPressure,
}

impl Condition {
    /// The condition's type in the Node's status.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::MemoryPressure => "MemoryPressure",
            Condition::DiskPressure => "DiskPressure",
            Condition::PidPressure => "PIDPressure",
        }
    }
}

/// What evicting a pod gives back for a signal (upstream's `signalToResource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Memory,
    EphemeralStorage,
    Inodes,
    Pids,
}

impl Resource {
    /// The name in messages (`The node was low on resource: memory.`).
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::EphemeralStorage => "ephemeral-storage",
            Resource::Inodes => "inodes",
            Resource::Pids => "pids",
        }
    }
}

impl Signal {
    pub fn parse(name: &str) -> Option<Signal> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }

    pub fn as_str(self) -> &'static str {
        NAMES
            .iter()
            .find(|(s, _)| *s == self)
            .map(|(_, n)| *n)
            .unwrap_or("unknown")
    }

    pub fn condition(self) -> Condition {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => {
                Condition::MemoryPressure
            }
            Signal::PidAvailable => Condition::PidPressure,
            _ => Condition::DiskPressure,
        }
    }

    pub fn resource(self) -> Resource {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => Resource::Memory,
            Signal::NodeFsAvailable | Signal::ImageFsAvailable | Signal::ContainerFsAvailable => {
                Resource::EphemeralStorage
            }
            Signal::NodeFsInodesFree
            | Signal::ImageFsInodesFree
            | Signal::ContainerFsInodesFree => Resource::Inodes,
            Signal::PidAvailable => Resource::Pids,
        }
    }

    /// Memory first, then pids (nothing node-level reclaims them), then disk: the order in
    /// which crossed thresholds are acted on (upstream's `byEvictionPriority`).
    fn priority(self) -> u8 {
        match self.resource() {
            Resource::Memory => 0,
            Resource::Pids => 1,
            _ => 2,
        }
    }
}

/// What was measured for a signal: the amount available and what it is a part of (bytes,
/// inodes, pids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    pub available: i128,
    pub capacity: i128,
}

pub type Observations = BTreeMap<Signal, Observation>;

/// A threshold: the signal is crossed while `available < value`. A soft one acts only once
/// crossed for its grace period; once acted on, a threshold stays met until `min_reclaim`
/// more than its value is available.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub signal: Signal,
    pub value: ThresholdValue,
    /// None for hard thresholds.
    pub grace_period: Option<Duration>,
    pub min_reclaim: Option<ThresholdValue>,
}

impl Threshold {
    /// The hard thresholds the manager knows (validation already refused the others); as
    /// upstream, `0%` and `100%` disable a threshold.
    pub fn from_config(config: &[EvictionThreshold]) -> Vec<Threshold> {
        config
            .iter()
            .filter(|t| !disabled(&t.value))
            .filter_map(|t| {
                Some(Threshold {
                    signal: Signal::parse(&t.signal)?,
                    value: t.value.clone(),
                    grace_period: None,
                    min_reclaim: None,
                })
            })
            .collect()
    }

    pub fn is_hard(&self) -> bool {
        self.grace_period.is_none()
    }

    /// The threshold as an amount of the observed capacity.
    pub fn quantity(&self, capacity: i128) -> i128 {
        self.value.amount(capacity)
    }

    /// Whether `o` crosses it; with `with_min_reclaim`, whether it is not yet resolved.
    fn crossed(&self, o: &Observation, with_min_reclaim: bool) -> bool {
        let mut quantity = self.quantity(o.capacity);
        if with_min_reclaim && let Some(m) = &self.min_reclaim {
            quantity += m.amount(o.capacity);
        }
        o.available < quantity
    }
}

/// `0%`, `100%` and zero amounts switch a threshold off.
pub fn disabled(value: &ThresholdValue) -> bool {
    match value {
        ThresholdValue::Percentage(p) => *p <= 0.0 || *p >= 1.0,
        ThresholdValue::Quantity(q) => q.is_zero(),
    }
}

/// The thresholds whose signal was observed below them (plus their minimum reclaim with
/// `with_min_reclaim`), memory's first.
pub fn thresholds_met(
    thresholds: &[Threshold],
    observations: &Observations,
    with_min_reclaim: bool,
) -> Vec<Threshold> {
    let mut met: Vec<Threshold> = thresholds
        .iter()
        .filter(|t| {
            observations
                .get(&t.signal)
                .is_some_and(|o| t.crossed(o, with_min_reclaim))
        })
        .cloned()
        .collect();
    met.sort_by_key(|t| t.signal.priority());
    met
}

/// `a` and those of `b` not in it.
pub fn merge(a: Vec<Threshold>, b: Vec<Threshold>) -> Vec<Threshold> {
    let mut out = a;
    for t in b {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out.sort_by_key(|t| t.signal.priority());
    out
}

/// When each threshold met was first observed, for soft grace periods.
#[derive(Debug, Default)]
pub struct FirstObserved(Vec<(Threshold, Instant)>);

impl FirstObserved {
    /// Records `met` at `now` (keeping earlier times, forgetting thresholds no longer met);
    /// returns those that may act: hard ones and soft ones met for their grace period.
    pub fn update(&mut self, met: &[Threshold], now: Instant) -> Vec<Threshold> {
        self.0.retain(|(t, _)| met.contains(t));
        for t in met {
            if !self.0.iter().any(|(seen, _)| seen == t) {
                self.0.push((t.clone(), now));
            }
        }
        self.0
            .iter()
            .filter(|(t, at)| t.grace_period.is_none_or(|g| now.duration_since(*at) >= g))
            .map(|(t, _)| t.clone())
            .collect()
    }
}

/// The conditions raised by the thresholds met.
pub fn conditions_of(met: &[Threshold]) -> BTreeSet<Condition> {
    met.iter().map(|t| t.signal.condition()).collect()
}

/// Holds each condition for the transition period after it was last observed, so a node at
/// the edge of a threshold does not flap.
#[derive(Debug, Default)]
pub struct ConditionTracker {
    last_observed: BTreeMap<Condition, Instant>,
}

impl ConditionTracker {
    /// Records the conditions observed `now`; returns those still in force.
    pub fn update(
        &mut self,
        observed: &BTreeSet<Condition>,
        now: Instant,
        period: Duration,
    ) -> BTreeSet<Condition> {
        for c in observed {
            self.last_observed.insert(*c, now);
        }
        self.last_observed
            .retain(|c, at| observed.contains(c) || now.duration_since(*at) < period);
        self.last_observed.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests;
