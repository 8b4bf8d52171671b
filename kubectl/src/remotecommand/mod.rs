//! The streaming client shared by `exec`, `attach`, `port-forward` and `cp`: a SPDY upgrade
//! through the apiserver (see [`spdy`] for why SPDY), upstream's `v4.channel.k8s.io` stream
//! protocol for exec and attach, and the pod a `TYPE/NAME` argument stands for.

pub mod exec;
pub mod pods;
pub mod spdy;
pub mod tty;

use crate::errors::ApiError;
use crate::factory::Factory;
use http::{Method, Request, StatusCode, header};

/// The header carrying the stream protocols offered and the one chosen.
pub const PROTOCOL_HEADER: &str = "X-Stream-Protocol-Version";

/// POSTs `path` asking to upgrade to SPDY with one of `protocols`; on 101 returns the session
/// and the protocol the server chose.
pub async fn upgrade(
    factory: &Factory,
    path: &str,
    protocols: &[&str],
) -> anyhow::Result<(spdy::Session, String)> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "SPDY/3.1");
    for p in protocols {
        builder = builder.header(PROTOCOL_HEADER, *p);
    }
    let request = builder.body(kube::client::Body::empty())?;
    let mut response = factory
        .send_raw(request)
        .await
        .map_err(|err| anyhow::anyhow!("error dialing backend: {err}"))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let code = response.status().as_u16();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        return Err(upgrade_failure(code, &body));
    }
    let chosen = response
        .headers()
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let upgraded = hyper::upgrade::on(&mut response)
        .await
        .map_err(|err| anyhow::anyhow!("unable to upgrade connection: {err}"))?;
    let io = hyper_util::rt::TokioIo::new(upgraded);
    Ok((spdy::Session::start(io), chosen))
}

/// What upstream's SPDY client makes of a refused upgrade: the body decoded as a `Status`
/// when client-go's universal decoder takes it, which reads YAML too, so a runtime's refusal
/// passed on by the kubelet (`rpc error: code = X desc = Y`, a one-key map) is an empty
/// `Status`; otherwise the body's text.
fn upgrade_failure(code: u16, body: &[u8]) -> anyhow::Error {
    let is_status = serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status"));
    if is_status {
        return ApiError::from_response(code, body).into();
    }
    if let Ok(serde_yaml::Value::Mapping(map)) = serde_yaml::from_slice(body) {
        // A field of the wrong type fails Go's decoding, and the text is shown instead.
        let text = |key: &str| match map.get(key) {
            None | Some(serde_yaml::Value::Null) => Some(String::new()),
            Some(serde_yaml::Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        };
        if let (Some(reason), Some(message)) = (text("reason"), text("message")) {
            return ApiError {
                code,
                reason,
                message,
                invalid: None,
            }
            .into();
        }
    }
    anyhow::anyhow!(
        "unable to upgrade connection: {}",
        String::from_utf8_lossy(body).trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_upgrades_read_as_upstream() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"rpc error: code = InvalidArgument desc = tty and stderr cannot both be true\n",
                "Error from server: ",
            ),
            (
                b"container not found (\"c\")\n",
                "error: unable to upgrade connection: container not found (\"c\")",
            ),
            (
                b"error dialing: dial tcp 127.0.0.1:1: connect: connection refused",
                "error: unable to upgrade connection: error dialing: dial tcp 127.0.0.1:1: connect: connection refused",
            ),
            (
                br#"{"kind":"Status","message":"pods \"x\" not found","reason":"NotFound"}"#,
                "Error from server (NotFound): pods \"x\" not found",
            ),
        ];
        for (body, want) in cases {
            let got = crate::errors::render(&upgrade_failure(500, body));
            assert_eq!(got, *want, "{}", String::from_utf8_lossy(body));
        }
    }
}
