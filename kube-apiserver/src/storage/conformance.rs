//! The contract every [`Backend`] keeps, as checks a test runs against a fresh, empty backend.
//!
//! Each check panics (it is test code) with a message saying which rule broke. They are public
//! so the integration tests of each backend (`tests/storage_*.rs`) run the same suite; every
//! check wants its own fresh backend, since compaction and revisions are global.
//! [`ALL`] lists them by name.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;

use super::backend::{Backend, Event, KeyValue, Revision, StorageError, WatchStream};

/// A check of the suite.
pub type Check = fn(Arc<dyn Backend>) -> BoxFuture<'static, ()>;

/// Every check, by name.
pub const ALL: &[(&str, Check)] = &[
    ("create_and_get", |b| Box::pin(create_and_get(b))),
    ("update_compare_and_swap", |b| {
        Box::pin(update_compare_and_swap(b))
    }),
    ("delete_preconditions", |b| {
        Box::pin(delete_preconditions(b))
    }),
    ("revisions_strictly_increase", |b| {
        Box::pin(revisions_strictly_increase(b))
    }),
    ("concurrent_writers", |b| Box::pin(concurrent_writers(b))),
    ("reads_at_past_revisions", |b| {
        Box::pin(reads_at_past_revisions(b))
    }),
    ("pagination", |b| Box::pin(pagination(b))),
    ("prefix_isolation", |b| Box::pin(prefix_isolation(b))),
    ("count", |b| Box::pin(count(b))),
    ("watch_from_past_then_live", |b| {
        Box::pin(watch_from_past_then_live(b))
    }),
    ("watch_from_now", |b| Box::pin(watch_from_now(b))),
    ("compaction", |b| Box::pin(compaction(b))),
    ("watch_after_compaction", |b| {
        Box::pin(watch_after_compaction(b))
    }),
    ("future_revision", |b| Box::pin(future_revision(b))),
];

/// How long a watch may take to deliver an event before the check gives up. Only a guard
/// against hanging forever: no check depends on how fast anything is.
const WATCH_PATIENCE: Duration = Duration::from_secs(30);

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The next event of a watch, failing the check if the stream errs or ends.
pub async fn next_event(stream: &mut WatchStream) -> Event {
    match tokio::time::timeout(WATCH_PATIENCE, stream.next()).await {
        Err(_) => panic!("no watch event within {WATCH_PATIENCE:?}"),
        Ok(None) => panic!("watch ended unexpectedly"),
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(Some(Ok(event))) => event,
    }
}

