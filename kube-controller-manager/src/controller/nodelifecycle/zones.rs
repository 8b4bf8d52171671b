//! Zones and the rate at which their unhealthy nodes get NoExecute taints: a zone with many
//! unhealthy nodes is more likely cut off from us than really broken, so evictions slow down
//! or stop there (upstream's zone states and rate-limited taint queues).

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Initial,
    Normal,
    FullDisruption,
    PartialDisruption,
}

/// What the zone states say about the whole cluster compared to the previous pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disruption {
    /// Some zone is healthy: per-zone rates apply.
    Normal,
    /// Every zone just became fully disrupted: the controller is probably the one cut off,
    /// so evictions stop and NoExecute taints are lifted.
    Entering,
    /// Still every zone fully disrupted: nothing changes.
    Ongoing,
    /// Some zone recovered after a full outage: every node gets a fresh grace period.
    Exiting,
}

/// `previous` are last pass's states of the zones that still exist (Initial for new ones).
pub fn disruption(previous: &[ZoneState], current: &[ZoneState]) -> Disruption {
    let all = |states: &[ZoneState]| states.iter().all(|s| *s == ZoneState::FullDisruption);
    match (all(previous), all(current)) {
        (true, true) => Disruption::Ongoing,
        (false, true) => Disruption::Entering,
        (true, false) if !previous.is_empty() => Disruption::Exiting,
        _ => Disruption::Normal,
    }
}

/// The zone key of a node: region and zone labels, as upstream's `GetZoneKey`.
pub fn zone_key(labels: Option<&std::collections::BTreeMap<String, String>>) -> String {
    let get = |keys: [&str; 2]| {
        labels
            .and_then(|l| keys.iter().find_map(|k| l.get(*k)))
            .cloned()
            .unwrap_or_default()
    };
    let region = get([
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    ]);
    let zone = get([
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    ]);
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    format!("{region}:\x00:{zone}")
}

