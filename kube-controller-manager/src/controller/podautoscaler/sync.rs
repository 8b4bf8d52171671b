//! One reconciliation of a HorizontalPodAutoscaler, as upstream's `reconcileAutoscaler`: read
//! the target's scale, bring it into [min, max] or compute the metrics' recommendation,
//! stabilize and clamp it, rescale, and report conditions, events and status.

use super::behavior::{Rules, ScaleEvent, rate_limited};
use super::metrics::{pod_usage, target_api};
use super::replicas::{
    PodState, Recommendations, Target, clamp, resource_replicas, stabilize, stabilize_with_windows,
};
use crate::controller::utils::controller_ref::object_reference;
use api_types::labels::Selector;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, MetricSpec, MetricStatus,
    MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const CONTROLLER_NAME: &str = "horizontal-pod-autoscaler-controller";
/// `--horizontal-pod-autoscaler-downscale-stabilization`'s default.
const DOWNSCALE_STABILIZATION: Duration = Duration::from_secs(300);

/// An HPA's recent rescales: (up, down).
pub type ScaleEvents = (Vec<ScaleEvent>, Vec<ScaleEvent>);

#[derive(Clone)]
pub struct Controller {
    pub client: kube::Client,
    pub hpas: Lister<HorizontalPodAutoscaler>,
    pub pods: Lister<Pod>,
    pub queue: RateLimitingQueue<String>,
    pub recorder: EventRecorder,
    pub resync: Duration,
    pub recommendations: Arc<Mutex<HashMap<String, Recommendations>>>,
    /// Recent rescales up and down per HPA, for the behavior policies' periods.
    pub scale_events: Arc<Mutex<HashMap<String, ScaleEvents>>>,
}

/// The conditions being written, keeping each transition time while the status holds.
struct Conditions(Vec<HorizontalPodAutoscalerCondition>);

impl Conditions {
    fn set(&mut self, type_: &str, status: bool, reason: &str, message: impl Into<String>) {
        let status = if status { "True" } else { "False" };
        let (reason, message) = (Some(reason.to_string()), Some(message.into()));
        match self.0.iter_mut().find(|c| c.type_ == type_) {
            Some(c) => {
                if c.status != status {
                    c.last_transition_time = Some(Time(jiff::Timestamp::now()));
                    c.status = status.into();
                }
                c.reason = reason;
                c.message = message;
            }
            None => self.0.push(HorizontalPodAutoscalerCondition {
                type_: type_.into(),
                status: status.into(),
                reason,
                message,
                last_transition_time: Some(Time(jiff::Timestamp::now())),
            }),
        }
    }
}

/// What computing one metric failed with: the condition/event reason, the message for both,
/// and the error for the summary.
struct MetricError {
    reason: &'static str,
    message: String,
    summary: String,
}

struct MetricOutcome {
    replicas: i32,
    name: String,
    status: MetricStatus,
}

