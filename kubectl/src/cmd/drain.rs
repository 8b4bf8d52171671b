//! `kubectl drain`: cordons the nodes, then evicts (or deletes) their pods through the
//! `policy/v1` Eviction API, retrying while a PodDisruptionBudget refuses, and waits for them
//! to go, with upstream's filters, messages and exit status.

mod filters;

use super::cordon::{node_line, select_nodes, set_unschedulable};
use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::ApiError;
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use filters::{Policy, Status};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Flags of `kubectl drain`.
#[derive(Debug, Clone, Args)]
pub struct DrainArgs {
    /// NODE
    pub nodes: Vec<String>,
    /// Continue even if there are pods that do not declare a controller.
    #[arg(long)]
    pub force: bool,
    /// Ignore DaemonSet-managed pods.
    #[arg(long)]
    pub ignore_daemonsets: bool,
    /// Continue even if there are pods using emptyDir (local data that will be deleted when
    /// the node is drained).
    #[arg(long, alias = "delete-local-data")]
    pub delete_emptydir_data: bool,
    /// Period of time in seconds given to each pod to terminate gracefully. If negative, the
    /// default value specified in the pod will be used.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int")]
    pub grace_period: i64,
    /// The length of time to wait before giving up, zero means infinite
    #[arg(long, default_value = "0s", value_name = "duration")]
    pub timeout: String,
    /// Label selector to filter pods on the node
    #[arg(long, value_name = "string")]
    pub pod_selector: Option<String>,
    /// Selector (label query) to filter on
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Force drain to use delete, even if eviction is supported.
    #[arg(long)]
    pub disable_eviction: bool,
    /// Ignore errors occurred between drain nodes in group.
    #[arg(long)]
    pub ignore_errors: bool,
    /// If pod DeletionTimestamp older than N seconds, skip waiting for the pod.
    #[arg(long, default_value_t = 0, value_name = "int")]
    pub skip_wait_for_delete_timeout: i64,
    /// Return large lists in chunks rather than all at once.
    #[arg(long, default_value_t = 500, value_name = "int")]
    pub chunk_size: i64,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

/// Go's duration text (`90s`, `1m30s`, `0`) in a `Duration`.
fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let bad = || {
        anyhow::anyhow!(
            "invalid argument {text:?} for \"--timeout\" flag: time: invalid duration {text:?}"
        )
    };
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let n: f64 = rest[..split].parse().map_err(|_| bad())?;
        rest = &rest[split..];
        let end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        total += n * match &rest[..end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        rest = &rest[end..];
    }
    Ok(Duration::from_secs_f64(total))
}

/// Go's `time.Duration` text for whole seconds (`10s`, `1m30s`).
fn duration_text(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}

/// Go's `%v` of an API error: the message alone.
fn plain(err: &anyhow::Error) -> String {
    match err.downcast_ref::<ApiError>() {
        Some(api) => api.message.clone(),
        None => crate::errors::render(err)
            .trim_start_matches("error: ")
            .to_owned(),
    }
}

