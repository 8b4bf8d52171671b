//! The basic work queue: FIFO, deduplicated, and never handing one key to two workers.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::QueueMetrics;

/// A work queue with client-go's contract:
///
/// * a key waiting in the queue is stored once however often it is added ("dirty" set);
/// * a key handed out by [`Queue::get`] is "processing" until [`Queue::done`]; adding it
///   meanwhile only marks it dirty, and `done` puts it back in the queue, so no key is ever
///   processed by two workers at once and no update is lost;
/// * after [`Queue::shut_down`], adds are ignored and `get` keeps returning what is queued,
///   then `None`.
///
/// Cloning is cheap and every clone is the same queue.
pub struct Queue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for Queue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<K> {
    state: Mutex<State<K>>,
    /// Woken once per key that becomes available, and for everyone on shutdown.
    item_ready: Notify,
    /// Woken when the processing set becomes empty, for `shut_down_with_drain`.
    idle: Notify,
    /// Cancelled on shutdown, so helpers (the delaying loop) can stop with the queue.
    shutdown: CancellationToken,
    metrics: Option<QueueMetrics>,
}

struct State<K> {
    queue: VecDeque<K>,
    dirty: HashSet<K>,
    processing: HashSet<K>,
    shutting_down: bool,
    /// When each waiting key was first added, for the queue-duration metric.
    added_at: HashMap<K, Instant>,
    /// When each processing key was handed out, for the work-duration metric.
    started_at: HashMap<K, Instant>,
}

impl<K: Clone + Eq + Hash> Default for Queue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash> Queue<K> {
    /// An anonymous queue (records no metrics).
    pub fn new() -> Self {
        Self::build(None)
    }

    /// A queue whose `workqueue_*` metrics carry the label `name`.
    pub fn named(name: &str) -> Self {
        Self::build(Some(QueueMetrics::new(name)))
    }

    fn build(metrics: Option<QueueMetrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    shutting_down: false,
                    added_at: HashMap::new(),
                    started_at: HashMap::new(),
                }),
                item_ready: Notify::new(),
                idle: Notify::new(),
                shutdown: CancellationToken::new(),
                metrics,
            }),
        }
    }

    pub(crate) fn metrics(&self) -> Option<&QueueMetrics> {
        self.inner.metrics.as_ref()
    }

    /// Marks `key` as needing processing. A no-op if it is already waiting or the queue is
    /// shutting down; deferred until `done` if it is being processed.
    pub fn add(&self, key: K) {
        let mut st = self.inner.state.lock();
        if st.shutting_down || st.dirty.contains(&key) {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.adds.increment(1);
            st.added_at.entry(key.clone()).or_insert_with(Instant::now);
        }
        st.dirty.insert(key.clone());
        if st.processing.contains(&key) {
            return;
        }
        st.queue.push_back(key);
        self.update_depth(&st);
        drop(st);
        self.inner.item_ready.notify_one();
    }

    /// Waits for the next key and marks it processing; the caller must call [`Queue::done`]
    /// with it. Returns `None` once the queue is shut down and empty.
    pub async fn get(&self) -> Option<K> {
        loop {
            // Register interest before looking, so an add between the look and the wait
            // still wakes us.
            let notified = self.inner.item_ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.inner.state.lock();
                if let Some(key) = st.queue.pop_front() {
                    st.dirty.remove(&key);
                    st.processing.insert(key.clone());
                    if let Some(m) = &self.inner.metrics {
                        let now = Instant::now();
                        if let Some(t) = st.added_at.remove(&key) {
                            m.queue_duration.record(now.duration_since(t).as_secs_f64());
                        }
                        st.started_at.insert(key.clone(), now);
                    }
                    self.update_depth(&st);
                    let more = !st.queue.is_empty();
                    drop(st);
                    if more {
                        // Pass the baton: a wake-up this getter absorbed may have been meant
                        // for one of the remaining keys.
                        self.inner.item_ready.notify_one();
                    }
                    return Some(key);
                }
                if st.shutting_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks `key` as no longer processing; if it was added meanwhile it is queued again.
    pub fn done(&self, key: &K) {
        let mut st = self.inner.state.lock();
        if !st.processing.remove(key) {
            return;
        }
        if let Some(m) = &self.inner.metrics
            && let Some(t) = st.started_at.remove(key)
        {
            m.work_duration
                .record(Instant::now().duration_since(t).as_secs_f64());
        }
        if st.dirty.contains(key) {
            st.queue.push_back(key.clone());
            self.update_depth(&st);
            drop(st);
            self.inner.item_ready.notify_one();
        } else if st.processing.is_empty() {
            drop(st);
            self.inner.idle.notify_waiters();
        }
    }

    /// Number of keys waiting (not counting those being processed).
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether no key is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting keys; waiting and future `get`s drain the queue, then return `None`.
    pub fn shut_down(&self) {
        self.inner.state.lock().shutting_down = true;
        self.inner.shutdown.cancel();
        self.inner.item_ready.notify_waiters();
    }

    /// As [`Queue::shut_down`], then waits until every key handed out has been `done`.
    /// Workers must keep calling `get` and `done` for this to return.
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.inner.state.lock().processing.is_empty() {
                return;
            }
            idle.await;
        }
    }

    /// Whether [`Queue::shut_down`] has been called.
    pub fn shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }

    /// A token cancelled when the queue shuts down.
    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    fn update_depth(&self, st: &State<K>) {
        if let Some(m) = &self.inner.metrics {
            m.depth.set(st.queue.len() as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fifo_and_dedup() {
        let q = Queue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn readd_while_processing_requeues_after_done() {
        let q = Queue::new();
        q.add(1);
        let k = q.get().await.unwrap();
        q.add(1);
        q.add(1);
        // Not handed out again while processing.
        assert_eq!(q.len(), 0);
        q.done(&k);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some(1));
        q.done(&1);
        assert_eq!(q.len(), 0);
    }

    #[tokio::test]
    async fn done_of_unknown_key_is_harmless() {
        let q: Queue<u32> = Queue::new();
        q.done(&7);
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn named_queue_works_without_a_recorder() {
        let q = Queue::named("test");
        q.add(1);
        assert_eq!(q.get().await, Some(1));
        q.done(&1);
    }
}
