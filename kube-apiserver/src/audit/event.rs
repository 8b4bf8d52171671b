//! The audit event (`audit.k8s.io/v1` `Event`) in upstream's JSON shape and field order, and
//! the one-line `legacy` text format.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::policy::{Level, Stage};
use crate::http::auth::user::UserInfo;
use crate::http::request_info::RequestInfo;

/// The header carrying a request's audit ID, in both directions.
pub const HEADER_AUDIT_ID: &str = "audit-id";

/// One audit event.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: &'static str,
    /// Always `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The level the policy chose.
    pub level: Level,
    /// The request's `Audit-ID`.
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event records.
    pub stage: Stage,
    /// Path and query as sent.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb (or the lower-cased method of a non-resource request).
    pub verb: String,
    /// The authenticated user.
    pub user: EventUser,
    /// The user acted as, when impersonating.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    /// `X-Forwarded-For`, `X-Real-Ip` and the peer's address.
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent`, cut at 1024 bytes.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object a resource request is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The outcome; absent until the response starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (Request level and above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    /// The response body (RequestResponse level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    /// When the request arrived.
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: jiff::Timestamp,
    /// When this stage was reached.
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: jiff::Timestamp,
    /// Annotations added while serving (authorization's decision and reason).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A user as events record it (upstream's `authentication/v1` `UserInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EventUser {
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The uid.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        EventUser {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// What a resource request is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The resource (plural).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid, when the request body carries it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The group (empty for the core group).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The resourceVersion the request body carries.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

impl ObjectReference {
    /// The reference of a resource request; None for other requests.
    pub fn of(info: &RequestInfo) -> Option<Self> {
        info.is_resource_request.then(|| ObjectReference {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..Default::default()
        })
    }

    /// Fills what the path left empty from the request body's metadata (the name of a
    /// create, the uid and resourceVersion of an update), as upstream.
    pub fn complete_from(&mut self, object: &Value) {
        let meta = &object["metadata"];
        let fill = |field: &mut String, key: &str| {
            if field.is_empty()
                && let Some(v) = meta[key].as_str()
            {
                *field = v.to_string();
            }
        };
        fill(&mut self.namespace, "namespace");
        fill(&mut self.name, "name");
        fill(&mut self.uid, "uid");
        fill(&mut self.resource_version, "resourceVersion");
    }
}

/// The outcome (a `metav1.Status` with only the bounded fields upstream copies).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResponseStatus {
    /// Always `{}`.
    pub metadata: EmptyObject,
    /// `Success` or `Failure`, when the response was a Status.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The Status message (or why authentication failed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The Status reason.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The HTTP status code.
    pub code: u16,
}

/// Serializes as `{}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmptyObject {}

impl ResponseStatus {
    /// A status with only a code.
    pub fn code(code: u16) -> Self {
        ResponseStatus {
            code,
            ..Default::default()
        }
    }

    /// The bounded fields of a `Status` response body; None when the body is not a Status.
    pub fn from_status(code: u16, body: &Value) -> Option<Self> {
        if body["kind"] != "Status" {
            return None;
        }
        let text = |k: &str| body[k].as_str().unwrap_or_default().to_string();
        Some(ResponseStatus {
            metadata: EmptyObject {},
            status: text("status"),
            message: text("message"),
            reason: text("reason"),
            details: body.get("details").filter(|d| !d.is_null()).cloned(),
            code: body["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(code),
        })
    }
}

/// Upstream's `metav1.MicroTime` format: RFC 3339 in UTC with microseconds.
fn micro_time<S: Serializer>(t: &jiff::Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_micro(*t))
}

/// `2006-01-02T15:04:05.000000Z`.
pub fn format_micro(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

impl Event {
    /// The event's JSON line (without the newline).
    pub fn to_json(&self) -> Vec<u8> {
        // The event holds only strings, maps and JSON values: encoding cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Upstream's `legacy` one-line text (`EventString`).
    pub fn to_legacy(&self) -> String {
        let quoted_list = |list: &[String]| {
            list.iter()
                .map(|s| go_quote(s))
                .collect::<Vec<_>>()
                .join(",")
        };
        let (username, groups) = if self.user.username.is_empty() {
            ("<none>".to_string(), "<none>".to_string())
        } else if self.user.groups.is_empty() {
            (self.user.username.clone(), "<none>".to_string())
        } else {
            (self.user.username.clone(), quoted_list(&self.user.groups))
        };
        let (as_user, as_groups) = match &self.impersonated_user {
            Some(u) => (u.username.clone(), quoted_list(&u.groups)),
            None => ("<self>".to_string(), "<lookup>".to_string()),
        };
        let namespace = self
            .object_ref
            .as_ref()
            .map(|r| r.namespace.as_str())
            .filter(|ns| !ns.is_empty())
            .unwrap_or("<none>");
        let response = self
            .response_status
            .as_ref()
            .map_or("<deferred>".to_string(), |s| s.code.to_string());
        let ip = self.source_ips.first().map_or("<unknown>", String::as_str);
        format!(
            "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} user-agent={} namespace={} uri={} response=\"{}\"",
            self.request_received_timestamp,
            go_quote(&self.audit_id),
            go_quote(self.stage.as_str()),
            go_quote(ip),
            go_quote(&self.verb),
            go_quote(&username),
            go_quote(&groups),
            go_quote(&as_user),
            go_quote(&as_groups),
            go_quote(&self.user_agent),
            go_quote(namespace),
            go_quote(&self.request_uri),
            response
        )
    }
}

/// Go's `%q` for the printable text events hold.
fn go_quote(s: &str) -> String {
    crate::http::status::go_quote(s)
}

/// Drops `metadata.managedFields` from an object, the items of a list and the rows of a
/// Table (a policy's `omitManagedFields`).
pub fn strip_managed_fields(value: &mut Value) {
    fn strip(obj: &mut Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    strip(value);
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if value["kind"] == "Table"
        && let Some(rows) = value.get_mut("rows").and_then(Value::as_array_mut)
    {
        for row in rows {
            if let Some(obj) = row.get_mut("object") {
                strip(obj);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event() -> Event {
        let t: jiff::Timestamp = "2026-11-21T16:00:00.123456789Z".parse().expect("time");
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: Level::Metadata,
            audit_id: "0b5a1d1e-0000-4000-8000-000000000001".into(),
            stage: Stage::ResponseComplete,
            request_uri: "/api/v1/namespaces/default/secrets?limit=500".into(),
            verb: "list".into(),
            user: EventUser {
                username: "admin".into(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
                ..Default::default()
            },
            impersonated_user: None,
            source_ips: vec!["127.0.0.1".into()],
            user_agent: "kubectl/v1.33.0".into(),
            object_ref: Some(ObjectReference {
                resource: "secrets".into(),
                namespace: "default".into(),
                api_version: "v1".into(),
                ..Default::default()
            }),
            response_status: Some(ResponseStatus::code(200)),
            request_object: None,
            response_object: None,
            request_received_timestamp: t,
            stage_timestamp: t,
            annotations: BTreeMap::from([
                ("authorization.k8s.io/decision".into(), "allow".into()),
                ("authorization.k8s.io/reason".into(), String::new()),
            ]),
        }
    }

    #[test]
    fn json_shape_and_order_as_upstream() {
        let line = String::from_utf8(event().to_json()).expect("utf8");
        assert_eq!(
            line,
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b5a1d1e-0000-4000-8000-000000000001","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/secrets?limit=500","verb":"list","user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.33.0","objectRef":{"resource":"secrets","namespace":"default","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T16:00:00.123456Z","stageTimestamp":"2026-11-21T16:00:00.123456Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#
        );
    }

    #[test]
    fn status_bodies_fill_the_response_status() {
        let body = json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"secrets is forbidden: no","reason":"Forbidden",
            "details":{"kind":"secrets"},"code":403});
        let s = ResponseStatus::from_status(403, &body).expect("status");
        assert_eq!(
            serde_json::to_value(&s).expect("json"),
            json!({"metadata":{},"status":"Failure","message":"secrets is forbidden: no",
                "reason":"Forbidden","details":{"kind":"secrets"},"code":403})
        );
        assert!(ResponseStatus::from_status(200, &json!({"kind":"Pod"})).is_none());
    }

    #[test]
    fn object_ref_completed_from_the_body() {
        let info = RequestInfo::parse("POST", "/api/v1/namespaces/ns/configmaps", None)
            .expect("request info");
        let mut r = ObjectReference::of(&info).expect("resource request");
        r.complete_from(
            &json!({"metadata":{"name":"cm","namespace":"other","resourceVersion":"7"}}),
        );
        assert_eq!(r.name, "cm");
        assert_eq!(r.namespace, "ns", "the path wins");
        assert_eq!(r.resource_version, "7");
        let info = RequestInfo::parse("GET", "/healthz", None).expect("request info");
        assert!(ObjectReference::of(&info).is_none());
    }

    #[test]
    fn legacy_line() {
        let mut ev = event();
        ev.impersonated_user = Some(EventUser {
            username: "bob".into(),
            groups: vec!["devs".into()],
            ..Default::default()
        });
        assert_eq!(
            ev.to_legacy(),
            r#"2026-11-21T16:00:00.123456789Z AUDIT: id="0b5a1d1e-0000-4000-8000-000000000001" stage="ResponseComplete" ip="127.0.0.1" method="list" user="admin" groups="\"system:masters\",\"system:authenticated\"" as="bob" asgroups="\"devs\"" user-agent="kubectl/v1.33.0" namespace="default" uri="/api/v1/namespaces/default/secrets?limit=500" response="200""#
        );
    }

    #[test]
    fn managed_fields_are_stripped_everywhere() {
        let mut list = json!({"kind":"ConfigMapList","metadata":{},"items":[
            {"metadata":{"name":"a","managedFields":[{}]}}]});
        strip_managed_fields(&mut list);
        assert_eq!(list["items"][0]["metadata"], json!({"name":"a"}));
        let mut table =
            json!({"kind":"Table","rows":[{"object":{"metadata":{"managedFields":[]}}}]});
        strip_managed_fields(&mut table);
        assert_eq!(table["rows"][0]["object"]["metadata"], json!({}));
    }
}
