//! The hollow runtime driven by the kubelet's own CRI client over its unix socket.

use super::start_runtime;
use crate::kuberuntime::cri::CriClient;
use k8s_cri::v1 as cri;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn sandbox_config(name: &str) -> cri::PodSandboxConfig {
    cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name: name.into(),
            uid: format!("uid-{name}"),
            namespace: "default".into(),
            attempt: 0,
        }),
        ..Default::default()
    }
}

fn container_config(name: &str) -> cri::ContainerConfig {
    cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(cri::ImageSpec {
            image: "docker.io/library/busybox:1.36".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_pod_lives_and_dies_in_the_hollow_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let shutdown = CancellationToken::new();
    let endpoint = start_runtime(
        &dir.path().join("hollow/cri.sock"),
        "hollow-7",
        dir.path(),
        shutdown.clone(),
    )
    .await
    .expect("hollow runtime");
    let client = CriClient::new(&endpoint, "", Duration::from_secs(10)).unwrap();
    assert_eq!(client.version().await.unwrap().runtime_name, "hollow");
    let conditions = client.status().await.unwrap().status.unwrap().conditions;
    assert!(conditions.iter().all(|c| c.status), "{conditions:?}");

    let image_ref = client
        .pull_image("docker.io/library/busybox:1.36", None, None)
        .await
        .unwrap();
    assert!(image_ref.starts_with("sha256:"), "{image_ref}");
    assert_eq!(client.list_images().await.unwrap().len(), 1);

    let sandbox = client
        .run_pod_sandbox(sandbox_config("web"), String::new())
        .await
        .unwrap();
    let status = client.pod_sandbox_status(&sandbox).await.unwrap();
    assert_eq!(status.state, cri::PodSandboxState::SandboxReady as i32);
    let ip = status.network.unwrap().ip;
    let prefix = super::ip_prefix("hollow-7");
    assert!(
        ip.starts_with(&format!("10.{}.", prefix[0])),
        "{ip} for {prefix:?}"
    );

    let id = client
        .create_container(&sandbox, container_config("httpd"), sandbox_config("web"))
        .await
        .unwrap();
    client.start_container(&id).await.unwrap();
    let running = client.container_status(&id).await.unwrap();
    assert_eq!(running.state, cri::ContainerState::ContainerRunning as i32);
    assert!(running.started_at > 0 && running.image_ref == image_ref);
    let listed = client.list_containers(None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].pod_sandbox_id, sandbox);

    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let stopped = client.container_status(&id).await.unwrap();
    assert_eq!(stopped.state, cri::ContainerState::ContainerExited as i32);
    client.remove_pod_sandbox(&sandbox).await.unwrap();
    assert!(client.list_pod_sandbox(None).await.unwrap().is_empty());
    assert!(client.list_containers(None).await.unwrap().is_empty());
    shutdown.cancel();
}
