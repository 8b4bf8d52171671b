//! Bad requests to our apiserver: each gets the right 4xx as a `Status` object, the server stays
//! up, and nothing stored changes.

use e2e::apiserver::{ApiServer, Backend};
use e2e::https::{Conn, Version};
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Every ConfigMap in the cluster, as (namespace/name, resourceVersion, data).
async fn snapshot(server: &ApiServer) -> Vec<(String, String, Value)> {
    let list = server.get_json("/api/v1/configmaps").await;
    let mut items: Vec<_> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                format!(
                    "{}/{}",
                    item["metadata"]["namespace"].as_str().unwrap_or_default(),
                    item["metadata"]["name"].as_str().unwrap_or_default()
                ),
                item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                item["data"].clone(),
            )
        })
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

/// One bad request and the Status it must get.
struct Case<'a> {
    what: &'a str,
    method: &'a str,
    path: &'a str,
    content_type: Option<&'a str>,
    body: Vec<u8>,
    code: u16,
    reason: &'a str,
    /// A part of the Status message.
    message: &'a str,
}

/// Checks that `body` is a failure `Status` with `code` and `reason`; returns it.
fn check_status(
    what: &str,
    status: u16,
    body: &str,
    code: u16,
    reason: &str,
    message: &str,
) -> Value {
    assert_eq!(status, code, "{what}: HTTP status; body: {body}");
    let parsed: Value = serde_json::from_str(body)
        .unwrap_or_else(|err| panic!("{what}: the body is not JSON ({err}): {body}"));
    assert_eq!(parsed["kind"], "Status", "{what}: {body}");
    assert_eq!(parsed["apiVersion"], "v1", "{what}: {body}");
    assert_eq!(parsed["status"], "Failure", "{what}: {body}");
    assert_eq!(parsed["code"], code, "{what}: {body}");
    assert_eq!(parsed["reason"], reason, "{what}: {body}");
    let text = parsed["message"].as_str().unwrap_or_default();
    assert!(
        text.contains(message),
        "{what}: message {text:?} lacks {message:?}"
    );
    parsed
}

async fn run(server: &ApiServer, case: Case<'_>) -> Value {
    let before = snapshot(server).await;
    let (status, body) = server
        .request(case.method, case.path, case.content_type, case.body)
        .await
        .unwrap_or_else(|err| panic!("{}: no response: {err:#}\n{}", case.what, server.logs()));
    let parsed = check_status(
        case.what,
        status,
        &body,
        case.code,
        case.reason,
        case.message,
    );
    // The server is still up and answers the next request; nothing changed.
    let (status, ready) = server
        .get("/readyz")
        .await
        .unwrap_or_else(|err| panic!("after {}: {err:#}\n{}", case.what, server.logs()));
    assert_eq!((status, ready.as_str()), (200, "ok"), "after {}", case.what);
    assert_eq!(
        snapshot(server).await,
        before,
        "{} changed the store",
        case.what
    );
    parsed
}

fn configmap(name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    }))
    .unwrap()
}

/// A ConfigMap whose data value makes the body `size` bytes or more.
fn big_configmap(size: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"k": "x".repeat(size)},
    }))
    .unwrap()
}

