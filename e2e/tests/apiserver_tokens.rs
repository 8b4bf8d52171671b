//! Issue 4's service account tokens with the real kubectl and raw requests: valid tokens
//! (from `kubectl create token`, bound to a pod, or forged with the cluster's own signing key)
//! authenticate as the service account; expired, wrong-audience, badly signed, deleted-pod-bound
//! and deleted-account tokens get 401 (kubectl: "You must be logged in to the server"); a
//! TokenReview says which is which.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use e2e::kubectl::Kubectl;
use e2e::secure::{ISSUER, SecureCluster};
use rcgen::{KeyPair, SigningKey};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const NS: &str = "tok";

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The JSON of one base64url part of a JWT.
fn jwt_part(token: &str, index: usize) -> Value {
    let part = token.split('.').nth(index).expect("a JWT has three parts");
    let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON")
}

/// An ES256 JWS of `header` and `claims` signed with `key` (an ECDSA P-256 key: ring signs in
/// ASN.1 DER; JWS wants r and s as two 32-byte big-endian halves).
fn sign_jwt(key: &KeyPair, header: &Value, claims: &Value) -> String {
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let der = key.sign(signing_input.as_bytes()).expect("signing");
    // SEQUENCE { INTEGER r, INTEGER s }, all lengths short-form for P-256.
    assert_eq!(der[0], 0x30, "DER sequence");
    let mut raw = Vec::with_capacity(64);
    let mut at = 2;
    for _ in 0..2 {
        assert_eq!(der[at], 0x02, "DER integer");
        let len = der[at + 1] as usize;
        let int = &der[at + 2..at + 2 + len];
        let int = &int[int.len().saturating_sub(32)..];
        raw.extend(std::iter::repeat_n(0u8, 32 - int.len()));
        raw.extend_from_slice(int);
        at += 2 + len;
    }
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(raw))
}

/// Claims as upstream's signer writes them for `ns`/`name` (uid `uid`), valid from `iat` to
/// `exp`.
fn claims(ns: &str, name: &str, uid: &str, iat: i64, exp: i64) -> Value {
    json!({
        "aud": [ISSUER],
        "exp": exp,
        "iat": iat,
        "iss": ISSUER,
        "jti": format!("forged-{iat}-{exp}"),
        "kubernetes.io": {
            "namespace": ns,
            "serviceaccount": {"name": name, "uid": uid}
        },
        "nbf": iat,
        "sub": format!("system:serviceaccount:{ns}:{name}")
    })
}

/// Flips one character in the middle of the signature (the last character may carry only
/// padding bits, so it is left alone).
fn corrupt_signature(token: &str) -> String {
    let (head, sig) = token.rsplit_once('.').expect("JWT");
    let mut sig: Vec<char> = sig.chars().collect();
    let i = sig.len() / 2;
    sig[i] = if sig[i] == 'A' { 'B' } else { 'A' };
    format!("{head}.{}", sig.into_iter().collect::<String>())
}

fn create_token(admin: &Kubectl, sa: &str, extra: &[&str]) -> String {
    let mut args = vec!["create", "token", sa, "-n", NS];
    args.extend_from_slice(extra);
    admin.ok(&args).trim().to_string()
}

fn uid_of(admin: &Kubectl, kind: &str, name: &str) -> String {
    let uid = admin.ok(&[
        "get",
        kind,
        name,
        "-n",
        NS,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert!(!uid.is_empty(), "{kind} {name} has no uid");
    uid
}

/// The token authenticates as `system:serviceaccount:tok:<sa>`, for kubectl and a raw request
/// (403 naming the account: it is authenticated but holds no permissions).
async fn assert_accepted(cluster: &SecureCluster, token: &str, sa: &str) {
    let user = format!("system:serviceaccount:{NS}:{sa}");
    let whoami = cluster.token_user(token).ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(whoami, user);
    let (status, body) = raw_get(cluster, token).await;
    assert_eq!(status, 403, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(
        body["message"],
        format!(
            "secrets is forbidden: User \"{user}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"{NS}\""
        )
    );
}

async fn raw_get(cluster: &SecureCluster, token: &str) -> (u16, String) {
    let path = format!("/api/v1/namespaces/{NS}/secrets");
    e2e::https::get_as(
        cluster.server.addr(),
        &cluster.server.ca_file(),
        Some(token),
        &path,
    )
    .await
    .unwrap_or_else(|e| panic!("GET {path}: {e:#}"))
}

/// The token is refused with 401 now: kubectl says to log in, a raw request gets upstream's
/// Status.
async fn assert_refused(cluster: &SecureCluster, token: &str) {
    let (status, body) = raw_get(cluster, token).await;
    assert_eq!(status, 401, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(
        body,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401
        })
    );
    let err = cluster
        .token_user(token)
        .fails(&["get", "configmaps", "-n", NS]);
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: You must be logged in to the server (")),
        "{err}"
    );
}

/// Polls (bounded) until the token is refused: deletions reach the authenticator through a
/// watch, so it may take a moment.
async fn wait_refused(cluster: &SecureCluster, token: &str) {
    // A hang guard, for a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = raw_get(cluster, token).await;
        if status == 401 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} after 60s: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_refused(cluster, token).await;
}

/// A TokenReview of `token` (optionally for `audiences`) by the admin: its status.
fn review(admin: &Kubectl, token: &str, audiences: &[&str]) -> Value {
    let mut review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token}
    });
    if !audiences.is_empty() {
        review["spec"]["audiences"] = json!(audiences);
    }
    // --validate=false: our /openapi/v3 document for authentication.k8s.io/v1 has no path for
    // TokenReview, and kubectl's fallback (/openapi/v2 as protobuf) gets 406 (reported).
    let out = admin.run_with_stdin(
        &["create", "-f", "-", "-o", "json", "--validate=false"],
        &review.to_string(),
    );
    assert!(out.success, "TokenReview failed: {}", out.stderr);
    let review: Value = serde_json::from_str(&out.stdout).expect("TokenReview JSON");
    assert_eq!(review["kind"], "TokenReview", "{review:#}");
    review["status"].clone()
}

