//! Running a component's work only while it leads, as upstream's scheduler and controller
//! manager do with `--leader-elect`: campaign on a Lease, work while leading, and treat losing
//! the lease (other than at shutdown) as fatal.

use super::config::{ConfigError, LeaderElectionConfig};
use super::elector::{LeaderCallbacks, LeaderElector};
use super::lock::{KubeLeaseLock, LeaseLock};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where and how a component campaigns (its `--leader-elect-*` flags).
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    pub namespace: String,
    pub name: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// Why a leader-elected run ended badly.
#[derive(Debug, thiserror::Error)]
pub enum LeaderRunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Leadership ended while the process was not shutting down; upstream components exit.
    #[error("leaderelection lost")]
    Lost,
}

/// This process's identity in elections: `<hostname>_<random>`, as upstream builds it, so two
/// processes on one host are told apart.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let suffix: u64 = rand::random();
    format!("{host}_{suffix:016x}")
}

/// Campaigns with `settings` through `client` and runs `work` while leading; `work` gets a
/// token cancelled when leadership ends. Returns `Ok` once `shutdown` fires (the lease is
/// released so a standby takes over at once), `Err(Lost)` if leadership ended otherwise.
pub async fn run_while_leading<F, Fut>(
    client: kube::Client,
    settings: &LeaseSettings,
    shutdown: CancellationToken,
    work: F,
) -> Result<(), LeaderRunError>
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let lock: Arc<dyn LeaseLock> = Arc::new(KubeLeaseLock::new(
        client,
        &settings.namespace,
        &settings.name,
    ));
    run_with_lock(lock, settings, default_identity(), shutdown, work).await
}

/// [`run_while_leading`] with any lock and identity.
pub async fn run_with_lock<F, Fut>(
    lock: Arc<dyn LeaseLock>,
    settings: &LeaseSettings,
    identity: String,
    shutdown: CancellationToken,
    work: F,
) -> Result<(), LeaderRunError>
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut config = LeaderElectionConfig::new(identity);
    config.lease_duration = settings.lease_duration;
    config.renew_deadline = settings.renew_deadline;
    config.retry_period = settings.retry_period;
    config.release_on_cancel = true;
    LeaderElector::new(config, lock, LeaderCallbacks::new(work))?
        .run(shutdown.clone())
        .await;
    if shutdown.is_cancelled() {
        Ok(())
    } else {
        Err(LeaderRunError::Lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaderelection::InMemoryLeaseLock;

    fn settings() -> LeaseSettings {
        LeaseSettings {
            namespace: "kube-system".into(),
            name: "x".into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn works_while_leading_and_ends_cleanly_on_shutdown() {
        let lock: Arc<dyn LeaseLock> = Arc::new(InMemoryLeaseLock::new("kube-system", "x"));
        let shutdown = CancellationToken::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let stop = shutdown.clone();
        let run = tokio::spawn(async move {
            let work = move |leading: CancellationToken| async move {
                let _ = tx.send("working");
                leading.cancelled().await;
                let _ = tx.send("stopped");
            };
            run_with_lock(lock, &settings(), "me".into(), stop, work).await
        });
        assert_eq!(rx.recv().await, Some("working"));
        shutdown.cancel();
        assert!(run.await.unwrap().is_ok());
        assert_eq!(rx.recv().await, Some("stopped"));
    }

    #[test]
    fn identities_differ_per_process_start() {
        assert_ne!(default_identity(), default_identity());
        assert!(default_identity().contains('_'));
    }
}
