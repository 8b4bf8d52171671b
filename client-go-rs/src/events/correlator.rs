//! client-go's `EventCorrelator`: aggregate similar events, deduplicate repeats into a
//! count, and rate-limit each object's events.

use std::collections::HashSet;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::time::Instant;

use super::cache::{BoundedMap, MAX_CACHE_ENTRIES};
use super::event::{RecordedEvent, event_name};

/// Prefix of the message of an event standing for many similar ones.
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// The correlator's limits; the defaults are client-go's.
#[derive(Debug, Clone)]
pub struct CorrelatorOptions {
    /// Events differing only in message, seen this many times within `max_interval`, are
    /// combined into one (10).
    pub max_similar_events: usize,
    /// The window for `max_similar_events` (10 minutes).
    pub max_interval: Duration,
    /// Events an object may emit at once (25).
    pub spam_burst: u32,
    /// How often an object earns another event (one per 5 minutes).
    pub spam_refill_every: Duration,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        Self {
            max_similar_events: 10,
            max_interval: Duration::from_secs(600),
            spam_burst: 25,
            spam_refill_every: Duration::from_secs(300),
        }
    }
}

/// What to do with an event after correlation.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// A new event: create it.
    Create(RecordedEvent),
    /// A repeat of an event already written: update its count.
    Update(RecordedEvent),
    /// Dropped by the spam filter.
    Skip,
}

/// The fields that decide whether two events are "similar" (all but the message).
#[derive(Clone, PartialEq, Eq, Hash)]
struct AggregateKey {
    object: ObjectKey,
    type_: &'static str,
    reason: String,
    action: String,
    reporting_controller: String,
    reporting_instance: String,
}

/// Identifies the regarding object (and who reports on it) for the spam filter.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ObjectKey {
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    api_version: Option<String>,
    reporting_controller: String,
}

/// A repeat is the same similar-key and the same message (or the combined event itself).
#[derive(Clone, PartialEq, Eq, Hash)]
struct DedupKey {
    aggregate: AggregateKey,
    note: Option<String>,
    related: Option<ObjectKey>,
}

struct AggregateRecord {
    messages: HashSet<String>,
    last_seen: Instant,
}

struct Observed {
    count: i32,
    first_timestamp: Timestamp,
    name: String,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Correlates events of one broadcaster.
pub struct EventCorrelator {
    options: CorrelatorOptions,
    aggregates: BoundedMap<AggregateKey, AggregateRecord>,
    observed: BoundedMap<DedupKey, Observed>,
    spam: BoundedMap<ObjectKey, Bucket>,
}

fn object_key(r: &ObjectReference, reporting_controller: &str) -> ObjectKey {
    ObjectKey {
        kind: r.kind.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        uid: r.uid.clone(),
        api_version: r.api_version.clone(),
        reporting_controller: reporting_controller.to_owned(),
    }
}

impl EventCorrelator {
    /// A correlator with `options`.
    pub fn new(options: CorrelatorOptions) -> Self {
        Self {
            options,
            aggregates: BoundedMap::new(MAX_CACHE_ENTRIES),
            observed: BoundedMap::new(MAX_CACHE_ENTRIES),
            spam: BoundedMap::new(MAX_CACHE_ENTRIES),
        }
    }

    /// Aggregates, deduplicates, then filters `event` (in client-go's order: a dropped
    /// repeat still counts, so the next written update carries it).
    pub fn correlate(&mut self, event: RecordedEvent) -> Correlated {
        let now = Instant::now();
        let object = object_key(&event.regarding, &event.reporting_controller);
        let aggregate = AggregateKey {
            object: object.clone(),
            type_: event.type_.as_str(),
            reason: event.reason.clone(),
            action: event.action.clone(),
            reporting_controller: event.reporting_controller.clone(),
            reporting_instance: event.reporting_instance.clone(),
        };
        let (event, dedup) = self.aggregate(event, aggregate, now);
        let result = self.observe(event, dedup);
        if self.spam_filtered(object, now) {
            return Correlated::Skip;
        }
        result
    }

    fn aggregate(
        &mut self,
        mut event: RecordedEvent,
        key: AggregateKey,
        now: Instant,
    ) -> (RecordedEvent, DedupKey) {
        let window = self.options.max_interval;
        let record = self
            .aggregates
            .get_or_insert_with(key.clone(), || AggregateRecord {
                messages: HashSet::new(),
                last_seen: now,
            });
        if now.saturating_duration_since(record.last_seen) > window {
            record.messages.clear();
        }
        record.messages.insert(event.note.clone());
        record.last_seen = now;
        let related = event
            .related
            .as_ref()
            .map(|r| object_key(r, &event.reporting_controller));
        if record.messages.len() < self.options.max_similar_events {
            let dedup = DedupKey {
                aggregate: key,
                note: Some(event.note.clone()),
                related,
            };
            return (event, dedup);
        }
        // Keep the set bounded; it only has to stay at the threshold.
        if let Some(any) = record.messages.iter().next().cloned() {
            record.messages.remove(&any);
        }
        event.note = format!("{COMBINED_PREFIX}{}", event.note);
        let dedup = DedupKey {
            aggregate: key,
            note: None,
            related,
        };
        (event, dedup)
    }

    fn observe(&mut self, mut event: RecordedEvent, key: DedupKey) -> Correlated {
        if let Some(seen) = self.observed.get(&key) {
            event.count = seen.count.saturating_add(1);
            event.first_timestamp = seen.first_timestamp;
            event.name = seen.name.clone();
        } else {
            event.count = 1;
            event.name = event_name(&event.regarding, event.first_timestamp);
        }
        let entry = self.observed.get_or_insert_with(key, || Observed {
            count: 0,
            first_timestamp: event.first_timestamp,
            name: event.name.clone(),
        });
        entry.count = event.count;
        if event.count > 1 {
            Correlated::Update(event)
        } else {
            Correlated::Create(event)
        }
    }

    fn spam_filtered(&mut self, key: ObjectKey, now: Instant) -> bool {
        let burst = f64::from(self.options.spam_burst);
        let per_token = self.options.spam_refill_every.as_secs_f64();
        let bucket = self.spam.get_or_insert_with(key, || Bucket {
            tokens: burst,
            last: now,
        });
        if per_token > 0.0 {
            let earned = now.saturating_duration_since(bucket.last).as_secs_f64() / per_token;
            bucket.tokens = (bucket.tokens + earned).min(burst);
        } else {
            bucket.tokens = burst;
        }
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            false
        } else {
            true
        }
    }
}
