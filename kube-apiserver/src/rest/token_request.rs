//! TokenRequest, the `serviceaccounts/token` subresource (what `kubectl create token` and the
//! kubelet's projected tokens call): a signed, expiring token for a service account, possibly
//! bound to a pod, secret or node so that it dies with that object.

use crate::http::auth::service_account::{
    BoundClaims, MIN_EXPIRATION_SECONDS, ObjectRef, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS,
};
use crate::http::auth::user::UserInfo;
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

pub const GROUP: &str = "authentication.k8s.io";
pub const KIND: &str = "TokenRequest";
/// The lifetime of a token whose request names none (upstream's v1 default).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The longest lifetime a request may name (2^32 seconds, as upstream).
pub const MAX_EXPIRATION_SECONDS: i64 = u32::MAX as i64;

/// The object a token is bound to (`spec.boundObjectRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundObjectRef {
    pub kind: String,
    pub api_version: String,
    pub name: String,
    pub uid: String,
}

impl BoundObjectRef {
    /// The API group of `apiVersion` (`""` for `v1`).
    fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    fn version(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or(self.api_version.as_str(), |(_, version)| version)
    }

    /// Go's `GroupVersionKind.String()`, which upstream's messages print.
    fn gvk_string(&self) -> String {
        format!("{}/{}, Kind={}", self.group(), self.version(), self.kind)
    }
}

/// A decoded TokenRequest spec, defaulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequestSpec {
    /// Empty in the request means the apiserver's audiences.
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub bound_object_ref: Option<BoundObjectRef>,
}

impl TokenRequestSpec {
    fn to_json(&self) -> Value {
        json!({
            "audiences": self.audiences,
            "expirationSeconds": self.expiration_seconds,
            "boundObjectRef": self.bound_object_ref.as_ref().map(|r| {
                let mut out = Map::new();
                for (key, value) in [
                    ("kind", &r.kind),
                    ("apiVersion", &r.api_version),
                    ("name", &r.name),
                    ("uid", &r.uid),
                ] {
                    if !value.is_empty() {
                        out.insert(key.into(), json!(value));
                    }
                }
                Value::Object(out)
            }),
        })
    }
}

fn bad_body(what: &str) -> ApiError {
    ApiError::bad_request(format!("the TokenRequest body is invalid: {what}"))
}

fn string_field(object: &Value, key: &str) -> Result<String, ApiError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad_body(&format!("{key} must be a string"))),
    }
}

/// The spec of a TokenRequest body, defaulted and shape-checked (400 when it cannot be
/// decoded); `default_audiences` (`--api-audiences`) replace empty audiences.
pub fn decode_spec(
    body: &Value,
    default_audiences: &[String],
) -> Result<TokenRequestSpec, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != KIND
    {
        return Err(ApiError::bad_request(format!(
            "the body of the request was in an unknown format - expected {KIND}, got {kind}"
        )));
    }
    let spec = match body.get("spec") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(spec @ Value::Object(_)) => spec.clone(),
        Some(_) => return Err(bad_body("spec must be an object")),
    };
    let audiences = match spec.get("audiences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad_body("spec.audiences must be a list of strings"))?,
        Some(_) => return Err(bad_body("spec.audiences must be a list of strings")),
    };
    let audiences = if audiences.is_empty() {
        default_audiences.to_vec()
    } else {
        audiences
    };
    let expiration_seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| bad_body("spec.expirationSeconds must be an integer"))?,
    };
    let bound_object_ref = match spec.get("boundObjectRef") {
        None | Some(Value::Null) => None,
        Some(r @ Value::Object(_)) => Some(BoundObjectRef {
            kind: string_field(r, "kind")?,
            api_version: string_field(r, "apiVersion")?,
            name: string_field(r, "name")?,
            uid: string_field(r, "uid")?,
        }),
        Some(_) => return Err(bad_body("spec.boundObjectRef must be an object")),
    };
    Ok(TokenRequestSpec {
        audiences,
        expiration_seconds,
        bound_object_ref,
    })
}