/// A zone's state from its nodes' Ready statuses ("" for a node with none).
pub fn zone_state(ready_statuses: &[String], unhealthy_threshold: f32) -> (usize, ZoneState) {
    let not_ready = ready_statuses.iter().filter(|s| *s != "True").count();
    let ready = ready_statuses.len() - not_ready;
    let state = if ready == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && not_ready as f32 / ready_statuses.len() as f32 >= unhealthy_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// The tainting rate for a zone in `state` with `size` nodes.
pub fn zone_qps(
    state: ZoneState,
    size: usize,
    eviction_qps: f32,
    secondary_qps: f32,
    large_cluster_threshold: u32,
) -> f32 {
    match state {
        ZoneState::Normal | ZoneState::Initial | ZoneState::FullDisruption => eviction_qps,
        ZoneState::PartialDisruption if size > large_cluster_threshold as usize => secondary_qps,
        ZoneState::PartialDisruption => 0.0,
    }
}

/// A token bucket of burst 1 (upstream's eviction limiter burst); qps 0 never admits.
#[derive(Debug)]
pub struct Limiter {
    qps: f32,
    tokens: f64,
    last: Instant,
}

impl Limiter {
    pub fn new(qps: f32, now: Instant) -> Self {
        Self {
            qps,
            tokens: 1.0,
            last: now,
        }
    }

    pub fn set_qps(&mut self, qps: f32, now: Instant) {
        if qps != self.qps {
            self.refill(now);
            self.qps = qps;
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps as f64).min(1.0);
        self.last = now;
    }

    pub fn try_accept(&mut self, now: Instant) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Nodes waiting for a NoExecute taint in one zone. A node stays in `seen` after it was
/// tainted so it is not queued again until `remove` (it became reachable or was deleted).
#[derive(Debug)]
pub struct TaintQueue {
    pub limiter: Limiter,
    queue: VecDeque<(String, Instant)>,
    seen: HashSet<String>,
}

impl TaintQueue {
    pub fn new(qps: f32, now: Instant) -> Self {
        Self {
            limiter: Limiter::new(qps, now),
            queue: VecDeque::new(),
            seen: HashSet::new(),
        }
    }

    /// Queues `node`; false if it is already queued or was tainted.
    pub fn add(&mut self, node: &str, now: Instant) -> bool {
        if !self.seen.insert(node.to_string()) {
            return false;
        }
        self.queue.push_back((node.to_string(), now));
        true
    }

    pub fn remove(&mut self, node: &str) {
        self.seen.remove(node);
        self.queue.retain(|(n, _)| n != node);
    }

    /// The nodes due now, as long as the limiter admits them.
    pub fn pop_due(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        while let Some((_, at)) = self.queue.front() {
            if *at > now || !self.limiter.try_accept(now) {
                break;
            }
            if let Some((node, _)) = self.queue.pop_front() {
                due.push(node);
            }
        }
        due
    }

    /// Puts back a node whose tainting failed, retried after `delay`.
    pub fn retry(&mut self, node: String, now: Instant, delay: Duration) {
        if self.seen.contains(&node) {
            self.queue.push_back((node, now + delay));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn states() {
        let cases = [
            (vec!["True", "True"], ZoneState::Normal),
            (vec!["True", "Unknown"], ZoneState::Normal),
            (vec!["Unknown", "False"], ZoneState::FullDisruption),
            (
                vec!["Unknown", "", "False", "True"],
                ZoneState::PartialDisruption,
            ),
            (
                vec!["Unknown", "", "False", "True", "True", "True"],
                ZoneState::Normal,
            ),
            (vec![], ZoneState::Normal),
        ];
        for (i, (s, want)) in cases.into_iter().enumerate() {
            assert_eq!(zone_state(&statuses(&s), 0.55).1, want, "case {i}");
        }
    }

    #[test]
    fn cluster_disruption() {
        use ZoneState::{FullDisruption as Full, Initial, Normal, PartialDisruption as Partial};
        let cases: [(&[ZoneState], &[ZoneState], Disruption); 7] = [
            (&[], &[], Disruption::Ongoing),
            (&[], &[Normal], Disruption::Normal),
            (&[Initial], &[Full], Disruption::Entering),
            (&[Normal, Full], &[Full, Full], Disruption::Entering),
            (&[Full, Full], &[Full, Full], Disruption::Ongoing),
            (&[Full, Full], &[Partial, Full], Disruption::Exiting),
            (&[Normal, Full], &[Normal, Partial], Disruption::Normal),
        ];
        for (i, (previous, current, want)) in cases.iter().enumerate() {
            assert_eq!(disruption(previous, current), *want, "case {i}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(zone_qps(ZoneState::Normal, 3, 0.1, 0.01, 50), 0.1);
        assert_eq!(zone_qps(ZoneState::FullDisruption, 3, 0.1, 0.01, 50), 0.1);
        assert_eq!(
            zone_qps(ZoneState::PartialDisruption, 3, 0.1, 0.01, 50),
            0.0
        );
        assert_eq!(
            zone_qps(ZoneState::PartialDisruption, 51, 0.1, 0.01, 50),
            0.01
        );
    }

    #[test]
    fn queue_is_rate_limited_and_deduplicated() {
        let t0 = Instant::now();
        let mut q = TaintQueue::new(1.0, t0);
        assert!(q.add("a", t0));
        assert!(q.add("b", t0));
        assert!(!q.add("a", t0));
        assert_eq!(q.pop_due(t0), vec!["a".to_string()]);
        assert!(q.pop_due(t0).is_empty());
        assert_eq!(
            q.pop_due(t0 + Duration::from_secs(1)),
            vec!["b".to_string()]
        );
        // Tainted nodes are not queued again until removed.
        assert!(!q.add("a", t0));
        q.remove("a");
        assert!(q.add("a", t0));
        q.limiter.set_qps(0.0, t0 + Duration::from_secs(5));
        assert!(q.pop_due(t0 + Duration::from_secs(10)).is_empty());
    }

    #[test]
    fn zone_keys() {
        let mut labels = std::collections::BTreeMap::new();
        assert_eq!(zone_key(Some(&labels)), "");
        labels.insert("topology.kubernetes.io/zone".to_string(), "z1".to_string());
        labels.insert("topology.kubernetes.io/region".to_string(), "r".to_string());
        assert_eq!(zone_key(Some(&labels)), "r:\x00:z1");
    }
}
