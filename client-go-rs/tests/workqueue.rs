//! Behaviour of the work queues: concurrency guarantees, shutdown, delays and rate limits.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use client_go_rs::workqueue::{
    DelayingQueue, ItemExponentialFailureRateLimiter, Queue, RateLimiter, RateLimitingQueue,
};
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// N workers over M keys, each processing step re-adding random keys: no key is ever held by
/// two workers, and every add is followed by a processing of that key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_never_share_a_key_and_no_add_is_lost() {
    const WORKERS: usize = 8;
    const KEYS: usize = 16;
    const READDS: usize = 4000;

    let q: Queue<usize> = Queue::new();
    let busy: Arc<Vec<AtomicBool>> = Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
    // How many adds of each key have been issued, and how many of them the latest processing
    // of the key covered (read when the key was handed out).
    let issued: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let covered: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let budget = Arc::new(AtomicUsize::new(READDS));
    let adds_finished = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let processed = Arc::new(AtomicUsize::new(0));

    for k in 0..KEYS {
        issued[k].fetch_add(1, Ordering::SeqCst);
        q.add(k);
    }

    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let (q, busy, issued, covered, budget, adds_finished, overlaps, processed) = (
            q.clone(),
            busy.clone(),
            issued.clone(),
            covered.clone(),
            budget.clone(),
            adds_finished.clone(),
            overlaps.clone(),
            processed.clone(),
        );
        workers.push(tokio::spawn(async move {
            while let Some(k) = q.get().await {
                if busy[k].swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                covered[k].store(issued[k].load(Ordering::SeqCst), Ordering::SeqCst);
                processed.fetch_add(1, Ordering::SeqCst);
                // Always re-add the key being processed (it must come back after done), and
                // sometimes another random key (which may be waiting or processing).
                for i in 0..rand::random_range(1..3usize) {
                    tokio::task::yield_now().await;
                    let claimed = budget
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                        .is_ok();
                    if claimed {
                        let other = if i == 0 {
                            k
                        } else {
                            rand::random_range(0..KEYS)
                        };
                        issued[other].fetch_add(1, Ordering::SeqCst);
                        q.add(other);
                        adds_finished.fetch_add(1, Ordering::SeqCst);
                    }
                }
                busy[k].store(false, Ordering::SeqCst);
                q.done(&k);
            }
        }));
    }

    // Every processing re-adds its own key, so the work only stops early if an add was lost;
    // the generous bound turns that hang into a failure.
    let all_added = async {
        while adds_finished.load(Ordering::SeqCst) < READDS {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), all_added)
        .await
        .expect("work stalled: an add made during processing was lost");
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.expect("worker panicked");
    }

    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    for k in 0..KEYS {
        assert_eq!(
            covered[k].load(Ordering::SeqCst),
            issued[k].load(Ordering::SeqCst),
            "key {k} was added after its last processing started but not processed again"
        );
    }
    assert!(processed.load(Ordering::SeqCst) >= KEYS);
    assert!(q.is_empty());
}

#[tokio::test]
async fn waiting_keys_are_deduplicated() {
    let q = Queue::new();
    for k in ["a", "b", "a", "c", "b", "a"] {
        q.add(k);
    }
    assert_eq!(q.len(), 3);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(q.get().await.unwrap());
    }
    assert_eq!(got, vec!["a", "b", "c"]);
}

#[tokio::test]
async fn key_readded_during_processing_comes_back_once_after_done() {
    let q = Queue::new();
    q.add("k");
    let k = q.get().await.unwrap();
    q.add("k");
    q.add("k");
    assert!(q.is_empty(), "must not be handed out while processing");
    q.done(&k);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("k"));
    q.done(&"k");
    assert!(q.is_empty());
}

