//! serviceaccount-controller: every namespace that is not terminating gets the `default`
//! ServiceAccount, recreated when it is deleted (upstream's `ServiceAccountsController`).

use super::super::worker::run_workers;
use super::super::{ControllerContext, InitResult};
use super::{is_already_exists, status_code};
use anyhow::Context as _;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use std::sync::Arc;

const NAME: &str = "serviceaccount-controller";
/// The accounts every namespace gets (upstream's default `ServiceAccounts` option).
pub(crate) const MANAGED_ACCOUNTS: &[&str] = &["default"];

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for("service-account-controller").await?;
    let namespaces = ctx.informers.informer::<Namespace>();
    let accounts = ctx.informers.informer::<ServiceAccount>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller(NAME);

    let q = queue.clone();
    let q2 = queue.clone();
    namespaces.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |ns: &Arc<Namespace>, _| {
                if let Some(name) = &ns.metadata.name {
                    q.add(name.clone());
                }
            })
            .on_update(move |_, ns: &Arc<Namespace>| {
                if let Some(name) = &ns.metadata.name {
                    q2.add(name.clone());
                }
            }),
    );
    let q = queue.clone();
    accounts.add_event_handler(EventHandlerFuncs::new().on_delete(
        move |deleted: &Deleted<ServiceAccount>| {
            let sa = deleted.object();
            if let (Some(ns), Some(name)) = (&sa.metadata.namespace, &sa.metadata.name)
                && MANAGED_ACCOUNTS.contains(&name.as_str())
            {
                q.add(ns.clone());
            }
        },
    ));

    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        if !namespaces.wait_for_cache_sync(&shutdown).await
            || !accounts.wait_for_cache_sync(&shutdown).await
        {
            return;
        }
        let ns_lister = namespaces.lister();
        let sa_lister = accounts.lister();
        run_workers(NAME, queue, 1, shutdown, move |ns: String| {
            let client = client.clone();
            let ns_lister = ns_lister.clone();
            let sa_lister = sa_lister.clone();
            async move { sync(&client, &ns_lister, &sa_lister, &ns).await }
        })
        .await;
    })))
}

fn is_active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating")
}

/// The managed accounts `namespace` lacks (none when it is gone or terminating).
pub(crate) fn missing_accounts(
    namespace: Option<&Namespace>,
    existing: impl Fn(&str) -> bool,
) -> Vec<&'static str> {
    match namespace {
        Some(ns) if is_active(ns) => MANAGED_ACCOUNTS
            .iter()
            .copied()
            .filter(|name| !existing(name))
            .collect(),
        _ => Vec::new(),
    }
}

async fn sync(
    client: &kube::Client,
    namespaces: &Lister<Namespace>,
    accounts: &Lister<ServiceAccount>,
    ns: &str,
) -> anyhow::Result<()> {
    let namespace = namespaces.get(ns);
    let missing = missing_accounts(namespace.as_deref(), |name| {
        accounts.namespace(ns).get(name).is_some()
    });
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    for name in missing {
        let sa = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &sa).await {
            Ok(_) => tracing::info!(namespace = ns, name, "created service account"),
            Err(err) if is_already_exists(&err) => {}
            // The namespace started terminating after the cache saw it.
            Err(err) if status_code(&err) == Some(403) && is_terminating_error(&err) => {}
            Err(err) => {
                return Err(err).with_context(|| format!("creating service account {ns}/{name}"));
            }
        }
    }
    Ok(())
}

fn is_terminating_error(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.message.contains("terminat"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NamespaceStatus;

    fn ns(phase: Option<&str>) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some("ns".into()),
                ..Default::default()
            },
            status: phase.map(|p| NamespaceStatus {
                phase: Some(p.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_active_namespaces_lacking_default_need_it() {
        let active = ns(Some("Active"));
        let terminating = ns(Some("Terminating"));
        let cases: &[(&str, Option<&Namespace>, bool, Vec<&str>)] = &[
            (
                "active without default",
                Some(&active),
                false,
                vec!["default"],
            ),
            ("active with default", Some(&active), true, vec![]),
            ("terminating", Some(&terminating), false, vec![]),
            ("gone", None, false, vec![]),
        ];
        for (what, namespace, has, want) in cases {
            assert_eq!(&missing_accounts(*namespace, |_| *has), want, "{what}");
        }
    }
}
