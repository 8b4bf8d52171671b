//! Benchmark of kube-scheduler (not a test), in the spirit of upstream scheduler_perf's
//! SchedulingBasic: our apiserver (embedded store) and kube-scheduler as release processes,
//! `--nodes` nodes from scheduler_perf's node-default.yaml (4 cpu, 32Gi, 110 pods), then
//! `--init-pods` pods scheduled before measuring, then `--pods` measured pods from its
//! pod-default.yaml (100m cpu, 500Mi) created as fast as the apiserver accepts them by
//! `--creators` concurrent clients. Throughput is counted from a pod watch (pods that gain a
//! spec.nodeName), sampled every second like upstream's throughput collector.
//!
//! `cargo build --release -p kube-apiserver -p kube-scheduler -p e2e &&
//!  target/release/bench-scheduler --nodes 5000 --init-pods 1000 --pods 10000`
//! prints one markdown table row (the header with `--header`).

use e2e::apiserver::{ApiServer, Backend};
use e2e::bench::{Client, Flags, apiserver_pid, percentile, run_all, usage};
use e2e::scheduler::Scheduler;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const NS: &str = "bench";
/// How long the measured pods may take in all before the run is declared failed.
const GIVE_UP: Duration = Duration::from_secs(600);

struct Args {
    nodes: usize,
    init_pods: usize,
    pods: usize,
    creators: usize,
    header: bool,
    /// Create every pod first, then start the scheduler: its drain rate, not pod creation.
    backlog: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let flags = Flags::from_env(
        "bench-scheduler [--nodes N] [--init-pods N] [--pods N] [--creators N] [--backlog] [--header]",
    )?;
    let args = Args {
        nodes: flags.value("--nodes", 1000)?,
        init_pods: flags.value("--init-pods", 0)?,
        pods: flags.value("--pods", 3000)?,
        creators: flags.value("--creators", 16)?.max(1),
        header: flags.switch("--header"),
        backlog: flags.switch("--backlog"),
    };
    anyhow::ensure!(
        !(args.backlog && args.init_pods > 0),
        "--backlog schedules every pod at once: leave --init-pods out"
    );
    Ok(args)
}

fn node(name: &str) -> (Value, Value) {
    let resources = json!({"cpu": "4", "memory": "32Gi", "pods": "110"});
    (
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}),
        json!({"status": {"capacity": resources, "allocatable": resources,
                          "conditions": [{"type": "Ready", "status": "True",
                                          "reason": "KubeletReady", "message": "ready"}]}}),
    )
}

fn pod(name: &str) -> Value {
    let resources = json!({"cpu": "100m", "memory": "500Mi"});
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                    "ports": [{"containerPort": 80}],
                                    "resources": {"requests": resources, "limits": resources}}]}})
}

/// Nodes as a kubelet registers them; the not-ready taint TaintNodesByCondition adds on create
/// is taken off as the node lifecycle controller (not running) would once the node is Ready.
async fn create_nodes(clients: &[Client], creators: usize, count: usize) -> anyhow::Result<()> {
    run_all(clients, creators, count, |client, i| async move {
        let name = format!("node-{i}");
        let (object, status) = node(&name);
        client
            .expect("POST", "/api/v1/nodes", "application/json", &object, 201)
            .await?;
        let path = format!("/api/v1/nodes/{name}");
        let merge = "application/merge-patch+json";
        client
            .expect("PATCH", &format!("{path}/status"), merge, &status, 200)
            .await?;
        client
            .expect("PATCH", &path, merge, &json!({"spec": {"taints": []}}), 200)
            .await
    })
    .await
}

async fn create_pods(
    clients: &[Client],
    creators: usize,
    prefix: &'static str,
    count: usize,
) -> anyhow::Result<()> {
    run_all(clients, creators, count, move |client, i| async move {
        let path = format!("/api/v1/namespaces/{NS}/pods");
        client
            .expect(
                "POST",
                &path,
                "application/json",
                &pod(&format!("{prefix}-{i}")),
                201,
            )
            .await
    })
    .await
}

/// Counts the pods of the namespace that have been bound, from a watch opened now.
async fn watch_scheduled(client: &Client) -> anyhow::Result<Arc<AtomicUsize>> {
    let scheduled = Arc::new(AtomicUsize::new(0));
    let counter = scheduled.clone();
    let mut bound = HashSet::new();
    let path = format!("/api/v1/namespaces/{NS}/pods?watch=true");
    e2e::bench::watch(client, &path, move |event| {
        let pod = &event["object"];
        if event["type"] != "DELETED"
            && pod["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
            && bound.insert(
                pod["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        {
            counter.store(bound.len(), Ordering::Relaxed);
        }
        true
    })
    .await?;
    Ok(scheduled)
}

/// Waits until `scheduled` reaches `target`, sampling it every second; returns the per-second
/// throughput samples (the last one over the remaining fraction of a second) and the time.
async fn collect(scheduled: &AtomicUsize, target: usize, start: Instant) -> (Vec<f64>, Duration) {
    let mut samples = vec![];
    let mut last = (start, scheduled.load(Ordering::Relaxed));
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let now = (Instant::now(), scheduled.load(Ordering::Relaxed));
                samples.push((now.1 - last.1) as f64 / (now.0 - last.0).as_secs_f64());
                last = now;
            }
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
        let count = scheduled.load(Ordering::Relaxed);
        if count >= target {
            let now = Instant::now();
            let rest = (now - last.0).as_secs_f64();
            if rest > 0.05 {
                samples.push((count - last.1) as f64 / rest);
            }
            return (samples, now - start);
        }
        if start.elapsed() > GIVE_UP {
            eprintln!("gave up: {count} of {target} pods scheduled after {GIVE_UP:?}");
            return (samples, start.elapsed());
        }
    }
}

