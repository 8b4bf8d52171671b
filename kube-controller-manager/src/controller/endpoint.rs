//! Endpoints of Services: for every service with a selector, an Endpoints object of the same
//! name listing the addresses of the pods it selects (upstream's endpoints controller).

pub mod pods;
pub mod subsets;
pub mod trigger_time;

use super::utils::services;
use super::worker::run_workers_when_synced;
use super::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::api::{Api, DeleteParams, PostParams};
use pods::{HEADLESS_LABEL, TRIGGER_TIME_ANNOTATION};
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "endpoints-controller";
/// Set on Endpoints this controller writes so the mirroring controller leaves them alone.
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// Endpoints used as leader-election locks by old components: never ours to delete.
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

struct Controller {
    client: kube::Client,
    services: Lister<Service>,
    pods: Lister<Pod>,
    endpoints: Lister<Endpoints>,
    trigger_times: trigger_time::TriggerTimeTracker,
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("endpoint-controller").await?;
        let service_informer = ctx.informers.informer::<Service>();
        let pod_informer = ctx.informers.informer::<Pod>();
        let endpoints_informer = ctx.informers.informer::<Endpoints>();
        let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("endpoint");
        let services = service_informer.lister();

        services::enqueue_own_key(&service_informer, &queue);
        services::enqueue_services_selecting_pods(&pod_informer, &services, &queue);

        // A deleted Endpoints object of a live service is written again; leftovers of deleted
        // services seen at start are deleted (upstream's checkLeftoverEndpoints).
        let q = queue.clone();
        let q_add = queue.clone();
        endpoints_informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |e: &Arc<Endpoints>, initial| {
                    let leader = e
                        .metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
                    if initial && !leader {
                        q_add.add(object_key(e.as_ref()));
                    }
                })
                .on_delete(move |d| q.add(object_key(d.object().as_ref()))),
        );

        let controller = Arc::new(Controller {
            client,
            services,
            pods: pod_informer.lister(),
            endpoints: endpoints_informer.lister(),
            trigger_times: Default::default(),
        });
        let workers = ctx.settings.concurrent_endpoint_syncs;
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            run_workers_when_synced(
                NAME,
                &[&*service_informer, &*pod_informer, &*endpoints_informer],
                queue,
                workers,
                shutdown,
                move |key: String| {
                    let controller = controller.clone();
                    async move { controller.sync(&key).await }
                },
            )
            .await;
        }) as super::Running))
    })
}

impl Controller {
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), ns);
        let Some(service) = self.services.namespace(ns).get(name) else {
            self.trigger_times.delete_service(key);
            return self.delete_leftover(&api, ns, name).await;
        };
        // Services without a selector have their Endpoints written by hand; ExternalName
        // services have none at all.
        let Some(selector) = pods::service_selector(&service) else {
            return Ok(());
        };
        if pods::is_external_name(&service) {
            return Ok(());
        }
        let selected = pods::selected_pods(&self.pods, &service, &selector);
        let desired = subsets::desired_subsets(&service, &selected);
        let trigger_time = self.trigger_times.compute(key, &service, &selected);
        let current = self.endpoints.namespace(ns).get(name);
        let labels = desired_labels(&service);

        if let Some(current) = &current
            && current.subsets.clone().unwrap_or_default() == desired.subsets
            && current.metadata.labels.clone().unwrap_or_default() == labels
            && over_capacity_set_correctly(current, desired.truncated)
        {
            return Ok(());
        }

        let mut endpoints = current.as_deref().cloned().unwrap_or_else(|| Endpoints {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(ns.to_string()),
                ..Default::default()
            },
            ..Default::default()
        });
        endpoints.subsets = Some(desired.subsets);
        endpoints.metadata.labels = Some(labels);
        let annotations = endpoints.metadata.annotations.get_or_insert_default();
        match trigger_time {
            Some(t) => {
                annotations.insert(TRIGGER_TIME_ANNOTATION.into(), pods::format_trigger_time(t));
            }
            None => {
                annotations.remove(TRIGGER_TIME_ANNOTATION);
            }
        }
        if desired.truncated {
            annotations.insert(OVER_CAPACITY_ANNOTATION.into(), "truncated".into());
        } else {
            annotations.remove(OVER_CAPACITY_ANNOTATION);
        }

        let result = if current.is_some() {
            api.replace(name, &PostParams::default(), &endpoints)
                .await
                .map(drop)
        } else {
            api.create(&PostParams::default(), &endpoints)
                .await
                .map(drop)
        };
        match result {
            Ok(()) => Ok(()),
            // A terminating namespace refuses new objects; nothing to retry.
            Err(kube::Error::Api(e)) if current.is_none() && is_namespace_terminating(&e) => Ok(()),
            Err(err) => Err(err).with_context(|| format!("writing Endpoints {key}")),
        }
    }

    async fn delete_leftover(
        &self,
        api: &Api<Endpoints>,
        ns: &str,
        name: &str,
    ) -> anyhow::Result<()> {
        let Some(current) = self.endpoints.namespace(ns).get(name) else {
            return Ok(());
        };
        let leader = current
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
        if leader {
            return Ok(());
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(err) => Err(err).with_context(|| format!("deleting Endpoints {ns}/{name}")),
        }
    }
}

fn is_namespace_terminating(e: &kube::core::Status) -> bool {
    e.code == 403 && e.message.contains("being terminated")
}

/// The service's labels, with the headless label as the service is (or is not) headless,
/// and the label telling the mirroring controller these Endpoints are not hand-made.
fn desired_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    if pods::is_headless(service) {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    } else {
        labels.remove(HEADLESS_LABEL);
    }
    labels.insert(SKIP_MIRROR_LABEL.into(), "true".into());
    labels
}

fn over_capacity_set_correctly(endpoints: &Endpoints, truncated: bool) -> bool {
    let value = endpoints
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(OVER_CAPACITY_ANNOTATION));
    match value {
        Some(v) => truncated && v == "truncated",
        None => !truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ServiceSpec;

    #[test]
    fn labels_follow_the_service() {
        let service = |cluster_ip: &str, labels: &[(&str, &str)]| Service {
            metadata: kube::api::ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                cluster_ip: Some(cluster_ip.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let cases = [
            (
                "10.96.0.10",
                vec![("app", "a")],
                vec!["app", SKIP_MIRROR_LABEL],
            ),
            (
                "None",
                vec![("app", "a")],
                vec!["app", SKIP_MIRROR_LABEL, HEADLESS_LABEL],
            ),
            // A stale headless label copied from a service that got a cluster IP goes.
            (
                "10.96.0.11",
                vec![(HEADLESS_LABEL, "")],
                vec![SKIP_MIRROR_LABEL],
            ),
        ];
        for (ip, labels, mut want) in cases {
            let got = desired_labels(&service(ip, &labels));
            let mut keys: Vec<&str> = got.keys().map(String::as_str).collect();
            keys.sort();
            want.sort();
            assert_eq!(keys, want, "{ip}");
        }
    }

    #[test]
    fn over_capacity_annotation() {
        let with = |value: Option<&str>| Endpoints {
            metadata: kube::api::ObjectMeta {
                annotations: value
                    .map(|v| [(OVER_CAPACITY_ANNOTATION.to_string(), v.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(over_capacity_set_correctly(&with(None), false));
        assert!(!over_capacity_set_correctly(&with(None), true));
        assert!(over_capacity_set_correctly(&with(Some("truncated")), true));
        assert!(!over_capacity_set_correctly(
            &with(Some("truncated")),
            false
        ));
        assert!(!over_capacity_set_correctly(&with(Some("warning")), true));
    }
}
