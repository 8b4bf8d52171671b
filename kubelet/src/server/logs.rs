//! `/containerLogs/{namespace}/{pod}/{container}`: which container attempt's log to read
//! (upstream's `validateContainerLogStatus`), then the CRI log file rendered, and followed.

use super::cri_log::{LogWriter, render, tail_offset};
use super::host::{HostInterface, RuntimeApi};
use super::http::{Body, BoxError, error, streaming, with_type};
use super::query::LogQuery;
use crate::container::{ContainerId, ContainerState, PodRuntimeStatus};
use bytes::Bytes;
use http::{Response, StatusCode};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// How often a followed log is checked for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(100);
/// How often a follower asks the runtime whether the container still runs.
const RUNNING_CHECK: Duration = Duration::from_secs(1);

pub async fn serve(
    host: &Arc<dyn HostInterface>,
    namespace: &str,
    pod_name: &str,
    container: &str,
    query: Option<&str>,
) -> Response<Body> {
    let options = match LogQuery::parse(query) {
        Ok(o) => o,
        Err(msg) => return error(StatusCode::BAD_REQUEST, msg),
    };
    let Some(pod) = host.pod_by_name(namespace, pod_name) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("pod {pod_name:?} does not exist"),
        );
    };
    if !spec_has_container(&pod, container) {
        return error(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {pod_name:?}"),
        );
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let runtime = host.runtime();
    let status = runtime
        .get_pod_status(&uid, pod_name, namespace)
        .await
        .unwrap_or_default();
    let api_status = host
        .pod_status(&uid)
        .or_else(|| pod.status.clone())
        .unwrap_or_default();
    let id = match choose_container(&api_status, &status, container, pod_name, options.previous) {
        Ok(id) => id,
        Err(msg) => return error(StatusCode::BAD_REQUEST, msg),
    };
    let Some(path) = log_path(host.as_ref(), &pod, &status, &id, container) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("failed to find the log of container {container:?} in pod {pod_name:?}"),
        );
    };
    let running = status
        .containers
        .iter()
        .any(|c| c.id == id && c.state == ContainerState::Running);
    let follow = options.follow && running && !options.previous;
    let since = options.since(jiff::Timestamp::now());
    let writer = LogWriter::new(
        since,
        options.timestamps,
        options.limit_bytes.and_then(|n| u64::try_from(n).ok()),
    );
    let tail = options.tail_lines.and_then(|n| u64::try_from(n).ok());
    // Opened before answering, so a missing file is an error status, not a cut stream.
    let file = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "failed to open log file {:?}: {e}",
                    path.display().to_string()
                ),
            );
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, BoxError>>(16);
    let follower = Follower {
        path,
        writer,
        tx,
        runtime,
        id,
        pod: (uid, pod_name.to_string(), namespace.to_string()),
    };
    tokio::spawn(follower.run(file, tail, follow));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    with_type(StatusCode::OK, "text/plain", streaming(stream))
}

fn spec_has_container(pod: &Pod, name: &str) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    spec.containers.iter().any(|c| c.name == name)
        || spec
            .init_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
}

