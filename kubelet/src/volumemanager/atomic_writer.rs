//! Upstream's atomic writer: a volume's files live in a timestamped directory `..<ts>`; the
//! `..data` symlink points at the current one and is swapped with a rename, and every
//! user-visible entry is a symlink through `..data`. A reader therefore sees either all old
//! or all new contents, never a half-written file.

use anyhow::{Context as _, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};

const DATA_DIR: &str = "..data";
const DATA_DIR_TMP: &str = "..data_tmp";

/// One file of a volume's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProjection {
    pub data: Vec<u8>,
    /// Permission bits (e.g. 0o644).
    pub mode: u32,
}

/// Relative path -> file.
pub type Payload = BTreeMap<String, FileProjection>;

/// Upstream's payload path checks: relative, no `..` element, not starting with `..`, and
/// within the name length limits. Returns the cleaned path.
pub fn validate_path(path: &str) -> anyhow::Result<String> {
    if path.is_empty() {
        bail!("invalid path: must not be empty: {path:?}");
    }
    if path.len() > 4096 {
        bail!("invalid path: must be less than or equal to 4096 characters");
    }
    if path.starts_with('/') {
        bail!("invalid path: must be relative path: {path}");
    }
    if path.starts_with("..") {
        bail!("invalid path: must not start with '..': {path}");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => bail!("invalid path: must not contain '..': {path}"),
            p if p.len() > 255 => bail!("invalid path: segment longer than 255 characters"),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        bail!("invalid path: must not be empty: {path:?}");
    }
    Ok(parts.join("/"))
}

fn top_level(path: &str) -> &str {
    path.split('/').next().unwrap_or(path)
}

/// Every regular file under `dir`, as relative paths with their contents and modes.
fn read_tree(dir: &Path) -> anyhow::Result<Payload> {
    let mut out = Payload::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        for entry in fs::read_dir(&abs).with_context(|| format!("reading {}", abs.display()))? {
            let entry = entry?;
            let rel_child = rel.join(entry.file_name());
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(rel_child);
            } else {
                let data = fs::read(entry.path())?;
                out.insert(
                    rel_child.to_string_lossy().into_owned(),
                    FileProjection {
                        data,
                        mode: meta.permissions().mode() & 0o7777,
                    },
                );
            }
        }
    }
    Ok(out)
}

/// The name of the directory `..data` points at, if any.
pub fn current_data_dir(target: &Path) -> Option<String> {
    let link = fs::read_link(target.join(DATA_DIR)).ok()?;
    Some(link.to_string_lossy().into_owned())
}

fn new_ts_dir_name() -> String {
    let ts = jiff::Timestamp::now().strftime("%Y_%m_%d_%H_%M_%S");
    format!("..{ts}.{}", rand::random::<u32>())
}

