//! Container log rotation (upstream's container log manager): a running container's log past
//! `containerLogMaxSize` is renamed to `<log>.<YYYYmmdd-HHMMSS>` and the runtime reopens it;
//! at most `containerLogMaxFiles` files (rotated ones plus the live one) are kept.

use super::RuntimeManager;
use anyhow::Context;
use k8s_cri::v1 as cri;
use std::path::{Path, PathBuf};

/// The rotated files of `log` to delete so that, with the live file and the one about to be
/// rotated, no more than `max_files` remain: the oldest go first (their suffixes sort by time).
pub fn excess_rotated(log: &Path, siblings: &[String], max_files: u32) -> Vec<PathBuf> {
    let Some(name) = log.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let mut rotated: Vec<&String> = siblings
        .iter()
        .filter(|s| s.starts_with(&prefix) && !s.ends_with(".tmp"))
        .collect();
    rotated.sort();
    let keep = max_files.saturating_sub(2) as usize;
    let dir = log.parent().unwrap_or(Path::new("/"));
    let excess = rotated.len().saturating_sub(keep);
    rotated[..excess].iter().map(|s| dir.join(s)).collect()
}

impl RuntimeManager {
    /// One rotation pass over the running containers; the kubelet calls it periodically
    /// (every 10 s upstream).
    pub async fn rotate_container_logs(&self) -> anyhow::Result<()> {
        let max_size = self.options.container_log_max_size;
        if max_size == 0 {
            return Ok(());
        }
        let running = self
            .client
            .list_containers(Some(cri::ContainerFilter {
                state: Some(cri::ContainerStateValue {
                    state: cri::ContainerState::ContainerRunning as i32,
                }),
                ..Default::default()
            }))
            .await
            .map_err(super::cri_error)?;
        let mut errors = Vec::new();
        for c in running {
            if let Err(e) = self.rotate_one(&c.id, max_size).await {
                errors.push(format!("{}: {e:#}", c.id));
            }
        }
        if !errors.is_empty() {
            anyhow::bail!("rotating container logs: {}", errors.join("; "));
        }
        Ok(())
    }

    async fn rotate_one(&self, id: &str, max_size: u64) -> anyhow::Result<()> {
        let status = match self.client.container_status(id).await {
            Ok(s) => s,
            Err(e) if e.code() == tonic::Code::NotFound => return Ok(()),
            Err(e) => return Err(super::cri_error(e)),
        };
        if status.log_path.is_empty() {
            return Ok(());
        }
        let log = PathBuf::from(&status.log_path);
        let size = match std::fs::metadata(&log) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("stat {}", log.display())),
        };
        if size < max_size {
            return Ok(());
        }
        let dir = log.parent().unwrap_or(Path::new("/"));
        let siblings: Vec<String> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        for old in excess_rotated(&log, &siblings, self.options.container_log_max_files) {
            std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
        }
        let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
        let rotated = PathBuf::from(format!("{}.{stamp}", log.display()));
        std::fs::rename(&log, &rotated)
            .with_context(|| format!("renaming {} to {}", log.display(), rotated.display()))?;
        if let Err(e) = self.client.reopen_container_log(id).await {
            // Put the file back so the container keeps a log at the path it reports.
            let _ = std::fs::rename(&rotated, &log);
            return Err(super::cri_error(e)).context("reopening the container log");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_rotated_logs_go_first() {
        let log = Path::new("/var/log/pods/ns_p_u/c/0.log");
        let siblings: Vec<String> = [
            "0.log",
            "0.log.20240101-000003",
            "0.log.20240101-000001",
            "0.log.20240101-000002",
            "0.log.20240101-000004.tmp",
            "1.log.20240101-000000",
        ]
        .map(String::from)
        .to_vec();
        let names = |max| -> Vec<String> {
            excess_rotated(log, &siblings, max)
                .into_iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        // (max files, removed)
        assert_eq!(names(5), Vec::<String>::new());
        assert_eq!(names(4), ["0.log.20240101-000001"]);
        assert_eq!(names(3), ["0.log.20240101-000001", "0.log.20240101-000002"]);
        assert_eq!(names(2).len(), 3);
        assert_eq!(names(1).len(), 3);
    }
}
