//! The node's conditions: Ready from the runtime's health, the three pressure conditions as
//! the eviction manager reports them, with upstream's reasons and messages.

use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// What the conditions are computed from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Health {
    /// Why the node is not ready (the runtime's error and any other source); empty when ready.
    pub not_ready: Vec<String>,
    pub memory_pressure: bool,
    pub disk_pressure: bool,
    pub pid_pressure: bool,
}

struct Spec {
    kind: &'static str,
    true_reason: &'static str,
    true_message: &'static str,
    false_reason: &'static str,
    false_message: &'static str,
}

const MEMORY: Spec = Spec {
    kind: "MemoryPressure",
    true_reason: "KubeletHasInsufficientMemory",
    true_message: "kubelet has insufficient memory available",
    false_reason: "KubeletHasSufficientMemory",
    false_message: "kubelet has sufficient memory available",
};
const DISK: Spec = Spec {
    kind: "DiskPressure",
    true_reason: "KubeletHasDiskPressure",
    true_message: "kubelet has disk pressure",
    false_reason: "KubeletHasNoDiskPressure",
    false_message: "kubelet has no disk pressure",
};
const PID: Spec = Spec {
    kind: "PIDPressure",
    true_reason: "KubeletHasInsufficientPID",
    true_message: "kubelet has insufficient PID available",
    false_reason: "KubeletHasSufficientPID",
    false_message: "kubelet has sufficient PID available",
};

/// The four conditions in upstream's order. The heartbeat is `now`; a transition time is kept
/// from `previous` unless the status changed.
pub fn conditions(previous: &[NodeCondition], health: &Health, now: Time) -> Vec<NodeCondition> {
    let mut out = Vec::with_capacity(4);
    for (spec, crossed) in [
        (MEMORY, health.memory_pressure),
        (DISK, health.disk_pressure),
        (PID, health.pid_pressure),
    ] {
        let (reason, message) = if crossed {
            (spec.true_reason, spec.true_message)
        } else {
            (spec.false_reason, spec.false_message)
        };
        out.push(condition(
            previous,
            spec.kind,
            crossed,
            reason,
            message.to_string(),
            &now,
        ));
    }
    let ready = health.not_ready.is_empty();
    let (reason, message) = if ready {
        (
            "KubeletReady",
            "kubelet is posting ready status".to_string(),
        )
    } else {
        ("KubeletNotReady", health.not_ready.join(", "))
    };
    out.push(condition(previous, "Ready", ready, reason, message, &now));
    out
}

fn condition(
    previous: &[NodeCondition],
    kind: &str,
    status: bool,
    reason: &str,
    message: String,
    now: &Time,
) -> NodeCondition {
    let status = if status { "True" } else { "False" };
    let transition = previous
        .iter()
        .find(|c| c.type_ == kind && c.status == status)
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    NodeCondition {
        type_: kind.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(transition),
    }
}

/// Whether two condition lists differ in anything but their heartbeat times.
pub fn changed(a: &[NodeCondition], b: &[NodeCondition]) -> bool {
    let strip = |c: &NodeCondition| NodeCondition {
        last_heartbeat_time: None,
        ..c.clone()
    };
    a.len() != b.len() || a.iter().zip(b).any(|(x, y)| strip(x) != strip(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time(jiff::Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn ready_and_pressure() {
        let healthy = conditions(&[], &Health::default(), at(10));
        let kinds: Vec<_> = healthy.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            kinds,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        assert_eq!(healthy[3].status, "True");
        assert_eq!(healthy[3].reason.as_deref(), Some("KubeletReady"));
        assert_eq!(
            healthy[0].reason.as_deref(),
            Some("KubeletHasSufficientMemory")
        );
        assert_eq!(healthy[0].status, "False");

        // Same state later: the transition time stays, the heartbeat moves, no change.
        let later = conditions(&healthy, &Health::default(), at(20));
        assert_eq!(later[3].last_transition_time, Some(at(10)));
        assert_eq!(later[3].last_heartbeat_time, Some(at(20)));
        assert!(!changed(&healthy, &later));

        let sick = Health {
            not_ready: vec!["container runtime is down".into()],
            disk_pressure: true,
            ..Health::default()
        };
        let worse = conditions(&later, &sick, at(30));
        assert!(changed(&later, &worse));
        assert_eq!(worse[3].status, "False");
        assert_eq!(worse[3].reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(
            worse[3].message.as_deref(),
            Some("container runtime is down")
        );
        assert_eq!(worse[3].last_transition_time, Some(at(30)));
        assert_eq!(worse[1].status, "True");
        assert_eq!(worse[1].reason.as_deref(), Some("KubeletHasDiskPressure"));
        assert_eq!(worse[0].last_transition_time, Some(at(10)));
    }
}
