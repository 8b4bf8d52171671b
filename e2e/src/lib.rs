//! Harness for end-to-end tests: find the built binaries, start them as real processes on free
//! ports in temp dirs, talk to them over HTTPS, and stop them whatever happens.

pub mod apiserver;
pub mod bench;
pub mod containerd;
pub mod controller_manager;
pub mod daemon;
pub mod etcd;
pub mod https;
pub mod kubectl;
pub mod kubelet;
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

/// A loopback port that was free a moment ago. Another process may take it before the daemon
/// binds it; tests accept that small race as upstream's integration tests do.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding an ephemeral port")
}
