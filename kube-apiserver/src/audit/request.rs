//! A request's event, started from what the request path knows about it (upstream's
//! `LogRequestMetadata`), and the bodies recorded into it.

use std::net::{IpAddr, SocketAddr};

use http::{HeaderMap, Method, Uri, header};
use serde_json::Value;

use super::context::AuditId;
use super::event::{Event, EventUser, ObjectReference, strip_managed_fields};
use super::policy::{Level, RequestAuditConfig, Stage};
use crate::http::auth::user::UserInfo;
use crate::http::request_info::RequestInfo;

const MAX_USER_AGENT_LENGTH: usize = 1024;
const USER_AGENT_TRUNCATE_SUFFIX: &str = "...TRUNCATED";

/// What an event is started from.
pub struct RequestFacts<'a> {
    /// The ID and arrival time.
    pub id: &'a AuditId,
    /// The method (the verb of a request without request info).
    pub method: &'a Method,
    /// The URI as sent.
    pub uri: &'a Uri,
    /// The headers (user agent, forwarding headers).
    pub headers: &'a HeaderMap,
    /// The peer's address, when the server knows it.
    pub remote: Option<SocketAddr>,
    /// What the request is about.
    pub info: Option<&'a RequestInfo>,
    /// Who authenticated (None: authentication failed).
    pub user: Option<&'a UserInfo>,
    /// Who the request acts as, when impersonating.
    pub impersonated: Option<&'a UserInfo>,
}

/// A new event at `RequestReceived`.
pub fn new_event(level: Level, facts: &RequestFacts<'_>) -> Event {
    let verb = match facts.info {
        Some(info) => info.verb.clone(),
        None => facts.method.as_str().to_ascii_lowercase(),
    };
    Event {
        kind: "Event",
        api_version: super::policy::API_VERSION,
        level,
        audit_id: facts.id.id.to_string(),
        stage: Stage::RequestReceived,
        request_uri: facts.uri.path_and_query().map_or_else(
            || facts.uri.path().to_string(),
            |pq| pq.as_str().to_string(),
        ),
        verb,
        user: facts.user.map(EventUser::from).unwrap_or_default(),
        impersonated_user: facts.impersonated.map(EventUser::from),
        source_ips: source_ips(facts.headers, facts.remote),
        user_agent: user_agent(facts.headers),
        object_ref: facts.info.and_then(ObjectReference::of),
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: facts.id.received,
        stage_timestamp: facts.id.received,
        annotations: Default::default(),
    }
}

/// Upstream's `SourceIPs`: the `X-Forwarded-For` chain, then `X-Real-Ip`, then the peer,
/// each once.
pub fn source_ips(headers: &HeaderMap, remote: Option<SocketAddr>) -> Vec<String> {
    let mut ips: Vec<IpAddr> = headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .filter_map(|part| part.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let real_ip = headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<IpAddr>().ok());
    for ip in real_ip.into_iter().chain(remote.map(|r| r.ip())) {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    ips.iter().map(IpAddr::to_string).collect()
}

fn user_agent(headers: &HeaderMap) -> String {
    let ua = headers
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if ua.len() <= MAX_USER_AGENT_LENGTH {
        return ua;
    }
    let mut cut = MAX_USER_AGENT_LENGTH;
    while !ua.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{USER_AGENT_TRUNCATE_SUFFIX}", &ua[..cut])
}

/// Whether a request's body is worth copying at `level`: the name of a create or update
/// completes the object reference from Metadata on, and writes' bodies are recorded from
/// Request on.
pub fn wants_request_body(level: Level, verb: &str) -> bool {
    match verb {
        "create" | "update" => level >= Level::Metadata,
        "patch" | "delete" | "deletecollection" => level >= Level::Request,
        _ => false,
    }
}

/// Decodes a body as JSON, YAML or Kubernetes protobuf by its content type.
pub fn decode_body(bytes: &[u8], content_type: Option<&str>) -> Option<Value> {
    let media = content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    if media.ends_with("yaml") {
        crate::http::body::decode_yaml(bytes).ok()
    } else if media == "application/vnd.kubernetes.protobuf" {
        crate::http::protobuf::decode_protobuf(bytes).ok()
    } else {
        serde_json::from_slice(bytes).ok()
    }
}

/// Records the request body into `event` as upstream's `LogRequestObject` does.
pub fn record_request_body(event: &mut Event, config: &RequestAuditConfig, mut body: Value) {
    if matches!(event.verb.as_str(), "create" | "update")
        && let Some(object_ref) = &mut event.object_ref
    {
        object_ref.complete_from(&body);
    }
    if config.level >= Level::Request {
        if config.omit_managed_fields {
            strip_managed_fields(&mut body);
        }
        event.request_object = Some(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ips_as_upstream() {
        let mut h = HeaderMap::new();
        let remote: SocketAddr = "10.0.0.9:5555".parse().expect("addr");
        assert_eq!(source_ips(&h, Some(remote)), ["10.0.0.9"]);
        h.insert(
            "x-forwarded-for",
            "1.2.3.4, bogus, 10.0.0.9".parse().expect("hv"),
        );
        h.insert("x-real-ip", "5.6.7.8".parse().expect("hv"));
        assert_eq!(
            source_ips(&h, Some(remote)),
            ["1.2.3.4", "10.0.0.9", "5.6.7.8"]
        );
    }

    #[test]
    fn long_user_agents_are_cut() {
        let mut h = HeaderMap::new();
        h.insert(header::USER_AGENT, "a".repeat(2000).parse().expect("hv"));
        let ua = user_agent(&h);
        assert_eq!(ua.len(), 1024 + USER_AGENT_TRUNCATE_SUFFIX.len());
        assert!(ua.ends_with("...TRUNCATED"));
    }

    #[test]
    fn bodies_by_level_and_verb() {
        assert!(wants_request_body(Level::Metadata, "create"));
        assert!(!wants_request_body(Level::Metadata, "patch"));
        assert!(wants_request_body(Level::Request, "patch"));
        assert!(!wants_request_body(Level::RequestResponse, "get"));
        assert!(!wants_request_body(Level::None, "create"));
        assert_eq!(
            decode_body(b"a: 1\n", Some("application/apply-patch+yaml")),
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(
            decode_body(b"{\"a\":1}", None),
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(decode_body(b"not json", Some("application/json")), None);
    }
}
