//! The validated, completed configuration kube-scheduler runs with: the flags and the
//! `--config` file merged with upstream's precedence, defaulted and validated.

use super::options::{DEFAULT_SECURE_PORT, Options};
use crate::apis::config::defaults::set_defaults;
use crate::apis::config::load::{complete, decode};
use crate::apis::config::resolve::resolve_profiles;
use crate::apis::config::{
    KubeSchedulerConfiguration, LeaderElectionConfiguration, ResolvedProfile,
};
use anyhow::{Context, anyhow};
use component_base::client_flags::KubeconfigOptions;
use component_base::duration::GoDuration;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name the scheduler uses for its lease and its serving certificate.
pub const COMPONENT: &str = "kube-scheduler";

/// What the scheduler itself runs with, from the KubeSchedulerConfiguration.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerSettings {
    pub profiles: Vec<ResolvedProfile>,
    pub parallelism: usize,
    /// 0: adaptive (upstream's 50% minus 1% per 125 nodes, at least 5%).
    pub percentage_of_nodes_to_score: i32,
    pub pod_initial_backoff: Duration,
    pub pod_max_backoff: Duration,
    /// `--pod-max-in-unschedulable-pods-duration` (not part of the file, as upstream).
    pub pod_max_in_unschedulable_pods_duration: Duration,
}

impl SchedulerSettings {
    /// The settings of a defaulted, validated configuration.
    pub fn from_config(cfg: &KubeSchedulerConfiguration) -> Self {
        let seconds = |s: Option<i64>, default: u64| {
            Duration::from_secs(s.and_then(|s| u64::try_from(s).ok()).unwrap_or(default))
        };
        SchedulerSettings {
            profiles: resolve_profiles(cfg),
            parallelism: cfg
                .parallelism
                .and_then(|p| usize::try_from(p).ok())
                .filter(|p| *p > 0)
                .unwrap_or(16),
            percentage_of_nodes_to_score: cfg.percentage_of_nodes_to_score.unwrap_or(0),
            pod_initial_backoff: seconds(cfg.pod_initial_backoff_seconds, 1),
            pod_max_backoff: seconds(cfg.pod_max_backoff_seconds, 10),
            pod_max_in_unschedulable_pods_duration: Duration::from_secs(300),
        }
    }
}

impl Default for SchedulerSettings {
    /// The settings of an empty configuration file: upstream's default profile.
    fn default() -> Self {
        Self::from_config(&defaulted_config())
    }
}

/// An empty configuration with every default filled in.
pub fn defaulted_config() -> KubeSchedulerConfiguration {
    let mut cfg = KubeSchedulerConfiguration::default();
    set_defaults(&mut cfg);
    cfg
}

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    pub client: KubeconfigOptions,
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub leader_election: LeaderElectionOptions,
    pub scheduler: SchedulerSettings,
    /// Client connection limits (we speak JSON whatever `contentType` says).
    pub qps: f32,
    pub burst: u32,
    /// The whole defaulted configuration, as `/configz` and `--write-config-to` show it.
    pub component_config: KubeSchedulerConfiguration,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Merges flags and `--config` as upstream's `Options.ApplyTo`: without a file the
    /// deprecated and leader election flags apply; with one only the leader election flags
    /// given on the command line override it.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        // Bad TLS flags are flag errors, not a failure when serving starts.
        options.secure_serving.tls_settings()?;
        let mut cfg = match &options.config {
            None => {
                options.client.validate().map_err(|e| anyhow!(e))?;
                // Checked as flags first so the error names the flag.
                options.leader_election.validate().map_err(|e| anyhow!(e))?;
                let mut cfg = KubeSchedulerConfiguration::default();
                apply_deprecated(&options, &mut cfg);
                cfg
            }
            Some(path) => {
                // The file's kubeconfig replaces --kubeconfig; --master still applies.
                KubeconfigOptions {
                    kubeconfig: None,
                    master: options.client.master.clone(),
                }
                .validate()
                .map_err(|e| anyhow!(e))?;
                read_config_file(path)?
            }
        };
        apply_leader_election(&options, &mut cfg);
        let cfg = complete(cfg).map_err(|e| anyhow!("{e}"))?;
        let config = Self::from_component_config(&options, cfg)?;
        if let Some(path) = &options.write_config_to {
            write_config(path, &config.component_config)?;
            tracing::info!(file = %path.display(), "Wrote configuration");
            std::process::exit(0);
        }
        Ok(config)
    }
}

fn read_config_file(path: &Path) -> anyhow::Result<KubeSchedulerConfiguration> {
    let data = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    decode(&data).map_err(|e| anyhow!(e))
}

