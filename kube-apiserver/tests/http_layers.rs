//! The request-path layers as tower services around small inner services.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use kube_apiserver::http::auth::authenticator::Authenticator;
use kube_apiserver::http::auth::authorizer::{AlwaysAllow, AlwaysDeny, with_privileged_groups};
use kube_apiserver::http::auth::token_file::TokenFile;
use kube_apiserver::http::auth::user::UserInfo;
use kube_apiserver::http::request_info::RequestInfo;
use kube_apiserver::http::response::{Body, full};
use kube_apiserver::http::{StackConfig, stack};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tower::{Service, ServiceExt};

const TOKENS: &str = "admin-token,admin,uid-admin,system:masters\n\
                      alice-token,alice,uid-alice,\"devs,ops\"\n";

fn config(authorizer_deny: bool, max_ro: usize, max_mut: usize) -> StackConfig {
    let tokens = TokenFile::parse(TOKENS, "tokens.csv").expect("token file");
    StackConfig {
        authenticator: Arc::new(Authenticator::new(Some(tokens), true)),
        authorizer: if authorizer_deny {
            Arc::new(with_privileged_groups(AlwaysDeny))
        } else {
            Arc::new(with_privileged_groups(AlwaysAllow))
        },
        max_requests_inflight: max_ro,
        max_mutating_requests_inflight: max_mut,
        request_timeout: std::time::Duration::from_secs(60),
        audit: None,
    }
}

/// A handler echoing what the layers attached to the request.
async fn echo(req: Request<()>) -> Result<Response<Body>, Infallible> {
    let info = req.extensions().get::<RequestInfo>().cloned();
    let user = req.extensions().get::<UserInfo>().cloned();
    let body = json!({
        "verb": info.as_ref().map(|i| i.verb.clone()),
        "resource": info.as_ref().map(|i| i.resource.clone()),
        "namespace": info.as_ref().map(|i| i.namespace.clone()),
        "user": user.as_ref().map(|u| u.name.clone()),
        "uid": user.as_ref().map(|u| u.uid.clone()),
        "groups": user.as_ref().map(|u| u.groups.clone()),
        "authorization": req.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or("").to_string()),
    });
    Ok(Response::new(full(body.to_string())))
}

fn request(method: &str, uri: &str, token: Option<&str>) -> Request<()> {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        b = b.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    b.body(()).expect("request")
}

async fn json_body(resp: Response<Body>) -> Value {
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).expect("json body")
}

#[tokio::test]
async fn handler_sees_request_info_and_user() {
    let svc = stack(tower::service_fn(echo), &config(false, 0, 0));
    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/namespaces/ns/pods?watch=1", None))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    assert_eq!(v["verb"], "watch");
    assert_eq!(v["resource"], "pods");
    assert_eq!(v["namespace"], "ns");
    assert_eq!(v["user"], "system:anonymous");
    assert_eq!(v["groups"], json!(["system:unauthenticated"]));

    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/pods", Some("alice-token")))
        .await
        .expect("response");
    let v = json_body(resp).await;
    assert_eq!(v["user"], "alice");
    assert_eq!(v["uid"], "uid-alice");
    assert_eq!(v["groups"], json!(["devs", "ops", "system:authenticated"]));
    // The token does not travel past authentication.
    assert_eq!(v["authorization"], Value::Null);
}

