//! ResourceQuota usage: `status.hard` mirrors `spec.hard` and `status.used` is recounted from
//! the namespace's objects whenever a quota changes, an object it counts changes, and on the
//! full resync.

mod monitors;
mod pods;
mod usage;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use anyhow::Context as _;
use api_types::resource::{Quantity, ResourceList};
use client_go_rs::informers::{EventHandlerFuncs, SharedInformer};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota,
    ResourceQuotaStatus, Secret, Service,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kube::api::{Api, PostParams};
use monitors::{Monitors, Notify};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use usage::Contents;

const NAME: &str = "resourcequota_primary";

/// Upstream's `--resource-quota-sync-period` default: every quota is recounted this often.
const FULL_RESYNC: Duration = Duration::from_secs(300);

/// How soon a quota counting a resource not served yet (a CRD not installed) looks again.
const UNKNOWN_RETRY: Duration = Duration::from_secs(30);

/// Counts kept by typed informers; any other `count/` resource gets a dynamic monitor.
const TYPED_COUNTS: &[&str] = &[
    "count/configmaps",
    "count/secrets",
    "count/replicationcontrollers",
    "count/resourcequotas",
];

struct Listers {
    quotas: Lister<ResourceQuota>,
    pods: Lister<Pod>,
    services: Lister<Service>,
    claims: Lister<PersistentVolumeClaim>,
    configmaps: Lister<ConfigMap>,
    secrets: Lister<Secret>,
    controllers: Lister<ReplicationController>,
}

/// Enqueues the quotas of `namespace` whose hard resources `tracks` accepts.
fn enqueue_tracking(
    queue: &RateLimitingQueue<String>,
    quotas: &Lister<ResourceQuota>,
    namespace: &str,
    tracks: impl Fn(&str) -> bool,
) {
    for quota in quotas.namespace(namespace).list() {
        if usage::hard_names(&quota).iter().any(|n| tracks(n))
            && let Some(name) = quota.metadata.name.as_deref()
        {
            queue.add(format!("{namespace}/{name}"));
        }
    }
}

/// Registers handlers that recount a namespace's quotas when an object of `K` comes or goes
/// (and on updates `changed` reports as relevant).
fn watch_objects<K>(
    informer: &SharedInformer<K>,
    queue: &RateLimitingQueue<String>,
    quotas: &Lister<ResourceQuota>,
    tracks: fn(&str) -> bool,
    changed: fn(&K, &K) -> bool,
) where
    K: client_go_rs::informers::InformerObject,
{
    let notify = {
        let queue = queue.clone();
        let quotas = quotas.clone();
        move |obj: &K| {
            if let Some(ns) = kube::ResourceExt::namespace(obj) {
                enqueue_tracking(&queue, &quotas, &ns, tracks);
            }
        }
    };
    let (on_add, on_update, on_delete) = (notify.clone(), notify.clone(), notify);
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |o: &Arc<K>, _| on_add(o))
            .on_update(move |old: &Arc<K>, new: &Arc<K>| {
                if changed(old, new) {
                    on_update(new)
                }
            })
            .on_delete(move |d| on_delete(d.object())),
    );
}

