//! The decisions of image GC, as upstream's `realImageGCManager`: which images the kubelet
//! has seen and when they were last used, how much to free, and in which order.

use crate::kuberuntime::RuntimeImage;
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

/// `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`,
/// `imageMaximumGCAge` of the KubeletConfiguration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageGcPolicy {
    pub high_threshold_percent: i32,
    pub low_threshold_percent: i32,
    pub min_age: Duration,
    /// Zero: images are never removed for their age alone.
    pub max_age: Duration,
}

impl ImageGcPolicy {
    pub fn from_config(k: &crate::app::config::KubeletConfiguration) -> Self {
        Self {
            high_threshold_percent: k.image_gc_high_threshold_percent,
            low_threshold_percent: k.image_gc_low_threshold_percent,
            min_age: k.image_minimum_gc_age,
            max_age: k.image_maximum_gc_age,
        }
    }

    /// Upstream's `NewImageGCManager` checks.
    pub fn validate(&self) -> anyhow::Result<()> {
        let (high, low) = (self.high_threshold_percent, self.low_threshold_percent);
        if !(0..=100).contains(&high) {
            anyhow::bail!("invalid HighThresholdPercent {high}, must be in range [0-100]");
        }
        if !(0..=100).contains(&low) {
            anyhow::bail!("invalid LowThresholdPercent {low}, must be in range [0-100]");
        }
        if low > high {
            anyhow::bail!(
                "LowThresholdPercent {low} can not be higher than HighThresholdPercent {high}"
            );
        }
        if !self.max_age.is_zero() && self.max_age < self.min_age {
            anyhow::bail!(
                "imageMaximumGCAge {:?} must be greater than imageMinimumGCAge {:?}",
                self.max_age,
                self.min_age
            );
        }
        Ok(())
    }

    /// Upstream skips image GC entirely at 100% with no maximum age.
    pub fn disabled(&self) -> bool {
        self.high_threshold_percent >= 100 && self.max_age.is_zero()
    }

    /// Bytes to free to get from the current use down to the low threshold, None while the
    /// use is under the high threshold.
    pub fn bytes_to_free(&self, capacity: u64, available: u64) -> Option<u64> {
        if capacity == 0 {
            return None;
        }
        let usage = 100 - (available.min(capacity) as u128 * 100 / capacity as u128) as i32;
        if usage < self.high_threshold_percent {
            return None;
        }
        let target_available =
            capacity as u128 * (100 - self.low_threshold_percent.clamp(0, 100)) as u128 / 100;
        Some(target_available.saturating_sub(available as u128) as u64)
    }
}

/// What the kubelet remembers of one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecord {
    pub first_detected: SystemTime,
    /// The last detection that found a container using it; None: never seen used.
    pub last_used: Option<SystemTime>,
    pub size: u64,
    /// Never removed: CRI-pinned, or the sandbox image.
    pub protected: bool,
}

/// Brings the records up to date with what the runtime has: new images are first detected
/// `now`, images in use (by any container, or named in `protected`) are used `now`, gone
/// images are forgotten. Returns the ids of the images in use.
pub fn detect(
    records: &mut BTreeMap<String, ImageRecord>,
    images: &[RuntimeImage],
    in_use: &HashSet<String>,
    protected: &[String],
    now: SystemTime,
) -> HashSet<String> {
    let mut used_ids = HashSet::new();
    let present: HashSet<&str> = images.iter().map(|i| i.id.as_str()).collect();
    records.retain(|id, _| present.contains(id.as_str()));
    for image in images {
        let record = records.entry(image.id.clone()).or_insert(ImageRecord {
            first_detected: now,
            last_used: None,
            size: image.size,
            protected: false,
        });
        record.size = image.size;
        record.protected = image.pinned || protected.iter().any(|p| image.is_named(p));
        if in_use.iter().any(|name| image.is_named(name)) {
            record.last_used = Some(now);
            used_ids.insert(image.id.clone());
        }
    }
    used_ids
}

/// Unused, unprotected images, least recently used first (never used before used, then the
/// earliest detected).
pub fn eviction_order<'a>(
    records: &'a BTreeMap<String, ImageRecord>,
    in_use: &HashSet<String>,
) -> Vec<(&'a str, &'a ImageRecord)> {
    let mut order: Vec<(&str, &ImageRecord)> = records
        .iter()
        .filter(|(id, r)| !r.protected && !in_use.contains(*id))
        .map(|(id, r)| (id.as_str(), r))
        .collect();
    order.sort_by_key(|(id, r)| (r.last_used, r.first_detected, *id));
    order
}

/// Images to remove to free `bytes`, oldest first, skipping those detected less than
/// `min_age` ago; with the bytes they hold.
pub fn select_to_free(
    order: &[(&str, &ImageRecord)],
    now: SystemTime,
    min_age: Duration,
    bytes: u64,
) -> (Vec<String>, u64) {
    let mut chosen = Vec::new();
    let mut freed = 0u64;
    for (id, record) in order {
        if freed >= bytes {
            break;
        }
        if record.last_used.is_some_and(|t| t >= now) {
            continue;
        }
        if now
            .duration_since(record.first_detected)
            .unwrap_or_default()
            < min_age
        {
            continue;
        }
        chosen.push(id.to_string());
        freed = freed.saturating_add(record.size);
    }
    (chosen, freed)
}

