//! Benchmark of the kubelet's pod startup latency (not a test), as upstream's node density
//! tests measure it: one containerd, our apiserver and one kubelet as release processes, then
//! `--pods` busybox pods bound to the node (`spec.nodeName`, image present, IfNotPresent).
//! Latency is from the create call's answer to the first watch event showing the pod Running.
//! `--interval-ms X` creates the pods one after another every X ms (upstream's SLO is measured
//! at a steady rate); without it (or with 0) all of them are created at once (a burst).
//!
//! `cargo build --release -p kube-apiserver -p kubelet -p e2e --bin bench-kubelet &&
//!  target/release/bench-kubelet --pods 50 --interval-ms 200 --header`
//! prints one markdown table row (the header with `--header`). `--trace` keeps the temp dir with
//! the kubelet's log (path on stderr); run with `RUST_LOG=info,kubelet=debug` (the daemons
//! inherit it) to see where the time goes.
//! Everything it starts is stopped and cleaned up (containers, sandboxes, mounts, cgroups) on
//! return, on error and on Ctrl-C, by the e2e harness's drops.

use e2e::bench::{Flags, percentile, usage};
use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{Kubelet, admin_client, start_apiserver};
use futures::StreamExt;
use kube::api::WatchParams;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NODE: &str = "bench-node";
const NS: &str = "default";
/// How long the measured pods may take in all before the run is declared failed.
const GIVE_UP: Duration = Duration::from_secs(300);

struct Args {
    pods: usize,
    interval: Duration,
    header: bool,
    trace: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let flags = Flags::from_env("bench-kubelet [--pods N] [--interval-ms X] [--trace] [--header]")?;
    Ok(Args {
        pods: flags.value("--pods", 50usize)?.max(1),
        interval: Duration::from_millis(flags.value("--interval-ms", 0)?),
        header: flags.switch("--header"),
        trace: flags.switch("--trace"),
    })
}

fn pod_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
}

fn pod(name: &str) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"],
            }],
        },
    }))?)
}

/// The pid of the process one of whose arguments is `arg` (the harness keeps pids private).
fn pid_with_arg(arg: &str) -> Option<u32> {
    pids_with(|args| args.contains(&arg)).into_iter().next()
}

fn pids_with(matches: impl Fn(&[&str]) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            let args: Vec<&str> = cmdline.split('\0').collect();
            matches(&args).then_some(pid)
        })
        .collect()
}

/// CPU seconds of the containerd shims serving `socket` (they live as long as their pods).
fn shims_cpu(socket: &Path) -> f64 {
    let socket = socket.display().to_string();
    pids_with(|args| {
        args.first()
            .is_some_and(|a| a.ends_with("containerd-shim-runc-v2"))
            && args.iter().any(|a| *a == socket)
    })
    .into_iter()
    .map(|pid| usage(pid).0)
    .sum()
}

/// When each pod was first seen Running, by name.
type Seen = Arc<Mutex<HashMap<String, Instant>>>;

fn phase(obj: &DynamicObject) -> &str {
    obj.data["status"]["phase"].as_str().unwrap_or_default()
}

/// Waits for the first watch event showing each pod Running; records when it came.
fn watch_running(
    api: Api<DynamicObject>,
    version: String,
) -> (Seen, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let running: Seen = Arc::default();
    let seen = running.clone();
    let task = tokio::spawn(async move {
        let mut stream = api
            .watch(&WatchParams::default().timeout(290), &version)
            .await?
            .boxed();
        while let Some(event) = stream.next().await {
            if let WatchEvent::Added(p) | WatchEvent::Modified(p) = event?
                && phase(&p) == "Running"
            {
                let at = Instant::now();
                let name = p.metadata.name.clone().unwrap_or_default();
                seen.lock()
                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                    .entry(name)
                    .or_insert(at);
            }
        }
        anyhow::Ok(())
    });
    (running, task)
}

/// Polls `done` every 10 ms until it holds or `GIVE_UP` passes.
async fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + GIVE_UP;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}

