//! CRD webhook conversion with the real kubectl against the real apiserver binary: a CRD
//! stores v1 (`spec.cronSpec`) and serves v2 (`spec.schedule`) through a conversion webhook run
//! by the test (HTTPS, its certificate from a CA named in `caBundle`). Objects are written and
//! read in either version, a list is converted in one review, a watch in the other version
//! sees converted events, a webhook named by a service is reached through its endpoints, a
//! webhook that is down or answers wrongly gives upstream's errors while the storage version
//! still reads, and moving the storage version to v2 keeps v1 in `storedVersions`.

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

/// One object in `to`: v1's `cronSpec` is v2's `schedule`. An object labelled `break=name`
/// comes back renamed, which the apiserver must refuse.
fn convert(object: &Value, to: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(to);
    if let Some(spec) = out["spec"].as_object_mut() {
        let (from, into) = if to.ends_with("/v2") {
            ("cronSpec", "schedule")
        } else {
            ("schedule", "cronSpec")
        };
        if let Some(value) = spec.remove(from) {
            spec.insert(into.into(), value);
        }
    }
    if object["metadata"]["labels"]["break"] == "name" {
        out["metadata"]["name"] = json!("someone-else");
    }
    out
}

type Seen = Arc<Mutex<Vec<Value>>>;

/// Serves conversion reviews over HTTPS on a loopback port until the test's runtime ends;
/// every review's request is recorded.
async fn conversion_webhook(pki: &Pki) -> (u16, Seen) {
    let config = pki.tls_server_config(&["127.0.0.1", "conv.default.svc"]);
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
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
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap();
                        let request = review["request"].clone();
                        record.lock().unwrap().push(request.clone());
                        let to = request["desiredAPIVersion"].as_str().unwrap_or_default();
                        let converted: Vec<Value> = request["objects"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|o| convert(o, to))
                            .collect();
                        let answer = json!({
                            "apiVersion": "apiextensions.k8s.io/v1",
                            "kind": "ConversionReview",
                            "response": {
                                "uid": request["uid"],
                                "result": {"status": "Success"},
                                "convertedObjects": converted,
                            },
                        });
                        let bytes = Bytes::from(answer.to_string());
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

fn crd(url: &str, ca_bundle: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        url: {url}
        caBundle: {ca_bundle}
      conversionReviewVersions: ["v1", "v1beta1"]
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
              image:
                type: string
  - name: v2
    served: true
    storage: false
    additionalPrinterColumns:
    - name: Schedule
      type: string
      jsonPath: .spec.schedule
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule:
                type: string
              image:
                type: string
"#
    )
}

