//! The run phase: serve health, metrics and configz, and (with `--leader-elect`) campaign for
//! the `kube-system/kube-controller-manager` Lease, running the controllers only while leading.

use super::config::{COMPONENT, Config};
use super::start;
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
    let outcome = lead_and_work(&config, &handlers, shutdown.clone()).await;
    // Losing the lease stops the process too, as upstream's scheduler exits then.
    shutdown.cancel();
    handlers.health.mark_shutting_down();
    if let Some(server) = server {
        server.wait().await;
    }
    outcome
}

async fn lead_and_work(
    config: &Config,
    handlers: &DebugHandlers,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let client_config = client_go_rs::config::load_client_config(
        config.client.kubeconfig.as_deref(),
        config.client.master.as_deref(),
        None,
    )
    .await?
    .with_rate_limit(config.kube_api_qps, config.kube_api_burst)
    .with_user_agent(client_go_rs::config::default_user_agent(
        COMPONENT,
        component_base::version::GIT_VERSION,
    ));
    let le = &config.leader_election;
    if !le.leader_elect {
        return start::run_controllers(config, client_config, &handlers.health, shutdown).await;
    }
    let client = client_config.build_client()?;
    let health = handlers.health.clone();
    let failed = std::sync::Arc::new(parking_lot::Mutex::new(None));
    let failure = failed.clone();
    let owned = config.clone();
    let work = move |leading: CancellationToken| async move {
        if let Err(err) = start::run_controllers(&owned, client_config, &health, leading).await {
            *failure.lock() = Some(err);
        }
    };
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
    run_while_leading(client, &settings, shutdown, work).await?;
    match failed.lock().take() {
        Some(err) => Err(err),
        None => Ok(()),
    }
}
