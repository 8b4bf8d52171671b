//! The CPU cost of one scheduling cycle with the default profile, in-process (no apiserver):
//! `cargo test --release -p kube-scheduler --lib cycle_bench -- --ignored --nocapture`.
//! A measurement, not a check: it asserts only that every pod found a node.

use super::find_nodes::{find_nodes_that_fit, prioritize_and_select};
use crate::apis::config::resolve::resolve_profiles;
use crate::app::config::defaulted_config;
use crate::cache::Cache;
use crate::framework::parallelize::Parallelizer;
use crate::framework::testing::{node, pod, test_context};
use crate::framework::{CycleState, Framework, PodInfo, Snapshot};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture in release"]
fn cycle_cost_default_profile() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let _guard = rt.enter();
    for (nodes, pods, parallelism) in [
        (1000usize, 3000usize, 2),
        (5000, 10000, 2),
        (5000, 10000, 1),
    ] {
        let profile = resolve_profiles(&defaulted_config()).remove(0);
        let mut ctx = test_context();
        ctx.parallelizer = Parallelizer::new(parallelism);
        let fw = Framework::new(&profile, &crate::plugins::in_tree_registry(), ctx)
            .expect("default profile");
        let cache = Cache::new(Duration::ZERO);
        for i in 0..nodes {
            let zone = format!("zone-{}", i % 3);
            cache.add_node(Arc::new(node(
                &format!("node-{i}"),
                &[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")],
                &[("topology.kubernetes.io/zone", zone.as_str())],
            )));
        }
        let mut snapshot = Snapshot::default();
        let mut next = 0;
        let (mut t_filter, mut t_score, mut t_other) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let start = Instant::now();
        let cpu_start = process_cpu();
        for i in 0..pods {
            let t0 = Instant::now();
            cache.update_snapshot(&mut snapshot);
            let info = Arc::new(PodInfo::new(Arc::new(pod(
                &format!("pod-{i}"),
                &[("cpu", "100m"), ("memory", "500Mi")],
            ))));
            let mut state = CycleState::new();
            let t1 = Instant::now();
            let (feasible, _) =
                find_nodes_that_fit(&fw, &mut state, &info, &snapshot, &mut next, 0)
                    .expect("filter");
            let t2 = Instant::now();
            let host =
                prioritize_and_select(&fw, &mut state, &info, &feasible, &snapshot).expect("score");
            let t3 = Instant::now();
            let mut assumed = (*info.pod).clone();
            if let Some(s) = assumed.spec.as_mut() {
                s.node_name = Some(host);
            }
            cache
                .assume_pod(Arc::new(PodInfo::new(Arc::new(assumed))))
                .expect("assume");
            let t4 = Instant::now();
            t_other += (t1 - t0) + (t4 - t3);
            t_filter += t2 - t1;
            t_score += t3 - t2;
        }
        let total = start.elapsed();
        let cpu = process_cpu() - cpu_start;
        let per = |d: Duration| d.as_secs_f64() * 1e6 / pods as f64;
        println!(
            "{nodes} nodes, {pods} pods, parallelism {parallelism}: {:.0} us/pod wall, {:.0} us/pod CPU ({:.0} pods/s): filter {:.0} us, score {:.0} us, snapshot+assume {:.0} us",
            per(total),
            per(cpu),
            pods as f64 / total.as_secs_f64(),
            per(t_filter),
            per(t_score),
            per(t_other)
        );
        assert_eq!(cache.pod_count(), pods);
    }
}

/// CPU time of this process so far (user + system), from /proc/self/stat.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}
