//! The watch cache on the embedded (redb) backend: the real codec round trip, one backend watch
//! for many watchers, and recovery when the backend watch breaks or its history is compacted.
//! Real clock (the backend works on blocking threads); timeouts only guard against hangs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kube_apiserver::storage::backend::{
    Backend, KeyValue, ListResult, Revision, StorageError, WatchStream,
};
use kube_apiserver::storage::cacher::{Cacher, Filter, WatchEvent, WatchStart, everything};
use kube_apiserver::storage::codec::encode;
use kube_apiserver::storage::embedded::EmbeddedBackend;

const PODS: &str = "/registry/pods/";
const GUARD: Duration = Duration::from_secs(30);

/// The embedded backend, with its watch calls counted, and watches that can be broken or
/// refused on demand.
struct Flaky {
    inner: EmbeddedBackend,
    watch_calls: AtomicUsize,
    refuse: AtomicBool,
    breaker: Mutex<CancellationToken>,
}

impl Flaky {
    fn break_watches(&self) {
        std::mem::take(&mut *self.breaker.lock()).cancel();
    }
}

#[async_trait]
impl Backend for Flaky {
    async fn get(
        &self,
        key: &str,
        rev: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key, rev).await
    }
    async fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        rev: Option<Revision>,
    ) -> Result<ListResult, StorageError> {
        self.inner.list(prefix, start, limit, rev).await
    }
    async fn count(&self, prefix: &str) -> Result<i64, StorageError> {
        self.inner.count(prefix).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.watch_calls.fetch_add(1, Ordering::SeqCst);
        if self.refuse.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable("watches refused".into()));
        }
        let breaker = self.breaker.lock().clone();
        let stream = self.inner.watch(prefix, after).await?;
        Ok(Box::pin(stream.take_until(breaker.cancelled_owned())))
    }
    async fn request_progress(&self) -> Result<(), StorageError> {
        self.inner.request_progress().await
    }
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }
}

fn backend() -> (Arc<Flaky>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let inner = EmbeddedBackend::open(dir.path()).expect("open embedded store");
    let flaky = Flaky {
        inner,
        watch_calls: AtomicUsize::new(0),
        refuse: AtomicBool::new(false),
        breaker: Mutex::new(CancellationToken::new()),
    };
    (Arc::new(flaky), dir)
}

fn key(name: &str) -> String {
    format!("{PODS}default/{name}")
}

fn pod(name: &str, app: &str) -> Bytes {
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}}});
    encode(&object).expect("encode")
}

fn app_is(app: &'static str) -> Filter {
    Arc::new(move |o: &Value| o["metadata"]["labels"]["app"] == app)
}

/// (type, name, app, resourceVersion) of an object event.
fn summary(event: &WatchEvent) -> (&'static str, String, String, String) {
    let (kind, object) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        other => panic!("not an object event: {other:?}"),
    };
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        kind,
        s(&object["metadata"]["name"]),
        s(&object["metadata"]["labels"]["app"]),
        s(&object["metadata"]["resourceVersion"]),
    )
}

fn row(
    kind: &'static str,
    name: &str,
    app: &str,
    rev: Revision,
) -> (&'static str, String, String, String) {
    (kind, name.into(), app.into(), rev.to_string())
}

async fn next(rx: &mut mpsc::Receiver<WatchEvent>) -> Option<WatchEvent> {
    tokio::time::timeout(GUARD, rx.recv())
        .await
        .expect("an event or the end of the watch")
}

async fn set(backend: &Flaky, name: &str, app: &str) -> Revision {
    match backend.get(&key(name), None).await.expect("get") {
        Some(kv) => {
            backend
                .update(&key(name), pod(name, app), kv.mod_revision)
                .await
        }
        None => backend.create(&key(name), pod(name, app)).await,
    }
    .expect("write")
    .mod_revision
}

