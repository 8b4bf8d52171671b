//! Issue 10's scale run: `--nodes` hollow kubelets (`kubelet --hollow`, one process each, no
//! containers) under the real control plane (apiserver on the embedded store, controller
//! manager, scheduler), then `--pods` pods as `--deployments` Deployments. Measures how fast the
//! scheduler binds them (pods/s over 1 s windows, from a pod watch), how long until every pod is
//! Running as the hollow kubelets report it, and the memory of the control plane and kubelets.
//!
//! `cargo build --release -p kube-apiserver -p kube-controller-manager -p kube-scheduler
//!  -p kubelet -p e2e && target/release/bench-hollow --nodes 500 --pods 5000`
//! prints one markdown table row (the header with `--header`).

use e2e::bench::{Client, Flags, apiserver_pid, percentile, rss_mib, usage};
use e2e::controller_manager::ControllerManager;
use e2e::kubelet::{Kubelet, start_apiserver};
use e2e::scheduler::Scheduler;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const GIVE_UP: Duration = Duration::from_secs(900);

struct Args {
    nodes: usize,
    pods: usize,
    deployments: usize,
    header: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let flags =
        Flags::from_env("bench-hollow [--nodes N] [--pods N] [--deployments N] [--header]")?;
    Ok(Args {
        nodes: flags.value("--nodes", 500)?,
        pods: flags.value("--pods", 5000)?,
        deployments: flags.value("--deployments", 10)?.max(1),
        header: flags.switch("--header"),
    })
}

fn deployment(name: &str, replicas: usize) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c",
                                          "image": "registry.k8s.io/pause:3.10"}]}}}})
}

/// Counts the default namespace's pods that are bound and that are Running: a list, then a
/// watch from its resourceVersion, again whenever the apiserver ends the watch (it drops
/// watchers that fall behind, and these pods change often).
async fn watch_pods(client: Client) -> anyhow::Result<(Arc<AtomicUsize>, Arc<AtomicUsize>)> {
    let (bound, running) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (b, r) = (bound.clone(), running.clone());
    tokio::spawn(async move {
        // name -> (bound, running)
        let mut seen: HashMap<String, (bool, bool)> = HashMap::new();
        let note = |seen: &mut HashMap<String, (bool, bool)>, pod: &Value| {
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let now = (
                pod["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty()),
                pod["status"]["phase"] == "Running",
            );
            let was = seen.entry(name).or_default();
            was.0 |= now.0;
            was.1 |= now.1;
        };
        loop {
            let Ok(list) = get_json(&client, "/api/v1/namespaces/default/pods").await else {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            };
            for pod in list["items"].as_array().into_iter().flatten() {
                note(&mut seen, pod);
            }
            let publish = |seen: &HashMap<String, (bool, bool)>| {
                b.store(seen.values().filter(|v| v.0).count(), Ordering::Relaxed);
                r.store(seen.values().filter(|v| v.1).count(), Ordering::Relaxed);
            };
            publish(&seen);
            let rv = list["metadata"]["resourceVersion"].as_str().unwrap_or("0");
            let path = format!(
                "/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
            );
            let Ok(response) = client
                .send("GET", &path, "application/json", &Value::Null)
                .await
            else {
                continue;
            };
            use futures::StreamExt;
            use tokio::io::AsyncBufReadExt;
            let stream = http_body_util::BodyStream::new(response.into_body()).map(|frame| {
                frame
                    .map(|f| f.into_data().unwrap_or_default())
                    .map_err(std::io::Error::other)
            });
            let mut lines =
                tokio::io::BufReader::new(tokio_util::io::StreamReader::new(stream)).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["type"] != "DELETED"
                    && event["type"] != "BOOKMARK"
                {
                    note(&mut seen, &event["object"]);
                    publish(&seen);
                }
            }
        }
    });
    Ok((bound, running))
}

