//! The layered stack served over real HTTP/1.1 with hyper's `Incoming` bodies, through
//! `http::into_hyper` and component-base's server.

use std::convert::Infallible;

use http::{Request, Response};
use hyper::body::Incoming;
use kube_apiserver::http::discovery::DiscoveryHandler;
use kube_apiserver::http::response::Body;
use kube_apiserver::http::status::ApiError;
use kube_apiserver::http::{StackConfig, into_hyper, stack};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

async fn handler(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let discovery = DiscoveryHandler::new("127.0.0.1:6443");
    Ok(discovery
        .serve(&req)
        .unwrap_or_else(|| ApiError::path_not_found().into_response()))
}

async fn raw_get(addr: std::net::SocketAddr, path: &str, accept: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    stream.read_to_string(&mut out).await.expect("read");
    out
}

#[tokio::test]
async fn stack_serves_discovery_over_http() {
    let svc = into_hyper(stack(tower::service_fn(handler), &StackConfig::default()));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let shutdown = CancellationToken::new();
    let server =
        component_base::serving::serve(listener, None, svc, shutdown.clone()).expect("serve");
    let addr = server.local_addr;

    let resp = raw_get(
        addr,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(
        resp.to_ascii_lowercase().contains(
            "content-type: application/json;g=apidiscovery.k8s.io;v=v2;as=apigroupdiscoverylist"
        ),
        "{resp}"
    );
    assert!(
        resp.contains("\"kind\":\"APIGroupDiscoveryList\""),
        "{resp}"
    );

    let resp = raw_get(addr, "/nothing/here", "application/json").await;
    assert!(resp.starts_with("HTTP/1.1 404"), "{resp}");
    assert!(
        resp.contains("the server could not find the requested resource"),
        "{resp}"
    );

    shutdown.cancel();
    server.wait().await;
}
