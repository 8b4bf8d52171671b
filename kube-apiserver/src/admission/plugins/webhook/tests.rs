//! Webhooks called for real: an HTTPS server in the test, its certificate issued by a CA the
//! webhook configuration names in `caBundle`.

use super::*;
use crate::admission::plugins::webhook::matching::tests::{FakeLookup, attrs};
use base64::Engine;
use bytes::Bytes;
use component_base::serving::{ServingCert, serve, tls_config};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::PrivateKeyDer;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca() -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

fn serving_cert(ca: &Ca) -> ServingCert {
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "hooks.sys.svc".to_string()]).unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    ServingCert {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    }
}

/// What the test server answers: the `response` of the review (the uid is filled in) for a
/// request path and review.
type Handler = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// A webhook server; every review it received, with its path.
struct Server {
    port: u16,
    ca_bundle: String,
    received: Arc<Mutex<Vec<(String, Value)>>>,
    shutdown: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Server {
    fn calls(&self, path: &str) -> usize {
        self.received
            .lock()
            .iter()
            .filter(|(p, _)| p.starts_with(path))
            .count()
    }
}

async fn start(delay: Duration, handler: Handler) -> Server {
    start_with(&ca(), 0, delay, handler).await
}

/// A server with a certificate from `ca`, on `port` (0: any).
async fn start_with(ca: &Ca, port: u16, delay: Duration, handler: Handler) -> Server {
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = received.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let handler = handler.clone();
        let seen = seen.clone();
        async move {
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let review: Value = serde_json::from_slice(&body).unwrap();
            seen.lock().push((path.clone(), review.clone()));
            tokio::time::sleep(delay).await;
            let mut response = handler(&path, &review);
            response["uid"] = review["request"]["uid"].clone();
            let answer = json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": response,
            });
            let bytes = Bytes::from(serde_json::to_vec(&answer).unwrap());
            Ok::<_, Infallible>(Response::new(Full::new(bytes)))
        }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let tls = tls_config(serving_cert(ca)).unwrap();
    let running = serve(listener, Some(tls), service, shutdown.clone()).unwrap();
    Server {
        port: running.local_addr.port(),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(&ca.pem),
        received,
        shutdown,
    }
}

fn all_rules() -> Value {
    json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}])
}

/// A webhook of `server` at `path`, with `extra` fields merged in.
fn hook(name: &str, server: &Server, path: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {
            "url": format!("https://127.0.0.1:{}{path}", server.port),
            "caBundle": server.ca_bundle,
        },
        "rules": all_rules(),
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    hook.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    hook
}

fn configs(lookup: FakeLookup, kind: Kind, name: &str, hooks: Vec<Value>) -> FakeLookup {
    let plural = match kind {
        Kind::Mutating => "mutatingwebhookconfigurations",
        Kind::Validating => "validatingwebhookconfigurations",
    };
    lookup.with(
        config::GROUP,
        plural,
        json!({"metadata": {"name": name}, "webhooks": hooks}),
    )
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn create_pod() -> Attributes {
    attrs(Operation::Create, "", "pods", "", "ns", "p")
}

fn deny(message: &str) -> Handler {
    let message = message.to_string();
    Arc::new(
        move |_, _| json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": message}}),
    )
}

fn allow() -> Handler {
    Arc::new(|_, _| json!({"allowed": true}))
}

#[tokio::test]
async fn a_validating_webhook_refusal_reaches_the_client() {
    let server = start(Duration::ZERO, deny("no pods here")).await;
    let lookup = configs(
        FakeLookup::default(),
        Kind::Validating,
        "deny",
        vec![hook("deny.example.com", &server, "/validate", json!({}))],
    );
    let err = ValidatingAdmissionWebhook::default()
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 403);
    assert_eq!(err.reason(), "Forbidden");
    assert_eq!(
        err.message(),
        "admission webhook \"deny.example.com\" denied the request: no pods here"
    );
    let received = server.received.lock().clone();
    assert_eq!(received.len(), 1);
    let (path, review) = &received[0];
    assert_eq!(path, "/validate?timeout=10s");
    assert_eq!(review["request"]["operation"], "CREATE");
    assert_eq!(review["request"]["object"], pod());
    assert_eq!(review["request"]["userInfo"]["username"], "alice");
}

