//! Service cluster IP and node port allocation through the store, on the embedded backend.

use api_types::registry::by_group_version_resource;
use kube_apiserver::registry::services::{Ipv4Cidr, ServiceAllocator};
use kube_apiserver::registry::{DeleteOptions, Part, RegistryError, ResourceStore};
use kube_apiserver::storage::backend::Backend;
use kube_apiserver::storage::embedded::EmbeddedBackend;
use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::sync::Arc;

struct Fixture {
    _dir: tempfile::TempDir,
    services: ResourceStore,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open(dir.path()).unwrap());
    let store = |plural| {
        ResourceStore::new(
            by_group_version_resource("", "v1", plural).unwrap(),
            backend.clone(),
        )
    };
    store("namespaces")
        .create(
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        )
        .await
        .unwrap();
    let allocator = Arc::new(ServiceAllocator::new(
        backend.clone(),
        Ipv4Cidr::parse("10.96.0.0/29").unwrap(),
        30000..=30002,
    ));
    Fixture {
        services: store("services").with_service_allocator(allocator),
        _dir: dir,
    }
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn port_spec(kind: &str) -> Value {
    json!({"type": kind, "selector": {"app": "x"}, "ports": [{"port": 80}]})
}

#[tokio::test]
async fn cluster_ips_come_from_the_range_and_are_released() {
    let f = fixture().await;
    let range = Ipv4Cidr::parse("10.96.0.0/29").unwrap();
    let mut seen = Vec::new();
    // A /29 has 8 addresses: network, broadcast and the first (kubernetes) are never handed out.
    for i in 0..5 {
        let created = f
            .services
            .create(
                Some("ns"),
                service(&format!("s{i}"), port_spec("ClusterIP")),
            )
            .await
            .unwrap();
        let ip: Ipv4Addr = created["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            range.contains_assignable(ip) && ip != Ipv4Addr::new(10, 96, 0, 1),
            "{ip}"
        );
        assert_eq!(created["spec"]["clusterIPs"], json!([ip.to_string()]));
        assert!(!seen.contains(&ip), "{ip} handed out twice");
        seen.push(ip);
    }
    let err = f
        .services
        .create(Some("ns"), service("full", port_spec("ClusterIP")))
        .await
        .unwrap_err();
    // A full range is the server's problem (500), not the request's.
    assert!(
        matches!(&err, RegistryError::Storage(e) if e.to_string().contains("range is full")),
        "{err:?}"
    );

    f.services
        .delete(Some("ns"), "s0", &DeleteOptions::default())
        .await
        .unwrap();
    let reused = f
        .services
        .create(Some("ns"), service("again", port_spec("ClusterIP")))
        .await
        .unwrap();
    assert_eq!(
        reused["spec"]["clusterIP"],
        seen[0].to_string(),
        "the freed address is reused"
    );

    let headless = f
        .services
        .create(
            Some("ns"),
            service(
                "headless",
                json!({"clusterIP": "None", "ports": [{"port": 80}]}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(headless["spec"]["clusterIP"], "None");
}

#[tokio::test]
async fn explicit_ips_are_checked() {
    let f = fixture().await;
    let mut spec = port_spec("ClusterIP");
    spec["clusterIP"] = json!("10.96.0.5");
    f.services
        .create(Some("ns"), service("a", spec.clone()))
        .await
        .unwrap();
    for (name, ip, message) in [
        ("b", "10.96.0.5", "already allocated"),
        ("c", "10.1.0.5", "not in the valid range"),
        ("d", "not-an-ip", "valid IP"),
    ] {
        spec["clusterIP"] = json!(ip);
        let err = f
            .services
            .create(Some("ns"), service(name, spec.clone()))
            .await
            .unwrap_err();
        let RegistryError::Invalid { errors, .. } = &err else {
            panic!("{err:?}")
        };
        let text = errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        assert!(text.contains(message), "{text}");
    }
}

#[tokio::test]
async fn node_ports_follow_the_service_type() {
    let f = fixture().await;
    let created = f
        .services
        .create(Some("ns"), service("np", port_spec("NodePort")))
        .await
        .unwrap();
    let port = created["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=30002).contains(&port), "{port}");

    // An update that does not mention the node port keeps it, and keeps the cluster IP.
    let mut update = service("np", port_spec("NodePort"));
    update["metadata"]["labels"] = json!({"x": "y"});
    let updated = f
        .services
        .update(Some("ns"), "np", update, Part::Main)
        .await
        .unwrap();
    assert_eq!(updated["spec"]["ports"][0]["nodePort"], port);
    assert_eq!(updated["spec"]["clusterIP"], created["spec"]["clusterIP"]);

    let mut taken = port_spec("NodePort");
    taken["ports"][0]["nodePort"] = json!(port);
    assert!(matches!(
        f.services
            .create(Some("ns"), service("clash", taken.clone()))
            .await,
        Err(RegistryError::Invalid { .. })
    ));

    // Back to ClusterIP: the node port is freed for others.
    f.services
        .update(
            Some("ns"),
            "np",
            service("np", port_spec("ClusterIP")),
            Part::Main,
        )
        .await
        .unwrap();
    f.services
        .create(Some("ns"), service("clash", taken))
        .await
        .unwrap();
}