/// A compact form of an event for comparisons: (kind, key, value, prev value, revision).
fn describe(event: &Event) -> (&'static str, String, String, Option<String>, Revision) {
    let text = |kv: &KeyValue| String::from_utf8_lossy(&kv.value).into_owned();
    match event {
        Event::Progress { revision } => ("progress", String::new(), String::new(), None, *revision),
        Event::Put { kv, prev } => (
            "put",
            kv.key.clone(),
            text(kv),
            prev.as_ref().map(text),
            kv.mod_revision,
        ),
        Event::Delete {
            key,
            revision,
            prev,
        } => (
            "delete",
            key.clone(),
            String::new(),
            Some(text(prev)),
            *revision,
        ),
    }
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

/// create stores a value whose create and mod revisions are the write's revision; a second
/// create fails with AlreadyExists; get of a missing key is None.
pub async fn create_and_get(b: Arc<dyn Backend>) {
    let before = b.current_revision().await.expect("current_revision");
    let kv = b
        .create("/registry/pods/default/a", val("one"))
        .await
        .expect("create");
    assert_eq!(kv.key, "/registry/pods/default/a");
    assert_eq!(kv.value, val("one"));
    assert!(kv.mod_revision > before, "create must take a new revision");
    assert_eq!(kv.create_revision, kv.mod_revision);
    assert_eq!(
        b.current_revision().await.expect("current_revision"),
        kv.mod_revision
    );

    let got = b.get("/registry/pods/default/a", None).await.expect("get");
    assert_eq!(got, Some(kv.clone()));

    let again = b.create("/registry/pods/default/a", val("two")).await;
    assert_eq!(
        again,
        Err(StorageError::AlreadyExists {
            key: "/registry/pods/default/a".into()
        })
    );
    // A failed write takes no revision and leaves the value alone.
    assert_eq!(b.current_revision().await.expect("rev"), kv.mod_revision);
    assert_eq!(
        b.get("/registry/pods/default/a", None).await.expect("get"),
        Some(kv)
    );
    assert_eq!(
        b.get("/registry/pods/default/missing", None)
            .await
            .expect("get"),
        None
    );
}

/// update is a compare-and-swap on mod_revision; a lost race reports the current value; the
/// create_revision survives updates; updating a missing key is NotFound.
pub async fn update_compare_and_swap(b: Arc<dyn Backend>) {
    let key = "/registry/configmaps/default/cm";
    let v1 = b.create(key, val("v1")).await.expect("create");
    let v2 = b
        .update(key, val("v2"), v1.mod_revision)
        .await
        .expect("update at the current revision");
    assert!(v2.mod_revision > v1.mod_revision);
    assert_eq!(v2.create_revision, v1.create_revision);
    assert_eq!(v2.value, val("v2"));

    let stale = b.update(key, val("v3"), v1.mod_revision).await;
    assert_eq!(
        stale,
        Err(StorageError::Conflict {
            key: key.into(),
            expected: v1.mod_revision,
            current: Some(v2.clone()),
        })
    );
    assert_eq!(b.get(key, None).await.expect("get"), Some(v2.clone()));

    let missing = b
        .update(
            "/registry/configmaps/default/none",
            val("x"),
            v2.mod_revision,
        )
        .await;
    assert_eq!(
        missing,
        Err(StorageError::NotFound {
            key: "/registry/configmaps/default/none".into()
        })
    );
}

/// delete with a stale precondition is a Conflict; with the right one or none it deletes and
/// reports the deleted value and the deletion's revision; a deleted key is NotFound; a key
/// created again starts a new life (new create_revision).
pub async fn delete_preconditions(b: Arc<dyn Backend>) {
    let key = "/registry/secrets/ns/s";
    let v1 = b.create(key, val("v1")).await.expect("create");
    let v2 = b
        .update(key, val("v2"), v1.mod_revision)
        .await
        .expect("update");

    let stale = b.delete(key, Some(v1.mod_revision)).await;
    assert_eq!(
        stale,
        Err(StorageError::Conflict {
            key: key.into(),
            expected: v1.mod_revision,
            current: Some(v2.clone()),
        })
    );
    let (deleted, rev) = b
        .delete(key, Some(v2.mod_revision))
        .await
        .expect("delete with precondition");
    assert_eq!(deleted, v2);
    assert!(rev > v2.mod_revision);
    assert_eq!(b.current_revision().await.expect("rev"), rev);
    assert_eq!(b.get(key, None).await.expect("get"), None);
    assert_eq!(
        b.delete(key, None).await,
        Err(StorageError::NotFound { key: key.into() })
    );
    assert_eq!(
        b.delete(key, Some(rev)).await,
        Err(StorageError::NotFound { key: key.into() })
    );

    let reborn = b.create(key, val("v3")).await.expect("create again");
    assert!(reborn.create_revision > rev);
    assert_eq!(reborn.create_revision, reborn.mod_revision);
    let (deleted, rev2) = b
        .delete(key, None)
        .await
        .expect("delete without precondition");
    assert_eq!(deleted, reborn);
    assert!(rev2 > reborn.mod_revision);
}

/// One counter orders writes to all keys.
pub async fn revisions_strictly_increase(b: Arc<dyn Backend>) {
    let mut last = b.current_revision().await.expect("rev");
    for i in 0..20 {
        let key = format!("/registry/things/k{}", i % 4);
        let rev = match b.get(&key, None).await.expect("get") {
            None => b.create(&key, val("c")).await.expect("create").mod_revision,
            Some(_) if i % 3 == 0 => b.delete(&key, None).await.expect("delete").1,
            Some(kv) => {
                b.update(&key, val("u"), kv.mod_revision)
                    .await
                    .expect("update")
                    .mod_revision
            }
        };
        assert!(rev > last, "revision {rev} after {last}");
        last = rev;
    }
    assert_eq!(b.current_revision().await.expect("rev"), last);
}

/// Concurrent creates get distinct revisions; of concurrent compare-and-swaps from the same
/// revision exactly one wins.
pub async fn concurrent_writers(b: Arc<dyn Backend>) {
    let mut tasks = Vec::new();
    for i in 0..16 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            b.create(&format!("/registry/leases/l{i:02}"), val("x"))
                .await
                .expect("create")
                .mod_revision
        }));
    }
    let mut revs = Vec::new();
    for t in tasks {
        revs.push(t.await.expect("task"));
    }
    revs.sort_unstable();
    revs.dedup();
    assert_eq!(revs.len(), 16, "every create has its own revision");

    let base = b
        .create("/registry/leases/contended", val("0"))
        .await
        .expect("create");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let b = b.clone();
        let expected = base.mod_revision;
        tasks.push(tokio::spawn(async move {
            b.update(
                "/registry/leases/contended",
                val(&format!("w{i}")),
                expected,
            )
            .await
        }));
    }
    let mut winners = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(_) => winners += 1,
            Err(StorageError::Conflict { current, .. }) => {
                assert!(current.is_some(), "a conflict reports the current value")
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert_eq!(winners, 1, "exactly one compare-and-swap wins");
}