/// Images unused for longer than `max_age` (zero: none). An image never seen used counts from
/// its first detection.
pub fn select_too_old(
    order: &[(&str, &ImageRecord)],
    now: SystemTime,
    max_age: Duration,
) -> Vec<String> {
    if max_age.is_zero() {
        return Vec::new();
    }
    order
        .iter()
        .filter(|(_, r)| {
            let since = r.last_used.unwrap_or(r.first_detected);
            now.duration_since(since).unwrap_or_default() > max_age
        })
        .map(|(id, _)| id.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn image(id: &str, tag: &str, size: u64, pinned: bool) -> RuntimeImage {
        RuntimeImage {
            id: id.into(),
            repo_tags: vec![tag.into()],
            size,
            pinned,
            ..Default::default()
        }
    }

    fn policy(high: i32, low: i32) -> ImageGcPolicy {
        ImageGcPolicy {
            high_threshold_percent: high,
            low_threshold_percent: low,
            min_age: Duration::ZERO,
            max_age: Duration::ZERO,
        }
    }

    #[test]
    fn policies_are_validated_as_upstream() {
        let cases = [
            (policy(85, 80), true),
            (policy(101, 80), false),
            (policy(85, -1), false),
            (policy(50, 60), false),
            (policy(100, 100), true),
        ];
        for (p, ok) in cases {
            assert_eq!(p.validate().is_ok(), ok, "{p:?}");
        }
        let mut p = policy(85, 80);
        (p.min_age, p.max_age) = (Duration::from_secs(60), Duration::from_secs(30));
        assert!(p.validate().is_err());
        assert!(policy(100, 80).disabled());
        assert!(!policy(85, 80).disabled());
    }

    #[test]
    fn bytes_to_free_follow_the_thresholds() {
        // (high, low, capacity, available, want)
        let cases = [
            (85, 80, 1000, 500, None),
            (85, 80, 1000, 150, Some(50)),
            (50, 40, 1000, 300, Some(300)),
            (50, 40, 1000, 500, Some(100)),
            (0, 0, 1000, 1000, Some(0)),
            (85, 80, 0, 0, None),
        ];
        for (high, low, cap, avail, want) in cases {
            assert_eq!(
                policy(high, low).bytes_to_free(cap, avail),
                want,
                "{high} {low} {cap} {avail}"
            );
        }
    }

    #[test]
    fn detection_tracks_first_seen_last_used_and_protection() {
        let mut records = BTreeMap::new();
        let images = [
            image("a", "x/a:1", 10, false),
            image("p", "x/pause:1", 1, false),
            image("q", "x/pinned:1", 1, true),
        ];
        let used = HashSet::from(["x/a:1".to_string()]);
        let in_use = detect(&mut records, &images, &used, &["x/pause:1".into()], at(10));
        assert_eq!(in_use, HashSet::from(["a".to_string()]));
        assert_eq!(records["a"].last_used, Some(at(10)));
        assert!(records["p"].protected && records["q"].protected);
        assert!(!records["a"].protected);

        // Later: a is no longer used and keeps its times; a new image appears; q is gone.
        let images = [
            image("a", "x/a:1", 10, false),
            image("b", "x/b:1", 5, false),
        ];
        detect(&mut records, &images, &HashSet::new(), &[], at(20));
        assert_eq!(records["a"].first_detected, at(10));
        assert_eq!(records["a"].last_used, Some(at(10)));
        assert_eq!(records["b"].first_detected, at(20));
        assert_eq!(records["b"].last_used, None);
        assert!(!records.contains_key("q"));
    }

    #[test]
    fn eviction_takes_the_least_recently_used_old_enough_images() {
        let rec = |first, used: Option<u64>, size, protected| ImageRecord {
            first_detected: at(first),
            last_used: used.map(at),
            size,
            protected,
        };
        let records = BTreeMap::from([
            ("used-recently".to_string(), rec(0, Some(90), 100, false)),
            ("used-long-ago".to_string(), rec(0, Some(10), 100, false)),
            ("never-used".to_string(), rec(5, None, 100, false)),
            ("young".to_string(), rec(95, None, 100, false)),
            ("pinned".to_string(), rec(0, None, 100, true)),
            ("in-use".to_string(), rec(0, Some(100), 100, false)),
        ]);
        let in_use = HashSet::from(["in-use".to_string()]);
        let order = eviction_order(&records, &in_use);
        let ids: Vec<&str> = order.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            ids,
            ["never-used", "young", "used-long-ago", "used-recently"]
        );
        let min_age = Duration::from_secs(30);
        // (bytes, want)
        let cases: [(u64, &[&str]); 4] = [
            (0, &[]),
            (1, &["never-used"]),
            (150, &["never-used", "used-long-ago"]),
            (u64::MAX, &["never-used", "used-long-ago", "used-recently"]),
        ];
        for (bytes, want) in cases {
            let (chosen, freed) = select_to_free(&order, at(100), min_age, bytes);
            assert_eq!(chosen, want, "{bytes}");
            assert_eq!(freed, 100 * want.len() as u64);
        }
        let old = select_too_old(&order, at(100), Duration::from_secs(50));
        assert_eq!(old, ["never-used", "used-long-ago"]);
        assert!(select_too_old(&order, at(100), Duration::ZERO).is_empty());
    }
}
