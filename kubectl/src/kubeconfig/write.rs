//! Writing changes back (upstream's `clientcmd.ModifyConfig`): each changed entry goes to the file
//! that defined it, or to the default file when it is new; a deleted entry leaves the first file
//! that has it; `current-context` goes to the explicit file, else to the first file that sets one.

use super::load::{Loaded, PathOptions, read_file};
use super::model::{AuthInfo, Cluster, Config};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Writes one file as kubectl does: v1, keys sorted, mode 0600 when created.
pub fn write_file(path: &Path, config: &Config) -> anyhow::Result<()> {
    let value = serde_json::to_value(config.to_file()).context("encoding the kubeconfig")?;
    // upstream writes kubeconfig files with the same go-yaml emitter as `-o yaml`.
    let text = crate::printers::yaml::to_go_yaml(&value);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the directory of {}", path.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// The files touched by one modification, read once and written after each change.
#[derive(Default)]
struct Files {
    seen: BTreeMap<PathBuf, Config>,
}

impl Files {
    fn get(&mut self, path: &Path) -> anyhow::Result<&mut Config> {
        if !self.seen.contains_key(path) {
            let config = Config::from(read_file(path)?);
            self.seen.insert(path.to_path_buf(), config);
        }
        self.seen
            .get_mut(path)
            .context("kubeconfig file cache lost an entry")
    }

    fn edit(&mut self, path: &Path, change: impl FnOnce(&mut Config)) -> anyhow::Result<()> {
        let config = self.get(path)?;
        change(config);
        let snapshot = config.clone();
        write_file(path, &snapshot)
    }
}

/// A path under `dir` becomes relative to it; others stay as they are (as upstream's
/// `RelativizePathWithNoBacksteps`).
fn relativize(dir: &Path, field: &mut Option<String>) {
    let Some(value) = field.as_deref() else {
        return;
    };
    let path = Path::new(value);
    if !path.is_absolute() {
        return;
    }
    let dir = super::load::absolute(dir);
    if let Ok(rest) = path.strip_prefix(&dir) {
        *field = Some(rest.to_string_lossy().into_owned());
    }
}

/// A relative path read from a file means relative to that file's directory; a rewritten entry
/// carries it absolute until `relativize` shortens it again (so `../x` comes back absolute, as
/// upstream's resolve-then-relativize round trip does).
fn resolve(dir: &Path, field: &mut Option<String>) {
    if let Some(value) = field
        .as_deref()
        .filter(|v| !v.is_empty() && !Path::new(v).is_absolute())
    {
        *field = Some(
            super::load::absolute(&dir.join(value))
                .display()
                .to_string(),
        );
    }
}

fn relativize_cluster(dir: &Path, cluster: &mut Cluster) {
    relativize(dir, &mut cluster.certificate_authority);
}

fn relativize_auth_info(dir: &Path, user: &mut AuthInfo) {
    relativize(dir, &mut user.client_certificate);
    relativize(dir, &mut user.client_key);
    relativize(dir, &mut user.token_file);
}

/// `<file>.lock` files held while the chain is rewritten, so two kubectls cannot interleave
/// their writes (upstream's lock files: created exclusively, removed when done).
struct Locks(Vec<PathBuf>);

impl Locks {
    fn take(files: &[PathBuf]) -> anyhow::Result<Self> {
        let mut locks = Locks(Vec::new());
        for file in files {
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating the directory of {}", file.display()))?;
            }
            let mut lock = file.clone().into_os_string();
            lock.push(".lock");
            let lock = PathBuf::from(lock);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(_) => locks.0.push(lock),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    anyhow::bail!("open {}: file exists", lock.display())
                }
                Err(err) => return Err(err).with_context(|| format!("open {}", lock.display())),
            }
        }
        Ok(locks)
    }
}

impl Drop for Locks {
    fn drop(&mut self) {
        for lock in &self.0 {
            let _ = std::fs::remove_file(lock);
        }
    }
}