/// get and list at a past revision see the key space as it was then, and report that revision.
pub async fn reads_at_past_revisions(b: Arc<dyn Backend>) {
    let a = "/registry/pods/ns/a";
    let c = "/registry/pods/ns/c";
    let r0 = b.current_revision().await.expect("rev");
    let a1 = b.create(a, val("a1")).await.expect("create a");
    let a2 = b
        .update(a, val("a2"), a1.mod_revision)
        .await
        .expect("update a");
    let c1 = b.create(c, val("c1")).await.expect("create c");
    let (_, r_del) = b.delete(a, None).await.expect("delete a");

    assert_eq!(
        b.get(a, Some(a1.mod_revision)).await.expect("get"),
        Some(a1.clone())
    );
    assert_eq!(
        b.get(a, Some(a2.mod_revision)).await.expect("get"),
        Some(a2.clone())
    );
    assert_eq!(
        b.get(a, Some(c1.mod_revision)).await.expect("get"),
        Some(a2.clone())
    );
    assert_eq!(b.get(a, Some(r_del)).await.expect("get"), None);
    assert_eq!(b.get(a, None).await.expect("get"), None);
    assert_eq!(b.get(c, Some(a2.mod_revision)).await.expect("get"), None);

    let at = |rev| {
        let b = b.clone();
        async move {
            b.list("/registry/pods/", None, 0, Some(rev))
                .await
                .expect("list at revision")
        }
    };
    let l = at(r0).await;
    assert!(l.kvs.is_empty());
    assert_eq!(l.revision, r0);
    let l = at(a2.mod_revision).await;
    assert_eq!(l.kvs, vec![a2.clone()]);
    assert_eq!(l.revision, a2.mod_revision);
    let l = at(c1.mod_revision).await;
    assert_eq!(l.kvs, vec![a2.clone(), c1.clone()]);
    assert!(!l.more);
    assert_eq!(l.remaining, 0);
    let l = at(r_del).await;
    assert_eq!(l.kvs, vec![c1.clone()]);
    let now = b
        .list("/registry/pods/", None, 0, None)
        .await
        .expect("list");
    assert_eq!(now.kvs, vec![c1]);
    assert_eq!(now.revision, r_del);
}