/// Writes `payload` into `target` atomically; returns whether anything changed. Files of an
/// earlier payload that are not in this one disappear with the swap.
pub fn write_atomic(target: &Path, payload: &Payload) -> anyhow::Result<bool> {
    let mut clean = Payload::new();
    for (path, file) in payload {
        clean.insert(validate_path(path)?, file.clone());
    }
    fs::create_dir_all(target).with_context(|| format!("creating {}", target.display()))?;
    let old_dir = current_data_dir(target).filter(|d| target.join(d).is_dir());
    let old = match &old_dir {
        Some(d) => read_tree(&target.join(d))?,
        None => Payload::new(),
    };
    let old_visible: BTreeSet<&str> = old.keys().map(|p| top_level(p)).collect();
    let new_visible: BTreeSet<&str> = clean.keys().map(|p| top_level(p)).collect();

    let changed = old_dir.is_none() || old != clean;
    if changed {
        let ts_name = new_ts_dir_name();
        let ts_dir = target.join(&ts_name);
        fs::create_dir(&ts_dir).with_context(|| format!("creating {}", ts_dir.display()))?;
        fs::set_permissions(&ts_dir, fs::Permissions::from_mode(0o755))?;
        for (path, file) in &clean {
            let abs = ts_dir.join(path);
            if let Some(parent) = abs.parent().filter(|p| *p != ts_dir) {
                fs::create_dir_all(parent)?;
                fs::set_permissions(parent, fs::Permissions::from_mode(0o755))?;
            }
            fs::write(&abs, &file.data).with_context(|| format!("writing {}", abs.display()))?;
            fs::set_permissions(&abs, fs::Permissions::from_mode(file.mode))?;
        }
        let tmp_link = target.join(DATA_DIR_TMP);
        let _ = fs::remove_file(&tmp_link);
        symlink(&ts_name, &tmp_link).with_context(|| format!("linking {}", tmp_link.display()))?;
        fs::rename(&tmp_link, target.join(DATA_DIR))
            .with_context(|| format!("swapping {}/{DATA_DIR}", target.display()))?;
    }
    for name in &new_visible {
        let visible = target.join(name);
        if fs::symlink_metadata(&visible).is_err() {
            symlink(Path::new(DATA_DIR).join(name), &visible)
                .with_context(|| format!("linking {}", visible.display()))?;
        }
    }
    for name in old_visible.difference(&new_visible) {
        let visible = target.join(name);
        if fs::symlink_metadata(&visible).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::remove_file(&visible)?;
        }
    }
    if changed && let Some(old_dir) = old_dir {
        fs::remove_dir_all(target.join(&old_dir))
            .with_context(|| format!("removing {}/{old_dir}", target.display()))?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(data: &str, mode: u32) -> FileProjection {
        FileProjection {
            data: data.as_bytes().to_vec(),
            mode,
        }
    }

    fn payload(entries: &[(&str, &str, u32)]) -> Payload {
        entries
            .iter()
            .map(|(p, d, m)| (p.to_string(), file(d, *m)))
            .collect()
    }

    fn visible(target: &Path) -> BTreeSet<String> {
        fs::read_dir(target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(".."))
            .collect()
    }

    #[test]
    fn path_validation() {
        let cases = [
            ("a", Ok("a")),
            ("a/b/c", Ok("a/b/c")),
            ("./a//b", Ok("a/b")),
            ("", Err(())),
            ("/abs", Err(())),
            ("..a", Err(())),
            ("a/../b", Err(())),
            ("a/..", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(
                validate_path(input).map_err(|_| ()),
                want.map(String::from),
                "{input}"
            );
        }
    }

    #[test]
    fn updates_swap_contents_and_drop_old_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("vol");
        let steps: Vec<(Payload, bool)> = vec![
            (payload(&[("a", "1", 0o644), ("sub/b", "2", 0o600)]), true),
            (payload(&[("a", "1", 0o644), ("sub/b", "2", 0o600)]), false),
            (payload(&[("a", "1", 0o400), ("sub/b", "2", 0o600)]), true),
            (payload(&[("a", "one", 0o644), ("c", "3", 0o644)]), true),
            (payload(&[]), true),
            (payload(&[("d", "4", 0o755)]), true),
        ];
        let mut previous_dir: Option<String> = None;
        for (i, (p, want_changed)) in steps.into_iter().enumerate() {
            let changed = write_atomic(&target, &p).unwrap();
            assert_eq!(changed, want_changed, "step {i}");
            let want_visible: BTreeSet<String> =
                p.keys().map(|k| top_level(k).to_string()).collect();
            assert_eq!(visible(&target), want_visible, "step {i}");
            for (path, f) in &p {
                let user_path = target.join(path);
                assert_eq!(fs::read(&user_path).unwrap(), f.data, "step {i} {path}");
                let mode = fs::metadata(&user_path).unwrap().permissions().mode() & 0o7777;
                assert_eq!(mode, f.mode, "step {i} {path}");
                let top = target.join(top_level(path));
                assert!(fs::symlink_metadata(&top).unwrap().file_type().is_symlink());
            }
            let current = current_data_dir(&target).unwrap();
            let ts_dirs: Vec<String> = fs::read_dir(&target)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("..") && n != DATA_DIR)
                .collect();
            assert_eq!(
                ts_dirs,
                vec![current.clone()],
                "step {i}: only the current dir"
            );
            if let Some(prev) = &previous_dir
                && want_changed
            {
                assert_ne!(prev, &current, "step {i}: a change writes a new dir");
                assert!(!target.join(prev).exists(), "step {i}: old dir removed");
            }
            previous_dir = Some(current);
        }
    }

    #[test]
    fn a_reader_holding_the_old_path_never_sees_mixed_contents() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("vol");
        write_atomic(
            &target,
            &payload(&[("a", "old-a", 0o644), ("b", "old-b", 0o644)]),
        )
        .unwrap();
        // Resolve ..data once, as a process that opened the directory would.
        let snapshot = target.join(current_data_dir(&target).unwrap());
        let before = fs::read_to_string(snapshot.join("a")).unwrap();
        write_atomic(
            &target,
            &payload(&[("a", "new-a", 0o644), ("b", "new-b", 0o644)]),
        )
        .unwrap();
        assert_eq!(before, "old-a");
        assert_eq!(fs::read_to_string(target.join("a")).unwrap(), "new-a");
        assert_eq!(fs::read_to_string(target.join("b")).unwrap(), "new-b");
    }

    #[test]
    fn bad_paths_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("vol");
        assert!(write_atomic(&target, &payload(&[("../escape", "x", 0o644)])).is_err());
        assert!(!dir.path().join("escape").exists());
    }
}
