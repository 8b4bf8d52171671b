//! Watches: a stream of `{"type": ..., "object": ...}` lines served from the resource's watch
//! cache, with bookmarks, `sendInitialEvents`, Table conversion and the server's timeout.

use super::encode::convert_with;
use super::handler::Call;
use crate::http::negotiation::{Conversion, Encoding, EndpointRestrictions};
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use crate::registry::keys;
use crate::storage::backend::StorageError;
use crate::storage::cacher::{Filter, WatchEvent, WatchStart};
use api_types::registry::ResourceInfo;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use rand::Rng;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Upstream's `--min-request-timeout`: watches without timeoutSeconds end after a random time
/// between this and twice this, so reconnects spread out.
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// Serves a watch of the call's resource (and namespace, and name when given).
pub async fn serve(call: &Call<'_>) -> Result<Response<Body>, ApiError> {
    let info = call.info;
    let options = call.query.list_options(info)?;
    let mut media = call.media(EndpointRestrictions::RESOURCE)?;
    // Watch streams are JSON lines whatever the Accept header's encoding.
    media.encoding = Encoding::Json;
    let include_object = call.include_object()?;
    // A custom resource's Tables use its CRD's printer columns.
    let custom = call.entry.custom.clone();
    let send_initial = call.query.get("sendInitialEvents") == Some("true");
    let start = match options.resource_version.as_deref() {
        None | Some("") | Some("0") => WatchStart::InitialState {
            end_bookmark: send_initial,
        },
        Some(rv) => {
            let revision = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
            if send_initial {
                WatchStart::InitialState { end_bookmark: true }
            } else {
                WatchStart::After(revision)
            }
        }
    };
    let store = call.store.clone();
    let name = call.name().to_string();
    let filter: Filter = Arc::new(move |object: &Value| {
        (name.is_empty() || object["metadata"]["name"] == name.as_str())
            && store.selected(object, &options)
    });
    let bookmarks = call.query.flag("allowWatchBookmarks");
    let prefix = keys::namespace_prefix(info, call.namespace);
    let mut events = call
        .entry
        .cacher
        .watch(&prefix, start, filter, bookmarks)
        .await
        .map_err(|err| match err {
            StorageError::Compacted {
                requested,
                compacted,
            } => ApiError::too_old_resource_version(requested, compacted),
            other => ApiError::from_storage(&other, info.group, info.plural, ""),
        })?;
    let timeout = match call.query.timeout_seconds()? {
        Some(seconds) => Duration::from_secs(seconds),
        None => {
            let base = MIN_REQUEST_TIMEOUT.as_secs();
            Duration::from_secs(rand::rng().random_range(base..base * 2))
        }
    };
    let api_version = info.api_version();
    let kind = info.kind;
    let mut first_table = true;
    let stream = async_stream(move |tx| async move {
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            let event = tokio::select! {
                _ = &mut deadline => break,
                event = events.recv() => match event {
                    Some(event) => event,
                    None => break,
                },
            };
            // The common case, a built-in object as it is, is written straight from the
            // cache's shared object: copying its tree into the line first cost as much as
            // encoding it.
            if custom.is_none() && matches!(media.conversion, Conversion::None) {
                let line = match &event {
                    WatchEvent::Added(o) => Some(watch_line("ADDED", o)),
                    WatchEvent::Modified(o) => Some(watch_line("MODIFIED", o)),
                    WatchEvent::Deleted(o) => Some(watch_line("DELETED", o)),
                    _ => None,
                };
                if let Some(line) = line {
                    if tx.send(line).await.is_err() {
                        break;
                    }
                    continue;
                }
            }
            let (kind_name, object) = match event {
                WatchEvent::Added(o) => ("ADDED", served(&custom, info, &o).await),
                WatchEvent::Modified(o) => ("MODIFIED", served(&custom, info, &o).await),
                WatchEvent::Deleted(o) => ("DELETED", served(&custom, info, &o).await),
                WatchEvent::Bookmark(rv) => {
                    ("BOOKMARK", Ok(bookmark(&api_version, kind, rv, false)))
                }
                WatchEvent::InitialEventsEnd(rv) => {
                    ("BOOKMARK", Ok(bookmark(&api_version, kind, rv, true)))
                }
                WatchEvent::Error(err) => {
                    let status = match err {
                        StorageError::Compacted {
                            requested,
                            compacted,
                        } => ApiError::too_old_resource_version(requested, compacted),
                        other => ApiError::from_storage(&other, "", "", ""),
                    };
                    ("ERROR", Ok(status.to_json()))
                }
            };
            // An object the conversion webhook could not convert ends the watch with the
            // error, so the client sees why and watches again.
            let (kind_name, object, last) = match object {
                Ok(object) => (kind_name, object, false),
                Err(err) => ("ERROR", err.to_json(), true),
            };
            let object = match (kind_name, media.conversion) {
                ("BOOKMARK" | "ERROR", _) => object,
                (_, Conversion::Table { .. }) => {
                    let mut table = convert_with(
                        info,
                        object,
                        None,
                        &media,
                        include_object,
                        custom.as_deref().map(|c| &*c.printer),
                    );
                    // Columns once, as upstream: later events carry rows only.
                    if !first_table {
                        table["columnDefinitions"] = Value::Null;
                    }
                    first_table = false;
                    table
                }
                _ => convert_with(
                    info,
                    object,
                    None,
                    &media,
                    include_object,
                    custom.as_deref().map(|c| &*c.printer),
                ),
            };
            let mut line = serde_json::to_vec(&json!({"type": kind_name, "object": object}))
                .unwrap_or_default();
            line.push(b'\n');
            if tx.send(Bytes::from(line)).await.is_err() || last {
                break;
            }
        }
    });
    let body = StreamBody::new(stream.map(|chunk| Ok::<_, BoxError>(Frame::data(chunk))));
    let mut response = Response::new(BodyExt::boxed_unsync(body));
    *response.status_mut() = StatusCode::OK;
    let content_type = match media.conversion {
        Conversion::None => "application/json".to_string(),
        _ => media.content_type(),
    };
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response.headers_mut().insert(
        header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
    Ok(response)
}

