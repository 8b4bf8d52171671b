//! The discovery client against a fake server over plain HTTP: an old server that only
//! answers the legacy documents, and one that answers the aggregated form; what each costs
//! in requests cold, warm and refreshed, and what lands in the cache.

use super::Discovery;
use crate::factory::Factory;
use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// `(path, Accept)` of every request the fake server saw.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

fn answer(aggregated: bool, path: &str, accept: &str) -> Option<Value> {
    let deploy = json!({"name": "deployments", "singularName": "deployment", "namespaced": true,
        "kind": "Deployment", "verbs": ["get", "list"], "shortNames": ["deploy"], "categories": ["all"]});
    let scale = json!({"name": "deployments/scale", "singularName": "deployment", "namespaced": true,
        "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get"]});
    let pods = json!({"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
        "verbs": ["get", "list"], "shortNames": ["po"]});
    if aggregated && accept.contains("as=APIGroupDiscoveryList") {
        let resource = |plural: &str, singular: &str, kind: &str, short: &str, subs: Value| {
            json!({"resource": plural, "singularResource": singular, "scope": "Namespaced",
                   "responseKind": {"group": "", "version": "", "kind": kind},
                   "verbs": ["get", "list"], "shortNames": [short], "subresources": subs})
        };
        let item = |name: &str, resources: Value| json!({"metadata": {"name": name}, "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}]});
        let items = match path {
            "/api" => json!([item(
                "",
                json!([resource("pods", "pod", "Pod", "po", json!([]))])
            )]),
            "/apis" => {
                let mut deploy = resource(
                    "deployments",
                    "deployment",
                    "Deployment",
                    "deploy",
                    json!([{"subresource": "scale",
                        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                        "verbs": ["get"]}]),
                );
                deploy["categories"] = json!(["all"]);
                json!([item("apps", json!([deploy]))])
            }
            _ => return None,
        };
        return Some(
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": items}),
        );
    }
    Some(match path {
        "/api" => json!({"kind": "APIVersions", "versions": ["v1"]}),
        "/apis" => json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}),
        "/api/v1" => {
            json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [pods]})
        }
        "/apis/apps/v1" => {
            json!({"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [deploy, scale]})
        }
        _ => return None,
    })
}

/// Serves [`answer`] on a free port; returns its URL and what it saw.
async fn serve(aggregated: bool) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let log = log.clone();
            let service = hyper::service::service_fn(move |req: http::Request<_>| {
                let log = log.clone();
                async move {
                    let path = req.uri().path().to_owned();
                    let accept = req
                        .headers()
                        .get(http::header::ACCEPT)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    log.lock().unwrap().push((path.clone(), accept.clone()));
                    let (status, body) = match answer(aggregated, &path, &accept) {
                        Some(doc) => (200, doc),
                        None => (404, json!({"kind": "Status", "code": 404})),
                    };
                    let resp = http::Response::builder()
                        .status(status)
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(Full::new(Bytes::from(body.to_string())))
                        .unwrap();
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(conn), service),
            );
        }
    });
    (url, seen)
}

async fn factory(url: &str, dir: &Path) -> Factory {
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        global: crate::app::options::GlobalOptions,
    }
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\n"
        ),
    )
    .unwrap();
    let flags = <Flags as clap::Parser>::parse_from([
        "kubectl".to_owned(),
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--cache-dir={}", dir.join("cache").display()),
    ]);
    Factory::new(&flags.global).await.unwrap()
}

fn paths(seen: &Seen) -> Vec<String> {
    let mut out: Vec<String> = seen.lock().unwrap().drain(..).map(|(p, _)| p).collect();
    out.sort();
    out
}

async fn check_mapper(discovery: &Discovery<'_>) {
    let mapper = discovery.mapper().await.unwrap();
    let deploy = mapper.resolve("deploy").expect("deploy resolves");
    assert_eq!(
        (deploy.group.as_str(), deploy.version.as_str()),
        ("apps", "v1")
    );
    assert_eq!(deploy.categories, ["all"]);
    assert!(mapper.resolve("po").is_some());
    // Subresources are not resources of their own.
    assert!(mapper.resolve("deployments/scale").is_none());
    assert_eq!(mapper.resources().len(), 2);
}

#[tokio::test]
async fn a_legacy_server_costs_a_request_per_group_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, seen) = serve(false).await;
    let factory = factory(&url, tmp.path()).await;
    let discovery = factory.discovery();
    check_mapper(&discovery).await;
    assert_eq!(paths(&seen), ["/api", "/api/v1", "/apis", "/apis/apps/v1"]);
    check_mapper(&discovery).await;
    assert!(paths(&seen).is_empty(), "a warm cache asks nothing");
    discovery.refreshed_mapper().await.unwrap();
    assert_eq!(paths(&seen).len(), 4);
}

#[tokio::test]
async fn an_aggregated_server_costs_two_requests_and_fills_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, seen) = serve(true).await;
    let factory = factory(&url, tmp.path()).await;
    let discovery = factory.discovery();
    check_mapper(&discovery).await;
    let cold = seen.lock().unwrap().clone();
    assert!(
        cold.iter()
            .all(|(_, accept)| accept == super::aggregated::ACCEPT)
    );
    assert_eq!(paths(&seen), ["/api", "/apis"]);
    let host = url.trim_start_matches("http://").replace(':', "_");
    let dir = tmp.path().join("cache/discovery").join(host);
    let apps: Value =
        serde_json::from_slice(&std::fs::read(dir.join("apps/v1/serverresources.json")).unwrap())
            .unwrap();
    assert_eq!(apps["groupVersion"], "apps/v1");
    assert_eq!(apps["resources"][1]["name"], "deployments/scale");
    assert_eq!(apps["resources"][1]["group"], "autoscaling");
    assert!(dir.join("v1/serverresources.json").exists());
    let groups = discovery.groups(false).await.unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["", "apps"]);
    check_mapper(&discovery).await;
    assert!(paths(&seen).is_empty(), "a warm cache asks nothing");
    discovery.refreshed_mapper().await.unwrap();
    assert_eq!(paths(&seen), ["/api", "/apis"]);
}
