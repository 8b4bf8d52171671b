//! Host mounts the volume manager makes: tmpfs for Memory-backed volumes, found again through
//! `/proc/self/mountinfo` so that teardown unmounts them before deleting the directories.

use anyhow::Context as _;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::path::{Path, PathBuf};

/// Mount points of this mount namespace (fifth field of mountinfo, octal escapes decoded).
pub fn mount_points() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .collect()
}

fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn is_mount_point(path: &Path) -> bool {
    mount_points().iter().any(|m| m == path)
}

/// Mounts a tmpfs on `dir` unless one is already there; `size` in bytes.
pub fn ensure_tmpfs(dir: &Path, size: Option<u64>) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    // A mount on `dir` gives it another device than its parent: cheaper than mountinfo on
    // every sync, with mountinfo as the answer when the parent cannot be read.
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    let mounted = match (dev(dir), dir.parent().and_then(dev)) {
        (Some(a), Some(b)) => a != b,
        _ => is_mount_point(dir),
    };
    if mounted {
        return Ok(());
    }
    let opts = size.map(|s| format!("size={s}"));
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        opts.as_deref(),
    )
    .with_context(|| format!("mounting tmpfs on {}", dir.display()))
}

/// Unmounts every mount at or under `root`, deepest first.
pub fn unmount_all_under(root: &Path) -> anyhow::Result<()> {
    let mut points: Vec<PathBuf> = mount_points()
        .into_iter()
        .filter(|m| m.starts_with(root))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    points.dedup();
    for point in points {
        umount2(&point, MntFlags::MNT_DETACH)
            .with_context(|| format!("unmounting {}", point.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/tab\\011x\\134"), "/tab\tx\\");
        assert!(mount_points().iter().any(|m| m == Path::new("/")));
    }
}
