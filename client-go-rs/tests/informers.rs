//! Shared informer translation of kube watcher events into cache changes and handler calls,
//! driven by feeding `watcher::Event`s directly (no server), and the factory's sharing.

use std::sync::Arc;

use client_go_rs::informers::{
    Deleted, EventHandlerFuncs, InformerOptions, SharedInformer, SharedInformerFactory,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{ApiResource, GroupVersionKind, ObjectMeta};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Config};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// A client that is never used to reach a server: these tests feed events by hand.
fn offline_client() -> Client {
    let config = Config::new("http://127.0.0.1:9".parse().expect("static url"));
    Client::try_from(config).expect("client from static config")
}

fn informer() -> SharedInformer<Pod> {
    SharedInformer::new(Api::all(offline_client()), watcher::Config::default(), None)
}

const SENTINEL_NS: &str = "zz-sentinel";

fn pod(ns: &str, name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn describe(p: &Pod) -> String {
    format!(
        "{}/{}@{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or(""),
        p.metadata.resource_version.as_deref().unwrap_or("")
    )
}

/// A handler that reports each call as a line on a channel.
fn recorder(tx: UnboundedSender<String>) -> EventHandlerFuncs<Pod> {
    let (a, u, d) = (tx.clone(), tx.clone(), tx);
    EventHandlerFuncs::new()
        .on_add(move |o, initial| {
            let _ = a.send(format!("add {} initial={initial}", describe(o)));
        })
        .on_update(move |old, new| {
            let same = if Arc::ptr_eq(old, new) { " (same)" } else { "" };
            let _ = u.send(format!(
                "update {} -> {}{same}",
                describe(old),
                describe(new)
            ));
        })
        .on_delete(move |del| {
            let line = match del {
                Deleted::Known(o) => format!("delete {}", describe(o)),
                Deleted::FinalStateUnknown { key, obj } => {
                    format!("delete-unknown {key} last={}", describe(obj))
                }
            };
            let _ = d.send(line);
        })
}

/// Pushes a marker object through the informer and returns every line a handler received
/// before the marker: since one handler's calls are ordered, this is everything so far, and no
/// sleeping is needed. The marker is then removed again (and its delete consumed).
async fn drain(inf: &SharedInformer<Pod>, rx: &mut UnboundedReceiver<String>) -> Vec<String> {
    inf.handle_event(Event::Apply(pod(SENTINEL_NS, "marker", "0")));
    let mut lines = Vec::new();
    loop {
        let line = rx.recv().await.expect("handler alive");
        if line.contains(SENTINEL_NS) {
            break;
        }
        lines.push(line);
    }
    inf.handle_event(Event::Delete(pod(SENTINEL_NS, "marker", "0")));
    let del = rx.recv().await.expect("handler alive");
    assert!(del.starts_with("delete zz-sentinel"), "{del}");
    lines
}

fn cached(inf: &SharedInformer<Pod>) -> Vec<String> {
    let mut v: Vec<String> = inf.indexer().list().iter().map(|p| describe(p)).collect();
    v.sort();
    v
}

fn initial_list(inf: &SharedInformer<Pod>, pods: Vec<Pod>) {
    inf.handle_event(Event::Init);
    for p in pods {
        inf.handle_event(Event::InitApply(p));
    }
    inf.handle_event(Event::InitDone);
}

#[tokio::test]
async fn initial_list_fills_cache_at_init_done() {
    let inf = informer();
    let (tx, mut rx) = unbounded_channel();
    inf.add_event_handler(recorder(tx));

    inf.handle_event(Event::Init);
    inf.handle_event(Event::InitApply(pod("a", "p1", "1")));
    inf.handle_event(Event::InitApply(pod("b", "p2", "2")));
    assert!(
        inf.indexer().is_empty(),
        "a partial list must not reach the cache"
    );
    assert!(!inf.has_synced());
    inf.handle_event(Event::InitDone);
    assert!(inf.has_synced());
    assert_eq!(cached(&inf), vec!["a/p1@1", "b/p2@2"]);

    let mut lines = drain(&inf, &mut rx).await;
    lines.sort();
    assert_eq!(
        lines,
        vec!["add a/p1@1 initial=true", "add b/p2@2 initial=true"]
    );
}

#[tokio::test]
async fn apply_and_delete_give_add_update_delete() {
    let inf = informer();
    let (tx, mut rx) = unbounded_channel();
    inf.add_event_handler(recorder(tx));
    initial_list(&inf, vec![]);

    inf.handle_event(Event::Apply(pod("a", "p1", "5")));
    inf.handle_event(Event::Apply(pod("a", "p1", "6")));
    inf.handle_event(Event::Delete(pod("a", "p1", "7")));
    // A delete of an object the cache never held is not delivered (as client-go).
    inf.handle_event(Event::Delete(pod("a", "ghost", "8")));

    assert_eq!(
        drain(&inf, &mut rx).await,
        vec![
            "add a/p1@5 initial=false",
            "update a/p1@5 -> a/p1@6",
            "delete a/p1@7",
        ]
    );
    assert!(inf.indexer().get("a", "p1").is_none());
}

#[tokio::test]
async fn relist_updates_changed_adds_new_and_tombstones_vanished() {
    let inf = informer();
    initial_list(
        &inf,
        vec![
            pod("a", "same", "1"),
            pod("a", "changed", "2"),
            pod("a", "gone", "3"),
        ],
    );
    let (tx, mut rx) = unbounded_channel();
    inf.add_event_handler(recorder(tx));
    let mut synthetic = drain(&inf, &mut rx).await;
    synthetic.sort();
    assert_eq!(
        synthetic,
        vec![
            "add a/changed@2 initial=false",
            "add a/gone@3 initial=false",
            "add a/same@1 initial=false",
        ]
    );

    // The watch broke; kube's watcher relists.
    initial_list(
        &inf,
        vec![
            pod("a", "same", "1"),
            pod("a", "changed", "9"),
            pod("b", "new", "10"),
        ],
    );
    let mut lines = drain(&inf, &mut rx).await;
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "add b/new@10 initial=false",
            "delete-unknown a/gone last=a/gone@3",
            "update a/changed@2 -> a/changed@9",
        ]
    );
    assert_eq!(cached(&inf), vec!["a/changed@9", "a/same@1", "b/new@10"]);
}

