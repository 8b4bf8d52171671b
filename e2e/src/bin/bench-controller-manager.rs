//! Benchmark of kube-controller-manager (not a test): our apiserver (embedded store) and
//! kube-controller-manager (`--controllers=deployment,replicaset`) as release processes. A
//! Deployment of `--replicas` pods is created; the benchmark plays the kubelet, marking each
//! pod Running and Ready as it appears (`--markers` concurrent status writers), and measures
//! the time until every pod exists and until the Deployment reports them all available. The
//! Deployment is then scaled to `--pods` and the controller manager's CPU time and peak RSS
//! are read from /proc once that many pods are available.
//!
//! `cargo build --release -p kube-apiserver -p kube-controller-manager -p e2e &&
//!  target/release/bench-controller-manager --replicas 1000 --pods 10000`
//! prints one markdown table row (the header with `--header`).

use e2e::apiserver::{ApiServer, Backend};
use e2e::bench::{Client, Flags, apiserver_pid, usage};
use e2e::controller_manager::ControllerManager;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const NS: &str = "bench";
const GIVE_UP: Duration = Duration::from_secs(900);

struct Args {
    replicas: usize,
    pods: usize,
    markers: usize,
    qps: u32,
    header: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let flags = Flags::from_env(
        "bench-controller-manager [--replicas N] [--pods N] [--markers N] [--kube-api-qps N] [--header]",
    )?;
    let args = Args {
        replicas: flags.value("--replicas", 1000)?,
        pods: flags.value("--pods", 10000)?,
        markers: flags.value("--markers", 16)?.max(1),
        qps: flags.value("--kube-api-qps", 1000)?,
        header: flags.switch("--header"),
    };
    anyhow::ensure!(
        args.pods >= args.replicas,
        "--pods must be at least --replicas"
    );
    Ok(args)
}

fn deployment(replicas: usize) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}]},
            },
        },
    })
}

fn running_ready() -> Value {
    let now = jiff::Timestamp::now().to_string();
    json!({"status": {
        "phase": "Running",
        "podIP": "10.0.0.1",
        "startTime": now,
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
        ],
        "containerStatuses": [{"name": "c", "image": "busybox:1.36", "imageID": "",
            "ready": true, "restartCount": 0, "started": true,
            "state": {"running": {"startedAt": now}}}],
    }})
}

/// Watches the namespace's pods: counts the distinct pods created and hands each new one to
/// the markers.
async fn watch_pods(
    client: &Client,
    new_pods: mpsc::UnboundedSender<String>,
) -> anyhow::Result<Arc<AtomicUsize>> {
    let created = Arc::new(AtomicUsize::new(0));
    let counter = created.clone();
    let mut seen = HashSet::new();
    let path = format!("/api/v1/namespaces/{NS}/pods?watch=true");
    e2e::bench::watch(client, &path, move |event| {
        let name = event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if event["type"] == "ADDED" && seen.insert(name.clone()) {
            counter.store(seen.len(), Ordering::Relaxed);
            return new_pods.send(name).is_ok();
        }
        true
    })
    .await?;
    Ok(created)
}

fn start_markers(clients: &[Client], markers: usize, pods: mpsc::UnboundedReceiver<String>) {
    let pods = Arc::new(tokio::sync::Mutex::new(pods));
    for m in 0..markers {
        let client = clients[m % clients.len()].clone();
        let pods = pods.clone();
        tokio::spawn(async move {
            loop {
                let Some(name) = pods.lock().await.recv().await else {
                    return;
                };
                let path = format!("/api/v1/namespaces/{NS}/pods/{name}/status");
                let patch = running_ready();
                if let Err(err) = client
                    .expect("PATCH", &path, "application/merge-patch+json", &patch, 200)
                    .await
                {
                    eprintln!("marking {name} ready: {err:#}");
                }
            }
        });
    }
}

async fn available(client: &Client) -> anyhow::Result<usize> {
    let path = format!("/apis/apps/v1/namespaces/{NS}/deployments/bench");
    let response = client
        .send("GET", &path, "application/json", &json!(null))
        .await?;
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    let deployment: Value = serde_json::from_slice(&body)?;
    Ok(deployment["status"]["availableReplicas"]
        .as_u64()
        .unwrap_or(0) as usize)
}

/// Waits until `created` reaches `target` and the Deployment reports `target` available;
/// returns the two times from `start`.
async fn wait(
    client: &Client,
    created: &AtomicUsize,
    target: usize,
    start: Instant,
) -> anyhow::Result<(Duration, Duration)> {
    let mut all_created = None;
    loop {
        if all_created.is_none() && created.load(Ordering::Relaxed) >= target {
            all_created = Some(start.elapsed());
        }
        if let Some(created_at) = all_created
            && available(client).await? >= target
        {
            return Ok((created_at, start.elapsed()));
        }
        anyhow::ensure!(
            start.elapsed() < GIVE_UP,
            "gave up: {} of {target} pods created",
            created.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let dir = tempfile::tempdir()?;
    let api = ApiServer::start(&dir.path().join("api"), Backend::Embedded).await?;
    let mut clients = vec![];
    for _ in 0..4 {
        clients.push(Client::connect(&api).await?);
    }
    clients[0]
        .expect(
            "POST",
            "/api/v1/namespaces",
            "application/json",
            &json!({"metadata": {"name": NS}}),
            201,
        )
        .await?;
    let qps = args.qps.to_string();
    let cm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &[
            "--controllers=deployment,replicaset",
            &format!("--kube-api-qps={qps}"),
            &format!("--kube-api-burst={qps}"),
        ],
    )
    .await?;
    let pid = cm.pid().expect("running");
    let (tx, rx) = mpsc::unbounded_channel();
    let created = watch_pods(&clients[1], tx).await?;
    start_markers(&clients, args.markers, rx);

    let start = Instant::now();
    clients[0]
        .expect(
            "POST",
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            "application/json",
            &deployment(args.replicas),
            201,
        )
        .await?;
    let (created_in, available_in) = wait(&clients[0], &created, args.replicas, start).await?;

    let scale_start = Instant::now();
    clients[0]
        .expect(
            "PATCH",
            &format!("/apis/apps/v1/namespaces/{NS}/deployments/bench"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": args.pods}}),
            200,
        )
        .await?;
    let (scaled_created, scaled_available) =
        wait(&clients[0], &created, args.pods, scale_start).await?;
    let (cpu, rss) = usage(pid);
    let api_cpu = apiserver_pid(&dir.path().join("api")).map_or(0.0, |p| usage(p).0);
    if args.header {
        println!(
            "| replicas | all pods created | all available | pods created/s | scaled to | created | available | KCM CPU s (whole run) | KCM peak RSS MiB | apiserver CPU s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
    }
    println!(
        "| {} | {:.2} s | {:.2} s | {:.0} | {} | {:.2} s | {:.2} s | {:.1} | {:.0} | {:.1} |",
        args.replicas,
        created_in.as_secs_f64(),
        available_in.as_secs_f64(),
        args.replicas as f64 / created_in.as_secs_f64(),
        args.pods,
        scaled_created.as_secs_f64(),
        scaled_available.as_secs_f64(),
        cpu,
        rss,
        api_cpu
    );
    drop(cm);
    Ok(())
}