/// The container attempt whose log to show: from the API status as upstream decides, or,
/// before the kubelet has written one, from the runtime's attempts (newest first).
pub fn choose_container(
    api: &k8s_openapi::api::core::v1::PodStatus,
    runtime: &PodRuntimeStatus,
    container: &str,
    pod: &str,
    previous: bool,
) -> Result<ContainerId, String> {
    let statuses = api
        .container_statuses
        .iter()
        .flatten()
        .chain(api.init_container_statuses.iter().flatten())
        .chain(api.ephemeral_container_statuses.iter().flatten());
    let found: Option<&ContainerStatus> = statuses.into_iter().find(|s| s.name == container);
    let Some(cs) = found else {
        let mut attempts = runtime.attempts(container);
        let chosen = if previous {
            attempts.nth(1)
        } else {
            attempts.next()
        };
        return chosen.map(|c| c.id.clone()).ok_or_else(|| {
            if previous {
                format!("previous terminated container {container:?} in pod {pod:?} not found")
            } else {
                format!("container {container:?} in pod {pod:?} is not available")
            }
        });
    };
    let parse = |id: Option<&String>| id.and_then(|s| ContainerId::parse(s));
    let state = cs.state.clone().unwrap_or_default();
    let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    let last_id = last.and_then(|t| parse(t.container_id.as_ref()));
    let terminated = || format!("container {container:?} in pod {pod:?} is terminated");
    if previous {
        return last_id.ok_or_else(|| {
            format!("previous terminated container {container:?} in pod {pod:?} not found")
        });
    }
    if state.running.is_some() {
        return parse(cs.container_id.as_ref())
            .or_else(|| runtime.attempts(container).next().map(|c| c.id.clone()))
            .ok_or_else(|| format!("container {container:?} in pod {pod:?} is not available"));
    }
    if let Some(t) = &state.terminated {
        return parse(t.container_id.as_ref())
            .or(last_id)
            .ok_or_else(terminated);
    }
    if last.is_some() {
        return last_id.ok_or_else(terminated);
    }
    let reason = state
        .waiting
        .and_then(|w| w.reason)
        .unwrap_or_else(|| "ContainerCreating".into());
    let why = match reason.as_str() {
        "ErrImagePull" => "image can't be pulled".to_string(),
        "ImagePullBackOff" => "trying and failing to pull image".to_string(),
        other => other.to_string(),
    };
    Err(format!(
        "container {container:?} in pod {pod:?} is waiting to start: {why}"
    ))
}

/// The runtime's log path of the attempt, or the conventional one under the pod logs dir.
fn log_path(
    host: &dyn HostInterface,
    pod: &Pod,
    status: &PodRuntimeStatus,
    id: &ContainerId,
    container: &str,
) -> Option<PathBuf> {
    if let Some(c) = status.containers.iter().find(|c| &c.id == id) {
        if !c.log_path.is_empty() {
            return Some(PathBuf::from(&c.log_path));
        }
        let dir = host.pod_logs_dir().join(format!(
            "{}_{}_{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.uid.as_deref().unwrap_or_default()
        ));
        return Some(dir.join(container).join(format!("{}.log", c.restart_count)));
    }
    None
}

/// Streams one log file to a response: the existing lines (after `tailLines`), then, when
/// following, new lines as they are written, reopening the path when the file is rotated,
/// until the container stops or the client goes away.
struct Follower {
    path: PathBuf,
    writer: LogWriter,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, BoxError>>,
    runtime: Arc<dyn RuntimeApi>,
    id: ContainerId,
    pod: (String, String, String),
}

impl Follower {
    async fn run(mut self, file: tokio::fs::File, tail: Option<u64>, follow: bool) {
        if let Err(err) = self.stream(file, tail, follow).await {
            let _ = self.tx.send(Err(err.into())).await;
        }
    }

    async fn stream(
        &mut self,
        mut file: tokio::fs::File,
        tail: Option<u64>,
        follow: bool,
    ) -> std::io::Result<()> {
        let mut data = Vec::new();
        file.read_to_end(&mut data).await?;
        let mut inode = file.metadata().await?.ino();
        let mut offset = data.len() as u64;
        let start = tail.map(|n| tail_offset(&data, n)).unwrap_or(0);
        let mut pending = data.split_off(start);
        if !self.emit(&mut pending).await {
            return Ok(());
        }
        if !follow {
            return Ok(());
        }
        let mut checked = Instant::now();
        loop {
            let mut chunk = Vec::new();
            file.read_to_end(&mut chunk).await?;
            if !chunk.is_empty() {
                offset += chunk.len() as u64;
                pending.extend_from_slice(&chunk);
                if !self.emit(&mut pending).await {
                    return Ok(());
                }
                continue;
            }
            if self.tx.is_closed() {
                return Ok(());
            }
            // Rotated (a new file at the path) or truncated: continue with what is there now.
            if let Some((ino, size)) = stat(&self.path).await
                && (ino != inode || size < offset)
            {
                file = tokio::fs::File::open(&self.path).await?;
                if ino == inode {
                    file.seek(std::io::SeekFrom::Start(0)).await?;
                }
                inode = ino;
                offset = 0;
                pending.clear();
                continue;
            }
            if checked.elapsed() >= RUNNING_CHECK {
                checked = Instant::now();
                if !self.still_running().await {
                    // One last read: lines written just before the exit.
                    let mut rest = Vec::new();
                    file.read_to_end(&mut rest).await?;
                    pending.extend_from_slice(&rest);
                    self.emit(&mut pending).await;
                    return Ok(());
                }
            }
            tokio::time::sleep(FOLLOW_POLL).await;
        }
    }

