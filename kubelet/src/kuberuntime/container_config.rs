//! The CRI config of one container (upstream's `generateContainerConfig`): image, command and
//! args with `$(VAR)` expanded, env, mounts, log path, labels and annotations, resources and
//! the security context.

use super::labels::{self, DEFAULT_TERMINATION_MESSAGE_PATH};
use super::resources::linux_resources;
use super::security::container_security_context;
use crate::container::{MountPropagation, RunContainerOptions};
use crate::envvars::expand_command_and_args;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod};

/// The log file of one attempt, relative to the sandbox's log directory.
pub fn container_log_path(name: &str, restart_count: i32) -> String {
    format!("{name}/{restart_count}.log")
}

fn propagation(p: MountPropagation) -> i32 {
    match p {
        MountPropagation::Private => cri::MountPropagation::PropagationPrivate as i32,
        MountPropagation::HostToContainer => {
            cri::MountPropagation::PropagationHostToContainer as i32
        }
        MountPropagation::Bidirectional => cri::MountPropagation::PropagationBidirectional as i32,
    }
}

pub struct ContainerInputs<'a> {
    pub restart_count: i32,
    /// What the container is created from: the image id the pull resolved.
    pub image_ref: &'a str,
    pub seccomp_profile_root: &'a str,
    pub memory_capacity: i64,
}

pub fn container_config(
    pod: &Pod,
    container: &Container,
    opts: &RunContainerOptions,
    inputs: ContainerInputs<'_>,
) -> cri::ContainerConfig {
    let (command, args) = expand_command_and_args(
        container.command.as_deref().unwrap_or_default(),
        container.args.as_deref().unwrap_or_default(),
        &opts.envs,
    );
    let mut mounts: Vec<cri::Mount> = opts
        .mounts
        .iter()
        .map(|m| cri::Mount {
            container_path: m.container_path.clone(),
            host_path: m.host_path.clone(),
            readonly: m.read_only,
            propagation: propagation(m.propagation),
            ..Default::default()
        })
        .collect();
    if let Some(host_path) = &opts.termination_message_host_path {
        let path = container
            .termination_message_path
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_TERMINATION_MESSAGE_PATH.into());
        mounts.push(cri::Mount {
            container_path: path,
            host_path: host_path.clone(),
            ..Default::default()
        });
    }
    cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: container.name.clone(),
            attempt: inputs.restart_count.max(0) as u32,
        }),
        image: Some(cri::ImageSpec {
            image: inputs.image_ref.to_string(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command,
        args,
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: opts
            .envs
            .iter()
            .map(|(key, value)| cri::KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
        mounts,
        labels: labels::container_labels(pod, container),
        annotations: labels::container_annotations(
            pod,
            container,
            inputs.restart_count,
            &opts.annotations,
        ),
        log_path: container_log_path(&container.name, inputs.restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(cri::LinuxContainerConfig {
            resources: Some(linux_resources(pod, container, inputs.memory_capacity)),
            security_context: Some(container_security_context(
                pod,
                container,
                inputs.seccomp_profile_root,
            )),
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Mount;
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn container_config_from_spec_and_options() {
        let container = Container {
            name: "app".into(),
            image: Some("busybox:1.36".into()),
            command: Some(vec!["sh".into(), "-c".into()]),
            args: Some(vec!["echo $(GREETING) $(MISSING) $$(GREETING)".into()]),
            working_dir: Some("/work".into()),
            tty: Some(true),
            termination_message_path: Some("/tmp/msg".into()),
            ..Default::default()
        };
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![container.clone()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let opts = RunContainerOptions {
            envs: vec![("GREETING".into(), "hi".into())],
            mounts: vec![Mount {
                container_path: "/data".into(),
                host_path: "/var/lib/kubelet/pods/u/volumes/x".into(),
                read_only: true,
                propagation: MountPropagation::HostToContainer,
            }],
            termination_message_host_path: Some(
                "/var/lib/kubelet/pods/u/containers/app/abc".into(),
            ),
            ..Default::default()
        };
        let cfg = container_config(
            &pod,
            &container,
            &opts,
            ContainerInputs {
                restart_count: 3,
                image_ref: "sha256:abc",
                seccomp_profile_root: "/r",
                memory_capacity: 1 << 30,
            },
        );
        assert_eq!(cfg.args, vec!["echo hi $(MISSING) $(GREETING)"]);
        assert_eq!(cfg.command, vec!["sh", "-c"]);
        assert_eq!(cfg.metadata.unwrap().attempt, 3);
        assert_eq!(cfg.log_path, "app/3.log");
        let image = cfg.image.unwrap();
        assert_eq!(
            (image.image.as_str(), image.user_specified_image.as_str()),
            ("sha256:abc", "busybox:1.36")
        );
        assert_eq!(cfg.working_dir, "/work");
        assert!(cfg.tty && !cfg.stdin);
        assert_eq!(cfg.envs[0].key, "GREETING");
        assert_eq!(cfg.mounts.len(), 2);
        assert!(cfg.mounts[0].readonly);
        assert_eq!(
            cfg.mounts[0].propagation,
            cri::MountPropagation::PropagationHostToContainer as i32
        );
        assert_eq!(cfg.mounts[1].container_path, "/tmp/msg");
        assert!(!cfg.mounts[1].readonly);
        assert_eq!(cfg.labels[labels::CONTAINER_NAME], "app");
        assert_eq!(cfg.annotations[labels::CONTAINER_RESTART_COUNT], "3");
        assert_eq!(
            cfg.annotations[labels::TERMINATION_MESSAGE_PATH],
            "/tmp/msg"
        );
        let linux = cfg.linux.unwrap();
        assert_eq!(linux.resources.unwrap().cpu_shares, 2);
        assert!(linux.security_context.is_some());
    }
}
