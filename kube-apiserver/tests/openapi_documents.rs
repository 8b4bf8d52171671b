//! The OpenAPI documents as kubectl reads them: every served resource has its operations
//! (with `fieldValidation` on PATCH, which `--validate=strict` looks for), every kind its
//! schema with `x-kubernetes-group-version-kind`, and every `$ref` resolves in its document.

use api_types::registry::{self, Verb};
use http_body_util::BodyExt;
use kube_apiserver::openapi::custom::CustomDocuments;
use kube_apiserver::openapi::serve;
use serde_json::Value;

async fn get(path: &str, accept: Option<&str>) -> (http::StatusCode, Option<String>, Value) {
    let resp = serve(path, accept, &CustomDocuments::default())
        .unwrap_or_else(|| panic!("{path} is not an OpenAPI path"));
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let value = serde_json::from_slice(&bytes).expect("JSON body");
    (status, content_type, value)
}

/// Every string `$ref` in a document (a property *named* `$ref` has an object value).
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(target)) => out.push(target.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

fn doc_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn param_names(op: &Value) -> Vec<&str> {
    op["parameters"]
        .as_array()
        .map(|ps| ps.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default()
}

fn gvk_matches(value: &Value, group: &str, version: &str, kind: &str) -> bool {
    value["group"] == group && value["version"] == version && value["kind"] == kind
}

/// The definition kubectl explain would pick: the one whose GVK list names the kind.
fn schema_by_gvk<'a>(doc: &'a Value, group: &str, version: &str, kind: &str) -> Option<&'a Value> {
    doc["components"]["schemas"]
        .as_object()?
        .values()
        .find(|s| {
            s["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|l| l.iter().any(|g| gvk_matches(g, group, version, kind)))
        })
}

#[tokio::test]
async fn v3_root_indexes_every_group_version_with_its_hash() {
    let (status, content_type, root) = get("/openapi/v3", Some("application/json")).await;
    assert_eq!(status, 200);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    let paths = root["paths"].as_object().expect("paths");
    for key in ["api", "apis", "apis/apps"] {
        assert!(paths.contains_key(key), "{key} missing from the root");
    }
    for group in registry::groups() {
        for version in group.versions {
            let key = doc_key(group.name, version);
            let url = paths[&key]["serverRelativeURL"]
                .as_str()
                .unwrap_or_else(|| panic!("{key} missing from the root"));
            let (path, hash) = url.split_once("?hash=").expect("hash in URL");
            assert_eq!(path, format!("/openapi/v3/{key}"));
            assert!(hash.len() >= 16 && hash.chars().all(|c| c.is_ascii_hexdigit()));
            let resp = serve(path, None, &CustomDocuments::default()).expect("served");
            let etag = resp.headers()[http::header::ETAG]
                .to_str()
                .unwrap()
                .to_owned();
            assert_eq!(
                etag,
                format!("\"{hash}\""),
                "{key}: the hash names this document"
            );
        }
    }
    let (missing, _, _) = get("/openapi/v3/apis/nope/v1", None).await;
    assert_eq!(missing, 404);
}

#[tokio::test]
async fn every_served_resource_has_its_operations_and_schema() {
    for group in registry::groups() {
        for version in group.versions {
            let key = doc_key(group.name, version);
            let (status, _, doc) = get(&format!("/openapi/v3/{key}"), None).await;
            assert_eq!(status, 200, "{key}");
            assert_eq!(doc["openapi"], "3.0.0");
            let paths = doc["paths"].as_object().expect("paths");
            let prefix = format!("/{key}");
            assert!(
                paths.contains_key(&format!("{prefix}/")),
                "{key}: discovery path"
            );
            for r in registry::resources_in(group.name, version) {
                let scope = if r.namespaced {
                    "/namespaces/{namespace}"
                } else {
                    ""
                };
                let collection = format!("{prefix}{scope}/{}", r.plural);
                let object = format!("{collection}/{{name}}");
                let expected = [
                    (Verb::List, &collection, "get", "list"),
                    (Verb::Create, &collection, "post", "post"),
                    (
                        Verb::DeleteCollection,
                        &collection,
                        "delete",
                        "deletecollection",
                    ),
                    (Verb::Get, &object, "get", "get"),
                    (Verb::Update, &object, "put", "put"),
                    (Verb::Patch, &object, "patch", "patch"),
                    (Verb::Delete, &object, "delete", "delete"),
                ];
                for (verb, path, method, action) in expected {
                    let op = &paths.get(path.as_str()).map(|p| &p[method]);
                    if !r.supports(verb) {
                        assert!(
                            op.is_none_or(Value::is_null),
                            "{key} {path} {method}: not a verb of {}",
                            r.plural
                        );
                        continue;
                    }
                    let op = op.unwrap_or_else(|| panic!("{key}: no path {path}"));
                    assert_eq!(op["x-kubernetes-action"], action, "{path} {method}");
                    assert!(
                        gvk_matches(
                            &op["x-kubernetes-group-version-kind"],
                            r.group,
                            r.version,
                            r.kind
                        ),
                        "{path} {method}: GVK {}",
                        op["x-kubernetes-group-version-kind"]
                    );
                    let names = param_names(op);
                    if matches!(method, "post" | "put" | "patch") {
                        for p in ["dryRun", "fieldManager", "fieldValidation"] {
                            assert!(names.contains(&p), "{path} {method}: no {p}");
                        }
                    }
                    let path_params = param_names(&paths[path.as_str()]);
                    assert!(path_params.contains(&"pretty"), "{path}: no pretty");
                }
                // Every subresource but the streaming/proxy ones has its path, speaking its
                // own kind (Scale, Eviction, TokenRequest, ...).
                for sub in r.subresources {
                    if ["attach", "exec", "portforward", "proxy"].contains(&sub.name) {
                        continue;
                    }
                    let path = format!("{object}/{}", sub.name);
                    let item = paths
                        .get(&path)
                        .unwrap_or_else(|| panic!("{key}: no path {path}"));
                    let op = ["get", "put", "post"]
                        .iter()
                        .map(|m| &item[*m])
                        .find(|op| op.is_object())
                        .unwrap_or_else(|| panic!("{path}: no operation"));
                    if sub.name != "log" {
                        let gv = sub.group_version.unwrap_or(r.group_version());
                        assert!(
                            gvk_matches(
                                &op["x-kubernetes-group-version-kind"],
                                gv.group,
                                gv.version,
                                sub.kind
                            ),
                            "{path}: GVK {}",
                            op["x-kubernetes-group-version-kind"]
                        );
                    }
                }
                if r.supports(Verb::Watch) {
                    let watch = format!("{prefix}/watch{scope}/{}", r.plural);
                    assert_eq!(paths[&watch]["get"]["x-kubernetes-action"], "watchlist");
                }
                let schema = schema_by_gvk(&doc, r.group, r.version, r.kind)
                    .unwrap_or_else(|| panic!("{key}: no schema for {}", r.kind));
                assert!(schema["description"].is_string(), "{}: description", r.kind);
                if r.is_listable() {
                    let list_kind = format!("{}List", r.kind);
                    assert!(
                        schema_by_gvk(&doc, r.group, r.version, &list_kind).is_some(),
                        "{key}: no {list_kind}"
                    );
                }
            }
            let schemas = doc["components"]["schemas"].as_object().expect("schemas");
            let mut targets = Vec::new();
            refs(&doc, &mut targets);
            assert!(!targets.is_empty());
            for target in targets {
                let name = target
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("{key}: foreign $ref {target}"));
                assert!(schemas.contains_key(name), "{key}: dangling $ref {target}");
            }
        }
    }
}

