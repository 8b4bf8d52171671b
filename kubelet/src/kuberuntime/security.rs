//! Security contexts for CRI: the sandbox's (pod-level: namespaces, user, groups, seccomp) and
//! each container's (the container's settings over the pod's), as upstream's
//! `determineEffectiveSecurityContext` and `verifyRunAsNonRoot`.

use k8s_cri::v1::security_profile::ProfileType;
use k8s_cri::v1::{
    Capability, Int64Value, LinuxContainerSecurityContext, LinuxSandboxSecurityContext,
    NamespaceMode, NamespaceOption, SecurityProfile,
};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, SeccompProfile};

/// What runc masks and makes read-only under `/proc` and `/sys` for the default procMount.
pub const DEFAULT_MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
pub const DEFAULT_READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

pub fn host_network(spec: &PodSpec) -> bool {
    spec.host_network.unwrap_or(false)
}

/// Network, PID and IPC namespaces from hostNetwork, hostPID, hostIPC and
/// shareProcessNamespace.
pub fn namespace_options(spec: &PodSpec) -> NamespaceOption {
    let mode = |host: Option<bool>, otherwise: NamespaceMode| {
        if host.unwrap_or(false) {
            NamespaceMode::Node as i32
        } else {
            otherwise as i32
        }
    };
    let pid_default = if spec.share_process_namespace.unwrap_or(false) {
        NamespaceMode::Pod
    } else {
        NamespaceMode::Container
    };
    NamespaceOption {
        network: mode(spec.host_network, NamespaceMode::Pod),
        pid: mode(spec.host_pid, pid_default),
        ipc: mode(spec.host_ipc, NamespaceMode::Pod),
        ..Default::default()
    }
}

/// Upstream's seccomp choice: the container's profile, else the pod's, else Unconfined
/// (the kubelet's `seccompDefault` is off by default).
pub fn seccomp(
    pod_profile: Option<&SeccompProfile>,
    container_profile: Option<&SeccompProfile>,
    profile_root: &str,
) -> SecurityProfile {
    let Some(p) = container_profile.or(pod_profile) else {
        return SecurityProfile {
            profile_type: ProfileType::Unconfined as i32,
            localhost_ref: String::new(),
        };
    };
    match p.type_.as_str() {
        "RuntimeDefault" => SecurityProfile {
            profile_type: ProfileType::RuntimeDefault as i32,
            localhost_ref: String::new(),
        },
        "Localhost" => SecurityProfile {
            profile_type: ProfileType::Localhost as i32,
            localhost_ref: format!(
                "{}/{}",
                profile_root.trim_end_matches('/'),
                p.localhost_profile.as_deref().unwrap_or_default()
            ),
        },
        _ => SecurityProfile {
            profile_type: ProfileType::Unconfined as i32,
            localhost_ref: String::new(),
        },
    }
}

fn supplemental_groups(spec: &PodSpec) -> Vec<i64> {
    let sc = spec.security_context.as_ref();
    let mut groups: Vec<i64> = sc
        .and_then(|s| s.supplemental_groups.clone())
        .unwrap_or_default();
    if let Some(fs_group) = sc.and_then(|s| s.fs_group)
        && !groups.contains(&fs_group)
    {
        groups.push(fs_group);
    }
    groups
}

fn int64(v: Option<i64>) -> Option<Int64Value> {
    v.map(|value| Int64Value { value })
}

fn any_privileged(spec: &PodSpec) -> bool {
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false)
        })
}

pub fn sandbox_security_context(spec: &PodSpec, profile_root: &str) -> LinuxSandboxSecurityContext {
    let sc = spec.security_context.as_ref();
    LinuxSandboxSecurityContext {
        namespace_options: Some(namespace_options(spec)),
        run_as_user: int64(sc.and_then(|s| s.run_as_user)),
        run_as_group: int64(sc.and_then(|s| s.run_as_group)),
        supplemental_groups: supplemental_groups(spec),
        privileged: any_privileged(spec),
        seccomp: Some(seccomp(
            sc.and_then(|s| s.seccomp_profile.as_ref()),
            None,
            profile_root,
        )),
        ..Default::default()
    }
}

