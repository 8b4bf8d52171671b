//! A real containerd (Debian's 1.6) owned by a test: its own root, state and socket under the
//! test's temp dir, its own CNI network (bridge and /24), the test images imported, everything
//! it made undone on drop.
//!
//! # The configuration (`hack/containerd/config.toml.in`) and why each setting is there
//! - `root`, `state`, `grpc.address`, `ttrpc.address`: per instance, so several tests run at
//!   once without sharing images, containers or sockets.
//! - `plugins."io.containerd.internal.v1.opt".path`: the default `/opt/containerd` would be
//!   shared by every instance.
//! - `disabled_plugins` (aufs, btrfs, devmapper, zfs, tracing): snapshotters this disk cannot
//!   use; they only log errors at start.
//! - CRI `sandbox_image = "registry.k8s.io/pause:3.10"`: the pause image imported here; no
//!   registry is reachable, so containerd must never try to pull another one.
//! - CRI `restrict_oom_score_adj = true`: these machines lack CAP_SYS_RESOURCE, so runc cannot
//!   lower a container's `oom_score_adj` below containerd's own; with this containerd clamps it.
//! - CRI `netns_mounts_under_state_dir = true`: pod network namespaces are bind-mounted under
//!   `<state>/netns` instead of the shared `/var/run/netns`, so drop can find and remove exactly
//!   this instance's.
//! - `containerd.snapshotter`: `overlayfs` when an overlay mount works in the temp dir (ext4
//!   here), else `native` (copies, slower, works anywhere).
//! - `runtimes.runc` with `runtime_type = "io.containerd.runc.v2"`, `SystemdCgroup = false`:
//!   cgroup v1 without systemd, so the cgroupfs driver (the kubelet passes cgroup parents as
//!   paths such as `/kt-x/kubepods/besteffort/pod<uid>`).
//! - runc `Root = "<state>/runc"`: runc's state per instance instead of the shared
//!   `/run/containerd/runc`, so drop can list and kill leftovers of this instance only.
//! - CRI `cni.bin_dir = "/usr/lib/cni"` (Debian's containernetworking-plugins),
//!   `cni.conf_dir` per instance holding one bridge conflist (`max_conf_num = 1`).
//! - CRI `stream_server_address = "127.0.0.1"`, `stream_server_port = "0"`: the exec / attach /
//!   port-forward streaming server on a free loopback port (the kubelet redirects or proxies
//!   to the URL CRI returns).
//! - `disable_apparmor`, `enable_selinux = false`, `disable_hugetlb_controller`: neither LSM nor
//!   the hugetlb cgroup is set up on these machines.
//! - `registry.config_path = ""`: no registry mirrors; pulls of missing images fail fast.
//!
//! # The CNI network (`hack/containerd/10-bridge.conflist.in`)
//! A `bridge` plugin (own bridge `ktcni<N>`, `isGateway`, `ipMasq`, `hairpinMode`) with
//! `host-local` IPAM on `10.231.<N>.0/24`, its `dataDir` in the temp dir, then `portmap` for
//! hostPort. `<N>` is a slot held with a file lock under `/run/k8s-rs-e2e-cni` for the instance's
//! life, so concurrent tests (even in different processes) get distinct bridges and subnets.

mod cleanup;
mod cni;
pub mod cri;

use crate::daemon::Daemon;
use anyhow::Context as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const CONFIG_TEMPLATE: &str = include_str!("../../hack/containerd/config.toml.in");
const CNI_TEMPLATE: &str = include_str!("../../hack/containerd/10-bridge.conflist.in");

/// The names the images get; `sandbox_image` in the config is [`PAUSE_IMAGE`].
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";
pub const BUSYBOX_IMAGE: &str = "docker.io/library/busybox:latest";
pub const BUSYBOX_136_IMAGE: &str = "docker.io/library/busybox:1.36";

/// A hang guard for containerd's start and its CRI answering, not a timing assertion.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// A running containerd, stopped and cleaned up on drop. Drop it before the temp dir holding it.
pub struct Containerd {
    daemon: Option<Daemon>,
    dir: PathBuf,
    slot: u16,
    _slot_lock: File,
}

