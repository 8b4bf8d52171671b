//! The acceptance suite: the real upstream kubectl (/usr/bin/kubectl, with its default client-side
//! validation against our OpenAPI) drives our apiserver through a multi-document manifest, on the
//! embedded store and on a real etcd.

use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

const MANIFEST: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: e2e
  labels:
    suite: e2e
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: e2e
  labels:
    app: web
data:
  color: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: e2e
type: Opaque
data:
  password: czNjcmV0
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: e2e
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: e2e
  labels:
    app: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: v1
kind: Pod
metadata:
  name: solo
  namespace: e2e
  labels:
    app: solo
spec:
  containers:
  - name: busybox
    image: busybox:1.36
    command: ["sleep", "3600"]
"#;

const RESOURCES: [&str; 6] = [
    "namespace/e2e",
    "configmap/settings",
    "secret/creds",
    "deployment.apps/web",
    "service/web",
    "pod/solo",
];

/// `resource verb` lines, in manifest order, as kubectl prints them.
fn lines(verbs: [&str; 6]) -> String {
    RESOURCES
        .iter()
        .zip(verbs)
        .map(|(resource, verb)| format!("{resource} {verb}\n"))
        .collect()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("not JSON ({err}): {text}"))
}

fn set(text: &str) -> BTreeSet<String> {
    text.lines().map(str::to_string).collect()
}

/// The whitespace-separated column titles of a table's header line.
fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

/// The value of the first `Label:  value` line of `kubectl describe` output (indented or not).
fn field<'a>(described: &'a str, label: &str) -> &'a str {
    let prefix = format!("{label}:");
    described
        .lines()
        .map(str::trim_start)
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {label}: in\n{described}"))
}

/// The table row whose first column is `name`, split on whitespace.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
}

fn write(k: &Kubectl, name: &str, text: &str) -> String {
    let path = k.dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// An apiserver on `backend` in a temp dir (to drop after the apiserver), and kubectl for it.
async fn started(backend: Backend) -> (tempfile::TempDir, ApiServer, Kubectl) {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), backend)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    (dir, server, k)
}