/// One line of a watch stream, `{"object": ..., "type": ...}` (the order a `json!` map gives).
#[derive(serde::Serialize)]
struct WatchLine<'a> {
    object: &'a Value,
    #[serde(rename = "type")]
    kind: &'a str,
}

fn watch_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&WatchLine { object, kind }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// An event's object as the watched version serves it (custom resources converted and
/// defaulted; built-in ones as they are).
async fn served(
    custom: &Option<Arc<crate::crd::CustomResource>>,
    info: &ResourceInfo,
    object: &Value,
) -> Result<Value, ApiError> {
    match custom {
        Some(custom) => custom.serve(info, object.clone()).await,
        None => Ok(object.clone()),
    }
}

/// A bookmark event's object: the kind with only a resourceVersion (and the initial-events-end
/// annotation for watch-list).
fn bookmark(api_version: &str, kind: &str, revision: i64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": kind, "apiVersion": api_version, "metadata": metadata})
}

/// A stream fed by a task: the task ends when the receiver is dropped (the client went away).
fn async_stream<F, Fut>(task: F) -> impl futures::Stream<Item = Bytes> + Send
where
    F: FnOnce(tokio::sync::mpsc::Sender<Bytes>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(task(tx));
    tokio_stream_from(rx)
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Bytes>,
) -> impl futures::Stream<Item = Bytes> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct encoding gives the bytes the `json!` line gave.
    #[test]
    fn watch_line_matches_the_json_map() {
        let object = json!({"kind": "Pod", "metadata": {"name": "a"}, "spec": {"x": [1, 2.5]}});
        let mut expected =
            serde_json::to_vec(&json!({"type": "MODIFIED", "object": object})).unwrap();
        expected.push(b'\n');
        assert_eq!(watch_line("MODIFIED", &object), Bytes::from(expected));
    }
}
