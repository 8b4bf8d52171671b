//! The data sources of `create configmap` and `create secret generic`: `--from-literal`,
//! `--from-file` (`[key=]path`, a directory's regular files) and `--from-env-file`.

use std::collections::BTreeMap;
use std::path::Path;

/// Keys and their raw bytes, in key order.
pub type Data = BTreeMap<String, Vec<u8>>;

/// Collects every source; a key given twice is upstream's error.
pub fn collect(
    literals: &[String],
    files: &[String],
    env_files: &[String],
) -> anyhow::Result<Data> {
    let mut data = Data::new();
    let mut insert = |key: String, value: Vec<u8>| -> anyhow::Result<()> {
        anyhow::ensure!(
            !data.contains_key(&key),
            "cannot add key {key}, another key by that name already exists in Data for ConfigMap \"\""
        );
        data.insert(key, value);
        Ok(())
    };
    for literal in literals {
        let Some((key, value)) = literal.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            anyhow::bail!("invalid literal source {literal}, expected key=value");
        };
        insert(key.to_owned(), value.as_bytes().to_vec())?;
    }
    for source in files {
        let (key, path) = match source.split_once('=') {
            Some((k, p)) => (Some(k.to_owned()), p),
            None => (None, source.as_str()),
        };
        let path = Path::new(path);
        if path.is_dir() {
            anyhow::ensure!(key.is_none(), "cannot give a key name for a directory path");
            let mut entries: Vec<_> = std::fs::read_dir(path)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for entry in entries.into_iter().filter(|e| e.is_file()) {
                let name = entry
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                insert(name, std::fs::read(&entry)?)?;
            }
            continue;
        }
        let bytes = std::fs::read(path).map_err(|_| {
            anyhow::anyhow!(
                "error reading {}: no such file or directory",
                path.display()
            )
        })?;
        let key = key.unwrap_or_else(|| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        insert(key, bytes)?;
    }
    for env_file in env_files {
        let text = std::fs::read_to_string(env_file)
            .map_err(|_| anyhow::anyhow!("error reading {env_file}: no such file or directory"))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                anyhow::bail!(
                    "{env_file}: line {}: invalid environment variable: {line}",
                    n + 1
                );
            };
            insert(key.to_owned(), value.as_bytes().to_vec())?;
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "hello\n").unwrap();
        std::fs::write(dir.path().join("env"), "# c\na=1\n\nb=x=y\n").unwrap();
        let file = dir.path().join("f.txt").display().to_string();
        let env = dir.path().join("env").display().to_string();
        let data = collect(
            &["x=y".into()],
            &[file.clone(), format!("k2={file}")],
            &[env],
        )
        .unwrap();
        let text: Vec<(String, String)> = data
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            text,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x=y".into()),
                ("f.txt".into(), "hello\n".into()),
                ("k2".into(), "hello\n".into()),
                ("x".into(), "y".into()),
            ]
        );
        assert!(collect(&["bad".into()], &[], &[]).is_err());
        assert!(collect(&["a=1".into(), "a=2".into()], &[], &[]).is_err());
        assert_eq!(
            collect(&[], &[dir.path().display().to_string()], &[])
                .unwrap()
                .len(),
            2
        );
    }
}