#[tokio::test]
async fn late_handler_gets_current_contents_once_then_changes() {
    let inf = informer();
    let (tx1, mut rx1) = unbounded_channel();
    inf.add_event_handler(recorder(tx1));
    initial_list(&inf, vec![pod("a", "p1", "1")]);
    inf.handle_event(Event::Apply(pod("a", "p2", "2")));

    let (tx2, mut rx2) = unbounded_channel();
    inf.add_event_handler(recorder(tx2));
    inf.handle_event(Event::Apply(pod("a", "p2", "3")));

    let mut late = drain(&inf, &mut rx2).await;
    late[..2].sort();
    assert_eq!(
        late,
        vec![
            "add a/p1@1 initial=false",
            "add a/p2@2 initial=false",
            "update a/p2@2 -> a/p2@3",
        ]
    );
    assert_eq!(
        drain(&inf, &mut rx1).await,
        vec![
            "add a/p1@1 initial=true",
            "add a/p2@2 initial=false",
            "update a/p2@2 -> a/p2@3",
        ]
    );
}

#[tokio::test]
async fn handler_added_before_sync_sees_initial_list_flag() {
    let inf = informer();
    inf.handle_event(Event::Init);
    inf.handle_event(Event::InitApply(pod("a", "p1", "1")));
    let (tx, mut rx) = unbounded_channel();
    inf.add_event_handler(recorder(tx));
    inf.handle_event(Event::InitDone);
    assert_eq!(drain(&inf, &mut rx).await, vec!["add a/p1@1 initial=true"]);
}

#[tokio::test]
async fn resync_redelivers_cached_objects_as_same_updates() {
    let inf = informer();
    initial_list(&inf, vec![pod("a", "p1", "1"), pod("a", "p2", "2")]);
    let (tx, mut rx) = unbounded_channel();
    inf.add_event_handler(recorder(tx));
    let _ = drain(&inf, &mut rx).await;

    inf.resync();
    let mut lines = drain(&inf, &mut rx).await;
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "update a/p1@1 -> a/p1@1 (same)",
            "update a/p2@2 -> a/p2@2 (same)",
        ]
    );
}

#[tokio::test]
async fn removed_handler_gets_nothing_more() {
    let inf = informer();
    initial_list(&inf, vec![]);
    let (tx1, mut rx1) = unbounded_channel();
    let (tx2, mut rx2) = unbounded_channel();
    let reg = inf.add_event_handler(recorder(tx1));
    inf.add_event_handler(recorder(tx2));
    assert_eq!(inf.handler_count(), 2);
    assert!(inf.remove_event_handler(reg));
    assert!(!inf.remove_event_handler(reg));
    inf.handle_event(Event::Apply(pod("a", "p1", "1")));
    assert_eq!(
        drain(&inf, &mut rx2).await,
        vec!["add a/p1@1 initial=false"]
    );
    // The removed handler's queue is closed once its sender is gone: recv ends with None.
    assert_eq!(rx1.recv().await, None);
}

