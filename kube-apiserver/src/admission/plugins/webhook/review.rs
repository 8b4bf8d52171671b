//! The admission.k8s.io/v1 `AdmissionReview` a webhook receives and answers, and what its
//! answer does to the request.

use crate::admission::{Attributes, Operation};
use crate::http::status::ApiError;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The AdmissionReview versions we speak, newest first.
pub const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The first version of the webhook's list we speak, as upstream picks it.
pub fn pick_version(accepted: &[String]) -> Result<&'static str, String> {
    accepted
        .iter()
        .find_map(|v| VERSIONS.iter().find(|known| *known == v).copied())
        .ok_or_else(|| {
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".to_string()
        })
}

/// The request sent to a webhook, as AdmissionReview `review_version` (v1 and v1beta1 share
/// the shape).
pub fn request(
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    uid: &str,
    review_version: &str,
) -> Value {
    let resource = attrs.resource;
    // A subresource may carry another kind (pods/binding is a Binding, */scale an
    // autoscaling/v1 Scale); status and the like carry the parent's.
    let (group, version, kind) = resource
        .subresources
        .iter()
        .find(|s| s.name == attrs.subresource)
        .map(|s| match s.group_version {
            Some(gv) => (gv.group, gv.version, s.kind),
            None => (resource.group, resource.version, s.kind),
        })
        .unwrap_or((resource.group, resource.version, resource.kind));
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr =
        json!({"group": resource.group, "version": resource.version, "resource": resource.plural});

    let mut user = Map::new();
    user.insert("username".into(), json!(attrs.user.name));
    if !attrs.user.uid.is_empty() {
        user.insert("uid".into(), json!(attrs.user.uid));
    }
    if !attrs.user.groups.is_empty() {
        user.insert("groups".into(), json!(attrs.user.groups));
    }
    if !attrs.user.extra.is_empty() {
        user.insert("extra".into(), json!(attrs.user.extra));
    }

    let mut req = Map::new();
    req.insert("uid".into(), json!(uid));
    req.insert("kind".into(), gvk.clone());
    req.insert("resource".into(), gvr.clone());
    if !attrs.subresource.is_empty() {
        req.insert("subResource".into(), json!(attrs.subresource));
    }
    req.insert("requestKind".into(), gvk);
    req.insert("requestResource".into(), gvr);
    if !attrs.subresource.is_empty() {
        req.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if !attrs.name.is_empty() {
        req.insert("name".into(), json!(attrs.name));
    }
    // Upstream's request info names a namespace object's own name as its namespace.
    let namespace = if attrs.is("", "namespaces") {
        &attrs.name
    } else {
        &attrs.namespace
    };
    if !namespace.is_empty() {
        req.insert("namespace".into(), json!(namespace));
    }
    req.insert("operation".into(), json!(attrs.operation.as_str()));
    req.insert("userInfo".into(), Value::Object(user));
    req.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    req.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
    req.insert("dryRun".into(), json!(attrs.dry_run));
    if let Some(options) = options(attrs) {
        req.insert("options".into(), options);
    }
    let api_version = format!("admission.k8s.io/{review_version}");
    json!({
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": req,
    })
}

/// The options kind of the operation. We do not carry the request's options into admission,
/// so only `dryRun` is filled.
fn options(attrs: &Attributes) -> Option<Value> {
    let kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return None,
    };
    let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": kind});
    if attrs.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    Some(options)
}

/// A webhook's answer, verified.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub allowed: bool,
    /// The refusal's status, as the webhook sent it.
    pub status: Option<Status>,
    /// The decoded JSON Patch (mutating webhooks only).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawReview {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<RawResponse>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResponse {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    status: Option<Status>,
    patch: Option<String>,
    patch_type: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// Reads and checks a webhook's answer to the review of `uid` sent as `version`; the error is
/// the reason after `failed calling webhook "<name>": `. An answer that does not decode is a
/// failed call, as client-go's decoding fails it; one that decodes is checked as upstream's
/// `VerifyAdmissionResponse` does. v1beta1 answers keep their historical leniency: neither
/// the uid nor the kind is checked.
pub fn parse_response(
    body: &[u8],
    uid: &str,
    mutating: bool,
    version: &str,
) -> Result<Response, String> {
    let review: RawReview =
        serde_json::from_slice(body).map_err(|e| format!("failed to call webhook: {e}"))?;
    verify(review, uid, mutating, version)
        .map_err(|e| format!("received invalid webhook response: {e}"))
}

