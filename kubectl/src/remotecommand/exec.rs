//! Upstream's `v4.channel.k8s.io` remote command protocol over a SPDY session: one stream per
//! standard stream plus `error` (the final `Status`) and `resize` (terminal sizes as JSON).

use super::spdy::Session;
use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The protocols offered, newest first, as upstream's SPDY executor offers them.
pub const PROTOCOLS: &[&str] = &[
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// How a remote command ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Success,
    /// The command exited with this code.
    Exit(i32),
    /// The server's message for any other failure.
    Failed(String),
}

/// The local ends of the streams; `None` means the stream is not requested.
pub struct Streams {
    pub stdin: Option<Box<dyn AsyncRead + Unpin + Send>>,
    pub stdout: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    pub stderr: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    /// Terminal sizes `(width, height)` to send, when a TTY was requested.
    pub resize: Option<mpsc::UnboundedReceiver<(u16, u16)>>,
}

/// Runs the protocol until the command has ended and its output is written.
pub async fn stream(session: &Session, protocol: &str, streams: Streams) -> Outcome {
    let (_, mut error) = session.open(&[("streamType", "error")]);
    if let Some(mut input) = streams.stdin {
        let (id, _) = session.open(&[("streamType", "stdin")]);
        let session = session.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 32 * 1024];
            loop {
                match input.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if !session.write(id, &buf[..n]) {
                            return;
                        }
                    }
                }
            }
            session.close(id);
        });
    }
    let mut copies = Vec::new();
    for (kind, out) in [("stdout", streams.stdout), ("stderr", streams.stderr)] {
        if let Some(mut out) = out {
            let (_, mut rx) = session.open(&[("streamType", kind)]);
            copies.push(tokio::spawn(async move {
                while let Some(chunk) = rx.recv().await {
                    if out.write_all(&chunk).await.is_err() {
                        break;
                    }
                    let _ = out.flush().await;
                }
            }));
        }
    }
    if let Some(mut sizes) = streams.resize {
        let (id, _) = session.open(&[("streamType", "resize")]);
        let session = session.clone();
        tokio::spawn(async move {
            while let Some((width, height)) = sizes.recv().await {
                let msg = serde_json::json!({"Width": width, "Height": height}).to_string();
                if !session.write(id, msg.as_bytes()) {
                    break;
                }
            }
        });
    }
    let mut status = Vec::new();
    while let Some(chunk) = error.recv().await {
        status.extend_from_slice(&chunk);
    }
    for copy in copies {
        let _ = copy.await;
    }
    outcome(protocol, &Bytes::from(status))
}

/// Reads the error stream: a `Status` in v4, plain text before.
pub fn outcome(protocol: &str, bytes: &[u8]) -> Outcome {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Outcome::Success;
    }
    if protocol != "v4.channel.k8s.io" {
        return Outcome::Failed(String::from_utf8_lossy(bytes).trim().to_owned());
    }
    let Ok(status) = serde_json::from_slice::<Value>(bytes) else {
        return Outcome::Failed(format!(
            "error stream protocol error: {}",
            String::from_utf8_lossy(bytes).trim()
        ));
    };
    match status.get("status").and_then(Value::as_str) {
        Some("Success") => Outcome::Success,
        Some("Failure") => {
            if status.get("reason").and_then(Value::as_str) == Some("NonZeroExitCode") {
                let code = status
                    .pointer("/details/causes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|c| c.get("reason").and_then(Value::as_str) == Some("ExitCode"))
                    .and_then(|c| c.get("message")?.as_str()?.parse().ok());
                return match code {
                    Some(code) => Outcome::Exit(code),
                    None => Outcome::Failed(
                        "error stream protocol error: invalid exit code value".to_owned(),
                    ),
                };
            }
            Outcome::Failed(
                status
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            )
        }
        _ => Outcome::Failed("error stream protocol error: unknown error".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stream_outcomes() {
        let v4 = "v4.channel.k8s.io";
        let cases: &[(&str, &str, Outcome)] = &[
            (v4, "", Outcome::Success),
            (
                v4,
                r#"{"metadata":{},"status":"Success"}"#,
                Outcome::Success,
            ),
            (
                v4,
                r#"{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#,
                Outcome::Exit(3),
            ),
            (
                v4,
                r#"{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[]}}"#,
                Outcome::Failed("error stream protocol error: invalid exit code value".into()),
            ),
            (
                v4,
                r#"{"status":"Failure","message":"exec: \"nope\": not found"}"#,
                Outcome::Failed("exec: \"nope\": not found".into()),
            ),
            (
                v4,
                r#"{"status":"Weird"}"#,
                Outcome::Failed("error stream protocol error: unknown error".into()),
            ),
            (
                "v2.channel.k8s.io",
                "boom\n",
                Outcome::Failed("boom".into()),
            ),
        ];
        for (protocol, body, want) in cases {
            assert_eq!(&outcome(protocol, body.as_bytes()), want, "{body}");
        }
    }
}
