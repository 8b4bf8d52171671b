//! A daemon process owned by a test: its output goes to a log file, it is stopped on drop, and
//! its log is printed when the test fails.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running component.
pub struct Daemon {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `binary` with `args`, logging to `<dir>/<name>.log`.
    pub fn start(binary: &Path, args: &[String], dir: &Path) -> anyhow::Result<Self> {
        crate::panic_note::install();
        let name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log)?;
        let child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        Ok(Self { name, child, log })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the process has written so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process has exited (and how).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM and waits up to `grace` for the exit, then kills it.
    pub fn terminate(&mut self, grace: Duration) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.try_status() {
            return Ok(status);
        }
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        anyhow::ensure!(sent.success(), "kill -TERM {} failed", self.child.id());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.try_status() {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        anyhow::bail!("{} did not exit within {grace:?} of SIGTERM", self.name)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("----- {} log -----\n{}", self.name, self.logs());
            crate::panic_note::repeat();
        }
    }
}
