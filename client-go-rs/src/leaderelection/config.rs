//! Timing and identity of a candidate, with client-go's validation rules.

use std::time::Duration;

/// client-go's jitter factor for retries; the renew deadline must exceed it times the retry
/// period so a renewal gets at least one retry.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// How a candidate competes for the lock.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// This candidate's unique identity (usually hostname plus a random suffix).
    pub identity: String,
    /// How long non-leaders wait after observing a renewal before they may take over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failing renewal before giving up leadership.
    pub renew_deadline: Duration,
    /// Pause between attempts to acquire or renew.
    pub retry_period: Duration,
    /// Whether to give the lock up (so another candidate can take it at once) when the
    /// election is cancelled while leading.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// The controller-manager and scheduler defaults: 15 s lease, 10 s renew deadline, 2 s
    /// retry period, no release on cancel.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
        }
    }

    /// Checks the rules client-go enforces in `NewLeaderElector`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.identity.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        // The lease's duration is stored in whole seconds.
        if self.lease_duration < Duration::from_secs(1)
            || self.lease_duration.as_secs() > i32::MAX as u64
        {
            return Err(ConfigError::LeaseDuration);
        }
        if self.retry_period.is_zero() || self.renew_deadline.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotLongerThanRenew);
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::RenewNotLongerThanRetry);
        }
        Ok(())
    }

    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// An invalid [`LeaderElectionConfig`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The identity is empty.
    #[error("leader election identity must not be empty")]
    EmptyIdentity,
    /// The lease duration is under a second or does not fit the lease.
    #[error("lease duration must be between 1 s and i32::MAX seconds")]
    LeaseDuration,
    /// The retry period or renew deadline is zero.
    #[error("retry period and renew deadline must be positive")]
    ZeroPeriod,
    /// The lease duration must be longer than the renew deadline.
    #[error("lease duration must be greater than renew deadline")]
    LeaseNotLongerThanRenew,
    /// The renew deadline must be longer than 1.2 retry periods.
    #[error("renew deadline must be greater than retry period * 1.2")]
    RenewNotLongerThanRetry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_rules_are_enforced() {
        assert_eq!(LeaderElectionConfig::new("a").validate(), Ok(()));
        let bad = |f: fn(&mut LeaderElectionConfig)| {
            let mut c = LeaderElectionConfig::new("a");
            f(&mut c);
            c.validate()
        };
        assert_eq!(bad(|c| c.identity.clear()), Err(ConfigError::EmptyIdentity));
        assert_eq!(
            bad(|c| c.lease_duration = Duration::from_millis(500)),
            Err(ConfigError::LeaseDuration)
        );
        assert_eq!(
            bad(|c| c.retry_period = Duration::ZERO),
            Err(ConfigError::ZeroPeriod)
        );
        assert_eq!(
            bad(|c| c.renew_deadline = Duration::from_secs(15)),
            Err(ConfigError::LeaseNotLongerThanRenew)
        );
        assert_eq!(
            bad(|c| c.retry_period = Duration::from_secs(9)),
            Err(ConfigError::RenewNotLongerThanRetry)
        );
    }
}
