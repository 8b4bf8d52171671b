//! CPU and memory of a cgroup from the v1 hierarchies (`cpuacct`, `memory`), as cAdvisor
//! reads them: working set is usage minus inactive file pages.

use std::path::PathBuf;

const ROOT: &str = "/sys/fs/cgroup";
/// Limits above this are "unlimited" (the kernel's page-rounded i64 max).
const UNLIMITED: u64 = 1 << 62;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupStats {
    /// Cumulative CPU time in nanoseconds.
    pub cpu_usage_ns: u64,
    pub memory_usage: u64,
    pub working_set: u64,
    pub rss: u64,
    pub page_faults: u64,
    pub major_page_faults: u64,
    /// The memory limit, None when unlimited.
    pub memory_limit: Option<u64>,
}

fn controller_dir(controllers: &[&str], cgroup: &str) -> Option<PathBuf> {
    let rel = cgroup.trim_start_matches('/');
    controllers
        .iter()
        .map(|c| PathBuf::from(ROOT).join(c).join(rel))
        .find(|p| p.is_dir())
}

fn read_u64(path: PathBuf) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The cgroup's figures; None when the cgroup does not exist (anymore).
pub fn read(cgroup: &str) -> Option<CgroupStats> {
    let memory = controller_dir(&["memory"], cgroup)?;
    let cpu = controller_dir(&["cpuacct", "cpu,cpuacct", "cpu"], cgroup);
    let usage = read_u64(memory.join("memory.usage_in_bytes")).unwrap_or_default();
    let stat = std::fs::read_to_string(memory.join("memory.stat")).unwrap_or_default();
    let field = |name: &str| stat_field(&stat, name);
    let limit = read_u64(memory.join("memory.limit_in_bytes")).filter(|l| *l < UNLIMITED);
    Some(CgroupStats {
        cpu_usage_ns: cpu
            .and_then(|c| read_u64(c.join("cpuacct.usage")))
            .unwrap_or_default(),
        memory_usage: usage,
        working_set: usage.saturating_sub(field("total_inactive_file")),
        rss: field("total_rss"),
        page_faults: field("total_pgfault"),
        major_page_faults: field("total_pgmajfault"),
        memory_limit: limit,
    })
}

pub fn stat_field(stat: &str, name: &str) -> u64 {
    stat.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok())?
        })
        .unwrap_or_default()
}

/// The pids in the cgroup (its `cgroup.procs` in the memory hierarchy).
pub fn procs(cgroup: &str) -> Vec<u32> {
    controller_dir(&["memory", "pids"], cgroup)
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stat_fields_parse() {
        let stat = "cache 10\nrss 5\ntotal_inactive_file 300\ntotal_rss 7\ntotal_pgfault 9\n";
        let cases = [
            ("total_inactive_file", 300),
            ("total_rss", 7),
            ("rss", 5),
            ("total_pgfault", 9),
            ("missing", 0),
        ];
        for (name, want) in cases {
            assert_eq!(stat_field(stat, name), want, "{name}");
        }
    }

    #[test]
    fn the_root_cgroup_reads_when_cgroup_v1_is_mounted() {
        if !std::path::Path::new("/sys/fs/cgroup/memory/memory.usage_in_bytes").exists() {
            return;
        }
        let root = read("/").expect("root cgroup");
        assert!(root.memory_usage > 0);
        assert!(root.working_set <= root.memory_usage);
        assert!(read("/no-such-cgroup-for-sure").is_none());
    }
}
