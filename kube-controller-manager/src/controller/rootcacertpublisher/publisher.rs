//! Upstream's `rootcacertpublisher.Publisher`: namespace and ConfigMap events enqueue the
//! namespace; a sync creates or rewrites its `kube-root-ca.crt`.

use super::super::serviceaccount::{is_already_exists, is_not_found, status_code};
use super::super::worker::run_workers;
use super::super::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "root-ca-certificate-publisher-controller";
pub(crate) const CONFIG_MAP_NAME: &str = "kube-root-ca.crt";
pub(crate) const DATA_KEY: &str = "ca.crt";
pub(crate) const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
pub(crate) const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the \
kube-apiserver when using internal endpoints such as the internal service IP or \
kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let Some(ca) = super::root_ca(&ctx)? else {
        tracing::info!(
            controller = NAME,
            "skipping controller: no CA bundle to publish (neither --root-ca-file nor a CA in the kubeconfig)"
        );
        return Ok(None);
    };
    let ca = String::from_utf8(ca).context("the root CA bundle is not text")?;
    let client = ctx.client_for("root-ca-cert-publisher").await?;
    let namespaces = ctx.informers.informer::<Namespace>();
    let config_maps = ctx.informers.informer::<ConfigMap>();
    let queue: RateLimitingQueue<String> =
        RateLimitingQueue::default_controller("root_ca_cert_publisher");

    let (q1, q2) = (queue.clone(), queue.clone());
    namespaces.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |ns: &Arc<Namespace>, _| enqueue_ns(&q1, ns))
            .on_update(move |_, ns: &Arc<Namespace>| enqueue_ns(&q2, ns)),
    );
    let (q1, q2) = (queue.clone(), queue.clone());
    config_maps.add_event_handler(
        EventHandlerFuncs::new()
            .on_update(move |_, cm: &Arc<ConfigMap>| enqueue_cm(&q1, cm))
            .on_delete(move |d: &Deleted<ConfigMap>| enqueue_cm(&q2, d.object())),
    );

    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        if !namespaces.wait_for_cache_sync(&shutdown).await
            || !config_maps.wait_for_cache_sync(&shutdown).await
        {
            return;
        }
        let ns_lister = namespaces.lister();
        let cm_lister = config_maps.lister();
        let ca = Arc::new(ca);
        run_workers(NAME, queue, 1, shutdown, move |ns: String| {
            let (client, ns_lister, cm_lister, ca) = (
                client.clone(),
                ns_lister.clone(),
                cm_lister.clone(),
                ca.clone(),
            );
            async move { sync(&client, &ns_lister, &cm_lister, &ca, &ns).await }
        })
        .await;
    })))
}

fn enqueue_ns(queue: &RateLimitingQueue<String>, ns: &Namespace) {
    if let Some(name) = &ns.metadata.name {
        queue.add(name.clone());
    }
}

fn enqueue_cm(queue: &RateLimitingQueue<String>, cm: &ConfigMap) {
    if cm.metadata.name.as_deref() == Some(CONFIG_MAP_NAME)
        && let Some(ns) = &cm.metadata.namespace
    {
        queue.add(ns.clone());
    }
}

/// The ConfigMap to write, when `existing` differs from what should be published.
pub(crate) fn desired(existing: Option<&ConfigMap>, ns: &str, ca: &str) -> Option<ConfigMap> {
    let data = BTreeMap::from([(DATA_KEY.to_string(), ca.to_string())]);
    match existing {
        None => Some(ConfigMap {
            metadata: ObjectMeta {
                name: Some(CONFIG_MAP_NAME.into()),
                namespace: Some(ns.into()),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.to_string(),
                    DESCRIPTION.to_string(),
                )])),
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        }),
        Some(cm) => {
            let described = cm
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
                .is_some_and(|d| !d.is_empty());
            if cm.data.as_ref() == Some(&data) && cm.binary_data.is_none() && described {
                return None;
            }
            let mut cm = cm.clone();
            cm.data = Some(data);
            cm.binary_data = None;
            cm.metadata
                .annotations
                .get_or_insert_default()
                .insert(DESCRIPTION_ANNOTATION.into(), DESCRIPTION.into());
            Some(cm)
        }
    }
}

async fn sync(
    client: &kube::Client,
    namespaces: &Lister<Namespace>,
    config_maps: &Lister<ConfigMap>,
    ca: &str,
    ns: &str,
) -> anyhow::Result<()> {
    let Some(namespace) = namespaces.get(ns) else {
        return Ok(());
    };
    let terminating = namespace.metadata.deletion_timestamp.is_some()
        || namespace.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating");
    if terminating {
        return Ok(());
    }
    let existing = config_maps.namespace(ns).get(CONFIG_MAP_NAME);
    let Some(cm) = desired(existing.as_deref(), ns, ca) else {
        return Ok(());
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let result = if existing.is_some() {
        api.replace(CONFIG_MAP_NAME, &PostParams::default(), &cm)
            .await
    } else {
        api.create(&PostParams::default(), &cm).await
    };
    match result {
        Ok(_) => Ok(()),
        // The cache lags: the next event brings the sync back.
        Err(err) if is_already_exists(&err) || is_not_found(&err) => Ok(()),
        // The namespace is being deleted.
        Err(err) if status_code(&err) == Some(403) && err.to_string().contains("terminat") => {
            Ok(())
        }
        Err(err) => Err(err).with_context(|| format!("publishing {ns}/{CONFIG_MAP_NAME}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(data: &[(&str, &str)], described: bool) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(CONFIG_MAP_NAME.into()),
                namespace: Some("ns".into()),
                resource_version: Some("7".into()),
                annotations: described.then(|| {
                    BTreeMap::from([(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string())])
                }),
                ..Default::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn only_missing_or_drifted_config_maps_are_written() {
        let cases = [
            ("missing", None, true),
            ("published", Some(cm(&[(DATA_KEY, "CA")], true)), false),
            ("edited", Some(cm(&[(DATA_KEY, "other")], true)), true),
            (
                "extra key",
                Some(cm(&[(DATA_KEY, "CA"), ("x", "y")], true)),
                true,
            ),
            (
                "annotation removed",
                Some(cm(&[(DATA_KEY, "CA")], false)),
                true,
            ),
        ];
        for (what, existing, write) in cases {
            let got = desired(existing.as_ref(), "ns", "CA");
            assert_eq!(got.is_some(), write, "{what}");
            if let Some(got) = got {
                assert_eq!(got.data.unwrap()[DATA_KEY], "CA", "{what}");
                assert_eq!(
                    got.metadata.annotations.unwrap()[DESCRIPTION_ANNOTATION],
                    DESCRIPTION
                );
                // Updates carry the resourceVersion read, so a concurrent edit conflicts.
                assert_eq!(
                    got.metadata.resource_version.is_some(),
                    existing.is_some(),
                    "{what}"
                );
            }
        }
    }
}
