//! bootstrap-signer (upstream's `bootstrap.Signer`): signs the `kubeconfig` of the
//! `kube-public/cluster-info` ConfigMap with every bootstrap token meant for signing, as
//! `jws-kubeconfig-<token-id>` keys, so a joining node can trust what it reads.

use super::token::{NAMESPACE, SECRET_TYPE, detached_signature, expiration, signing_token};
use crate::controller::serviceaccount::is_not_found;
use crate::controller::worker::run_workers;
use crate::controller::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "bootstrap-signer-controller";
const CONFIG_MAP_NAMESPACE: &str = "kube-public";
const CONFIG_MAP_NAME: &str = "cluster-info";
const KUBECONFIG_KEY: &str = "kubeconfig";
const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";
/// The one key of the queue: every change leads to the same sync of cluster-info.
const KEY: &str = "cluster-info";

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for("bootstrap-signer").await?;
    let config_maps = ctx.informers.informer::<ConfigMap>();
    let secrets = ctx.informers.informer::<Secret>();
    let queue: RateLimitingQueue<String> =
        RateLimitingQueue::default_controller("bootstrap_signer_queue");

    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
    let is_cluster_info = |cm: &ConfigMap| {
        cm.metadata.namespace.as_deref() == Some(CONFIG_MAP_NAMESPACE)
            && cm.metadata.name.as_deref() == Some(CONFIG_MAP_NAME)
    };
    config_maps.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |cm: &Arc<ConfigMap>, _| {
                if is_cluster_info(cm) {
                    q1.add(KEY.into());
                }
            })
            .on_update(move |_, cm: &Arc<ConfigMap>| {
                if is_cluster_info(cm) {
                    q2.add(KEY.into());
                }
            }),
    );
    let is_token = |s: &Secret| {
        s.metadata.namespace.as_deref() == Some(NAMESPACE)
            && s.type_.as_deref() == Some(SECRET_TYPE)
    };
    let (q4, q5) = (queue.clone(), queue.clone());
    secrets.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<Secret>, _| {
                if is_token(s) {
                    q3.add(KEY.into());
                    schedule_expiry(&q3, s);
                }
            })
            .on_update(move |_, s: &Arc<Secret>| {
                if is_token(s) {
                    q4.add(KEY.into());
                    schedule_expiry(&q4, s);
                }
            })
            .on_delete(move |d: &Deleted<Secret>| {
                if is_token(d.object()) {
                    q5.add(KEY.into());
                }
            }),
    );

    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        if !config_maps.wait_for_cache_sync(&shutdown).await
            || !secrets.wait_for_cache_sync(&shutdown).await
        {
            return;
        }
        let cm_lister = config_maps.lister();
        let secret_lister = secrets.lister();
        run_workers(NAME, queue, 1, shutdown, move |_key: String| {
            let (client, cm_lister, secret_lister) =
                (client.clone(), cm_lister.clone(), secret_lister.clone());
            async move { sync(&client, &cm_lister, &secret_lister).await }
        })
        .await;
    })))
}

/// An expiring token's signature must go when it expires.
fn schedule_expiry(queue: &RateLimitingQueue<String>, secret: &Secret) {
    if let Some(Ok(at)) = expiration(secret) {
        let wait = at - jiff::Timestamp::now().as_second();
        if wait > 0 {
            queue.add_after(KEY.into(), Duration::from_secs(wait as u64 + 1));
        }
    }
}

/// cluster-info's data with the signatures of `tokens` (id, secret) replacing the old ones;
/// `None` when there is no kubeconfig to sign or nothing changes.
pub(crate) fn signed_data(
    data: &BTreeMap<String, String>,
    tokens: &[(String, String)],
) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    let Some(content) = data.get(KUBECONFIG_KEY) else {
        return Ok(None);
    };
    let mut new: BTreeMap<String, String> = data
        .iter()
        .filter(|(k, _)| !k.starts_with(SIGNATURE_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (id, secret) in tokens {
        new.insert(
            format!("{SIGNATURE_PREFIX}{id}"),
            detached_signature(content, id, secret)?,
        );
    }
    Ok((&new != data).then_some(new))
}

async fn sync(
    client: &kube::Client,
    config_maps: &Lister<ConfigMap>,
    secrets: &Lister<Secret>,
) -> anyhow::Result<()> {
    let Some(cm) = config_maps
        .namespace(CONFIG_MAP_NAMESPACE)
        .get(CONFIG_MAP_NAME)
    else {
        return Ok(());
    };
    let now = jiff::Timestamp::now().as_second();
    let tokens: Vec<(String, String)> = secrets
        .namespace(NAMESPACE)
        .list()
        .iter()
        .filter_map(|s| signing_token(s, now))
        .collect();
    let data = cm.data.clone().unwrap_or_default();
    let Some(new) = signed_data(&data, &tokens)? else {
        return Ok(());
    };
    let mut updated = (*cm).clone();
    updated.data = Some(new);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), CONFIG_MAP_NAMESPACE);
    match api
        .replace(CONFIG_MAP_NAME, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(err).context("signing kube-public/cluster-info"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn signatures_follow_the_tokens() {
        let token = ("abcdef".to_string(), "0123456789abcdef".to_string());
        let sig = detached_signature("kc", "abcdef", "0123456789abcdef").unwrap();
        let signed = data(&[("kubeconfig", "kc"), ("jws-kubeconfig-abcdef", &sig)]);
        let cases = [
            (
                "unsigned",
                data(&[("kubeconfig", "kc")]),
                vec![token.clone()],
                Some(signed.clone()),
            ),
            ("signed", signed.clone(), vec![token.clone()], None),
            (
                "token gone",
                signed.clone(),
                vec![],
                Some(data(&[("kubeconfig", "kc")])),
            ),
            (
                "no kubeconfig",
                data(&[("other", "x")]),
                vec![token.clone()],
                None,
            ),
        ];
        for (what, before, tokens, want) in cases {
            assert_eq!(signed_data(&before, &tokens).unwrap(), want, "{what}");
        }
    }
}
