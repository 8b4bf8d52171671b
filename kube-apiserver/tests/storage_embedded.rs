//! The embedded (redb) backend: the conformance suite, plus what only it has to prove itself:
//! durability across kill -9, persistence across reopen, and how watches meet writers.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use kube_apiserver::storage::backend::{Backend, StorageError};
use kube_apiserver::storage::conformance::{self, next_event};
use kube_apiserver::storage::embedded::EmbeddedBackend;

fn fresh() -> (Arc<dyn Backend>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = EmbeddedBackend::open(dir.path()).expect("open embedded store");
    (Arc::new(backend), dir)
}

macro_rules! conformance_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (backend, _dir) = fresh();
                conformance::$name(backend).await;
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

/// Revisions, values, history and the compacted revision survive closing and reopening.
#[tokio::test]
async fn reopen_keeps_everything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a1, a2, compacted_at) = {
        let b = EmbeddedBackend::open(dir.path()).expect("open");
        let a1 = b
            .create("/registry/a", Bytes::from("1"))
            .await
            .expect("create");
        let a2 = b
            .update("/registry/a", Bytes::from("2"), a1.mod_revision)
            .await
            .expect("update");
        let b1 = b
            .create("/registry/b", Bytes::from("b"))
            .await
            .expect("create");
        b.compact(a2.mod_revision).await.expect("compact");
        b.delete("/registry/b", None).await.expect("delete");
        assert!(b1.mod_revision > a2.mod_revision);
        (a1, a2, b.compacted_revision().await.expect("compacted"))
    };
    let b = EmbeddedBackend::open(dir.path()).expect("reopen");
    let rev = b.current_revision().await.expect("rev");
    assert_eq!(rev, a2.mod_revision + 2, "create b and delete b after a2");
    assert_eq!(
        b.compacted_revision().await.expect("compacted"),
        compacted_at
    );
    assert_eq!(
        b.get("/registry/a", None).await.expect("get"),
        Some(a2.clone())
    );
    assert!(matches!(
        b.get("/registry/a", Some(a1.mod_revision)).await,
        Err(StorageError::Compacted { .. })
    ));
    assert_eq!(b.get("/registry/b", None).await.expect("get"), None);
    let mut w = b.watch("/registry/", a2.mod_revision).await.expect("watch");
    assert_eq!(next_event(&mut w).await.key(), "/registry/b");
    assert_eq!(next_event(&mut w).await.revision(), rev);
    let next = b
        .create("/registry/c", Bytes::from("c"))
        .await
        .expect("create");
    assert_eq!(next.mod_revision, rev + 1);
}

/// A watcher that stops reading is cut off with an error instead of holding writers back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_ended_not_waited_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let b = EmbeddedBackend::open_with_watch_buffer(dir.path(), 8).expect("open");
    let now = b.current_revision().await.expect("rev");
    let mut slow = b.watch("/registry/", now).await.expect("watch");
    // Many more writes than the buffer holds complete while nobody reads the watch.
    for i in 0..100 {
        b.create(&format!("/registry/k{i:03}"), Bytes::from("v"))
            .await
            .expect("writer is not blocked by a slow watcher");
    }
    match slow.next().await {
        Some(Err(StorageError::Unavailable(msg))) => assert!(msg.contains("too slow"), "{msg}"),
        other => panic!("expected the slow watcher to be ended, got {other:?}"),
    }
    assert!(
        slow.next().await.is_none(),
        "the stream ends after the error"
    );
    // A new watch from where the slow one got to catches up from history.
    let mut again = b.watch("/registry/", now).await.expect("re-watch");
    for i in 0..100 {
        assert_eq!(
            next_event(&mut again).await.key(),
            format!("/registry/k{i:03}")
        );
    }
}

/// Watches started while a writer runs see every revision exactly once, in order, wherever the
/// switch from replay to live events falls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_started_during_writes_have_no_gaps_or_duplicates() {
    let (b, _dir) = fresh();
    let start = b.current_revision().await.expect("rev");
    const WRITES: i64 = 300;
    let writer = {
        let b = b.clone();
        tokio::spawn(async move {
            for i in 0..WRITES {
                b.create(&format!("/registry/w/{i:04}"), Bytes::from("v"))
                    .await
                    .expect("create");
            }
        })
    };
    // Keep starting watches for as long as the writer runs, so some of them subscribe while a
    // commit is between the subscription and the snapshot read.
    let mut watches = Vec::new();
    while !writer.is_finished() {
        watches.push(b.watch("/registry/w/", start).await.expect("watch"));
    }
    writer.await.expect("writer");
    assert!(watches.len() > 1, "watches overlapped the writes");
    for mut w in watches {
        for expected in start + 1..=start + WRITES {
            assert_eq!(next_event(&mut w).await.revision(), expected);
        }
    }
}

