//! The hollow runtime's memory: sandboxes and containers as a CRI runtime would report them,
//! with no process behind any of them. Containers run until they are stopped.

use k8s_cri::v1 as cri;
use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

pub(super) fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or_default()
}

/// A 64-hex-digit id, as containerd's.
pub(super) fn new_id() -> String {
    (0..4)
        .map(|_| format!("{:016x}", rand::random::<u64>()))
        .collect()
}

pub(super) struct Sandbox {
    pub status: cri::PodSandboxStatus,
}

pub(super) struct Container {
    pub status: cri::ContainerStatus,
    pub sandbox_id: String,
}

/// Everything the runtime holds, behind one lock (the calls are short and never await).
#[derive(Default)]
pub(super) struct State {
    pub sandboxes: BTreeMap<String, Sandbox>,
    pub containers: BTreeMap<String, Container>,
    /// Images "pulled": reference → id.
    pub images: BTreeMap<String, String>,
    /// How many sandboxes got an address: the next address's host part.
    next_ip: u32,
}

fn labels_match(labels: &HashMap<String, String>, selector: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl State {
    /// The next pod address in `prefix` (two octets after 10.), host parts 1..=254 then wrapping
    /// into the third octet: a hollow node never runs more than a few hundred pods.
    pub fn next_ip(&mut self, prefix: [u8; 2]) -> String {
        let n = self.next_ip;
        self.next_ip = self.next_ip.wrapping_add(1);
        let third = prefix[1].wrapping_add((n / 254) as u8);
        format!("10.{}.{}.{}", prefix[0], third, n % 254 + 1)
    }

    pub fn list_sandboxes(&self, filter: Option<&cri::PodSandboxFilter>) -> Vec<cri::PodSandbox> {
        self.sandboxes
            .values()
            .map(|s| &s.status)
            .filter(|s| match filter {
                None => true,
                Some(f) => {
                    (f.id.is_empty() || f.id == s.id)
                        && f.state.as_ref().is_none_or(|v| v.state == s.state)
                        && labels_match(&s.labels, &f.label_selector)
                }
            })
            .map(|s| cri::PodSandbox {
                id: s.id.clone(),
                metadata: s.metadata.clone(),
                state: s.state,
                created_at: s.created_at,
                labels: s.labels.clone(),
                annotations: s.annotations.clone(),
                runtime_handler: s.runtime_handler.clone(),
            })
            .collect()
    }

    pub fn list_containers(&self, filter: Option<&cri::ContainerFilter>) -> Vec<cri::Container> {
        self.containers
            .values()
            .filter(|c| match filter {
                None => true,
                Some(f) => {
                    (f.id.is_empty() || f.id == c.status.id)
                        && (f.pod_sandbox_id.is_empty() || f.pod_sandbox_id == c.sandbox_id)
                        && f.state.as_ref().is_none_or(|v| v.state == c.status.state)
                        && labels_match(&c.status.labels, &f.label_selector)
                }
            })
            .map(|c| cri::Container {
                id: c.status.id.clone(),
                pod_sandbox_id: c.sandbox_id.clone(),
                metadata: c.status.metadata.clone(),
                image: c.status.image.clone(),
                image_ref: c.status.image_ref.clone(),
                state: c.status.state,
                created_at: c.status.created_at,
                labels: c.status.labels.clone(),
                annotations: c.status.annotations.clone(),
                image_id: c.status.image_id.clone(),
            })
            .collect()
    }

    /// Marks the container exited (`exit_code`, `reason`) unless it already is.
    pub fn exit_container(&mut self, id: &str, exit_code: i32, reason: &str) -> bool {
        let Some(c) = self.containers.get_mut(id) else {
            return false;
        };
        if c.status.state != cri::ContainerState::ContainerExited as i32 {
            c.status.state = cri::ContainerState::ContainerExited as i32;
            c.status.finished_at = now_nanos();
            c.status.exit_code = exit_code;
            c.status.reason = reason.to_string();
        }
        true
    }

    /// Stops the sandbox and every container in it.
    pub fn stop_sandbox(&mut self, id: &str) {
        let members: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.sandbox_id == id)
            .map(|c| c.status.id.clone())
            .collect();
        for c in members {
            self.exit_container(&c, 137, "Error");
        }
        if let Some(s) = self.sandboxes.get_mut(id) {
            s.status.state = cri::PodSandboxState::SandboxNotready as i32;
        }
    }

    /// Removes the sandbox and every container in it.
    pub fn remove_sandbox(&mut self, id: &str) {
        self.containers.retain(|_, c| c.sandbox_id != id);
        self.sandboxes.remove(id);
    }

    /// The id of `reference` as "pulled" (a digest of the name: stable across restarts).
    pub fn image_id(reference: &str) -> String {
        use sha2::{Digest, Sha256};
        format!("sha256:{:x}", Sha256::digest(reference.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(state: &mut State, id: &str, sandbox: &str, name: &str) {
        let mut labels = HashMap::new();
        labels.insert("io.kubernetes.container.name".to_string(), name.to_string());
        state.containers.insert(
            id.to_string(),
            Container {
                status: cri::ContainerStatus {
                    id: id.to_string(),
                    state: cri::ContainerState::ContainerRunning as i32,
                    labels,
                    ..Default::default()
                },
                sandbox_id: sandbox.to_string(),
            },
        );
    }

    #[test]
    fn addresses_stay_in_the_prefix_and_never_end_in_zero_or_255() {
        let mut s = State::default();
        let ips: Vec<String> = (0..300).map(|_| s.next_ip([7, 9])).collect();
        assert_eq!(ips[0], "10.7.9.1");
        assert_eq!(ips[253], "10.7.9.254");
        assert_eq!(ips[254], "10.7.10.1");
        assert!(ips.iter().all(|ip| ip.starts_with("10.7.")));
    }

    #[test]
    fn container_filters_by_sandbox_state_and_labels() {
        let mut s = State::default();
        container(&mut s, "a", "s1", "web");
        container(&mut s, "b", "s1", "side");
        container(&mut s, "c", "s2", "web");
        s.exit_container("b", 0, "Completed");
        let by_sandbox = cri::ContainerFilter {
            pod_sandbox_id: "s1".into(),
            ..Default::default()
        };
        assert_eq!(s.list_containers(Some(&by_sandbox)).len(), 2);
        let running = cri::ContainerFilter {
            state: Some(cri::ContainerStateValue {
                state: cri::ContainerState::ContainerRunning as i32,
            }),
            ..Default::default()
        };
        let ids: Vec<String> = s
            .list_containers(Some(&running))
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["a", "c"]);
        let mut selector = HashMap::new();
        selector.insert(
            "io.kubernetes.container.name".to_string(),
            "web".to_string(),
        );
        let by_label = cri::ContainerFilter {
            label_selector: selector,
            ..Default::default()
        };
        assert_eq!(s.list_containers(Some(&by_label)).len(), 2);
    }

    #[test]
    fn stopping_a_sandbox_exits_its_containers_once() {
        let mut s = State::default();
        s.sandboxes.insert(
            "s1".into(),
            Sandbox {
                status: cri::PodSandboxStatus {
                    id: "s1".into(),
                    ..Default::default()
                },
            },
        );
        container(&mut s, "a", "s1", "web");
        s.exit_container("a", 0, "Completed");
        s.stop_sandbox("s1");
        let a = &s.containers["a"].status;
        assert_eq!((a.exit_code, a.reason.as_str()), (0, "Completed"));
        assert_eq!(
            s.sandboxes["s1"].status.state,
            cri::PodSandboxState::SandboxNotready as i32
        );
        s.remove_sandbox("s1");
        assert!(s.containers.is_empty() && s.sandboxes.is_empty());
    }
}