/// Persists the difference between `starting` and `new`.
pub fn modify_config(paths: &PathOptions, starting: &Loaded, new: &Config) -> anyhow::Result<()> {
    let _locks = Locks::take(&paths.precedence())?;
    let old = &starting.config;
    let mut files = Files::default();
    if old.current_context != new.current_context {
        write_current_context(paths, &mut files, &new.current_context)?;
    }
    if old.preferences != new.preferences {
        let preferences = new.preferences.clone();
        files.edit(&paths.default_filename(), |c| c.preferences = preferences)?;
    }
    let destination =
        |origin: Option<&PathBuf>| origin.cloned().unwrap_or_else(|| paths.default_filename());
    for (name, cluster) in &new.clusters {
        if old.clusters.get(name) != Some(cluster) {
            let origin = starting.cluster_origin.get(name);
            let file = destination(origin);
            let mut cluster = cluster.clone();
            if origin.is_some() {
                resolve(
                    &Loaded::base_dir(origin),
                    &mut cluster.certificate_authority,
                );
            }
            relativize_cluster(&Loaded::base_dir(Some(&file)), &mut cluster);
            files.edit(&file, |c| {
                c.clusters.insert(name.clone(), cluster);
            })?;
        }
    }
    for (name, context) in &new.contexts {
        if old.contexts.get(name) != Some(context) {
            let file = destination(starting.context_origin.get(name));
            files.edit(&file, |c| {
                c.contexts.insert(name.clone(), context.clone());
            })?;
        }
    }
    for (name, user) in &new.auth_infos {
        if old.auth_infos.get(name) != Some(user) {
            let origin = starting.auth_info_origin.get(name);
            let file = destination(origin);
            let mut user = user.clone();
            if origin.is_some() {
                let dir = Loaded::base_dir(origin);
                resolve(&dir, &mut user.client_certificate);
                resolve(&dir, &mut user.client_key);
                resolve(&dir, &mut user.token_file);
            }
            relativize_auth_info(&Loaded::base_dir(Some(&file)), &mut user);
            files.edit(&file, |c| {
                c.auth_infos.insert(name.clone(), user);
            })?;
        }
    }
    for name in old
        .clusters
        .keys()
        .filter(|n| !new.clusters.contains_key(*n))
    {
        delete_first(paths, &mut files, |c| c.clusters.remove(name).is_some())?;
    }
    for name in old
        .contexts
        .keys()
        .filter(|n| !new.contexts.contains_key(*n))
    {
        delete_first(paths, &mut files, |c| c.contexts.remove(name).is_some())?;
    }
    for name in old
        .auth_infos
        .keys()
        .filter(|n| !new.auth_infos.contains_key(*n))
    {
        delete_first(paths, &mut files, |c| c.auth_infos.remove(name).is_some())?;
    }
    Ok(())
}

/// Removes an entry from the first file of the chain that has it.
fn delete_first(
    paths: &PathOptions,
    files: &mut Files,
    mut remove: impl FnMut(&mut Config) -> bool,
) -> anyhow::Result<()> {
    for path in paths.precedence() {
        if !path.exists() {
            continue;
        }
        let config = files.get(&path)?;
        if remove(config) {
            let snapshot = config.clone();
            return write_file(&path, &snapshot);
        }
    }
    Ok(())
}

fn write_current_context(paths: &PathOptions, files: &mut Files, name: &str) -> anyhow::Result<()> {
    if let Some(explicit) = &paths.explicit {
        return files.edit(explicit, |c| c.current_context = name.to_string());
    }
    if !name.is_empty() {
        for path in paths.precedence() {
            if !files.get(&path)?.current_context.is_empty() {
                return files.edit(&path, |c| c.current_context = name.to_string());
            }
        }
    }
    files.edit(&paths.default_filename(), |c| {
        c.current_context = name.to_string()
    })
}