fn crontab(version: &str, name: &str, field: &str, value: &str, labels: &str) -> String {
    format!(
        r#"apiVersion: stable.example.com/{version}
kind: CronTab
metadata:
  name: {name}
  namespace: default
  labels: {{{labels}}}
spec:
  {field}: "{value}"
  image: my-awesome-cron-image
"#
    )
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// Waits (a readiness wait, not a timing assertion) until `check` holds for kubectl `args`.
fn eventually(
    k: &Kubectl,
    args: &[&str],
    what: &str,
    check: impl Fn(&e2e::kubectl::Output) -> bool,
) -> e2e::kubectl::Output {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = k.run(args);
        if check(&out) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {}: never {what}\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            out.stdout,
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The reviews recorded since `from` that asked for `version`, as their object counts.
fn reviews_for(seen: &Seen, from: usize, version: &str) -> Vec<usize> {
    seen.lock().unwrap()[from..]
        .iter()
        .filter(|r| r["desiredAPIVersion"] == version)
        .map(|r| r["objects"].as_array().map_or(0, Vec::len))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_conversion_with_the_real_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("webhook-pki"));
    let (port, seen) = conversion_webhook(&pki).await;
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pki.ca_pem());
    let write = |name: &str, text: &str| {
        let path = k.dir().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let url = format!("https://127.0.0.1:{port}/convert");
    let crd_file = write("crd.yaml", &crd(&url, &ca_bundle));
    k.ok(&["apply", "-f", &crd_file]);
    eventually(
        &k,
        &["get", "crontabs.v2.stable.example.com"],
        "served",
        |o| o.success,
    );

    // Created through v2: stored in v1 by the webhook, read back in either version.
    let v2_file = write(
        "v2.yaml",
        &crontab("v2", "from-v2", "schedule", "*/5 * * * *", ""),
    );
    let created = k.ok(&["create", "-f", &v2_file, "-o", "json"]);
    let created = json_of(&created);
    assert_eq!(created["apiVersion"], "stable.example.com/v2");
    assert_eq!(created["spec"]["schedule"], "*/5 * * * *");
    assert!(reviews_for(&seen, 0, "stable.example.com/v1").contains(&1));

    let v1 = json_of(&k.ok(&[
        "get",
        "crontabs.v1.stable.example.com",
        "from-v2",
        "-o",
        "json",
    ]));
    assert_eq!(v1["apiVersion"], "stable.example.com/v1");
    assert_eq!(
        v1["spec"],
        json!({"cronSpec": "*/5 * * * *", "image": "my-awesome-cron-image"})
    );
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);
    let v2 = json_of(&k.ok(&[
        "get",
        "crontabs.v2.stable.example.com",
        "from-v2",
        "-o",
        "json",
    ]));
    assert_eq!(v2["apiVersion"], "stable.example.com/v2");
    assert_eq!(
        v2["spec"],
        json!({"schedule": "*/5 * * * *", "image": "my-awesome-cron-image"})
    );
    assert_eq!(
        v2["metadata"]["resourceVersion"],
        v1["metadata"]["resourceVersion"]
    );

    // Created through v1 (the storage version: no review on the way in).
    let v1_file = write(
        "v1.yaml",
        &crontab("v1", "from-v1", "cronSpec", "0 * * * *", ""),
    );
    k.ok(&["create", "-f", &v1_file]);

    // A list in v2 (by name: from-v1 first) is one review of both objects; its table uses v2's printer columns.
    let before = seen.lock().unwrap().len();
    let list = json_of(&k.ok(&["get", "crontabs.v2.stable.example.com", "-o", "json"]));
    let schedules: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["schedule"])
        .collect();
    assert_eq!(schedules, [&json!("0 * * * *"), &json!("*/5 * * * *")]);
    assert_eq!(reviews_for(&seen, before, "stable.example.com/v2"), [2]);
    let table = k.ok(&["get", "crontabs.v2.stable.example.com"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SCHEDULE"], "{table}");
    assert!(table.contains("0 * * * *"), "{table}");
    let table = k.ok(&["get", "crontabs.v1.stable.example.com"]);
    assert!(table.contains("*/5 * * * *"), "{table}");

    // A watch in v2 sees converted events.
    let mut watch = k.spawn(&[
        "get",
        "crontabs.v2.stable.example.com",
        "-w",
        "-o",
        "jsonpath={.metadata.name}={.spec.schedule}{\"\\n\"}",
    ]);
    watch.wait_for(Duration::from_secs(20), "the initial objects", |out| {
        out.contains("from-v1=0 * * * *")
    });

    // A merge patch through v2 changes the v1 field.
    k.ok(&[
        "patch",
        "crontabs.v2.stable.example.com",
        "from-v1",
        "--type=merge",
        "-p",
        r#"{"spec":{"schedule":"30 1 * * *"}}"#,
    ]);
    let v1 = json_of(&k.ok(&[
        "get",
        "crontabs.v1.stable.example.com",
        "from-v1",
        "-o",
        "json",
    ]));
    assert_eq!(v1["spec"]["cronSpec"], "30 1 * * *");
    assert!(v1["spec"].get("schedule").is_none(), "{v1}");
    watch.wait_for(Duration::from_secs(20), "the patched object", |out| {
        out.contains("from-v1=30 1 * * *")
    });
    drop(watch);

    // Labels through v2 survive (the webhook may change only labels and annotations).
    k.ok(&[
        "label",
        "crontabs.v2.stable.example.com",
        "from-v2",
        "team=a",
    ]);
    let v1 = json_of(&k.ok(&[
        "get",
        "crontabs.v1.stable.example.com",
        "from-v2",
        "-o",
        "json",
    ]));
    assert_eq!(v1["metadata"]["labels"]["team"], "a");

    // Server-side apply through v2 starts from the object in v2 (the field kubectl create set
    // there is owned, as upstream reports) and stores it in v1.
    let applied = write(
        "applied.yaml",
        &crontab("v2", "from-v2", "schedule", "*/7 * * * *", "team: a"),
    );
    let err = k.fails(&["apply", "--server-side", "-f", &applied]);
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using stable.example.com/v2: .spec.schedule"
        ),
        "{err}"
    );
    k.ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &applied,
    ]);
    let v1 = json_of(&k.ok(&[
        "get",
        "crontabs.v1.stable.example.com",
        "from-v2",
        "-o",
        "json",
    ]));
    assert_eq!(v1["spec"]["cronSpec"], "*/7 * * * *");
    assert!(v1["spec"].get("schedule").is_none(), "{v1}");

    // A webhook that renames the object is refused with upstream's message.
    let broken = write(
        "broken.yaml",
        &crontab("v2", "broken", "schedule", "1 1 * * *", "break: name"),
    );
    let err = k.fails(&["create", "-f", &broken]);
    assert!(
        err.contains("Internal error occurred: conversion webhook for stable.example.com/v2, Kind=CronTab returned invalid object: must have the same name: broken != someone-else"),
        "{err}"
    );

    // Each review is timed in upstream's metric.
    let (code, metrics) = server.get("/metrics").await.unwrap();
    assert_eq!(code, 200);
    assert!(
        metrics.lines().any(|l| l
            .starts_with("apiserver_crd_conversion_webhook_duration_seconds_count{")
            && l.contains("crd_name=\"crontabs.stable.example.com\"")
            && l.contains("from_version=\"v2\"")
            && l.contains("to_version=\"v1\"")
            && l.contains("succeeded=\"true\"")),
        "{metrics}"
    );

    // storedVersions names only the storage version.
    let stored = k.ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.storedVersions}",
    ]);
    assert_eq!(stored, r#"["v1"]"#);

    // The webhook named by a service: reached through the service's endpoints (there are none
    // at first), its certificate checked for `conv.default.svc`.
    let set_client_config = |config: Value| {
        let patch = json!([{"op": "replace", "path": "/spec/conversion/webhook/clientConfig",
                            "value": config}]);
        k.ok(&[
            "patch",
            "crd",
            "crontabs.stable.example.com",
            "--type=json",
            "-p",
            &patch.to_string(),
        ]);
    };
    let service = write(
        "service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: conv\n  namespace: default\nspec:\n  ports:\n  - port: 443\n",
    );
    k.ok(&["create", "-f", &service]);
    set_client_config(json!({"caBundle": ca_bundle, "service": {
        "namespace": "default", "name": "conv", "path": "/convert", "port": 443}}));
    let out = eventually(
        &k,
        &["get", "crontabs.v2.stable.example.com", "from-v2"],
        "failing without endpoints",
        |o| !o.success,
    );
    assert!(
        out.stderr.contains(
            "conversion webhook for stable.example.com/v1, Kind=CronTab failed: no endpoints available for service \"conv\""
        ),
        "{}",
        out.stderr
    );
    let endpoints = write(
        "endpoints.yaml",
        &format!(
            "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: conv\n  namespace: default\nsubsets:\n- addresses:\n  - ip: 127.0.0.1\n  ports:\n  - port: {port}\n"
        ),
    );
    k.ok(&["create", "-f", &endpoints]);
    let out = eventually(
        &k,
        &[
            "get",
            "crontabs.v2.stable.example.com",
            "from-v2",
            "-o",
            "json",
        ],
        "converting through the service",
        |o| o.success,
    );
    assert_eq!(json_of(&out.stdout)["spec"]["schedule"], "*/7 * * * *");

    // The webhook goes away: reads in v2 and writes through v2 fail with upstream's error; the
    // storage version still reads, since nothing needs converting.
    let dead = e2e::free_port();
    let dead_url = format!("https://127.0.0.1:{dead}/convert");
    set_client_config(json!({"caBundle": ca_bundle, "url": dead_url}));
    let refused = format!(
        "Post \"{dead_url}?timeout=30s\": dial tcp 127.0.0.1:{dead}: connect: connection refused"
    );
    let out = eventually(
        &k,
        &["get", "crontabs.v2.stable.example.com", "from-v2"],
        "failing",
        |o| !o.success,
    );
    assert!(
        out.stderr.contains(&format!(
            "Error from server (InternalError): Internal error occurred: conversion webhook for stable.example.com/v1, Kind=CronTab failed: {refused}"
        )),
        "{}",
        out.stderr
    );
    let err = k.fails(&["get", "crontabs.v2.stable.example.com"]);
    assert!(
        err.contains(&format!(
            "Internal error occurred: conversion webhook for stable.example.com/v2, Kind=CronTabList failed: {refused}"
        )),
        "{err}"
    );
    // A watch in v2 ends with the conversion's error as an ERROR event.
    let (code, body) = server
        .get("/apis/stable.example.com/v2/namespaces/default/crontabs?watch=1&timeoutSeconds=20")
        .await
        .unwrap();
    assert_eq!(code, 200, "{body}");
    let events: Vec<Value> = body.lines().map(json_of).collect();
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 500);
    assert_eq!(events[0]["object"]["reason"], "InternalError");
    assert!(
        events[0]["object"]["message"]
            .as_str()
            .unwrap()
            .contains("conversion webhook for stable.example.com/v1, Kind=CronTab failed"),
        "{body}"
    );
    let again = write(
        "again.yaml",
        &crontab("v2", "again", "schedule", "2 2 * * *", ""),
    );
    let err = k.fails(&["create", "-f", &again]);
    assert!(
        err.contains(&format!(
            "Internal error occurred: conversion webhook for stable.example.com/v2, Kind=CronTab failed: {refused}"
        )),
        "{err}"
    );
    let names = k.ok(&[
        "get",
        "crontabs.v1.stable.example.com",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert_eq!(names, "from-v1 from-v2");

    // v2 becomes the storage version: storedVersions keeps v1 (objects are still stored in
    // it), and a v2 object is now written without the (still dead) webhook.
    let flip = json!([
        {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": true},
    ]);
    k.ok(&[
        "patch",
        "crd",
        "crontabs.stable.example.com",
        "--type=json",
        "-p",
        &flip.to_string(),
    ]);
    eventually(
        &k,
        &[
            "get",
            "crd",
            "crontabs.stable.example.com",
            "-o",
            "jsonpath={.status.storedVersions}",
        ],
        "listing v2 as stored",
        |o| o.stdout == r#"["v1","v2"]"#,
    );
    k.ok(&["create", "-f", &again]);
    let again = json_of(&k.ok(&[
        "get",
        "crontabs.v2.stable.example.com",
        "again",
        "-o",
        "json",
    ]));
    assert_eq!(again["spec"]["schedule"], "2 2 * * *");
    let err = k.fails(&["get", "crontabs.v1.stable.example.com", "again"]);
    assert!(
        err.contains(&format!(
            "Internal error occurred: conversion webhook for stable.example.com/v2, Kind=CronTab failed: {refused}"
        )),
        "{err}"
    );
}