async fn suite(backend: Backend) {
    let (dir, server, k) = started(backend).await;
    let manifest = write(&k, "manifest.yaml", MANIFEST);

    // create -f: every document, in order; a second create finds them all.
    assert_eq!(k.ok(&["create", "-f", &manifest]), lines(["created"; 6]));
    let err = k.fails(&["create", "-f", &manifest]);
    assert!(
        err.contains(&format!(
            "Error from server (AlreadyExists): error when creating \"{manifest}\": configmaps \"settings\" already exists"
        )),
        "{err}"
    );
    // apply: the first one adds the last-applied annotation kubectl create did not save, the
    // second finds nothing to do, a changed manifest patches only what changed.
    let out = k.run(&["apply", "-f", &manifest]);
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, lines(["configured"; 6]));
    assert!(
        out.stderr
            .contains("is missing the kubectl.kubernetes.io/last-applied-configuration annotation"),
        "{}",
        out.stderr
    );
    assert_eq!(k.ok(&["apply", "-f", &manifest]), lines(["unchanged"; 6]));
    let changed = MANIFEST
        .replace("color: blue", "color: green")
        .replace("replicas: 2", "replicas: 3");
    let changed = write(&k, "changed.yaml", &changed);
    assert_eq!(
        k.ok(&["apply", "-f", &changed]),
        lines([
            "unchanged",
            "configured",
            "unchanged",
            "configured",
            "unchanged",
            "unchanged"
        ])
    );
    assert_eq!(k.ok(&["apply", "-f", &changed]), lines(["unchanged"; 6]));
    let applied = json(&k.ok(&["get", "cm", "settings", "-n", "e2e", "-o", "json"]));
    let last_applied = json(
        applied["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("last-applied annotation"),
    );
    assert_eq!(last_applied["data"]["color"], "green");
    assert_eq!(applied["data"]["color"], "green");

    // A ConfigMap in another namespace, for -A; created from stdin.
    let out = k.run_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: default\ndata:\n  a: b\n",
    );
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, "configmap/elsewhere created\n");

    // get, as tables.
    let pods = k.ok(&["get", "pods", "-n", "e2e"]);
    assert_eq!(
        header(&pods),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    assert_eq!(row(&pods, "solo")[..4], ["solo", "0/1", "Pending", "0"]);
    let deployments = k.ok(&["get", "deployments", "-n", "e2e"]);
    assert_eq!(
        header(&deployments),
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );
    assert_eq!(row(&deployments, "web")[..4], ["web", "0/3", "0", "0"]);
    let services = k.ok(&["get", "svc", "web", "-n", "e2e"]);
    assert_eq!(
        header(&services),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    let web = row(&services, "web");
    assert_eq!((web[1], web[4]), ("ClusterIP", "80/TCP"), "{services}");
    let configmaps = k.ok(&["get", "cm", "-n", "e2e"]);
    assert_eq!(header(&configmaps), ["NAME", "DATA", "AGE"]);
    assert_eq!(row(&configmaps, "settings")[..2], ["settings", "1"]);
    let namespaces = k.ok(&["get", "namespaces"]);
    for ns in [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "e2e",
    ] {
        assert_eq!(row(&namespaces, ns)[1], "Active", "{namespaces}");
    }

    // -o wide adds the wide columns.
    let wide = k.ok(&["get", "pods", "-n", "e2e", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    let wide = k.ok(&["get", "deploy", "web", "-n", "e2e", "-o", "wide"]);
    assert_eq!(
        header(&wide)[5..],
        ["CONTAINERS", "IMAGES", "SELECTOR"],
        "{wide}"
    );
    assert_eq!(row(&wide, "web")[5..], ["nginx", "nginx:1.27", "app=web"]);

    // -o json and -o yaml show the same stored object.
    let as_json = json(&k.ok(&["get", "deploy", "web", "-n", "e2e", "-o", "json"]));
    let as_yaml: Value =
        serde_yaml::from_str(&k.ok(&["get", "deploy", "web", "-n", "e2e", "-o", "yaml"])).unwrap();
    assert_eq!(as_json, as_yaml);
    assert_eq!(as_json["apiVersion"], "apps/v1");
    assert_eq!(as_json["kind"], "Deployment");
    assert_eq!(as_json["metadata"]["namespace"], "e2e");
    assert_eq!(as_json["spec"]["replicas"], 3);
    assert_eq!(as_json["metadata"]["labels"]["app"], "web");
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(
            as_json["metadata"][field]
                .as_str()
                .is_some_and(|v| !v.is_empty()),
            "metadata.{field} missing: {as_json}"
        );
    }
    assert_eq!(
        as_json["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    let list = json(&k.ok(&["get", "pods", "-n", "e2e", "-o", "json"]));
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["items"][0]["metadata"]["name"], "solo");

    // -o jsonpath
    assert_eq!(
        k.ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "3"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "pods",
            "-n",
            "e2e",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}:{.spec.containers[0].image}{\"\\n\"}{end}"
        ]),
        "solo:busybox:1.36\n"
    );

    // -o name, -l, --field-selector, -A
    let kinds = "configmaps,secrets,deployments,services,pods";
    assert_eq!(
        set(&k.ok(&["get", kinds, "-n", "e2e", "-o", "name"])),
        set("configmap/settings\nsecret/creds\ndeployment.apps/web\nservice/web\npod/solo\n")
    );
    assert_eq!(
        set(&k.ok(&["get", kinds, "-n", "e2e", "-l", "app=web", "-o", "name"])),
        set("configmap/settings\ndeployment.apps/web\nservice/web\n")
    );
    assert_eq!(
        k.ok(&[
            "get",
            "pods",
            "-n",
            "e2e",
            "-l",
            "app in (solo,other)",
            "-o",
            "name"
        ]),
        "pod/solo\n"
    );
    let out = k.run(&["get", "pods", "-n", "e2e", "-l", "app!=solo"]);
    assert!(out.success && out.stdout.is_empty(), "{out:?}");
    assert_eq!(out.stderr, "No resources found in e2e namespace.\n");
    assert_eq!(
        k.ok(&[
            "get",
            "pods",
            "-n",
            "e2e",
            "--field-selector",
            "metadata.name=solo,status.phase=Pending",
            "-o",
            "name"
        ]),
        "pod/solo\n"
    );
    let out = k.run(&[
        "get",
        "pods",
        "-n",
        "e2e",
        "--field-selector",
        "status.phase=Running",
    ]);
    assert!(out.success && out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        k.ok(&[
            "get",
            "ns",
            "--field-selector",
            "metadata.name=e2e",
            "-o",
            "name"
        ]),
        "namespace/e2e\n"
    );
    let all = k.ok(&["get", "configmaps", "-A"]);
    assert_eq!(header(&all), ["NAMESPACE", "NAME", "DATA", "AGE"]);
    assert_eq!(row(&all, "e2e")[..3], ["e2e", "settings", "1"], "{all}");
    assert_eq!(
        row(&all, "default")[..3],
        ["default", "elsewhere", "1"],
        "{all}"
    );
    assert_eq!(
        set(&k.ok(&["get", "configmaps", "-A", "-o", "name"])),
        set("configmap/settings\nconfigmap/elsewhere\n")
    );

    // get -w sees an update made while it runs.
    let mut watch = k.spawn(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "e2e",
        "-w",
        "-o",
        "jsonpath={.metadata.name}={.data.color}{\"\\n\"}",
    ]);
    watch.wait_for(Duration::from_secs(30), "initial state", |out| {
        out.contains("settings=green\n")
    });
    assert_eq!(
        k.ok(&[
            "patch",
            "cm",
            "settings",
            "-n",
            "e2e",
            "--type=merge",
            "-p",
            r#"{"data":{"color":"purple"}}"#
        ]),
        "configmap/settings patched\n"
    );
    let seen = watch.wait_for(Duration::from_secs(30), "the update", |out| {
        out.contains("settings=purple\n")
    });
    assert!(seen.starts_with("settings=green\n"), "{seen}");
    drop(watch);

    // describe
    let described = k.ok(&["describe", "pod", "solo", "-n", "e2e"]);
    for (label, value) in [
        ("Name", "solo"),
        ("Namespace", "e2e"),
        ("Labels", "app=solo"),
        ("Status", "Pending"),
        ("Image", "busybox:1.36"),
    ] {
        assert_eq!(field(&described, label), value, "{described}");
    }
    let described = k.ok(&["describe", "deployment", "web", "-n", "e2e"]);
    for (label, value) in [
        ("Name", "web"),
        ("Namespace", "e2e"),
        ("Selector", "app=web"),
        (
            "Replicas",
            "3 desired | 0 updated | 0 total | 0 available | 0 unavailable",
        ),
        ("StrategyType", "RollingUpdate"),
        ("Image", "nginx:1.27"),
    ] {
        assert_eq!(field(&described, label), value, "{described}");
    }
    let described = k.ok(&["describe", "configmap", "settings", "-n", "e2e"]);
    assert!(described.contains("color:\n----\npurple"), "{described}");

    // label, annotate
    assert_eq!(
        k.ok(&["label", "cm", "settings", "-n", "e2e", "tier=backend"]),
        "configmap/settings labeled\n"
    );
    assert_eq!(
        k.ok(&["get", "cm", "-n", "e2e", "-l", "tier=backend", "-o", "name"]),
        "configmap/settings\n"
    );
    assert_eq!(
        k.ok(&[
            "label",
            "cm",
            "settings",
            "-n",
            "e2e",
            "tier=frontend",
            "--overwrite"
        ]),
        "configmap/settings labeled\n"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "settings",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.metadata.labels}"
        ]),
        r#"{"app":"web","tier":"frontend"}"#
    );
    assert_eq!(
        k.ok(&["label", "cm", "settings", "-n", "e2e", "tier-"]),
        "configmap/settings unlabeled\n"
    );
    assert_eq!(
        k.ok(&["annotate", "pod", "solo", "-n", "e2e", "owner=e2e-team"]),
        "pod/solo annotated\n"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "pod",
            "solo",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.metadata.annotations.owner}"
        ]),
        "e2e-team"
    );

    // patch: strategic (containers merged by name, ports kept), merge, json.
    assert_eq!(
        k.ok(&[
            "patch",
            "deployment",
            "web",
            "-n",
            "e2e",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}"#
        ]),
        "deployment.apps/web patched\n"
    );
    let patched = json(&k.ok(&["get", "deployment", "web", "-n", "e2e", "-o", "json"]));
    let containers = &patched["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
    assert_eq!(containers[0]["image"], "nginx:1.28");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "settings",
            "-n",
            "e2e",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"patched":"merge"}},"data":{"size":"large"}}"#
        ]),
        "configmap/settings patched\n"
    );
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "settings",
            "-n",
            "e2e",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/data/color","value":"yellow"},{"op":"remove","path":"/data/size"}]"#
        ]),
        "configmap/settings patched\n"
    );
    let patched = json(&k.ok(&["get", "configmap", "settings", "-n", "e2e", "-o", "json"]));
    assert_eq!(patched["data"], serde_json::json!({"color": "yellow"}));
    assert_eq!(patched["metadata"]["labels"]["patched"], "merge");
    let err = k.fails(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "e2e",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/data/color","value":"blue"}]"#,
    ]);
    assert!(err.contains("test failed"), "{err}");
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "settings",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "yellow"
    );

    // replace -f with what get -o yaml printed; replacing again from the same (now stale)
    // resourceVersion is a conflict.
    let current = k.ok(&["get", "configmap", "settings", "-n", "e2e", "-o", "yaml"]);
    assert!(current.contains("  color: yellow\n"), "{current}");
    let replacement = write(
        &k,
        "replace.yaml",
        &current.replace("  color: yellow\n", "  color: red\n"),
    );
    assert_eq!(
        k.ok(&["replace", "-f", &replacement]),
        "configmap/settings replaced\n"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "settings",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "red"
    );
    let err = k.fails(&["replace", "-f", &replacement]);
    assert!(
        err.contains(
            "Error from server (Conflict): error when replacing \"REPLACE\": Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again"
                .replace("REPLACE", &replacement)
                .as_str()
        ),
        "{err}"
    );

    // scale
    assert_eq!(
        k.ok(&["scale", "deployment", "web", "-n", "e2e", "--replicas=5"]),
        "deployment.apps/web scaled\n"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "5"
    );
    let scale = json(&k.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/e2e/deployments/web/scale",
    ]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);

    // delete
    assert_eq!(
        k.ok(&["delete", "configmap", "settings", "-n", "e2e"]),
        "configmap \"settings\" deleted\n"
    );
    let err = k.fails(&["get", "configmap", "settings", "-n", "e2e"]);
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"settings\" not found\n"
    );
    // Orphan: the object stays, marked for deletion, until the garbage collector (not running
    // here) removes the orphan finalizer; --wait=false as kubectl would otherwise wait for it.
    assert_eq!(
        k.ok(&[
            "delete",
            "deployment",
            "web",
            "-n",
            "e2e",
            "--cascade=orphan",
            "--wait=false"
        ]),
        "deployment.apps \"web\" deleted\n"
    );
    let orphaned = json(&k.ok(&["get", "deployment", "web", "-n", "e2e", "-o", "json"]));
    assert_eq!(
        orphaned["metadata"]["finalizers"],
        serde_json::json!(["orphan"])
    );
    assert!(
        orphaned["metadata"]["deletionTimestamp"].is_string(),
        "{orphaned}"
    );
    let out = k.run(&[
        "delete",
        "pod",
        "solo",
        "-n",
        "e2e",
        "--grace-period=0",
        "--force",
    ]);
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, "pod \"solo\" force deleted\n");
    assert!(
        out.stderr.contains("Immediate deletion does not wait"),
        "{out:?}"
    );
    let err = k.fails(&["get", "pod", "solo", "-n", "e2e"]);
    assert_eq!(
        err,
        "Error from server (NotFound): pods \"solo\" not found\n"
    );
    assert_eq!(
        k.ok(&["delete", "service,secret", "-n", "e2e", "--all"]),
        "service \"web\" deleted\nsecret \"creds\" deleted\n"
    );
    let out = k.run(&["get", "services,secrets,configmaps,pods", "-n", "e2e"]);
    assert!(out.success && out.stdout.is_empty(), "{out:?}");

    // explain, api-resources, api-versions, --raw
    let explained = k.ok(&["explain", "pods.spec.containers"]);
    for expected in [
        "KIND:       Pod\n",
        "VERSION:    v1\n",
        "FIELD: containers <[]Container>\n",
        "  image\t<string>\n",
        "  name\t<string> -required-\n",
    ] {
        assert!(
            explained.contains(expected),
            "no {expected:?} in\n{explained}"
        );
    }
    let resources = k.ok(&["api-resources"]);
    assert_eq!(
        header(&resources),
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    assert_eq!(row(&resources, "pods")[1..], ["po", "v1", "true", "Pod"]);
    assert_eq!(
        row(&resources, "deployments")[1..],
        ["deploy", "apps/v1", "true", "Deployment"]
    );
    assert_eq!(
        row(&resources, "namespaces")[1..],
        ["ns", "v1", "false", "Namespace"]
    );
    let cluster_scoped = set(&k.ok(&["api-resources", "--namespaced=false", "-o", "name"]));
    assert!(cluster_scoped.contains("nodes"), "{cluster_scoped:?}");
    assert!(!cluster_scoped.contains("pods"), "{cluster_scoped:?}");
    let versions = set(&k.ok(&["api-versions"]));
    for version in [
        "v1",
        "apps/v1",
        "batch/v1",
        "networking.k8s.io/v1",
        "rbac.authorization.k8s.io/v1",
    ] {
        assert!(versions.contains(version), "no {version} in {versions:?}");
    }
    let readyz = k.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(readyz.contains("[+]ping ok\n"), "{readyz}");
    assert!(readyz.contains("[+]etcd ok\n"), "{readyz}");
    assert!(readyz.ends_with("readyz check passed\n"), "{readyz:?}");
    let raw = json(&k.ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps"]));
    assert_eq!(raw["kind"], "ConfigMapList");
    assert_eq!(raw["items"][0]["metadata"]["name"], "elsewhere");

    drop(server);
    drop(dir);
}

#[tokio::test]
async fn kubectl_suite_on_the_embedded_store() {
    suite(Backend::Embedded).await;
}

#[tokio::test]
async fn kubectl_suite_on_etcd() {
    suite(Backend::Etcd).await;
}

/// `kubectl create <kind> ...` generators send protobuf bodies.
#[tokio::test]
async fn kubectl_create_subcommands() {
    let (dir, server, k) = started(Backend::Embedded).await;
    assert_eq!(
        k.ok(&["create", "namespace", "sub"]),
        "namespace/sub created\n"
    );
    assert_eq!(
        k.ok(&[
            "create",
            "configmap",
            "c1",
            "-n",
            "sub",
            "--from-literal=a=b"
        ]),
        "configmap/c1 created\n"
    );
    assert_eq!(
        k.ok(&[
            "create",
            "secret",
            "generic",
            "s1",
            "-n",
            "sub",
            "--from-literal=k=v"
        ]),
        "secret/s1 created\n"
    );
    assert_eq!(
        k.ok(&[
            "create",
            "deployment",
            "d1",
            "-n",
            "sub",
            "--image=nginx:1.27",
            "--replicas=2"
        ]),
        "deployment.apps/d1 created\n"
    );
    assert_eq!(
        k.ok(&[
            "create",
            "service",
            "clusterip",
            "s1",
            "-n",
            "sub",
            "--tcp=80:8080"
        ]),
        "service/s1 created\n"
    );
    assert_eq!(
        k.ok(&["get", "cm", "c1", "-n", "sub", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "secret",
            "s1",
            "-n",
            "sub",
            "-o",
            "jsonpath={.data.k}"
        ]),
        "dg=="
    );
    assert_eq!(
        k.ok(&[
            "get",
            "deploy",
            "d1",
            "-n",
            "sub",
            "-o",
            "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"
        ]),
        "2 nginx:1.27"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "svc",
            "s1",
            "-n",
            "sub",
            "-o",
            "jsonpath={.spec.ports[0].targetPort}"
        ]),
        "8080"
    );
    drop(server);
    drop(dir);
}