/// The user settings that matter for the non-root check: the container's over the pod's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EffectiveUser {
    pub run_as_user: Option<i64>,
    pub run_as_group: Option<i64>,
    pub run_as_non_root: bool,
}

pub fn effective_user(pod_spec: &PodSpec, container: &Container) -> EffectiveUser {
    let psc = pod_spec.security_context.as_ref();
    let csc = container.security_context.as_ref();
    EffectiveUser {
        run_as_user: csc
            .and_then(|s| s.run_as_user)
            .or(psc.and_then(|s| s.run_as_user)),
        run_as_group: csc
            .and_then(|s| s.run_as_group)
            .or(psc.and_then(|s| s.run_as_group)),
        run_as_non_root: csc
            .and_then(|s| s.run_as_non_root)
            .or(psc.and_then(|s| s.run_as_non_root))
            .unwrap_or(false),
    }
}

pub fn container_security_context(
    pod: &Pod,
    container: &Container,
    profile_root: &str,
) -> LinuxContainerSecurityContext {
    let default_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let psc = spec.security_context.as_ref();
    let csc = container.security_context.as_ref();
    let user = effective_user(spec, container);
    let privileged = csc.and_then(|s| s.privileged).unwrap_or(false);
    let caps = csc.and_then(|s| s.capabilities.as_ref());
    let unmasked = csc.and_then(|s| s.proc_mount.as_deref()) == Some("Unmasked");
    let (masked_paths, readonly_paths) = if privileged || unmasked {
        (Vec::new(), Vec::new())
    } else {
        (
            DEFAULT_MASKED_PATHS.iter().map(|s| s.to_string()).collect(),
            DEFAULT_READONLY_PATHS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        )
    };
    LinuxContainerSecurityContext {
        capabilities: caps.map(|c| Capability {
            add_capabilities: c.add.clone().unwrap_or_default(),
            drop_capabilities: c.drop.clone().unwrap_or_default(),
            ..Default::default()
        }),
        privileged,
        namespace_options: Some(namespace_options(spec)),
        run_as_user: int64(user.run_as_user),
        run_as_group: int64(user.run_as_group),
        readonly_rootfs: csc
            .and_then(|s| s.read_only_root_filesystem)
            .unwrap_or(false),
        supplemental_groups: supplemental_groups(spec),
        no_new_privs: csc.and_then(|s| s.allow_privilege_escalation) == Some(false),
        masked_paths,
        readonly_paths,
        seccomp: Some(seccomp(
            psc.and_then(|s| s.seccomp_profile.as_ref()),
            csc.and_then(|s| s.seccomp_profile.as_ref()),
            profile_root,
        )),
        ..Default::default()
    }
}

