//! Server-side apply and managedFields with the real upstream kubectl: `apply --server-side`
//! creates, updates and prunes; two field managers conflict and `--force-conflicts` takes
//! ownership; client-side apply migrates to server-side apply; `scale` and `edit`-like
//! updates record `Update` entries.

use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;
use serde_json::{Value, json};

const NAMESPACE: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: ssa
"#;

/// A Deployment manifest with `replicas`, the image, and optionally a `tier` label.
fn deployment(name: &str, replicas: u32, image: &str, tier: bool) -> String {
    let tier = if tier { "\n    tier: web" } else { "" };
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: ssa
  labels:
    app: {name}{tier}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: nginx
        image: {image}
"#
    )
}

fn write(k: &Kubectl, name: &str, text: &str) -> String {
    let path = k.dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn get_json(k: &Kubectl, name: &str) -> Value {
    let out = k.ok(&[
        "get",
        "deployment",
        name,
        "-n",
        "ssa",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    serde_json::from_str(&out).unwrap()
}

/// The managedFields entry of `manager` with `operation`.
fn entry<'a>(object: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

async fn start() -> (tempfile::TempDir, ApiServer, Kubectl) {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let ns = write(&k, "ns.yaml", NAMESPACE);
    k.ok(&["apply", "--server-side", "-f", &ns]);
    (dir, server, k)
}

#[tokio::test]
async fn server_side_apply_creates_updates_and_prunes() {
    let (_dir, _server, k) = start().await;
    let v1 = write(&k, "v1.yaml", &deployment("web", 2, "nginx:1.27", true));
    let out = k.ok(&["apply", "--server-side", "-f", &v1]);
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let live = get_json(&k, "web");
    assert_eq!(live["spec"]["replicas"], 2);
    let applied = entry(&live, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert_eq!(applied["apiVersion"], "apps/v1");
    assert_eq!(applied["fieldsType"], "FieldsV1");
    assert_eq!(applied["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        applied["fieldsV1"]["f:metadata"]["f:labels"],
        json!({"f:app": {}, "f:tier": {}})
    );
    assert_eq!(
        applied["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"],
        json!({".": {}, "f:image": {}, "f:name": {}})
    );
    assert!(
        applied["time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') && t.len() == 20),
        "{applied}"
    );
    // Defaults are the server's, not the applier's.
    assert!(
        applied["fieldsV1"]["f:spec"]
            .get("f:progressDeadlineSeconds")
            .is_none()
    );
    assert_eq!(live["spec"]["progressDeadlineSeconds"], 600);

    // A changed manifest updates; a removed field (the tier label) is removed.
    let v2 = write(&k, "v2.yaml", &deployment("web", 3, "nginx:1.28", false));
    k.ok(&["apply", "--server-side", "-f", &v2]);
    let live = get_json(&k, "web");
    assert_eq!(live["spec"]["replicas"], 3);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
    assert_eq!(live["metadata"]["labels"], json!({"app": "web"}));
    let applied = entry(&live, "kubectl", "Apply").unwrap();
    assert_eq!(
        applied["fieldsV1"]["f:metadata"]["f:labels"],
        json!({"f:app": {}})
    );
    assert_eq!(
        live["metadata"]["managedFields"].as_array().unwrap().len(),
        1
    );

    // Re-applying the same manifest changes nothing.
    let rv = live["metadata"]["resourceVersion"].clone();
    k.ok(&["apply", "--server-side", "-f", &v2]);
    assert_eq!(get_json(&k, "web")["metadata"]["resourceVersion"], rv);

    // dryRun stores nothing.
    let v3 = write(&k, "v3.yaml", &deployment("web", 7, "nginx:1.28", false));
    k.ok(&["apply", "--server-side", "--dry-run=server", "-f", &v3]);
    assert_eq!(get_json(&k, "web")["spec"]["replicas"], 3);
}

#[tokio::test]
async fn two_managers_conflict_until_forced() {
    let (_dir, _server, k) = start().await;
    let a = write(&k, "a.yaml", &deployment("shared", 2, "nginx:1.27", false));
    let b = write(&k, "b.yaml", &deployment("shared", 5, "nginx:1.27", false));
    k.ok(&["apply", "--server-side", "--field-manager=a", "-f", &a]);

    let err = k.fails(&["apply", "--server-side", "--field-manager=b", "-f", &b]);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"),
        "{err}"
    );
    assert!(err.contains("--force-conflicts"), "kubectl's advice: {err}");
    assert_eq!(get_json(&k, "shared")["spec"]["replicas"], 2);

    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager=b",
        "--force-conflicts",
        "-f",
        &b,
    ]);
    let live = get_json(&k, "shared");
    assert_eq!(live["spec"]["replicas"], 5);
    let a_entry = entry(&live, "a", "Apply").expect("a keeps its other fields");
    let b_entry = entry(&live, "b", "Apply").expect("b applied");
    assert!(a_entry["fieldsV1"]["f:spec"].get("f:replicas").is_none());
    assert_eq!(b_entry["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    // The fields both applied with the same value are shared.
    for e in [a_entry, b_entry] {
        assert_eq!(
            e["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]
                ["f:image"],
            json!({})
        );
    }

    // The YAML view kubectl prints has both managers.
    let yaml = k.ok(&[
        "get",
        "deployment",
        "shared",
        "-n",
        "ssa",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(yaml.contains("manager: a\n"), "{yaml}");
    assert!(yaml.contains("manager: b\n"), "{yaml}");
    assert!(yaml.contains("operation: Apply"), "{yaml}");
    assert!(yaml.contains("f:replicas: {}"), "{yaml}");

    // Now a conflicts with b, and the error names b.
    let err = k.fails(&["apply", "--server-side", "--field-manager=a", "-f", &a]);
    assert!(err.contains("conflict with \"b\": .spec.replicas"), "{err}");
}

#[tokio::test]
async fn client_side_apply_migrates_to_server_side_apply() {
    let (_dir, _server, k) = start().await;
    let manifest = write(&k, "m.yaml", &deployment("migrated", 2, "nginx:1.27", true));
    k.ok(&["apply", "-f", &manifest]);
    let live = get_json(&k, "migrated");
    assert!(
        entry(&live, "kubectl-client-side-apply", "Update").is_some(),
        "{:#}",
        live["metadata"]["managedFields"]
    );

    let out = k.run(&["apply", "--server-side", "-f", &manifest]);
    assert!(out.success, "{out:?}");
    let live = get_json(&k, "migrated");
    let applied = entry(&live, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert_eq!(applied["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    // kubectl moved the client-side apply entry's fields to its Apply entry.
    assert!(
        entry(&live, "kubectl-client-side-apply", "Update").is_none(),
        "{:#}",
        live["metadata"]["managedFields"]
    );

    // A changed manifest applies without conflicts too, and keeps the annotation current.
    let changed = write(
        &k,
        "m2.yaml",
        &deployment("migrated", 4, "nginx:1.27", true),
    );
    let out = k.run(&["apply", "--server-side", "-f", &changed]);
    assert!(out.success, "{out:?}");
    let live = get_json(&k, "migrated");
    assert_eq!(live["spec"]["replicas"], 4);
}

#[tokio::test]
async fn updates_record_their_managers() {
    let (_dir, server, k) = start().await;
    let manifest = write(&k, "u.yaml", &deployment("updated", 1, "nginx:1.27", false));
    k.ok(&["apply", "--server-side", "-f", &manifest]);

    k.ok(&[
        "scale",
        "deployment",
        "updated",
        "-n",
        "ssa",
        "--replicas=3",
    ]);
    let live = get_json(&k, "updated");
    assert_eq!(live["spec"]["replicas"], 3);
    let scale = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["operation"] == "Update" && e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .unwrap_or_else(|| panic!("{:#}", live["metadata"]["managedFields"]));
    assert_eq!(scale["subresource"], "scale", "{scale}");
    let applied = entry(&live, "kubectl", "Apply").unwrap();
    assert!(applied["fieldsV1"]["f:spec"].get("f:replicas").is_none());

    // What `kubectl edit` sends: a patch with fieldManager=kubectl-edit.
    k.ok(&[
        "patch",
        "deployment",
        "updated",
        "-n",
        "ssa",
        "--field-manager=kubectl-edit",
        "-p",
        r#"{"metadata":{"labels":{"edited":"yes"}}}"#,
    ]);
    let live = get_json(&k, "updated");
    let edit = entry(&live, "kubectl-edit", "Update").expect("kubectl-edit's Update entry");
    assert_eq!(edit["apiVersion"], "apps/v1");
    assert_eq!(
        edit["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:edited": {}}}})
    );

    // Without fieldManager, the User-Agent names the manager; `kubectl label` sends its own.
    k.ok(&["label", "deployment", "updated", "-n", "ssa", "color=blue"]);
    let live = get_json(&k, "updated");
    let label = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["fieldsV1"]["f:metadata"]["f:labels"]
                .get("f:color")
                .is_some()
        })
        .unwrap();
    assert_eq!(label["operation"], "Update");

    // Applying to a missing object creates it (201); applying again answers 200.
    let cm_path = "/api/v1/namespaces/ssa/configmaps/applied?fieldManager=raw";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n";
    for expected in [201, 200] {
        let (status, body) = server
            .request("PATCH", cm_path, Some("application/apply-patch+yaml"), cm)
            .await
            .unwrap();
        assert_eq!(status, expected, "{body}");
    }
    // A request may reset managedFields (`[{}]`); the object is then untracked.
    let (status, body) = server
        .request(
            "PATCH",
            "/api/v1/namespaces/ssa/configmaps/applied",
            Some("application/merge-patch+json"),
            r#"{"metadata":{"managedFields":[{}]}}"#,
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let reset: Value = serde_json::from_str(&body).unwrap();
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");

    // The API's own checks: apply needs fieldManager; a wrong apiVersion is a 400.
    let path = "/apis/apps/v1/namespaces/ssa/deployments/updated";
    let (status, body) = server
        .request("PATCH", path, Some("application/apply-patch+yaml"), "{}")
        .await
        .unwrap();
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("fieldManager: Required value: is required for apply patch"),
        "{body}"
    );
    let (status, body) = server
        .request(
            "PATCH",
            &format!("{path}?fieldManager=x"),
            Some("application/apply-patch+yaml"),
            "apiVersion: apps/v1beta2\nkind: Deployment\nmetadata:\n  name: updated\n",
        )
        .await
        .unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("invalid object type: apps/v1beta2, Kind=Deployment"),
        "{body}"
    );
    let (status, body) = server
        .request(
            "PATCH",
            &format!("{path}?fieldManager=x"),
            Some("application/apply-patch+yaml"),
            "spec: [unclosed",
        )
        .await
        .unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("error decoding YAML"), "{body}");
    let (status, _) = server
        .request(
            "PATCH",
            &format!("{path}?fieldManager=x"),
            Some("application/apply-patch+cbor"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(status, 415);
    let (status, body) = server
        .request(
            "PATCH",
            &format!("{path}?force=true"),
            Some("application/merge-patch+json"),
            "{}",
        )
        .await
        .unwrap();
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("force: Forbidden: may not be specified for non-apply patch"),
        "{body}"
    );
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              parts:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [id]
                items:
                  type: object
                  required: [id]
                  properties:
                    id: {type: string}
                    v: {type: string}
          status:
            type: object
            properties:
              ok: {type: boolean}
"#;

#[tokio::test]
async fn custom_resources_apply_with_their_schema() {
    let (_dir, server, k) = start().await;
    let crd = write(&k, "crd.yaml", WIDGET_CRD);
    k.ok(&["apply", "--server-side", "-f", &crd]);
    // The CRD's resource is served once the CRD is established.
    let mut served = false;
    for _ in 0..100 {
        if k.run(&["get", "widgets", "-n", "ssa"]).success {
            served = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(served, "widgets never served");

    let one = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ssa}\nspec:\n  size: 1\n  parts:\n  - {id: a, v: \"1\"}\n";
    let two = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ssa}\nspec:\n  parts:\n  - {id: b, v: \"2\"}\n";
    let one = write(&k, "one.yaml", one);
    let two = write(&k, "two.yaml", two);
    k.ok(&["apply", "--server-side", "--field-manager=one", "-f", &one]);
    k.ok(&["apply", "--server-side", "--field-manager=two", "-f", &two]);
    let out = k.ok(&[
        "get",
        "widget",
        "w",
        "-n",
        "ssa",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    let live: Value = serde_json::from_str(&out).unwrap();
    // x-kubernetes-list-type: map merges the two managers' items.
    assert_eq!(
        live["spec"]["parts"],
        json!([{"id": "a", "v": "1"}, {"id": "b", "v": "2"}])
    );
    let two_entry = entry(&live, "two", "Apply").unwrap();
    assert_eq!(
        two_entry["fieldsV1"],
        json!({"f:spec": {"f:parts": {"k:{\"id\":\"b\"}": {".": {}, "f:id": {}, "f:v": {}}}}})
    );

    // Apply through /status owns only status, recorded with the subresource.
    let path = "/apis/example.com/v1/namespaces/ssa/widgets/w";
    let (status, body) = server
        .request(
            "PATCH",
            &format!("{path}/status?fieldManager=st"),
            Some("application/apply-patch+yaml"),
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 9\nstatus:\n  ok: true\n",
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let applied: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(applied["status"]["ok"], true);
    assert_eq!(
        applied["spec"]["size"], 1,
        "the status subresource leaves spec"
    );
    let st = entry(&applied, "st", "Apply").unwrap();
    assert_eq!(st["subresource"], "status");
    assert_eq!(st["fieldsV1"], json!({"f:status": {"f:ok": {}}}));

    // A conflicting apply is a 409 with upstream's causes.
    let (status, body) = server
        .request(
            "PATCH",
            &format!("{path}?fieldManager=two"),
            Some("application/apply-patch+yaml"),
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 5\n",
        )
        .await
        .unwrap();
    assert_eq!(status, 409, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"one\": .spec.size"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"one\"", "field": ".spec.size"}])
    );
}