async fn bad_requests(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(dir.path(), backend).await.unwrap();

    // A ConfigMap to update, updated once so its first resourceVersion is stale.
    let (status, body) = server
        .request(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            configmap("seed"),
        )
        .await
        .unwrap();
    assert_eq!(status, 201, "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();
    assert!(
        created["metadata"]["resourceVersion"].is_string(),
        "{created}"
    );
    let mut updated = created.clone();
    updated["data"]["k"] = json!("v2");
    let seed = format!("{CONFIGMAPS}/seed");
    let (status, body) = server
        .request(
            "PUT",
            &seed,
            Some("application/json"),
            serde_json::to_vec(&updated).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let mut stale = created.clone();
    stale["data"]["k"] = json!("from a stale read");

    // An immutable ConfigMap.
    let (status, body) = server
        .request(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            serde_json::to_vec(&json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"},
                "immutable": true, "data": {"k": "v"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(status, 201, "{body}");

    let yaml = Some("application/yaml");
    let js = Some("application/json");
    let nested = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"extra":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let cases = vec![
        Case {
            what: "truncated JSON",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"#.to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "JSON that is not an object",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: b"[1, 2, 3]".to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "malformed YAML",
            method: "POST",
            path: CONFIGMAPS,
            content_type: yaml,
            body: b"apiVersion: v1\nkind: ConfigMap\nmetadata: [\n  name: x\n".to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "YAML with a tab indent",
            method: "POST",
            path: CONFIGMAPS,
            content_type: yaml,
            body: b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n".to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "a Secret posted to configmaps",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"wrong-kind"}}"#
                .to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "Secret",
        },
        Case {
            what: "an unknown apiVersion",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"wrong-version"}}"#
                .to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "v2",
        },
        Case {
            what: "another group's apiVersion",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"wrong-group"}}"#
                .to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "apps/v1",
        },
        Case {
            what: "a name with invalid characters",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: configmap("Bad_Name!"),
            code: 422,
            reason: "Invalid",
            message: "ConfigMap \"Bad_Name!\" is invalid: metadata.name: Invalid value: \"Bad_Name!\"",
        },
        Case {
            what: "neither name nor generateName",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(),
            code: 422,
            reason: "Invalid",
            message: "name or generateName is required",
        },
        Case {
            what: "another namespace in the body",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}"#
                .to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "the namespace of the provided object does not match the namespace sent on the request",
        },
        Case {
            what: "a 4 MiB body",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: big_configmap(4 << 20),
            code: 413,
            reason: "RequestEntityTooLarge",
            message: "limit is 3145728",
        },
        Case {
            what: "a value over the 1 MiB ConfigMap limit",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: big_configmap(2 << 20),
            code: 422,
            reason: "Invalid",
            message: "may not be more than 1048576 bytes",
        },
        Case {
            what: "a body nested 100000 deep",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: nested.into_bytes(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "an unknown field under fieldValidation=Strict",
            method: "POST",
            path: "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
            content_type: js,
            body: br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}"#
                .to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "unknown field \"bogus\"",
        },
        Case {
            what: "an unsupported content type",
            method: "POST",
            path: CONFIGMAPS,
            content_type: Some("text/plain"),
            body: configmap("plain"),
            code: 415,
            reason: "UnsupportedMediaType",
            message: "",
        },
        Case {
            what: "an unknown field selector",
            method: "GET",
            path: "/api/v1/namespaces/default/configmaps?fieldSelector=spec.foo%3Dbar",
            content_type: None,
            body: Vec::new(),
            code: 400,
            reason: "BadRequest",
            message: "field label not supported: spec.foo",
        },
        Case {
            what: "a bad label selector",
            method: "GET",
            path: "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
            content_type: None,
            body: Vec::new(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "a label selector with an invalid key",
            method: "GET",
            path: "/api/v1/namespaces/default/configmaps?labelSelector=-bad-%3Dx",
            content_type: None,
            body: Vec::new(),
            code: 400,
            reason: "BadRequest",
            message: "",
        },
        Case {
            what: "an update from a stale resourceVersion",
            method: "PUT",
            path: &seed,
            content_type: js,
            body: serde_json::to_vec(&stale).unwrap(),
            code: 409,
            reason: "Conflict",
            message: "Operation cannot be fulfilled on configmaps \"seed\": the object has been modified; please apply your changes to the latest version and try again",
        },
        Case {
            what: "an update whose name differs from the URL's",
            method: "PUT",
            path: &seed,
            content_type: js,
            body: configmap("other"),
            code: 400,
            reason: "BadRequest",
            message: "does not match the name on the URL",
        },
        Case {
            what: "an update of an object that does not exist",
            method: "PUT",
            path: "/api/v1/namespaces/default/configmaps/ghost",
            content_type: js,
            body: configmap("ghost"),
            code: 404,
            reason: "NotFound",
            message: "configmaps \"ghost\" not found",
        },
        Case {
            what: "a change to an immutable ConfigMap's data",
            method: "PATCH",
            path: "/api/v1/namespaces/default/configmaps/frozen",
            content_type: Some("application/merge-patch+json"),
            body: br#"{"data":{"k":"changed"}}"#.to_vec(),
            code: 422,
            reason: "Invalid",
            message: "field is immutable when `immutable` is set",
        },
        Case {
            what: "a delete whose UID precondition does not match",
            method: "DELETE",
            path: &seed,
            content_type: js,
            body: br#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-the-uid"}}"#
                .to_vec(),
            code: 409,
            reason: "Conflict",
            message: "Precondition failed: UID in precondition: not-the-uid",
        },
        Case {
            what: "an unknown resource",
            method: "GET",
            path: "/api/v1/namespaces/default/widgets",
            content_type: None,
            body: Vec::new(),
            code: 404,
            reason: "NotFound",
            message: "",
        },
    ];
    for case in cases {
        run(&server, case).await;
    }

    // A resourceVersion on create. Upstream answers 500 with this message (the storage layer's
    // plain error); we require the client error the message describes.
    let with_rv = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"with-rv","resourceVersion":"5"}}"#;
    run(
        &server,
        Case {
            what: "a resourceVersion on create",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: with_rv.to_vec(),
            code: 400,
            reason: "BadRequest",
            message: "resourceVersion should not be set on objects to be created",
        },
    )
    .await;

    // The invalid name's Status carries the cause for the field.
    let invalid = run(
        &server,
        Case {
            what: "an invalid name, again",
            method: "POST",
            path: CONFIGMAPS,
            content_type: js,
            body: configmap("Bad_Name!"),
            code: 422,
            reason: "Invalid",
            message: "",
        },
    )
    .await;
    assert_eq!(invalid["details"]["name"], "Bad_Name!", "{invalid}");
    assert_eq!(invalid["details"]["kind"], "ConfigMap", "{invalid}");
    assert_eq!(
        invalid["details"]["causes"][0]["field"], "metadata.name",
        "{invalid}"
    );
    assert_eq!(
        invalid["details"]["causes"][0]["reason"], "FieldValueInvalid",
        "{invalid}"
    );

    // Still serving, and the seed kept its last good update.
    let seed_now = server.get_json(&seed).await;
    assert_eq!(seed_now["data"]["k"], "v2");
    drop(server);
    drop(dir);
}

