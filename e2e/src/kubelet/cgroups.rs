//! The cgroups a test kubelet made under its `cgroupRoot`, removed after it.

use std::path::{Path, PathBuf};

/// rmdir of `root` in every cgroup v1 hierarchy, deepest directories first (a cgroup is
/// removed with rmdir, which fails while a process is in it).
pub fn remove_cgroup_tree(root: &str) {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let relative = root.trim_start_matches('/');
    if relative.is_empty() {
        return;
    }
    for hierarchy in hierarchies.flatten() {
        let mut dirs = Vec::new();
        collect_dirs(&hierarchy.path().join(relative), &mut dirs);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.as_os_str().len()));
        for d in dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out);
        }
    }
}
