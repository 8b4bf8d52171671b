//! kill -9 of the apiserver while 8 clients create objects: after a restart on the same data,
//! every create that was acknowledged is there with the resourceVersion it was acknowledged
//! with, and the store's revision never goes backwards.

use e2e::apiserver::{ApiServer, Backend};
use e2e::https::{Conn, Version};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
/// Acknowledged creates to wait for (per cycle) before the kill.
const BEFORE_KILL: usize = 120;
const CYCLES: usize = 3;
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// What one client saw: the creates acknowledged with 201 (name -> resourceVersion), and any
/// answer that was neither a 201 nor a broken connection.
#[derive(Default)]
struct Seen {
    acked: Vec<(String, u64)>,
    unexpected: Vec<String>,
}

fn rv(value: &Value) -> u64 {
    value["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no numeric resourceVersion in {value}"))
}

/// Creates ConfigMaps until the connection breaks (the kill) or `stop` is set.
async fn client(
    addr: SocketAddr,
    ca: PathBuf,
    prefix: String,
    acked: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> Seen {
    let mut seen = Seen::default();
    let Ok(mut conn) = Conn::open(addr, &ca, Version::Http1).await else {
        return seen;
    };
    for i in 0.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let name = format!("{prefix}-{i}");
        let body = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"i": i.to_string()},
        });
        let result = conn
            .send(
                "POST",
                CONFIGMAPS,
                Some("application/json"),
                serde_json::to_vec(&body).unwrap(),
            )
            .await;
        match result {
            Ok((201, body)) => match serde_json::from_str::<Value>(&body) {
                Ok(created) if created["metadata"]["name"] == name.as_str() => {
                    seen.acked.push((name, rv(&created)));
                    acked.fetch_add(1, Ordering::SeqCst);
                }
                _ => seen.unexpected.push(format!("201 with {body}")),
            },
            Ok((status, body)) => seen.unexpected.push(format!("{name}: {status} {body}")),
            // The server died under us: this create may or may not have happened.
            Err(_) => break,
        }
    }
    seen
}

/// The list's resourceVersion and every ConfigMap's name -> resourceVersion.
async fn list(server: &ApiServer) -> (u64, BTreeMap<String, u64>) {
    let list = server.get_json(CONFIGMAPS).await;
    let items = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                rv(item),
            )
        })
        .collect();
    (rv(&list), items)
}

async fn crash(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ApiServer::start(dir.path(), backend).await.unwrap();
    let mut acknowledged: BTreeMap<String, u64> = BTreeMap::new();
    // The highest revision any answer has shown so far.
    let mut high_water = list(&server).await.0;

    for cycle in 0..CYCLES {
        let acked = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                tokio::spawn(client(
                    server.addr(),
                    server.ca_file(),
                    format!("cycle{cycle}-client{c}"),
                    acked.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        // Let the clients get going, watching the list's revision meanwhile, then kill -9.
        let deadline = Instant::now() + Duration::from_secs(120);
        while acked.load(Ordering::SeqCst) < BEFORE_KILL {
            if Instant::now() > deadline || clients.iter().all(|c| c.is_finished()) {
                stop.store(true, Ordering::SeqCst);
                panic!(
                    "cycle {cycle}: only {} creates acknowledged\n{}",
                    acked.load(Ordering::SeqCst),
                    server.logs()
                );
            }
            let (status, body) = server.get(&format!("{CONFIGMAPS}?limit=1")).await.unwrap();
            assert_eq!(status, 200, "{body}");
            let list_rv = rv(&serde_json::from_str(&body).unwrap());
            assert!(
                list_rv >= high_water,
                "cycle {cycle}: the list's resourceVersion went from {high_water} to {list_rv}"
            );
            high_water = list_rv;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        server.kill();
        let mut unexpected = Vec::new();
        for handle in clients {
            let seen = tokio::time::timeout(Duration::from_secs(60), handle)
                .await
                .expect("a client hung after the kill")
                .expect("a client panicked");
            for (name, rv) in seen.acked {
                high_water = high_water.max(rv);
                assert!(
                    acknowledged.insert(name, rv).is_none(),
                    "a name acknowledged twice"
                );
            }
            unexpected.extend(seen.unexpected);
        }
        assert!(unexpected.is_empty(), "cycle {cycle}: {unexpected:#?}");

        eprintln!(
            "cycle {cycle}: {} creates acknowledged in all, revision {high_water} before the kill",
            acknowledged.len()
        );
        server.restart().await.unwrap();
        let (list_rv, stored) = list(&server).await;
        assert!(
            list_rv >= high_water,
            "cycle {cycle}: after the restart the list's resourceVersion is {list_rv}, below {high_water} seen before the kill"
        );
        high_water = list_rv;
        let lost: Vec<_> = acknowledged
            .iter()
            .filter(|(name, rv)| stored.get(*name) != Some(rv))
            .map(|(name, rv)| format!("{name}@{rv}: now {:?}", stored.get(name)))
            .collect();
        assert!(
            lost.is_empty(),
            "cycle {cycle}: {} of {} acknowledged creates lost or changed: {lost:?}\n{}",
            lost.len(),
            acknowledged.len(),
            server.logs()
        );
    }

    // Writes after the last restart get revisions above everything seen before.
    let (status, body) = server
        .request(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            serde_json::to_vec(&json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(status, 201, "{body}");
    let after = rv(&serde_json::from_str(&body).unwrap());
    assert!(
        after > high_water,
        "a new create got {after}, not above {high_water}"
    );
    assert!(server.terminate(Duration::from_secs(15)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_creates_survive_kill_9_on_the_embedded_store() {
    crash(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_creates_survive_kill_9_on_etcd() {
    crash(Backend::Etcd).await;
}
