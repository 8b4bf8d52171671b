//! Pod sources (upstream's `pkg/kubelet/config`): the apiserver (pods bound to this node), the
//! static pod directory and the manifest URL, merged into one stream of updates.
//! Owner: the pod-sources engineer.
//!
//! Every source sends its complete current set of pods; [`storage::PodStorage`] diffs it against
//! the source's previous set and emits ADD / UPDATE / DELETE / REMOVE / RECONCILE updates.

pub mod apiserver;
pub mod common;
pub mod file;
pub mod http;
pub mod storage;

pub use storage::CONFIG_FIRST_SEEN_ANNOTATION;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The source names, as the `kubernetes.io/config.source` annotation carries them.
pub const SOURCE_API: &str = "api";
pub const SOURCE_FILE: &str = "file";
pub const SOURCE_HTTP: &str = "http";

/// What changed, as upstream's `PodOperation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodOperation {
    /// New pods from a source.
    Add,
    /// Changed specs or metadata.
    Update,
    /// Pods gone from their source: stop them.
    Remove,
    /// Pods whose apiserver object is being deleted gracefully (deletionTimestamp set).
    Delete,
    /// Only status changed at the source: no new work, the kubelet refreshes its copy.
    Reconcile,
}

/// One merged update.
#[derive(Debug, Clone)]
pub struct PodUpdate {
    pub op: PodOperation,
    pub pods: Vec<Pod>,
    pub source: &'static str,
}