    /// Sends the complete lines of `pending` and keeps the incomplete rest; false when the
    /// client is gone or `limitBytes` is reached.
    async fn emit(&mut self, pending: &mut Vec<u8>) -> bool {
        let mut out = Vec::new();
        let (consumed, more) = render(pending, &mut self.writer, &mut out);
        pending.drain(..consumed);
        if !out.is_empty() && self.tx.send(Ok(Bytes::from(out))).await.is_err() {
            return false;
        }
        more
    }

    async fn still_running(&self) -> bool {
        let (uid, name, namespace) = &self.pod;
        match self.runtime.get_pod_status(uid, name, namespace).await {
            Ok(status) => status
                .containers
                .iter()
                .any(|c| c.id == self.id && c.state == ContainerState::Running),
            // A runtime hiccup must not cut a follower short.
            Err(_) => true,
        }
    }
}

async fn stat(path: &Path) -> Option<(u64, u64)> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.ino(), meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::RuntimeContainerStatus;
    use k8s_openapi::api::core::v1::{
        ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
        ContainerStateWaiting, PodStatus,
    };

    fn attempt(id: &str, state: ContainerState) -> RuntimeContainerStatus {
        RuntimeContainerStatus {
            id: ContainerId::parse(&format!("containerd://{id}")).unwrap(),
            name: "c".into(),
            state,
            created_at: 0,
            started_at: 0,
            finished_at: 0,
            exit_code: 0,
            image: String::new(),
            image_ref: String::new(),
            hash: 0,
            restart_count: 0,
            reason: String::new(),
            message: String::new(),
            log_path: String::new(),
        }
    }

    fn api(state: ApiState, id: Option<&str>, last: Option<&str>) -> PodStatus {
        PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "c".into(),
                container_id: id.map(|i| format!("containerd://{i}")),
                state: Some(state),
                last_state: last.map(|l| ApiState {
                    terminated: Some(ContainerStateTerminated {
                        container_id: Some(format!("containerd://{l}")),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn the_attempt_follows_upstream_rules() {
        let running = ApiState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        };
        let waiting = |r: &str| ApiState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(r.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let runtime = PodRuntimeStatus {
            containers: vec![
                attempt("new", ContainerState::Running),
                attempt("old", ContainerState::Exited),
            ],
            ..Default::default()
        };
        let cases: Vec<(&str, PodStatus, bool, Result<&str, &str>)> = vec![
            (
                "running",
                api(running.clone(), Some("new"), Some("old")),
                false,
                Ok("new"),
            ),
            (
                "previous",
                api(running.clone(), Some("new"), Some("old")),
                true,
                Ok("old"),
            ),
            (
                "no previous",
                api(running, Some("new"), None),
                true,
                Err("previous terminated container \"c\" in pod \"p\" not found"),
            ),
            (
                "crash loop shows the last run",
                api(waiting("CrashLoopBackOff"), None, Some("old")),
                false,
                Ok("old"),
            ),
            (
                "pulling",
                api(waiting("ErrImagePull"), None, None),
                false,
                Err("container \"c\" in pod \"p\" is waiting to start: image can't be pulled"),
            ),
            (
                "creating",
                api(waiting("ContainerCreating"), None, None),
                false,
                Err("container \"c\" in pod \"p\" is waiting to start: ContainerCreating"),
            ),
            ("no api status yet", PodStatus::default(), false, Ok("new")),
            (
                "no api status, previous",
                PodStatus::default(),
                true,
                Ok("old"),
            ),
        ];
        for (name, status, previous, want) in cases {
            let got = choose_container(&status, &runtime, "c", "p", previous);
            let want = want
                .map(|id| ContainerId::parse(&format!("containerd://{id}")).unwrap())
                .map_err(str::to_string);
            assert_eq!(got, want, "{name}");
        }
    }
}
