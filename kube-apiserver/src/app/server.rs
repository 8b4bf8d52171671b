//! The run phase: open storage, start the watch caches, create the bootstrap objects, serve the
//! API over HTTPS until a signal asks to stop, failing readiness while draining.

use super::bootstrap;
use super::config::{Config, StorageConfig};
use super::router::Router;
use super::security;
use crate::audit::body::TapRequestBodies;
use crate::http::discovery::DiscoveryHandler;
use crate::http::{into_hyper, stack};
use crate::registry::services::ServiceAllocator;
use crate::rest::state::ApiState;
use crate::storage::backend::Backend;
use crate::storage::embedded::EmbeddedBackend;
use crate::storage::etcd::EtcdBackend;
use anyhow::Context;
use component_base::debug::DebugHandlers;
use component_base::healthz::HealthCheck;
use component_base::serving::{serve, tls_config_with};
use component_base::signals::shutdown_on_signals;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The name of the generated serving certificate pair in `--cert-dir`, as upstream's.
const CERT_PAIR_NAME: &str = "apiserver";

/// Runs kube-apiserver until SIGTERM or SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    // Opened first: a log path that cannot be written stops the start, as upstream's.
    let auditor = config.audit.build().with_context(|| {
        let path = config
            .audit
            .log
            .as_ref()
            .map(|l| l.path.display().to_string());
        format!(
            "opening the audit log --audit-log-path={}",
            path.unwrap_or_default()
        )
    })?;
    tracing::info!(
        version = component_base::version::GIT_VERSION,
        "starting kube-apiserver"
    );
    let (backend, state) = tokio::select! {
        started = start_storage_retrying(&config, &shutdown) => started?,
        _ = shutdown.cancelled() => return Ok(()),
    };
    state.set_kubelet_client(config.kubelet_client.clone());
    bootstrap::ensure(&state, &config)
        .await
        .context("creating the bootstrap objects")?;
    super::bootstrap_flowcontrol::maintain_dangling_conditions(state.clone(), shutdown.clone());
    let (mut stack_config, reviewers) = security::install(&config, &state, &shutdown).await?;
    stack_config.audit = auditor.clone();
    // Stored CRDs are served before the first request, as upstream's readiness waits for them.
    crate::crd::controller::start(state.clone(), shutdown.clone())
        .await
        .context("serving the stored CustomResourceDefinitions")?;
    if let Some(interval) = config.compaction_interval {
        tokio::spawn(compact_periodically(
            backend.clone(),
            interval,
            shutdown.clone(),
        ));
    }

    let debug = DebugHandlers::default();
    let storage = backend.clone();
    debug
        .health
        .add_everywhere(HealthCheck::new("etcd", move || {
            let storage = storage.clone();
            async move {
                storage
                    .current_revision()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }));
    let address = format!(
        "{}:{}",
        config.advertise_address, config.secure_serving.secure_port
    );
    let crds = state.crds.clone();
    let router = Router {
        state,
        reviewers,
        debug: debug.clone(),
        discovery: DiscoveryHandler::new(address).with_crds(crds),
    };
    let handler = tower::service_fn(move |req| {
        let router = router.clone();
        async move { Ok::<_, Infallible>(router.route(req).await) }
    });
    // Audited writes record their bodies as the handler reads them (crate::audit::body).
    let service = into_hyper(TapRequestBodies::new(
        stack(handler, &stack_config),
        auditor.is_some(),
    ));

    let addr = config
        .secure_serving
        .listen_addr()
        .context("the apiserver needs --secure-port")?;
    let mut tls_settings = config.secure_serving.tls_settings()?;
    if let Some(ca) = &config.client_ca_file {
        let pem = std::fs::read(ca)
            .with_context(|| format!("reading --client-ca-file {}", ca.display()))?;
        tls_settings = tls_settings.with_client_ca_pem(&pem, &ca.display().to_string())?;
    }
    let tls = tls_config_with(
        config.secure_serving.serving_cert(CERT_PAIR_NAME)?,
        &tls_settings,
    )?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("failed to listen on {addr}"))?;
    let server = serve(listener, Some(tls), service, shutdown.clone())?;
    tracing::info!(address = %server.local_addr, "serving securely");
    shutdown.cancelled().await;
    debug.health.mark_shutting_down();
    server.wait().await;
    if let Some(auditor) = &auditor {
        // Batch mode: what is still buffered reaches the log before the process exits.
        auditor.backend.shutdown();
    }
    Ok(())
}

/// Opens storage and starts the watch caches, retrying while etcd cannot be reached (it may be
/// starting beside us), as upstream's apiserver waits for etcd; a local store that cannot be
/// opened is fatal.
async fn start_storage_retrying(
    config: &Config,
    shutdown: &CancellationToken,
) -> anyhow::Result<(Arc<dyn Backend>, Arc<ApiState>)> {
    let mut delay = Duration::from_millis(100);
    loop {
        // Caches started by a failed attempt stop with it.
        let attempt = shutdown.child_token();
        let started = async {
            let backend = open_storage(&config.storage).await?;
            let services = Arc::new(ServiceAllocator::new(
                backend.clone(),
                config.service_cluster_ip_range,
                config.service_node_port_range.clone(),
            ));
            let state = ApiState::start(backend.clone(), services, attempt.clone())
                .await
                .context("starting the watch caches")?;
            anyhow::Ok((backend, state))
        };
        let result = started.await;
        if result.is_err() {
            attempt.cancel();
        }
        match result {
            Ok(started) => return Ok(started),
            Err(err) if matches!(config.storage, StorageConfig::Etcd { .. }) => {
                tracing::warn!("{err:#}; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            Err(err) => return Err(err),
        }
    }
}

async fn open_storage(storage: &StorageConfig) -> anyhow::Result<Arc<dyn Backend>> {
    Ok(match storage {
        StorageConfig::Embedded { data_dir } => {
            std::fs::create_dir_all(data_dir)
                .with_context(|| format!("creating --data-dir {}", data_dir.display()))?;
            Arc::new(
                EmbeddedBackend::open(data_dir)
                    .with_context(|| format!("opening the store in {}", data_dir.display()))?,
            )
        }
        StorageConfig::Etcd { servers, prefix } => Arc::new(
            EtcdBackend::connect(servers, prefix)
                .await
                .with_context(|| format!("connecting to etcd at {}", servers.join(",")))?,
        ),
    })
}

/// Compacts history older than one interval, as upstream's apiserver asks etcd to: each tick
/// compacts to the revision seen at the previous tick.
async fn compact_periodically(
    backend: Arc<dyn Backend>,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let mut previous = None;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if let Some(revision) = previous
            && let Err(err) = backend.compact(revision).await
        {
            tracing::warn!(%err, revision, "compaction failed");
        }
        previous = backend.current_revision().await.ok();
    }
}
