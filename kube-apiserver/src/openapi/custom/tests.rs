//! The documents of a CRD fixture, as `rebuild` publishes and `serve` answers them.

use super::*;
use crate::openapi::serve;
use http::StatusCode;
use http_body_util::BodyExt;

const GROUP_VERSION_KEY: &str = "apis/stable.example.com/v1";

/// A namespaced CronTab CRD serving v1 (status and scale enabled) and not serving v2.
fn crontab_crd(description: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
            "versions": [
                {
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "description": description,
                                "properties": {
                                    "cronSpec": {"type": "string", "description": "The schedule."},
                                    "replicas": {"type": "integer"},
                                },
                            },
                            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                        },
                    }},
                    "selectableFields": [{"jsonPath": ".spec.cronSpec"}],
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                    },
                },
                {
                    "name": "v2",
                    "served": false,
                    "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                },
            ],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    })
}

/// A cluster-scoped CRD in the same group-version, without subresources.
fn cluster_crd() -> Value {
    json!({
        "spec": {
            "group": "stable.example.com",
            "scope": "Cluster",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    })
}

fn document(docs: &CustomDocuments, key: &str) -> Option<Value> {
    docs.v3_document(key)
        .map(|doc| serde_json::from_slice(&doc.bytes).unwrap())
}

async fn served(path: &str, docs: &CustomDocuments) -> (StatusCode, Value) {
    let response = serve(path, None, docs).expect("an OpenAPI path");
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[test]
fn group_version_document_has_the_resource_paths() {
    let docs = CustomDocuments::default();
    docs.rebuild(&[Arc::new(crontab_crd("What to run."))]);
    let doc = document(&docs, GROUP_VERSION_KEY).expect("the v1 document");
    let paths = doc["paths"].as_object().unwrap();
    let ns = "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs";
    let mut names: Vec<&str> = paths.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "/apis/stable.example.com/v1/crontabs",
            ns,
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale",
            "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status",
        ]
    );
    assert_eq!(
        paths["/apis/stable.example.com/v1/crontabs"]["get"]["operationId"],
        "listStableExampleComV1CronTabForAllNamespaces"
    );
    let collection = &paths[ns];
    assert_eq!(
        collection["post"]["operationId"],
        "createStableExampleComV1NamespacedCronTab"
    );
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );
    assert_eq!(collection["get"]["x-kubernetes-action"], "list");

    let patch = &paths[&format!("{ns}/{{name}}")]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"})
    );
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
    assert!(params.contains(&"dryRun") && params.contains(&"fieldManager"));
    let media: Vec<&String> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert!(!media.iter().any(|m| m.contains("strategic")), "{media:?}");
    assert!(media.iter().any(|m| *m == "application/merge-patch+json"));

    let status_get = &paths[&format!("{ns}/{{name}}/status")]["get"];
    assert_eq!(
        status_get["operationId"],
        "readStableExampleComV1NamespacedCronTabStatus"
    );
    let scale_put = &paths[&format!("{ns}/{{name}}/scale")]["put"];
    assert_eq!(
        scale_put["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    );
}

#[test]
fn group_version_document_has_the_kind_schemas() {
    let docs = CustomDocuments::default();
    docs.rebuild(&[Arc::new(crontab_crd("What to run."))]);
    let doc = document(&docs, GROUP_VERSION_KEY).unwrap();
    let schemas = &doc["components"]["schemas"];
    let kind = &schemas["com.example.stable.v1.CronTab"];
    assert_eq!(
        kind["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}])
    );
    assert_eq!(kind["properties"]["spec"]["description"], "What to run.");
    assert_eq!(
        kind["x-kubernetes-selectable-fields"],
        json!([{"fieldPath": "spec.cronSpec"}])
    );
    assert_eq!(
        kind["properties"]["spec"]["properties"]["cronSpec"]["description"],
        "The schedule."
    );
    assert_eq!(
        kind["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(kind["properties"]["kind"]["type"], "string");
    let list = &schemas["com.example.stable.v1.CronTabList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "CronTabList"
    );
    // The meta definitions the document refers to come along.
    for name in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        "io.k8s.api.autoscaling.v1.Scale",
    ] {
        assert!(schemas.get(name).is_some(), "{name} is missing");
    }
    // Nothing of unrelated kinds.
    assert!(schemas.get("io.k8s.api.core.v1.Pod").is_none());
}

#[test]
fn crds_of_one_group_version_share_a_document() {
    let docs = CustomDocuments::default();
    docs.rebuild(&[
        Arc::new(crontab_crd("What to run.")),
        Arc::new(cluster_crd()),
    ]);
    let doc = document(&docs, GROUP_VERSION_KEY).unwrap();
    assert!(doc["paths"]["/apis/stable.example.com/v1/widgets/{name}"]["get"].is_object());
    assert_eq!(
        doc["paths"]["/apis/stable.example.com/v1/widgets"]["post"]["operationId"],
        "createStableExampleComV1Widget"
    );
    assert!(doc["components"]["schemas"]["com.example.stable.v1.WidgetList"].is_object());
    assert!(doc["components"]["schemas"]["com.example.stable.v1.CronTab"].is_object());
}

#[tokio::test]
async fn root_lists_custom_documents_and_drops_removed_ones() {
    let docs = CustomDocuments::default();
    docs.rebuild(&[Arc::new(crontab_crd("What to run."))]);

    let (status, root) = served("/openapi/v3", &docs).await;
    assert_eq!(status, StatusCode::OK);
    let url = root["paths"][GROUP_VERSION_KEY]["serverRelativeURL"]
        .as_str()
        .expect("the CRD's group-version is listed")
        .to_owned();
    assert!(url.starts_with("/openapi/v3/apis/stable.example.com/v1?hash="));
    assert!(root["paths"]["api/v1"].is_object(), "built-ins stay listed");
    assert!(root["paths"]["apis/stable.example.com/v2"].is_null());

    let (status, doc) = served("/openapi/v3/apis/stable.example.com/v1", &docs).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["components"]["schemas"]["com.example.stable.v1.CronTab"].is_object());
    let (status, _) = served("/openapi/v3/apis/stable.example.com/v2", &docs).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A changed schema changes the document's hash in the root.
    docs.rebuild(&[Arc::new(crontab_crd("What to run, changed."))]);
    let (_, root) = served("/openapi/v3", &docs).await;
    let changed = root["paths"][GROUP_VERSION_KEY]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert_ne!(changed, url);

    // The CRD gone, so are its documents.
    docs.rebuild(&[]);
    let (_, root) = served("/openapi/v3", &docs).await;
    assert!(root["paths"][GROUP_VERSION_KEY].is_null());
    assert!(root["paths"]["api/v1"].is_object());
    let (status, _) = served("/openapi/v3/apis/stable.example.com/v1", &docs).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn v2_merges_the_custom_paths_and_definitions() {
    let docs = CustomDocuments::default();
    docs.rebuild(&[Arc::new(crontab_crd("What to run."))]);
    let (status, v2) = served("/openapi/v2", &docs).await;
    assert_eq!(status, StatusCode::OK);
    let kind = &v2["definitions"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        kind["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        v2["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"]
            .is_object()
    );
    assert!(v2["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    assert!(v2["paths"]["/api/v1/namespaces/{namespace}/pods"].is_object());

    docs.rebuild(&[]);
    assert!(docs.v2_document().is_none());
}

#[test]
fn served_versions_follow_the_crd() {
    let crd = crontab_crd("x");
    let versions = served_versions(&crd);
    assert_eq!(versions.len(), 1);
    let v1 = &versions[0];
    assert_eq!(v1.version, "v1");
    assert!(v1.namespaced && v1.status && v1.scale);
    assert_eq!(
        v1.definition_name("CronTab"),
        "com.example.stable.v1.CronTab"
    );
    assert!(served_versions(&json!({"spec": {}})).is_empty());
}