/// Pages: `limit` bounds a page, `more` and `remaining` tell what is left, and continuing at the
/// first page's revision gives a consistent snapshot while the keys change underneath.
pub async fn pagination(b: Arc<dyn Backend>) {
    let prefix = "/registry/services/specs/";
    let mut originals = Vec::new();
    for i in 0..10 {
        originals.push(
            b.create(&format!("{prefix}s{i:02}"), val(&format!("v{i}")))
                .await
                .expect("create"),
        );
    }
    // Neighbours that must never show up.
    b.create("/registry/services/endpoints/x", val("x"))
        .await
        .expect("create");
    b.create("/registry/services/specsx", val("x"))
        .await
        .expect("create");

    let all = b.list(prefix, None, 0, None).await.expect("list");
    assert_eq!(all.kvs, originals);
    assert!(!all.more);
    assert_eq!(all.remaining, 0);

    let first = b.list(prefix, None, 3, None).await.expect("page 1");
    assert_eq!(first.kvs, originals[0..3].to_vec());
    assert!(first.more);
    assert_eq!(first.remaining, 7);
    let snapshot = first.revision;

    // Change the key space between pages: the rest of the list must not see it.
    b.create(&format!("{prefix}s03a"), val("new"))
        .await
        .expect("create between pages");
    b.delete(&format!("{prefix}s05"), None)
        .await
        .expect("delete between pages");
    b.update(
        &format!("{prefix}s08"),
        val("changed"),
        originals[8].mod_revision,
    )
    .await
    .expect("update between pages");

    let mut seen = first.kvs.clone();
    let mut last = first;
    let mut pages = 1;
    while last.more {
        let start = format!(
            "{}\0",
            last.kvs.last().expect("a page with more is not empty").key
        );
        let page = b
            .list(prefix, Some(&start), 3, Some(snapshot))
            .await
            .expect("next page");
        assert_eq!(page.revision, snapshot, "pages share the snapshot");
        assert!(page.kvs.len() <= 3);
        assert_eq!(
            page.remaining,
            10 - seen.len() as i64 - page.kvs.len() as i64
        );
        assert_eq!(page.more, page.remaining > 0);
        seen.extend(page.kvs.iter().cloned());
        last = page;
        pages += 1;
    }
    assert_eq!(pages, 4);
    assert_eq!(
        seen, originals,
        "a paginated list is one consistent snapshot"
    );

    // A continue key is inclusive.
    let from = b
        .list(prefix, Some(&format!("{prefix}s04")), 2, Some(snapshot))
        .await
        .expect("list from");
    assert_eq!(
        keys(&from.kvs),
        vec![
            format!("{prefix}s04").as_str(),
            format!("{prefix}s05").as_str()
        ]
    );
    assert_eq!(from.remaining, 4);

    // The latest state has the changes.
    let now = b.list(prefix, None, 0, None).await.expect("list");
    assert_eq!(now.kvs.len(), 10);
    assert!(keys(&now.kvs).contains(&format!("{prefix}s03a").as_str()));
    assert!(!keys(&now.kvs).contains(&format!("{prefix}s05").as_str()));
}

/// A prefix covers exactly the keys starting with it: `/registry/pods/` is not `/registry/podsx`.
pub async fn prefix_isolation(b: Arc<dyn Backend>) {
    let start = b.current_revision().await.expect("rev");
    for key in [
        "/registry/pods/a",
        "/registry/podsx",
        "/registry/pods/b",
        "/registry/podsx/c",
        "/registry/pod",
    ] {
        b.create(key, val(key)).await.expect("create");
    }
    let l = b
        .list("/registry/pods/", None, 0, None)
        .await
        .expect("list");
    assert_eq!(keys(&l.kvs), vec!["/registry/pods/a", "/registry/pods/b"]);
    let l = b
        .list("/registry/podsx", None, 0, None)
        .await
        .expect("list");
    assert_eq!(keys(&l.kvs), vec!["/registry/podsx", "/registry/podsx/c"]);
    assert_eq!(b.count("/registry/pods/").await.expect("count"), 2);
    // A continue key outside the prefix does not widen the range.
    let l = b
        .list("/registry/pods/", Some("/registry/a"), 0, None)
        .await
        .expect("list");
    assert_eq!(keys(&l.kvs), vec!["/registry/pods/a", "/registry/pods/b"]);

    let mut w = b.watch("/registry/pods/", start).await.expect("watch");
    assert_eq!(next_event(&mut w).await.key(), "/registry/pods/a");
    assert_eq!(next_event(&mut w).await.key(), "/registry/pods/b");
    b.create("/registry/podsy", val("y")).await.expect("create");
    b.create("/registry/pods/z", val("z"))
        .await
        .expect("create");
    assert_eq!(next_event(&mut w).await.key(), "/registry/pods/z");
}

/// count counts the live keys under a prefix.
pub async fn count(b: Arc<dyn Backend>) {
    assert_eq!(b.count("/registry/nodes/").await.expect("count"), 0);
    for i in 0..5 {
        b.create(&format!("/registry/nodes/n{i}"), val("n"))
            .await
            .expect("create");
    }
    b.create("/registry/nodesx", val("n"))
        .await
        .expect("create");
    assert_eq!(b.count("/registry/nodes/").await.expect("count"), 5);
    b.delete("/registry/nodes/n2", None).await.expect("delete");
    assert_eq!(b.count("/registry/nodes/").await.expect("count"), 4);
    assert_eq!(b.count("/registry/").await.expect("count"), 5);
}

