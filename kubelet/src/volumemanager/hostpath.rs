//! hostPath volumes: upstream's type checks (and the `...OrCreate` creation) before a path is
//! handed to a container.

use anyhow::{Context as _, bail};
use std::fs;
use std::os::unix::fs::{DirBuilderExt as _, FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Checks (or creates) `path` for the hostPath `type_` as upstream's `checkType`; an unset or
/// empty type checks nothing.
pub fn check_host_path(path: &str, type_: Option<&str>) -> anyhow::Result<()> {
    if path.split('/').any(|p| p == "..") {
        bail!("invalid HostPath `{path}`: must not contain '..'");
    }
    let type_ = type_.unwrap_or("");
    let p = Path::new(path);
    // Follows symlinks, as upstream's os.Stat.
    let meta = fs::metadata(p).ok();
    let ft = meta.as_ref().map(fs::Metadata::file_type);
    let fail = |what: &str| -> anyhow::Result<()> {
        bail!("hostPath type check failed: {path} is not {what}")
    };
    match type_ {
        "" => Ok(()),
        "DirectoryOrCreate" if meta.is_none() => fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(p)
            .with_context(|| format!("creating hostPath directory {path}")),
        "DirectoryOrCreate" | "Directory" => match ft {
            Some(ft) if ft.is_dir() => Ok(()),
            _ => fail("a directory"),
        },
        "FileOrCreate" if meta.is_none() => fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(p)
            .map(drop)
            .with_context(|| format!("creating hostPath file {path}")),
        "FileOrCreate" | "File" => match ft {
            Some(ft) if ft.is_file() => Ok(()),
            _ => fail("a file"),
        },
        "Socket" => match ft {
            Some(ft) if ft.is_socket() => Ok(()),
            _ => fail("a socket file"),
        },
        "CharDevice" => match ft {
            Some(ft) if ft.is_char_device() => Ok(()),
            _ => fail("a character device"),
        },
        "BlockDevice" => match ft {
            Some(ft) if ft.is_block_device() => Ok(()),
            _ => fail("a block device"),
        },
        other => bail!("{other} is an invalid volume type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_checks() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let file = d.join("file");
        fs::write(&file, "x").unwrap();
        let sock = d.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let missing = s(&d.join("missing"));
        let (dir_s, file_s, sock_s) = (s(d), s(&file), s(&sock));
        let cases: Vec<(String, &str, Result<(), String>)> = vec![
            (missing.clone(), "", Ok(())),
            (dir_s.clone(), "Directory", Ok(())),
            (dir_s.clone(), "DirectoryOrCreate", Ok(())),
            (
                file_s.clone(),
                "Directory",
                Err(format!(
                    "hostPath type check failed: {file_s} is not a directory"
                )),
            ),
            (
                missing.clone(),
                "Directory",
                Err(format!(
                    "hostPath type check failed: {missing} is not a directory"
                )),
            ),
            (file_s.clone(), "File", Ok(())),
            (file_s.clone(), "FileOrCreate", Ok(())),
            (
                dir_s.clone(),
                "File",
                Err(format!("hostPath type check failed: {dir_s} is not a file")),
            ),
            (
                dir_s.clone(),
                "FileOrCreate",
                Err(format!("hostPath type check failed: {dir_s} is not a file")),
            ),
            (sock_s.clone(), "Socket", Ok(())),
            (
                file_s.clone(),
                "Socket",
                Err(format!(
                    "hostPath type check failed: {file_s} is not a socket file"
                )),
            ),
            ("/dev/null".into(), "CharDevice", Ok(())),
            (
                file_s.clone(),
                "CharDevice",
                Err(format!(
                    "hostPath type check failed: {file_s} is not a character device"
                )),
            ),
            (
                "/dev/null".into(),
                "BlockDevice",
                Err("hostPath type check failed: /dev/null is not a block device".into()),
            ),
            (
                file_s.clone(),
                "Weird",
                Err("Weird is an invalid volume type".into()),
            ),
            (
                "/tmp/../etc".into(),
                "",
                Err("invalid HostPath `/tmp/../etc`: must not contain '..'".into()),
            ),
        ];
        for (path, type_, want) in cases {
            let got = check_host_path(&path, Some(type_)).map_err(|e| e.to_string());
            assert_eq!(got, want, "{path} {type_}");
        }
    }

    #[test]
    fn or_create_types_create() {
        let dir = tempfile::tempdir().unwrap();
        let new_dir = dir.path().join("a/b");
        check_host_path(new_dir.to_str().unwrap(), Some("DirectoryOrCreate")).unwrap();
        assert!(new_dir.is_dir());
        let new_file = dir.path().join("a/f");
        check_host_path(new_file.to_str().unwrap(), Some("FileOrCreate")).unwrap();
        assert!(new_file.is_file());
        // A file's parent is not created, as upstream.
        let orphan = dir.path().join("nope/f");
        assert!(check_host_path(orphan.to_str().unwrap(), Some("FileOrCreate")).is_err());
    }
}
