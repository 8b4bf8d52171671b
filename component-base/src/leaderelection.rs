//! The leader election flags of leader-elected components (upstream's "Leader election flags").

use crate::duration::GoDuration;
use clap::Args;

/// `--leader-elect` and its lease settings. The resource name defaults to the component's name.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Leader election flags")]
pub struct LeaderElectionOptions {
    /// Start a leader election client and gain leadership before executing the main loop.
    /// Enable this when running replicated components for high availability.
    #[arg(long, value_name = "bool", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect: bool,

    /// The duration that non-leader candidates will wait after observing a leadership renewal
    /// until attempting to acquire leadership of a led but unrenewed leader slot.
    #[arg(long, value_name = "duration", default_value = "15s")]
    pub leader_elect_lease_duration: GoDuration,

    /// The interval between attempts by the acting master to renew a leadership slot before it
    /// stops leading. This must be less than the lease duration.
    #[arg(long, value_name = "duration", default_value = "10s")]
    pub leader_elect_renew_deadline: GoDuration,

    /// The duration the clients should wait between attempting acquisition and renewal of a
    /// leadership.
    #[arg(long, value_name = "duration", default_value = "2s")]
    pub leader_elect_retry_period: GoDuration,

    /// The type of resource object that is used for locking during leader election. Supported
    /// options are 'leases'.
    #[arg(long, value_name = "string", default_value = "leases")]
    pub leader_elect_resource_lock: String,

    /// The name of resource object that is used for locking during leader election
    /// (default: the component's name).
    #[arg(long, value_name = "string")]
    pub leader_elect_resource_name: Option<String>,

    /// The namespace of resource object that is used for locking during leader election.
    #[arg(long, value_name = "string", default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
}

impl LeaderElectionOptions {
    /// Validates the settings and names the lock after `component` unless a name was given.
    pub fn complete(mut self, component: &str) -> Result<Self, String> {
        self.validate()?;
        self.leader_elect_resource_name
            .get_or_insert_with(|| component.to_string());
        Ok(self)
    }

    /// Checks the settings as upstream's validation does.
    pub fn validate(&self) -> Result<(), String> {
        if !self.leader_elect {
            return Ok(());
        }
        let (lease, renew, retry) = (
            self.leader_elect_lease_duration.0,
            self.leader_elect_renew_deadline.0,
            self.leader_elect_retry_period.0,
        );
        if lease.is_zero() || renew.is_zero() || retry.is_zero() {
            return Err("leaderElection durations must be greater than zero".into());
        }
        if lease <= renew {
            return Err(format!(
                "invalid --leader-elect-renew-deadline: {}: must be less than leaseDuration ({})",
                self.leader_elect_renew_deadline, self.leader_elect_lease_duration
            ));
        }
        if self.leader_elect_resource_lock != "leases" {
            return Err(format!(
                "invalid --leader-elect-resource-lock: {:?}: supported values: \"leases\"",
                self.leader_elect_resource_lock
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        le: LeaderElectionOptions,
    }

    fn validate(args: &[&str]) -> Result<(), String> {
        let mut full = vec!["x"];
        full.extend_from_slice(args);
        Cmd::try_parse_from(full)
            .map_err(|e| e.to_string())?
            .le
            .validate()
    }

    #[test]
    fn defaults_are_upstreams_and_valid() {
        let cmd = Cmd::try_parse_from(["x"]).unwrap();
        assert!(cmd.le.leader_elect);
        assert_eq!(cmd.le.leader_elect_lease_duration.to_string(), "15s");
        assert_eq!(cmd.le.leader_elect_resource_namespace, "kube-system");
        assert_eq!(validate(&[]), Ok(()));
    }

    #[test]
    fn validation_cases() {
        assert_eq!(
            validate(&["--leader-elect=false", "--leader-elect-lease-duration=0"]),
            Ok(())
        );
        assert!(validate(&["--leader-elect-renew-deadline=20s"]).is_err());
        assert!(validate(&["--leader-elect-retry-period=0"]).is_err());
        assert!(validate(&["--leader-elect-resource-lock=endpoints"]).is_err());
        assert!(validate(&["--leader-elect-lease-duration=fast"]).is_err());
        assert!(validate(&["--leader-elect=maybe"]).is_err());
    }
}
