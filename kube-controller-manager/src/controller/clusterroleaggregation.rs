//! ClusterRole aggregation by aggregationRule label selectors.

mod rules;

use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};

const NAME: &str = "ClusterRoleAggregator";

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("clusterrole-aggregation-controller").await?;
        let informer = ctx.informers.informer::<ClusterRole>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller(NAME);
        let lister = informer.lister();
        // Any ClusterRole's change may change what any aggregated role selects, so every
        // aggregated role is looked at again (as upstream's enqueueAll).
        let enqueue_all = {
            let queue = queue.clone();
            let lister = lister.clone();
            move || {
                for role in lister.list() {
                    if role.aggregation_rule.is_some()
                        && let Some(name) = role.metadata.name.clone()
                    {
                        queue.add(name);
                    }
                }
            }
        };
        let (on_add, on_update, on_delete) =
            (enqueue_all.clone(), enqueue_all.clone(), enqueue_all);
        informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |_, _| on_add())
                .on_update(move |_, _| on_update())
                .on_delete(move |_| on_delete()),
        );
        let shutdown = ctx.shutdown.clone();
        let api: Api<ClusterRole> = Api::all(client);
        let running: super::Running = Box::pin(async move {
            run_workers_when_synced(
                NAME,
                &[&*informer],
                queue,
                5,
                shutdown,
                move |name: String| {
                    let api = api.clone();
                    let lister = lister.clone();
                    async move { sync(&api, &lister, &name).await }
                },
            )
            .await;
        });
        Ok(Some(running))
    })
}

async fn sync(
    api: &Api<ClusterRole>,
    lister: &Lister<ClusterRole>,
    name: &str,
) -> anyhow::Result<()> {
    let Some(role) = lister.get(name) else {
        return Ok(());
    };
    let Some(wanted) = rules::aggregated_rules(&role, &lister.list()) else {
        return Ok(());
    };
    // Absent and empty rules are the same (upstream compares semantically).
    if role.rules.as_deref().unwrap_or_default() == wanted.as_slice() {
        return Ok(());
    }
    let mut updated = (*role).clone();
    updated.rules = Some(wanted);
    api.replace(name, &PostParams::default(), &updated)
        .await
        .with_context(|| format!("updating rules of aggregated ClusterRole {name}"))?;
    Ok(())
}
