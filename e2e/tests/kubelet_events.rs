//! Kubelet events and service links end to end: our kubelet on a real containerd against our
//! apiserver. A pod with a healthy container and one whose liveness probe always fails leaves
//! upstream's events (Pulled, Created, Started, Unhealthy, Killing) on the pod, from component
//! `kubelet`, visible through the API, in the real `kubectl describe pod` and `kubectl events`;
//! a pod with a missing ConfigMap volume gets `FailedMount`; the node gets `Starting`. The healthy container sees the service-link env vars of a Service
//! of its namespace and of the master service `kubernetes`.

use e2e::containerd::BUSYBOX_IMAGE;
use e2e::kubectl::Kubectl;
use e2e::kubelet::{Host, poll};
use k8s_openapi::api::core::v1::{Event, Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const NODE: &str = "events-node";

fn find<'a>(events: &'a [Event], reason: &str, container: &str) -> Option<&'a Event> {
    let path = format!("spec.containers{{{container}}}");
    events.iter().find(|e| {
        e.reason.as_deref() == Some(reason)
            && e.involved_object.field_path.as_deref() == Some(path.as_str())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_events_and_service_links() {
    let host = Host::start_in(tempfile::tempdir().unwrap()).await;
    let client = host.client.clone();

    // The Service exists before the kubelet starts: its informer's first list has it.
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "gc-links"},
        "spec": {"ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
    }))
    .unwrap();
    let svc = services
        .create(&PostParams::default(), &svc)
        .await
        .expect("create service");
    let cluster_ip = svc
        .spec
        .and_then(|s| s.cluster_ip)
        .filter(|ip| !ip.is_empty() && ip != "None")
        .expect("the service has a cluster IP");
    let master_ip = poll("the kubernetes service", &String::new, async || {
        let svc = services
            .get("kubernetes")
            .await
            .map_err(|e| e.to_string())?;
        svc.spec
            .and_then(|s| s.cluster_ip)
            .ok_or_else(|| "no cluster IP".to_string())
    })
    .await;

    let n = host.start_kubelet(NODE, serde_json::Value::Null).await;
    let logs = || n.logs();

    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "evented", "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c",
                        "echo link=$GC_LINKS_SERVICE_HOST:$GC_LINKS_SERVICE_PORT_HTTP master=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; sleep 3600"],
                },
                {
                    "name": "sick",
                    "image": BUSYBOX_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", "3600"],
                    "livenessProbe": {
                        "exec": {"command": ["sh", "-c", "echo sick-output; exit 1"]},
                        "periodSeconds": 1,
                        "failureThreshold": 1,
                    },
                },
            ],
        },
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    // A pod whose ConfigMap volume cannot be set up.
    let unmountable: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unmountable", "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "volumes": [{"name": "cfg", "configMap": {"name": "missing"}}],
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"],
                "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}],
            }],
        },
    }))
    .unwrap();
    pods.create(&PostParams::default(), &unmountable)
        .await
        .expect("create the unmountable pod");
    let uid = pod.metadata.uid.clone().unwrap();

    // 1. The events through the API, on the pod and its containers.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let on_pod = ListParams::default().fields("involvedObject.name=evented");
    let got = poll("the pod's events", &logs, async || {
        let list = events.list(&on_pod).await.map_err(|e| e.to_string())?.items;
        let want = [
            ("Pulled", "main"),
            ("Created", "main"),
            ("Started", "main"),
            ("Unhealthy", "sick"),
            ("Killing", "sick"),
        ];
        for (reason, container) in want {
            if find(&list, reason, container).is_none() {
                let seen: Vec<_> = list.iter().map(|e| e.reason.clone()).collect();
                return Err(format!("no {reason} on {container} yet; seen {seen:?}"));
            }
        }
        Ok(list)
    })
    .await;
    let message = |reason, container| {
        find(&got, reason, container)
            .and_then(|e| e.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        message("Pulled", "main"),
        format!("Container image \"{BUSYBOX_IMAGE}\" already present on machine")
    );
    assert_eq!(message("Created", "main"), "Created container: main");
    assert_eq!(message("Started", "main"), "Started container main");
    assert!(
        message("Unhealthy", "sick").starts_with("Liveness probe failed: sick-output"),
        "{}",
        message("Unhealthy", "sick")
    );
    assert_eq!(
        message("Killing", "sick"),
        "Container sick failed liveness probe, will be restarted"
    );
    let started = find(&got, "Started", "main").unwrap();
    assert_eq!(started.type_.as_deref(), Some("Normal"));
    assert_eq!(
        started.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("kubelet")
    );
    assert_eq!(started.involved_object.kind.as_deref(), Some("Pod"));
    assert_eq!(started.involved_object.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        find(&got, "Unhealthy", "sick").unwrap().type_.as_deref(),
        Some("Warning")
    );

    let on_unmountable = ListParams::default().fields("involvedObject.name=unmountable");
    let failed = poll("FailedMount", &logs, async || {
        let list = events
            .list(&on_unmountable)
            .await
            .map_err(|e| e.to_string())?
            .items;
        list.into_iter()
            .find(|e| e.reason.as_deref() == Some("FailedMount"))
            .ok_or_else(|| "no FailedMount yet".to_string())
    })
    .await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert_eq!(
        failed.message.as_deref(),
        Some("MountVolume.SetUp failed for volume \"cfg\" : configmap \"missing\" not found")
    );

    // 2. The node's birth cry.
    let on_node = ListParams::default().fields(&format!("involvedObject.name={NODE}"));
    poll("the node's Starting event", &logs, async || {
        let list = events
            .list(&on_node)
            .await
            .map_err(|e| e.to_string())?
            .items;
        list.iter()
            .find(|e| {
                e.reason.as_deref() == Some("Starting")
                    && e.message.as_deref() == Some("Starting kubelet.")
                    && e.involved_object.kind.as_deref() == Some("Node")
            })
            .map(|_| ())
            .ok_or_else(|| format!("{} node events, no Starting", list.len()))
    })
    .await;

    // 3. The real kubectl shows them.
    let kubectl = Kubectl::upstream_with_kubeconfig(&n.dir().join("kubectl"), &n.kubeconfig);
    let describe = kubectl.ok(&["describe", "pod", "evented", "-n", "default"]);
    let section = describe
        .split("Events:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Events section:\n{describe}"));
    for want in [
        "Started container main",
        "Created container: main",
        "Liveness probe failed: sick-output",
        "kubelet",
    ] {
        assert!(
            section.contains(want),
            "describe lacks {want:?}:\n{section}"
        );
    }
    let listed = kubectl.ok(&["events", "-n", "default", "--for", "pod/evented"]);
    for want in ["Unhealthy", "Killing", "Started container main"] {
        assert!(
            listed.contains(want),
            "kubectl events lacks {want:?}:\n{listed}"
        );
    }

    // 4. Service links: the healthy container printed the Service's address.
    let log_dir = n
        .kubelet
        .pod_logs_dir()
        .join(format!("default_evented_{uid}"))
        .join("main");
    let want = format!("link={cluster_ip}:8080 master={master_ip}:443");
    poll("main's service-link line", &logs, async || {
        let text = std::fs::read_to_string(log_dir.join("0.log")).map_err(|e| e.to_string())?;
        text.contains(&want)
            .then_some(())
            .ok_or_else(|| format!("log is {text:?}, want {want:?}"))
    })
    .await;
}
