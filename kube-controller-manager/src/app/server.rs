//! The run phase: serve health, metrics and configz, and (with `--leader-elect`) campaign for
//! the `kube-system/kube-controller-manager` Lease, running the controllers only while leading
//! (the controllers arrive with their issue; leading today means holding the lease).

use super::config::{COMPONENT, Config};
use client_go_rs::leaderelection::{LeaseSettings, run_while_leading};
use component_base::debug::DebugHandlers;
use component_base::signals::shutdown_on_signals;
use tokio_util::sync::CancellationToken;

/// Runs kube-controller-manager until SIGTERM or SIGINT, or until it loses its lease.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    let handlers = DebugHandlers::default();
    handlers
        .configz
        .set("kubecontrollermanager.config.k8s.io", config.configz());
    tracing::info!(
        version = component_base::version::GIT_VERSION,
        "starting kube-controller-manager"
    );
    let server = config
        .secure_serving
        .start(COMPONENT, handlers.clone().service(), shutdown.clone())
        .await?;
    let outcome = lead_and_work(&config, shutdown.clone()).await;
    // Losing the lease stops the process too, as upstream's scheduler exits then.
    shutdown.cancel();
    handlers.health.mark_shutting_down();
    if let Some(server) = server {
        server.wait().await;
    }
    outcome
}

async fn lead_and_work(config: &Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let enabled = config.controllers.clone();
    let work = move |leading: CancellationToken| async move {
        tracing::info!(controllers = ?enabled, "leading: the controllers are not implemented yet");
        leading.cancelled().await;
    };
    let le = &config.leader_election;
    if !le.leader_elect {
        work(shutdown).await;
        return Ok(());
    }
    let client = client_go_rs::config::component_client(
        config.client.kubeconfig.as_deref(),
        config.client.master.as_deref(),
        COMPONENT,
        component_base::version::GIT_VERSION,
    )
    .await?;
    let settings = LeaseSettings {
        namespace: le.leader_elect_resource_namespace.clone(),
        name: le
            .leader_elect_resource_name
            .clone()
            .unwrap_or_else(|| COMPONENT.into()),
        lease_duration: le.leader_elect_lease_duration.0,
        renew_deadline: le.leader_elect_renew_deadline.0,
        retry_period: le.leader_elect_retry_period.0,
    };
    Ok(run_while_leading(client, &settings, shutdown, work).await?)
}
