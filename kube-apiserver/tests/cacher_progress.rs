//! A watch cache whose resource saw no recent writes still serves a watch from the store's
//! current revision: it learns the revision through the backend's progress notifications
//! (what every informer needs: it lists, then watches from the list's revision).

use kube_apiserver::storage::backend::{Backend, StorageError};
use kube_apiserver::storage::cacher::{Cacher, WatchStart, everything};
use kube_apiserver::storage::embedded::EmbeddedBackend;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn watch_from_a_revision_written_elsewhere_starts_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open(dir.path()).unwrap());
    backend
        .create(
            "/registry/configmaps/ns/a",
            bytes::Bytes::from_static(br#"{"metadata":{"name":"a"}}"#),
        )
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let cacher = Cacher::start(
        backend.clone(),
        "/registry/configmaps/".into(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    // The newest writes go to another resource: the configmaps cache never sees them.
    for i in 0..3 {
        backend
            .create(
                &format!("/registry/secrets/ns/s{i}"),
                bytes::Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
    }
    let current = backend.current_revision().await.unwrap();
    assert!(cacher.revision() < current);

    let watch = cacher
        .watch(
            "/registry/configmaps/",
            WatchStart::After(current),
            everything(),
            false,
        )
        .await;
    assert!(
        !matches!(watch, Err(StorageError::FutureRevision { .. })),
        "the cache did not learn it was current"
    );
    watch.unwrap();
    assert!(cacher.revision() >= current);
    assert!(cacher.wait_until_fresh(current).await.is_ok());
    shutdown.cancel();
}
