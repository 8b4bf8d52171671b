//! The static pod source: every file of a directory (or one file), re-read when anything in it
//! changes. Changes are noticed by comparing names, sizes, mtimes and inodes every second
//! (inotify would need a new crate or unsafe code; a stat per file per second is cheap), and the
//! whole set is re-read every `fileCheckFrequency` regardless.

use super::common::{StaticSource, decode_single_pod};
use super::{SOURCE_FILE, SourceSender};
use k8s_openapi::api::core::v1::Pod;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often the directory is checked for changes between full re-reads.
const CHANGE_CHECK: Duration = Duration::from_secs(1);

/// What identifies the directory's state: any change here triggers a re-read.
type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64, u64)>;

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// The manifest files of `path`: the file itself, or the regular, non-hidden files of the
/// directory, sorted by name (symlinks to files count, as upstream's stat follows them).
fn manifest_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        if is_hidden(&p) {
            continue;
        }
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => files.push(p),
            Ok(m) if m.is_dir() => {
                tracing::debug!(path = %p.display(), "not recursing into a manifest directory")
            }
            Ok(_) => {
                tracing::warn!(path = %p.display(), "manifest path holds a file that is not a regular file")
            }
            Err(_) => {}
        }
    }
    files.sort();
    Ok(files)
}

fn fingerprint(path: &Path) -> Fingerprint {
    use std::os::unix::fs::MetadataExt;
    let mut fp = Vec::new();
    if let Ok(m) = std::fs::metadata(path) {
        fp.push((path.to_path_buf(), m.modified().ok(), m.size(), m.ino()));
    }
    for f in manifest_files(path).unwrap_or_default() {
        if let Ok(m) = std::fs::metadata(&f) {
            fp.push((f, m.modified().ok(), m.size(), m.ino()));
        }
    }
    fp
}

/// Reads every manifest; a file that does not parse is logged and left out (its pod, if it ran,
/// is stopped), as upstream. A missing path is an empty set.
pub fn read_pods(path: &Path, node: &str) -> Vec<Pod> {
    let files = match manifest_files(path) {
        Ok(f) => f,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), error = %e, "unable to read the static pod path");
            }
            return Vec::new();
        }
    };
    let mut pods = Vec::new();
    for f in files {
        let data = match std::fs::read(&f) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(path = %f.display(), error = %e, "could not read manifest file");
                continue;
            }
        };
        let source = f.to_string_lossy();
        match decode_single_pod(&data, StaticSource::File(&source), node) {
            Ok(p) => pods.push(p),
            Err(e) => {
                tracing::warn!(path = %f.display(), error = format!("{e:#}"), "could not process manifest file")
            }
        }
    }
    pods
}

/// Runs the file source until shutdown.
pub async fn run(
    path: PathBuf,
    node: String,
    period: Duration,
    tx: SourceSender,
    shutdown: CancellationToken,
) {
    let mut last_fp: Option<Fingerprint> = None;
    let mut last_read = Instant::now();
    loop {
        let (p, n) = (path.clone(), node.clone());
        let fp_path = path.clone();
        let fp = tokio::task::spawn_blocking(move || fingerprint(&fp_path))
            .await
            .unwrap_or_default();
        let due = last_fp.as_ref() != Some(&fp) || last_read.elapsed() >= period;
        if due {
            let pods = tokio::task::spawn_blocking(move || read_pods(&p, &n))
                .await
                .unwrap_or_default();
            last_fp = Some(fp);
            last_read = Instant::now();
            if tx.send((SOURCE_FILE, pods)).await.is_err() {
                return;
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(CHANGE_CHECK.min(period)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: NAME\nspec:\n  containers:\n  - name: c\n    image: busybox\n";

    fn names(pods: &[Pod]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn reads_regular_visible_files_and_skips_bad_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("b.yaml"), POD.replace("NAME", "b")).unwrap();
        std::fs::write(dir.path().join("a.json"), r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#).unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), POD.replace("NAME", "h")).unwrap();
        std::fs::write(dir.path().join("broken.yaml"), "kind: [").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.yaml"), POD.replace("NAME", "x")).unwrap();
        assert_eq!(names(&read_pods(dir.path(), "n1")), ["a-n1", "b-n1"]);
        // A single file works as the path too; a missing path is an empty set.
        assert_eq!(
            names(&read_pods(&dir.path().join("b.yaml"), "n1")),
            ["b-n1"]
        );
        assert!(read_pods(&dir.path().join("nope"), "n1").is_empty());
    }

    #[test]
    fn fingerprint_changes_on_edit_add_and_remove() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, POD.replace("NAME", "a")).unwrap();
        let fp0 = fingerprint(dir.path());
        assert_eq!(fp0, fingerprint(dir.path()));
        // An in-place edit changes the size (and the mtime), not the directory.
        std::fs::write(&f, POD.replace("NAME", "bbb")).unwrap();
        let fp1 = fingerprint(dir.path());
        assert_ne!(fp0, fp1);
        std::fs::write(dir.path().join("c.yaml"), POD.replace("NAME", "c")).unwrap();
        let fp2 = fingerprint(dir.path());
        assert_ne!(fp1, fp2);
        std::fs::remove_file(&f).unwrap();
        assert_ne!(fp2, fingerprint(dir.path()));
    }

    #[tokio::test]
    async fn changes_are_sent_within_seconds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(
            dir.path().to_path_buf(),
            "n1".into(),
            Duration::from_secs(600),
            tx,
            stop.clone(),
        ));
        let (src, pods) = rx.recv().await.expect("first set");
        assert_eq!((src, pods.len()), (SOURCE_FILE, 0));
        std::fs::write(dir.path().join("a.yaml"), POD.replace("NAME", "a")).unwrap();
        let (_, pods) = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a change within seconds")
            .expect("set");
        assert_eq!(names(&pods), ["a-n1"]);
        stop.cancel();
        task.await.expect("source stops");
    }
}
