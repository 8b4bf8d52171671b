//! The apiserver source: the pods bound to this node (`spec.nodeName=<node>`), listed and
//! watched, sent as the whole current set after the initial list and after every change.

use super::{SOURCE_API, SourceSender};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// Runs the apiserver source until shutdown; watch errors are retried with backoff.
pub async fn run(client: Client, node: String, tx: SourceSender, shutdown: CancellationToken) {
    let api: Api<Pod> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut stream = watcher(api, config).default_backoff().boxed();
    // Pods by namespace/name; the set under construction while a (re)list is in progress.
    let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
    let mut listing: Option<BTreeMap<String, Pod>> = None;
    let key = |p: &Pod| {
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or(""),
            p.metadata.name.as_deref().unwrap_or("")
        )
    };
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return,
            e = stream.next() => e,
        };
        let changed = match event {
            None => return,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "watch of this node's pods failed; retrying");
                false
            }
            Some(Ok(watcher::Event::Init)) => {
                listing = Some(BTreeMap::new());
                false
            }
            Some(Ok(watcher::Event::InitApply(p))) => {
                listing.get_or_insert_with(BTreeMap::new).insert(key(&p), p);
                false
            }
            Some(Ok(watcher::Event::InitDone)) => {
                pods = listing.take().unwrap_or_default();
                true
            }
            Some(Ok(watcher::Event::Apply(p))) => {
                pods.insert(key(&p), p);
                true
            }
            Some(Ok(watcher::Event::Delete(p))) => {
                pods.remove(&key(&p));
                true
            }
        };
        if changed
            && tx
                .send((SOURCE_API, pods.values().cloned().collect()))
                .await
                .is_err()
        {
            return;
        }
    }
}