#[tokio::test]
async fn pod_operations_are_named_as_upstream() {
    let (_, _, doc) = get("/openapi/v3/api/v1", None).await;
    let paths = &doc["paths"];
    let ids = [
        (
            "/api/v1/namespaces/{namespace}/pods",
            "get",
            "listCoreV1NamespacedPod",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods",
            "post",
            "createCoreV1NamespacedPod",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods",
            "delete",
            "deleteCoreV1CollectionNamespacedPod",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods/{name}",
            "patch",
            "patchCoreV1NamespacedPod",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            "put",
            "replaceCoreV1NamespacedPodStatus",
        ),
        ("/api/v1/pods", "get", "listCoreV1PodForAllNamespaces"),
        (
            "/api/v1/watch/namespaces/{namespace}/pods/{name}",
            "get",
            "watchCoreV1NamespacedPod",
        ),
        ("/api/v1/nodes/{name}", "get", "readCoreV1Node"),
    ];
    for (path, method, id) in ids {
        assert_eq!(paths[path][method]["operationId"], id, "{path} {method}");
    }
    let patch = &paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    let content = patch["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/strategic-merge-patch+json"));
    let (_, _, apps) = get("/openapi/v3/apis/apps/v1", None).await;
    let scale =
        &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"];
    assert_eq!(scale["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert!(gvk_matches(
        &scale["x-kubernetes-group-version-kind"],
        "autoscaling",
        "v1",
        "Scale"
    ));
}