impl Containerd {
    /// Builds the test images (cached), writes this instance's config and CNI conflist under
    /// `dir`, starts containerd, waits until CRI answers with runtime and network ready, and
    /// imports pause and busybox.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        crate::panic_note::install();
        anyhow::ensure!(
            Path::new("/usr/bin/containerd").exists(),
            "containerd is missing: run hack/install-deps.sh"
        );
        let images = test_images()?;
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        // sun_path holds 108 bytes; containerd also listens on `<socket>.ttrpc`.
        let socket_len = dir.join("containerd.sock.ttrpc").as_os_str().len();
        anyhow::ensure!(
            socket_len < 100,
            "{} is too deep for a unix socket path: use a shorter temp dir",
            dir.display()
        );
        let (slot, lock) = cni::claim_slot()?;
        let net = cni::Network::for_slot(slot);
        net.remove_leftovers();
        for sub in ["root", "state", "cni", "ipam"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let config = CONFIG_TEMPLATE
            .replace("@ROOT@", &dir.join("root").display().to_string())
            .replace("@STATE@", &dir.join("state").display().to_string())
            .replace(
                "@SOCKET@",
                &dir.join("containerd.sock").display().to_string(),
            )
            .replace("@CNI_CONF_DIR@", &dir.join("cni").display().to_string())
            .replace("@SNAPSHOTTER@", snapshotter());
        std::fs::write(dir.join("config.toml"), config)?;
        std::fs::write(
            dir.join("cni").join("10-bridge.conflist"),
            net.conflist(CNI_TEMPLATE, &dir.join("ipam")),
        )?;
        let args = vec![
            "--config".to_string(),
            dir.join("config.toml").display().to_string(),
        ];
        let daemon = Daemon::start(Path::new("/usr/bin/containerd"), &args, &dir)?;
        let mut containerd = Self {
            daemon: Some(daemon),
            dir,
            slot,
            _slot_lock: lock,
        };
        containerd.wait_ready().map_err(|e| {
            anyhow::anyhow!("{e:#}\n----- containerd log -----\n{}", containerd.logs())
        })?;
        containerd.import_image(&images.join("pause.tar"))?;
        containerd.import_image(&images.join("busybox.tar"))?;
        Ok(containerd)
    }

