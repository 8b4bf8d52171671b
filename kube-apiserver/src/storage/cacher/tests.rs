//! Tests of the cacher against the in-memory backend. Every test runs on tokio's paused clock:
//! timeouts and periods elapse only when all tasks are idle, so nothing depends on wall time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::memory_backend::MemoryBackend;
use super::{Cacher, CacherConfig, Filter, WatchEvent, WatchStart, everything};
use crate::storage::backend::{Backend, Revision, StorageError};
use crate::storage::codec::encode;

const PODS: &str = "/registry/pods/";

fn key(ns: &str, name: &str) -> String {
    format!("{PODS}{ns}/{name}")
}

fn pod(ns: &str, name: &str, app: &str) -> bytes::Bytes {
    let object = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
    });
    encode(&object).expect("a pod encodes")
}

fn app_is(app: &'static str) -> Filter {
    Arc::new(move |object: &Value| object["metadata"]["labels"]["app"] == app)
}

fn rv(object: &Value) -> Revision {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("objects from the cache carry a resourceVersion")
}

/// An event reduced to what the tests compare: type, object name, app label, revision.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Added(String, String, Revision),
    Modified(String, String, Revision),
    Deleted(String, String, Revision),
    Bookmark(Revision),
    End(Revision),
    Error(StorageError),
}

fn seen(event: WatchEvent) -> Seen {
    let parts = |o: &Value| {
        (
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            o["metadata"]["labels"]["app"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            rv(o),
        )
    };
    match event {
        WatchEvent::Added(o) => {
            let (n, a, r) = parts(&o);
            Seen::Added(n, a, r)
        }
        WatchEvent::Modified(o) => {
            let (n, a, r) = parts(&o);
            Seen::Modified(n, a, r)
        }
        WatchEvent::Deleted(o) => {
            let (n, a, r) = parts(&o);
            Seen::Deleted(n, a, r)
        }
        WatchEvent::Bookmark(r) => Seen::Bookmark(r),
        WatchEvent::InitialEventsEnd(r) => Seen::End(r),
        WatchEvent::Error(e) => Seen::Error(e),
    }
}

fn added(name: &str, app: &str, rev: Revision) -> Seen {
    Seen::Added(name.into(), app.into(), rev)
}
fn modified(name: &str, app: &str, rev: Revision) -> Seen {
    Seen::Modified(name.into(), app.into(), rev)
}
fn deleted(name: &str, app: &str, rev: Revision) -> Seen {
    Seen::Deleted(name.into(), app.into(), rev)
}

/// The next event; fails the test instead of hanging if none comes.
async fn next(rx: &mut mpsc::Receiver<WatchEvent>) -> Option<Seen> {
    tokio::time::timeout(Duration::from_secs(600), rx.recv())
        .await
        .expect("an event or the end of the watch")
        .map(seen)
}

async fn take(rx: &mut mpsc::Receiver<WatchEvent>, n: usize) -> Vec<Seen> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(next(rx).await.expect("the watch to go on"));
    }
    out
}

/// Lets every task that can run do so (the paused clock only moves when all are idle).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn assert_quiet(rx: &mut mpsc::Receiver<WatchEvent>) {
    if let Ok(event) = rx.try_recv() {
        panic!("unexpected event {:?}", seen(event));
    }
}

async fn start(
    backend: &Arc<MemoryBackend>,
    config: CacherConfig,
) -> (Arc<Cacher>, CancellationToken) {
    let shutdown = CancellationToken::new();
    let cacher = Cacher::start_with(backend.clone(), PODS.into(), config, shutdown.clone())
        .await
        .expect("the cacher starts");
    (cacher, shutdown)
}

async fn create(backend: &MemoryBackend, ns: &str, name: &str, app: &str) -> Revision {
    backend
        .create(&key(ns, name), pod(ns, name, app))
        .await
        .expect("create")
        .mod_revision
}

async fn update(backend: &MemoryBackend, ns: &str, name: &str, app: &str) -> Revision {
    let current = backend
        .get(&key(ns, name), None)
        .await
        .expect("get")
        .expect("the object exists");
    backend
        .update(&key(ns, name), pod(ns, name, app), current.mod_revision)
        .await
        .expect("update")
        .mod_revision
}

async fn delete(backend: &MemoryBackend, ns: &str, name: &str) -> Revision {
    backend
        .delete(&key(ns, name), None)
        .await
        .expect("delete")
        .1
}