#[tokio::test]
async fn requests_outside_the_rules_or_selectors_are_not_sent() {
    let server = start(Duration::ZERO, deny("no")).await;
    let deployments_only = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
        "apiVersions": ["v1"], "resources": ["deployments"]}]});
    let labelled_only = json!({"objectSelector": {"matchLabels": {"checked": "yes"}}});
    let lookup = configs(
        FakeLookup::default(),
        Kind::Validating,
        "narrow",
        vec![
            hook("deploy.example.com", &server, "/a", deployments_only),
            hook("labelled.example.com", &server, "/b", labelled_only),
        ],
    );
    let plugin = ValidatingAdmissionWebhook::default();
    plugin
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .expect("no webhook matches");
    assert_eq!(server.calls("/"), 0);

    // Writes of the configurations themselves never reach webhooks.
    let everything = configs(
        FakeLookup::default(),
        Kind::Validating,
        "all",
        vec![hook("all.example.com", &server, "/c", json!({}))],
    );
    let config_write = attrs(
        Operation::Create,
        config::GROUP,
        "validatingwebhookconfigurations",
        "",
        "",
        "x",
    );
    plugin
        .run(
            &config_write,
            Some(&json!({"metadata": {"name": "x"}})),
            None,
            &everything,
        )
        .await
        .expect("exempt");
    assert_eq!(server.calls("/"), 0);

    let mut labelled = pod();
    labelled["metadata"]["labels"] = json!({"checked": "yes"});
    let err = plugin
        .run(&create_pod(), Some(&labelled), None, &lookup)
        .await
        .unwrap_err();
    assert!(err.message().contains("labelled.example.com"), "{err:?}");
    assert_eq!(server.calls("/b"), 1);
}