    /// `unix:///<dir>/containerd.sock`, for `containerRuntimeEndpoint`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket_path().display())
    }

    pub fn socket_path(&self) -> PathBuf {
        self.dir.join("containerd.sock")
    }

    /// containerd's root (images, snapshots) and state (tasks, netns, runc) directories.
    pub fn root_dir(&self) -> PathBuf {
        self.dir.join("root")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// The pods' subnet, e.g. `10.231.7.0/24`.
    pub fn cni_subnet(&self) -> String {
        cni::Network::for_slot(self.slot).subnet()
    }

    /// The pods' gateway on the bridge, e.g. `10.231.7.1`.
    pub fn cni_gateway(&self) -> String {
        cni::Network::for_slot(self.slot).gateway()
    }

    /// The bridge this instance's pods attach to.
    pub fn bridge(&self) -> String {
        cni::Network::for_slot(self.slot).bridge
    }

    /// Everything containerd has logged so far.
    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        read("containerd.log.1") + &read("containerd.log")
    }

    /// Imports an OCI or docker image tarball into the CRI namespace (`k8s.io`).
    pub fn import_image(&self, tar: &Path) -> anyhow::Result<()> {
        let out = self
            .ctr()
            .args(["-n", "k8s.io", "images", "import"])
            .arg(tar)
            .output()
            .context("running ctr images import")?;
        anyhow::ensure!(
            out.status.success(),
            "ctr images import {}: {}{}",
            tar.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// kill -9 containerd alone: its shims and containers keep running, as when containerd
    /// crashes under a kubelet.
    pub fn kill(&mut self) {
        // Dropping a Daemon sends SIGKILL and reaps the process.
        self.daemon = None;
    }

    /// Starts containerd again on the same root, state and socket (after [`Containerd::kill`])
    /// and waits until CRI is ready; the previous run's log moves to `containerd.log.1`.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.daemon.is_none(), "containerd is still running");
        let log = self.dir.join("containerd.log");
        std::fs::rename(&log, log.with_extension("log.1"))?;
        let args = vec![
            "--config".to_string(),
            self.dir.join("config.toml").display().to_string(),
        ];
        self.daemon = Some(Daemon::start(
            Path::new("/usr/bin/containerd"),
            &args,
            &self.dir,
        )?);
        self.wait_ready()
            .map_err(|e| anyhow::anyhow!("{e:#}\n----- containerd log -----\n{}", self.logs()))
    }

    /// A `ctr` command talking to this instance.
    pub fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("-a").arg(self.socket_path());
        cmd
    }

    /// A gRPC channel to CRI over the unix socket.
    pub async fn cri_channel(&self) -> anyhow::Result<tonic::transport::Channel> {
        cri::channel(&self.socket_path()).await
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_PATIENCE;
        let socket = self.socket_path();
        let mut last = String::from("not started");
        while Instant::now() < deadline {
            if let Some(status) = self.daemon.as_mut().and_then(Daemon::try_status) {
                anyhow::bail!("containerd exited ({status})");
            }
            if socket.exists() {
                match cri::blocking(cri::ready(socket.clone())).and_then(|r| r) {
                    Ok(()) => return Ok(()),
                    Err(e) => last = format!("{e:#}"),
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        anyhow::bail!("CRI not ready after {START_PATIENCE:?}: {last}")
    }

    fn cleanup(&mut self) {
        // Through CRI first: stopping sandboxes runs CNI DEL (releases IPs, removes the
        // masquerade rules) and unmounts their network namespaces and shm.
        if self
            .daemon
            .as_mut()
            .is_some_and(|d| d.try_status().is_none())
        {
            let socket = self.socket_path();
            let _ = cri::blocking(async move {
                tokio::time::timeout(Duration::from_secs(20), cri::remove_all(socket)).await
            });
        }
        if let Some(mut daemon) = self.daemon.take() {
            let _ = daemon.terminate(Duration::from_secs(5));
        }
        // Whatever CRI did not remove: shims survive containerd, containers survive their shim.
        cleanup::kill_leftovers(&self.socket_path(), &self.state_dir().join("runc"));
        cleanup::unmount_under(&self.dir);
        cni::Network::for_slot(self.slot).remove_leftovers();
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("----- containerd log -----\n{}", self.logs());
            crate::panic_note::repeat();
        }
        self.cleanup();
    }
}

/// Unmounts everything mounted below `dir`, deepest first (volumes, overlays, shm, netns).
pub fn unmount_under(dir: &Path) {
    cleanup::unmount_under(dir);
}

/// The directory holding `pause.tar` and `busybox.tar` (built once by `hack/images/build.sh`,
/// cached under `target/test-images`).
pub fn test_images() -> anyhow::Result<PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| build_images().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn build_images() -> anyhow::Result<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/images/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(PathBuf::from(dir))
}

/// `overlayfs` if an overlay mount works on the temp dir's disk, else `native`.
fn snapshotter() -> &'static str {
    static CHOICE: OnceLock<&'static str> = OnceLock::new();
    CHOICE.get_or_init(|| {
        if overlay_works() {
            "overlayfs"
        } else {
            "native"
        }
    })
}

fn overlay_works() -> bool {
    let Ok(tmp) = tempfile::tempdir() else {
        return false;
    };
    let d = tmp.path();
    for sub in ["l", "u", "w", "m"] {
        if std::fs::create_dir(d.join(sub)).is_err() {
            return false;
        }
    }
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        d.join("l").display(),
        d.join("u").display(),
        d.join("w").display()
    );
    let mounted = Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o", &opts])
        .arg(d.join("m"))
        .output()
        .is_ok_and(|o| o.status.success());
    if mounted {
        let _ = Command::new("umount").arg(d.join("m")).status();
    }
    mounted
}