/// Upstream converts a Secret's write-only stringData into base64 data on every write.
#[tokio::test]
async fn kubectl_secret_string_data_becomes_data() {
    let (dir, server, k) = started(Backend::Embedded).await;
    let out = k.run_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\n\
         type: Opaque\ndata:\n  user: YWRtaW4=\nstringData:\n  password: s3cret\n",
    );
    assert!(out.success, "{out:?}");
    let secret = json(&k.ok(&["get", "secret", "creds", "-o", "json"]));
    assert_eq!(
        secret["data"],
        serde_json::json!({"user": "YWRtaW4=", "password": "czNjcmV0"}),
        "{secret}"
    );
    assert!(secret.get("stringData").is_none(), "{secret}");
    drop(server);
    drop(dir);
}

/// An apiserver on the embedded store, kubectl for it, and the suite's manifest created.
async fn started_with_manifest() -> (tempfile::TempDir, ApiServer, Kubectl, String) {
    let (dir, server, k) = started(Backend::Embedded).await;
    let manifest = write(&k, "manifest.yaml", MANIFEST);
    assert_eq!(k.ok(&["create", "-f", &manifest]), lines(["created"; 6]));
    (dir, server, k, manifest)
}

/// Client verbs built on the server's basic ones: edit, wait, cordon, rollout restart, expose,
/// a Service's cluster IP.
#[tokio::test]
async fn kubectl_edit_wait_cordon_rollout_expose() {
    let (_dir, server, k, _) = started_with_manifest().await;

    // edit, with an "editor" that rewrites the file kubectl hands it.
    let editor = write(
        &k,
        "editor.sh",
        "#!/bin/sh\nsed -i 's/color: blue/color: teal/' \"$1\"\n",
    );
    std::process::Command::new("chmod")
        .args(["+x", &editor])
        .status()
        .unwrap();
    let out = k.run_env(
        &["edit", "configmap", "settings", "-n", "e2e"],
        &[("EDITOR", &editor)],
    );
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, "configmap/settings edited\n");
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "settings",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "teal"
    );

    // wait for a condition that holds, and for a deletion made meanwhile.
    assert_eq!(
        k.ok(&[
            "wait",
            "--for=jsonpath={.data.color}=teal",
            "configmap/settings",
            "-n",
            "e2e",
            "--timeout=20s"
        ]),
        "configmap/settings condition met\n"
    );
    let mut waiting = k.spawn(&[
        "-v=6",
        "wait",
        "--for=delete",
        "configmap/settings",
        "-n",
        "e2e",
        "--timeout=30s",
    ]);
    // A wait that reads the object only after its deletion prints nothing: delete once its
    // list/watch by name (which follows the read) was logged.
    waiting.wait_for_stderr(Duration::from_secs(30), "the read", |err| {
        err.contains("fieldSelector=metadata.name")
    });
    k.ok(&["delete", "configmap", "settings", "-n", "e2e"]);
    waiting.wait_for(Duration::from_secs(30), "condition met", |out| {
        out == "configmap/settings condition met\n"
    });

    // cordon / uncordon a Node.
    let out = k.run_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
    );
    assert!(out.success, "{out:?}");
    assert_eq!(k.ok(&["cordon", "n1"]), "node/n1 cordoned\n");
    assert_eq!(
        k.ok(&["get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"]),
        "true"
    );
    assert_eq!(k.ok(&["uncordon", "n1"]), "node/n1 uncordoned\n");
    assert_eq!(
        k.ok(&["get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"]),
        ""
    );

    // rollout restart stamps the pod template.
    assert_eq!(
        k.ok(&["rollout", "restart", "deployment/web", "-n", "e2e"]),
        "deployment.apps/web restarted\n"
    );
    let stamped = k.ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "e2e",
        "-o",
        "jsonpath={.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}",
    ]);
    assert!(!stamped.is_empty(), "no restartedAt annotation");

    // expose makes a Service from the Deployment's selector; Services get a cluster IP.
    assert_eq!(
        k.ok(&[
            "expose",
            "deployment",
            "web",
            "-n",
            "e2e",
            "--name=web2",
            "--port=8080",
            "--target-port=80"
        ]),
        "service/web2 exposed\n"
    );
    let service = json(&k.ok(&["get", "svc", "web2", "-n", "e2e", "-o", "json"]));
    assert_eq!(
        service["spec"]["selector"],
        serde_json::json!({"app": "web"})
    );
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    for name in ["web", "web2"] {
        let ip = k.ok(&[
            "get",
            "svc",
            name,
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.clusterIP}",
        ]);
        assert!(
            ip.parse::<std::net::Ipv4Addr>().is_ok(),
            "service {name} has no cluster IP: {ip:?}"
        );
    }
    drop(server);
}

