//! Empties one terminating namespace, then removes the `kubernetes` finalizer, as upstream's
//! `namespacedResourcesDeleter`.

use super::conditions::{ConditionUpdater, Remaining};
use super::discovery::{Deletable, discover};
use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use std::collections::BTreeMap;

/// The finalizer the apiserver puts on every namespace and this controller removes.
pub const FINALIZER: &str = "kubernetes";

/// How long an object held by a finalizer is expected to take (upstream's
/// `finalizerEstimateSeconds`).
const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// How many resources are emptied at once.
const PARALLEL_RESOURCES: usize = 4;

/// The result of one sync of a namespace.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do (gone, not terminating, or already finalized), or just finalized.
    Done,
    /// Content remains; look again in about this many seconds.
    Remaining(i64),
}

/// What one resource's deletion left behind.
#[derive(Debug, Default)]
struct ResourceLeft {
    estimate: i64,
    remaining: usize,
    finalizers: BTreeMap<String, usize>,
}

pub struct Deleter {
    pub client: kube::Client,
}

impl Deleter {
    pub async fn delete(&self, name: &str) -> anyhow::Result<Outcome> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let Some(mut ns) = namespaces
            .get_opt(name)
            .await
            .context("getting namespace")?
        else {
            return Ok(Outcome::Done);
        };
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(Outcome::Done);
        }
        if ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating") {
            ns.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
            ns = namespaces
                .replace_status(name, &PostParams::default(), &ns)
                .await
                .context("marking namespace Terminating")?;
        }
        if !has_finalizer(&ns) {
            return Ok(Outcome::Done);
        }
        let estimate = self.delete_all_content(&namespaces, &mut ns).await?;
        if estimate > 0 {
            return Ok(Outcome::Remaining(estimate));
        }
        self.finalize(&namespaces, ns).await?;
        Ok(Outcome::Done)
    }

    /// Deletes every discovered resource's objects, records the conditions, and answers how
    /// long to wait before looking again (0 when the namespace is empty).
    async fn delete_all_content(
        &self,
        namespaces: &Api<Namespace>,
        ns: &mut Namespace,
    ) -> anyhow::Result<i64> {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let mut conditions = ConditionUpdater::default();
        let discovered = match discover(&self.client).await {
            Ok(d) => d,
            Err(err) => {
                conditions.discovery_failed(&[format!("{err:#}")]);
                self.update_conditions(namespaces, ns, &conditions).await;
                return Err(err);
            }
        };
        conditions.discovery_failed(&discovered.failed);
        if !discovered.unparsable.is_empty() {
            conditions.group_version_parsing_failed(format!(
                "unparsable group versions: {}",
                discovered.unparsable.join(", ")
            ));
        }
        let mut estimate = 0;
        let mut errors = Vec::new();
        let mut remaining = Remaining::default();
        // Resources are independent (upstream walks them in map order): a few at a time.
        let results: Vec<_> = futures::stream::iter(discovered.resources.clone())
            .map(|resource| {
                let client = self.client.clone();
                let name = name.clone();
                async move {
                    let result = Self::delete_resource(&client, &resource, &name).await;
                    (resource, result)
                }
            })
            .buffer_unordered(PARALLEL_RESOURCES)
            .collect()
            .await;
        for (resource, (left, err)) in results {
            if let Some(err) = err {
                errors.push(err);
            }
            estimate = estimate.max(left.estimate);
            if left.remaining > 0 {
                remaining
                    .by_resource
                    .insert(resource.display(), left.remaining);
                for (finalizer, n) in left.finalizers {
                    *remaining.by_finalizer.entry(finalizer).or_default() += n;
                }
            }
        }
        conditions.content_deletion_failed(&errors);
        conditions.content_totals(&remaining);
        self.update_conditions(namespaces, ns, &conditions).await;
        let mut failures = discovered.failed.clone();
        failures.extend(errors);
        if !failures.is_empty() {
            anyhow::bail!(
                "deleting content of namespace {name}: {}",
                failures.join("; ")
            );
        }
        Ok(estimate)
    }

    /// A failed status write does not stop the deletion (upstream only logs it).
    async fn update_conditions(
        &self,
        namespaces: &Api<Namespace>,
        ns: &mut Namespace,
        conditions: &ConditionUpdater,
    ) {
        if !conditions.apply(ns) {
            return;
        }
        let name = ns.metadata.name.clone().unwrap_or_default();
        match namespaces
            .replace_status(&name, &PostParams::default(), &*ns)
            .await
        {
            Ok(updated) => *ns = updated,
            Err(err) => tracing::warn!(namespace = %name, "updating conditions: {err}"),
        }
    }

    /// Deletes one resource's objects in `namespace` and lists what is left.
    async fn delete_resource(
        client: &kube::Client,
        resource: &Deletable,
        namespace: &str,
    ) -> (ResourceLeft, Option<String>) {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &resource.resource);
        let what = resource.display();
        // Most resources of a namespace are empty: one list settles them (a terminating
        // namespace admits no new objects, so empty stays empty).
        let items = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(err) if unsupported(&err) => Vec::new(),
            Err(err) => {
                return (
                    ResourceLeft::default(),
                    Some(format!("listing {what}: {err}")),
                );
            }
        };
        if items.is_empty() {
            return (ResourceLeft::default(), None);
        }
        let mut collection_done = false;
        if resource.delete_collection {
            match api
                .delete_collection(&DeleteParams::background(), &ListParams::default())
                .await
            {
                Ok(_) => collection_done = true,
                Err(err) if unsupported(&err) => {}
                Err(err) => {
                    return (
                        ResourceLeft::default(),
                        Some(format!("deleting collection {what}: {err}")),
                    );
                }
            }
        }
        if !collection_done {
            for item in items {
                let Some(item_name) = item.metadata.name.as_deref() else {
                    continue;
                };
                if item.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                match api.delete(item_name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(err) if not_found(&err) => {}
                    Err(err) => {
                        return (
                            ResourceLeft::default(),
                            Some(format!("deleting {what} {item_name}: {err}")),
                        );
                    }
                }
            }
        }
        let left = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(err) if unsupported(&err) => Vec::new(),
            Err(err) => {
                return (
                    ResourceLeft::default(),
                    Some(format!("listing remaining {what}: {err}")),
                );
            }
        };
        let is_pods = resource.resource.group.is_empty() && resource.resource.plural == "pods";
        summarize(&left, is_pods, &what)
    }

    /// Removes `kubernetes` from `spec.finalizers` through `namespaces/<name>/finalize`,
    /// retrying on conflict with a fresh read.
    async fn finalize(&self, namespaces: &Api<Namespace>, mut ns: Namespace) -> anyhow::Result<()> {
        let name = ns.metadata.name.clone().unwrap_or_default();
        for _ in 0..5 {
            if let Some(spec) = ns.spec.as_mut() {
                spec.finalizers = spec
                    .finalizers
                    .take()
                    .map(|f| f.into_iter().filter(|f| f != FINALIZER).collect());
            }
            match namespaces
                .replace_subresource("finalize", &name, &PostParams::default(), &ns)
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if not_found(&err) => return Ok(()),
                Err(kube::Error::Api(status)) if status.is_conflict() => {
                    match namespaces.get_opt(&name).await? {
                        Some(fresh) if has_finalizer(&fresh) => ns = fresh,
                        _ => return Ok(()),
                    }
                }
                Err(err) => return Err(err).context("finalizing namespace"),
            }
        }
        anyhow::bail!("finalizing namespace {name}: too many conflicts")
    }
}

