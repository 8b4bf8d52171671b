//! Object counts of resources without a typed informer (`count/deployments.apps`,
//! `count/widgets.example.com`): a shared dynamic informer is started for each on first use,
//! as upstream's QuotaMonitor watches every resource a quota may count.

use anyhow::Context as _;
use client_go_rs::informers::{
    EventHandlerFuncs, InformerOptions, SharedInformer, SharedInformerFactory,
};
use kube::api::DynamicObject;
use kube::core::ApiResource;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Called with (namespace, count name) when an object of a monitored resource changes.
pub type Notify = Arc<dyn Fn(&str, &str) + Send + Sync>;

pub struct Monitors {
    pub factory: Arc<SharedInformerFactory>,
    pub client: kube::Client,
    pub shutdown: CancellationToken,
    pub notify: Notify,
    started: tokio::sync::Mutex<HashMap<String, Arc<SharedInformer<DynamicObject>>>>,
}

/// `count/<plural>[.<group>]` → (group, plural).
pub fn parse_count_name(count: &str) -> Option<(&str, &str)> {
    let rest = count.strip_prefix("count/")?;
    Some(match rest.split_once('.') {
        Some((plural, group)) => (group, plural),
        None => ("", rest),
    })
}

impl Monitors {
    pub fn new(
        factory: Arc<SharedInformerFactory>,
        client: kube::Client,
        shutdown: CancellationToken,
        notify: Notify,
    ) -> Self {
        Self {
            factory,
            client,
            shutdown,
            notify,
            started: Default::default(),
        }
    }

    /// How many objects of `count`'s resource `namespace` holds; `None` when the resource is
    /// not served (yet): its usage stays unknown.
    pub async fn count(&self, count: &str, namespace: &str) -> Option<usize> {
        let informer = self.informer(count).await?;
        Some(informer.lister().namespace(namespace).list().len())
    }

    async fn informer(&self, count: &str) -> Option<Arc<SharedInformer<DynamicObject>>> {
        let mut started = self.started.lock().await;
        if let Some(informer) = started.get(count) {
            return Some(informer.clone());
        }
        let (group, plural) = parse_count_name(count)?;
        let resource = match self.resolve(group, plural).await {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(err) => {
                tracing::debug!(%count, "resolving quota resource: {err:#}");
                return None;
            }
        };
        let informer = self
            .factory
            .dynamic_informer(&resource, InformerOptions::default());
        let notify = self.notify.clone();
        let name = count.to_string();
        let on = move |obj: &DynamicObject| {
            if let Some(ns) = obj.metadata.namespace.as_deref() {
                notify(ns, &name);
            }
        };
        let (on_add, on_delete) = (on.clone(), on);
        informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |o: &Arc<DynamicObject>, _| on_add(o))
                .on_delete(move |d| on_delete(d.object())),
        );
        self.factory.start(&self.shutdown);
        // A resource that never lists (forbidden, broken) must not stall the worker forever.
        let synced = tokio::time::timeout(
            Duration::from_secs(30),
            informer.wait_for_cache_sync(&self.shutdown),
        )
        .await;
        if !matches!(synced, Ok(true)) {
            return None;
        }
        started.insert(count.to_string(), informer.clone());
        Some(informer)
    }

    /// The preferred version of `group` serving `plural`, namespaced.
    async fn resolve(&self, group: &str, plural: &str) -> anyhow::Result<Option<ApiResource>> {
        let version = if group.is_empty() {
            "v1".to_string()
        } else {
            let groups = self
                .client
                .list_api_groups()
                .await
                .context("listing groups")?;
            let Some(found) = groups.groups.into_iter().find(|g| g.name == group) else {
                return Ok(None);
            };
            let Some(v) = found
                .preferred_version
                .or_else(|| found.versions.into_iter().next())
            else {
                return Ok(None);
            };
            v.version
        };
        let api_version = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        let list = if group.is_empty() {
            self.client.list_core_api_resources(&version).await
        } else {
            self.client.list_api_group_resources(&api_version).await
        }
        .context("listing resources")?;
        Ok(list
            .resources
            .into_iter()
            .find(|r| r.name == plural && r.namespaced)
            .map(|r| ApiResource {
                group: group.to_string(),
                version,
                api_version,
                kind: r.kind,
                plural: r.name,
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_names() {
        assert_eq!(
            parse_count_name("count/deployments.apps"),
            Some(("apps", "deployments"))
        );
        assert_eq!(
            parse_count_name("count/widgets.stable.example.com"),
            Some(("stable.example.com", "widgets"))
        );
        assert_eq!(parse_count_name("count/events"), Some(("", "events")));
        assert_eq!(parse_count_name("pods"), None);
    }
}