/// Server-side apply: `kubectl apply --server-side` sends application/apply-patch+yaml.
#[tokio::test]
#[ignore = "apiserver bug: PATCH with application/apply-patch+yaml (server-side apply) is rejected with 415"]
async fn kubectl_server_side_apply() {
    let (_dir, server, k, manifest) = started_with_manifest().await;
    let out = k.run(&["apply", "--server-side", "-f", &manifest]);
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, lines(["serverside-applied"; 6]));
    let changed = write(
        &k,
        "changed.yaml",
        &MANIFEST.replace("color: blue", "color: green"),
    );
    let out = k.run(&["apply", "--server-side", "-f", &changed]);
    assert!(out.success, "{out:?}");
    let cm = json(&k.ok(&[
        "get",
        "cm",
        "settings",
        "-n",
        "e2e",
        "-o",
        "json",
        "--show-managed-fields",
    ]));
    assert_eq!(cm["data"]["color"], "green");
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f["manager"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(managers.contains(&"kubectl"), "{cm}");
    drop(server);
}

/// `--dry-run=server` and `kubectl diff` (a server-side dry-run patch) change nothing.
#[tokio::test]
async fn kubectl_dry_run_and_diff() {
    let (_dir, server, k, manifest) = started_with_manifest().await;
    let out = k.run_with_stdin(
        &["create", "-f", "-", "--dry-run=server", "-o", "name"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\n  namespace: e2e\n",
    );
    assert!(out.success, "{out:?}");
    assert_eq!(out.stdout, "configmap/dry\n");
    let err = k.fails(&["get", "cm", "dry", "-n", "e2e"]);
    assert!(err.contains("NotFound"), "{err}");

    assert_eq!(k.ok(&["apply", "-f", &manifest]), lines(["configured"; 6]));
    let out = k.run(&["diff", "-f", &manifest]);
    assert!(out.success && out.stdout.is_empty(), "no changes: {out:?}");
    let changed = write(
        &k,
        "changed.yaml",
        &MANIFEST.replace("color: blue", "color: pink"),
    );
    let out = k.run(&["diff", "-f", &changed]);
    // kubectl diff exits 1 when there are differences.
    assert!(!out.success && out.stderr.is_empty(), "{out:?}");
    assert!(out.stdout.contains("-  color: blue\n"), "{}", out.stdout);
    assert!(out.stdout.contains("+  color: pink\n"), "{}", out.stdout);
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "settings",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "blue"
    );
    drop(server);
}