#[tokio::test(start_paused = true)]
async fn initial_state_then_live_changes() {
    for end_bookmark in [false, true] {
        let backend = Arc::new(MemoryBackend::default());
        create(&backend, "default", "a", "web").await;
        create(&backend, "default", "b", "web").await;
        let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
        assert_eq!(cacher.revision(), 2);

        let mut rx = cacher
            .watch(
                PODS,
                WatchStart::InitialState { end_bookmark },
                everything(),
                false,
            )
            .await
            .expect("watch");
        let mut expected = vec![added("a", "web", 1), added("b", "web", 2)];
        if end_bookmark {
            expected.push(Seen::End(2));
        }
        assert_eq!(
            take(&mut rx, expected.len()).await,
            expected,
            "end_bookmark={end_bookmark}"
        );

        let c = create(&backend, "default", "c", "web").await;
        let a = update(&backend, "default", "a", "db").await;
        let b = delete(&backend, "default", "b").await;
        assert_eq!(
            take(&mut rx, 3).await,
            vec![
                added("c", "web", c),
                modified("a", "db", a),
                deleted("b", "web", b)
            ]
        );
        settle().await;
        assert_quiet(&mut rx);
    }
}

#[tokio::test(start_paused = true)]
async fn watch_resumes_after_any_revision_still_in_the_ring() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut revisions = Vec::new();
    for i in 0..5 {
        revisions.push(create(&backend, "default", &format!("p{i}"), "web").await);
    }
    cacher.wait_until_fresh(5).await.expect("caught up");

    for after in 0..=5 {
        let mut rx = cacher
            .watch(PODS, WatchStart::After(after), everything(), false)
            .await
            .expect("watch");
        let expected: Vec<Seen> = revisions
            .iter()
            .zip(0..)
            .filter(|(rev, _)| **rev > after)
            .map(|(rev, i)| added(&format!("p{i}"), "web", *rev))
            .collect();
        assert_eq!(
            take(&mut rx, expected.len()).await,
            expected,
            "after {after}"
        );
        settle().await;
        assert_quiet(&mut rx);
    }
}

