//! The run phase: build the profiles' frameworks, the queue and the cache, sync the informers,
//! serve health, metrics and configz, and (with `--leader-elect`) schedule only while holding
//! the `kube-system/kube-scheduler` Lease, as upstream.

use super::config::{COMPONENT, Config};
use crate::cache::Cache;
use crate::framework::parallelize::Parallelizer;
use crate::framework::registry::PodNominator;
use crate::framework::{Framework, PluginContext};
use crate::queue::{QueueOptions, SchedulingQueue};
use crate::scheduler::{Scheduler, Shared, event_handlers};
use anyhow::Context;
use client_go_rs::events::{EventBroadcaster, KubeEventsV1Sink};
use client_go_rs::informers::SharedInformerFactory;
use client_go_rs::leaderelection::{LeaseSettings, run_while_leading};
use component_base::debug::DebugHandlers;
use component_base::signals::shutdown_on_signals;
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A binding the informer never confirms is forgotten after this, so its resources free up.
const ASSUMED_POD_TTL: Duration = Duration::from_secs(15 * 60);

/// How long shutdown waits for queued events to be written.
const EVENT_FLUSH_GRACE: Duration = Duration::from_secs(2);

/// Runs kube-scheduler until SIGTERM or SIGINT, or until it loses its lease.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    let handlers = DebugHandlers::default();
    handlers.configz.set("componentconfig", config.configz());
    tracing::info!(
        version = component_base::version::GIT_VERSION,
        "starting kube-scheduler"
    );
    let server = config
        .secure_serving
        .start(COMPONENT, handlers.clone().service(), shutdown.clone())
        .await?;
    let outcome = prepare_and_lead(&config, shutdown.clone()).await;
    // Losing the lease stops the process too, as upstream's scheduler exits then.
    shutdown.cancel();
    handlers.health.mark_shutting_down();
    if let Some(server) = server {
        server.wait().await;
    }
    outcome
}

async fn client(config: &Config) -> anyhow::Result<kube::Client> {
    Ok(client_go_rs::config::load_client_config(
        config.client.kubeconfig.as_deref(),
        config.client.master.as_deref(),
        None,
    )
    .await?
    .with_rate_limit(config.qps, config.burst)
    .with_user_agent(client_go_rs::config::default_user_agent(
        COMPONENT,
        component_base::version::GIT_VERSION,
    ))
    .build_client()?)
}

/// Builds everything and syncs the caches before campaigning, so a follower that takes over
/// schedules at once from warm caches.
async fn prepare_and_lead(config: &Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let client = client(config).await?;
    let settings = &config.scheduler;
    let factory = Arc::new(SharedInformerFactory::new(client.clone(), None));
    let broadcaster = EventBroadcaster::new(Arc::new(KubeEventsV1Sink::new(client.clone())));
    let identity = client_go_rs::leaderelection::default_identity();
    let parallelizer = Parallelizer::new(settings.parallelism);
    let nominator: Arc<OnceLock<Arc<dyn PodNominator>>> = Arc::new(OnceLock::new());
    let registry = crate::plugins::in_tree_registry();
    let mut profiles = HashMap::new();
    let mut recorders = HashMap::new();
    for profile in &settings.profiles {
        let recorder = broadcaster.new_recorder(profile.scheduler_name.clone(), identity.clone());
        let ctx = PluginContext {
            client: client.clone(),
            informers: factory.clone(),
            parallelizer: parallelizer.clone(),
            recorder: Some(recorder.clone()),
            nominator: nominator.clone(),
        };
        let fw = Framework::new(profile, &registry, ctx).map_err(|e| {
            anyhow::anyhow!("initializing profile {:?}: {e}", profile.scheduler_name)
        })?;
        profiles.insert(profile.scheduler_name.clone(), Arc::new(fw));
        recorders.insert(profile.scheduler_name.clone(), recorder);
    }
    let queue = Arc::new(SchedulingQueue::new(
        profiles.clone(),
        QueueOptions {
            pod_initial_backoff: settings.pod_initial_backoff,
            pod_max_backoff: settings.pod_max_backoff,
            ..QueueOptions::default()
        },
    ));
    let _ = nominator.set(queue.clone() as Arc<dyn PodNominator>);
    let cache = Arc::new(Cache::new(ASSUMED_POD_TTL));
    let pods = factory.informer_with::<Pod>(event_handlers::pod_informer_options());
    let shared = Arc::new(Shared {
        cache: cache.clone(),
        queue: queue.clone(),
        profiles,
        client: client.clone(),
        recorders,
        pods: pods.lister(),
        binding_slots: Arc::new(tokio::sync::Semaphore::new(
            crate::scheduler::MAX_BINDINGS_IN_FLIGHT,
        )),
    });
    event_handlers::register(&shared, &factory);
    factory.start(&shutdown);
    if !factory.wait_for_cache_sync(&shutdown).await {
        return Ok(());
    }
    cache.run_cleanup(Duration::from_secs(1), shutdown.clone());
    tracing::info!(profiles = settings.profiles.len(), "caches synced");

    let percentage = settings.percentage_of_nodes_to_score;
    let work = move |leading: CancellationToken| async move {
        queue.run(leading.clone());
        let scheduler = Scheduler::new(shared, percentage);
        // The scheduling loop gets its own thread: its Filter and Score work is CPU-bound
        // and would otherwise hold a runtime worker that the informers and bindings need.
        let handle = tokio::runtime::Handle::current();
        let spawned = std::thread::Builder::new()
            .name("scheduling-loop".into())
            .spawn(move || handle.block_on(scheduler.run()));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "starting the scheduling loop");
            return;
        }
        leading.cancelled().await;
        queue.close();
    };
    let le = &config.leader_election;
    let outcome = if le.leader_elect {
        let lease = LeaseSettings {
            namespace: le.leader_elect_resource_namespace.clone(),
            name: le
                .leader_elect_resource_name
                .clone()
                .unwrap_or_else(|| COMPONENT.into()),
            lease_duration: le.leader_elect_lease_duration.0,
            renew_deadline: le.leader_elect_renew_deadline.0,
            retry_period: le.leader_elect_retry_period.0,
        };
        run_while_leading(client, &lease, shutdown.clone(), work)
            .await
            .context("leader election")
    } else {
        work(shutdown.clone()).await;
        Ok(())
    };
    // Informer handlers and plugins still hold recorders, which keep the writer open: give
    // queued events a moment to be written, then go.
    let _ = tokio::time::timeout(EVENT_FLUSH_GRACE, broadcaster.shutdown()).await;
    outcome
}