#[tokio::test]
async fn schemas_carry_patch_and_list_facts_and_upstream_scalar_shapes() {
    let (_, _, doc) = get("/openapi/v3/api/v1", None).await;
    let schemas = &doc["components"]["schemas"];
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(
        containers["x-kubernetes-list-map-keys"],
        serde_json::json!(["name"])
    );
    assert_eq!(
        containers["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Container"
    );
    let ports = &schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        serde_json::json!(["containerPort", "protocol"])
    );
    let volumes = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let finalizers =
        &schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["finalizers"];
    assert_eq!(finalizers["x-kubernetes-list-type"], "set");
    // A described reference is wrapped in allOf in v3.
    let metadata = &schemas["io.k8s.api.core.v1.Pod"]["properties"]["metadata"];
    assert_eq!(
        metadata["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(metadata["description"].is_string());
    // metadata is optional upstream (k8s-openapi's Rust types would make it required).
    let pod_required = schemas["io.k8s.api.core.v1.Pod"]["required"].as_array();
    assert!(!pod_required.is_some_and(|r| r.contains(&serde_json::json!("metadata"))));
    let container_required = schemas["io.k8s.api.core.v1.Container"]["required"].as_array();
    assert!(container_required.is_some_and(|r| r.contains(&serde_json::json!("name"))));
    let int_or_string = &schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(int_or_string["format"], "int-or-string");
    assert_eq!(int_or_string["x-kubernetes-int-or-string"], true);
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"],
        "date-time"
    );
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.runtime.RawExtension"]["type"],
        "object"
    );

    let (_, _, apps) = get("/openapi/v3/apis/apps/v1", None).await;
    let strategy = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
        ["strategy"];
    assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
}

#[tokio::test]
async fn v2_is_json_swagger_with_resolving_definitions() {
    let (status, _, _) = get(
        "/openapi/v2",
        Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
    )
    .await;
    assert_eq!(status, 406, "protobuf only: not acceptable");
    let (status, content_type, doc) = get(
        "/openapi/v2",
        Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().expect("definitions");
    let mut targets = Vec::new();
    refs(&doc, &mut targets);
    for target in targets {
        let name = target
            .strip_prefix("#/definitions/")
            .unwrap_or_else(|| panic!("foreign $ref {target}"));
        assert!(definitions.contains_key(name), "dangling $ref {target}");
    }
    for r in registry::all() {
        let prefix = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let scope = if r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let path = format!("{prefix}{scope}/{}", r.plural);
        assert!(doc["paths"][&path].is_object(), "v2: no {path}");
    }
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert!(param_names(patch).contains(&"fieldValidation"));
    assert_eq!(patch["parameters"][0]["in"], "body");
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
        "string"
    );
}
