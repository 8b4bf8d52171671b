//! The command line of kube-scheduler, with upstream's flag names and sections.
//!
//! Upstream lets a leader election flag override `--config` only when it was given on the
//! command line, so the options remember which flags were: clap's derive cannot, hence the
//! hand-written `Parser` over the derived [`Flags`].

use super::config::Config;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, CommandFactory, FromArgMatches, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::client_flags::KubeconfigOptions;
use component_base::duration::GoDuration;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The port upstream's scheduler serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 10259;

/// `--config` and `--write-config-to`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Misc flags")]
pub struct ConfigFileOptions {
    /// The path to the configuration file.
    #[arg(long, value_name = "string")]
    pub config: Option<PathBuf>,

    /// If set, write the configuration values to this file and exit.
    #[arg(long, value_name = "string")]
    pub write_config_to: Option<PathBuf>,
}

/// Upstream's "Deprecated flags": they apply only without `--config`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Deprecated flags")]
pub struct DeprecatedOptions {
    /// DEPRECATED: enable profiling via web interface host:port/debug/pprof/. This parameter
    /// is ignored if a config file is specified in --config.
    #[arg(long, value_name = "bool", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub profiling: bool,

    /// DEPRECATED: enable lock contention profiling, if profiling is enabled. This parameter
    /// is ignored if a config file is specified in --config.
    #[arg(long, value_name = "bool", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub contention_profiling: bool,

    /// DEPRECATED: content type of requests sent to apiserver. This parameter is ignored if a
    /// config file is specified in --config.
    #[arg(
        long,
        value_name = "string",
        default_value = "application/vnd.kubernetes.protobuf"
    )]
    pub kube_api_content_type: String,

    /// DEPRECATED: QPS to use while talking with kubernetes apiserver. This parameter is
    /// ignored if a config file is specified in --config.
    #[arg(long, value_name = "float32", default_value_t = 50.0)]
    pub kube_api_qps: f32,

    /// DEPRECATED: burst to use while talking with kubernetes apiserver. This parameter is
    /// ignored if a config file is specified in --config.
    #[arg(long, value_name = "int32", default_value_t = 100)]
    pub kube_api_burst: i32,

    /// DEPRECATED: the maximum time a pod can stay in unschedulablePods. If a pod stays in
    /// unschedulablePods for longer than this value, the pod will be moved from
    /// unschedulablePods to backoffQ or activeQ. This flag is deprecated and will be removed
    /// in a future version.
    #[arg(long, value_name = "duration", default_value = "5m0s")]
    pub pod_max_in_unschedulable_pods_duration: GoDuration,
}

/// The flags as clap parses them.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-scheduler",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes scheduler is a control plane process which assigns Pods to Nodes.",
    long_about = "The Kubernetes scheduler is a control plane process which assigns Pods to Nodes. \
The scheduler determines which Nodes are valid placements for each Pod in the scheduling queue \
according to constraints and available resources, ranks them, and binds the Pod to the best one."
)]
pub struct Flags {
    #[command(flatten)]
    pub config_file: ConfigFileOptions,
    #[command(flatten)]
    pub client: KubeconfigOptions,
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub deprecated: DeprecatedOptions,
    #[command(flatten)]
    pub leader_election: LeaderElectionOptions,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// kube-scheduler's flags, and which of them the command line set.
#[derive(Debug, Clone)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub write_config_to: Option<PathBuf>,
    pub client: KubeconfigOptions,
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub deprecated: DeprecatedOptions,
    pub leader_election: LeaderElectionOptions,
    pub common: CommonFlags,
    /// Long names of the flags given on the command line (`leader-elect`, `kube-api-qps`).
    pub changed: BTreeSet<String>,
}

impl Options {
    /// Whether the command line set the flag `--name`.
    pub fn changed(&self, name: &str) -> bool {
        self.changed.contains(name)
    }

    fn from_flags(flags: Flags, changed: BTreeSet<String>) -> Self {
        Options {
            config: flags.config_file.config,
            write_config_to: flags.config_file.write_config_to,
            client: flags.client,
            secure_serving: flags.secure_serving,
            deprecated: flags.deprecated,
            leader_election: flags.leader_election,
            common: flags.common,
            changed,
        }
    }

    fn to_flags(&self) -> Flags {
        Flags {
            config_file: ConfigFileOptions {
                config: self.config.clone(),
                write_config_to: self.write_config_to.clone(),
            },
            client: self.client.clone(),
            secure_serving: self.secure_serving.clone(),
            deprecated: self.deprecated.clone(),
            leader_election: self.leader_election.clone(),
            common: self.common.clone(),
        }
    }
}

/// The long names of the flags whose value came from the command line.
fn changed_flags(matches: &ArgMatches) -> BTreeSet<String> {
    Flags::command()
        .get_arguments()
        .filter(|arg| {
            matches
                .try_contains_id(arg.get_id().as_str())
                .unwrap_or(false)
                && matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine)
        })
        .filter_map(|arg| arg.get_long().map(str::to_string))
        .collect()
}

impl CommandFactory for Options {
    fn command() -> Command {
        Flags::command()
    }

    fn command_for_update() -> Command {
        Flags::command_for_update()
    }
}

impl FromArgMatches for Options {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        let changed = changed_flags(matches);
        let flags = Flags::from_arg_matches_mut(matches)?;
        Ok(Self::from_flags(flags, changed))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.update_from_arg_matches_mut(&mut matches.clone())
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        let mut changed = changed_flags(matches);
        let mut flags = self.to_flags();
        flags.update_from_arg_matches_mut(matches)?;
        changed.extend(std::mem::take(&mut self.changed));
        *self = Self::from_flags(flags, changed);
        Ok(())
    }
}

impl Parser for Options {}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lists_only_given_flags() {
        let o = Options::try_parse_from([
            "kube-scheduler",
            "--leader-elect=false",
            "--kube-api-qps",
            "7",
            "--config=/x.yaml",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let want: BTreeSet<String> = ["config", "kube-api-qps", "leader-elect"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(o.changed, want);
        assert!(!o.leader_election.leader_elect);
        assert_eq!(o.deprecated.kube_api_qps, 7.0);
        assert_eq!(o.config, Some(PathBuf::from("/x.yaml")));
        let none = Options::try_parse_from(["kube-scheduler"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(none.changed.is_empty());
        assert_eq!(
            none.deprecated.pod_max_in_unschedulable_pods_duration.0,
            std::time::Duration::from_secs(300)
        );
    }
}
