//! A queue whose keys can be added after a delay.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::queue::Queue;

/// Far enough to mean "never" for a delay too large to represent.
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// A [`Queue`] with [`DelayingQueue::add_after`]. All of `Queue`'s methods are available
/// through `Deref`. A background task moves keys into the queue when their time comes; it
/// stops when the queue shuts down or the last clone is dropped.
pub struct DelayingQueue<K> {
    queue: Queue<K>,
    waiting: Arc<Waiting<K>>,
    _stop: Arc<DropGuard>,
}

impl<K> Clone for DelayingQueue<K> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            waiting: Arc::clone(&self.waiting),
            _stop: Arc::clone(&self._stop),
        }
    }
}

impl<K> Deref for DelayingQueue<K> {
    type Target = Queue<K>;
    fn deref(&self) -> &Queue<K> {
        &self.queue
    }
}

struct Waiting<K> {
    state: Mutex<WaitState<K>>,
    /// Woken when a new entry might be earlier than what the loop sleeps for.
    changed: Notify,
}

struct WaitState<K> {
    heap: BinaryHeap<Entry<K>>,
    /// The live entry of each waiting key; heap entries with another `seq` are stale.
    known: HashMap<K, (Instant, u64)>,
    next_seq: u64,
}

struct Entry<K> {
    ready_at: Instant,
    seq: u64,
    key: K,
}

// Ordered so that the max-heap's top is the earliest deadline, ties in insertion order.
impl<K> Ord for Entry<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ready_at, other.seq).cmp(&(self.ready_at, self.seq))
    }
}
impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl<K> Eq for Entry<K> {}

impl<K> DelayingQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// A delaying queue around a new anonymous [`Queue`].
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its timer task).
    pub fn new() -> Self {
        Self::with_queue(Queue::new())
    }

    /// A delaying queue with `workqueue_*` metrics labelled `name`.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn named(name: &str) -> Self {
        Self::with_queue(Queue::named(name))
    }

    /// A delaying queue feeding `queue`.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn with_queue(queue: Queue<K>) -> Self {
        let waiting = Arc::new(Waiting {
            state: Mutex::new(WaitState {
                heap: BinaryHeap::new(),
                known: HashMap::new(),
                next_seq: 0,
            }),
            changed: Notify::new(),
        });
        let stop = CancellationToken::new();
        tokio::spawn(waiting_loop(
            queue.clone(),
            Arc::clone(&waiting),
            stop.clone(),
        ));
        Self {
            queue,
            waiting,
            _stop: Arc::new(stop.drop_guard()),
        }
    }

    /// Adds `key` once `delay` has passed (at once for a zero delay). If the key is already
    /// waiting, the earlier of the two deadlines is kept.
    pub fn add_after(&self, key: K, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(m) = self.queue.metrics() {
            m.retries.increment(1);
        }
        if delay.is_zero() {
            self.queue.add(key);
            return;
        }
        let now = Instant::now();
        let ready_at = now.checked_add(delay).unwrap_or_else(|| now + FAR_FUTURE);
        let mut st = self.waiting.state.lock();
        if let Some((existing, _)) = st.known.get(&key)
            && *existing <= ready_at
        {
            return;
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        st.known.insert(key.clone(), (ready_at, seq));
        st.heap.push(Entry { ready_at, seq, key });
        drop(st);
        self.waiting.changed.notify_one();
    }

    /// Number of keys waiting for their deadline (not yet in the queue).
    pub fn waiting_len(&self) -> usize {
        self.waiting.state.lock().known.len()
    }
}

impl<K> Default for DelayingQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

async fn waiting_loop<K>(queue: Queue<K>, waiting: Arc<Waiting<K>>, stop: CancellationToken)
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    let shutdown = queue.shutdown_token();
    loop {
        let changed = waiting.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();

        let (ready, next) = {
            let mut st = waiting.state.lock();
            let now = Instant::now();
            let mut ready = Vec::new();
            let mut next = None;
            while let Some(top) = st.heap.peek() {
                let live = st.known.get(&top.key).map(|&(_, seq)| seq) == Some(top.seq);
                if !live {
                    st.heap.pop();
                    continue;
                }
                if top.ready_at > now {
                    next = Some(top.ready_at);
                    break;
                }
                if let Some(e) = st.heap.pop() {
                    st.known.remove(&e.key);
                    ready.push(e.key);
                }
            }
            (ready, next)
        };
        for key in ready {
            queue.add(key);
        }

        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = stop.cancelled() => return,
            _ = &mut changed => {}
            _ = sleep => {}
        }
    }
}