/// Upstream's `verifyRunAsNonRoot`: with runAsNonRoot the effective user (the pod's or
/// container's runAsUser, else the image's) must be known and non-zero.
pub fn verify_run_as_non_root(
    user: EffectiveUser,
    image_uid: Option<i64>,
    image_username: &str,
    pod: &str,
    container: &str,
) -> Result<(), String> {
    if !user.run_as_non_root {
        return Ok(());
    }
    if let Some(uid) = user.run_as_user {
        if uid == 0 {
            return Err(format!(
                "container's runAsUser breaks non-root policy (pod: {pod:?}, container: {container})"
            ));
        }
        return Ok(());
    }
    match image_uid {
        Some(0) => Err(format!(
            "container has runAsNonRoot and image will run as root (pod: {pod:?}, container: {container})"
        )),
        Some(_) => Ok(()),
        None if !image_username.is_empty() => Err(format!(
            "container has runAsNonRoot and image has non-numeric user ({image_username}), cannot verify user is non-root (pod: {pod:?}, container: {container})"
        )),
        // No user in the image means root.
        None => Err(format!(
            "container has runAsNonRoot and image will run as root (pod: {pod:?}, container: {container})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Capabilities, PodSecurityContext, SecurityContext};

    #[test]
    fn namespaces_follow_host_flags() {
        let cases = [
            ((None, None, None, None), (0, 1, 0)),
            ((Some(true), None, None, None), (2, 1, 0)),
            ((None, Some(true), Some(true), None), (0, 2, 2)),
            ((None, None, None, Some(true)), (0, 0, 0)),
        ];
        for ((net, pid, ipc, share), (wn, wp, wi)) in cases {
            let spec = PodSpec {
                host_network: net,
                host_pid: pid,
                host_ipc: ipc,
                share_process_namespace: share,
                ..Default::default()
            };
            let ns = namespace_options(&spec);
            assert_eq!(
                (ns.network, ns.pid, ns.ipc),
                (wn, wp, wi),
                "{net:?} {pid:?} {ipc:?} {share:?}"
            );
        }
    }

    fn profile(t: &str, local: Option<&str>) -> SeccompProfile {
        SeccompProfile {
            type_: t.into(),
            localhost_profile: local.map(Into::into),
        }
    }

    #[test]
    fn seccomp_prefers_the_container_then_the_pod() {
        let rd = profile("RuntimeDefault", None);
        let un = profile("Unconfined", None);
        let lo = profile("Localhost", Some("a/b.json"));
        let cases = [
            (None, None, ProfileType::Unconfined, ""),
            (Some(&rd), None, ProfileType::RuntimeDefault, ""),
            (Some(&rd), Some(&un), ProfileType::Unconfined, ""),
            (
                None,
                Some(&lo),
                ProfileType::Localhost,
                "/var/lib/kubelet/seccomp/a/b.json",
            ),
        ];
        for (pod, container, want, local) in cases {
            let p = seccomp(pod, container, "/var/lib/kubelet/seccomp/");
            assert_eq!(p.profile_type, want as i32);
            assert_eq!(p.localhost_ref, local);
        }
    }

    #[test]
    fn container_context_merges_over_the_pod() {
        let pod = Pod {
            spec: Some(PodSpec {
                security_context: Some(PodSecurityContext {
                    run_as_user: Some(1000),
                    run_as_group: Some(3000),
                    fs_group: Some(2000),
                    supplemental_groups: Some(vec![4000]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let c = Container {
            name: "c".into(),
            security_context: Some(SecurityContext {
                run_as_user: Some(1001),
                read_only_root_filesystem: Some(true),
                allow_privilege_escalation: Some(false),
                capabilities: Some(Capabilities {
                    add: Some(vec!["NET_ADMIN".into()]),
                    drop: Some(vec!["ALL".into()]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let sc = container_security_context(&pod, &c, "/r");
        assert_eq!(sc.run_as_user, Some(Int64Value { value: 1001 }));
        assert_eq!(sc.run_as_group, Some(Int64Value { value: 3000 }));
        assert_eq!(sc.supplemental_groups, vec![4000, 2000]);
        assert!(sc.readonly_rootfs && sc.no_new_privs && !sc.privileged);
        let caps = sc.capabilities.unwrap();
        assert_eq!(
            (caps.add_capabilities, caps.drop_capabilities),
            (vec!["NET_ADMIN".to_string()], vec!["ALL".to_string()])
        );
        assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());

        let mut privileged = c.clone();
        privileged.security_context.as_mut().unwrap().privileged = Some(true);
        let sc = container_security_context(&pod, &privileged, "/r");
        assert!(sc.privileged && sc.masked_paths.is_empty() && sc.readonly_paths.is_empty());
        let sandbox = sandbox_security_context(pod.spec.as_ref().unwrap(), "/r");
        assert_eq!(sandbox.run_as_user, Some(Int64Value { value: 1000 }));
        assert!(!sandbox.privileged);
    }

    #[test]
    fn run_as_non_root_is_verified() {
        let user = |uid: Option<i64>, non_root: bool| EffectiveUser {
            run_as_user: uid,
            run_as_group: None,
            run_as_non_root: non_root,
        };
        let cases = [
            (user(None, false), None, "", true),
            (user(Some(0), true), None, "", false),
            (user(Some(10), true), Some(0), "", true),
            (user(None, true), Some(0), "", false),
            (user(None, true), Some(65534), "", true),
            (user(None, true), None, "nobody", false),
            (user(None, true), None, "", false),
        ];
        for (u, image_uid, name, ok) in cases {
            assert_eq!(
                verify_run_as_non_root(u, image_uid, name, "p_ns", "c").is_ok(),
                ok,
                "{u:?} {image_uid:?} {name}"
            );
        }
    }
}