/// A watch from a past revision replays every later change (with the values they replaced) in
/// order, then delivers live ones, with nothing lost or repeated in between.
pub async fn watch_from_past_then_live(b: Arc<dyn Backend>) {
    let p = "/registry/deployments/";
    let start = b.current_revision().await.expect("rev");
    let a1 = b.create(&format!("{p}a"), val("a1")).await.expect("create");
    let a2 = b
        .update(&format!("{p}a"), val("a2"), a1.mod_revision)
        .await
        .expect("update");
    b.create("/registry/other/x", val("x"))
        .await
        .expect("create");
    let (_, del) = b.delete(&format!("{p}a"), None).await.expect("delete");
    let c1 = b.create(&format!("{p}c"), val("c1")).await.expect("create");

    let mut w = b.watch(p, start).await.expect("watch");
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(describe(&next_event(&mut w).await));
    }
    let key_a = format!("{p}a");
    let key_c = format!("{p}c");
    assert_eq!(
        got,
        vec![
            ("put", key_a.clone(), "a1".into(), None, a1.mod_revision),
            (
                "put",
                key_a.clone(),
                "a2".into(),
                Some("a1".into()),
                a2.mod_revision
            ),
            (
                "delete",
                key_a.clone(),
                String::new(),
                Some("a2".into()),
                del
            ),
            ("put", key_c.clone(), "c1".into(), None, c1.mod_revision),
        ]
    );

    // Live, with writes racing the replay of a second watcher.
    let mut w2 = b
        .watch(p, a2.mod_revision)
        .await
        .expect("watch from middle");
    let c2 = b
        .update(&key_c, val("c2"), c1.mod_revision)
        .await
        .expect("update");
    let (_, del_c) = b.delete(&key_c, None).await.expect("delete");
    let e = describe(&next_event(&mut w).await);
    assert_eq!(
        e,
        (
            "put",
            key_c.clone(),
            "c2".into(),
            Some("c1".into()),
            c2.mod_revision
        )
    );
    let e = describe(&next_event(&mut w).await);
    assert_eq!(
        e,
        (
            "delete",
            key_c.clone(),
            String::new(),
            Some("c2".into()),
            del_c
        )
    );

    let mut revs = Vec::new();
    for _ in 0..4 {
        revs.push(next_event(&mut w2).await.revision());
    }
    assert_eq!(revs, vec![del, c1.mod_revision, c2.mod_revision, del_c]);
}

/// A watch from the current revision sees only later changes; several writes in a row arrive in
/// order, and a sentinel write proves nothing extra came in between.
pub async fn watch_from_now(b: Arc<dyn Backend>) {
    let p = "/registry/jobs/";
    b.create(&format!("{p}old"), val("old"))
        .await
        .expect("create");
    let now = b.current_revision().await.expect("rev");
    let mut w = b.watch(p, now).await.expect("watch");
    let mut expected = Vec::new();
    for i in 0..50 {
        expected.push(
            b.create(&format!("{p}j{i:02}"), val("j"))
                .await
                .expect("create")
                .mod_revision,
        );
    }
    let sentinel = b
        .create(&format!("{p}zz"), val("end"))
        .await
        .expect("create");
    expected.push(sentinel.mod_revision);
    let mut got = Vec::new();
    for _ in 0..expected.len() {
        got.push(next_event(&mut w).await.revision());
    }
    assert_eq!(got, expected);
}