fn assert_review_refused(status: &Value) {
    assert!(
        status["authenticated"].is_null() || status["authenticated"] == false,
        "{status:#}"
    );
    assert!(
        status["error"].as_str().is_some_and(|e| !e.is_empty()),
        "a refused token has an error: {status:#}"
    );
    assert!(status["user"].get("username").is_none(), "{status:#}");
}

async fn setup() -> (SecureCluster, Kubectl) {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    admin.ok(&["create", "namespace", NS]);
    admin.ok(&["create", "serviceaccount", "sa", "-n", NS]);
    (cluster, admin)
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_tokens_need_the_key_and_a_future_expiry() {
    let (cluster, admin) = setup().await;
    let uid = uid_of(&admin, "serviceaccount", "sa");
    let real = create_token(&admin, "sa", &[]);
    let header = jwt_part(&real, 0);
    assert_eq!(header["alg"], "ES256", "{header}");
    let payload = jwt_part(&real, 1);
    assert_eq!(payload["iss"], ISSUER, "{payload}");
    assert_eq!(payload["aud"], json!([ISSUER]), "{payload}");
    assert_eq!(payload["sub"], "system:serviceaccount:tok:sa", "{payload}");
    assert_eq!(
        payload["kubernetes.io"]["serviceaccount"],
        json!({"name": "sa", "uid": uid}),
        "{payload}"
    );
    assert_accepted(&cluster, &real, "sa").await;

    let pem = std::fs::read_to_string(&cluster.signing_key).expect("the signing key");
    let key = KeyPair::from_pem(&pem).expect("an ECDSA key");
    let header = json!({"alg": "ES256", "kid": header["kid"]});
    let t = now();

    // The control: a token of our own making, signed with the cluster's key, is accepted.
    let forged = sign_jwt(&key, &header, &claims(NS, "sa", &uid, t - 60, t + 3600));
    assert_accepted(&cluster, &forged, "sa").await;
    let status = review(&admin, &forged, &[]);
    assert_eq!(status["authenticated"], true, "{status:#}");
    assert_eq!(status["user"]["username"], "system:serviceaccount:tok:sa");

    // The same, expired an hour ago (well past upstream's one-minute leeway).
    let expired = sign_jwt(&key, &header, &claims(NS, "sa", &uid, t - 7200, t - 3600));
    assert_refused(&cluster, &expired).await;
    let status = review(&admin, &expired, &[]);
    assert_review_refused(&status);
    assert!(
        status["error"]
            .as_str()
            .unwrap_or_default()
            .contains("expired"),
        "{status:#}"
    );

    // Valid claims under another key, or the real token with its signature altered.
    let other = KeyPair::generate().expect("another key");
    let foreign = sign_jwt(&other, &header, &claims(NS, "sa", &uid, t - 60, t + 3600));
    assert_refused(&cluster, &foreign).await;
    assert_review_refused(&review(&admin, &foreign, &[]));
    let tampered = corrupt_signature(&real);
    assert_ne!(tampered, real);
    assert_refused(&cluster, &tampered).await;
    assert_review_refused(&review(&admin, &tampered, &[]));
    // Changing the claims under the real signature is no better.
    let (_, rest) = real.split_once('.').expect("JWT");
    let (_, sig) = rest.split_once('.').expect("JWT");
    let mut claims_elsewhere = jwt_part(&real, 1);
    claims_elsewhere["sub"] = json!("system:serviceaccount:kube-system:default");
    let spliced = format!(
        "{}.{}.{sig}",
        real.split('.').next().unwrap_or_default(),
        URL_SAFE_NO_PAD.encode(claims_elsewhere.to_string())
    );
    assert_refused(&cluster, &spliced).await;

    // A claimed uid that is not the account's.
    let wrong_uid = sign_jwt(
        &key,
        &header,
        &claims(
            NS,
            "sa",
            "00000000-0000-0000-0000-000000000000",
            t - 60,
            t + 3600,
        ),
    );
    assert_refused(&cluster, &wrong_uid).await;

    // The valid token still works after all that.
    assert_accepted(&cluster, &real, "sa").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn audience_is_checked() {
    let (cluster, admin) = setup().await;
    let other = create_token(&admin, "sa", &["--audience=other"]);
    assert_eq!(jwt_part(&other, 1)["aud"], json!(["other"]));
    assert_refused(&cluster, &other).await;
    assert_review_refused(&review(&admin, &other, &[]));
    // A review for that audience accepts it, and says so.
    let status = review(&admin, &other, &["other"]);
    assert_eq!(status["authenticated"], true, "{status:#}");
    assert_eq!(status["audiences"], json!(["other"]), "{status:#}");

    // The control: the apiserver's own audience, asked for explicitly.
    let own = create_token(&admin, "sa", &[&format!("--audience={ISSUER}")]);
    assert_accepted(&cluster, &own, "sa").await;
    let status = review(&admin, &own, &[]);
    assert_eq!(status["authenticated"], true, "{status:#}");
    assert_eq!(status["audiences"], json!([ISSUER]), "{status:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_bound_token_dies_with_its_pod() {
    let (cluster, admin) = setup().await;
    let out = admin.run_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: tok
spec:
  serviceAccountName: sa
  containers:
  - name: c
    image: busybox
",
    );
    assert!(out.success, "{}", out.stderr);
    let pod_uid = uid_of(&admin, "pod", "p");
    let token = create_token(
        &admin,
        "sa",
        &["--bound-object-kind=Pod", "--bound-object-name=p"],
    );
    let payload = jwt_part(&token, 1);
    assert_eq!(
        payload["kubernetes.io"]["pod"],
        json!({"name": "p", "uid": pod_uid}),
        "{payload}"
    );
    assert_accepted(&cluster, &token, "sa").await;
    let status = review(&admin, &token, &[]);
    assert_eq!(status["authenticated"], true, "{status:#}");
    let user = &status["user"];
    assert_eq!(
        user["username"], "system:serviceaccount:tok:sa",
        "{status:#}"
    );
    assert_eq!(
        user["uid"],
        uid_of(&admin, "serviceaccount", "sa"),
        "{status:#}"
    );
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:tok",
            "system:authenticated"
        ]),
        "{status:#}"
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["p"]),
        "{status:#}"
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid]),
        "{status:#}"
    );

    admin.ok(&[
        "delete",
        "pod",
        "p",
        "-n",
        NS,
        "--grace-period=0",
        "--force",
    ]);
    wait_refused(&cluster, &token).await;
    assert_review_refused(&review(&admin, &token, &[]));

    // A pod of the same name again is another pod: the old token stays dead.
    let out = admin.run_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: tok
