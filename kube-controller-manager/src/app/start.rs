//! Starting the enabled controllers for one leadership term: each registers its handlers on
//! the shared informers, then the informers start, sync, and every controller runs until the
//! term ends.

use super::config::Config;
use crate::controller::{ControllerContext, registry};
use client_go_rs::config::ClientConfig;
use client_go_rs::events::{EventBroadcaster, KubeCoreV1Sink};
use client_go_rs::informers::SharedInformerFactory;
use component_base::healthz::{Health, HealthCheck};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Started first, as upstream: other controllers' service accounts need its tokens.
const FIRST: &str = "serviceaccount-token-controller";

/// Runs the enabled controllers until `term` is cancelled, then waits for them to stop.
pub async fn run_controllers(
    config: &Config,
    client_config: ClientConfig,
    health: &Health,
    term: CancellationToken,
) -> anyhow::Result<()> {
    let client = client_config.build_client()?;
    let informers = Arc::new(SharedInformerFactory::new(client.clone(), None));
    let broadcaster = Arc::new(EventBroadcaster::new(Arc::new(KubeCoreV1Sink::new(
        client.clone(),
    ))));
    let base = ControllerContext {
        client,
        client_config: Arc::new(client_config),
        informers: informers.clone(),
        broadcaster: broadcaster.clone(),
        settings: Arc::new(config.settings.clone()),
        shutdown: term.clone(),
        controller_name: "",
    };

    let mut order: Vec<&'static str> = config.controllers.iter().copied().collect();
    order.sort_by_key(|name| *name != FIRST);
    let mut tasks = tokio::task::JoinSet::new();
    for name in order {
        if name == "garbage-collector-controller" && !config.settings.enable_garbage_collector {
            tracing::info!(
                controller = name,
                "skipping controller: --enable-garbage-collector=false"
            );
            continue;
        }
        let Some(init) = registry::initializer(name) else {
            tracing::warn!(controller = name, "skipping controller: not implemented");
            continue;
        };
        let ctx = ControllerContext {
            controller_name: name,
            ..base.clone()
        };
        match init(ctx).await {
            Ok(Some(running)) => {
                tracing::info!(controller = name, "started controller");
                let alive = Arc::new(AtomicBool::new(true));
                health.healthz.add(controller_check(name, alive.clone()));
                tasks.spawn(async move {
                    running.await;
                    alive.store(false, Ordering::Relaxed);
                });
            }
            Ok(None) => {}
            Err(err) => {
                tracing::error!(controller = name, "error starting controller: {err:#}");
                anyhow::bail!("error starting controller {name}: {err:#}");
            }
        }
        if !config.controller_start_interval.is_zero() {
            tokio::time::sleep(config.controller_start_interval).await;
        }
    }
    informers.start(&term);
    if !informers.wait_for_cache_sync(&term).await {
        tracing::info!("informers did not sync before the term ended");
    }
    // Informers requested after the first start (the garbage collector's, for resources it
    // discovers) are started by their owners; this catches any registered while syncing.
    informers.start(&term);
    term.cancelled().await;
    let stopped = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .is_err()
    {
        tracing::warn!("controllers still running 10s after the term ended; leaving them");
    }
    informers.shutdown().await;
    Ok(())
}

/// `/healthz/<controller>`: fails once the controller's run loop has returned.
fn controller_check(name: &'static str, alive: Arc<AtomicBool>) -> HealthCheck {
    HealthCheck::new(name, move || {
        let ok = alive.load(Ordering::Relaxed);
        async move {
            if ok {
                Ok(())
            } else {
                Err("controller stopped".into())
            }
        }
    })
}
