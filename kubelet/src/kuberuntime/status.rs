//! What the runtime knows of pods: `get_pods` (grouped by the kubelet's uid label) and
//! `get_pod_status` (sandboxes and every container attempt, newest first, with the
//! termination message read from its file or the log tail).

use super::RuntimeManager;
use super::labels::{self, annotated_info};
use crate::container::{
    ContainerId, ContainerState, PodRuntimeStatus, RuntimeContainerStatus, RuntimePod,
    SandboxState, SandboxStatus,
};
use anyhow::Context;
use k8s_cri::v1 as cri;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};

/// Upstream's limits on termination messages: 4 KiB from the file, or the last 80 lines
/// (at most 2 KiB) of the log.
const MAX_MESSAGE_BYTES: u64 = 4096;
const MAX_LOG_LINES: usize = 80;
const MAX_LOG_BYTES: usize = 2048;

pub fn container_state(state: i32) -> ContainerState {
    match cri::ContainerState::try_from(state) {
        Ok(cri::ContainerState::ContainerCreated) => ContainerState::Created,
        Ok(cri::ContainerState::ContainerRunning) => ContainerState::Running,
        Ok(cri::ContainerState::ContainerExited) => ContainerState::Exited,
        _ => ContainerState::Unknown,
    }
}

pub fn sandbox_state(state: i32) -> SandboxState {
    if state == cri::PodSandboxState::SandboxReady as i32 {
        SandboxState::Ready
    } else {
        SandboxState::NotReady
    }
}

fn uid_filter(uid: &str) -> HashMap<String, String> {
    HashMap::from([(labels::POD_UID.to_string(), uid.to_string())])
}