/// Writes the configuration as YAML, as upstream's `--write-config-to`.
pub fn write_config(path: &Path, cfg: &KubeSchedulerConfiguration) -> anyhow::Result<()> {
    let yaml = serde_yaml::to_string(cfg)?;
    std::fs::write(path, yaml).with_context(|| format!("writing {}", path.display()))
}

fn apply_deprecated(options: &Options, cfg: &mut KubeSchedulerConfiguration) {
    let d = &options.deprecated;
    let cc = cfg.client_connection.get_or_insert_with(Default::default);
    if let Some(path) = &options.client.kubeconfig {
        cc.kubeconfig = Some(path.display().to_string());
    }
    if options.changed("kube-api-content-type") {
        cc.content_type = Some(d.kube_api_content_type.clone());
    }
    if options.changed("kube-api-qps") {
        cc.qps = Some(d.kube_api_qps);
    }
    if options.changed("kube-api-burst") {
        cc.burst = Some(d.kube_api_burst);
    }
    if options.changed("profiling") {
        cfg.enable_profiling = Some(d.profiling);
    }
    if options.changed("contention-profiling") {
        cfg.enable_contention_profiling = Some(d.contention_profiling);
    }
}

fn apply_leader_election(options: &Options, cfg: &mut KubeSchedulerConfiguration) {
    let flags = &options.leader_election;
    let le: &mut LeaderElectionConfiguration =
        cfg.leader_election.get_or_insert_with(Default::default);
    let changed = |name: &str| options.changed(name);
    if changed("leader-elect") {
        le.leader_elect = Some(flags.leader_elect);
    }
    if changed("leader-elect-lease-duration") {
        le.lease_duration = Some(flags.leader_elect_lease_duration.to_string());
    }
    if changed("leader-elect-renew-deadline") {
        le.renew_deadline = Some(flags.leader_elect_renew_deadline.to_string());
    }
    if changed("leader-elect-retry-period") {
        le.retry_period = Some(flags.leader_elect_retry_period.to_string());
    }
    if changed("leader-elect-resource-lock") {
        le.resource_lock = Some(flags.leader_elect_resource_lock.clone());
    }
    if changed("leader-elect-resource-name") {
        le.resource_name = flags.leader_elect_resource_name.clone();
    }
    if changed("leader-elect-resource-namespace") {
        le.resource_namespace = Some(flags.leader_elect_resource_namespace.clone());
    }
}

fn duration(value: &Option<String>) -> anyhow::Result<GoDuration> {
    value
        .as_deref()
        .unwrap_or_default()
        .parse::<GoDuration>()
        .map_err(|e| anyhow!(e))
}

impl Config {
    fn from_component_config(
        options: &Options,
        cfg: KubeSchedulerConfiguration,
    ) -> anyhow::Result<Self> {
        let le = cfg.leader_election.clone().unwrap_or_default();
        let leader_election = LeaderElectionOptions {
            leader_elect: le.leader_elect.unwrap_or(true),
            leader_elect_lease_duration: duration(&le.lease_duration)?,
            leader_elect_renew_deadline: duration(&le.renew_deadline)?,
            leader_elect_retry_period: duration(&le.retry_period)?,
            leader_elect_resource_lock: le.resource_lock.clone().unwrap_or_default(),
            leader_elect_resource_name: le.resource_name.clone(),
            leader_elect_resource_namespace: le.resource_namespace.clone().unwrap_or_default(),
        }
        .complete(COMPONENT)
        .map_err(|e| anyhow!(e))?;
        let cc = cfg.client_connection.clone().unwrap_or_default();
        let kubeconfig = cc
            .kubeconfig
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(PathBuf::from);
        if options.config.is_some()
            && let Some(path) = &kubeconfig
        {
            std::fs::metadata(path).map_err(|e| {
                anyhow!(
                    "clientConnection.kubeconfig: Invalid value: {:?}: {e}",
                    path.display().to_string()
                )
            })?;
        }
        let mut scheduler = SchedulerSettings::from_config(&cfg);
        scheduler.pod_max_in_unschedulable_pods_duration =
            options.deprecated.pod_max_in_unschedulable_pods_duration.0;
        Ok(Self {
            client: KubeconfigOptions {
                kubeconfig,
                master: options.client.master.clone(),
            },
            secure_serving: options.secure_serving.clone(),
            leader_election,
            scheduler,
            qps: cc.qps.unwrap_or(50.0),
            burst: cc.burst.and_then(|b| u32::try_from(b).ok()).unwrap_or(100),
            component_config: cfg,
        })
    }

