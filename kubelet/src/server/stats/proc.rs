//! Node figures read from procfs and statvfs: memory, network, file systems, processes.

use anyhow::Context;
use std::path::Path;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
}

/// `/proc/meminfo`'s total and available memory, in bytes.
pub fn meminfo() -> anyhow::Result<MemInfo> {
    let text = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    Ok(parse_meminfo(&text))
}

pub fn parse_meminfo(text: &str) -> MemInfo {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_default()
    };
    MemInfo {
        total: field("MemTotal"),
        available: field("MemAvailable"),
    }
}

/// One network interface's counters from `/proc/net/dev`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_errors: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
}

pub fn parse_net_dev(text: &str) -> Vec<Interface> {
    text.lines()
        .skip(2)
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let v: Vec<u64> = rest
                .split_whitespace()
                .map(|f| f.parse().unwrap_or_default())
                .collect();
            (v.len() >= 11).then(|| Interface {
                name: name.trim().to_string(),
                rx_bytes: v[0],
                rx_errors: v[2],
                tx_bytes: v[8],
                tx_errors: v[10],
            })
        })
        .collect()
}

/// The host's interfaces, loopback excluded.
pub fn interfaces() -> Vec<Interface> {
    let text = std::fs::read_to_string("/proc/net/dev").unwrap_or_default();
    parse_net_dev(&text)
        .into_iter()
        .filter(|i| i.name != "lo")
        .collect()
}

/// The interfaces of the network namespace process `pid` is in (a pod's sandbox).
pub fn interfaces_of(pid: u32) -> Vec<Interface> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/dev")).unwrap_or_default();
    parse_net_dev(&text)
        .into_iter()
        .filter(|i| i.name != "lo")
        .collect()
}

/// A file system's size and use, for `fs`, `imageFs` and `containerFs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsStats {
    pub capacity: u64,
    pub available: u64,
    pub used: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

pub fn statvfs(path: &Path) -> anyhow::Result<FsStats> {
    let s =
        nix::sys::statvfs::statvfs(path).with_context(|| format!("statvfs {}", path.display()))?;
    let frag = s.fragment_size() as u64;
    let blocks = s.blocks() as u64;
    let free = s.blocks_free() as u64;
    let avail = s.blocks_available() as u64;
    Ok(FsStats {
        capacity: blocks * frag,
        available: avail * frag,
        used: blocks.saturating_sub(free) * frag,
        inodes: s.files() as u64,
        inodes_free: s.files_free() as u64,
    })
}

/// Bytes and inodes used below `path` (a `du`), without following symlinks or crossing
/// into other file systems' mounts of tmpfs volumes (those are counted as they are).
pub fn disk_usage(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut bytes = 0;
    let mut inodes = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        bytes += meta.blocks() * 512;
        inodes += 1;
        if !meta.is_dir() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            stack.push(entry.path());
        }
    }
    (bytes, inodes)
}

/// When the machine booted, from `/proc/stat`'s `btime`.
pub fn boot_time() -> Option<jiff::Timestamp> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let secs: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    jiff::Timestamp::from_second(secs).ok()
}

/// `pid_max` and the number of processes running.
pub fn rlimit() -> (u64, u64) {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_default();
    let cur = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .count() as u64
        })
        .unwrap_or_default();
    (max, cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_net_dev_parse() {
        let mem =
            parse_meminfo("MemTotal:       2000 kB\nMemFree: 5 kB\nMemAvailable:    1000 kB\n");
        assert_eq!(
            mem,
            MemInfo {
                total: 2000 * 1024,
                available: 1000 * 1024
            }
        );
        let dev = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n  eth0: 100 2 3 0 0 0 0 0 200 4 5 0 0 0 0 0\n";
        let got = parse_net_dev(dev);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1],
            Interface {
                name: "eth0".into(),
                rx_bytes: 100,
                rx_errors: 3,
                tx_bytes: 200,
                tx_errors: 5
            }
        );
    }

    #[test]
    fn the_root_file_system_has_a_size() {
        let fs = statvfs(Path::new("/")).unwrap();
        assert!(fs.capacity > 0 && fs.capacity >= fs.used);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![1u8; 10_000]).unwrap();
        let (bytes, inodes) = disk_usage(dir.path());
        assert!(bytes >= 8192, "{bytes}");
        assert_eq!(inodes, 2);
    }
}