const CONFIG: &str = "clientConnection:\n  qps: 5000\n  burst: 5000\n";

async fn start_scheduler(
    dir: &std::path::Path,
    api: &ApiServer,
) -> anyhow::Result<(Scheduler, u32)> {
    let scheduler = Scheduler::start(&dir.join("scheduler"), api, Some(CONFIG), &[]).await?;
    let pid = scheduler.pid().expect("running");
    Ok((scheduler, pid))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let dir = tempfile::tempdir()?;
    let api_dir = dir.path().join("apiserver");
    let api = ApiServer::start(&api_dir, Backend::Embedded).await?;
    let api_pid = apiserver_pid(&api_dir);
    // Upstream's scheduler_perf runs the scheduler while nodes and pods are created.
    let mut running = None;
    if !args.backlog {
        running = Some(start_scheduler(dir.path(), &api).await?);
    }
    let mut clients = vec![];
    for _ in 0..4 {
        clients.push(Client::connect(&api).await?);
    }
    let admin = &clients[0];
    admin
        .expect(
            "POST",
            "/api/v1/namespaces",
            "application/json",
            &json!({"metadata": {"name": NS}}),
            201,
        )
        .await?;
    admin
        .expect(
            "POST",
            &format!("/api/v1/namespaces/{NS}/serviceaccounts"),
            "application/json",
            &json!({"metadata": {"name": "default"}}),
            201,
        )
        .await?;

    let t = Instant::now();
    create_nodes(&clients, args.creators, args.nodes).await?;
    eprintln!("{} nodes in {:.1?}", args.nodes, t.elapsed());

    let watch_client = Client::connect(&api).await?;
    let scheduled = watch_scheduled(&watch_client).await?;
    if args.init_pods > 0 {
        let t = Instant::now();
        create_pods(&clients, args.creators, "init", args.init_pods).await?;
        let (_, took) = collect(&scheduled, args.init_pods, t).await;
        eprintln!("{} initial pods scheduled in {took:.1?}", args.init_pods);
    }
    let base = scheduled.load(Ordering::Relaxed);
    let counted = Arc::new(AtomicUsize::new(0));
    // The measured pods only: the watch keeps counting from the initial ones.
    let relay = {
        let (scheduled, counted) = (scheduled.clone(), counted.clone());
        tokio::spawn(async move {
            loop {
                counted.store(
                    scheduled.load(Ordering::Relaxed).saturating_sub(base),
                    Ordering::Relaxed,
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    let mut creating = Some({
        let clients = clients.clone();
        let (creators, pods) = (args.creators, args.pods);
        tokio::spawn(async move {
            let t = Instant::now();
            create_pods(&clients, creators, "pod", pods).await?;
            anyhow::Ok(t.elapsed())
        })
    });
    let mut created_in = None;
    if args.backlog
        && let Some(creating) = creating.take()
    {
        created_in = Some(creating.await??);
    }
    let api_cpu_before = api_pid.map(|p| usage(p).0).unwrap_or(0.0);
    let own_cpu_before = usage(std::process::id()).0;
    // In backlog mode the clock includes the scheduler's start and its first list of pods.
    let start = Instant::now();
    let (scheduler, scheduler_pid) = match running {
        Some(running) => running,
        None => start_scheduler(dir.path(), &api).await?,
    };
    let (cpu_before, _) = if args.backlog {
        (0.0, 0.0)
    } else {
        usage(scheduler_pid)
    };
    let (mut samples, took) = collect(&counted, args.pods, start).await;
    let created_in = match (created_in, creating) {
        (Some(took), _) => took,
        (None, Some(creating)) => creating.await??,
        (None, None) => unreachable!("the creators are awaited once"),
    };
    relay.abort();
    let (cpu_after, peak_mib) = usage(scheduler_pid);
    let api_cpu = api_pid.map(|p| usage(p).0).unwrap_or(0.0) - api_cpu_before;
    // The benchmark's own clients and pod watch share the cores too.
    let own_cpu = usage(std::process::id()).0 - own_cpu_before;
    let done = counted.load(Ordering::Relaxed);
    let average = done as f64 / took.as_secs_f64();
    samples.sort_by(f64::total_cmp);
    eprintln!(
        "{} pods created in {created_in:.1?}, {done} scheduled in {took:.1?}",
        args.pods
    );
    if args.header {
        println!(
            "| mode | nodes | initial pods | measured pods | scheduled in s | average pods/s | \
             p50 | p90 | p95 | p99 | scheduler CPU s | scheduler peak RSS MiB | apiserver CPU s | \
             client CPU s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
    }
    println!(
        "| {} | {} | {} | {} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | \
         {:.1} | {:.1} |",
        if args.backlog {
            "backlog"
        } else {
            "created while scheduling"
        },
        args.nodes,
        args.init_pods,
        args.pods,
        took.as_secs_f64(),
        average,
        percentile(&samples, 0.5),
        percentile(&samples, 0.9),
        percentile(&samples, 0.95),
        percentile(&samples, 0.99),
        cpu_after - cpu_before,
        peak_mib,
        api_cpu,
        own_cpu,
    );
    anyhow::ensure!(
        done >= args.pods,
        "only {done} of {} pods were scheduled",
        args.pods
    );
    drop(scheduler);
    Ok(())
}
