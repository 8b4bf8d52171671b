//! The audit log file with upstream's rotation (lumberjack, as `--audit-log-maxsize`,
//! `--audit-log-maxbackup` and `--audit-log-maxage` configure it): a write that would take the
//! file past the size limit first renames it to `<name>-<UTC timestamp><ext>` and starts a new
//! one; then backups beyond the count, or older than the age, are removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// lumberjack's size limit when none is given (`--audit-log-maxsize=0`): 100 MB.
pub const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// lumberjack's backup timestamp layout (Go's `2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// When a file is rotated and which backups are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rotation {
    /// Megabytes before rotating; 0 is lumberjack's 100.
    pub max_size_mb: u64,
    /// Backups to keep; 0 keeps all (unless too old).
    pub max_backups: usize,
    /// Days to keep backups, by the timestamp in their names; 0 keeps them whatever their age.
    pub max_age_days: u64,
}

/// An append-only file rotated by size.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    file: File,
    size: u64,
}

impl RotatingFile {
    /// Creates the directory (0700) and opens or creates the file (0600) for appending, as
    /// upstream does at start-up, so a path that cannot be written is a start-up error.
    pub fn open(path: &Path, rotation: Rotation) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            rotation,
            file,
            size,
        })
    }

    fn max_size(&self) -> u64 {
        let mb = match self.rotation.max_size_mb {
            0 => DEFAULT_MAX_SIZE_MB,
            n => n,
        };
        mb.saturating_mul(1024 * 1024)
    }

    /// Renames the current file to a timestamped backup, starts a new one and prunes backups.
    pub fn rotate(&mut self) -> io::Result<()> {
        let backup = backup_path(&self.path, jiff::Timestamp::now());
        std::fs::rename(&self.path, &backup)?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        self.prune()
    }

    /// The backups of this file, newest first.
    pub fn backups(&self) -> io::Result<Vec<(jiff::Timestamp, PathBuf)>> {
        let (dir, prefix, ext) = name_parts(&self.path);
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(stamp) = name
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_suffix(ext.as_str()))
            else {
                continue;
            };
            if let Ok(t) = jiff::civil::DateTime::strptime(BACKUP_TIME_FORMAT, stamp)
                .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC))
            {
                found.push((t.timestamp(), entry.path()));
            }
        }
        found.sort_by_key(|b| std::cmp::Reverse(b.0));
        Ok(found)
    }

    fn prune(&self) -> io::Result<()> {
        let Rotation {
            max_backups,
            max_age_days,
            ..
        } = self.rotation;
        if max_backups == 0 && max_age_days == 0 {
            return Ok(());
        }
        let cutoff = (max_age_days > 0).then(|| {
            let age = jiff::SignedDuration::from_hours(24 * max_age_days as i64);
            jiff::Timestamp::now() - age
        });
        for (i, (t, path)) in self.backups()?.into_iter().enumerate() {
            let too_many = max_backups > 0 && i >= max_backups;
            let too_old = cutoff.is_some_and(|c| t < c);
            if too_many || too_old {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        let max = self.max_size();
        if len > max {
            return Err(io::Error::other(format!(
                "write length {len} exceeds maximum file size {max}"
            )));
        }
        if self.size + len > max {
            self.rotate()?;
        }
        // One write per event, as lumberjack: lines from concurrent requests never interleave.
        self.file.write_all(buf)?;
        self.size += len;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// (directory, `<stem>-`, `.<ext>`) of a log path.
fn name_parts(path: &Path) -> (PathBuf, String, String) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (dir, format!("{stem}-"), ext)
}

/// `<dir>/<stem>-<2006-01-02T15-04-05.000><ext>` in UTC.
pub fn backup_path(path: &Path, now: jiff::Timestamp) -> PathBuf {
    let (dir, prefix, ext) = name_parts(path);
    let stamp = now.strftime(BACKUP_TIME_FORMAT);
    dir.join(format!("{prefix}{stamp}{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_as_lumberjack() {
        let t: jiff::Timestamp = "2026-11-21T16:01:02.345678Z".parse().expect("time");
        assert_eq!(
            backup_path(Path::new("/var/log/audit.log"), t),
            Path::new("/var/log/audit-2026-11-21T16-01-02.345.log")
        );
        assert_eq!(
            backup_path(Path::new("audit"), t),
            Path::new("./audit-2026-11-21T16-01-02.345")
        );
    }

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("logs").join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut f = RotatingFile::open(&path, rotation).expect("open");
        let line = vec![b'x'; 400 * 1024];
        for _ in 0..8 {
            f.write_all(&line).expect("write");
            // Distinct millisecond timestamps in the backup names.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        // 2 lines per MiB file: 8 lines make 4 files, of which 3 are backups, 2 kept.
        assert_eq!(std::fs::metadata(&path).expect("log").len(), 800 * 1024);
        let backups = f.backups().expect("backups");
        assert_eq!(backups.len(), 2, "{backups:?}");
        for (_, b) in &backups {
            assert_eq!(std::fs::metadata(b).expect("backup").len(), 800 * 1024);
        }
        let err = f
            .write(&vec![b'x'; 1024 * 1024 + 1])
            .expect_err("bigger than the file");
        assert!(
            err.to_string().contains("exceeds maximum file size"),
            "{err}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("log").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn old_backups_are_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.log");
        let old = "2020-01-01T00:00:00Z".parse().expect("time");
        std::fs::write(backup_path(&path, old), "old\n").expect("old backup");
        std::fs::write(dir.path().join("unrelated.log"), "x").expect("other file");
        let mut f = RotatingFile::open(
            &path,
            Rotation {
                max_size_mb: 1,
                max_backups: 0,
                max_age_days: 7,
            },
        )
        .expect("open");
        f.write_all(b"a\n").expect("write");
        f.rotate().expect("rotate");
        let backups = f.backups().expect("backups");
        assert_eq!(backups.len(), 1, "the 2020 backup is gone: {backups:?}");
        assert!(dir.path().join("unrelated.log").exists());
    }
}