impl Controller {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(hpa) = self.hpas.namespace(ns).get(name) else {
            self.recommendations.lock().remove(&key);
            self.scale_events.lock().remove(&key);
            return Ok(());
        };
        // Upstream's resync: every HPA is looked at again each sync period.
        self.queue.add_after(key.clone(), self.resync);
        let mut updated = (*hpa).clone();
        // A failed reconciliation waits for the next resync, as upstream's fixed-interval HPA
        // queue: retrying sooner would only repeat its warning events.
        if let Err(err) = self.reconcile(&key, &mut updated).await {
            tracing::warn!(hpa = key, "{err:#}");
        }
        if updated.status != hpa.status {
            Api::<HorizontalPodAutoscaler>::namespaced(self.client.clone(), ns)
                .replace_status(name, &PostParams::default(), &updated)
                .await
                .map_err(|err| anyhow::anyhow!("updating the status of HPA {key}: {err}"))?;
        }
        Ok(())
    }

    fn event(&self, hpa: &HorizontalPodAutoscaler, type_: EventType, reason: &str, msg: String) {
        let r = object_reference(&hpa.metadata, "autoscaling/v2", "HorizontalPodAutoscaler");
        self.recorder.event(&r, type_, reason, msg);
    }

    async fn reconcile(&self, key: &str, hpa: &mut HorizontalPodAutoscaler) -> anyhow::Result<()> {
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let spec = hpa.spec.clone().unwrap_or_default();
        let mut status = hpa.status.clone().unwrap_or_default();
        let mut conditions = Conditions(status.conditions.take().unwrap_or_default());
        let target = &spec.scale_target_ref;
        let api_version = target.api_version.as_deref().unwrap_or("v1");
        let scale = match target_api(&self.client, &ns, api_version, &target.kind).await {
            Ok(api) => match api.get_scale(&target.name).await {
                Ok(scale) => Ok((api, scale)),
                Err(err) => Err(anyhow::Error::from(err)),
            },
            Err(err) => Err(err),
        };
        let (api, scale) = match scale {
            Ok(found) => found,
            Err(err) => {
                conditions.set(
                    "AbleToScale",
                    false,
                    "FailedGetScale",
                    format!(
                        "the HPA controller was unable to get the target's current scale: {err}"
                    ),
                );
                self.event(hpa, EventType::Warning, "FailedGetScale", err.to_string());
                status.conditions = Some(conditions.0);
                hpa.status = Some(status);
                anyhow::bail!(
                    "getting the scale of {} {}: {err}",
                    target.kind,
                    target.name
                );
            }
        };
        conditions.set(
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let now = Instant::now();
        self.recommendations
            .lock()
            .entry(key.to_string())
            .or_insert_with(|| vec![(current, now)]);
        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;

        let mut metric_statuses = status.current_metrics.take();
        let (desired, rescale_reason) = if current == 0 && min != 0 {
            conditions.set(
                "ScalingActive",
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            );
            (0, None)
        } else if current > max {
            (
                max,
                Some("Current number of replicas above Spec.MaxReplicas".to_string()),
            )
        } else if current < min {
            (
                min,
                Some("Current number of replicas below Spec.MinReplicas".to_string()),
            )
        } else {
            let selector = scale
                .status
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            let (proposal, statuses) = self
                .metrics_replicas(hpa, &ns, current, &selector, &mut conditions)
                .await;
            metric_statuses = Some(statuses);
            let (proposed, metric_name) = match proposal {
                Ok(p) => p,
                Err(err) => {
                    status.current_replicas = Some(current);
                    status.current_metrics = metric_statuses;
                    status.conditions = Some(conditions.0);
                    hpa.status = Some(status);
                    self.event(
                        hpa,
                        EventType::Warning,
                        "FailedComputeMetricsReplicas",
                        err.clone(),
                    );
                    anyhow::bail!(
                        "failed to compute desired number of replicas based on listed metrics for {}/{}/{}: {err}",
                        target.kind,
                        ns,
                        target.name
                    );
                }
            };
            let desired = self.normalize(key, hpa, current, proposed, min, max, &mut conditions);
            let reason = if desired > current {
                format!("{metric_name} above target")
            } else {
                "All metrics below target".to_string()
            };
            (desired, Some(reason).filter(|_| desired != current))
        };

        let mut rescaled = false;
        if let Some(reason) = rescale_reason.filter(|_| desired != current) {
            let mut new_scale = scale.clone();
            new_scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            if let Err(err) = api
                .replace_scale(&target.name, &PostParams::default(), &new_scale)
                .await
            {
                self.event(
                    hpa,
                    EventType::Warning,
                    "FailedRescale",
                    format!("New size: {desired}; reason: {reason}; error: {err}"),
                );
                conditions.set(
                    "AbleToScale",
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {err}"),
                );
                status.current_replicas = Some(current);
                status.current_metrics = metric_statuses;
                status.conditions = Some(conditions.0);
                hpa.status = Some(status);
                anyhow::bail!("rescaling {} {}: {err}", target.kind, target.name);
            }
            conditions.set(
                "AbleToScale",
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
            );
            self.event(
                hpa,
                EventType::Normal,
                "SuccessfulRescale",
                format!("New size: {desired}; reason: {reason}"),
            );
            tracing::info!(hpa = key, from = current, to = desired, %reason, "rescaled the target");
            if let Some(b) = spec.behavior.as_ref() {
                self.store_scale_event(key, b, desired - current);
            }
            rescaled = true;
        }
        status.current_replicas = Some(current);
        status.desired_replicas = desired;
        status.current_metrics = metric_statuses;
        status.observed_generation = hpa.metadata.generation;
        if rescaled {
            status.last_scale_time = Some(Time(jiff::Timestamp::now()));
        }
        status.conditions = Some(conditions.0);
        hpa.status = Some(status);
        Ok(())
    }

    /// Stabilization then the [min, max] and rate limits, setting AbleToScale and
    /// ScalingLimited as upstream.
    #[allow(clippy::too_many_arguments)]
    fn normalize(
        &self,
        key: &str,
        hpa: &HorizontalPodAutoscaler,
        current: i32,
        proposed: i32,
        min: i32,
        max: i32,
        conditions: &mut Conditions,
    ) -> i32 {
        let now = Instant::now();
        let behavior = hpa.spec.as_ref().and_then(|s| s.behavior.as_ref());
        let stabilized = {
            let mut recs = self.recommendations.lock();
            let recs = recs.entry(key.to_string()).or_default();
            match behavior {
                None => stabilize(recs, proposed, now, DOWNSCALE_STABILIZATION),
                Some(b) => {
                    let window =
                        |rules: Option<&k8s_openapi::api::autoscaling::v2::HPAScalingRules>,
                         default: u64| {
                            Duration::from_secs(
                                rules
                                    .and_then(|r| r.stabilization_window_seconds)
                                    .and_then(|s| u64::try_from(s).ok())
                                    .unwrap_or(default),
                            )
                        };
                    let up = window(b.scale_up.as_ref(), 0);
                    let down = window(b.scale_down.as_ref(), DOWNSCALE_STABILIZATION.as_secs());
                    stabilize_with_windows(recs, current, proposed, now, up, down)
                }
            }
        };
        if stabilized > proposed {
            conditions.set(
                "AbleToScale",
                true,
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation",
            );
        } else if stabilized < proposed {
            conditions.set(
                "AbleToScale",
                true,
                "ScaleUpStabilized",
                "recent recommendations were lower than current one, applying the lowest recent recommendation",
            );
        } else {
            conditions.set(
                "AbleToScale",
                true,
                "ReadyForNewScale",
                "recommended size matches current size",
            );
        }
        let clamped = match behavior {
            None => clamp(current, stabilized, min, max, true),
            Some(b) => {
                let up = Rules::from_spec(b.scale_up.as_ref(), true);
                let down = Rules::from_spec(b.scale_down.as_ref(), false);
                let events = self.scale_events.lock();
                let (ups, downs) = events.get(key).cloned().unwrap_or_default();
                rate_limited(
                    current,
                    stabilized,
                    min,
                    max,
                    (&up, &ups),
                    (&down, &downs),
                    now,
                )
            }
        };
        conditions.set(
            "ScalingLimited",
            clamped.limited,
            clamped.reason,
            clamped.message,
        );
        clamped.replicas
    }

    /// Remembers a rescale for the policies' periods, forgetting what no period reaches.
    fn store_scale_event(
        &self,
        key: &str,
        behavior: &k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerBehavior,
        change: i32,
    ) {
        let now = Instant::now();
        let keep = Rules::from_spec(behavior.scale_up.as_ref(), true)
            .longest_period()
            .max(Rules::from_spec(behavior.scale_down.as_ref(), false).longest_period());
        let mut events = self.scale_events.lock();
        let (ups, downs) = events.entry(key.to_string()).or_default();
        for list in [&mut *ups, &mut *downs] {
            list.retain(|e| now.checked_sub(keep).is_none_or(|c| e.at > c));
        }
        match change {
            c if c > 0 => ups.push(ScaleEvent { change: c, at: now }),
            c if c < 0 => downs.push(ScaleEvent {
                change: -c,
                at: now,
            }),
            _ => {}
        }
    }

    /// The highest replica count any metric asks for, with its metric's description, or the
    /// summary of what failed; and the status of each metric.
    async fn metrics_replicas(
        &self,
        hpa: &HorizontalPodAutoscaler,
        ns: &str,
        current: i32,
        selector: &str,
        conditions: &mut Conditions,
    ) -> (Result<(i32, String), String>, Vec<MetricStatus>) {
        let default_metric = [serde_json::from_value::<MetricSpec>(serde_json::json!({
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }))
        .unwrap_or_default()];
        let specs = match hpa.spec.as_ref().and_then(|s| s.metrics.as_deref()) {
            Some(m) if !m.is_empty() => m,
            _ => &default_metric[..],
        };
        if selector.is_empty() {
            self.event(
                hpa,
                EventType::Warning,
                "SelectorRequired",
                "selector is required".into(),
            );
            conditions.set(
                "ScalingActive",
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
            );
            return (Err("selector is required".into()), vec![]);
        }
        let parsed = match Selector::parse(selector) {
            Ok(s) => s,
            Err(err) => {
                let msg = format!(
                    "couldn't convert selector into a corresponding internal selector object: {err}"
                );
                self.event(hpa, EventType::Warning, "InvalidSelector", msg.clone());
                conditions.set("ScalingActive", false, "InvalidSelector", msg.clone());
                return (Err(msg), vec![]);
            }
        };
        let pods = self.pods.namespace(ns).list_selected(&parsed);
        let mut statuses = vec![MetricStatus::default(); specs.len()];
        let mut best: Option<(i32, String)> = None;
        let mut first_error: Option<MetricError> = None;
        let mut invalid = 0;
        for (i, spec) in specs.iter().enumerate() {
            match self
                .metric_replicas(spec, ns, current, selector, &pods)
                .await
            {
                Ok(outcome) => {
                    statuses[i] = outcome.status;
                    if best.as_ref().is_none_or(|(r, _)| outcome.replicas > *r) {
                        best = Some((outcome.replicas, outcome.name));
                    }
                }
                Err(err) => {
                    self.event(hpa, EventType::Warning, err.reason, err.message.clone());
                    invalid += 1;
                    first_error.get_or_insert(err);
                }
            }
        }
        let replicas = best.as_ref().map_or(0, |(r, _)| *r);
        if let Some(err) = first_error.filter(|_| invalid >= specs.len() || replicas < current) {
            conditions.set(
                "ScalingActive",
                false,
                err.reason,
                format!(
                    "the HPA was unable to compute the replica count: {}",
                    err.message
                ),
            );
            let summary = format!(
                "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                specs.len(),
                err.summary
            );
            return (Err(summary), statuses);
        }
        let (replicas, name) = best.unwrap_or((current, String::new()));
        conditions.set(
            "ScalingActive",
            true,
            "ValidMetricFound",
            format!("the HPA was able to successfully calculate a replica count from {name}"),
        );
        (Ok((replicas, name)), statuses)
    }

    async fn metric_replicas(
        &self,
        spec: &MetricSpec,
        ns: &str,
        current: i32,
        selector: &str,
        pods: &[Arc<Pod>],
    ) -> Result<MetricOutcome, MetricError> {
        let (resource, container, reason) = match spec.type_.as_str() {
            "Resource" => match &spec.resource {
                Some(r) => (r.name.clone(), None, "FailedGetResourceMetric"),
                None => return Err(unsupported(spec, "FailedGetResourceMetric")),
            },
            "ContainerResource" => match &spec.container_resource {
                Some(r) => (
                    r.name.clone(),
                    Some(r.container.clone()),
                    "FailedGetContainerResourceMetric",
                ),
                None => return Err(unsupported(spec, "FailedGetContainerResourceMetric")),
            },
            "Pods" => return Err(unsupported(spec, "FailedGetPodsMetric")),
            "Object" => return Err(unsupported(spec, "FailedGetObjectMetric")),
            "External" => return Err(unsupported(spec, "FailedGetExternalMetric")),
            other => {
                let message = format!("unknown metric source type {other:?}");
                return Err(MetricError {
                    reason: "InvalidMetricSourceType",
                    summary: message.clone(),
                    message,
                });
            }
        };
        let target = spec
            .resource
            .as_ref()
            .map(|r| &r.target)
            .or(spec.container_resource.as_ref().map(|r| &r.target));
        let goal = match (
            target.and_then(|t| t.average_utilization),
            target
                .and_then(|t| t.average_value.as_ref())
                .and_then(|q| api_types::resource::Quantity::parse(&q.0)),
        ) {
            (Some(percent), _) => Target::Utilization(percent),
            (None, Some(q)) => {
                Target::AverageValue(i64::try_from(q.milli_value()).unwrap_or(i64::MAX))
            }
            (None, None) => {
                let message = format!(
                    "failed to get {resource} utilization: the target has neither averageUtilization nor averageValue"
                );
                return Err(MetricError {
                    reason,
                    summary: message.clone(),
                    message,
                });
            }
        };
        // Upstream names the two kinds of resource target differently in its messages.
        let what = match goal {
            Target::Utilization(_) => "utilization",
            Target::AverageValue(_) => "usage",
        };
        let fail = |inner: String| {
            let message = format!("failed to get {resource} {what}: {inner}");
            MetricError {
                reason,
                summary: format!("failed to get {resource} resource metric value: {message}"),
                message,
            }
        };
        let metrics = pod_usage(&self.client, ns, selector, &resource, container.as_deref())
            .await
            .map_err(|err| {
                fail(format!(
                    "unable to get metrics for resource {resource}: {err}"
                ))
            })?;
        let states = pods
            .iter()
            .map(|p| {
                pod_state(
                    p,
                    &resource,
                    container.as_deref(),
                    matches!(goal, Target::Utilization(_)),
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        let proposal = resource_replicas(
            current,
            goal,
            &states,
            &metrics,
            resource == "cpu",
            jiff::Timestamp::now(),
        )
        .map_err(fail)?;
        let value = MetricValueStatus {
            average_utilization: matches!(goal, Target::Utilization(_))
                .then_some(proposal.utilization),
            average_value: Some(ApiQuantity(format!("{}m", proposal.average))),
            value: None,
        };
        let status = match &container {
            None => MetricStatus {
                type_: "Resource".into(),
                resource: Some(ResourceMetricStatus {
                    name: resource.clone(),
                    current: value,
                }),
                ..Default::default()
            },
            Some(c) => MetricStatus {
                type_: "ContainerResource".into(),
                container_resource: Some(
                    k8s_openapi::api::autoscaling::v2::ContainerResourceMetricStatus {
                        name: resource.clone(),
                        container: c.clone(),
                        current: value,
                    },
                ),
                ..Default::default()
            },
        };
        Ok(MetricOutcome {
            replicas: proposal.replicas,
            name: match goal {
                Target::Utilization(_) => {
                    format!("{resource} resource utilization (percentage of request)")
                }
                Target::AverageValue(_) => format!("{resource} resource"),
            },
            status,
        })
    }
}

fn unsupported(spec: &MetricSpec, reason: &'static str) -> MetricError {
    let message = format!(
        "unable to get metric of type {}: this controller reads only the resource metrics API",
        spec.type_
    );
    MetricError {
        reason,
        summary: message.clone(),
        message,
    }
}

/// A pod as the replica calculator sees it, with its requests of `resource`.
/// Requests are needed only against a utilization target.
fn pod_state(
    pod: &Pod,
    resource: &str,
    container: Option<&str>,
    need_requests: bool,
) -> Result<PodState, String> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut request = 0i64;
    for c in pod.spec.iter().flat_map(|s| &s.containers) {
        if container.is_some_and(|want| c.name != want) {
            continue;
        }
        let quantity = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(resource))
            .and_then(|q| api_types::resource::Quantity::parse(&q.0));
        let Some(quantity) = quantity else {
            if !need_requests {
                continue;
            }
            return Err(format!(
                "missing request for {resource} in container {} of Pod {name}",
                c.name
            ));
        };
        request += i64::try_from(quantity.milli_value()).unwrap_or(i64::MAX);
    }
    let status = pod.status.as_ref();
    Ok(PodState {
        name,
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".into()),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| {
                (
                    c.status == "True",
                    c.last_transition_time
                        .as_ref()
                        .map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0),
                )
            }),
        start_time: status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
        request,
    })
}
