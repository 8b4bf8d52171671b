//! The knobs of a cacher, with upstream's values as defaults.

use std::time::Duration;

/// How a [`super::Cacher`] sizes its history and paces itself.
#[derive(Debug, Clone)]
pub struct CacherConfig {
    /// How many recent changes are kept for watches resuming from a past revision. Upstream
    /// sizes its ring between 100 and 102400 and keeps at least 75 s of history; a fixed
    /// capacity is simpler and bounds memory. An older position gets `Compacted` (410).
    pub history_capacity: usize,
    /// How often every watcher that asked for bookmarks gets one (upstream: 1 minute).
    pub bookmark_period: Duration,
    /// How often watchers whose filter dropped changes get a bookmark at the cache revision, so
    /// that they can resume close to the head (at most one per watcher per period).
    pub progress_bookmark_period: Duration,
    /// How long consistent reads and watches from a future revision wait for the cache to
    /// catch up (upstream: 3 s).
    pub freshness_timeout: Duration,
    /// Events queued per watcher before it counts as slow (and again in its client channel).
    pub watcher_buffer: usize,
    /// How long the dispatcher waits for a slow watcher's queue to make room before dropping
    /// it. Slow watchers are waited for concurrently, after every other watcher got the event.
    pub slow_watcher_grace: Duration,
    /// First and last delay between attempts to re-watch or re-list the backend.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for CacherConfig {
    fn default() -> Self {
        CacherConfig {
            history_capacity: 1000,
            bookmark_period: Duration::from_secs(60),
            progress_bookmark_period: Duration::from_secs(5),
            freshness_timeout: Duration::from_secs(3),
            watcher_buffer: 100,
            slow_watcher_grace: Duration::from_millis(100),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
        }
    }
}