async fn get_json(client: &Client, path: &str) -> anyhow::Result<Value> {
    use http_body_util::BodyExt;
    let response = client
        .send("GET", path, "application/json", &Value::Null)
        .await?;
    anyhow::ensure!(
        response.status() == 200,
        "GET {path}: {}",
        response.status()
    );
    Ok(serde_json::from_slice(
        &response.into_body().collect().await?.to_bytes(),
    )?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let dir = tempfile::tempdir()?;
    let (api, _pki) = start_apiserver(dir.path(), &[]).await?;
    let api_pid = apiserver_pid(&dir.path().join("apiserver"));
    let kcm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &["--kube-api-qps=1000", "--kube-api-burst=1000"],
    )
    .await?;
    let scheduler = Scheduler::start(
        &dir.path().join("scheduler"),
        &api,
        Some("clientConnection:\n  qps: 5000\n  burst: 5000\n"),
        &[],
    )
    .await?;

    let t = Instant::now();
    let mut kubelets: Vec<Kubelet> = Vec::with_capacity(args.nodes);
    for chunk in (0..args.nodes).collect::<Vec<_>>().chunks(25) {
        let starts = chunk.iter().map(|i| {
            let name = format!("hollow-{i}");
            let node_dir = dir.path().join("nodes").join(&name);
            let api = &api;
            // Free ports are picked before the kubelet binds them: with hundreds starting,
            // another process may take one first; a fresh start picks new ones.
            async move {
                let mut attempt = 0;
                loop {
                    let dir = node_dir.join(format!("attempt-{attempt}"));
                    match Kubelet::start_hollow(&dir, api, &name, Value::Null).await {
                        Err(err) if attempt < 3 && format!("{err:#}").contains("in use") => {
                            attempt += 1;
                        }
                        result => break result,
                    }
                }
            }
        });
        for kubelet in futures::future::join_all(starts).await {
            kubelets.push(kubelet?);
        }
    }
    let client = Client::connect(&api).await?;
    loop {
        let response = client
            .send("GET", "/api/v1/nodes", "application/json", &Value::Null)
            .await?;
        use http_body_util::BodyExt;
        let list: Value =
            serde_json::from_slice(&response.into_body().collect().await?.to_bytes())?;
        let ready = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|n| {
                        n["status"]["conditions"].as_array().is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c["type"] == "Ready" && c["status"] == "True")
                        })
                    })
                    .count()
            })
            .unwrap_or(0);
        if ready >= args.nodes {
            break;
        }
        anyhow::ensure!(t.elapsed() < GIVE_UP, "only {ready} nodes Ready");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let nodes_ready_in = t.elapsed();
    eprintln!("{} hollow nodes Ready in {nodes_ready_in:.1?}", args.nodes);

    let watch_client = Client::connect(&api).await?;
    let (bound, running) = watch_pods(watch_client).await?;
    let start = Instant::now();
    let per = args.pods / args.deployments;
    for d in 0..args.deployments {
        let replicas = if d + 1 == args.deployments {
            args.pods - per * (args.deployments - 1)
        } else {
            per
        };
        client
            .expect(
                "POST",
                "/apis/apps/v1/namespaces/default/deployments",
                "application/json",
                &deployment(&format!("load-{d}"), replicas),
                201,
            )
            .await?;
    }
    let mut samples = Vec::new();
    let (mut last, mut last_t) = (0usize, start);
    let mut scheduled_in = None;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (b, r) = (
            bound.load(Ordering::Relaxed),
            running.load(Ordering::Relaxed),
        );
        let now = Instant::now();
        if scheduled_in.is_none() {
            samples.push((b - last) as f64 / (now - last_t).as_secs_f64());
            (last, last_t) = (b, now);
            if b >= args.pods {
                scheduled_in = Some(start.elapsed());
            }
        }
        if r >= args.pods {
            break;
        }
        if samples.len().is_multiple_of(10)
            || scheduled_in.is_some() && start.elapsed().as_secs().is_multiple_of(10)
        {
            eprintln!("{:.0?}: {b} bound, {r} running", start.elapsed());
        }
        anyhow::ensure!(
            start.elapsed() < GIVE_UP,
            "gave up: {b} bound, {r} running of {}",
            args.pods
        );
    }
    let running_in = start.elapsed();
    let scheduled_in = scheduled_in.unwrap_or(running_in);
    // Windows before the first bind (the controllers creating pods) are not scheduling time.
    let first = samples.iter().position(|s| *s > 0.0).unwrap_or(0);
    let mut windows: Vec<f64> = samples[first..].to_vec();
    windows.sort_by(f64::total_cmp);
    let average = args.pods as f64 / scheduled_in.as_secs_f64();

    let peak = |pid: Option<u32>| pid.map(|p| usage(p).1).unwrap_or(0.0);
    let (api_peak, kcm_peak, sched_peak) = (peak(api_pid), peak(kcm.pid()), peak(scheduler.pid()));
    let now_rss = |pid: Option<u32>| pid.map(rss_mib).unwrap_or(0.0);
    let control_plane_rss = now_rss(api_pid) + now_rss(kcm.pid()) + now_rss(scheduler.pid());
    let mut kubelet_rss: Vec<f64> = kubelets.iter().map(|k| now_rss(k.pid())).collect();
    kubelet_rss.sort_by(f64::total_cmp);
    let kubelets_total: f64 = kubelet_rss.iter().sum();
    if args.header {
        println!(
            "| hollow nodes | pods | nodes Ready in s | pods bound in s | average pods/s | p50 | \
             p90 | p99 | all Running in s | apiserver peak RSS MiB | controller manager peak \
             RSS MiB | scheduler peak RSS MiB | control plane RSS MiB now | kubelet RSS MiB \
             median | kubelets RSS GiB total |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
    }
    println!(
        "| {} | {} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} | \
         {:.0} | {:.0} | {:.1} | {:.2} |",
        args.nodes,
        args.pods,
        nodes_ready_in.as_secs_f64(),
        scheduled_in.as_secs_f64(),
        average,
        percentile(&windows, 0.5),
        percentile(&windows, 0.9),
        percentile(&windows, 0.99),
        running_in.as_secs_f64(),
        api_peak,
        kcm_peak,
        sched_peak,
        control_plane_rss,
        percentile(&kubelet_rss, 0.5),
        kubelets_total / 1024.0,
    );
    Ok(())
}