#[tokio::test]
async fn bad_token_is_401_and_bad_path_is_404() {
    let svc = stack(tower::service_fn(echo), &config(false, 0, 0));
    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/pods", Some("wrong")))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let v = json_body(resp).await;
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/watch", None))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_body(resp).await["reason"], "NotFound");

    // With anonymous requests disabled, no credentials is a 401 too.
    let mut closed = config(false, 0, 0);
    closed.authenticator = Arc::new(Authenticator::new(None, false));
    let resp = stack(tower::service_fn(echo), &closed)
        .oneshot(request("GET", "/version", None))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn always_deny_is_403_except_for_system_masters() {
    let svc = stack(tower::service_fn(echo), &config(true, 0, 0));
    let resp = svc
        .clone()
        .oneshot(request(
            "GET",
            "/api/v1/namespaces/default/pods",
            Some("alice-token"),
        ))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let v = json_body(resp).await;
    assert_eq!(
        v["message"],
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": Everything is forbidden."
    );
    assert_eq!(v["details"], json!({"kind": "pods"}));
    let resp = svc
        .clone()
        .oneshot(request(
            "GET",
            "/api/v1/namespaces/default/pods",
            Some("admin-token"),
        ))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn panic_becomes_500_and_the_service_keeps_serving() {
    let handler = tower::service_fn(|req: Request<()>| {
        // Panics while building the future (synchronously in `call`).
        assert!(req.uri().path() != "/sync-panic", "sync boom");
        async move {
            if req.uri().path() == "/async-panic" {
                panic!("async boom");
            }
            Ok::<_, Infallible>(Response::new(full("ok")))
        }
    });
    let mut svc = stack(handler, &config(false, 0, 0));
    for path in ["/async-panic", "/sync-panic"] {
        let resp = svc
            .ready()
            .await
            .expect("ready")
            .call(request("GET", path, None))
            .await
            .expect("response");
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        let v = json_body(resp).await;
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["reason"], "InternalError");
        assert_eq!(
            v["message"],
            "This request caused apiserver to panic. Look in the logs for details."
        );
        let resp = svc
            .ready()
            .await
            .expect("ready")
            .call(request("GET", "/healthz", None))
            .await
            .expect("response");
        assert_eq!(resp.status(), StatusCode::OK, "after {path}");
    }
}

/// A handler that holds every request to `/api/v1/namespaces/ns/pods` until released, telling
/// the test when one has arrived.
fn blocking_handler(
    arrived: mpsc::UnboundedSender<()>,
    release: Arc<Semaphore>,
) -> impl Service<Request<()>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone
{
    tower::service_fn(move |req: Request<()>| {
        let arrived = arrived.clone();
        let release = release.clone();
        async move {
            if req.uri().path() == "/api/v1/namespaces/ns/pods" && req.uri().query().is_none() {
                let _ = arrived.send(());
                let _permit = release.acquire().await.expect("semaphore open");
            }
            Ok(Response::new(full("done")))
        }
    })
}

#[tokio::test]
async fn over_the_inflight_limit_is_429() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let svc = stack(blocking_handler(tx, release.clone()), &config(false, 1, 1));

    let first = tokio::spawn(svc.clone().oneshot(request(
        "GET",
        "/api/v1/namespaces/ns/pods",
        Some("alice-token"),
    )));
    rx.recv().await.expect("first request reached the handler");

    // A second read-only request is refused at once.
    let resp = svc
        .clone()
        .oneshot(request(
            "GET",
            "/api/v1/namespaces/ns/configmaps",
            Some("alice-token"),
        ))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
    let v = json_body(resp).await;
    assert_eq!(v["reason"], "TooManyRequests");
    assert_eq!(v["message"], "Too many requests, please try again later.");
    assert_eq!(v["details"]["retryAfterSeconds"], 1);

    // Watches are long-running and not counted; mutating requests have their own limit;
    // system:masters is never refused.
    for (method, uri, token) in [
        (
            "GET",
            "/api/v1/namespaces/ns/pods?watch=true",
            "alice-token",
        ),
        ("POST", "/api/v1/namespaces/ns/configmaps", "alice-token"),
        ("GET", "/api/v1/namespaces/ns/configmaps", "admin-token"),
    ] {
        let resp = svc
            .clone()
            .oneshot(request(method, uri, Some(token)))
            .await
            .expect("response");
        assert_eq!(resp.status(), StatusCode::OK, "{method} {uri} as {token}");
    }

    release.add_permits(1);
    let resp = first.await.expect("join").expect("response");
    assert_eq!(resp.status(), StatusCode::OK);
    // The slot is free again.
    let resp = svc
        .clone()
        .oneshot(request(
            "GET",
            "/api/v1/namespaces/ns/configmaps",
            Some("alice-token"),
        ))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn requests_are_counted_with_upstream_labels() {
    component_base::metrics::handle();
    let handler = tower::service_fn(|req: Request<()>| async move {
        let mut resp = Response::new(full("{}"));
        if req.method() == http::Method::POST {
            *resp.status_mut() = StatusCode::CREATED;
        }
        Ok::<_, Infallible>(resp)
    });
    let svc = stack(handler, &config(false, 0, 0));
    for (method, uri) in [
        ("GET", "/apis/metrics.test/v1/namespaces/ns/widgets"),
        ("GET", "/apis/metrics.test/v1/namespaces/ns/widgets"),
        ("POST", "/apis/metrics.test/v1/namespaces/ns/widgets"),
        ("GET", "/apis/metrics.test/v1/widgets?watch=true"),
        (
            "GET",
            "/apis/metrics.test/v1/namespaces/ns/widgets/w/status",
        ),
    ] {
        svc.clone()
            .oneshot(request(method, uri, None))
            .await
            .expect("response");
    }
    let text = component_base::metrics::render();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{") && l.contains("metrics.test"))
        .collect();
    let find = |verb: &str, scope: &str, sub: &str, code: &str| {
        lines
            .iter()
            .find(|l| {
                l.contains(&format!("verb=\"{verb}\""))
                    && l.contains(&format!("scope=\"{scope}\""))
                    && l.contains(&format!("subresource=\"{sub}\""))
                    && l.contains(&format!("code=\"{code}\""))
                    && l.contains("resource=\"widgets\"")
                    && l.contains("version=\"v1\"")
                    && l.contains("component=\"apiserver\"")
            })
            .map(|l| l.rsplit(' ').next().unwrap_or(""))
    };
    assert_eq!(
        find("LIST", "namespace", "", "200"),
        Some("2"),
        "{lines:#?}"
    );
    assert_eq!(
        find("POST", "namespace", "", "201"),
        Some("1"),
        "{lines:#?}"
    );
    assert_eq!(find("WATCH", "cluster", "", "200"), Some("1"), "{lines:#?}");
    assert_eq!(
        find("GET", "resource", "status", "200"),
        Some("1"),
        "{lines:#?}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("apiserver_request_duration_seconds")
                && l.contains("metrics.test")),
        "duration histogram missing"
    );
}

/// A handler that never answers: only the request deadline ends its requests.
async fn stuck(_req: Request<()>) -> Result<Response<Body>, Infallible> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn a_stuck_request_is_answered_504_at_the_deadline_but_a_watch_is_not() {
    let cfg = StackConfig {
        request_timeout: std::time::Duration::from_secs(60),
        ..config(false, 0, 0)
    };
    let svc = stack(tower::service_fn(stuck), &cfg);
    let started = tokio::time::Instant::now();
    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/namespaces/ns/pods/p", None))
        .await
        .expect("response");
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(60));
    assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        json_body(resp).await,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Timeout: request did not complete within requested timeout - context deadline exceeded",
            "reason": "Timeout", "code": 504
        })
    );

    // A shorter ?timeout= wins; a malformed one is a 400.
    let started = tokio::time::Instant::now();
    let resp = svc
        .clone()
        .oneshot(request(
            "PATCH",
            "/api/v1/namespaces/ns/pods/p/status?timeout=5s",
            None,
        ))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(5));
    let resp = svc
        .clone()
        .oneshot(request("GET", "/api/v1/pods?timeout=soon", None))
        .await
        .expect("response");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    // Long-running requests have no deadline.
    let watch = svc.oneshot(request("GET", "/api/v1/pods?watch=1", None));
    let waited = tokio::time::timeout(std::time::Duration::from_secs(3600), watch).await;
    assert!(waited.is_err(), "the watch was cut: {waited:?}");
}
