//! Issue 9's benchmark (not a test): `kubectl get pods` over `--pods` pods, our kubectl against
//! upstream's v1.33 on the same apiserver (a release process, embedded store). Each variant runs
//! once to warm its discovery cache, then `--runs` times measured: wall time to the first line
//! of output, total wall time, and the requests the apiserver counted (`apiserver_request_total`
//! summed from `/metrics` before and after; LIST pods separately, which shows the chunking:
//! `--chunk-size` 500 by default, one list with `--chunk-size=0`). Medians are printed.
//!
//! `cargo build --release -p kube-apiserver -p kubectl -p e2e --bin bench-kubectl &&
//!  target/release/bench-kubectl --pods 5000 --runs 5`
//! prints a markdown table. Upstream's kubectl is run as the 1.33 binary itself where it is
//! installed, so the dispatcher at /usr/bin/kubectl (a `/version` request and a second process)
//! is not counted against it.

use e2e::apiserver::{ApiServer, Backend};
use e2e::bench::{Client, Flags, run_all};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const UPSTREAM_133: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";

struct Args {
    pods: usize,
    runs: usize,
    creators: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let flags = Flags::from_env("bench-kubectl [--pods N] [--runs N] [--creators N]")?;
    Ok(Args {
        pods: flags.value("--pods", 5000)?,
        runs: flags.value("--runs", 5usize)?.max(1),
        creators: flags.value("--creators", 32usize)?.max(1),
    })
}

/// One measured run.
struct Run {
    first_line: Duration,
    total: Duration,
    lines: usize,
    /// The output without its last column (AGE), to compare the two kubectls.
    without_age: String,
}

/// Runs `binary get pods` and times its output.
fn get_pods(binary: &Path, dir: &Path, extra: &[&str]) -> anyhow::Result<Run> {
    let start = Instant::now();
    let mut child = Command::new(binary)
        .arg(format!("--cache-dir={}", dir.join("cache").display()))
        .args(["get", "pods", "-n", "default"])
        .args(extra)
        .env("KUBECONFIG", dir.join("kubeconfig"))
        .env("HOME", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let first_line = start.elapsed();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr)?;
    }
    let status = child.wait()?;
    let total = start.elapsed();
    anyhow::ensure!(
        status.success(),
        "{} get pods: {status}: {stderr}",
        binary.display()
    );
    let without_age = std::iter::once(line.as_str())
        .chain(rest.lines())
        .map(|l| {
            let mut cells: Vec<&str> = l.split_whitespace().collect();
            cells.pop();
            cells.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Run {
        first_line,
        total,
        lines: usize::from(!line.is_empty()) + rest.lines().count(),
        without_age,
    })
}

/// (all requests, LIST pods requests) the apiserver has counted so far.
async fn request_counts(client: &Client) -> anyhow::Result<(f64, f64)> {
    let response = client
        .send("GET", "/metrics", "application/json", &Value::Null)
        .await?;
    let text = response.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&text);
    let (mut all, mut lists) = (0.0, 0.0);
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        all += value;
        if labels.contains("verb=\"LIST\"") && labels.contains("resource=\"pods\"") {
            lists += value;
        }
    }
    Ok((all, lists))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Variant {
    kubectl: &'static str,
    binary: PathBuf,
    flags: &'static [&'static str],
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let tmp = tempfile::tempdir()?;
    let api = ApiServer::start(&tmp.path().join("api"), Backend::Embedded).await?;
    let mut clients = vec![];
    for _ in 0..4 {
        clients.push(Client::connect(&api).await?);
    }
    let t = Instant::now();
    run_all(&clients, args.creators, args.pods, |client, i| async move {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("pod-{i:05}"), "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
        });
        client
            .expect(
                "POST",
                "/api/v1/namespaces/default/pods",
                "application/json",
                &pod,
                201,
            )
            .await
    })
    .await?;
    eprintln!("{} pods created in {:.1?}", args.pods, t.elapsed());

    let upstream = if Path::new(UPSTREAM_133).exists() {
        PathBuf::from(UPSTREAM_133)
    } else {
        PathBuf::from(e2e::kubectl::UPSTREAM_KUBECTL)
    };
    let ours = e2e::bin("kubectl");
    let variants = [
        ("ours", &ours, &[][..]),
        ("upstream 1.33", &upstream, &[][..]),
        ("ours", &ours, &["--chunk-size=0"][..]),
        ("upstream 1.33", &upstream, &["--chunk-size=0"][..]),
    ]
    .map(|(kubectl, binary, flags)| Variant {
        kubectl,
        binary: binary.clone(),
        flags,
    });

    println!(
        "| kubectl | flags | first line (median) | total (median) | requests | LIST pods requests | requests, cold discovery cache | lines |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut outputs = vec![];
    for (i, v) in variants.iter().enumerate() {
        let dir = tmp.path().join(format!("kubectl-{i}"));
        std::fs::create_dir_all(&dir)?;
        e2e::kubectl::write_kubeconfig(&dir.join("kubeconfig"), &api.url(), &api.ca_file())?;
        // Warm the discovery cache: the measured runs are the steady state.
        let before = request_counts(&clients[0]).await?;
        let cold = get_pods(&v.binary, &dir, v.flags)?;
        let cold_requests = request_counts(&clients[0]).await?.0 - before.0 - 1.0;
        outputs.push(cold.without_age);
        let (mut first, mut total, mut requests, mut lists) = (vec![], vec![], vec![], vec![]);
        let mut lines = 0;
        for _ in 0..args.runs {
            let before = request_counts(&clients[0]).await?;
            let run = get_pods(&v.binary, &dir, v.flags)?;
            let after = request_counts(&clients[0]).await?;
            first.push(run.first_line.as_secs_f64());
            total.push(run.total.as_secs_f64());
            // The first scrape is counted once it has answered: in `after`, not `before`.
            requests.push(after.0 - before.0 - 1.0);
            lists.push(after.1 - before.1);
            lines = run.lines;
        }
        println!(
            "| {} | {} | {:.3} s | {:.3} s | {} | {} | {cold_requests} | {lines} |",
            v.kubectl,
            if v.flags.is_empty() {
                "(default)".to_owned()
            } else {
                v.flags.join(" ")
            },
            median(first),
            median(total),
            median(requests),
            median(lists),
        );
    }
    for (a, b) in [(0, 1), (2, 3)] {
        let same = outputs[a] == outputs[b];
        eprintln!(
            "{} and {}: output {} but for AGE",
            variants[a].kubectl,
            variants[b].kubectl,
            if same { "identical" } else { "DIFFERENT" }
        );
    }
    Ok(())
}