struct Drainer<'a> {
    factory: &'a Factory,
    args: &'a DrainArgs,
    dry_run: DryRun,
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Drainer<'_> {
    async fn pods_for_deletion(&self, node: &str) -> anyhow::Result<Vec<(Value, Status)>> {
        let mut query = vec![("fieldSelector".to_owned(), format!("spec.nodeName={node}"))];
        if let Some(s) = &self.args.pod_selector {
            query.push(("labelSelector".to_owned(), s.clone()));
        }
        let list = self
            .factory
            .get(&resource::with_query("/api/v1/pods", &query))
            .await?;
        let policy = Policy {
            force: self.args.force,
            ignore_daemonsets: self.args.ignore_daemonsets,
            delete_emptydir_data: self.args.delete_emptydir_data,
        };
        let mut out = Vec::new();
        for pod in list["items"].as_array().cloned().unwrap_or_default() {
            let ns = pod
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            // The DaemonSet lookups a pod needs, made before the (synchronous) filter runs.
            let mut ds_found: Option<Result<bool, String>> = None;
            if let Some(owner) = pod
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .and_then(|rs| {
                    rs.iter()
                        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
                })
                && owner.get("kind").and_then(Value::as_str) == Some("DaemonSet")
            {
                let name = owner.get("name").and_then(Value::as_str).unwrap_or("");
                let path = format!("/apis/apps/v1/namespaces/{ns}/daemonsets/{name}");
                ds_found = Some(match self.factory.get(&path).await {
                    Ok(_) => Ok(true),
                    Err(e)
                        if e.downcast_ref::<ApiError>()
                            .is_some_and(ApiError::is_not_found) =>
                    {
                        Ok(false)
                    }
                    Err(e) => Err(plain(&e)),
                });
            }
            let status = filters::evaluate(&pod, policy, |_| ds_found.clone().unwrap_or(Ok(true)));
            out.push((pod, status));
        }
        Ok(out)
    }

    fn timed_out(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Evicts (or deletes) one pod and waits for it to be gone.
    async fn remove(&self, pod: &Value) -> anyhow::Result<()> {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        let uid = pod["metadata"]["uid"].as_str().unwrap_or("");
        let pod_path = format!("/api/v1/namespaces/{ns}/pods/{name}");
        let mut options = json!({});
        if self.args.grace_period >= 0 {
            options["gracePeriodSeconds"] = json!(self.args.grace_period);
        }
        if self.dry_run == DryRun::Server {
            options["dryRun"] = json!(["All"]);
        }
        let using_eviction = !self.args.disable_eviction;
        loop {
            match self.dry_run {
                _ if !using_eviction => {}
                DryRun::Server => println!("evicting pod {ns}/{name} (server dry run)"),
                _ => println!("evicting pod {ns}/{name}"),
            }
            if self.timed_out() {
                anyhow::bail!(
                    "error when evicting pods/{name:?} -n {ns:?}: global timeout reached: {}",
                    duration_text(self.timeout)
                );
            }
            let result = if using_eviction {
                let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": name, "namespace": ns}, "deleteOptions": options});
                self.factory
                    .request(
                        http::Method::POST,
                        &format!("{pod_path}/eviction"),
                        Some((serde_json::to_vec(&body)?, "application/json")),
                        None,
                    )
                    .await
            } else {
                let mut query = Vec::new();
                if self.args.grace_period >= 0 {
                    query.push((
                        "gracePeriodSeconds".into(),
                        self.args.grace_period.to_string(),
                    ));
                }
                query.extend(self.dry_run.query());
                self.factory
                    .request(
                        http::Method::DELETE,
                        &resource::with_query(&pod_path, &query),
                        None,
                        None,
                    )
                    .await
            };
            match result {
                Ok(_) => break,
                Err(e) => match e.downcast_ref::<ApiError>() {
                    Some(api) if api.is_not_found() => return Ok(()),
                    Some(api) if api.code == 429 => {
                        eprintln!(
                            "error when evicting pods/{name:?} -n {ns:?} (will retry after 5s): {}",
                            api.message
                        );
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                    _ if using_eviction => {
                        anyhow::bail!("error when evicting pods/{name:?} -n {ns:?}: {}", plain(&e))
                    }
                    _ => return Err(e),
                },
            }
        }
        if self.dry_run == DryRun::Server {
            return Ok(());
        }
        loop {
            match self.factory.get(&pod_path).await {
                Err(e)
                    if e.downcast_ref::<ApiError>()
                        .is_some_and(ApiError::is_not_found) =>
                {
                    break;
                }
                Ok(p) if p["metadata"]["uid"].as_str().unwrap_or("") != uid => break,
                Err(e) => return Err(e),
                Ok(_) if self.timed_out() => anyhow::bail!(
                    "error when waiting for pod {name:?} in namespace {ns:?} to terminate: global timeout reached: {}",
                    duration_text(self.timeout)
                ),
                Ok(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
        let verb = if using_eviction { "evicted" } else { "deleted" };
        println!("pod/{name} {verb}");
        Ok(())
    }

    /// Upstream's `deleteOrEvictPodsSimple`: one node's pods, or why they cannot go.
    async fn drain_node(&self, node: &str) -> anyhow::Result<()> {
        let list = self.pods_for_deletion(node).await?;
        let errors = filters::errors(&list);
        if !errors.is_empty() {
            anyhow::bail!("{}", aggregate(&errors));
        }
        let warnings = filters::warnings(&list);
        if !warnings.is_empty() {
            eprintln!("Warning: {warnings}");
        }
        let pods: Vec<&Value> = list
            .iter()
            .filter(|(_, s)| s.deletes())
            .map(|(p, _)| p)
            .collect();
        if self.dry_run == DryRun::Client {
            for pod in &pods {
                println!(
                    "evicting pod {}/{} (dry run)",
                    pod["metadata"]["namespace"].as_str().unwrap_or(""),
                    pod["metadata"]["name"].as_str().unwrap_or("")
                );
            }
            return Ok(());
        }
        let results = futures::future::join_all(pods.iter().map(|p| self.remove(p))).await;
        let failures: Vec<String> = results
            .into_iter()
            .filter_map(|r| r.err().map(|e| plain(&e)))
            .collect();
        if failures.is_empty() {
            return Ok(());
        }
        let err = aggregate(&failures);
        if let Ok(pending) = self.pods_for_deletion(node).await {
            let left: Vec<&Value> = pending
                .iter()
                .filter(|(_, s)| s.deletes())
                .map(|(p, _)| p)
                .collect();
            if !left.is_empty() {
                eprintln!("There are pending pods in node {node:?} when an error occurred: {err}");
                for p in left {
                    eprintln!("pod/{}", p["metadata"]["name"].as_str().unwrap_or(""));
                }
            }
        }
        anyhow::bail!("{err}")
    }
}

/// Go's aggregate error text: the error alone, or `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

pub async fn run(global: &GlobalOptions, args: &DrainArgs) -> anyhow::Result<()> {
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let timeout = parse_duration(&args.timeout)?;
    let factory = Factory::new(global).await?;
    let nodes = select_nodes(&factory, &args.nodes, args.selector.as_deref(), "drain").await?;
    for node in &nodes {
        match set_unschedulable(&factory, node, true, dry_run).await {
            Ok(line) => println!("{line}"),
            Err(err) => eprintln!(
                "error: unable to cordon node {:?}: {}",
                mutate::name_of(node),
                plain(&err)
            ),
        }
    }
    let drainer = Drainer {
        factory: &factory,
        args,
        dry_run,
        deadline: (!timeout.is_zero()).then(|| Instant::now() + timeout),
        timeout,
    };
    let mut fatal: Vec<String> = Vec::new();
    let mut remaining: Vec<&str> = Vec::new();
    for node in &nodes {
        let name = mutate::name_of(node);
        match drainer.drain_node(name).await {
            Ok(()) => println!("{}", node_line(node, "drained", dry_run)),
            Err(err) => {
                let text = plain(&err);
                eprintln!(
                    "error: unable to drain node {name:?} due to error: {text}, continuing command..."
                );
                fatal.push(text);
                remaining.push(name);
            }
        }
    }
    if !remaining.is_empty() {
        eprintln!("There are pending nodes to be drained:");
        for name in &remaining {
            eprintln!(" {name}");
        }
    }
    if fatal.is_empty() {
        return Ok(());
    }
    // Upstream prints the aggregate as it is, without the `error: ` every other failure gets,
    // and exits 1.
    eprintln!("{}", aggregate(&fatal));
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        for (text, secs) in [
            ("0s", 0),
            ("0", 0),
            ("10s", 10),
            ("1m30s", 90),
            ("2h", 7200),
        ] {
            assert_eq!(parse_duration(text).unwrap().as_secs(), secs, "{text}");
        }
        assert!(parse_duration("10").is_err());
        assert_eq!(duration_text(Duration::from_secs(10)), "10s");
        assert_eq!(duration_text(Duration::from_secs(90)), "1m30s");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