#[tokio::test]
async fn a_mutating_webhook_behind_a_service_patches_the_object() {
    let patch = base64::engine::general_purpose::STANDARD
        .encode(r#"[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}}]"#);
    let server = start(
        Duration::ZERO,
        Arc::new(move |_, _| json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"})),
    )
    .await;
    let lookup = FakeLookup::default()
        .with(
            "",
            "services",
            json!({"metadata": {"name": "hooks", "namespace": "sys"},
                   "spec": {"ports": [{"name": "https", "port": 443, "targetPort": "web"}]}}),
        )
        .with(
            "",
            "endpoints",
            json!({"metadata": {"name": "hooks", "namespace": "sys"}, "subsets": [
                {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]}),
        );
    let lookup = configs(
        lookup,
        Kind::Mutating,
        "inject",
        vec![json!({
            "name": "inject.example.com",
            "clientConfig": {
                "service": {"namespace": "sys", "name": "hooks", "path": "/mutate"},
                "caBundle": server.ca_bundle,
            },
            "rules": all_rules(),
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })],
    );
    let mut object = pod();
    MutatingAdmissionWebhook::default()
        .run(&create_pod(), &mut object, None, &lookup)
        .await
        .expect("allowed");
    assert_eq!(object["metadata"]["labels"], json!({"injected": "yes"}));
    assert_eq!(server.calls("/mutate?timeout=10s"), 1);
}

#[tokio::test]
async fn if_needed_webhooks_run_again_after_a_later_change() {
    let patch = base64::engine::general_purpose::STANDARD
        .encode(r#"[{"op":"add","path":"/metadata/annotations","value":{"late":"1"}}]"#);
    let server = start(
        Duration::ZERO,
        Arc::new(move |path, _| {
            if path.starts_with("/late") {
                json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"})
            } else {
                json!({"allowed": true})
            }
        }),
    )
    .await;
    let lookup = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "a",
        vec![
            hook(
                "again.example.com",
                &server,
                "/again",
                json!({"reinvocationPolicy": "IfNeeded"}),
            ),
            hook(
                "once.example.com",
                &server,
                "/once",
                json!({"reinvocationPolicy": "Never"}),
            ),
            hook("late.example.com", &server, "/late", json!({})),
        ],
    );
    let mut object = pod();
    MutatingAdmissionWebhook::default()
        .run(&create_pod(), &mut object, None, &lookup)
        .await
        .unwrap();
    assert_eq!(server.calls("/again"), 2);
    assert_eq!(server.calls("/once"), 1);
    assert_eq!(server.calls("/late"), 1);
    // The second call saw the later webhook's change.
    let received = server.received.lock().clone();
    let last_again = received
        .iter()
        .rev()
        .find(|(p, _)| p.starts_with("/again"))
        .unwrap();
    assert_eq!(
        last_again.1["request"]["object"]["metadata"]["annotations"]["late"],
        "1"
    );
}

#[tokio::test]
async fn no_change_after_an_if_needed_webhook_means_no_second_call() {
    let server = start(Duration::ZERO, allow()).await;
    let lookup = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "a",
        vec![
            hook(
                "again.example.com",
                &server,
                "/again",
                json!({"reinvocationPolicy": "IfNeeded"}),
            ),
            hook("quiet.example.com", &server, "/quiet", json!({})),
        ],
    );
    MutatingAdmissionWebhook::default()
        .run(&create_pod(), &mut pod(), None, &lookup)
        .await
        .unwrap();
    assert_eq!(server.calls("/again"), 1);
}

#[tokio::test]
async fn an_unreachable_webhook_fails_closed_or_open_by_policy() {
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = |policy: &str| {
        json!({"name": "down.example.com",
               "clientConfig": {"url": format!("https://127.0.0.1:{port}/x")},
               "rules": all_rules(), "sideEffects": "None", "failurePolicy": policy,
               "admissionReviewVersions": ["v1"]})
    };
    let plugin = ValidatingAdmissionWebhook::default();
    let fail = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![down("Fail")],
    );
    let err = plugin
        .run(&create_pod(), Some(&pod()), None, &fail)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 500);
    assert_eq!(err.reason(), "InternalError");
    assert_eq!(
        err.message(),
        format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: \
             Post \"https://127.0.0.1:{port}/x?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let ignore = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![down("Ignore")],
    );
    plugin
        .run(&create_pod(), Some(&pod()), None, &ignore)
        .await
        .expect("failurePolicy Ignore admits");

    let mutating = MutatingAdmissionWebhook::default();
    let fail = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "c",
        vec![down("Fail")],
    );
    let err = mutating
        .run(&create_pod(), &mut pod(), None, &fail)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 500);
    let ignore = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "c",
        vec![down("Ignore")],
    );
    mutating
        .run(&create_pod(), &mut pod(), None, &ignore)
        .await
        .expect("failurePolicy Ignore admits");
}

#[tokio::test]
async fn a_slow_webhook_times_out() {
    let server = start(Duration::from_secs(5), allow()).await;
    let lookup = configs(
        FakeLookup::default(),
        Kind::Validating,
        "slow",
        vec![hook(
            "slow.example.com",
            &server,
            "/slow",
            json!({"timeoutSeconds": 1}),
        )],
    );
    let started = Instant::now();
    let err = ValidatingAdmissionWebhook::default()
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(
        err.message(),
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: \
             Post \"https://127.0.0.1:{}/slow?timeout=1s\": context deadline exceeded",
            server.port
        )
    );
}

#[tokio::test]
async fn validating_webhooks_run_concurrently() {
    let server = start(Duration::from_millis(800), allow()).await;
    let hooks = (0..3)
        .map(|i| {
            hook(
                &format!("h{i}.example.com"),
                &server,
                &format!("/h{i}"),
                json!({}),
            )
        })
        .collect();
    let lookup = configs(FakeLookup::default(), Kind::Validating, "c", hooks);
    let started = Instant::now();
    ValidatingAdmissionWebhook::default()
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .unwrap();
    assert_eq!(server.calls("/h"), 3);
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_not_trusted() {
    let server = start(Duration::ZERO, allow()).await;
    let mut untrusted = hook("mitm.example.com", &server, "/x", json!({}));
    untrusted["clientConfig"]["caBundle"] =
        json!(base64::engine::general_purpose::STANDARD.encode(ca().pem));
    let lookup = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![untrusted],
    );
    let err = ValidatingAdmissionWebhook::default()
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 500);
    assert!(err.message().contains(": tls: "), "{}", err.message());
    assert_eq!(server.calls("/"), 0);
}

