//! A shared informer run through kube's real watcher against an in-process fake apiserver (a
//! tower service answering list and watch): list -> cache -> handlers, then watch events.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use client_go_rs::informers::{EventHandlerFuncs, SharedInformerFactory};
use http::{Request, Response};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::client::Body;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

fn pod_json(name: &str, rv: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "resourceVersion": rv}})
}

/// Lists two pods at rv 10; the first watch sends an update of p1 and the delete of p2 and
/// ends; later watches hang, as a quiet apiserver's do.
fn fake_apiserver(watches: Arc<AtomicUsize>) -> Client {
    let svc = tower::service_fn(move |req: Request<Body>| {
        let watches = watches.clone();
        async move {
            let query = req.uri().query().unwrap_or("").to_string();
            assert_eq!(req.uri().path(), "/api/v1/pods");
            if !query.contains("watch=true") {
                let list = json!({"apiVersion": "v1", "kind": "PodList",
                    "metadata": {"resourceVersion": "10"},
                    "items": [pod_json("p1", "8"), pod_json("p2", "9")]});
                return Ok::<_, Infallible>(Response::new(Body::from(
                    serde_json::to_vec(&list).expect("json"),
                )));
            }
            if watches.fetch_add(1, Ordering::SeqCst) > 0 {
                futures::future::pending::<()>().await;
            }
            let mut body = Vec::new();
            for ev in [
                json!({"type": "MODIFIED", "object": pod_json("p1", "11")}),
                json!({"type": "DELETED", "object": pod_json("p2", "12")}),
            ] {
                body.extend(serde_json::to_vec(&ev).expect("json"));
                body.push(b'\n');
            }
            Ok(Response::new(Body::from(body)))
        }
    });
    Client::new(svc, "default")
}

#[tokio::test]
async fn informer_lists_then_follows_the_watch() {
    let watches = Arc::new(AtomicUsize::new(0));
    let factory = SharedInformerFactory::new(fake_apiserver(watches.clone()), None);
    let pods = factory.informer::<Pod>();
    let (tx, mut rx) = unbounded_channel();
    let (a, u, d) = (tx.clone(), tx.clone(), tx);
    pods.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |p: &Arc<Pod>, initial| {
                let _ = a.send(format!(
                    "add {} {initial}",
                    p.metadata.name.clone().unwrap_or_default()
                ));
            })
            .on_update(move |old, new| {
                let _ = u.send(format!(
                    "update {:?} -> {:?}",
                    old.metadata.resource_version, new.metadata.resource_version
                ));
            })
            .on_delete(move |del| {
                let _ = d.send(format!(
                    "delete {}",
                    del.object().metadata.name.clone().unwrap_or_default()
                ));
            }),
    );

    let stop = CancellationToken::new();
    factory.start(&stop);
    assert!(factory.wait_for_cache_sync(&stop).await);

    let mut lines = Vec::new();
    for _ in 0..4 {
        lines.push(rx.recv().await.expect("handler alive"));
    }
    lines[..2].sort();
    assert_eq!(
        lines,
        vec![
            "add p1 true",
            "add p2 true",
            "update Some(\"8\") -> Some(\"11\")",
            "delete p2",
        ]
    );
    let cached = pods.indexer().get("default", "p1").expect("p1 cached");
    assert_eq!(cached.metadata.resource_version.as_deref(), Some("11"));
    assert!(pods.indexer().get("default", "p2").is_none());

    stop.cancel();
    factory.shutdown().await;
    assert!(watches.load(Ordering::SeqCst) >= 1);
}