#[tokio::test]
async fn wait_for_cache_sync_ends_on_sync_or_shutdown() {
    let inf = Arc::new(informer());
    let stop = CancellationToken::new();
    stop.cancel();
    assert!(
        !inf.wait_for_cache_sync(&stop).await,
        "not synced, shut down"
    );

    let live = CancellationToken::new();
    let waiter = {
        let inf = inf.clone();
        let live = live.clone();
        tokio::spawn(async move { inf.wait_for_cache_sync(&live).await })
    };
    initial_list(&inf, vec![pod("a", "p1", "1")]);
    assert!(waiter.await.expect("waiter task"));
}

#[tokio::test]
async fn lister_and_custom_index_follow_the_cache() {
    let inf = informer();
    inf.add_indexer("byName", |p: &Pod| {
        p.metadata.name.clone().into_iter().collect()
    })
    .expect("new index");
    initial_list(
        &inf,
        vec![pod("a", "x", "1"), pod("b", "x", "2"), pod("b", "y", "3")],
    );
    assert_eq!(
        inf.indexer().by_index("byName", "x").expect("index").len(),
        2
    );
    inf.handle_event(Event::Delete(pod("a", "x", "4")));
    assert_eq!(
        inf.indexer().by_index("byName", "x").expect("index").len(),
        1
    );
    assert_eq!(inf.lister().namespace("b").list().len(), 2);
}

#[tokio::test]
async fn factory_shares_one_informer_per_resource_and_options() {
    let factory = SharedInformerFactory::new(offline_client(), None);
    let a = factory.informer::<Pod>();
    let b = factory.informer::<Pod>();
    assert!(
        Arc::ptr_eq(&a, &b),
        "same type, same options: same informer"
    );

    let ns = factory.informer_with::<Pod>(InformerOptions::default().namespace("kube-system"));
    assert!(!Arc::ptr_eq(&a, &ns));
    let ns2 = factory.informer_with::<Pod>(InformerOptions::default().namespace("kube-system"));
    assert!(Arc::ptr_eq(&ns, &ns2));
    let sel = factory.informer_with::<Pod>(InformerOptions::default().labels("app=web"));
    assert!(!Arc::ptr_eq(&a, &sel));

    let _cm = factory.informer::<ConfigMap>();
    let _nodes = factory.informer::<Node>();
    let nodes_again = factory.cluster_informer_with::<Node>(InformerOptions::default());
    assert!(Arc::ptr_eq(&_nodes, &nodes_again));
    assert_eq!(factory.informer_count(), 5);

    // Handlers registered through either handle reach the same cache.
    initial_list(&a, vec![pod("a", "p1", "1")]);
    assert!(b.indexer().get("a", "p1").is_some());
}

#[tokio::test]
async fn factory_dynamic_informers_are_keyed_by_resource() {
    let factory = SharedInformerFactory::new(offline_client(), None);
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let gadgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let w1 = factory.dynamic_informer(&widgets, InformerOptions::default());
    let w2 = factory.dynamic_informer(&widgets, InformerOptions::default());
    let g = factory.dynamic_informer(&gadgets, InformerOptions::default());
    assert!(Arc::ptr_eq(&w1, &w2));
    assert!(!Arc::ptr_eq(&w1, &g));
    assert_eq!(factory.informer_count(), 2);
}

#[tokio::test]
async fn factory_sync_state_covers_started_informers_only() {
    let factory = SharedInformerFactory::new(offline_client(), None);
    let stop = CancellationToken::new();
    // Nothing started: trivially synced.
    assert!(factory.has_synced());
    assert!(factory.wait_for_cache_sync(&stop).await);
    let pods = factory.informer::<Pod>();
    // Started against an unreachable server: the list fails and is retried, so the informer
    // cannot sync; the feed below plays the part of the server. The real watcher's own `Init`
    // may interleave with the feed and empty the relist buffer, which changes the cache content
    // but not the outcome checked here: any `InitDone` marks the informer synced.
    factory.start(&stop);
    assert!(!factory.has_synced());
    initial_list(&pods, vec![pod("a", "p1", "1")]);
    assert!(factory.has_synced());
    assert!(factory.wait_for_cache_sync(&stop).await);
    stop.cancel();
    factory.shutdown().await;
}