async fn start(backend: &Arc<Flaky>) -> (Arc<Cacher>, CancellationToken) {
    let shutdown = CancellationToken::new();
    let cacher = Cacher::start(backend.clone(), PODS.into(), shutdown.clone())
        .await
        .expect("cacher starts");
    (cacher, shutdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_watch_over_the_embedded_store() {
    let (backend, _dir) = backend();
    let a0 = set(&backend, "a", "web").await;
    let (cacher, shutdown) = start(&backend).await;
    let mut rx = cacher
        .watch(
            PODS,
            WatchStart::InitialState { end_bookmark: true },
            app_is("web"),
            false,
        )
        .await
        .expect("watch");
    assert_eq!(
        summary(&next(&mut rx).await.expect("initial")),
        row("ADDED", "a", "web", a0)
    );
    assert_eq!(next(&mut rx).await, Some(WatchEvent::InitialEventsEnd(a0)));

    let a1 = set(&backend, "a", "web").await;
    let a2 = set(&backend, "a", "db").await; // leaves the filter
    set(&backend, "b", "db").await; // never in it
    let a3 = set(&backend, "a", "web").await; // enters it again
    let (_, a4) = backend.delete(&key("a"), None).await.expect("delete");
    let want = [
        row("MODIFIED", "a", "web", a1),
        row("DELETED", "a", "web", a2),
        row("ADDED", "a", "web", a3),
        row("DELETED", "a", "web", a4),
    ];
    for want in want {
        assert_eq!(summary(&next(&mut rx).await.expect("event")), want);
    }

    let head = backend.current_revision().await.expect("revision");
    cacher.wait_until_fresh(head).await.expect("caught up");
    let (objects, rev) = cacher.list(PODS, &everything());
    assert_eq!(rev, head);
    assert_eq!(objects.len(), 1, "only b is left");
    assert_eq!(backend.watch_calls.load(Ordering::SeqCst), 1);
    shutdown.cancel();
    assert_eq!(next(&mut rx).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_watchers_cost_one_embedded_watch() {
    let (backend, _dir) = backend();
    let (cacher, _shutdown) = start(&backend).await;
    let mut watchers = Vec::new();
    for _ in 0..2000 {
        watchers.push(
            cacher
                .watch(
                    PODS,
                    WatchStart::After(cacher.revision()),
                    everything(),
                    false,
                )
                .await
                .expect("watch"),
        );
    }
    let mut want = Vec::new();
    for i in 0..10 {
        let name = format!("p{i}");
        let rev = set(&backend, &name, "web").await;
        want.push(row("ADDED", &name, "web", rev));
    }
    for rx in &mut watchers {
        for want in &want {
            assert_eq!(&summary(&next(rx).await.expect("event")), want);
        }
    }
    assert_eq!(backend.watch_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_while_disconnected_means_relist() {
    let (backend, _dir) = backend();
    set(&backend, "a", "web").await;
    set(&backend, "b", "web").await;
    let (cacher, _shutdown) = start(&backend).await;
    let before = cacher.revision();
    let mut rx = cacher
        .watch(PODS, WatchStart::After(before), everything(), false)
        .await
        .expect("watch");

    // A broken watch alone is resumed: the watcher sees the change made meanwhile.
    backend.break_watches();
    let a1 = set(&backend, "a", "db").await;
    assert_eq!(
        summary(&next(&mut rx).await.expect("event")),
        row("MODIFIED", "a", "db", a1)
    );

    // Changes compacted away while the cache cannot watch: re-list, watchers ended.
    backend.refuse.store(true, Ordering::SeqCst);
    backend.break_watches();
    set(&backend, "c", "web").await;
    backend.delete(&key("b"), None).await.expect("delete");
    let head = backend.current_revision().await.expect("revision");
    backend.compact(head).await.expect("compact");
    backend.refuse.store(false, Ordering::SeqCst);

    assert!(matches!(
        next(&mut rx).await,
        Some(WatchEvent::Error(StorageError::Compacted { .. }))
    ));
    assert_eq!(next(&mut rx).await, None);
    tokio::time::timeout(GUARD, async {
        while cacher.wait_until_fresh(head).await.is_err() {}
    })
    .await
    .expect("the cache re-lists");
    let (objects, rev) = cacher.list(PODS, &everything());
    assert_eq!(rev, head);
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert!(matches!(
        cacher
            .watch(PODS, WatchStart::After(before), everything(), false)
            .await,
        Err(StorageError::Compacted { .. })
    ));
}
