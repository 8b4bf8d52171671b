//! The diff program and the temp trees it compares.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory `<tmp>/<PREFIX>-<digits>` removed when dropped.
pub struct TempTree {
    path: PathBuf,
}

impl TempTree {
    pub fn new(prefix: &str) -> anyhow::Result<Self> {
        let base = std::env::temp_dir();
        let seed = std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
        for attempt in 0..100u64 {
            let n = seed.wrapping_mul(6364136223846793005).wrapping_add(attempt) % 10_000_000_000;
            let path = base.join(format!("{prefix}-{n}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempTree { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
        anyhow::bail!("creating a temp directory for {prefix}")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `$KUBECTL_EXTERNAL_DIFF` split on spaces (its arguments limited to what upstream allows),
/// or `diff -u -N`.
fn command() -> anyhow::Result<(String, Vec<String>)> {
    let external = std::env::var("KUBECTL_EXTERNAL_DIFF").unwrap_or_default();
    let mut words = external.split_whitespace();
    let Some(program) = words.next() else {
        return Ok(("diff".to_owned(), vec!["-u".to_owned(), "-N".to_owned()]));
    };
    let args: Vec<String> = words.map(str::to_owned).collect();
    for arg in &args {
        let allowed = arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '=' || c == '_');
        if !allowed {
            anyhow::bail!(
                "arguments in KUBECTL_EXTERNAL_DIFF must match the regex ^[a-zA-Z0-9-=]+$: {arg}"
            );
        }
    }
    Ok((program.to_owned(), args))
}

/// Runs the diff over the two trees, its output passed through; its exit code, which is
/// kubectl's.
pub fn run(from: &Path, to: &Path) -> anyhow::Result<i32> {
    let (program, args) = command()?;
    let status = Command::new(&program)
        .args(&args)
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| anyhow::anyhow!("failed to run \"{program}\": {e}"))?;
    Ok(status.code().unwrap_or(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_trees_are_named_and_removed() {
        let tree = TempTree::new("LIVE").unwrap();
        let path = tree.path().to_path_buf();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("LIVE-") && name[5..].chars().all(|c| c.is_ascii_digit()),
            "{name}"
        );
        assert!(path.is_dir());
        drop(tree);
        assert!(!path.exists());
    }
}