/// compact forgets history before a revision: reads there are Compacted, reads at and after it
/// and current values are intact, and the compacted revision is reported.
pub async fn compaction(b: Arc<dyn Backend>) {
    let p = "/registry/events/";
    let a1 = b.create(&format!("{p}a"), val("a1")).await.expect("create");
    let a2 = b
        .update(&format!("{p}a"), val("a2"), a1.mod_revision)
        .await
        .expect("update");
    let gone = b
        .create(&format!("{p}gone"), val("g"))
        .await
        .expect("create");
    let (_, gone_del) = b.delete(&format!("{p}gone"), None).await.expect("delete");
    let c1 = b.create(&format!("{p}c"), val("c1")).await.expect("create");
    let mid = c1.mod_revision;
    let c2 = b
        .update(&format!("{p}c"), val("c2"), c1.mod_revision)
        .await
        .expect("update");

    b.compact(mid).await.expect("compact");
    assert_eq!(b.compacted_revision().await.expect("compacted"), mid);

    let before = b.get(&format!("{p}a"), Some(a1.mod_revision)).await;
    assert!(
        matches!(before, Err(StorageError::Compacted { compacted, .. }) if compacted == mid),
        "get below the compacted revision: {before:?}"
    );
    let before = b.list(p, None, 0, Some(gone_del)).await;
    assert!(
        matches!(before, Err(StorageError::Compacted { .. })),
        "list below the compacted revision: {before:?}"
    );

    // At the compacted revision the key space is intact.
    let at = b
        .list(p, None, 0, Some(mid))
        .await
        .expect("list at compacted revision");
    assert_eq!(at.kvs, vec![a2.clone(), c1.clone()]);
    assert_eq!(
        b.get(&format!("{p}a"), Some(mid)).await.expect("get"),
        Some(a2.clone())
    );
    assert_eq!(
        b.get(&format!("{p}gone"), Some(mid)).await.expect("get"),
        None
    );
    assert_eq!(gone.key, format!("{p}gone"));
    let now = b.list(p, None, 0, None).await.expect("list");
    assert_eq!(now.kvs, vec![a2, c2]);

    // Compacting again at or below the compacted revision is refused.
    let again = b.compact(mid).await;
    assert!(
        matches!(again, Err(StorageError::Compacted { .. })),
        "compact at the compacted revision: {again:?}"
    );
    // Writes go on after compaction.
    let d = b.create(&format!("{p}d"), val("d")).await.expect("create");
    assert!(d.mod_revision > c1.mod_revision);
}

/// After compaction a watch from before the compacted revision fails with Compacted; from the
/// compacted revision on it replays what is kept.
pub async fn watch_after_compaction(b: Arc<dyn Backend>) {
    let p = "/registry/replicasets/";
    let r1 = b.create(&format!("{p}a"), val("a")).await.expect("create");
    let r2 = b.create(&format!("{p}b"), val("b")).await.expect("create");
    let r3 = b.create(&format!("{p}c"), val("c")).await.expect("create");
    let r4 = b
        .update(&format!("{p}c"), val("c2"), r3.mod_revision)
        .await
        .expect("update");
    b.compact(r3.mod_revision).await.expect("compact");

    let old = b.watch(p, r1.mod_revision).await;
    let old: Result<(), StorageError> = match old {
        Err(e) => Err(e),
        // A backend may report the compaction as the stream's first item instead.
        Ok(mut s) => match tokio::time::timeout(WATCH_PATIENCE, s.next()).await {
            Ok(Some(Err(e))) => Err(e),
            other => panic!("watch from a compacted revision delivered {other:?}"),
        },
    };
    assert!(
        matches!(old, Err(StorageError::Compacted { compacted, .. }) if compacted == r3.mod_revision),
        "watch from before the compacted revision: {old:?}"
    );
    assert_eq!(r2.key, format!("{p}b"));

    // From the revision just before the compacted one: the event at the compacted revision on.
    let mut w = b.watch(p, r2.mod_revision).await.expect("watch");
    let e = describe(&next_event(&mut w).await);
    assert_eq!(
        e,
        ("put", format!("{p}c"), "c".into(), None, r3.mod_revision)
    );
    let e = describe(&next_event(&mut w).await);
    assert_eq!(
        e,
        (
            "put",
            format!("{p}c"),
            "c2".into(),
            Some("c".into()),
            r4.mod_revision
        )
    );
    let r5 = b.create(&format!("{p}e"), val("e")).await.expect("create");
    assert_eq!(next_event(&mut w).await.revision(), r5.mod_revision);
}

/// Reads at, and compaction to, a revision the store has not reached are FutureRevision.
pub async fn future_revision(b: Arc<dyn Backend>) {
    let kv = b.create("/registry/ns/a", val("a")).await.expect("create");
    let future = kv.mod_revision + 10;
    let expected = StorageError::FutureRevision {
        requested: future,
        current: kv.mod_revision,
    };
    assert_eq!(
        b.get("/registry/ns/a", Some(future)).await,
        Err(expected.clone())
    );
    assert_eq!(
        b.list("/registry/ns/", None, 0, Some(future)).await,
        Err(expected.clone())
    );
    assert_eq!(b.compact(future).await, Err(expected));
    // The current revision itself is fine.
    assert_eq!(
        b.get("/registry/ns/a", Some(kv.mod_revision))
            .await
            .expect("get"),
        Some(kv)
    );
}