fn verify(review: RawReview, uid: &str, mutating: bool, version: &str) -> Result<Response, String> {
    let Some(r) = review.response else {
        return Err("webhook response was absent".to_string());
    };
    if version == "v1" {
        if r.uid != uid {
            return Err(format!(
                "expected response.uid=\"{uid}\", got \"{}\"",
                r.uid
            ));
        }
        if review.api_version != "admission.k8s.io/v1" || review.kind != "AdmissionReview" {
            // Go prints a group-version-kind as `group/version, Kind=kind`, the group
            // possibly empty.
            let got = if review.api_version.contains('/') {
                format!("{}, Kind={}", review.api_version, review.kind)
            } else {
                format!("/{}, Kind={}", review.api_version, review.kind)
            };
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
            ));
        }
    }
    let patch = r.patch.filter(|p| !p.is_empty());
    let patch_type = r.patch_type.filter(|p| !p.is_empty());
    match (&patch, &patch_type) {
        (Some(_), None) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (Some(_), Some(_)) if !mutating => {
            return Err("validating webhook may not return response.patch".into());
        }
        (None, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (Some(_), Some(t)) if t != "JSONPatch" => {
            return Err(format!(
                "webhook returned invalid response.patchType of \"{t}\""
            ));
        }
        _ => {}
    }
    let patch = match patch {
        Some(p) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p.as_bytes())
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        None => None,
    };
    Ok(Response {
        allowed: r.allowed,
        status: r.status,
        patch,
        warnings: r.warnings,
    })
}

/// A refusal, as 1.33's `ToStatusErr`: the webhook's status with its message prefixed by
/// `admission webhook "<name>" denied the request`, a code below 400 raised to 400 so a
/// refusal is never a success, and `Failure` as its status.
pub fn denial(webhook: &str, status: Option<Status>) -> ApiError {
    let mut status = status.unwrap_or_default();
    let denied_by = format!("admission webhook \"{webhook}\" denied the request");
    let message = match (status.message.as_deref(), status.reason.as_deref()) {
        (Some(m), _) if !m.is_empty() => format!("{denied_by}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{denied_by}: {r}"),
        _ => format!("{denied_by} without explanation"),
    };
    status.message = Some(message);
    if status.code.unwrap_or(0) < 400 {
        status.code = Some(400);
    }
    if matches!(status.status.as_deref(), None | Some("") | Some("Success")) {
        status.status = Some("Failure".to_string());
    }
    ApiError::from_status(status)
}

