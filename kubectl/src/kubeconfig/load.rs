//! Finding and merging the kubeconfig files (upstream's `clientcmd` loading rules): `--kubeconfig`
//! alone, else every file of `$KUBECONFIG`, else `~/.kube/config`; for each name the first file
//! that defines it wins, and so does the first non-empty `current-context`.

use super::model::{Config, FileConfig};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where kubeconfig files are read from and written to.
#[derive(Debug, Clone, Default)]
pub struct PathOptions {
    pub explicit: Option<PathBuf>,
    pub env_files: Vec<PathBuf>,
    pub global_file: PathBuf,
}

impl PathOptions {
    /// The rules for this process: `--kubeconfig`, `$KUBECONFIG` and `$HOME`.
    pub fn from_env(explicit: Option<&Path>) -> Self {
        let env = std::env::var_os("KUBECONFIG").unwrap_or_default();
        let mut env_files: Vec<PathBuf> = Vec::new();
        for path in std::env::split_paths(&env) {
            if !path.as_os_str().is_empty() && !env_files.contains(&path) {
                env_files.push(path);
            }
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        PathOptions {
            explicit: explicit
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf),
            env_files,
            global_file: home.join(".kube").join("config"),
        }
    }

    /// The files read, highest priority first.
    pub fn precedence(&self) -> Vec<PathBuf> {
        if let Some(explicit) = &self.explicit {
            return vec![explicit.clone()];
        }
        if !self.env_files.is_empty() {
            return self.env_files.clone();
        }
        vec![self.global_file.clone()]
    }

    /// Where new entries go: the explicit file, the only or first existing `$KUBECONFIG` file
    /// (the last one when none exists), else `~/.kube/config`.
    pub fn default_filename(&self) -> PathBuf {
        if let Some(explicit) = &self.explicit {
            return explicit.clone();
        }
        if self.env_files.len() == 1 {
            return self.env_files[0].clone();
        }
        if let Some(existing) = self.env_files.iter().find(|p| p.exists()) {
            return existing.clone();
        }
        self.env_files
            .last()
            .cloned()
            .unwrap_or_else(|| self.global_file.clone())
    }
}

/// An absolute, lexically cleaned path (Go's `filepath.Abs`): `..` is resolved without
/// following links, and the empty path is the working directory.
pub fn absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut clean = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                clean.pop();
            }
            Component::Normal(part) => clean.push(part),
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
        }
    }
    clean
}

/// Reads one file; a missing or empty file is an empty config.
pub fn read_file(path: &Path) -> anyhow::Result<FileConfig> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(FileConfig::default()),
        Err(err) => {
            return Err(err)
                .with_context(|| format!("error loading config file \"{}\"", path.display()));
        }
    };
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    serde_yaml::from_str(&text)
        .with_context(|| format!("error loading config file \"{}\"", path.display()))
}

/// The merged config and, for each entry, the file it came from (upstream's `LocationOfOrigin`).
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub config: Config,
    pub cluster_origin: BTreeMap<String, PathBuf>,
    pub auth_info_origin: BTreeMap<String, PathBuf>,
    pub context_origin: BTreeMap<String, PathBuf>,
}

impl Loaded {
    /// Loads and merges every file the rules name.
    pub fn load(paths: &PathOptions) -> anyhow::Result<Self> {
        let mut files = Vec::new();
        for path in paths.precedence() {
            files.push((path.clone(), Config::from(read_file(&path)?)));
        }
        Ok(merge(files))
    }

    /// The directory that relative paths of a cluster or user are relative to.
    pub fn base_dir(origin: Option<&PathBuf>) -> PathBuf {
        origin
            .and_then(|p| p.parent())
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

fn merge_into<T: Clone>(
    into: &mut BTreeMap<String, T>,
    origins: &mut BTreeMap<String, PathBuf>,
    from: &BTreeMap<String, T>,
    path: &Path,
) {
    for (name, value) in from {
        if !into.contains_key(name) {
            into.insert(name.clone(), value.clone());
            origins.insert(name.clone(), path.to_path_buf());
        }
    }
}

/// Merges configs given highest priority first.
pub fn merge(files: Vec<(PathBuf, Config)>) -> Loaded {
    let mut loaded = Loaded::default();
    let mut preferences_set = false;
    for (path, config) in &files {
        let merged = &mut loaded.config;
        merge_into(
            &mut merged.clusters,
            &mut loaded.cluster_origin,
            &config.clusters,
            path,
        );
        merge_into(
            &mut merged.auth_infos,
            &mut loaded.auth_info_origin,
            &config.auth_infos,
            path,
        );
        merge_into(
            &mut merged.contexts,
            &mut loaded.context_origin,
            &config.contexts,
            path,
        );
        if merged.current_context.is_empty() {
            merged.current_context = config.current_context.clone();
        }
        if !preferences_set && config.preferences != Default::default() {
            merged.preferences = config.preferences.clone();
            preferences_set = true;
        }
        if merged.extensions.is_none() {
            merged.extensions = config.extensions.clone();
        }
    }
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubeconfig::model::{Cluster, Context};

    fn config(current: &str, clusters: &[(&str, &str)], contexts: &[&str]) -> Config {
        Config {
            current_context: current.into(),
            clusters: clusters
                .iter()
                .map(|(n, s)| {
                    (
                        n.to_string(),
                        Cluster {
                            server: s.to_string(),
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            contexts: contexts
                .iter()
                .map(|n| (n.to_string(), Context::default()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn first_file_wins() {
        let loaded = merge(vec![
            ("a".into(), config("", &[("c1", "https://a")], &["x"])),
            (
                "b".into(),
                config("y", &[("c1", "https://b"), ("c2", "https://c")], &["y"]),
            ),
            ("c".into(), config("z", &[], &[])),
        ]);
        assert_eq!(loaded.config.current_context, "y");
        assert_eq!(loaded.config.clusters["c1"].server, "https://a");
        assert_eq!(loaded.cluster_origin["c1"], PathBuf::from("a"));
        assert_eq!(loaded.cluster_origin["c2"], PathBuf::from("b"));
        assert_eq!(loaded.context_origin["y"], PathBuf::from("b"));
    }

    #[test]
    fn absolute_cleans_like_go() {
        let cases = [
            ("/a/b/../c", "/a/c"),
            ("/a/./b/", "/a/b"),
            ("/../x", "/x"),
            ("/", "/"),
        ];
        for (input, want) in cases {
            assert_eq!(absolute(Path::new(input)), PathBuf::from(want));
        }
    }

    #[test]
    fn default_filename_rules() {
        let dir = std::env::temp_dir().join(format!("kubeconfig-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let existing = dir.join("exists");
        std::fs::write(&existing, "").unwrap();
        let missing = |n: &str| dir.join(n);
        let cases = [
            (Some(missing("e")), vec![existing.clone()], missing("e")),
            (None, vec![missing("only")], missing("only")),
            (
                None,
                vec![missing("m1"), existing.clone(), missing("m2")],
                existing.clone(),
            ),
            (None, vec![missing("m1"), missing("m2")], missing("m2")),
            (None, vec![], PathBuf::from("/home/x/.kube/config")),
        ];
        for (explicit, env_files, want) in cases {
            let paths = PathOptions {
                explicit,
                env_files,
                global_file: "/home/x/.kube/config".into(),
            };
            assert_eq!(paths.default_filename(), want);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
