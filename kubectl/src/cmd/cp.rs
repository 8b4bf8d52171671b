//! `kubectl cp`: files to and from containers through `tar` run in the container over exec,
//! as upstream does (so the container image must have `tar`).

mod tar;

use super::exec::conclude;
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::remotecommand::{self, exec, pods};
use clap::Args;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Flags of `kubectl cp`.
#[derive(Debug, Clone, Args)]
pub struct CpArgs {
    /// <file-spec-src> <file-spec-dest>
    pub args: Vec<String>,
    /// Container name. If omitted, use the kubectl.kubernetes.io/default-container annotation
    /// for selecting the container to be attached or the first container in the pod will be
    /// chosen
    #[arg(short = 'c', long, value_name = "string")]
    pub container: Option<String>,
    /// The copied file/directory's ownership and permissions will not be preserved in the
    /// container
    #[arg(long)]
    pub no_preserve: bool,
    /// Set number of retries to complete a copy operation from a container. Specify 0 to
    /// disable or any negative value for infinite retrying. The default is 0 (no retry).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "int"
    )]
    pub retries: i64,
}

/// `[[namespace/]pod:]path`.
#[derive(Debug, PartialEq)]
struct Spec {
    namespace: Option<String>,
    pod: Option<String>,
    path: String,
}

fn parse_spec(arg: &str) -> anyhow::Result<Spec> {
    let bad =
        || anyhow::anyhow!("filespec must match the canonical format: [[namespace/]pod:]file/path");
    match arg.find(':') {
        Some(0) => Err(bad()),
        None => Ok(Spec {
            namespace: None,
            pod: None,
            path: arg.to_owned(),
        }),
        Some(i) => {
            let (pod, path) = (&arg[..i], &arg[i + 1..]);
            let pieces: Vec<&str> = pod.split('/').collect();
            match pieces.as_slice() {
                [p] => Ok(Spec {
                    namespace: None,
                    pod: Some((*p).to_owned()),
                    path: path.to_owned(),
                }),
                [ns, p] => Ok(Spec {
                    namespace: Some((*ns).to_owned()),
                    pod: Some((*p).to_owned()),
                    path: path.to_owned(),
                }),
                _ => Err(bad()),
            }
        }
    }
}

pub async fn run(global: &GlobalOptions, args: &CpArgs) -> anyhow::Result<()> {
    let [src, dest] = args.args.as_slice() else {
        anyhow::bail!("source and destination are required");
    };
    let (src, dest) = (parse_spec(src)?, parse_spec(dest)?);
    if src.path.is_empty() || dest.path.is_empty() {
        anyhow::bail!("filepath can not be empty");
    }
    match (&src.pod, &dest.pod) {
        (None, None) => anyhow::bail!("one of src or dest must be a remote file specification"),
        (Some(_), Some(_)) => {
            anyhow::bail!("one of src or dest must be a local file specification")
        }
        _ => {}
    }
    let mut global = global.clone();
    if let Some(ns) = src.namespace.clone().or(dest.namespace.clone()) {
        global.namespace = Some(ns);
    }
    let factory = Factory::new(&global).await?;
    let remote = if src.pod.is_some() { &src } else { &dest };
    let pod = pods::pod_for(
        &factory,
        remote.pod.as_deref().unwrap_or(""),
        std::time::Duration::from_secs(60),
    )
    .await?;
    let container = pods::default_container(&pod, args.container.as_deref(), false)
        .or_else(|e| args.container.clone().ok_or(e))?;
    let target = Target {
        factory: &factory,
        pod: pod["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        container,
    };
    if dest.pod.is_some() {
        copy_to_pod(&target, &src.path, &dest.path, args.no_preserve).await
    } else {
        copy_from_pod(&target, &src.path, Path::new(&dest.path)).await
    }
}

struct Target<'a> {
    factory: &'a Factory,
    pod: String,
    container: String,
}

impl Target<'_> {
    /// Runs `command` in the container with `stdin`; returns the outcome and its stdout
    /// (and its stderr, when `keep_stderr`; else stderr is passed through).
    async fn exec(
        &self,
        command: &[&str],
        stdin: Option<Vec<u8>>,
        keep_stderr: bool,
    ) -> anyhow::Result<(exec::Outcome, Vec<u8>, Vec<u8>)> {
        let mut query: Vec<(String, String)> = command
            .iter()
            .map(|c| ("command".to_owned(), (*c).to_owned()))
            .collect();
        query.push(("container".to_owned(), self.container.clone()));
        if stdin.is_some() {
            query.push(("stdin".to_owned(), "true".to_owned()));
        }
        query.push(("stdout".to_owned(), "true".to_owned()));
        query.push(("stderr".to_owned(), "true".to_owned()));
        let path = crate::resource::with_query(
            &format!(
                "/api/v1/namespaces/{}/pods/{}/exec",
                self.factory.namespace(),
                self.pod
            ),
            &query,
        );
        let (session, protocol) =
            remotecommand::upgrade(self.factory, &path, exec::PROTOCOLS).await?;
        let out = Collect::default();
        let err = Collect::default();
        let streams = exec::Streams {
            stdin: stdin.map(|b| {
                Box::new(std::io::Cursor::new(b)) as Box<dyn tokio::io::AsyncRead + Unpin + Send>
            }),
            stdout: Some(Box::new(out.clone())),
            stderr: Some(if keep_stderr {
                Box::new(err.clone())
            } else {
                Box::new(tokio::io::stderr())
            }),
            resize: None,
        };
        let outcome = exec::stream(&session, &protocol, streams).await;
        let take =
            |c: &Collect| std::mem::take(&mut *c.0.lock().unwrap_or_else(|e| e.into_inner()));
        Ok((outcome, take(&out), take(&err)))
    }
}

