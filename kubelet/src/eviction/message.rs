//! What an evicted pod's status says, in upstream's words: phase Failed, reason `Evicted`, the
//! starved resource with the threshold and what was available, the containers using more than
//! they requested, and a `DisruptionTarget` condition (`TerminationByKubelet`).

use super::rank::{PodUsage, request_of_container};
use super::signals::{Observation, Resource, Threshold};
use crate::app::config::ThresholdValue;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The pod status reason of evictions and of pods refused under pressure.
pub const REASON: &str = "Evicted";

/// An amount as upstream prints a BinarySI quantity (`100Mi`, `52428800` when uneven).
pub fn binary(n: i128) -> String {
    if n == 0 {
        return "0".into();
    }
    let mut units = n;
    let mut power = 0;
    while units % 1024 == 0 && power < 6 {
        units /= 1024;
        power += 1;
    }
    format!("{units}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power])
}

fn amount(resource: Resource, n: i128) -> String {
    match resource {
        Resource::Memory | Resource::EphemeralStorage => binary(n),
        Resource::Inodes | Resource::Pids => n.to_string(),
    }
}

/// The threshold as configured (a quantity as written), or its share of the capacity.
fn threshold_text(t: &Threshold, observed: &Observation) -> String {
    match &t.value {
        ThresholdValue::Quantity(q) => q.canonical(),
        ThresholdValue::Percentage(_) => amount(t.signal.resource(), t.quantity(observed.capacity)),
    }
}

/// `The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.
/// Container x was using 30Mi, request is 0, has larger consumption of memory. `
pub fn eviction_message(
    threshold: &Threshold,
    observed: Option<&Observation>,
    pod: &Pod,
    usage: Option<&PodUsage>,
) -> String {
    let resource = threshold.signal.resource();
    let mut message = format!("The node was low on resource: {}. ", resource.as_str());
    if let Some(o) = observed {
        message += &format!(
            "Threshold quantity: {}, available: {}. ",
            threshold_text(threshold, o),
            amount(resource, o.available)
        );
    }
    let Some(usage) = usage else { return message };
    let Some(spec) = &pod.spec else {
        return message;
    };
    for c in &spec.containers {
        let Some(u) = usage.containers.iter().find(|u| u.name == c.name) else {
            continue;
        };
        let used = match resource {
            Resource::Memory => u.memory,
            Resource::EphemeralStorage => u.ephemeral,
            _ => None,
        };
        let Some(used) = used.map(i128::from) else {
            continue;
        };
        let requested = request_of_container(c, resource);
        if used > requested {
            message += &format!(
                "Container {} was using {}, request is {}, has larger consumption of {}. ",
                c.name,
                amount(resource, used),
                amount(resource, requested),
                resource.as_str()
            );
        }
    }
    message
}

/// The status of a pod evicted with `message`.
pub fn evicted_status(old: PodStatus, message: &str, now: Time) -> PodStatus {
    let mut conditions: Vec<PodCondition> = old
        .conditions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ != "DisruptionTarget")
        .collect();
    conditions.push(PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("TerminationByKubelet".into()),
        message: Some(message.to_string()),
        last_transition_time: Some(now),
        ..Default::default()
    });
    PodStatus {
        phase: Some("Failed".into()),
        reason: Some(REASON.into()),
        message: Some(message.to_string()),
        conditions: Some(conditions),
        ..old
    }
}

/// An evicted status without the `DisruptionTarget` condition, as upstream evicts pods over
/// their local storage limits.
pub fn without_disruption_condition(mut status: PodStatus) -> PodStatus {
    if let Some(cs) = status.conditions.as_mut() {
        cs.retain(|c| c.type_ != "DisruptionTarget");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::config::parse;
    use crate::eviction::rank::ContainerUsage;
    use serde_json::json;

    const MI: u64 = 1024 * 1024;

    fn threshold(text: &str) -> Threshold {
        let parsed = parse::eviction_thresholds(&parse::eviction_flag(text).unwrap()).unwrap();
        Threshold::from_config(&parsed).remove(0)
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [
                {"name": "x"},
                {"name": "y", "resources": {"requests": {"memory": "100Mi"}}},
            ]},
        }))
        .unwrap()
    }

    #[test]
    fn amounts() {
        let cases = [
            (0, "0"),
            (100 * 1024 * 1024, "100Mi"),
            (1536, "1536"),
            (2048, "2Ki"),
            (3 << 30, "3Gi"),
        ];
        for (n, want) in cases {
            assert_eq!(binary(n), want);
        }
    }

    #[test]
    fn messages() {
        let usage = PodUsage {
            memory: Some(60 * MI),
            containers: vec![
                ContainerUsage {
                    name: "x".into(),
                    memory: Some(30 * MI),
                    ephemeral: None,
                },
                ContainerUsage {
                    name: "y".into(),
                    memory: Some(30 * MI),
                    ephemeral: None,
                },
            ],
            ..PodUsage::default()
        };
        let observed = Observation {
            available: 50 * MI as i128,
            capacity: 1000 * MI as i128,
        };
        let cases: Vec<(Threshold, Option<&Observation>, Option<&PodUsage>, &str)> = vec![
            (
                threshold("memory.available<100Mi"),
                Some(&observed),
                Some(&usage),
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container x was using 30Mi, request is 0, has larger consumption of memory. ",
            ),
            (
                threshold("memory.available<10%"),
                Some(&observed),
                None,
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ",
            ),
            (
                threshold("nodefs.available<10%"),
                None,
                Some(&usage),
                "The node was low on resource: ephemeral-storage. ",
            ),
        ];
        for (t, o, u, want) in cases {
            assert_eq!(eviction_message(&t, o, &pod(), u), want);
        }
    }

    #[test]
    fn status() {
        let now = Time(jiff::Timestamp::from_second(100).unwrap());
        let old = PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some("10.0.0.1".into()),
            ..Default::default()
        };
        let s = evicted_status(old, "low", now.clone());
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(s.reason.as_deref(), Some("Evicted"));
        assert_eq!(s.message.as_deref(), Some("low"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.0.0.1"));
        let c = &s.conditions.unwrap()[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()),
            ("DisruptionTarget", "True", Some("TerminationByKubelet"))
        );
        assert_eq!(c.last_transition_time, Some(now));
    }
}