/// Upstream's static validation of a TokenRequest.
pub fn validate_spec(spec: &TokenRequestSpec) -> ErrorList {
    let mut errors = ErrorList::new();
    let path = FieldPath::new("spec").child("expirationSeconds");
    if spec.expiration_seconds < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            &path,
            spec.expiration_seconds,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if spec.expiration_seconds > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError::too_long(&path, u32::MAX as usize));
    }
    errors
}

/// The `metadata.name`/`metadata.namespace` of the body must be the URL's when given.
fn check_metadata(body: &Value, namespace: &str, name: &str) -> Result<(), ApiError> {
    let meta = body.get("metadata");
    let field = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut errors = ErrorList::new();
    let given_name = field("name");
    if !given_name.is_empty() && given_name != name {
        errors.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            given_name,
            "must match the service account name if specified",
        ));
    }
    let given_namespace = field("namespace");
    if !given_namespace.is_empty() && given_namespace != namespace {
        errors.push(FieldError::invalid(
            &FieldPath::new("metadata").child("namespace"),
            given_namespace,
            "must match the service account namespace if specified",
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(GROUP, KIND, name, &errors))
    }
}

fn uid_of(object: &Value) -> String {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Reads an object from storage (not the cache: a token must not outlive an object the cache
/// has not caught up on).
async fn read(
    state: &ApiState,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let store = state
        .store("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("no storage for {plural}")))?;
    Ok(store.get(namespace, name).await?)
}

/// `POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token` by `requester`: the
/// TokenRequest with its `status` (the caller answers 201). `default_audiences` are the
/// apiserver's (`--api-audiences`). 404 for the path when no signing key is configured, as
/// upstream does not install the subresource then.
pub async fn serve(
    state: &ApiState,
    namespace: &str,
    name: &str,
    body: Value,
    default_audiences: &[String],
    requester: &UserInfo,
) -> Result<Value, ApiError> {
    let Some(signer) = state.security().token_signer.clone() else {
        return Err(ApiError::path_not_found());
    };
    let mut spec = decode_spec(&body, default_audiences)?;
    check_metadata(&body, namespace, name)?;
    let account = read(state, "serviceaccounts", Some(namespace), name).await?;
    // Creation time is taken before signing so the answered expiry is never after the token's.
    let now = jiff::Timestamp::now().as_second();
    let errors = validate_spec(&spec);
    if !errors.is_empty() {
        return Err(ApiError::invalid(GROUP, KIND, name, &errors));
    }

    let mut claims = BoundClaims {
        namespace: namespace.to_string(),
        service_account: ObjectRef::new(name, uid_of(&account)),
        ..Default::default()
    };
    if let Some(reference) = &spec.bound_object_ref {
        let found_uid = match (reference.group(), reference.kind.as_str()) {
            ("", "Pod") => {
                let pod = read(state, "pods", Some(namespace), &reference.name).await?;
                let pod_account = pod
                    .pointer("/spec/serviceAccountName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if pod_account != name {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                        api_types::validation::go_quote(name)
                    )));
                }
                let uid = uid_of(&pod);
                claims.pod = Some(ObjectRef::new(&reference.name, &uid));
                // The pod's node goes into the token for information; a node not (or no
                // longer) found is named without a uid, as upstream.
                if let Some(node_name) = pod
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    let node_uid = match read(state, "nodes", None, node_name).await {
                        Ok(node) => uid_of(&node),
                        Err(e) if e.code() == http::StatusCode::NOT_FOUND => String::new(),
                        Err(e) => return Err(e),
                    };
                    claims.node = Some(ObjectRef::new(node_name, node_uid));
                }
                uid
            }
            ("", "Secret") => {
                let secret = read(state, "secrets", Some(namespace), &reference.name).await?;
                let uid = uid_of(&secret);
                claims.secret = Some(ObjectRef::new(&reference.name, &uid));
                uid
            }
            ("", "Node") => {
                let node = read(state, "nodes", None, &reference.name).await?;
                let uid = uid_of(&node);
                claims.node = Some(ObjectRef::new(&reference.name, &uid));
                uid
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {}",
                    reference.gvk_string()
                )));
            }
        };
        if !reference.uid.is_empty() && reference.uid != found_uid {
            return Err(ApiError::conflict(
                reference.group(),
                &reference.kind,
                &reference.name,
                &format!(
                    "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                    reference.uid
                ),
            ));
        }
    }

    spec.expiration_seconds = signer.clamp_expiration(spec.expiration_seconds);
    claims.audiences = spec.audiences.clone();
    claims.expiration_seconds = spec.expiration_seconds;
    // The kubelet's projected tokens live longer than asked (and are reported as stale after
    // the asked lifetime) so that clients which never reload their token keep working; the
    // answer still names the asked lifetime, so the kubelet refreshes on time.
    if let Some(extended) = signer.extended_expiration()
        && claims.pod.is_some()
        && spec.expiration_seconds == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
        && spec.audiences.iter().all(|a| default_audiences.contains(a))
    {
        claims.warn_after_seconds = Some(spec.expiration_seconds);
        claims.expiration_seconds = extended;
    }
    let issued = signer
        .issue(&claims)
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e:#}")))?;
    // Upstream records the issued credential in the audit log; the jti names it without
    // revealing the token.
    tracing::info!(
        user = %requester.name,
        serviceaccount = %format!("{namespace}/{name}"),
        credential_id = %format!("JTI={}", issued.jti),
        "issued a service account token"
    );

    let mut metadata = match body.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(now)));
    Ok(json!({
        "kind": KIND,
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": metadata,
        "spec": spec.to_json(),
        "status": {
            "token": issued.token,
            "expirationTimestamp": rfc3339(now + spec.expiration_seconds),
        },
    }))
}

