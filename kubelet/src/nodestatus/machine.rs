//! What the host says about itself: CPUs, memory, the root filesystem, identity files and the
//! kernel (what upstream gets from cAdvisor and `uname`).

use anyhow::Context;
use std::net::IpAddr;
use std::path::Path;

/// The machine's static facts, read once at start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineInfo {
    pub num_cpus: u64,
    /// MemTotal, bytes.
    pub memory_bytes: u64,
    pub machine_id: String,
    pub system_uuid: String,
    pub boot_id: String,
    pub kernel_version: String,
    pub os_image: String,
}

/// Usage figures that change: what the eviction signals are measured on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub memory_available: u64,
    pub fs_capacity: u64,
    pub fs_available: u64,
    pub fs_inodes: u64,
    pub fs_inodes_free: u64,
    pub pid_max: u64,
    pub pids_used: u64,
}

impl MachineInfo {
    /// Reads the machine's facts; the identity files are optional as on upstream's nodes
    /// without them.
    pub fn read() -> anyhow::Result<Self> {
        let meminfo = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
        let memory_bytes =
            meminfo_kib(&meminfo, "MemTotal").context("no MemTotal in /proc/meminfo")? * 1024;
        Ok(Self {
            num_cpus: num_cpus(),
            memory_bytes,
            machine_id: read_trimmed("/etc/machine-id")
                .or_else(|| read_trimmed("/var/lib/dbus/machine-id"))
                .unwrap_or_default(),
            system_uuid: read_trimmed("/sys/class/dmi/id/product_uuid").unwrap_or_default(),
            boot_id: read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
            kernel_version: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
            os_image: std::fs::read_to_string("/etc/os-release")
                .ok()
                .and_then(|text| os_release_pretty_name(&text))
                .unwrap_or_else(|| "Linux".into()),
        })
    }
}

/// The processors /proc/cpuinfo lists, else those this process may run on (its affinity).
fn num_cpus() -> u64 {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|text| text.lines().filter(|l| l.starts_with("processor")).count() as u64)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u64))
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// A `/proc/meminfo` line's value in KiB.
pub fn meminfo_kib(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != key {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// `PRETTY_NAME` of an os-release file, unquoted.
pub fn os_release_pretty_name(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix("PRETTY_NAME=")?;
        Some(
            value
                .trim()
                .trim_matches('"')
                .trim_matches('\'')
                .to_string(),
        )
    })
}

/// The filesystem holding `path` (its nearest existing ancestor, so a root dir still to be
/// created works): capacity, available bytes, inodes, free inodes.
pub fn filesystem(path: &Path) -> anyhow::Result<(u64, u64, u64, u64)> {
    let mut probe = path;
    while !probe.exists() {
        probe = probe.parent().unwrap_or(Path::new("/"));
    }
    let st = nix::sys::statvfs::statvfs(probe)
        .with_context(|| format!("statvfs {}", probe.display()))?;
    let frsize = st.fragment_size() as u64;
    Ok((
        st.blocks() as u64 * frsize,
        st.blocks_available() as u64 * frsize,
        st.files() as u64,
        st.files_available() as u64,
    ))
}

/// Current usage figures of the host and the filesystem of `root_dir`.
pub fn usage(root_dir: &Path) -> anyhow::Result<Usage> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    let (fs_capacity, fs_available, fs_inodes, fs_inodes_free) = filesystem(root_dir)?;
    let pids_used = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .count() as u64
        })
        .unwrap_or(0);
    Ok(Usage {
        memory_available: meminfo_kib(&meminfo, "MemAvailable").unwrap_or(0) * 1024,
        fs_capacity,
        fs_available,
        fs_inodes,
        fs_inodes_free,
        pid_max: read_trimmed("/proc/sys/kernel/pid_max")
            .and_then(|s| s.parse().ok())
            .unwrap_or(32768),
        pids_used,
    })
}

/// The host's address when `--node-ip` is not given: the host name's first non-loopback
/// address, else the source address of the default route, else loopback.
pub fn host_ip(hostname: &str) -> IpAddr {
    use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
    if let Ok(addrs) = (hostname, 0).to_socket_addrs() {
        let addrs: Vec<SocketAddr> = addrs.collect();
        if let Some(a) = addrs
            .iter()
            .find(|a| a.ip().is_ipv4() && !a.ip().is_loopback())
            .or_else(|| addrs.iter().find(|a| !a.ip().is_loopback()))
        {
            return a.ip();
        }
    }
    // Connecting a UDP socket sends nothing; it only picks the route's source address.
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let meminfo = "MemTotal:        8148008 kB\nMemFree:  100 kB\nMemAvailable: 4000 kB\n";
        assert_eq!(meminfo_kib(meminfo, "MemTotal"), Some(8148008));
        assert_eq!(meminfo_kib(meminfo, "MemAvailable"), Some(4000));
        assert_eq!(meminfo_kib(meminfo, "Nope"), None);
        let os = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_release_pretty_name(os).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(os_release_pretty_name("NAME=x"), None);
    }

    #[test]
    fn reads_this_machine() {
        let m = MachineInfo::read().unwrap();
        assert!(m.num_cpus >= 1 && m.memory_bytes > 0, "{m:?}");
        assert!(!m.kernel_version.is_empty());
        let u = usage(Path::new("/nonexistent/dir/below/root")).unwrap();
        assert!(
            u.fs_capacity >= u.fs_available && u.fs_capacity > 0,
            "{u:?}"
        );
        assert!(u.pids_used > 0 && u.pid_max > 0);
    }
}