async fn run(args: &Args, dir: &Path) -> anyhow::Result<()> {
    let containerd_dir = dir.join("containerd");
    let containerd = tokio::task::spawn_blocking({
        let containerd_dir = containerd_dir.clone();
        move || Containerd::start(&containerd_dir)
    })
    .await??;
    let (api, pki) = start_apiserver(&dir.join("api"), &[]).await?;
    let kubelet_dir = dir.join("kubelet");
    // Locals drop in reverse order: the kubelet (and its pods) go first, containerd last.
    let kubelet = Kubelet::start(&kubelet_dir, &api, &containerd, NODE, Value::Null, &[]).await?;
    // admin_client's rate limit is client-go's default (5 QPS, burst 10): a burst of creates
    // would come at 5 per second. The benchmark's own client is not limited.
    admin_client(&api, &pki, dir).await;
    let client =
        client_go_rs::config::load_client_config(Some(&dir.join("admin.kubeconfig")), None, None)
            .await?
            .with_rate_limit(0.0, 0)
            .build_client()?;
    let pods: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &pod_resource());
    let nodes: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Node")),
    );
    anyhow::ensure!(
        wait_for_async(async || nodes.get_opt(NODE).await.ok().flatten().is_some()).await,
        "the node did not register\n{}",
        kubelet.logs()
    );
    let kubelet_pid = pid_with_arg(&format!(
        "--root-dir={}",
        kubelet_dir.canonicalize()?.join("root").display()
    ))
    .ok_or_else(|| anyhow::anyhow!("the kubelet's pid was not found"))?;
    let containerd_pid = pid_with_arg(
        &containerd_dir
            .canonicalize()?
            .join("config.toml")
            .display()
            .to_string(),
    )
    .ok_or_else(|| anyhow::anyhow!("containerd's pid was not found"))?;

    // A warm-up pod, not measured: the first sandbox and container pay one-off costs
    // (snapshot of the image, CNI bridge set-up).
    pods.create(&PostParams::default(), &pod("warm-up")?)
        .await?;
    anyhow::ensure!(
        wait_for_async(async || pods
            .get_opt("warm-up")
            .await
            .ok()
            .flatten()
            .is_some_and(|p| phase(&p) == "Running"))
        .await,
        "the warm-up pod did not start\n{}",
        kubelet.logs()
    );
    let version = pods
        .list_metadata(&Default::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_else(|| "0".into());
    let (running, watcher) = watch_running(pods.clone(), version);

    let kubelet_cpu = usage(kubelet_pid).0;
    let containerd_cpu = usage(containerd_pid).0;
    let shims_before = shims_cpu(&containerd.socket_path());
    let mut creators = Vec::new();
    let mut tick = tokio::time::interval(args.interval.max(Duration::from_micros(1)));
    let started = Instant::now();
    for i in 0..args.pods {
        if !args.interval.is_zero() {
            tick.tick().await;
        }
        let pods = pods.clone();
        creators.push(tokio::spawn(async move {
            let name = format!("pod-{i}");
            pods.create(&PostParams::default(), &pod(&name)?).await?;
            anyhow::Ok((name, Instant::now()))
        }));
    }
    let mut created = HashMap::new();
    for creator in creators {
        let (name, at) = creator.await??;
        created.insert(name, at);
    }
    let last_answer = created.values().max().copied().unwrap_or(started);
    eprintln!(
        "{} pods created (answers) in {:.2?}",
        args.pods,
        last_answer.saturating_duration_since(started)
    );
    let all = wait_for(|| running.lock().is_ok_and(|r| r.len() >= args.pods)).await;
    watcher.abort();
    let (kubelet_after, kubelet_rss) = usage(kubelet_pid);
    let containerd_after = usage(containerd_pid).0;
    let shims = shims_cpu(&containerd.socket_path()) - shims_before;
    let seen = running
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    anyhow::ensure!(
        all,
        "only {} of {} pods were seen Running\n{}",
        seen.len(),
        args.pods,
        kubelet.logs()
    );
    let mut latencies: Vec<f64> = created
        .iter()
        .map(|(name, at)| seen[name].saturating_duration_since(*at).as_secs_f64())
        .collect();
    latencies.sort_by(f64::total_cmp);
    if args.header {
        println!(
            "| mode | pods | median s | p90 s | p99 s | max s | kubelet CPU s | kubelet peak RSS \
             MiB | containerd CPU s | shims CPU s | load |\n\
             |---|---|---|---|---|---|---|---|---|---|---|"
        );
    }
    let mode = if args.interval.is_zero() {
        "burst".to_string()
    } else {
        format!("every {} ms", args.interval.as_millis())
    };
    println!(
        "| {mode} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.0} | {:.1} | {:.1} | {} |",
        args.pods,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
        kubelet_after - kubelet_cpu,
        kubelet_rss,
        containerd_after - containerd_cpu,
        shims,
        load_average(),
    );
    if args.trace {
        eprintln!("kubelet log: {}/run1/kubelet.log", kubelet_dir.display());
    }
    // The harness's drop removes the pods (CRI), their mounts and cgroups; deleting them
    // through the API first raced the kubelet's own teardown and once left a cgroup tree.
    drop(kubelet);
    drop(containerd);
    drop(api);
    Ok(())
}

async fn wait_for_async(mut done: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + GIVE_UP;
    while Instant::now() < deadline {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    // A short path: containerd's socket path must stay under 108 bytes.
    let dir = tempfile::Builder::new().prefix("bk").tempdir_in("/tmp")?;
    let result = tokio::select! {
        result = run(&args, dir.path()) => result,
        // Dropping `run`'s future drops the harness's processes, which cleans up after them.
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    if args.trace {
        // Keep the kubelet's log to read it.
        let kept = dir.keep();
        eprintln!("kept {}", kept.display());
    }
    result
}