fn rfc3339(unix_seconds: i64) -> String {
    jiff::Timestamp::from_second(unix_seconds)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::auth::service_account::TokenSigner;
    use crate::rest::state::Security;
    use crate::test_support::{TestState, test_state};
    use std::sync::Arc;

    const API: &str = "https://kubernetes.default.svc";

    fn api() -> Vec<String> {
        vec![API.to_string()]
    }

    #[test]
    fn specs_are_defaulted_as_upstreams_v1() {
        let spec = decode_spec(&json!({"spec": {}}), &api()).expect("spec");
        assert_eq!(
            spec,
            TokenRequestSpec {
                audiences: api(),
                expiration_seconds: DEFAULT_EXPIRATION_SECONDS,
                bound_object_ref: None,
            }
        );
        let spec = decode_spec(
            &json!({"kind": "TokenRequest", "spec": {
                "audiences": ["vault"], "expirationSeconds": 7200,
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}}),
            &api(),
        )
        .expect("spec");
        assert_eq!(spec.audiences, vec!["vault"]);
        assert_eq!(spec.expiration_seconds, 7200);
        let reference = spec.bound_object_ref.expect("ref");
        assert_eq!((reference.group(), reference.name.as_str()), ("", "p"));
        assert_eq!(reference.uid, "");
    }

    #[test]
    fn undecodable_specs_are_bad_requests() {
        for body in [
            json!([]),
            json!({"kind": "Pod"}),
            json!({"spec": []}),
            json!({"spec": {"audiences": "vault"}}),
            json!({"spec": {"audiences": [1]}}),
            json!({"spec": {"expirationSeconds": "1h"}}),
            json!({"spec": {"boundObjectRef": "p"}}),
            json!({"spec": {"boundObjectRef": {"name": 1}}}),
        ] {
            let err = decode_spec(&body, &api()).expect_err("bad body");
            assert_eq!(err.code(), http::StatusCode::BAD_REQUEST, "{body}");
        }
    }

    #[test]
    fn lifetimes_outside_ten_minutes_to_two_to_the_32_seconds_are_invalid() {
        let spec = |seconds| TokenRequestSpec {
            audiences: api(),
            expiration_seconds: seconds,
            bound_object_ref: None,
        };
        assert!(validate_spec(&spec(600)).is_empty());
        assert!(validate_spec(&spec(MAX_EXPIRATION_SECONDS)).is_empty());
        let err = ApiError::invalid(GROUP, KIND, "sa", &validate_spec(&spec(599)));
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            err.message(),
            "TokenRequest.authentication.k8s.io \"sa\" is invalid: spec.expirationSeconds: \
             Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        assert_eq!(validate_spec(&spec(MAX_EXPIRATION_SECONDS + 1)).len(), 1);
    }

    #[test]
    fn kinds_are_printed_as_go_prints_a_group_version_kind() {
        let reference = |api_version: &str, kind: &str| BoundObjectRef {
            kind: kind.into(),
            api_version: api_version.into(),
            name: "x".into(),
            uid: String::new(),
        };
        assert_eq!(
            reference("v1", "ConfigMap").gvk_string(),
            "/v1, Kind=ConfigMap"
        );
        assert_eq!(
            reference("apps/v1", "Deployment").gvk_string(),
            "apps/v1, Kind=Deployment"
        );
    }

    /// The shared test state with `signer` (if any) issuing tokens.
    async fn state(signer: Option<TokenSigner>) -> TestState {
        let test = test_state().await;
        test.state.set_security(Security {
            token_signer: signer.map(Arc::new),
            ..Default::default()
        });
        test
    }

    async fn create(
        state: &ApiState,
        plural: &str,
        namespace: Option<&str>,
        object: Value,
    ) -> Value {
        state
            .store("", "v1", plural)
            .expect("store")
            .create(namespace, object)
            .await
            .expect("create")
    }

    fn signer() -> TokenSigner {
        let pem = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .expect("key")
            .serialize_pem();
        TokenSigner::from_pem(
            pem.as_bytes(),
            "key",
            "https://issuer".into(),
            Some(std::time::Duration::from_secs(86400)),
        )
        .expect("signer")
        .with_extended_expiration(Some(86400))
    }

    fn requester() -> UserInfo {
        UserInfo {
            name: "admin".into(),
            ..Default::default()
        }
    }

    fn claims_of(response: &Value) -> Value {
        let token = response["status"]["token"].as_str().expect("token");
        jsonwebtoken::dangerous::insecure_decode_claims(token).expect("claims")
    }

    #[tokio::test]
    async fn without_a_signing_key_the_subresource_is_not_there() {
        let test = state(None).await;
        let err = serve(&test.state, "ns", "sa", json!({}), &api(), &requester())
            .await
            .expect_err("no signer");
        assert_eq!(err.code(), http::StatusCode::NOT_FOUND);
        assert_eq!(
            err.message(),
            "the server could not find the requested resource"
        );
    }

    #[tokio::test]
    async fn tokens_for_service_accounts_and_bound_objects() {
        let test = state(Some(signer())).await;
        let state = &test.state;
        let serve =
            |body: Value| async move { serve(state, "ns", "sa", body, &api(), &requester()).await };
        let err = serve(json!({})).await.expect_err("no service account");
        assert_eq!(err.code(), http::StatusCode::NOT_FOUND);
        assert_eq!(err.message(), "serviceaccounts \"sa\" not found");

        let account = create(
            state,
            "serviceaccounts",
            Some("ns"),
            json!({"metadata": {"name": "sa"}}),
        )
        .await;
        let sa_uid = account["metadata"]["uid"]
            .as_str()
            .expect("uid")
            .to_string();
        let err = serve(json!({"spec": {"expirationSeconds": 60}}))
            .await
            .expect_err("too short");
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);

        let before = jiff::Timestamp::now().as_second();
        let response =
            serve(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}))
                .await
                .expect("token");
        assert_eq!(response["kind"], "TokenRequest");
        assert_eq!(response["metadata"]["name"], "sa");
        assert_eq!(response["metadata"]["namespace"], "ns");
        assert_eq!(
            response["spec"],
            json!({"audiences": [API], "expirationSeconds": 3600, "boundObjectRef": null})
        );
        let expires: jiff::Timestamp = response["status"]["expirationTimestamp"]
            .as_str()
            .expect("expiry")
            .parse()
            .expect("rfc3339");
        let claims = claims_of(&response);
        assert!(expires.as_second() >= before + 3600);
        assert!(expires.as_second() <= claims["exp"].as_i64().expect("exp"));
        assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(claims["aud"], json!([API]));
        assert_eq!(
            claims["kubernetes.io"]["serviceaccount"]["uid"],
            sa_uid.as_str()
        );

        // Longer than --service-account-max-token-expiration: clamped.
        let response = serve(json!({"spec": {"expirationSeconds": 864000}}))
            .await
            .expect("token");
        assert_eq!(response["spec"]["expirationSeconds"], 86400);

        create(state, "nodes", None, json!({"metadata": {"name": "n1"}})).await;
        let pod = create(
            state,
            "pods",
            Some("ns"),
            json!({"metadata": {"name": "p"}, "spec": {
                "serviceAccountName": "sa", "nodeName": "n1",
                "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .await;
        let pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
        let bound = |uid: &str| {
            json!({"spec": {"audiences": ["vault"], "boundObjectRef":
                {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": uid}}})
        };
        let response = serve(bound(&pod_uid)).await.expect("pod-bound token");
        let claims = claims_of(&response);
        assert_eq!(claims["aud"], json!(["vault"]));
        assert_eq!(claims["kubernetes.io"]["pod"]["uid"], pod_uid.as_str());
        assert_eq!(claims["kubernetes.io"]["node"]["name"], "n1");

        // The kubelet's projected token: a year, with a warning after the asked lifetime.
        let projected = json!({"spec": {"expirationSeconds": 3607, "boundObjectRef":
            {"kind": "Pod", "apiVersion": "v1", "name": "p"}}});
        let response = serve(projected).await.expect("projected token");
        let claims = claims_of(&response);
        let iat = claims["iat"].as_i64().expect("iat");
        assert_eq!(claims["exp"].as_i64(), Some(iat + 86400));
        assert_eq!(
            claims["kubernetes.io"]["warnafter"].as_i64(),
            Some(iat + 3607)
        );
        assert_eq!(response["spec"]["expirationSeconds"], 3607);
        let expires: jiff::Timestamp = response["status"]["expirationTimestamp"]
            .as_str()
            .expect("expiry")
            .parse()
            .expect("rfc3339");
        assert!(expires.as_second() <= iat + 3607);
        // Not for other audiences.
        let response = serve(
            json!({"spec": {"expirationSeconds": 3607, "audiences": ["vault"],
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}}),
        )
        .await
        .expect("token");
        let claims = claims_of(&response);
        assert_eq!(
            claims["exp"].as_i64(),
            Some(claims["iat"].as_i64().expect("iat") + 3607)
        );
        assert!(claims["kubernetes.io"].get("warnafter").is_none());

        let err = serve(bound("other-uid")).await.expect_err("uid mismatch");
        assert_eq!(err.code(), http::StatusCode::CONFLICT);
        assert_eq!(
            err.message(),
            "Operation cannot be fulfilled on Pod \"p\": the UID in the bound object \
             reference (other-uid) does not match the UID in record. The object might have \
             been deleted and then recreated"
        );
        let err = serve(json!({"spec": {"boundObjectRef":
            {"kind": "Pod", "apiVersion": "v1", "name": "gone"}}}))
        .await
        .expect_err("no pod");
        assert_eq!(err.message(), "pods \"gone\" not found");
        let err = serve(json!({"spec": {"boundObjectRef":
            {"kind": "ConfigMap", "apiVersion": "v1", "name": "cm"}}}))
        .await
        .expect_err("unbindable kind");
        assert_eq!(
            err.message(),
            "cannot bind token to object of type /v1, Kind=ConfigMap"
        );
        let err = serve(json!({"metadata": {"namespace": "other"}}))
            .await
            .expect_err("namespace mismatch");
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);

        create(
            state,
            "serviceaccounts",
            Some("ns"),
            json!({"metadata": {"name": "other"}}),
        )
        .await;
        let err = super::serve(state, "ns", "other", bound(&pod_uid), &api(), &requester())
            .await
            .expect_err("pod of another service account");
        assert_eq!(err.code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(
            err.message(),
            "cannot bind token for serviceaccount \"other\" to pod running with different \
             serviceaccount name."
        );
    }
}
