//! What the kubelet knows of a pod's containers at the runtime, in runtime-neutral terms: the
//! shapes the runtime manager reports, PLEG compares and the status manager turns into a
//! `PodStatus`. Mirrors upstream's `pkg/kubelet/container` types, kept small.

use std::collections::BTreeMap;
use std::fmt;

/// The runtime's id of a container or sandbox, shown in the API as `<type>://<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerId {
    /// The runtime's type name, `containerd` here.
    pub runtime: String,
    pub id: String,
}

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.runtime, self.id)
    }
}

impl ContainerId {
    /// Parses `containerd://abc`; None when there is no `://`.
    pub fn parse(s: &str) -> Option<Self> {
        let (runtime, id) = s.split_once("://")?;
        (!runtime.is_empty() && !id.is_empty()).then(|| Self {
            runtime: runtime.to_string(),
            id: id.to_string(),
        })
    }
}

/// A container's state as the runtime reports it (CRI `ContainerState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerState {
    Created,
    Running,
    Exited,
    Unknown,
}

/// A sandbox's state (CRI `PodSandboxState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxState {
    Ready,
    NotReady,
}

/// One container of a pod as the runtime reports it, newest attempt first in
/// [`PodRuntimeStatus::containers`]. Times are Unix nanoseconds (0 = unset), as CRI gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeContainerStatus {
    pub id: ContainerId,
    /// The container's name in the pod spec.
    pub name: String,
    pub state: ContainerState,
    pub created_at: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub exit_code: i32,
    /// The image as the spec named it.
    pub image: String,
    /// The image's resolved reference (`imageID` in the API), e.g. a digest.
    pub image_ref: String,
    /// The hash of the container's spec when it was created: a changed spec restarts it.
    pub hash: u64,
    /// The restart count the kubelet recorded on the container when it created it.
    pub restart_count: i32,
    /// The runtime's reason for the state (`OOMKilled`, `Error`, `Completed`, ...).
    pub reason: String,
    pub message: String,
    /// Where the runtime writes this container's log (CRI log format).
    pub log_path: String,
}

/// One sandbox of a pod, newest first in [`PodRuntimeStatus::sandboxes`].
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxStatus {
    pub id: String,
    pub state: SandboxState,
    pub created_at: i64,
    /// The sandbox's attempt number (bumped each time the kubelet recreates it).
    pub attempt: u32,
    /// Primary IP first; empty for hostNetwork pods (the kubelet then reports the host's IPs).
    pub ips: Vec<String>,
    pub host_network: bool,
}

/// Everything the runtime knows of one pod: what `GetPodStatus` returns upstream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodRuntimeStatus {
    pub uid: String,
    pub name: String,
    pub namespace: String,
    /// The pod's IPs from its newest ready sandbox.
    pub ips: Vec<String>,
    pub sandboxes: Vec<SandboxStatus>,
    pub containers: Vec<RuntimeContainerStatus>,
}

impl PodRuntimeStatus {
    /// The newest status of the container named `name`, if it ever ran.
    pub fn container(&self, name: &str) -> Option<&RuntimeContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// Every attempt of the container named `name`, newest first.
    pub fn attempts<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a RuntimeContainerStatus> + 'a {
        self.containers.iter().filter(move |c| c.name == name)
    }
}

/// A pod as a runtime listing sees it (`GetPods`): enough to find and kill what runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuntimePod {
    pub uid: String,
    pub name: String,
    pub namespace: String,
    pub sandboxes: Vec<(String, SandboxState)>,
    /// (id, container name, state) of each container, every attempt.
    pub containers: Vec<(ContainerId, String, ContainerState)>,
}

/// A bind mount of a host path into a container, as volumes produce them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub container_path: String,
    pub host_path: String,
    pub read_only: bool,
    /// CRI `MountPropagation`: private unless the volumeMount asked otherwise.
    pub propagation: MountPropagation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MountPropagation {
    #[default]
    Private,
    HostToContainer,
    Bidirectional,
}

/// What a container needs from the rest of the kubelet before the runtime can create it:
/// upstream's `RunContainerOptions`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunContainerOptions {
    /// Resolved environment, in the order the container declares it (later wins on duplicates).
    pub envs: Vec<(String, String)>,
    pub mounts: Vec<Mount>,
    /// The container's `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf` mounts are in
    /// `mounts`; this is the hostname the sandbox was given.
    pub hostname: String,
    /// Where `terminationMessagePath` is backed on the host (bind-mounted read-write).
    pub termination_message_host_path: Option<String>,
    /// Annotations and labels to pass through to the runtime.
    pub annotations: BTreeMap<String, String>,
}

/// How a probe (or the runtime, for the liveness-driven restart) judged a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeResult {
    Success,
    Failure,
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_round_trip_and_reject_bare_ids() {
        let id = ContainerId::parse("containerd://abc").expect("parses");
        assert_eq!(id.to_string(), "containerd://abc");
        assert_eq!(ContainerId::parse("abc"), None);
        assert_eq!(ContainerId::parse("://abc"), None);
    }
}
