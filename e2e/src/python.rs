//! A Python venv with the official Kubernetes client, created on first use and kept under the
//! target dir (target/e2e-venv) so later runs reuse it; and the test scripts under e2e/python/.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The official client release matching Kubernetes 1.33.
pub const KUBERNETES_CLIENT: &str = "kubernetes==33.1.0";

/// The venv's interpreter, creating the venv (python3 -m venv, pip install) if it is missing
/// or holds another client version. Concurrent callers each build in their own temp dir and
/// the first rename wins.
pub fn venv_python() -> anyhow::Result<PathBuf> {
    // Tests of one process build it once; other processes race through the rename below.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = BUILDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let target = crate::bin_dir()
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow::anyhow!("no target dir"))?;
    let venv = target.join("e2e-venv");
    let marker = venv.join("e2e-requirement");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(KUBERNETES_CLIENT) {
        return Ok(venv.join("bin").join("python"));
    }
    // Removed if anything below fails; renamed into place when done.
    let tmp = tempfile::Builder::new()
        .prefix("e2e-venv.tmp")
        .tempdir_in(&target)?;
    let building = tmp.path().to_path_buf();
    let python3 = which("python3").ok_or_else(|| {
        anyhow::anyhow!(
            "python3 is missing: run hack/install-deps.sh (apt-get install python3-venv)"
        )
    })?;
    run_checked(
        Command::new(python3).args(["-m", "venv"]).arg(&building),
        "python3 -m venv (on Debian: apt-get install python3-venv, see hack/install-deps.sh)",
    )?;
    run_checked(
        Command::new(building.join("bin").join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(KUBERNETES_CLIENT),
        &format!("pip install {KUBERNETES_CLIENT}"),
    )?;
    std::fs::write(building.join("e2e-requirement"), KUBERNETES_CLIENT)?;
    // A venv's interpreter finds its packages through bin/../pyvenv.cfg, so the directory can be
    // moved as long as it is run as <venv>/bin/python (not through pip's script shebangs).
    if venv.exists() && std::fs::read_to_string(&marker).ok().as_deref() != Some(KUBERNETES_CLIENT)
    {
        // An older or unfinished venv.
        let _ = std::fs::remove_dir_all(&venv);
    }
    if std::fs::rename(&building, &venv).is_err() {
        // Someone else finished first; use theirs if it is complete.
        anyhow::ensure!(
            std::fs::read_to_string(&marker).ok().as_deref() == Some(KUBERNETES_CLIENT),
            "could not install the venv at {}",
            venv.display()
        );
    }
    Ok(venv.join("bin").join("python"))
}

/// A script under e2e/python/.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(name)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

fn run_checked(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let out = command.stdin(Stdio::null()).output()?;
    anyhow::ensure!(
        out.status.success(),
        "{what} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Runs `python script args...` with `env`, killing it after `timeout` (a hang guard); returns
/// (success, stdout, stderr).
pub fn run_script(
    python: &Path,
    script: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> anyhow::Result<(bool, String, String)> {
    let dir = tempfile::tempdir()?;
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .envs(env.iter().copied())
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    match status {
        Some(status) => Ok((status.success(), stdout, stderr)),
        None => anyhow::bail!(
            "{} did not finish within {timeout:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            script.display()
        ),
    }
}