fn has_finalizer(ns: &Namespace) -> bool {
    ns.spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// What is left of one resource: its count, its finalizers, and how long to wait. Pods still
/// terminating get their grace period as the estimate (upstream estimates from the pods before
/// deleting them; counting only the pods left avoids waiting for pods already gone).
/// Anything else left without finalizers should have been deleted: an error.
fn summarize(left: &[DynamicObject], is_pods: bool, what: &str) -> (ResourceLeft, Option<String>) {
    if left.is_empty() {
        return (ResourceLeft::default(), None);
    }
    let mut result = ResourceLeft {
        remaining: left.len(),
        ..Default::default()
    };
    for item in left {
        for finalizer in item.metadata.finalizers.iter().flatten() {
            *result.finalizers.entry(finalizer.clone()).or_default() += 1;
        }
    }
    if is_pods {
        result.estimate = left
            .iter()
            .filter(|pod| {
                let phase = pod.data["status"]["phase"].as_str().unwrap_or("");
                phase != "Succeeded" && phase != "Failed"
            })
            .map(|pod| {
                pod.metadata
                    .deletion_grace_period_seconds
                    .or_else(|| pod.data["spec"]["terminationGracePeriodSeconds"].as_i64())
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0);
    }
    if result.estimate > 0 {
        return (result, None);
    }
    if !result.finalizers.is_empty() {
        result.estimate = FINALIZER_ESTIMATE_SECONDS;
        return (result, None);
    }
    let err = format!("unexpected items still remain in namespace: {what}");
    (result, Some(err))
}

fn not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// The resource vanished (a CRD deleted meanwhile) or does not allow the verb after all.
fn unsupported(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404 || s.code == 405)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).expect("object")
    }

    #[test]
    fn what_is_left_decides_the_wait() {
        let cases = [
            ("nothing left", vec![], false, 0, None::<&str>, 0),
            (
                "finalizer holds a configmap",
                vec![json!({"metadata": {"name": "a", "finalizers": ["example.com/hold"]}})],
                false,
                FINALIZER_ESTIMATE_SECONDS,
                None,
                1,
            ),
            (
                "terminating pod waits its grace period",
                vec![
                    json!({"metadata": {"name": "p", "deletionGracePeriodSeconds": 20},
                            "spec": {"terminationGracePeriodSeconds": 30}}),
                ],
                true,
                20,
                None,
                0,
            ),
            (
                "finished pod without finalizer is unexpected",
                vec![
                    json!({"metadata": {"name": "p"}, "status": {"phase": "Succeeded"},
                            "spec": {"terminationGracePeriodSeconds": 30}}),
                ],
                true,
                0,
                Some("unexpected items still remain in namespace: pods."),
                0,
            ),
        ];
        for (name, items, is_pods, estimate, err, finalized) in cases {
            let items: Vec<DynamicObject> = items.into_iter().map(object).collect();
            let (left, got_err) = summarize(
                &items,
                is_pods,
                if is_pods { "pods." } else { "configmaps." },
            );
            assert_eq!(left.estimate, estimate, "{name}");
            assert_eq!(left.remaining, items.len(), "{name}");
            assert_eq!(got_err.as_deref(), err, "{name}");
            assert_eq!(left.finalizers.values().sum::<usize>(), finalized, "{name}");
        }
    }
}
