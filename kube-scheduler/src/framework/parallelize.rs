//! Running per-node work in parallel (Filter, Score, PreFilter state over all nodes) on a pool
//! sized by the profile's `parallelism`, capped at the machine's cores: on two cores, sixteen
//! threads would only add context switches.

use rayon::prelude::*;
use std::sync::Arc;

#[derive(Clone)]
pub struct Parallelizer {
    pool: Arc<rayon::ThreadPool>,
    threads: usize,
}

impl std::fmt::Debug for Parallelizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parallelizer({})", self.pool.current_num_threads())
    }
}

impl Parallelizer {
    pub fn new(parallelism: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = parallelism.clamp(1, cores.max(1));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("scheduler-worker-{i}"))
            .build()
            .expect("building a thread pool only fails when threads cannot be spawned");
        Self {
            pool: Arc::new(pool),
            threads,
        }
    }

    /// Below this many items the hand-off to the pool costs more than it saves: a Filter or
    /// Score call on one node takes a fraction of a microsecond, and measured on two cores
    /// (`scheduler::cycle_bench`) a cycle over 640 nodes took twice the CPU and more wall time
    /// split across threads than on the scheduling thread alone.
    const SEQUENTIAL_BELOW: usize = 1024;

    /// Items per task: a few tasks per thread, so stealing balances without a task per node.
    fn min_len(&self, n: usize) -> usize {
        (n / (self.threads * 4)).max(16)
    }

    /// `f(i)` for every `i` in `0..n`, in parallel; returns the results in order.
    pub fn map<T: Send>(&self, n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
        if n < Self::SEQUENTIAL_BELOW || self.threads == 1 {
            return (0..n).map(f).collect();
        }
        let min = self.min_len(n);
        self.pool
            .install(|| (0..n).into_par_iter().with_min_len(min).map(f).collect())
    }

    /// `f(i)` for every `i` in `0..n`, in parallel.
    pub fn for_each(&self, n: usize, f: impl Fn(usize) + Sync + Send) {
        if n < Self::SEQUENTIAL_BELOW || self.threads == 1 {
            (0..n).for_each(f);
            return;
        }
        let min = self.min_len(n);
        self.pool
            .install(|| (0..n).into_par_iter().with_min_len(min).for_each(f));
    }

    /// Runs `f` on the pool (so its own parallel iterators use it).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}
