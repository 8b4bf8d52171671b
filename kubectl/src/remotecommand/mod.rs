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
        .client()
        .send(request)
        .await
        .map_err(|err| anyhow::anyhow!("error dialing backend: {err}"))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let code = response.status().as_u16();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        let is_status = serde_json::from_slice::<serde_json::Value>(&body)
            .is_ok_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status"));
        if is_status {
            return Err(ApiError::from_response(code, &body).into());
        }
        anyhow::bail!(
            "unable to upgrade connection: {}",
            String::from_utf8_lossy(&body).trim()
        );
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