spec:
  serviceAccountName: sa
  containers:
  - name: c
    image: busybox
",
    );
    assert!(out.success, "{}", out.stderr);
    assert_ne!(uid_of(&admin, "pod", "p"), pod_uid);
    assert_refused(&cluster, &token).await;
    // A token for a pod that does not exist is not issued at all.
    let out = admin.run(&[
        "create",
        "token",
        "sa",
        "-n",
        NS,
        "--bound-object-kind=Pod",
        "--bound-object-name=nowhere",
    ]);
    assert!(!out.success, "{}", out.stdout);
    assert!(
        out.stderr.contains("pods \"nowhere\" not found"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_dies_with_its_service_account() {
    let (cluster, admin) = setup().await;
    admin.ok(&["create", "serviceaccount", "gone", "-n", NS]);
    let token = create_token(&admin, "gone", &[]);
    assert_accepted(&cluster, &token, "gone").await;
    let status = review(&admin, &token, &[]);
    assert_eq!(status["authenticated"], true, "{status:#}");
    assert_eq!(status["user"]["username"], "system:serviceaccount:tok:gone");

    admin.ok(&["delete", "serviceaccount", "gone", "-n", NS]);
    wait_refused(&cluster, &token).await;
    assert_review_refused(&review(&admin, &token, &[]));
    // An account of the same name again has another uid: the old token stays dead.
    admin.ok(&["create", "serviceaccount", "gone", "-n", NS]);
    assert_refused(&cluster, &token).await;
    let fresh = create_token(&admin, "gone", &[]);
    assert_accepted(&cluster, &fresh, "gone").await;
    // Other accounts' tokens were never affected.
    let sa = create_token(&admin, "sa", &[]);
    assert_accepted(&cluster, &sa, "sa").await;
}