#[tokio::test]
async fn dry_runs_need_webhooks_without_side_effects() {
    let server = start(Duration::ZERO, allow()).await;
    let mut dry = create_pod();
    dry.dry_run = true;
    let with_effects = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![hook(
            "effects.example.com",
            &server,
            "/x",
            json!({"sideEffects": "Some", "failurePolicy": "Ignore"}),
        )],
    );
    let plugin = ValidatingAdmissionWebhook::default();
    let err = plugin
        .run(&dry, Some(&pod()), None, &with_effects)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 400);
    assert_eq!(
        err.message(),
        "admission webhook \"effects.example.com\" does not support dry run"
    );
    assert_eq!(server.calls("/"), 0);
    // Without a dry run the same webhook is called.
    plugin
        .run(&create_pod(), Some(&pod()), None, &with_effects)
        .await
        .unwrap();
    assert_eq!(server.calls("/x"), 1);

    let on_dry_run = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![hook(
            "safe.example.com",
            &server,
            "/safe",
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    );
    plugin
        .run(&dry, Some(&pod()), None, &on_dry_run)
        .await
        .unwrap();
    assert_eq!(server.calls("/safe"), 1);
    assert_eq!(
        server.received.lock().last().unwrap().1["request"]["dryRun"],
        true
    );
}

#[tokio::test]
async fn a_mutating_webhook_may_refuse_a_delete_but_not_patch_it() {
    let patch =
        base64::engine::general_purpose::STANDARD.encode(r#"[{"op":"add","path":"/x","value":1}]"#);
    let server = start(
        Duration::ZERO,
        Arc::new(move |path, _| {
            if path.starts_with("/deny") {
                json!({"allowed": false, "status": {"message": "keep it"}})
            } else {
                json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"})
            }
        }),
    )
    .await;
    let delete = attrs(Operation::Delete, "", "pods", "", "ns", "p");
    let plugin = MutatingAdmissionWebhook::default();
    let denying = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "c",
        vec![hook("deny.example.com", &server, "/deny", json!({}))],
    );
    let err = plugin
        .run(&delete, &mut Value::Null, Some(&pod()), &denying)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 400);
    assert_eq!(
        err.message(),
        "admission webhook \"deny.example.com\" denied the request: keep it"
    );
    assert_eq!(server.received.lock()[0].1["request"]["oldObject"], pod());

    let patching = configs(
        FakeLookup::default(),
        Kind::Mutating,
        "c",
        vec![hook("patch.example.com", &server, "/patch", json!({}))],
    );
    let err = plugin
        .run(&delete, &mut Value::Null, Some(&pod()), &patching)
        .await
        .unwrap_err();
    assert_eq!(err.code().as_u16(), 500);
    assert!(err.message().contains("attempted to modify the object"));
}

#[tokio::test]
async fn calls_reuse_kept_alive_connections() {
    let ca = ca();
    let server = start_with(&ca, 0, Duration::ZERO, allow()).await;
    let lookup = configs(
        FakeLookup::default(),
        Kind::Validating,
        "c",
        vec![hook("ok.example.com", &server, "/ok", json!({}))],
    );
    let plugin = ValidatingAdmissionWebhook::default();
    for _ in 0..3 {
        plugin
            .run(&create_pod(), Some(&pod()), None, &lookup)
            .await
            .unwrap();
    }
    assert_eq!(server.calls("/ok"), 3);
    // One connection served all three calls.
    assert_eq!(plugin.client.idle_connections(), 1);

    // The server restarts on the same address: the connection it closed is replaced, not an
    // error.
    let port = server.port;
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server = start_with(&ca, port, Duration::ZERO, allow()).await;
    plugin
        .run(&create_pod(), Some(&pod()), None, &lookup)
        .await
        .unwrap();
    assert_eq!(server.calls("/ok"), 1);
    assert_eq!(plugin.client.idle_connections(), 1);
}
