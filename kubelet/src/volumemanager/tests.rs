//! The manager against a temp root and in-memory objects: what each plugin writes, refresh,
//! mounts, teardown.

use super::*;
use crate::envvars::tests::FakeSource;
use k8s_openapi::api::core::v1::{
    ConfigMapProjection, ConfigMapVolumeSource, Container, DownwardAPIVolumeFile,
    DownwardAPIVolumeSource, EmptyDirVolumeSource, HostPathVolumeSource, KeyToPath,
    ObjectFieldSelector, PersistentVolumeClaimVolumeSource, Pod, PodSpec, ProjectedVolumeSource,
    SecretVolumeSource, ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;

fn vol(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

fn test_pod(host_dir: &Path) -> Pod {
    let items = |pairs: &[(&str, &str, Option<i32>)]| {
        Some(
            pairs
                .iter()
                .map(|(k, p, m)| KeyToPath {
                    key: k.to_string(),
                    path: p.to_string(),
                    mode: *m,
                })
                .collect(),
        )
    };
    let volumes = vec![
        Volume {
            config_map: Some(ConfigMapVolumeSource {
                name: "cfg".into(),
                ..Default::default()
            }),
            ..vol("cfg")
        },
        Volume {
            secret: Some(SecretVolumeSource {
                secret_name: Some("sec".into()),
                items: items(&[("password", "creds/pw", Some(0o400))]),
                ..Default::default()
            }),
            ..vol("sec")
        },
        Volume {
            downward_api: Some(DownwardAPIVolumeSource {
                items: Some(vec![DownwardAPIVolumeFile {
                    path: "labels".into(),
                    field_ref: Some(ObjectFieldSelector {
                        api_version: None,
                        field_path: "metadata.labels".into(),
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..vol("info")
        },
        Volume {
            projected: Some(ProjectedVolumeSource {
                default_mode: Some(0o440),
                sources: Some(vec![
                    VolumeProjection {
                        service_account_token: Some(ServiceAccountTokenProjection {
                            audience: Some("vault".into()),
                            expiration_seconds: Some(3600),
                            path: "token".into(),
                        }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        config_map: Some(ConfigMapProjection {
                            name: "cfg".into(),
                            items: items(&[("greeting", "hello.txt", None)]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
            }),
            ..vol("proj")
        },
        Volume {
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..vol("scratch")
        },
        Volume {
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity("8Mi".into())),
            }),
            ..vol("mem")
        },
        Volume {
            host_path: Some(HostPathVolumeSource {
                path: host_dir.join("made").to_string_lossy().into_owned(),
                type_: Some("DirectoryOrCreate".into()),
            }),
            ..vol("host")
        },
    ];
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-42".into()),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            volumes: Some(volumes),
            containers: vec![Container {
                name: "c".into(),
                volume_mounts: Some(vec![
                    mount("cfg", "/etc/cfg"),
                    mount("sec", "/etc/sec"),
                    VolumeMount {
                        sub_path_expr: Some("$(POD)/logs".into()),
                        ..mount("scratch", "/logs")
                    },
                    VolumeMount {
                        read_only: Some(true),
                        mount_propagation: Some("HostToContainer".into()),
                        ..mount("host", "/host")
                    },
                ]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn volumes_are_set_up_refreshed_mounted_and_torn_down() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let source = Arc::new(FakeSource::default());
    source.put_config_map("ns", "cfg", &[("greeting", "hi"), ("color", "blue")]);
    source.put_secret("ns", "sec", &[("password", "hunter2"), ("user", "me")]);
    let vm = VolumeManager::new(&root, source.clone(), "node-a");
    vm.set_cluster_domain("cluster.local");
    let pod = test_pod(dir.path());
    // The futures must be Send for the core's tokio tasks.
    fn assert_send<T: Send>(_: &T) {}
    let fut = vm.mount_pod_volumes(&pod);
    assert_send(&fut);
    fut.await.unwrap();

    let vols = root.join("pods/uid-42/volumes");
    let cfg = vols.join(CONFIG_MAP).join("cfg");
    assert_eq!(std::fs::read_to_string(cfg.join("greeting")).unwrap(), "hi");
    assert_eq!(std::fs::read_to_string(cfg.join("color")).unwrap(), "blue");
    assert_eq!(mode_of(&cfg.join("color")), 0o644);
    let sec = vols.join(SECRET).join("sec");
    assert_eq!(
        std::fs::read_to_string(sec.join("creds/pw")).unwrap(),
        "hunter2"
    );
    assert_eq!(mode_of(&sec.join("creds/pw")), 0o400);
    assert!(!sec.join("user").exists(), "only the listed items");
    let info = vols.join(DOWNWARD_API).join("info");
    assert_eq!(
        std::fs::read_to_string(info.join("labels")).unwrap(),
        "app=\"web\""
    );
    let proj = vols.join(PROJECTED).join("proj");
    assert_eq!(
        std::fs::read_to_string(proj.join("token")).unwrap(),
        "token-1"
    );
    assert_eq!(mode_of(&proj.join("token")), 0o440);
    assert_eq!(
        std::fs::read_to_string(proj.join("hello.txt")).unwrap(),
        "hi"
    );
    let mem = vols.join(EMPTY_DIR).join("mem");
    assert!(is_mount_point(&mem), "Memory emptyDir is a tmpfs");
    assert!(vols.join(EMPTY_DIR).join("scratch").is_dir());
    assert!(
        dir.path().join("made").is_dir(),
        "DirectoryOrCreate made the host dir"
    );

    // Idempotent: a second pass changes nothing and requests no new token.
    vm.mount_pod_volumes(&pod).await.unwrap();
    assert_eq!(source.token_requests.lock().len(), 1);

    // A changed ConfigMap reaches both the configMap and the projected volume on resync.
    source.put_config_map("ns", "cfg", &[("greeting", "bye")]);
    vm.resync(&pod).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(cfg.join("greeting")).unwrap(),
        "bye"
    );
    assert!(!cfg.join("color").exists(), "a removed key disappears");
    assert_eq!(
        std::fs::read_to_string(proj.join("hello.txt")).unwrap(),
        "bye"
    );

    let container = &pod.spec.as_ref().unwrap().containers[0];
    let envs = vec![("POD".to_string(), "web".to_string())];
    let ips = vec!["10.0.0.5".to_string()];
    let mounts = vm.container_mounts(&pod, container, &ips, &envs).unwrap();
    let summary: Vec<(&str, bool, crate::container::MountPropagation)> = mounts
        .iter()
        .map(|m| (m.container_path.as_str(), m.read_only, m.propagation))
        .collect();
    use crate::container::MountPropagation::*;
    assert_eq!(
        summary,
        vec![
            ("/etc/cfg", true, Private),
            ("/etc/sec", true, Private),
            ("/logs", false, Private),
            ("/host", true, HostToContainer),
            ("/etc/hosts", false, Private),
        ]
    );
    assert_eq!(mounts[0].host_path, cfg.to_string_lossy());
    let logs = std::fs::canonicalize(vols.join(EMPTY_DIR).join("scratch/web/logs")).unwrap();
    assert_eq!(
        mounts[2].host_path,
        logs.to_string_lossy(),
        "subPathExpr dir created"
    );
    let hosts = std::fs::read_to_string(&mounts[4].host_path).unwrap();
    assert!(hosts.ends_with("10.0.0.5\tweb\n"), "{hosts}");
    // subPathExpr with an unset variable fails as upstream.
    let err = vm.container_mounts(&pod, container, &ips, &[]).unwrap_err();
    assert_eq!(err.to_string(), "missing value for POD");

    assert_eq!(vm.pods_with_volumes(), vec!["uid-42".to_string()]);
    vm.unmount_pod_volumes("uid-42").await.unwrap();
    assert!(!is_mount_point(&mem));
    assert!(!root.join("pods/uid-42/volumes").exists());
    assert!(
        root.join("pods/uid-42/etc-hosts").exists(),
        "the pod dir is the core's to remove"
    );
    assert!(dir.path().join("made").is_dir(), "hostPath untouched");
    assert!(vm.pods_with_volumes().is_empty());
}

#[tokio::test]
async fn missing_objects_and_unsupported_volumes_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(FakeSource::default());
    source.put_config_map("ns", "cfg", &[("a", "1")]);
    let vm = VolumeManager::new(dir.path(), source, "node-a");
    let events = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let sink = events.clone();
    vm.set_event_recorder(Arc::new(move |e: crate::kuberuntime::RuntimeEvent| {
        sink.lock()
            .push(format!("{} {} {}", e.type_, e.reason, e.message));
    }));
    let mut pod = test_pod(dir.path());
    let spec = pod.spec.as_mut().unwrap();
    spec.volumes = Some(vec![
        Volume {
            config_map: Some(ConfigMapVolumeSource {
                name: "gone".into(),
                ..Default::default()
            }),
            ..vol("a")
        },
        Volume {
            config_map: Some(ConfigMapVolumeSource {
                name: "gone".into(),
                optional: Some(true),
                ..Default::default()
            }),
            ..vol("b")
        },
        Volume {
            config_map: Some(ConfigMapVolumeSource {
                name: "cfg".into(),
                items: Some(vec![KeyToPath {
                    key: "nokey".into(),
                    path: "x".into(),
                    mode: None,
                }]),
                ..Default::default()
            }),
            ..vol("c")
        },
        Volume {
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: "data".into(),
                read_only: None,
            }),
            ..vol("d")
        },
        Volume {
            host_path: Some(HostPathVolumeSource {
                path: "/nonexistent/kubelet-test".into(),
                type_: Some("File".into()),
            }),
            ..vol("e")
        },
    ]);
    let err = vm.mount_pod_volumes(&pod).await.unwrap_err().to_string();
    let want = [
        "MountVolume.SetUp failed for volume \"a\" : configmap \"gone\" not found",
        "MountVolume.SetUp failed for volume \"c\" : configmap references non-existent config key: nokey",
        "MountVolume.SetUp failed for volume \"d\" : persistentVolumeClaim volumes are not supported by this kubelet",
        "MountVolume.SetUp failed for volume \"e\" : hostPath type check failed: /nonexistent/kubelet-test is not a file",
    ];
    assert_eq!(err, want.join("; "));
    let want_events: Vec<String> = want
        .iter()
        .map(|m| format!("Warning FailedMount {m}"))
        .collect();
    assert_eq!(*events.lock(), want_events);
    let optional = dir
        .path()
        .join("pods/uid-42/volumes")
        .join(CONFIG_MAP)
        .join("b");
    assert!(
        optional.join("..data").exists(),
        "an optional missing configMap is an empty volume"
    );
}

#[tokio::test]
async fn fs_group_owns_volumes_and_keeps_them_stable() {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(FakeSource::default());
    source.put_secret("ns", "sec", &[("password", "hunter2")]);
    let vm = VolumeManager::new(dir.path(), source.clone(), "node-a");
    let mut pod = test_pod(dir.path());
    let spec = pod.spec.as_mut().unwrap();
    spec.security_context = Some(k8s_openapi::api::core::v1::PodSecurityContext {
        fs_group: Some(2345),
        ..Default::default()
    });
    spec.volumes = Some(vec![
        Volume {
            secret: Some(SecretVolumeSource {
                secret_name: Some("sec".into()),
                default_mode: Some(0o400),
                ..Default::default()
            }),
            ..vol("sec")
        },
        Volume {
            projected: Some(ProjectedVolumeSource {
                default_mode: None,
                sources: Some(vec![VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        audience: None,
                        expiration_seconds: None,
                        path: "token".into(),
                    }),
                    ..Default::default()
                }]),
            }),
            ..vol("proj")
        },
        Volume {
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..vol("scratch")
        },
    ]);
    vm.mount_pod_volumes(&pod).await.unwrap();
    let vols = dir.path().join("pods/uid-42/volumes");
    use std::os::unix::fs::MetadataExt as _;
    let sec_file = vols.join(SECRET).join("sec/password");
    let token = vols.join(PROJECTED).join("proj/token");
    let scratch = vols.join(EMPTY_DIR).join("scratch");
    assert_eq!(std::fs::metadata(&sec_file).unwrap().gid(), 2345);
    assert_eq!(mode_of(&sec_file), 0o440);
    assert_eq!(mode_of(&token), 0o640, "0600 token plus group read");
    assert_eq!(std::fs::metadata(&scratch).unwrap().gid(), 2345);
    assert_eq!(mode_of(&scratch), 0o2777);
    let data_dir = std::fs::read_link(vols.join(SECRET).join("sec/..data")).unwrap();
    vm.mount_pod_volumes(&pod).await.unwrap();
    assert_eq!(
        std::fs::read_link(vols.join(SECRET).join("sec/..data")).unwrap(),
        data_dir,
        "an unchanged secret is not rewritten"
    );
    vm.unmount_pod_volumes("uid-42").await.unwrap();
}