#[tokio::test]
async fn bad_requests_get_a_status_and_change_nothing_on_the_embedded_store() {
    bad_requests(Backend::Embedded).await;
}

#[tokio::test]
async fn bad_requests_get_a_status_and_change_nothing_on_etcd() {
    bad_requests(Backend::Etcd).await;
}

/// kubectl speaks HTTP/2: an oversized body must get the 413 Status there too, not a reset
/// stream.
#[tokio::test]
async fn oversized_body_over_http2_gets_a_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(dir.path(), Backend::Embedded)
        .await
        .unwrap();
    let before = snapshot(&server).await;
    let mut conn = Conn::open(server.addr(), &server.ca_file(), Version::Http2)
        .await
        .unwrap();
    let (status, body) = conn
        .send(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            big_configmap(4 << 20),
        )
        .await
        .unwrap_or_else(|err| panic!("no response over HTTP/2: {err:#}"));
    check_status(
        "a 4 MiB body over HTTP/2",
        status,
        &body,
        413,
        "RequestEntityTooLarge",
        "limit is 3145728",
    );
    // The same connection still works.
    let (status, body) = conn.send("GET", "/readyz", None, Vec::new()).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"));
    assert_eq!(snapshot(&server).await, before);
    drop(server);
    drop(dir);
}