/// Concurrent writes share commits (group commit), but each keeps its own outcome: writes that
/// fail their own checks (an existing key, a lost compare-and-swap) fail alone, the others get
/// distinct revisions, and watchers see exactly the successful ones, in revision order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_committed_together_keep_their_own_outcomes() {
    let (b, _dir) = fresh();
    let start = b.current_revision().await.expect("rev");
    let base = b
        .create("/registry/cas", Bytes::from("0"))
        .await
        .expect("create")
        .mod_revision;
    let mut tasks = Vec::new();
    for i in 0..96 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            match i % 3 {
                0 => {
                    b.create(&format!("/registry/own/{i:03}"), Bytes::from("v"))
                        .await
                }
                1 => b.create("/registry/dup", Bytes::from("v")).await,
                _ => {
                    b.update("/registry/cas", Bytes::from(i.to_string()), base)
                        .await
                }
            }
        }));
    }
    let mut revisions = Vec::new();
    let (mut own, mut dup, mut cas) = (0, 0, 0);
    for task in tasks {
        match task.await.expect("task") {
            Ok(kv) => {
                revisions.push(kv.mod_revision);
                match kv.key.as_str() {
                    "/registry/dup" => dup += 1,
                    "/registry/cas" => cas += 1,
                    _ => own += 1,
                }
            }
            Err(StorageError::AlreadyExists { key }) => assert_eq!(key, "/registry/dup"),
            Err(StorageError::Conflict { key, .. }) => assert_eq!(key, "/registry/cas"),
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!((own, dup, cas), (32, 1, 1));
    revisions.sort_unstable();
    let expected: Vec<i64> = (base + 1..=base + 34).collect();
    assert_eq!(
        revisions, expected,
        "one revision per successful write, no gaps"
    );
    let mut watch = b.watch("/registry/", start).await.expect("watch");
    for revision in std::iter::once(base).chain(expected) {
        assert_eq!(next_event(&mut watch).await.revision(), revision);
    }
}

/// Set by the durability test for the child process it starts (this same test binary).
const CRASH_DIR_ENV: &str = "KUBE_APISERVER_CRASH_WRITER_DIR";

/// Not a test on its own: the child of `acknowledged_writes_survive_kill_9`. Writes in a loop
/// and prints `ack <key> <revision>` after each acknowledged write, until killed.
#[tokio::test]
#[ignore = "child process of acknowledged_writes_survive_kill_9"]
async fn crash_writer_child() {
    let Ok(dir) = std::env::var(CRASH_DIR_ENV) else {
        panic!("{CRASH_DIR_ENV} is not set: this runs only as a child of the durability test");
    };
    let b = EmbeddedBackend::open(Path::new(&dir)).expect("open");
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let key = format!("/registry/crash/{i:08}");
        let kv = b
            .create(&key, Bytes::from(format!("value-{i}")))
            .await
            .expect("create");
        writeln!(out, "ack {key} {}", kv.mod_revision).expect("stdout");
        out.flush().expect("stdout");
    }
}

/// Kills the child whatever happens to the test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every write the store acknowledged before a kill -9 is there after reopening, and the
/// revision did not go backwards.
#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("test binary");
    let child = Command::new(exe)
        .args(["--exact", "crash_writer_child", "--ignored", "--nocapture"])
        .env(CRASH_DIR_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start child");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();

    let mut acked: Vec<(String, i64)> = Vec::new();
    let parse = |line: &str| -> Option<(String, i64)> {
        let mut parts = line.strip_prefix("ack ")?.split(' ');
        Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
    };
    // Kill it mid-stream, while it is writing.
    while acked.len() < 200 {
        let line = lines
            .next()
            .expect("child ended before writing enough")
            .expect("read child stdout");
        if let Some(ack) = parse(&line) {
            acked.push(ack);
        }
    }
    child.0.kill().expect("kill -9 the child");
    child.0.wait().expect("reap the child");
    // Lines already in the pipe were printed after their write was acknowledged: they count.
    for line in lines {
        let Ok(line) = line else { break };
        if let Some(ack) = parse(&line) {
            acked.push(ack);
        }
    }

    let b = EmbeddedBackend::open(dir.path()).expect("reopen after kill -9");
    let max_acked = acked.iter().map(|(_, r)| *r).max().expect("some acks");
    let rev = b.current_revision().await.expect("rev");
    assert!(
        rev >= max_acked,
        "revision went backwards: {rev} < {max_acked}"
    );
    for (key, mod_revision) in &acked {
        let kv = b
            .get(key, None)
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("acknowledged write of {key} lost"));
        assert_eq!(kv.mod_revision, *mod_revision, "{key}");
    }
    let next = b
        .create("/registry/crash/after", Bytes::from("x"))
        .await
        .expect("write after reopen");
    assert!(next.mod_revision > rev);
}