#[tokio::test(start_paused = true)]
async fn too_old_a_revision_is_compacted() {
    let backend = Arc::new(MemoryBackend::default());
    create(&backend, "default", "before", "web").await; // rev 1, before the cache's list
    let config = CacherConfig {
        history_capacity: 3,
        ..CacherConfig::default()
    };
    let (cacher, _shutdown) = start(&backend, config).await;
    // Before any change, the history starts at the list's revision.
    let err = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect_err("older than the list");
    assert_eq!(
        err,
        StorageError::Compacted {
            requested: 0,
            compacted: 1
        }
    );

    for i in 0..5 {
        create(&backend, "default", &format!("p{i}"), "web").await; // revs 2..=6
    }
    cacher.wait_until_fresh(6).await.expect("caught up");
    // The ring holds 4, 5, 6: a watch after 3 is served, after 2 is not.
    let cases = [
        (1, Err(3)),
        (2, Err(3)),
        (3, Ok(vec![4, 5, 6])),
        (5, Ok(vec![6])),
    ];
    for (after, want) in cases {
        let got = cacher
            .watch(PODS, WatchStart::After(after), everything(), false)
            .await;
        match (got, want) {
            (Ok(mut rx), Ok(revs)) => {
                let events = take(&mut rx, revs.len()).await;
                let got_revs: Vec<Revision> = events
                    .iter()
                    .map(|e| match e {
                        Seen::Added(_, _, r) => *r,
                        other => panic!("unexpected {other:?}"),
                    })
                    .collect();
                assert_eq!(got_revs, revs, "after {after}");
            }
            (Err(err), Err(oldest)) => assert_eq!(
                err,
                StorageError::Compacted {
                    requested: after,
                    compacted: oldest
                },
                "after {after}"
            ),
            (got, want) => panic!("after {after}: got {:?}, want {want:?}", got.map(|_| ())),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_future_revision_is_waited_for_then_refused() {
    let backend = Arc::new(MemoryBackend::default());
    create(&backend, "default", "a", "web").await;
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;

    // Nothing reaches revision 5: after the freshness timeout, FutureRevision.
    let err = cacher
        .watch(PODS, WatchStart::After(5), everything(), false)
        .await
        .expect_err("revision 5 never comes");
    assert_eq!(
        err,
        StorageError::FutureRevision {
            requested: 5,
            current: 1
        }
    );

    // Revision 2 arrives while the watch waits: it is served from there.
    let writer = {
        let backend = backend.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            create(&backend, "default", "b", "web").await;
            create(&backend, "default", "c", "web").await
        })
    };
    let mut rx = cacher
        .watch(PODS, WatchStart::After(2), everything(), false)
        .await
        .expect("revision 2 comes within the timeout");
    let c = writer.await.expect("writer");
    assert_eq!(next(&mut rx).await, Some(added("c", "web", c)));
}

#[tokio::test(start_paused = true)]
async fn updates_become_added_modified_deleted_through_a_label_filter() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut rx = cacher
        .watch(PODS, WatchStart::After(0), app_is("web"), false)
        .await
        .expect("watch");

    enum Op {
        Create(&'static str, &'static str),
        Update(&'static str, &'static str),
        Delete(&'static str),
    }
    use Op::*;
    // (change, what the watcher of app=web must see; `deleted` carries the old state)
    type Want = fn(&'static str, Revision) -> Option<Seen>;
    let cases: [(Op, Want); 9] = [
        (Create("x", "web"), |n, r| Some(added(n, "web", r))),
        (Update("x", "web"), |n, r| Some(modified(n, "web", r))),
        (Update("x", "db"), |n, r| Some(deleted(n, "web", r))),
        (Update("x", "db"), |_, _| None),
        (Update("x", "web"), |n, r| Some(added(n, "web", r))),
        (Delete("x"), |n, r| Some(deleted(n, "web", r))),
        (Create("y", "db"), |_, _| None),
        (Delete("y"), |_, _| None),
        (Create("z", "web"), |n, r| Some(added(n, "web", r))),
    ];
    for (op, want) in cases {
        let (name, rev) = match op {
            Create(n, app) => (n, create(&backend, "default", n, app).await),
            Update(n, app) => (n, update(&backend, "default", n, app).await),
            Delete(n) => (n, delete(&backend, "default", n).await),
        };
        cacher.wait_until_fresh(rev).await.expect("caught up");
        settle().await;
        match want(name, rev) {
            Some(expected) => assert_eq!(next(&mut rx).await, Some(expected), "at revision {rev}"),
            None => assert_quiet(&mut rx),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn watchers_see_only_their_sub_prefix() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut rx = cacher
        .watch(
            &format!("{PODS}kube-system/"),
            WatchStart::After(0),
            everything(),
            false,
        )
        .await
        .expect("watch");
    create(&backend, "default", "a", "web").await;
    let b = create(&backend, "kube-system", "b", "dns").await;
    create(&backend, "default", "c", "web").await;
    assert_eq!(next(&mut rx).await, Some(added("b", "dns", b)));
    cacher.wait_until_fresh(3).await.expect("caught up");
    settle().await;
    assert_quiet(&mut rx);

    let (objects, rev) = cacher.list(&format!("{PODS}default/"), &everything());
    assert_eq!(rev, 3);
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["a", "c"]);
    let (web, _) = cacher.list(PODS, &app_is("dns"));
    assert_eq!(web.len(), 1);
    assert_eq!(
        cacher.get(&key("kube-system", "b")).map(|o| rv(&o)),
        Some(b)
    );
    assert_eq!(cacher.get(&key("kube-system", "nope")), None);
}

#[tokio::test(start_paused = true)]
async fn objects_are_decoded_once_and_shared() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut first = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    let mut second = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    create(&backend, "default", "a", "web").await;
    let (Some(WatchEvent::Added(one)), Some(WatchEvent::Added(two))) =
        (first.recv().await, second.recv().await)
    else {
        panic!("both watchers get the creation");
    };
    let cached = cacher.get(&key("default", "a")).expect("cached");
    assert!(Arc::ptr_eq(&one, &two));
    assert!(Arc::ptr_eq(&one, &cached));
}

#[tokio::test(start_paused = true)]
async fn bookmarks_come_periodically_and_after_filtered_changes() {
    let backend = Arc::new(MemoryBackend::default());
    let config = CacherConfig {
        bookmark_period: Duration::from_secs(60),
        progress_bookmark_period: Duration::from_secs(5),
        ..CacherConfig::default()
    };
    let (cacher, _shutdown) = start(&backend, config).await;
    let mut with = cacher
        .watch(PODS, WatchStart::After(0), app_is("web"), true)
        .await
        .expect("watch");
    let mut without = cacher
        .watch(PODS, WatchStart::After(0), app_is("web"), false)
        .await
        .expect("watch");

    // A change the filter drops: the bookmark watcher hears of the new revision within one
    // progress period, the other never.
    let rev = create(&backend, "default", "db-0", "db").await;
    settle().await;
    assert_quiet(&mut with);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(with.try_recv().ok().map(seen), Some(Seen::Bookmark(rev)));

    // Nothing new: no progress bookmark until the heartbeat at 60 s.
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert_quiet(&mut with);
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(with.try_recv().ok().map(seen), Some(Seen::Bookmark(rev)));

    // A change the watcher receives needs no bookmark.
    let web = create(&backend, "default", "web-0", "web").await;
    assert_eq!(next(&mut with).await, Some(added("web-0", "web", web)));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_quiet(&mut with);

    assert_eq!(next(&mut without).await, Some(added("web-0", "web", web)));
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_quiet(&mut without);
}

#[tokio::test(start_paused = true)]
async fn a_slow_watcher_is_dropped_without_holding_back_the_others() {
    let backend = Arc::new(MemoryBackend::default());
    let config = CacherConfig {
        watcher_buffer: 2,
        slow_watcher_grace: Duration::from_millis(100),
        ..CacherConfig::default()
    };
    let (cacher, _shutdown) = start(&backend, config).await;
    let mut slow = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    let mut fast = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    const N: usize = 30;
    let reader = tokio::spawn(async move { take(&mut fast, N).await });
    let mut revisions = Vec::new();
    for i in 0..N {
        revisions.push(create(&backend, "default", &format!("p{i}"), "web").await);
    }
    let fast_got = reader.await.expect("the fast watcher gets every event");
    let fast_revs: Vec<Revision> = fast_got
        .iter()
        .map(|e| match e {
            Seen::Added(_, _, r) => *r,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(fast_revs, revisions);
    assert_eq!(cacher.watcher_count(), 1, "the slow watcher was dropped");

    // The slow one got a prefix of the events, in order, then its channel closed.
    let mut slow_revs = Vec::new();
    while let Some(event) = next(&mut slow).await {
        match event {
            Seen::Added(_, _, r) => slow_revs.push(r),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        slow_revs.len() < N,
        "the slow watcher cannot have got everything"
    );
    assert_eq!(slow_revs[..], revisions[..slow_revs.len()]);
}

#[tokio::test(start_paused = true)]
async fn two_thousand_watchers_share_one_backend_watch() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut watchers = Vec::new();
    for i in 0..2000 {
        // Half from the initial state, half from a revision; all see the same changes.
        let start = if i % 2 == 0 {
            WatchStart::InitialState {
                end_bookmark: false,
            }
        } else {
            WatchStart::After(0)
        };
        watchers.push(
            cacher
                .watch(PODS, start, everything(), false)
                .await
                .expect("watch"),
        );
    }
    let mut expected = Vec::new();
    for i in 0..10 {
        let rev = create(&backend, "default", &format!("p{i}"), "web").await;
        expected.push(added(&format!("p{i}"), "web", rev));
    }
    for rx in &mut watchers {
        assert_eq!(take(rx, expected.len()).await, expected);
    }
    assert_eq!(backend.watch_calls(), 1);
    assert_eq!(backend.live_watches(), 1);
    assert_eq!(cacher.watcher_count(), 2000);
}

#[tokio::test(start_paused = true)]
async fn a_broken_watch_is_resumed_without_disturbing_watchers() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let mut rx = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    let a = create(&backend, "default", "a", "web").await;
    assert_eq!(next(&mut rx).await, Some(added("a", "web", a)));

    backend.refuse_watches(true);
    backend.break_watches();
    let b = create(&backend, "default", "b", "web").await;
    let a2 = update(&backend, "default", "a", "db").await;
    settle().await;
    tokio::time::sleep(Duration::from_secs(1)).await; // a few refused re-watches
    backend.refuse_watches(false);

    assert_eq!(
        take(&mut rx, 2).await,
        vec![added("b", "web", b), modified("a", "db", a2)]
    );
    cacher.wait_until_fresh(a2).await.expect("caught up");
    assert!(backend.watch_calls() > 2, "re-watched after refusals");
    assert_eq!(backend.live_watches(), 1);
    settle().await;
    assert_quiet(&mut rx);
}

#[tokio::test(start_paused = true)]
async fn lost_history_means_a_relist_and_the_end_of_every_watcher() {
    let backend = Arc::new(MemoryBackend::default());
    create(&backend, "default", "a", "web").await;
    create(&backend, "default", "b", "web").await;
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    let before = cacher.revision();
    let mut rx = cacher
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
    assert_eq!(take(&mut rx, 2).await.len(), 2);

    // The cache loses its watch while changes happen and are compacted away.
    backend.refuse_watches(true);
    backend.break_watches();
    create(&backend, "default", "c", "web").await;
    delete(&backend, "default", "a").await;
    update(&backend, "default", "b", "db").await;
    let head = backend.current_revision().await.expect("revision");
    backend.compact(head).await.expect("compact");
    backend.refuse_watches(false);

    // The watcher is ended with the compaction error.
    match next(&mut rx).await {
        Some(Seen::Error(StorageError::Compacted { requested, .. })) => {
            assert_eq!(requested, before)
        }
        other => panic!("expected a Compacted error, got {other:?}"),
    }
    assert_eq!(next(&mut rx).await, None);

    // The cache is the backend's state again.
    cacher.wait_until_fresh(head).await.expect("re-listed");
    assert!(cacher.is_ready());
    assert_eq!(cacher.revision(), head);
    let (objects, rev) = cacher.list(PODS, &everything());
    assert_eq!(rev, head);
    let state: Vec<(String, String)> = objects
        .iter()
        .map(|o| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                s(&o["metadata"]["name"]),
                s(&o["metadata"]["labels"]["app"]),
            )
        })
        .collect();
    assert_eq!(
        state,
        [("b".into(), "db".into()), ("c".into(), "web".into())]
    );
    assert_eq!(backend.live_watches(), 1);

    // Old positions are gone; new watchers work.
    let err = cacher
        .watch(PODS, WatchStart::After(before), everything(), false)
        .await
        .expect_err("history before the re-list is gone");
    assert_eq!(
        err,
        StorageError::Compacted {
            requested: before,
            compacted: head
        }
    );
    let mut rx = cacher
        .watch(PODS, WatchStart::After(head), everything(), false)
        .await
        .expect("watch");
    let d = create(&backend, "default", "d", "web").await;
    assert_eq!(next(&mut rx).await, Some(added("d", "web", d)));
}

#[tokio::test(start_paused = true)]
async fn wait_until_fresh_waits_for_the_revision_or_times_out() {
    let backend = Arc::new(MemoryBackend::default());
    create(&backend, "default", "a", "web").await;
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;

    // (revision asked, writes made meanwhile, expected)
    let cases: [(Revision, usize, Result<(), StorageError>); 4] = [
        (0, 0, Ok(())),
        (1, 0, Ok(())),
        (3, 2, Ok(())),
        (
            9,
            1,
            Err(StorageError::FutureRevision {
                requested: 9,
                current: 4,
            }),
        ),
    ];
    let mut n = 0;
    for (revision, writes, want) in cases {
        let writer = {
            let backend = backend.clone();
            let first = n;
            tokio::spawn(async move {
                for i in first..first + writes {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    create(&backend, "default", &format!("w{i}"), "web").await;
                }
            })
        };
        n += writes;
        assert_eq!(
            cacher.wait_until_fresh(revision).await,
            want,
            "revision {revision}"
        );
        writer.await.expect("writer");
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_the_backend_watch_and_every_watcher() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, shutdown) = start(&backend, CacherConfig::default()).await;
    let mut rx = cacher
        .watch(PODS, WatchStart::After(0), everything(), true)
        .await
        .expect("watch");
    assert_eq!(backend.live_watches(), 1);
    shutdown.cancel();
    assert_eq!(next(&mut rx).await, None);
    settle().await;
    assert_eq!(backend.live_watches(), 0);
    assert!(!cacher.is_ready());
    assert!(matches!(
        cacher
            .watch(PODS, WatchStart::After(0), everything(), false)
            .await,
        Err(StorageError::Unavailable(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_watcher_whose_client_left_is_forgotten() {
    let backend = Arc::new(MemoryBackend::default());
    let (cacher, _shutdown) = start(&backend, CacherConfig::default()).await;
    // One client leaves while nothing happens, the other while changes flow: both watchers
    // are forgotten by the next bookmark tick at the latest.
    let idle = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    let busy = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    let mut stays = cacher
        .watch(PODS, WatchStart::After(0), everything(), false)
        .await
        .expect("watch");
    assert_eq!(cacher.watcher_count(), 3);
    drop(idle);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(cacher.watcher_count(), 2);
    drop(busy);
    let a = create(&backend, "default", "a", "web").await;
    let b = create(&backend, "default", "b", "web").await;
    assert_eq!(
        take(&mut stays, 2).await,
        vec![added("a", "web", a), added("b", "web", b)]
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(cacher.watcher_count(), 1);

    let err = cacher
        .watch(
            "/registry/secrets/",
            WatchStart::After(0),
            everything(),
            false,
        )
        .await
        .expect_err("not this cache's resource");
    assert!(matches!(err, StorageError::Internal(_)));
}
