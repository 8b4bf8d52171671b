//! Garbage collection along ownerReferences, as upstream's garbage collector: monitors on every
//! deletable resource feed a dependency graph; attemptToDelete deletes dependents whose owners
//! are all gone and finishes foreground deletions; attemptToOrphan releases orphaning owners.
//! Discovery runs again every 30 s, and soon after a CRD or APIService changes, so resources
//! that appear (custom resources) get monitors and those that vanish lose them.

mod collector;
mod discovery;
mod graph;
mod monitors;
mod patch;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use client_go_rs::informers::SharedInformerFactory;
use client_go_rs::workqueue::RateLimitingQueue;
use collector::Shared;
use futures::future::BoxFuture;
use monitors::Monitors;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Upstream's resync period of the monitored resources.
const DISCOVERY_PERIOD: Duration = Duration::from_secs(30);
/// How long a discovery failure waits before the next try at startup.
const DISCOVERY_RETRY: Duration = Duration::from_secs(2);
/// How long after a CRD or APIService change discovery runs again (changes come in bursts).
const API_CHANGE_DELAY: Duration = Duration::from_millis(500);
/// Upstream's count of failed resource syncs.
const SYNC_ERRORS: &str = "garbagecollector_controller_resources_sync_error_total";
/// How long new monitors may take to list before the collector goes on without them.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        if !ctx.settings.enable_garbage_collector {
            tracing::info!("garbage collector disabled by --enable-garbage-collector=false");
            return Ok(None);
        }
        let client = ctx.client_for("generic-garbage-collector").await?;
        let shared = Arc::new(Shared {
            graph: Default::default(),
            mapper: Default::default(),
            client,
            delete_queue: RateLimitingQueue::default_controller(
                "garbage_collector_attempt_to_delete",
            ),
            orphan_queue: RateLimitingQueue::default_controller(
                "garbage_collector_attempt_to_orphan",
            ),
            recorder: ctx.recorder("garbage-collector-controller"),
            api_changed: Default::default(),
        });
        // Exported from the start, as upstream's counter is (at zero).
        metrics::counter!(SYNC_ERRORS).absolute(0);
        let workers = ctx.settings.concurrent_gc_syncs.max(1);
        Ok(Some(Box::pin(run(
            shared,
            ctx.informers.clone(),
            ctx.shutdown.clone(),
            workers,
        )) as super::Running))
    })
}

async fn run(
    shared: Arc<Shared>,
    factory: Arc<SharedInformerFactory>,
    shutdown: CancellationToken,
    workers: usize,
) {
    let mut monitors = Monitors::default();
    while !resync(&shared, &mut monitors, &factory, &shutdown).await {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(DISCOVERY_RETRY) => {}
        }
    }
    tracing::info!(
        monitors = monitors.len(),
        "garbage collector synced, starting workers"
    );

    let s = shared.clone();
    let deleting = run_workers(
        "garbagecollector-attempt-to-delete",
        shared.delete_queue.clone(),
        workers,
        shutdown.clone(),
        move |uid: String| {
            let s = s.clone();
            async move { s.attempt_to_delete(uid).await }
        },
    );
    let s = shared.clone();
    let orphaning = run_workers(
        "garbagecollector-attempt-to-orphan",
        shared.orphan_queue.clone(),
        workers,
        shutdown.clone(),
        move |uid: String| {
            let s = s.clone();
            async move { s.attempt_to_orphan(uid).await }
        },
    );
    let rediscover = async {
        let mut tick = tokio::time::interval(DISCOVERY_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {
                    resync(&shared, &mut monitors, &factory, &shutdown).await;
                }
                _ = shared.api_changed.notified() => {
                    // A CRD is served a moment after it is created or changed; its update
                    // (Established) pokes again if this pass is too early.
                    tokio::time::sleep(API_CHANGE_DELAY).await;
                    resync(&shared, &mut monitors, &factory, &shutdown).await;
                }
            }
        }
    };
    tokio::join!(deleting, orphaning, rediscover);
}

/// One discovery pass: refreshes the kind mapping and the monitors, starts and waits for the
/// new ones. False if discovery failed.
async fn resync(
    shared: &Arc<Shared>,
    monitors: &mut Monitors,
    factory: &SharedInformerFactory,
    shutdown: &CancellationToken,
) -> bool {
    let found = match discovery::discover(&shared.client).await {
        Ok(found) => found,
        Err(err) => {
            tracing::warn!("garbage collector discovery failed: {err:#}");
            sync_error();
            return false;
        }
    };
    if !found.failed.is_empty() {
        tracing::warn!(failed = ?found.failed, "garbage collector discovery was partial");
        sync_error();
    }
    {
        let mut mapper = shared.mapper.write();
        if found.failed.is_empty() {
            *mapper = found.mapper;
        } else {
            // Keep what the failing groups mapped to before.
            mapper.extend(found.mapper);
        }
    }
    let changes = monitors.sync(factory, &found.deletable, !found.failed.is_empty(), shared);
    if changes.added.is_empty() && changes.removed.is_empty() {
        return true;
    }
    tracing::info!(added = ?changes.added, removed = ?changes.removed, "garbage collector monitors changed");
    factory.start(shutdown);
    if tokio::time::timeout(SYNC_TIMEOUT, monitors.wait_for_sync(shutdown))
        .await
        .is_err()
    {
        tracing::warn!("garbage collector monitors did not sync in {SYNC_TIMEOUT:?}, going on");
    }
    true
}

/// Upstream's count of failed resource syncs (discovery failures, partial ones included).
fn sync_error() {
    metrics::counter!(SYNC_ERRORS).increment(1);
}
