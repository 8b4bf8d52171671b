//! cgroup v1 through the filesystem: a cgroup is one directory per mounted subsystem
//! (`<mount>/<subsystem>/<path>`), as upstream's cgroupfs driver.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// The subsystems a kubelet cgroup is created in (those mounted are used).
pub const SUBSYSTEMS: &[&str] = &[
    "cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio", "devices", "freezer",
];

/// The cgroup v1 hierarchy under `mount` (`/sys/fs/cgroup` on a host).
#[derive(Debug, Clone)]
pub struct CgroupFs {
    mount: PathBuf,
    subsystems: Vec<&'static str>,
}

impl CgroupFs {
    /// The mounted subsystems of `mount`; an error on a host without cgroup v1.
    pub fn new(mount: &Path) -> anyhow::Result<Self> {
        let subsystems: Vec<&'static str> = SUBSYSTEMS
            .iter()
            .copied()
            .filter(|s| mount.join(s).is_dir())
            .collect();
        if !subsystems.contains(&"cpu") || !subsystems.contains(&"memory") {
            anyhow::bail!(
                "no cgroup v1 cpu and memory hierarchies under {}: this kubelet needs cgroup v1 \
                 with the cgroupfs driver",
                mount.display()
            );
        }
        Ok(Self {
            mount: mount.to_path_buf(),
            subsystems,
        })
    }

    /// `<mount>/<subsystem>/<cgroup>`.
    pub fn path(&self, subsystem: &str, cgroup: &str) -> PathBuf {
        self.mount
            .join(subsystem)
            .join(cgroup.trim_start_matches('/'))
    }

    /// Whether the cgroup exists (in the cpu hierarchy, which every kubelet cgroup has).
    pub fn exists(&self, cgroup: &str) -> bool {
        self.path("cpu", cgroup).is_dir()
    }

    /// Creates the cgroup in every subsystem. A new cpuset cgroup starts with no CPUs or
    /// memory nodes, so those are copied down from the parent.
    pub fn create(&self, cgroup: &str) -> anyhow::Result<()> {
        for subsystem in &self.subsystems {
            let dir = self.path(subsystem, cgroup);
            if *subsystem == "cpuset" {
                self.create_cpuset(&dir)?;
            } else {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating cgroup {}", dir.display()))?;
            }
        }
        Ok(())
    }

    fn create_cpuset(&self, dir: &Path) -> anyhow::Result<()> {
        let root = self.mount.join("cpuset");
        let mut missing = Vec::new();
        let mut probe = dir;
        while !probe.is_dir() && probe != root {
            missing.push(probe.to_path_buf());
            probe = probe.parent().unwrap_or(&root);
        }
        for dir in missing.iter().rev() {
            std::fs::create_dir(dir)
                .or_else(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            let parent = dir.parent().unwrap_or(&root);
            for file in ["cpuset.cpus", "cpuset.mems"] {
                let current = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
                if current.trim().is_empty() {
                    let value = std::fs::read_to_string(parent.join(file)).unwrap_or_default();
                    if !value.trim().is_empty() {
                        std::fs::write(dir.join(file), value.trim())
                            .with_context(|| format!("writing {}/{file}", dir.display()))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes `value` to `<subsystem>/<cgroup>/<file>`.
    pub fn write(
        &self,
        subsystem: &str,
        cgroup: &str,
        file: &str,
        value: &str,
    ) -> anyhow::Result<()> {
        let path = self.path(subsystem, cgroup).join(file);
        std::fs::write(&path, value)
            .with_context(|| format!("writing {value:?} to {}", path.display()))
    }

    /// Reads `<subsystem>/<cgroup>/<file>`, trimmed.
    pub fn read(&self, subsystem: &str, cgroup: &str, file: &str) -> anyhow::Result<String> {
        let path = self.path(subsystem, cgroup).join(file);
        Ok(std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim()
            .to_string())
    }

    /// The cgroup's child directories' names (in the cpu hierarchy).
    pub fn children(&self, cgroup: &str) -> Vec<String> {
        std::fs::read_dir(self.path("cpu", cgroup))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Kills what still runs in the cgroup and removes it with its children, in every
    /// subsystem. Missing directories are fine.
    pub fn remove(&self, cgroup: &str) -> anyhow::Result<()> {
        let mut first_error = None;
        for subsystem in &self.subsystems {
            let dir = self.path(subsystem, cgroup);
            if let Err(err) = remove_tree(&dir) {
                first_error.get_or_insert(err);
            }
        }
        match first_error {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

/// Depth-first rmdir; processes left in a cgroup are killed first (a cgroup with tasks cannot
/// be removed).
fn remove_tree(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)?.filter_map(Result::ok) {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&entry.path())?;
        }
    }
    let mut last = None;
    for _ in 0..20 {
        kill_procs(dir);
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // A plain directory (tests) holds the interface files: they are not real files
            // in a cgroupfs, so only a non-cgroup tree needs them removed.
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty && !is_cgroupfs(dir) => {
                std::fs::remove_dir_all(dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(last.map_or_else(|| anyhow::anyhow!("busy"), anyhow::Error::from))
        .with_context(|| format!("removing cgroup {}", dir.display()))
}

fn is_cgroupfs(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP_SUPER_MAGIC)
        .unwrap_or(false)
}

fn kill_procs(dir: &Path) {
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