    /// The configuration as `/configz` publishes it: the whole defaulted
    /// KubeSchedulerConfiguration.
    pub fn configz(&self) -> Value {
        serde_json::to_value(&self.component_config).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str], file: Option<&str>) -> anyhow::Result<Config> {
        // Its own directory per call (tests run in parallel), removed when the config is read.
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path();
        let mut argv = vec!["kube-scheduler".to_string()];
        argv.extend(args.iter().map(|s| s.to_string()));
        if let Some(body) = file {
            let path = dir.join("config.yaml");
            std::fs::write(
                &path,
                format!(
                    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n{body}"
                ),
            )?;
            argv.push(format!("--config={}", path.display()));
        }
        let options = Options::try_parse_from(argv)?;
        Config::try_from(options)
    }

    #[test]
    fn no_config_file_is_the_defaults() {
        let c = config(&[], None).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.scheduler, SchedulerSettings::default());
        assert_eq!(c.scheduler.parallelism, 16);
        assert_eq!(c.scheduler.pod_max_backoff, Duration::from_secs(10));
        assert_eq!((c.qps, c.burst), (50.0, 100));
        assert!(c.leader_election.leader_elect);
        assert_eq!(
            c.leader_election.leader_elect_resource_name.as_deref(),
            Some("kube-scheduler")
        );
        assert_eq!(
            c.configz()["profiles"][0]["schedulerName"],
            "default-scheduler"
        );
    }

    #[test]
    fn precedence_follows_upstream() {
        struct Case {
            args: &'static [&'static str],
            file: Option<&'static str>,
            leader_elect: bool,
            lease: &'static str,
            qps: f32,
        }
        let cases = [
            // Without a file the deprecated flags apply.
            Case {
                args: &["--kube-api-qps=7", "--leader-elect=false"],
                file: None,
                leader_elect: false,
                lease: "15s",
                qps: 7.0,
            },
            // With one they are ignored, and the file's leader election holds...
            Case {
                args: &["--kube-api-qps=7"],
                file: Some(
                    "leaderElection:\n  leaderElect: false\n  leaseDuration: 30s\nclientConnection:\n  qps: 20\n",
                ),
                leader_elect: false,
                lease: "30s",
                qps: 20.0,
            },
            // ...unless a leader election flag is given on the command line.
            Case {
                args: &["--leader-elect=true"],
                file: Some("leaderElection:\n  leaderElect: false\n  leaseDuration: 30s\n"),
                leader_elect: true,
                lease: "30s",
                qps: 50.0,
            },
        ];
        for case in cases {
            let c = config(case.args, case.file).unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(
                c.leader_election.leader_elect, case.leader_elect,
                "{:?}",
                case.args
            );
            assert_eq!(
                c.leader_election.leader_elect_lease_duration.to_string(),
                case.lease
            );
            assert_eq!(c.qps, case.qps, "{:?}", case.args);
        }
    }

    #[test]
    fn file_settings_reach_the_scheduler() {
        let c = config(
            &[],
            Some("parallelism: 4\npercentageOfNodesToScore: 30\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\nprofiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n      disabled:\n      - name: ImageLocality\n"),
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
        let s = &c.scheduler;
        assert_eq!(s.parallelism, 4);
        assert_eq!(s.percentage_of_nodes_to_score, 30);
        assert_eq!(s.pod_initial_backoff, Duration::from_secs(2));
        assert_eq!(s.pod_max_backoff, Duration::from_secs(20));
        let names: Vec<&str> = s
            .profiles
            .iter()
            .map(|p| p.scheduler_name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(
            s.profiles[0]
                .multi_point
                .iter()
                .any(|(n, _)| n == "ImageLocality")
        );
        assert!(
            !s.profiles[1]
                .multi_point
                .iter()
                .any(|(n, _)| n == "ImageLocality")
        );
    }

    #[test]
    fn bad_files_and_flags_fail() {
        let cases: &[(&[&str], Option<&str>, &str)] = &[
            (
                &[],
                Some("parallelism: -2\n"),
                "parallelism: Invalid value: -2",
            ),
            (
                &["--leader-elect-renew-deadline=20s"],
                None,
                "--leader-elect-renew-deadline",
            ),
            (
                &["--leader-elect-renew-deadline=40s"],
                Some("leaderElection:\n  leaseDuration: 30s\n"),
                "leaderElection.leaseDuration: Invalid value: \"40s\"",
            ),
            (
                &[],
                Some("clientConnection:\n  kubeconfig: /nonexistent/kubeconfig\n"),
                "clientConnection.kubeconfig",
            ),
        ];
        for (args, file, want) in cases {
            let err = config(args, *file)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(err.contains(want), "{args:?} {file:?}: {err}");
        }
    }
}
