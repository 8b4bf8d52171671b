//! gRPC probes: one `grpc.health.v1.Health/Check` call over plaintext HTTP/2. The request and
//! response messages have one field each, so they are encoded by hand rather than generated.

use super::probes::Verdict;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::time::Duration;

/// `HealthCheckRequest{service}`, gRPC-framed (uncompressed flag + big-endian length).
fn encode_request(service: &str) -> Bytes {
    let mut msg = Vec::new();
    if !service.is_empty() {
        msg.push(0x0a); // field 1, length-delimited
        let mut len = service.len();
        while len >= 0x80 {
            msg.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        msg.push(len as u8);
        msg.extend_from_slice(service.as_bytes());
    }
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    framed.extend_from_slice(&msg);
    Bytes::from(framed)
}

/// The `status` of a framed `HealthCheckResponse` (0 when absent, as proto3 defaults).
fn decode_status(framed: &[u8]) -> Option<u64> {
    let msg = framed.get(5..)?;
    let mut i = 0;
    while i < msg.len() {
        let key = msg[i];
        i += 1;
        let mut value = 0u64;
        let mut shift = 0;
        match key & 7 {
            0 => loop {
                let b = *msg.get(i)?;
                i += 1;
                value |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            },
            2 => {
                let len = *msg.get(i)? as usize;
                i += 1 + len;
                continue;
            }
            _ => return None,
        }
        if key >> 3 == 1 {
            return Some(value);
        }
    }
    Some(0)
}

fn status_name(s: u64) -> &'static str {
    match s {
        0 => "UNKNOWN",
        1 => "SERVING",
        2 => "NOT_SERVING",
        3 => "SERVICE_UNKNOWN",
        _ => "UNRECOGNIZED",
    }
}

/// Checks `service` at host:port; every problem is a failure with upstream's wording.
pub async fn check(host: &str, port: u16, service: &str, timeout: Duration) -> Verdict {
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    match tokio::time::timeout(timeout, call(&addr, service)).await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => Verdict {
            success: false,
            warning: false,
            output: format!("error: health rpc probe failed: {e:#}"),
        },
        Err(_) => Verdict {
            success: false,
            warning: false,
            output: format!(
                "timeout: health rpc did not complete within {}s",
                timeout.as_secs()
            ),
        },
    }
}

async fn call(addr: &str, service: &str) -> anyhow::Result<Verdict> {
    let stream = match tokio::net::TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            return Ok(Verdict {
                success: false,
                warning: false,
                output: format!("timeout: failed to connect service {addr:?}: {e}"),
            });
        }
    };
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await?;
    let conn = tokio::spawn(conn);
    let req = http::Request::post(format!("http://{addr}/grpc.health.v1.Health/Check"))
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header("te", "trailers")
        .body(Full::new(encode_request(service)))?;
    let result = async {
        let resp = sender.send_request(req).await?;
        let (parts, body) = resp.into_parts();
        let collected = body.collect().await?;
        let trailers = collected.trailers().cloned().unwrap_or_default();
        let data = collected.to_bytes();
        // A trailers-only response carries grpc-status in the headers.
        let field = |k: &str| {
            trailers
                .get(k)
                .or_else(|| parts.headers.get(k))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let code = field("grpc-status").unwrap_or_else(|| "2".to_string());
        if code != "0" {
            let msg = field("grpc-message").unwrap_or_default();
            return Ok(Verdict {
                success: false,
                warning: false,
                output: format!(
                    "error: health rpc probe failed: rpc error: code = {code} desc = {msg}"
                ),
            });
        }
        let status = decode_status(&data).unwrap_or(0);
        Ok(if status == 1 {
            Verdict {
                success: true,
                warning: false,
                output: String::new(),
            }
        } else {
            Verdict {
                success: false,
                warning: false,
                output: format!(
                    "service unhealthy (responded with {:?})",
                    status_name(status)
                ),
            }
        })
    }
    .await;
    conn.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_encode_and_decode() {
        assert_eq!(&encode_request("")[..], &[0, 0, 0, 0, 0]);
        assert_eq!(
            &encode_request("ab")[..],
            &[0, 0, 0, 0, 4, 0x0a, 2, b'a', b'b']
        );
        assert_eq!(decode_status(&[0, 0, 0, 0, 2, 0x08, 1]), Some(1));
        assert_eq!(decode_status(&[0, 0, 0, 0, 0]), Some(0));
        assert_eq!(decode_status(&[0, 0, 0, 0, 2, 0x08, 2]), Some(2));
        assert_eq!(decode_status(&[0, 0]), None);
    }

    #[tokio::test]
    async fn refused_connections_fail() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let v = check("127.0.0.1", port, "", Duration::from_secs(1)).await;
        assert!(
            !v.success && v.output.contains("failed to connect"),
            "{v:?}"
        );
    }
}
