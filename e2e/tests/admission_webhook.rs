//! Dynamic admission with the real kubectl against our apiserver: a webhook server run by the
//! test (HTTPS, its certificate from a CA the configurations name in `caBundle`) mutates
//! configmaps in labelled namespaces and refuses labelled pods; an unreachable webhook fails
//! its requests closed under `failurePolicy: Fail` and is skipped under `Ignore`.

use base64::Engine;
use bytes::Bytes;
use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;
use e2e::pki::Pki;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The answer to one review: refuse pods labelled `deny=yes`, label configmaps `mutated=yes`.
fn answer(path: &str, request: &Value) -> Value {
    let object = &request["object"];
    if path.starts_with("/validate") {
        if object["metadata"]["labels"]["deny"] == "yes" {
            return json!({"allowed": false, "status": {
                "code": 403, "reason": "Forbidden", "message": "pods labelled deny=yes are refused"}});
        }
        return json!({"allowed": true});
    }
    let patch = if object["metadata"]["labels"].is_object() {
        json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
    } else {
        json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
    };
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"})
}

/// Serves [`answer`] over HTTPS on a loopback port until the test's runtime ends; every
/// request's path and review are recorded.
async fn webhook_server(pki: &Pki) -> (u16, Arc<Mutex<Vec<(String, Value)>>>) {
    let config = pki.tls_server_config(&["127.0.0.1"]);
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let record = record.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let record = record.clone();
                    async move {
                        let path = req.uri().to_string();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap();
                        record.lock().unwrap().push((path.clone(), review.clone()));
                        let mut response = answer(&path, &review["request"]);
                        response["uid"] = review["request"]["uid"].clone();
                        let body = json!({"apiVersion": "admission.k8s.io/v1",
                            "kind": "AdmissionReview", "response": response});
                        let bytes = Bytes::from(body.to_string());
                        Ok::<_, Infallible>(Response::new(Full::new(bytes)))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, seen)
}

fn configurations(port: u16, dead_port: u16, ca_bundle: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: e2e-mutate
webhooks:
- name: mutate.e2e.example.com
  clientConfig:
    url: https://127.0.0.1:{port}/mutate
    caBundle: {ca_bundle}
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  namespaceSelector:
    matchLabels:
      webhooks: "on"
  sideEffects: None
  admissionReviewVersions: ["v1"]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-validate
webhooks:
- name: deny.e2e.example.com
  clientConfig:
    url: https://127.0.0.1:{port}/validate
    caBundle: {ca_bundle}
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
  sideEffects: None
  admissionReviewVersions: ["v1"]
- name: down.e2e.example.com
  clientConfig:
    url: https://127.0.0.1:{dead_port}/down
    caBundle: {ca_bundle}
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["secrets"]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
- name: down-ignored.e2e.example.com
  clientConfig:
    url: https://127.0.0.1:{dead_port}/ignored
    caBundle: {ca_bundle}
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: ["v1"]
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_mutate_refuse_and_fail_by_policy() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("webhook-pki"));
    let (port, seen) = webhook_server(&pki).await;
    let dead_port = e2e::free_port();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    k.ok(&["create", "namespace", "hooks"]);
    k.ok(&["label", "namespace", "hooks", "webhooks=on"]);
    k.ok(&["create", "namespace", "plain"]);
    // No controller manager runs here to create it, and ServiceAccount admission wants it.
    k.ok(&["create", "serviceaccount", "default", "-n", "plain"]);

    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pki.ca_pem());
    let manifest = dir.path().join("webhooks.yaml");
    std::fs::write(&manifest, configurations(port, dead_port, &ca_bundle)).unwrap();
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);

    // The configurations take effect once the apiserver's caches have them: probe with
    // server-side dry runs (the webhooks declare no side effects) until the label appears.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = k.run(&[
            "create",
            "configmap",
            "probe",
            "-n",
            "hooks",
            "--dry-run=server",
            "-o",
            "jsonpath={.metadata.labels.mutated}",
        ]);
        if out.success && out.stdout == "yes" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mutating webhook never applied: {out:?}\n{}",
            server.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let dry_run_review = seen
        .lock()
        .unwrap()
        .last()
        .map(|(_, review)| review.clone())
        .unwrap();
    assert_eq!(dry_run_review["request"]["dryRun"], true);

    // Mutation, where the namespace selector matches and only there.
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "hooks",
        "--from-literal=a=b",
    ]);
    let labels = k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "hooks",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert_eq!(labels, r#"{"mutated":"yes"}"#);
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "plain",
        "--from-literal=a=b",
    ]);
    let labels = k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "plain",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert_eq!(labels, "");
    let review = seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(path, r)| path.starts_with("/mutate") && r["request"]["dryRun"] == false)
        .map(|(_, r)| r.clone())
        .expect("the mutating webhook saw the create");
    assert_eq!(review["request"]["operation"], "CREATE");
    assert_eq!(review["request"]["namespace"], "hooks");
    assert_eq!(
        review["request"]["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(review["request"]["object"]["data"], json!({"a": "b"}));

    // A refusal reaches kubectl with the webhook's status.
    let err = k.fails(&[
        "run",
        "denied",
        "-n",
        "plain",
        "--image=busybox",
        "--labels=deny=yes",
    ]);
    assert!(
        err.contains(
            "Error from server (Forbidden): admission webhook \"deny.e2e.example.com\" denied the request: pods labelled deny=yes are refused"
        ),
        "{err}"
    );
    k.fails(&["get", "pod", "denied", "-n", "plain"]);
    k.ok(&["run", "allowed", "-n", "plain", "--image=busybox"]);

    // The unreachable webhook: Fail refuses secrets with a 500, Ignore let the configmaps in.
    let err = k.fails(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "plain",
        "--from-literal=p=q",
    ]);
    assert!(
        err.contains(&format!(
            "Internal error occurred: failed calling webhook \"down.e2e.example.com\": failed to call webhook: \
             Post \"https://127.0.0.1:{dead_port}/down?timeout=10s\": dial tcp 127.0.0.1:{dead_port}: connect: connection refused"
        )),
        "{err}"
    );
    k.fails(&["get", "secret", "creds", "-n", "plain"]);

    // Writes of the configurations themselves never go through webhooks: deleting them works
    // with the failing webhook in place, and then secrets are admitted again.
    k.ok(&["delete", "validatingwebhookconfiguration", "e2e-validate"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = k.run(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "plain",
            "--from-literal=p=q",
        ]);
        if out.success {
            break;
        }
        assert!(Instant::now() < deadline, "{out:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