/// The last `max` bytes of a file.
fn read_tail(path: &str, max: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len > max {
        f.seek(SeekFrom::Start(len - max))?;
    }
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The content of a CRI-format log (`<time> <stream> <P|F> <text>`), partial lines joined;
/// the last `max_lines` lines, at most `max_bytes` of them.
pub fn cri_log_tail(raw: &[u8], max_lines: usize, max_bytes: usize) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut lines: Vec<String> = Vec::new();
    let mut partial = String::new();
    for record in text.lines() {
        let mut parts = record.splitn(4, ' ');
        let (Some(_time), Some(_stream), Some(tag)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let content = parts.next().unwrap_or("");
        partial.push_str(content);
        if tag != "P" {
            lines.push(std::mem::take(&mut partial) + "\n");
        }
    }
    let start = lines.len().saturating_sub(max_lines);
    let mut out: String = lines[start..].concat();
    if out.len() > max_bytes {
        let mut cut = max_bytes;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

/// Upstream's `getTerminationMessage` plus the log fallback.
fn termination_message(s: &cri::ContainerStatus, path: &str, policy: &str) -> String {
    let fallback = policy == "FallbackToLogsOnError" && s.exit_code != 0;
    let from_file = if path.is_empty() {
        None
    } else {
        s.mounts.iter().find(|m| m.container_path == path).map(|m| {
            match read_tail(&m.host_path, MAX_MESSAGE_BYTES) {
                Ok(data) => Ok(String::from_utf8_lossy(&data).into_owned()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
                Err(e) => Err(format!(
                    "Error on reading termination log {}: {e}",
                    m.host_path
                )),
            }
        })
    };
    match from_file {
        Some(Err(message)) => message,
        Some(Ok(message)) if !message.is_empty() => message,
        _ if fallback && !s.log_path.is_empty() => read_tail(&s.log_path, 64 * 1024)
            .map(|raw| cri_log_tail(&raw, MAX_LOG_LINES, MAX_LOG_BYTES))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

pub fn convert_container_status(runtime: &str, s: &cri::ContainerStatus) -> RuntimeContainerStatus {
    let info = annotated_info(&s.annotations);
    let state = container_state(s.state);
    let mut message = s.message.clone();
    if state == ContainerState::Exited {
        let t = termination_message(
            s,
            &info.termination_message_path,
            &info.termination_message_policy,
        );
        if !t.is_empty() {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&t);
        }
    }
    let name = s
        .labels
        .get(labels::CONTAINER_NAME)
        .cloned()
        .or_else(|| s.metadata.as_ref().map(|m| m.name.clone()))
        .unwrap_or_default();
    RuntimeContainerStatus {
        id: ContainerId {
            runtime: runtime.to_string(),
            id: s.id.clone(),
        },
        name,
        state,
        created_at: s.created_at,
        started_at: s.started_at,
        finished_at: s.finished_at,
        exit_code: s.exit_code,
        image: s
            .image
            .as_ref()
            .map(|i| {
                if i.user_specified_image.is_empty() {
                    i.image.clone()
                } else {
                    i.user_specified_image.clone()
                }
            })
            .unwrap_or_default(),
        image_ref: s.image_ref.clone(),
        hash: info.hash,
        restart_count: info.restart_count,
        reason: s.reason.clone(),
        message,
        log_path: s.log_path.clone(),
    }
}

fn sandbox_ips(s: &cri::PodSandboxStatus) -> Vec<String> {
    let Some(n) = &s.network else {
        return Vec::new();
    };
    std::iter::once(n.ip.clone())
        .chain(n.additional_ips.iter().map(|ip| ip.ip.clone()))
        .filter(|ip| !ip.is_empty())
        .collect()
}

fn sandbox_host_network(s: &cri::PodSandboxStatus) -> bool {
    s.linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == cri::NamespaceMode::Node as i32)
}

impl RuntimeManager {
    pub(super) async fn pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> anyhow::Result<PodRuntimeStatus> {
        let mut sandboxes = self
            .client
            .list_pod_sandbox(Some(cri::PodSandboxFilter {
                label_selector: uid_filter(uid),
                ..Default::default()
            }))
            .await
            .with_context(|| format!("listing sandboxes of pod {uid}"))?;
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let mut status = PodRuntimeStatus {
            uid: uid.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            ..Default::default()
        };
        for (idx, sb) in sandboxes.iter().enumerate() {
            let s = match self.client.pod_sandbox_status(&sb.id).await {
                Ok(s) => s,
                // Removed between the list and now.
                Err(e) if e.code() == tonic::Code::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("status of sandbox {}", sb.id)),
            };
            let state = sandbox_state(s.state);
            let ips = sandbox_ips(&s);
            if idx == 0 && state == SandboxState::Ready {
                status.ips = ips.clone();
            }
            status.sandboxes.push(SandboxStatus {
                id: s.id.clone(),
                state,
                created_at: s.created_at,
                attempt: s.metadata.as_ref().map_or(0, |m| m.attempt),
                ips,
                host_network: sandbox_host_network(&s),
            });
        }
        let containers = self
            .client
            .list_containers(Some(cri::ContainerFilter {
                label_selector: uid_filter(uid),
                ..Default::default()
            }))
            .await
            .with_context(|| format!("listing containers of pod {uid}"))?;
        for c in &containers {
            match self.client.container_status(&c.id).await {
                Ok(s) => status
                    .containers
                    .push(convert_container_status(&self.runtime_name, &s)),
                Err(e) if e.code() == tonic::Code::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("status of container {}", c.id)),
            }
        }
        status
            .containers
            .sort_by_key(|c| std::cmp::Reverse(c.created_at));
        Ok(status)
    }

    pub(super) async fn list_pods(&self, all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        let ready_only = (!all).then_some(cri::PodSandboxStateValue {
            state: cri::PodSandboxState::SandboxReady as i32,
        });
        let sandboxes = self
            .client
            .list_pod_sandbox(Some(cri::PodSandboxFilter {
                state: ready_only,
                ..Default::default()
            }))
            .await
            .context("listing sandboxes")?;
        let running_only = (!all).then_some(cri::ContainerStateValue {
            state: cri::ContainerState::ContainerRunning as i32,
        });
        let containers = self
            .client
            .list_containers(Some(cri::ContainerFilter {
                state: running_only,
                ..Default::default()
            }))
            .await
            .context("listing containers")?;
        let mut pods: BTreeMap<String, RuntimePod> = BTreeMap::new();
        let mut entry = |labels: &HashMap<String, String>| -> Option<String> {
            let uid = labels.get(labels::POD_UID)?.clone();
            let pod = pods.entry(uid.clone()).or_insert_with(|| RuntimePod {
                uid: uid.clone(),
                ..Default::default()
            });
            if pod.name.is_empty() {
                pod.name = labels.get(labels::POD_NAME).cloned().unwrap_or_default();
                pod.namespace = labels
                    .get(labels::POD_NAMESPACE)
                    .cloned()
                    .unwrap_or_default();
            }
            Some(uid)
        };
        let mut sandbox_rows = Vec::new();
        for sb in &sandboxes {
            if let Some(uid) = entry(&sb.labels) {
                sandbox_rows.push((uid, sb.id.clone(), sandbox_state(sb.state), sb.created_at));
            }
        }
        let mut container_rows = Vec::new();
        for c in &containers {
            if let Some(uid) = entry(&c.labels) {
                let name = c
                    .labels
                    .get(labels::CONTAINER_NAME)
                    .cloned()
                    .unwrap_or_default();
                container_rows.push((
                    uid,
                    c.id.clone(),
                    name,
                    container_state(c.state),
                    c.created_at,
                ));
            }
        }
        sandbox_rows.sort_by_key(|r| std::cmp::Reverse(r.3));
        container_rows.sort_by_key(|r| std::cmp::Reverse(r.4));
        for (uid, id, state, _) in sandbox_rows {
            if let Some(p) = pods.get_mut(&uid) {
                p.sandboxes.push((id, state));
            }
        }
        for (uid, id, name, state, _) in container_rows {
            if let Some(p) = pods.get_mut(&uid) {
                p.containers.push((
                    ContainerId {
                        runtime: self.runtime_name.clone(),
                        id,
                    },
                    name,
                    state,
                ));
            }
        }
        Ok(pods.into_values().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_joins_partials_and_limits() {
        let log = b"2024-01-01T00:00:00.1Z stdout F one\n\
2024-01-01T00:00:00.2Z stderr P tw\n\
2024-01-01T00:00:00.3Z stderr F o\n\
garbage\n\
2024-01-01T00:00:00.4Z stdout F three\n";
        assert_eq!(cri_log_tail(log, 80, 2048), "one\ntwo\nthree\n");
        assert_eq!(cri_log_tail(log, 2, 2048), "two\nthree\n");
        assert_eq!(cri_log_tail(log, 80, 6), "one\ntw");
        assert_eq!(cri_log_tail(b"", 80, 2048), "");
    }

    #[test]
    fn termination_message_from_file_or_logs() {
        let dir = tempfile::tempdir().unwrap();
        let msg = dir.path().join("msg");
        let log = dir.path().join("0.log");
        std::fs::write(&log, "2024-01-01T00:00:00Z stdout F boom\n").unwrap();
        let status = |exit_code: i32| cri::ContainerStatus {
            exit_code,
            log_path: log.to_string_lossy().into_owned(),
            mounts: vec![cri::Mount {
                container_path: "/dev/termination-log".into(),
                host_path: msg.to_string_lossy().into_owned(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let path = "/dev/termination-log";
        // No file yet: the log only with the fallback policy and a failure.
        assert_eq!(termination_message(&status(1), path, "File"), "");
        assert_eq!(
            termination_message(&status(1), path, "FallbackToLogsOnError"),
            "boom\n"
        );
        assert_eq!(
            termination_message(&status(0), path, "FallbackToLogsOnError"),
            ""
        );
        std::fs::write(&msg, "written by the app").unwrap();
        assert_eq!(
            termination_message(&status(1), path, "FallbackToLogsOnError"),
            "written by the app"
        );
        assert_eq!(termination_message(&status(0), "/other", "File"), "");
        std::fs::write(&msg, "x".repeat(5000)).unwrap();
        assert_eq!(termination_message(&status(0), path, "File").len(), 4096);
    }
}