/// What a source task sends: its name and its complete current set.
pub type SourceSender = mpsc::Sender<(&'static str, Vec<Pod>)>;

/// The pod sources to run. A source left `None` is not started (and not waited for).
#[derive(Clone, Default)]
pub struct Sources {
    /// This node's name: static pods are named `<name>-<node>` and bound here.
    pub node_name: String,
    /// The apiserver client and the node whose pods to watch.
    pub apiserver: Option<(kube::Client, String)>,
    /// `staticPodPath` / `--pod-manifest-path`: a directory or a single file.
    pub static_pod_path: Option<PathBuf>,
    /// `fileCheckFrequency` (20 s upstream): full re-reads; changes act within a second.
    pub file_check_frequency: Duration,
    /// `staticPodURL` and its `staticPodURLHeader` headers.
    pub manifest_url: Option<(String, Vec<(String, String)>)>,
    /// `httpCheckFrequency` (20 s upstream).
    pub http_check_frequency: Duration,
}

impl Sources {
    /// The sources a kubelet configuration asks for: the apiserver when there is a client,
    /// `staticPodPath` and `staticPodURL` (with `staticPodURLHeader`) when set.
    pub fn from_config(config: &crate::app::config::Config, client: Option<kube::Client>) -> Self {
        let k = &config.kubelet;
        let node = config.node_name.clone();
        let headers = k
            .static_pod_url_header
            .iter()
            .flat_map(|(name, values)| values.iter().map(move |v| (name.clone(), v.clone())))
            .collect();
        Self {
            apiserver: client.map(|c| (c, node.clone())),
            static_pod_path: config.static_pod_path(),
            file_check_frequency: k.file_check_frequency,
            manifest_url: (!k.static_pod_url.is_empty())
                .then(|| (k.static_pod_url.clone(), headers)),
            http_check_frequency: k.http_check_frequency,
            node_name: node,
        }
    }
}

/// Whether every configured source has delivered its first set: until then the kubelet must not
/// treat pods missing from the sources as deleted. Cheap to clone and share.
#[derive(Clone)]
pub struct SourcesReady {
    expected: Arc<Vec<&'static str>>,
    seen: Arc<RwLock<HashSet<&'static str>>>,
    changed: tokio::sync::watch::Sender<()>,
}

impl SourcesReady {
    /// A tracker waiting for the named sources.
    pub fn new(expected: Vec<&'static str>) -> Self {
        Self {
            expected: Arc::new(expected),
            seen: Arc::default(),
            changed: tokio::sync::watch::channel(()).0,
        }
    }

    /// Marks a source as having sent its first set.
    pub fn mark_seen(&self, source: &'static str) {
        if self.seen.write().insert(source) {
            self.changed.send_replace(());
        }
    }

    pub fn source_seen(&self, source: &str) -> bool {
        self.seen.read().contains(source)
    }

    /// Every configured source has sent at least one set.
    pub fn all_ready(&self) -> bool {
        let seen = self.seen.read();
        self.expected.iter().all(|s| seen.contains(s))
    }

    /// Waits until [`Self::all_ready`].
    pub async fn wait(&self) {
        let mut rx = self.changed.subscribe();
        while !self.all_ready() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Starts the configured sources and the merge; returns the merged updates and the readiness
/// tracker. Everything stops when `shutdown` is cancelled (or the receiver is dropped).
pub fn start(
    sources: Sources,
    shutdown: CancellationToken,
) -> (mpsc::Receiver<PodUpdate>, SourcesReady) {
    let (src_tx, mut src_rx) = mpsc::channel::<(&'static str, Vec<Pod>)>(16);
    let mut expected = Vec::new();
    if let Some((client, node)) = sources.apiserver.clone() {
        expected.push(SOURCE_API);
        tokio::spawn(apiserver::run(
            client,
            node,
            src_tx.clone(),
            shutdown.clone(),
        ));
    }
    if let Some(path) = sources.static_pod_path.clone() {
        expected.push(SOURCE_FILE);
        tokio::spawn(file::run(
            path,
            sources.node_name.clone(),
            nonzero(sources.file_check_frequency),
            src_tx.clone(),
            shutdown.clone(),
        ));
    }
    if let Some((url, headers)) = sources.manifest_url.clone() {
        expected.push(SOURCE_HTTP);
        tokio::spawn(http::run(
            url,
            headers,
            sources.node_name.clone(),
            nonzero(sources.http_check_frequency),
            src_tx.clone(),
            shutdown.clone(),
        ));
    }
    drop(src_tx);
    let ready = SourcesReady::new(expected);
    // Upstream's channel holds 50 updates; a slow consumer holds the sources back.
    let (tx, rx) = mpsc::channel(50);
    let merge_ready = ready.clone();
    tokio::spawn(async move {
        let mut storage = storage::PodStorage::default();
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => return,
                n = src_rx.recv() => n,
            };
            let Some((source, pods)) = next else { return };
            let now = jiff::Timestamp::now().to_string();
            let updates = storage.merge(source, pods, &now);
            merge_ready.mark_seen(source);
            for u in updates {
                if tx.send(u).await.is_err() {
                    return;
                }
            }
        }
    });
    (rx, ready)
}

fn nonzero(d: Duration) -> Duration {
    if d.is_zero() {
        Duration::from_secs(20)
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn recv(rx: &mut mpsc::Receiver<PodUpdate>) -> PodUpdate {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("an update within seconds")
            .expect("open")
    }

    #[tokio::test]
    async fn file_source_flows_through_the_merge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stop = CancellationToken::new();
        let sources = Sources {
            node_name: "n1".into(),
            static_pod_path: Some(dir.path().to_path_buf()),
            file_check_frequency: Duration::from_secs(600),
            ..Default::default()
        };
        let (mut rx, ready) = start(sources, stop.clone());
        let first = recv(&mut rx).await;
        assert_eq!(
            (first.op, first.pods.len(), first.source),
            (PodOperation::Add, 0, SOURCE_FILE)
        );
        tokio::time::timeout(Duration::from_secs(5), ready.wait())
            .await
            .expect("ready");
        assert!(ready.all_ready());

        let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n";
        std::fs::write(dir.path().join("web.yaml"), manifest).unwrap();
        let add = recv(&mut rx).await;
        assert_eq!(add.op, PodOperation::Add);
        let uid1 = add.pods[0].metadata.uid.clone();
        let ann = add.pods[0].metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            ann.get(crate::pod::CONFIG_SOURCE_ANNOTATION)
                .map(String::as_str),
            Some("file")
        );
        assert!(ann.contains_key(CONFIG_FIRST_SEEN_ANNOTATION));

        // An edit changes the uid: the old pod is removed and the new one added.
        std::fs::write(
            dir.path().join("web.yaml"),
            manifest.replace("1.36", "latest"),
        )
        .unwrap();
        let rm = recv(&mut rx).await;
        assert_eq!(
            (rm.op, rm.pods[0].metadata.uid.clone()),
            (PodOperation::Remove, uid1.clone())
        );
        let add = recv(&mut rx).await;
        assert_eq!(add.op, PodOperation::Add);
        assert_ne!(add.pods[0].metadata.uid, uid1);

        std::fs::remove_file(dir.path().join("web.yaml")).unwrap();
        let rm = recv(&mut rx).await;
        assert_eq!(rm.op, PodOperation::Remove);
        stop.cancel();
    }

    #[test]
    fn readiness_waits_for_every_configured_source() {
        let r = SourcesReady::new(vec![SOURCE_API, SOURCE_FILE]);
        assert!(!r.all_ready());
        r.mark_seen(SOURCE_FILE);
        assert!(r.source_seen(SOURCE_FILE) && !r.all_ready());
        r.mark_seen(SOURCE_API);
        assert!(r.all_ready());
        assert!(SourcesReady::new(vec![]).all_ready());
    }
}
