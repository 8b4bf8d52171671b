//! An apiserver state over a throw-away embedded store, for the unit tests that write objects
//! through the registry and read them back through the watch caches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::registry::ObjectLookup;
use crate::registry::services::{Ipv4Cidr, ServiceAllocator};
use crate::rest::state::ApiState;
use crate::storage::backend::Backend;
use crate::storage::embedded::EmbeddedBackend;

/// The state, the directory holding its store (removed on drop) and the token stopping its
/// caches (cancelled on drop).
pub(crate) struct TestState {
    pub state: Arc<ApiState>,
    pub shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for TestState {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub(crate) async fn test_state() -> TestState {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::open(dir.path()).expect("open the embedded store"));
    let services = Arc::new(ServiceAllocator::new(
        backend.clone(),
        Ipv4Cidr::parse("10.96.0.0/24").expect("cidr"),
        30000..=30010,
    ));
    let shutdown = CancellationToken::new();
    let state = ApiState::start(backend, services, shutdown.clone())
        .await
        .expect("start the watch caches");
    TestState {
        state,
        shutdown,
        _dir: dir,
    }
}

/// Waits until the watch cache shows the object (the readers under test see only the caches,
/// which follow the store asynchronously); panics after five seconds.
pub(crate) async fn wait_cached(
    state: &ApiState,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while ObjectLookup::get(state, group, plural, namespace, name).is_none() {
        assert!(
            Instant::now() < deadline,
            "{plural}/{name} never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