/// Applies a webhook's JSON Patch to `object`; whether the object changed. A patch that does
/// not apply is upstream's 500, whatever the failure policy.
pub fn apply_patch(webhook: &str, object: &mut Value, patch: &[u8]) -> Result<bool, ApiError> {
    let patch: json_patch::Patch =
        serde_json::from_slice(patch).map_err(|e| ApiError::internal(e.to_string()))?;
    if patch.0.is_empty() {
        return Ok(false);
    }
    if object.is_null() {
        return Err(ApiError::internal(format!(
            "admission webhook \"{webhook}\" attempted to modify the object, which is not supported for this operation"
        )));
    }
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| ApiError::internal(e.to_string()))?;
    let changed = patched != *object;
    *object = patched;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::plugins::webhook::matching::tests::attrs;

    fn review(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }))
        .unwrap()
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn request_carries_the_write() {
        let mut a = attrs(Operation::Update, "", "pods", "status", "ns", "p");
        a.dry_run = true;
        let new = json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}});
        let old = json!({"metadata": {"name": "p"}});
        let r = request(&a, Some(&new), Some(&old), "uid-1", "v1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        let req = &r["request"];
        assert_eq!(req["uid"], "uid-1");
        assert_eq!(
            req["kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert_eq!(
            req["resource"],
            json!({"group": "", "version": "v1", "resource": "pods"})
        );
        assert_eq!(req["subResource"], "status");
        assert_eq!(req["requestSubResource"], "status");
        assert_eq!(req["namespace"], "ns");
        assert_eq!(req["name"], "p");
        assert_eq!(req["operation"], "UPDATE");
        assert_eq!(
            req["userInfo"],
            json!({"username": "alice", "uid": "u-1", "groups": ["devs", "system:authenticated"]})
        );
        assert_eq!(req["object"], new);
        assert_eq!(req["oldObject"], old);
        assert_eq!(req["dryRun"], true);
        assert_eq!(
            req["options"],
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions", "dryRun": ["All"]})
        );

        let scale = attrs(Operation::Update, "apps", "deployments", "scale", "ns", "d");
        let r = request(&scale, None, None, "u", "v1");
        assert_eq!(
            r["request"]["kind"],
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        );
        let ns = attrs(Operation::Delete, "", "namespaces", "", "", "team");
        let r = request(&ns, None, None, "u", "v1beta1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1beta1");
        assert_eq!(r["request"]["namespace"], "team");
        assert_eq!(r["request"]["object"], Value::Null);
        assert_eq!(r["request"]["options"]["kind"], "DeleteOptions");
    }

    #[test]
    fn responses_are_verified() {
        let ok = parse_response(
            &review(json!({"uid": "u", "allowed": true})),
            "u",
            false,
            "v1",
        );
        assert!(ok.unwrap().allowed);
        let cases = [
            (
                review(json!({"uid": "other", "allowed": true})),
                true,
                "expected response.uid=\"u\", got \"other\"",
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
                true,
                "webhook response was absent",
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u"}}"#.to_vec(),
                true,
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
            ),
            (
                review(json!({"uid": "u", "allowed": true, "patch": b64("[]")})),
                true,
                "webhook returned response.patch but not response.patchType",
            ),
            (
                review(json!({"uid": "u", "allowed": true, "patch": b64("[]"), "patchType": "JSONPatch"})),
                false,
                "validating webhook may not return response.patch",
            ),
            (
                review(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"})),
                true,
                "webhook returned response.patchType but not response.patch",
            ),
            (
                review(json!({"uid": "u", "allowed": true, "patch": b64("[]"), "patchType": "Merge"})),
                true,
                "webhook returned invalid response.patchType of \"Merge\"",
            ),
        ];
        for (body, mutating, want) in cases {
            assert_eq!(
                parse_response(&body, "u", mutating, "v1").unwrap_err(),
                format!("received invalid webhook response: {want}"),
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
    }

    #[test]
    fn versions_are_picked_in_the_webhook_order() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(pick_version(&v(&["v2", "v1beta1", "v1"])), Ok("v1beta1"));
        assert_eq!(pick_version(&v(&["v1"])), Ok("v1"));
        assert!(pick_version(&v(&["v2"])).is_err());
        // v1beta1 answers are not checked for their uid and kind.
        let lax = br#"{"response":{"uid":"other","allowed":true}}"#;
        assert!(parse_response(lax, "u", false, "v1beta1").unwrap().allowed);
        assert!(parse_response(lax, "u", false, "v1").is_err());
        let garbage = parse_response(b"<html>", "u", false, "v1").unwrap_err();
        assert!(garbage.starts_with("failed to call webhook: "), "{garbage}");
    }

    #[test]
    fn denials_carry_the_webhook_status() {
        let err = denial(
            "deny.example.com",
            Some(Status {
                code: Some(403),
                reason: Some("Forbidden".into()),
                message: Some("no pods on Sundays".into()),
                ..Default::default()
            }),
        );
        assert_eq!(err.code().as_u16(), 403);
        assert_eq!(err.reason(), "Forbidden");
        assert_eq!(
            err.message(),
            "admission webhook \"deny.example.com\" denied the request: no pods on Sundays"
        );
        assert_eq!(err.status().status.as_deref(), Some("Failure"));

        let bare = denial("deny.example.com", None);
        assert_eq!(bare.code().as_u16(), 400);
        assert_eq!(
            bare.message(),
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
        let reason_only = denial(
            "d",
            Some(Status {
                code: Some(200),
                reason: Some("NotToday".into()),
                status: Some("Success".into()),
                ..Default::default()
            }),
        );
        assert_eq!(reason_only.code().as_u16(), 400);
        assert_eq!(reason_only.status().status.as_deref(), Some("Failure"));
        assert_eq!(
            reason_only.message(),
            "admission webhook \"d\" denied the request: NotToday"
        );
    }

    #[test]
    fn patches_apply_and_report_changes() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        let add = br#"[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}}]"#;
        assert!(apply_patch("m", &mut pod, add).unwrap());
        assert_eq!(pod["metadata"]["labels"]["injected"], "yes");
        // The same value again is no change.
        let same = br#"[{"op":"replace","path":"/metadata/labels/injected","value":"yes"}]"#;
        assert!(!apply_patch("m", &mut pod, same).unwrap());
        assert!(!apply_patch("m", &mut pod, b"[]").unwrap());

        let before = pod.clone();
        let bad = br#"[{"op":"remove","path":"/spec/nothing"}]"#;
        let err = apply_patch("m", &mut pod, bad).unwrap_err();
        assert_eq!(err.code().as_u16(), 500);
        assert_eq!(pod, before, "a failed patch leaves the object alone");
        let err = apply_patch("m", &mut Value::Null, add).unwrap_err();
        assert!(err.message().contains("attempted to modify the object"));
    }
}
