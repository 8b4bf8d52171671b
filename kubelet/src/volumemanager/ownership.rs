//! Upstream's `SetVolumeOwnership`: with a pod `fsGroup`, everything in a volume belongs to
//! that group and is group-readable (and group-writable unless the volume is read-only);
//! directories get setgid so new files inherit the group.

use anyhow::Context as _;
use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _, lchown};
use std::path::Path;

const RW_MASK: u32 = 0o660;
const RO_MASK: u32 = 0o440;
const EXEC_MASK: u32 = 0o110;
const SETGID: u32 = 0o2000;

/// Applies `fs_group` to `dir` and everything below it, without following symlinks.
pub fn set_volume_ownership(dir: &Path, fs_group: u32, read_only: bool) -> anyhow::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta =
            fs::symlink_metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if meta.gid() != fs_group {
            lchown(&path, None, Some(fs_group))
                .with_context(|| format!("chown {}", path.display()))?;
        }
        if meta.file_type().is_symlink() {
            continue;
        }
        let mut mask = if read_only { RO_MASK } else { RW_MASK };
        if meta.is_dir() {
            mask |= SETGID | EXEC_MASK;
            for entry in fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode | mask != mode {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode | mask))
                .with_context(|| format!("chmod {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("vol");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(d.join("sub/f"), "x").unwrap();
        fs::set_permissions(d.join("sub/f"), fs::Permissions::from_mode(0o400)).unwrap();
        std::os::unix::fs::symlink("sub/f", d.join("link")).unwrap();
        let cases = [(true, 0o440, 0o2755), (false, 0o660, 0o2775)];
        for (read_only, file_mode, dir_mode) in cases {
            fs::set_permissions(d.join("sub/f"), fs::Permissions::from_mode(0o400)).unwrap();
            set_volume_ownership(&d, 1234, read_only).unwrap();
            let f = fs::metadata(d.join("sub/f")).unwrap();
            assert_eq!(f.gid(), 1234);
            assert_eq!(
                f.permissions().mode() & 0o7777,
                file_mode,
                "read_only {read_only}"
            );
            let sub = fs::metadata(d.join("sub")).unwrap();
            assert_eq!(
                sub.permissions().mode() & 0o7777,
                dir_mode,
                "read_only {read_only}"
            );
            assert_eq!(fs::symlink_metadata(d.join("link")).unwrap().gid(), 1234);
        }
    }
}
