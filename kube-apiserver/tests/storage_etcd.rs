//! The etcd backend against a real etcd (`/usr/bin/etcd`, Debian's `etcd-server`) that each test
//! starts on free loopback ports with a temporary data dir, and stops whatever happens.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kube_apiserver::storage::backend::{Backend, StorageError};
use kube_apiserver::storage::conformance::{self, next_event};
use kube_apiserver::storage::etcd::EtcdBackend;

const ETCD: &str = "/usr/bin/etcd";

/// A running etcd, killed and reaped on drop.
struct Etcd {
    child: Child,
    endpoint: String,
    dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("etcd.log")).unwrap_or_default()
}

impl Etcd {
    /// Starts etcd and waits until it answers.
    async fn start() -> Self {
        assert!(
            Path::new(ETCD).exists(),
            "{ETCD} is missing: install Debian's etcd-server package (apt-get install etcd-server)"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let (client, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("log file");
        let data: PathBuf = dir.path().join("data");
        let child = Command::new(ETCD)
            .arg("--name=test")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .arg("--heartbeat-interval=10")
            .arg("--election-timeout=100")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let mut etcd = Etcd {
            child,
            endpoint: client_url,
            dir,
        };
        etcd.wait_ready().await;
        etcd
    }

    async fn wait_ready(&mut self) {
        // Generous: only a guard against a hung start on a loaded machine.
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("etcd exited with {status}:\n{}", log_of(self.dir.path()));
            }
            if let Ok(b) =
                EtcdBackend::connect(std::slice::from_ref(&self.endpoint), "/registry").await
                && b.current_revision().await.is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("etcd did not become ready:\n{}", log_of(self.dir.path()));
    }

    async fn backend(&self, prefix: &str) -> Arc<dyn Backend> {
        Arc::new(
            EtcdBackend::connect(std::slice::from_ref(&self.endpoint), prefix)
                .await
                .expect("connect"),
        )
    }
}

macro_rules! conformance_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let etcd = Etcd::start().await;
                conformance::$name(etcd.backend("/registry").await).await;
            }
        )*

        /// Every check of the suite runs here: a new check must be added to the list above.
        #[test]
        fn every_conformance_check_runs() {
            let here = [$(stringify!($name)),*];
            let suite: Vec<&str> = conformance::ALL.iter().map(|(n, _)| *n).collect();
            assert_eq!(here.to_vec(), suite);
        }
    };
}

conformance_tests!(
    create_and_get,
    update_compare_and_swap,
    delete_preconditions,
    revisions_strictly_increase,
    concurrent_writers,
    reads_at_past_revisions,
    pagination,
    prefix_isolation,
    count,
    watch_from_past_then_live,
    watch_from_now,
    compaction,
    watch_after_compaction,
    future_revision,
);

/// `/registry` is mapped to the configured prefix: two apiservers with different prefixes share
/// one etcd without seeing each other's keys, and etcd holds the keys under the prefix.
#[tokio::test]
async fn etcd_prefix_maps_the_registry_root() {
    let etcd = Etcd::start().await;
    let one = etcd.backend("/one").await;
    let two = etcd.backend("/two/").await;
    let kv = one
        .create("/registry/pods/ns/a", Bytes::from("1"))
        .await
        .expect("create");
    assert_eq!(kv.key, "/registry/pods/ns/a");
    assert_eq!(
        two.get("/registry/pods/ns/a", None).await.expect("get"),
        None
    );
    two.create("/registry/pods/ns/a", Bytes::from("2"))
        .await
        .expect("the same key under another prefix");
    let listed = one.list("/registry/", None, 0, None).await.expect("list");
    assert_eq!(listed.kvs, vec![kv]);

    let mut raw = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .expect("raw client");
    let resp = raw.get("/one/pods/ns/a", None).await.expect("raw get");
    assert_eq!(resp.kvs().first().map(|kv| kv.value()), Some(&b"1"[..]));
    let resp = raw.get("/two/pods/ns/a", None).await.expect("raw get");
    assert_eq!(resp.kvs().first().map(|kv| kv.value()), Some(&b"2"[..]));

    let mut w = two.watch("/registry/pods/", 0).await.expect("watch");
    assert_eq!(next_event(&mut w).await.key(), "/registry/pods/ns/a");
}

/// A compaction done by someone else is learned from etcd, not only from this process.
#[tokio::test]
async fn compacted_revision_is_learned_from_etcd() {
    let etcd = Etcd::start().await;
    let b = etcd.backend("/registry").await;
    assert_eq!(b.compacted_revision().await.expect("compacted"), 0);
    let a = b
        .create("/registry/a", Bytes::from("a"))
        .await
        .expect("create");
    b.create("/registry/b", Bytes::from("b"))
        .await
        .expect("create");
    assert_eq!(b.compacted_revision().await.expect("compacted"), 0);
    let mut raw = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .expect("raw client");
    raw.compact(a.mod_revision, None)
        .await
        .expect("raw compact");
    assert_eq!(
        b.compacted_revision().await.expect("compacted"),
        a.mod_revision
    );
}

/// An etcd that is not there is `Unavailable`, not a hang or a panic.
#[tokio::test]
async fn unreachable_etcd_is_unavailable() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let result = match EtcdBackend::connect(&[endpoint], "/registry").await {
        Err(e) => Err(e),
        Ok(b) => b.current_revision().await,
    };
    assert!(
        matches!(result, Err(StorageError::Unavailable(_))),
        "{result:?}"
    );
}

/// Stopping etcd under a watch ends the watch with an error.
#[tokio::test]
async fn watch_ends_with_an_error_when_etcd_goes_away() {
    let etcd = Etcd::start().await;
    let b = etcd.backend("/registry").await;
    let now = b.current_revision().await.expect("rev");
    let mut w = b.watch("/registry/", now).await.expect("watch");
    b.create("/registry/x", Bytes::from("x"))
        .await
        .expect("create");
    assert_eq!(next_event(&mut w).await.key(), "/registry/x");
    drop(etcd);
    let end = tokio::time::timeout(Duration::from_secs(30), futures::StreamExt::next(&mut w))
        .await
        .expect("the watch notices etcd is gone");
    assert!(
        matches!(end, Some(Err(StorageError::Unavailable(_)))),
        "{end:?}"
    );
}
