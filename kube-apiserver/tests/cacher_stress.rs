//! The watch cache under the load of a big cluster, on the embedded store: concurrent writers,
//! writes outside the cache's prefix, consistent reads asking for progress all along, and a
//! backend watch too slow for its buffer (so the cache re-watches again and again). Whatever
//! happened, once caught up the cache must hold exactly what the store holds, and a watcher
//! that stayed must have seen every object's last version. A 500-node run once showed a pod
//! whose status the store had but lists and watches did not; this is the test of that path.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use kube_apiserver::storage::backend::{Backend, Revision};
use kube_apiserver::storage::cacher::{Cacher, WatchEvent, WatchStart, everything};
use kube_apiserver::storage::codec::encode;
use kube_apiserver::storage::embedded::EmbeddedBackend;

const PODS: &str = "/registry/pods/";
const KEYS: usize = 100;
const WRITERS: usize = 6;
const WRITES_EACH: usize = 150;

fn object(prefix: &str, name: &str, n: usize) -> Bytes {
    encode(
        &json!({"apiVersion": "v1", "kind": if prefix == PODS { "Pod" } else { "Event" },
        "metadata": {"name": name, "namespace": "default"}, "n": n}),
    )
    .expect("encode")
}

/// Writes `n` into a key of `prefix` chosen by `i`, creating it if needed.
async fn write(backend: &EmbeddedBackend, prefix: &str, i: usize, n: usize) {
    let name = format!("o{}", i % KEYS);
    let key = format!("{prefix}default/{name}");
    loop {
        let result = match backend.get(&key, None).await.expect("get") {
            Some(kv) => {
                backend
                    .update(&key, object(prefix, &name, n), kv.mod_revision)
                    .await
            }
            None => backend.create(&key, object(prefix, &name, n)).await,
        };
        // Another writer got there first: read again, as a guaranteed update does.
        if result.is_ok() {
            return;
        }
    }
}

fn revision_of(object: &Value) -> Revision {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("a resourceVersion")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_ends_equal_to_the_store_after_lag_rewatches_and_progress_requests() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A buffer of 8 live events: the cache's backend watch lags and is re-opened many times.
    let backend = Arc::new(EmbeddedBackend::open_with_watch_buffer(dir.path(), 8).expect("open"));
    let shutdown = CancellationToken::new();
    let cacher = Cacher::start(backend.clone(), PODS.into(), shutdown.clone())
        .await
        .expect("cacher starts");
    let mut watch = cacher
        .watch(
            PODS,
            WatchStart::InitialState {
                end_bookmark: false,
            },
            everything(),
            false,
        )
        .await
        .expect("watch");
    let ended = shutdown.clone();
    let watched = tokio::spawn(async move {
        let mut last: BTreeMap<String, Revision> = BTreeMap::new();
        while let Some(event) = watch.recv().await {
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    let name = o["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    last.insert(name, revision_of(&o));
                }
                WatchEvent::Error(e) => return Err(format!("the watch ended with {e:?}")),
                _ => {}
            }
        }
        if !ended.is_cancelled() {
            return Err("the cache dropped the watcher as too slow".to_owned());
        }
        Ok(last)
    });

    let readers = CancellationToken::new();
    let reader = {
        let (backend, cacher, stop) = (backend.clone(), cacher.clone(), readers.clone());
        tokio::spawn(async move {
            // Consistent reads: each asks the backend for progress while it waits.
            while !stop.is_cancelled() {
                let revision = backend.current_revision().await.expect("revision");
                let _ = cacher.wait_until_fresh(revision).await;
            }
        })
    };
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let backend = backend.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..WRITES_EACH {
                // One write in three lands outside the cache's prefix.
                let prefix = if i % 3 == 2 {
                    "/registry/events/"
                } else {
                    PODS
                };
                write(&backend, prefix, w * 7919 + i * 31, w * WRITES_EACH + i).await;
            }
        }));
    }
    for writer in writers {
        writer.await.expect("writer");
    }
    readers.cancel();
    reader.await.expect("reader");

    let head = backend.current_revision().await.expect("revision");
    tokio::time::timeout(Duration::from_secs(30), async {
        while cacher.wait_until_fresh(head).await.is_err() {}
    })
    .await
    .expect("the cache catches up with the store");
    let stored = backend.list(PODS, None, 0, None).await.expect("list");
    let want: BTreeMap<String, Revision> = stored
        .kvs
        .iter()
        .map(|kv| (kv.key.clone(), kv.mod_revision))
        .collect();
    let (objects, _) = cacher.list(PODS, &everything());
    let got: BTreeMap<String, Revision> = objects
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            (format!("{PODS}default/{name}"), revision_of(o))
        })
        .collect();
    assert_eq!(got, want, "the cache differs from the store");

    shutdown.cancel();
    let seen = tokio::time::timeout(Duration::from_secs(30), watched)
        .await
        .expect("the watch ends at shutdown")
        .expect("joins");
    // A watcher the cache dropped for being slow re-lists, as clients do; one that stayed
    // must have every object's last version.
    if let Ok(seen) = seen {
        let want: BTreeMap<String, Revision> = want
            .into_iter()
            .map(|(k, r)| {
                (
                    k.trim_start_matches("/registry/pods/default/").to_owned(),
                    r,
                )
            })
            .collect();
        assert_eq!(seen, want, "the watcher missed changes");
    }
}
