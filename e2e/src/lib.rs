//! Harness for end-to-end tests: find the built binaries, start them as real processes on free
//! ports in temp dirs, talk to them over HTTPS, and stop them whatever happens.

pub mod apiserver;
pub mod bench;
pub mod cluster;
pub mod containerd;
pub mod controller_manager;
pub mod daemon;
pub mod etcd;
pub mod https;
pub mod kcm_fixture;
pub mod kubectl;
pub mod kubectl_compare;
pub mod kubelet;
pub mod node_fixture;
pub mod panic_note;
pub mod pki;
pub mod python;
pub mod scheduler;
pub mod secure;
pub mod served;

use std::path::PathBuf;

/// The directory holding the workspace's binaries for the profile these tests were built with
/// (`hack/test.sh` builds them before the tests run).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let dir = exe.parent().expect("an executable lives in a directory");
    // Tests live in target/<profile>/deps, binaries such as the benchmark in target/<profile>.
    match dir.file_name() {
        Some(name) if name == "deps" => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// Path of one of the workspace's binaries, which must have been built.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` first (hack/test.sh does)",
        path.display()
    );
    path
}

/// A loopback port that was free a moment ago, below the kernel's ephemeral range: ports the
/// kernel gives to outgoing connections (thousands, with several clusters up at once) then
/// cannot take it before the daemon binds it, which with `bind(:0)` ports happened in CI. Two
/// tests drawing the same port stays possible but rare (random among ~20000, never reused
/// within one process).
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let low = ephemeral_low().clamp(12_000, 65_000);
    let span = u64::from(low - 10_000);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = 10_000 + (RandomState::new().hash_one(given.len()) % span) as u16;
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free loopback port between 10000 and {low}");
}

/// The first port of `net.ipv4.ip_local_port_range` (Linux's default is 32768).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}