/// `kubectl auth can-i` (SelfSubjectAccessReview) and `kubectl auth whoami` (SelfSubjectReview),
/// both listed in discovery.
#[tokio::test]
async fn kubectl_auth_can_i_and_whoami() {
    let (dir, server, k) = started(Backend::Embedded).await;
    // AlwaysAllow authorizes everything.
    assert_eq!(k.ok(&["auth", "can-i", "create", "pods"]), "yes\n");
    assert_eq!(k.ok(&["auth", "can-i", "delete", "nodes"]), "yes\n");
    let who = k.ok(&["auth", "whoami"]);
    assert!(who.starts_with("ATTRIBUTE"), "{who}");
    assert!(who.contains("Username"), "{who}");
    drop(server);
    drop(dir);
}

/// Server-side field validation as kubectl's `--validate` drives it, and a server dry run that
/// answers the defaulted object without storing it.
#[tokio::test]
async fn kubectl_validate_modes_and_dry_run_defaults() {
    let (_dir, _server, k, _) = started_with_manifest().await;
    let misspelt = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: typo
  namespace: e2e
spec:
  replica: 2
  selector:
    matchLabels: {app: typo}
  template:
    metadata:
      labels: {app: typo}
    spec:
      containers:
      - name: c
        image: nginx:1.27
        imagePullPolice: Always
"#;
    let out = k.run_with_stdin(&["apply", "--validate=strict", "-f", "-"], misspelt);
    assert!(!out.success, "{out:?}");
    assert!(
        out.stderr.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\", unknown field \"spec.template.spec.containers[0].imagePullPolice\""
        ),
        "{}",
        out.stderr
    );
    k.fails(&["get", "deploy", "typo", "-n", "e2e"]);

    let out = k.run_with_stdin(&["apply", "--validate=warn", "-f", "-"], misspelt);
    assert!(out.success, "{out:?}");
    assert!(
        out.stderr
            .contains("Warning: unknown field \"spec.replica\""),
        "{}",
        out.stderr
    );
    let stored: Value = json(&k.ok(&["get", "deploy", "typo", "-n", "e2e", "-o", "json"]));
    assert!(stored["spec"].get("replica").is_none(), "{stored}");

    let out = k.run_with_stdin(
        &["create", "--dry-run=server", "-o", "yaml", "-f", "-"],
        &misspelt
            .replace("name: typo", "name: dry")
            .replace("  replica: 2\n", "")
            .replace("imagePullPolice", "imagePullPolicy"),
    );
    assert!(out.success, "{out:?}");
    let dry: serde_yaml::Value = serde_yaml::from_str(&out.stdout).unwrap();
    let dry: Value = serde_json::to_value(dry).unwrap();
    // Upstream's defaults are filled in: replicas, strategy, the pod's restart policy.
    assert_eq!(dry["spec"]["replicas"], 1, "{dry}");
    assert_eq!(dry["spec"]["strategy"]["type"], "RollingUpdate", "{dry}");
    assert_eq!(dry["spec"]["template"]["spec"]["restartPolicy"], "Always");
    assert!(dry["metadata"]["uid"].is_string(), "{dry}");
    let err = k.fails(&["get", "deploy", "dry", "-n", "e2e"]);
    assert!(err.contains("NotFound"), "{err}");
}