#[tokio::test]
async fn shutdown_drains_then_returns_none() {
    let q = Queue::new();
    q.add(1);
    q.add(2);
    q.shut_down();
    assert!(q.shutting_down());
    q.add(3); // ignored
    assert_eq!(q.get().await, Some(1));
    assert_eq!(q.get().await, Some(2));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_blocked_getters() {
    let q: Queue<u8> = Queue::new();
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    tokio::time::sleep(ms(10)).await;
    q.shut_down();
    for g in getters {
        assert_eq!(g.await.unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn blocked_getter_receives_a_later_add() {
    let q: Queue<u8> = Queue::new();
    let getter = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    tokio::time::sleep(ms(10)).await;
    assert!(!getter.is_finished());
    q.add(9);
    assert_eq!(getter.await.unwrap(), Some(9));
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_done() {
    let q = Queue::new();
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    tokio::time::sleep(ms(100)).await;
    assert!(!drain.is_finished(), "returned while 'a' was processing");
    // Queued keys are still handed out during the drain.
    let b = q.get().await.unwrap();
    q.done(&a);
    tokio::time::sleep(ms(100)).await;
    assert!(!drain.is_finished(), "returned while 'b' was processing");
    q.done(&b);
    tokio::time::timeout(ms(100), drain)
        .await
        .expect("drain did not finish after the last done")
        .unwrap();
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_releases_keys_in_deadline_order() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("late", ms(30));
    q.add_after("early", ms(10));
    q.add_after("middle", ms(20));
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_len(), 3);

    let mut got = Vec::new();
    for _ in 0..4 {
        let k = q.get().await.unwrap();
        got.push((k, start.elapsed()));
    }
    let keys: Vec<_> = got.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, vec!["now", "early", "middle", "late"]);
    // With the paused clock the keys arrive exactly at their deadlines.
    for ((_, at), want) in got.iter().zip([0, 10, 20, 30]) {
        assert!(*at >= ms(want) && *at < ms(want + 1), "{at:?} vs {want}ms");
    }
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_keeps_the_earlier_deadline() {
    let q = DelayingQueue::new();
    q.add_after("k", ms(50));
    q.add_after("k", ms(10)); // earlier: wins
    q.add_after("k", ms(40)); // later: ignored
    assert_eq!(q.waiting_len(), 1);
    let start = Instant::now();
    assert_eq!(q.get().await, Some("k"));
    let at = start.elapsed();
    assert!(at >= ms(10) && at < ms(11), "{at:?}");
    q.done(&"k");
    // Nothing else comes later: the superseded deadlines left no copy behind.
    tokio::time::sleep(ms(100)).await;
    assert!(q.is_empty());
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_dedups_with_a_key_already_queued() {
    let q = DelayingQueue::new();
    q.add("k");
    q.add_after("k", ms(5));
    tokio::time::sleep(ms(10)).await;
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_stops_on_shutdown() {
    let q = DelayingQueue::new();
    q.add_after(1, ms(10));
    q.shut_down();
    q.add_after(2, ms(1));
    tokio::time::sleep(ms(50)).await;
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_exponentially_and_forget_resets() {
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(
        ms(5),
        Duration::from_secs(1000),
    ));
    let q = RateLimitingQueue::new(limiter);
    let mut delays = Vec::new();
    for _ in 0..4 {
        let start = Instant::now();
        q.add_rate_limited("k");
        let k = q.get().await.unwrap();
        delays.push(start.elapsed());
        q.done(&k);
    }
    let want = [5, 10, 20, 40];
    for (d, w) in delays.iter().zip(want) {
        assert!(*d >= ms(w) && *d < ms(w + 1), "{delays:?}");
    }
    assert_eq!(q.num_requeues(&"k"), 4);
    q.forget(&"k");
    assert_eq!(q.num_requeues(&"k"), 0);
    let start = Instant::now();
    q.add_rate_limited("k");
    q.get().await.unwrap();
    assert!(start.elapsed() < ms(6));
}

#[tokio::test(start_paused = true)]
async fn default_controller_queue_uses_client_go_defaults() {
    let q = RateLimitingQueue::<String>::default_controller("test-controller");
    q.add_rate_limited("a".to_owned());
    q.add_rate_limited("a".to_owned());
    assert_eq!(q.num_requeues(&"a".to_owned()), 2);
    let start = Instant::now();
    assert_eq!(q.get().await.as_deref(), Some("a"));
    // The first (5 ms) deadline wins over the second (10 ms).
    assert!(start.elapsed() <= ms(5));
}

#[test]
fn exponential_backoff_sequence_caps_at_1000s() {
    let l = ItemExponentialFailureRateLimiter::default();
    let got: Vec<Duration> = (0..30).map(|_| l.when(&"x")).collect();
    let mut want = Vec::new();
    let mut d = ms(5);
    for _ in 0..30 {
        want.push(d.min(Duration::from_secs(1000)));
        d *= 2;
    }
    assert_eq!(got, want);
    assert_eq!(*got.last().unwrap(), Duration::from_secs(1000));
    let distinct: HashSet<_> = got.iter().collect();
    assert!(distinct.len() > 10);
}
