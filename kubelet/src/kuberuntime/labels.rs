//! The labels and annotations the kubelet puts on sandboxes and containers (upstream's
//! `io.kubernetes.*` keys), so a restarted kubelet can tell whose container is whose, which
//! attempt it is and how to stop it without the pod's spec.

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use std::collections::HashMap;

pub const POD_NAME: &str = "io.kubernetes.pod.name";
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const POD_UID: &str = "io.kubernetes.pod.uid";
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
pub const TERMINATION_MESSAGE_PATH: &str = "io.kubernetes.container.terminationMessagePath";
pub const TERMINATION_MESSAGE_POLICY: &str = "io.kubernetes.container.terminationMessagePolicy";
pub const PRE_STOP_HANDLER: &str = "io.kubernetes.container.preStopHandler";
pub const CONTAINER_PORTS: &str = "io.kubernetes.container.ports";
pub const POD_DELETION_GRACE_PERIOD: &str = "io.kubernetes.pod.deletionGracePeriod";
pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";

pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// Upstream's `HashContainer` (since 1.31): only the name and the image, the fields of a
/// container that may change on a live pod, so kubelet upgrades do not restart containers.
pub fn hash_container(container: &Container) -> u64 {
    let mut fields = std::collections::BTreeMap::new();
    fields.insert("image", container.image.clone().unwrap_or_default());
    fields.insert("name", container.name.clone());
    let json = serde_json::to_vec(&fields).unwrap_or_default();
    u64::from(fnv32a(&json))
}

fn fnv32a(data: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in data {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

fn meta(pod: &Pod) -> (String, String, String) {
    (
        pod.metadata.name.clone().unwrap_or_default(),
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.uid.clone().unwrap_or_default(),
    )
}

/// The sandbox's labels: the pod's own plus the kubelet's identity labels.
pub fn sandbox_labels(pod: &Pod) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = pod
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let (name, namespace, uid) = meta(pod);
    labels.insert(POD_NAME.into(), name);
    labels.insert(POD_NAMESPACE.into(), namespace);
    labels.insert(POD_UID.into(), uid);
    labels
}

pub fn sandbox_annotations(pod: &Pod) -> HashMap<String, String> {
    pod.metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

pub fn container_labels(pod: &Pod, container: &Container) -> HashMap<String, String> {
    let (name, namespace, uid) = meta(pod);
    HashMap::from([
        (POD_NAME.to_string(), name),
        (POD_NAMESPACE.to_string(), namespace),
        (POD_UID.to_string(), uid),
        (CONTAINER_NAME.to_string(), container.name.clone()),
    ])
}

pub fn container_annotations(
    pod: &Pod,
    container: &Container,
    restart_count: i32,
    extra: &std::collections::BTreeMap<String, String>,
) -> HashMap<String, String> {
    let mut out: HashMap<String, String> =
        extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    out.insert(
        CONTAINER_HASH.into(),
        format!("{:x}", hash_container(container)),
    );
    out.insert(CONTAINER_RESTART_COUNT.into(), restart_count.to_string());
    out.insert(
        TERMINATION_MESSAGE_PATH.into(),
        container
            .termination_message_path
            .clone()
            .unwrap_or_else(|| DEFAULT_TERMINATION_MESSAGE_PATH.into()),
    );
    out.insert(
        TERMINATION_MESSAGE_POLICY.into(),
        container
            .termination_message_policy
            .clone()
            .unwrap_or_else(|| "File".into()),
    );
    if let Some(g) = pod.metadata.deletion_grace_period_seconds {
        out.insert(POD_DELETION_GRACE_PERIOD.into(), g.to_string());
    }
    if let Some(g) = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    {
        out.insert(POD_TERMINATION_GRACE_PERIOD.into(), g.to_string());
    }
    if let Some(pre_stop) = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        && let Ok(json) = serde_json::to_string(pre_stop)
    {
        out.insert(PRE_STOP_HANDLER.into(), json);
    }
    if let Some(ports) = container.ports.as_ref().filter(|p| !p.is_empty())
        && let Ok(json) = serde_json::to_string(ports)
    {
        out.insert(CONTAINER_PORTS.into(), json);
    }
    out
}

/// What the annotations of a container tell about it when its pod's spec is gone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnnotatedInfo {
    pub hash: u64,
    pub restart_count: i32,
    pub termination_message_path: String,
    pub termination_message_policy: String,
    pub deletion_grace_period: Option<i64>,
    pub termination_grace_period: Option<i64>,
    pub pre_stop: Option<LifecycleHandler>,
}

pub fn annotated_info(annotations: &HashMap<String, String>) -> AnnotatedInfo {
    let get = |k: &str| annotations.get(k).map(String::as_str);
    AnnotatedInfo {
        hash: get(CONTAINER_HASH)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(0),
        restart_count: get(CONTAINER_RESTART_COUNT)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        termination_message_path: get(TERMINATION_MESSAGE_PATH).unwrap_or("").to_string(),
        termination_message_policy: get(TERMINATION_MESSAGE_POLICY).unwrap_or("").to_string(),
        deletion_grace_period: get(POD_DELETION_GRACE_PERIOD).and_then(|g| g.parse().ok()),
        termination_grace_period: get(POD_TERMINATION_GRACE_PERIOD).and_then(|g| g.parse().ok()),
        pre_stop: get(PRE_STOP_HANDLER).and_then(|j| serde_json::from_str(j).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ExecAction, Lifecycle, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn container(image: &str) -> Container {
        Container {
            name: "c".into(),
            image: Some(image.into()),
            ..Default::default()
        }
    }

    #[test]
    fn hash_follows_name_and_image_only() {
        let a = container("busybox:1");
        let mut b = a.clone();
        b.command = Some(vec!["sh".into()]);
        assert_eq!(hash_container(&a), hash_container(&b));
        assert_ne!(hash_container(&a), hash_container(&container("busybox:2")));
        assert!(hash_container(&a) <= u64::from(u32::MAX));
    }

    #[test]
    fn annotations_round_trip() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                deletion_grace_period_seconds: Some(5),
                ..Default::default()
            },
            spec: Some(PodSpec {
                termination_grace_period_seconds: Some(40),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut c = container("busybox");
        c.lifecycle = Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(vec!["sleep".into(), "1".into()]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        let ann = container_annotations(&pod, &c, 3, &Default::default());
        let info = annotated_info(&ann);
        assert_eq!(info.hash, hash_container(&c));
        assert_eq!(info.restart_count, 3);
        assert_eq!(info.termination_message_path, "/dev/termination-log");
        assert_eq!(info.termination_message_policy, "File");
        assert_eq!(info.deletion_grace_period, Some(5));
        assert_eq!(info.termination_grace_period, Some(40));
        assert_eq!(
            info.pre_stop,
            c.lifecycle.as_ref().and_then(|l| l.pre_stop.clone())
        );
        let labels = container_labels(&pod, &c);
        assert_eq!(labels[POD_UID], "u1");
        assert_eq!(labels[CONTAINER_NAME], "c");
    }
}