async fn copy_to_pod(
    t: &Target<'_>,
    src: &str,
    dest: &str,
    no_preserve: bool,
) -> anyhow::Result<()> {
    let src_path = Path::new(src);
    if std::fs::symlink_metadata(src_path).is_err() {
        anyhow::bail!("{src} doesn't exist in local filesystem");
    }
    let mut dest = clean_remote(dest);
    let (is_dir, _, _) = t.exec(&["test", "-d", &dest], None, false).await?;
    let base = src_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".".to_owned());
    if is_dir == exec::Outcome::Success {
        dest = format!("{}/{base}", dest.trim_end_matches('/'));
    }
    let (dir, top) = match dest.rsplit_once('/') {
        Some(("", top)) => ("/".to_owned(), top.to_owned()),
        Some((dir, top)) => (dir.to_owned(), top.to_owned()),
        None => (String::new(), dest.clone()),
    };
    let mut archive = Vec::new();
    tar::archive(src_path, &top, &mut archive)?;
    tar::finish(&mut archive);
    let mut command = vec!["tar"];
    if no_preserve {
        command.extend(["--no-same-permissions", "--no-same-owner"]);
    }
    command.extend(["-xmf", "-"]);
    if !dir.is_empty() {
        command.extend(["-C", &dir]);
    }
    let (outcome, out, _) = t.exec(&command, Some(archive), false).await?;
    use std::io::Write;
    std::io::stdout().write_all(&out)?;
    conclude(outcome, false)
}

async fn copy_from_pod(t: &Target<'_>, src: &str, dest: &Path) -> anyhow::Result<()> {
    // Upstream sends tar's stderr to stdout and ends when the archive does, without waiting
    // for tar's exit status: a missing source copies nothing and succeeds (whether tar's
    // complaint is printed is a race there; here it always is).
    let (_, bytes, tar_stderr) = t.exec(&["tar", "cf", "-", src], None, true).await?;
    let prefix = strip_shortcuts(clean_remote(src).trim_start_matches('/'));
    let entries = tar::read_all(&bytes[..])?;
    {
        use std::io::Write;
        std::io::stdout().write_all(&tar_stderr)?;
    }
    for entry in entries {
        let Some(rest) = entry.name.strip_prefix(&prefix) else {
            anyhow::bail!("tar contents corrupted");
        };
        let target = join_relative(dest, rest);
        let Some(target) = target else {
            eprintln!(
                "warning: file {:?} is outside target destination, skipping",
                dest.join(rest)
            );
            continue;
        };
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        match entry.kind {
            tar::Kind::Dir => std::fs::create_dir_all(&target)?,
            tar::Kind::Symlink => eprintln!(
                "warning: skipping symlink: {:?} -> {:?}",
                target.display().to_string(),
                entry.link
            ),
            _ => std::fs::write(&target, &entry.data)?,
        }
    }
    Ok(())
}

/// `dest` joined with the archive-relative `rest`, unless that would leave `dest`.
fn join_relative(dest: &Path, rest: &str) -> Option<PathBuf> {
    let mut out = dest.to_path_buf();
    for part in Path::new(rest.trim_start_matches('/')).components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// A remote path with `.`/`..` and repeated slashes folded, as upstream's `path.Clean`.
fn clean_remote(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// Upstream's `stripPathShortcuts`: leading `../` and `./` removed.
fn strip_shortcuts(path: &str) -> String {
    let mut p = path;
    loop {
        if let Some(rest) = p.strip_prefix("../") {
            p = rest;
        } else if let Some(rest) = p.strip_prefix("./") {
            p = rest;
        } else if p == ".." || p == "." {
            return String::new();
        } else {
            return p.to_owned();
        }
    }
}

/// An `AsyncWrite` into a shared buffer (the exec's stdout, read after it ends).
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<u8>>>);

impl tokio::io::AsyncWrite for Collect {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let spec = |ns: Option<&str>, pod: Option<&str>, path: &str| Spec {
            namespace: ns.map(str::to_owned),
            pod: pod.map(str::to_owned),
            path: path.to_owned(),
        };
        assert_eq!(parse_spec("/tmp/x").unwrap(), spec(None, None, "/tmp/x"));
        assert_eq!(
            parse_spec("p:/tmp/x").unwrap(),
            spec(None, Some("p"), "/tmp/x")
        );
        assert_eq!(
            parse_spec("n/p:x").unwrap(),
            spec(Some("n"), Some("p"), "x")
        );
        assert!(parse_spec(":x").is_err());
        assert!(parse_spec("a/b/c:x").is_err());
    }

    #[test]
    fn paths() {
        for (input, want) in [
            ("/tmp//a/./b/", "/tmp/a/b"),
            ("a/../..", ".."),
            ("/..", "/"),
            ("", "."),
        ] {
            assert_eq!(clean_remote(input), want, "{input}");
        }
        assert_eq!(strip_shortcuts("../../a/b"), "a/b");
        assert_eq!(
            join_relative(Path::new("out"), "/sub/b.txt"),
            Some(PathBuf::from("out/sub/b.txt"))
        );
        assert_eq!(join_relative(Path::new("out"), "/../x"), None);
        assert_eq!(
            join_relative(Path::new("out"), ""),
            Some(PathBuf::from("out"))
        );
    }
}