fn is_count(name: &str, count: &str) -> bool {
    usage::count_name(name).as_deref() == Some(count)
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("resourcequota-controller").await?;
        let f = &ctx.informers;
        let (quota_inf, pod_inf, svc_inf, pvc_inf, cm_inf, secret_inf, rc_inf) = (
            f.informer::<ResourceQuota>(),
            f.informer::<Pod>(),
            f.informer::<Service>(),
            f.informer::<PersistentVolumeClaim>(),
            f.informer::<ConfigMap>(),
            f.informer::<Secret>(),
            f.informer::<ReplicationController>(),
        );
        let listers = Arc::new(Listers {
            quotas: quota_inf.lister(),
            pods: pod_inf.lister(),
            services: svc_inf.lister(),
            claims: pvc_inf.lister(),
            configmaps: cm_inf.lister(),
            secrets: secret_inf.lister(),
            controllers: rc_inf.lister(),
        });
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller(NAME);
        let quota_key = |q: &ResourceQuota| {
            Some(format!(
                "{}/{}",
                q.metadata.namespace.as_deref()?,
                q.metadata.name.as_deref()?
            ))
        };
        {
            let (add_q, upd_q) = (queue.clone(), queue.clone());
            quota_inf.add_event_handler(
                EventHandlerFuncs::new()
                    .on_add(move |q: &Arc<ResourceQuota>, _| {
                        if let Some(key) = quota_key(q) {
                            add_q.add(key);
                        }
                    })
                    .on_update(move |old: &Arc<ResourceQuota>, new: &Arc<ResourceQuota>| {
                        // Our own status writes change nothing in the spec: no recount.
                        if old.spec != new.spec
                            && let Some(key) = quota_key(new)
                        {
                            upd_q.add(key);
                        }
                    }),
            );
        }
        let q = &listers.quotas;
        watch_objects(&pod_inf, &queue, q, pods::is_pod_resource, |old, new| {
            let now = jiff::Timestamp::now();
            pods::usage(old, now) != pods::usage(new, now)
                || old.spec.as_ref().map(|s| s.active_deadline_seconds)
                    != new.spec.as_ref().map(|s| s.active_deadline_seconds)
        });
        watch_objects(
            &svc_inf,
            &queue,
            q,
            |n| n.starts_with("services") || n == "count/services",
            |old, new| old.spec != new.spec,
        );
        watch_objects(
            &pvc_inf,
            &queue,
            q,
            |n| n.contains("persistentvolumeclaims") || n.contains("requests.storage"),
            |old, new| old.spec != new.spec || old.status != new.status,
        );
        watch_objects(
            &cm_inf,
            &queue,
            q,
            |n| is_count(n, "count/configmaps"),
            |_, _| false,
        );
        watch_objects(
            &secret_inf,
            &queue,
            q,
            |n| is_count(n, "count/secrets"),
            |_, _| false,
        );
        watch_objects(
            &rc_inf,
            &queue,
            q,
            |n| is_count(n, "count/replicationcontrollers"),
            |_, _| false,
        );
        let notify: Notify = {
            let queue = queue.clone();
            let quotas = listers.quotas.clone();
            Arc::new(move |ns: &str, count: &str| {
                enqueue_tracking(&queue, &quotas, ns, |n| is_count(n, count));
            })
        };
        let monitors = Arc::new(Monitors::new(
            ctx.informers.clone(),
            client.clone(),
            ctx.shutdown.clone(),
            notify,
        ));
        let shutdown = ctx.shutdown.clone();
        let workers = ctx.settings.concurrent_resource_quota_syncs;
        let running: super::Running = Box::pin(async move {
            let synced = [
                quota_inf.wait_for_cache_sync(&shutdown).await,
                pod_inf.wait_for_cache_sync(&shutdown).await,
                svc_inf.wait_for_cache_sync(&shutdown).await,
                pvc_inf.wait_for_cache_sync(&shutdown).await,
                cm_inf.wait_for_cache_sync(&shutdown).await,
                secret_inf.wait_for_cache_sync(&shutdown).await,
                rc_inf.wait_for_cache_sync(&shutdown).await,
            ];
            if synced.contains(&false) {
                return;
            }
            let resync_queue = queue.clone();
            let resync_listers = listers.clone();
            let resync_shutdown = shutdown.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = resync_shutdown.cancelled() => return,
                        _ = tokio::time::sleep(FULL_RESYNC) => {}
                    }
                    for quota in resync_listers.quotas.list() {
                        if let Some(key) = quota_key(&quota) {
                            resync_queue.add(key);
                        }
                    }
                }
            });
            let requeue = queue.clone();
            run_workers(NAME, queue, workers, shutdown, move |key: String| {
                let client = client.clone();
                let listers = listers.clone();
                let monitors = monitors.clone();
                let requeue = requeue.clone();
                async move {
                    let unknown = sync(&client, &listers, &monitors, &key).await?;
                    if unknown {
                        requeue.add_after(key, UNKNOWN_RETRY);
                    }
                    Ok(())
                }
            })
            .await;
        });
        Ok(Some(running))
    })
}

/// Recounts one quota and writes its status if it changed. True when some hard resource
/// could not be measured (its resource is not served).
async fn sync(
    client: &kube::Client,
    listers: &Listers,
    monitors: &Monitors,
    key: &str,
) -> anyhow::Result<bool> {
    let Some((namespace, name)) = key.split_once('/') else {
        return Ok(false);
    };
    let Some(quota) = listers.quotas.namespace(namespace).get(name) else {
        return Ok(false);
    };
    let hard_names = usage::hard_names(&quota);
    let mut contents = Contents {
        pods: listers.pods.namespace(namespace).list(),
        services: listers.services.namespace(namespace).list(),
        claims: listers.claims.namespace(namespace).list(),
        counts: BTreeMap::new(),
    };
    let mut unknown = false;
    for count in hard_names.iter().filter_map(|n| usage::count_name(n)) {
        let n = match count.as_str() {
            "count/configmaps" => Some(listers.configmaps.namespace(namespace).list().len()),
            "count/secrets" => Some(listers.secrets.namespace(namespace).list().len()),
            "count/replicationcontrollers" => {
                Some(listers.controllers.namespace(namespace).list().len())
            }
            "count/resourcequotas" => Some(listers.quotas.namespace(namespace).list().len()),
            // Measured from the typed listers by the usage calculation itself.
            "count/pods" | "count/services" | "count/persistentvolumeclaims" => continue,
            other => {
                debug_assert!(!TYPED_COUNTS.contains(&other));
                monitors.count(other, namespace).await
            }
        };
        match n {
            Some(n) => {
                contents.counts.insert(count, n);
            }
            None => unknown = true,
        }
    }
    let used = usage::calculate(&quota, &contents, jiff::Timestamp::now());
    let hard = quota
        .spec
        .as_ref()
        .and_then(|s| s.hard.clone())
        .unwrap_or_default();
    let status = quota.status.as_ref();
    let hard_changed = status.and_then(|s| s.hard.as_ref()).map(parsed) != Some(parsed(&hard));
    let used_changed = status.and_then(|s| s.used.as_ref()).map(parsed) != Some(used.clone());
    if !hard_changed && !used_changed {
        return Ok(unknown);
    }
    let mut updated = (*quota).clone();
    updated.status = Some(ResourceQuotaStatus {
        hard: Some(hard),
        used: Some(
            used.iter()
                .map(|(k, v)| (k.clone(), ApiQuantity(v.canonical())))
                .collect(),
        ),
    });
    Api::<ResourceQuota>::namespaced(client.clone(), namespace)
        .replace_status(name, &PostParams::default(), &updated)
        .await
        .with_context(|| format!("updating status of quota {key}"))?;
    Ok(unknown)
}

/// Quantities compared by value (`1000m` is `1`), as upstream's `quota.Equals`.
fn parsed(list: &BTreeMap<String, ApiQuantity>) -> ResourceList {
    list.iter()
        .map(|(k, v)| (k.clone(), Quantity::parse(&v.0).unwrap_or(Quantity::ZERO)))
        .collect()
}
