//! Our kubectl against the upstream one on the same secured cluster (e2e::kubectl_compare):
//! every command ours has — get (tables, -o json|yaml|name|jsonpath|custom-columns, selectors,
//! sorting, chunking, -w), api-resources, create, replace, patch, label, annotate, scale,
//! delete — and the error paths (unknown type, not found, forbidden, conflict, invalid
//! manifests, unreachable server) must print and change exactly what upstream's does.

use e2e::kubectl_compare::{Fixture, Mode, normalize_identity, normalize_table, replace_word};
use std::time::Duration;

const MANIFEST: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels:
    app: web
data:
  color: blue
  long: a long value with spaces that goes on and on and on and on and on and on and past the fold
  multi: |
    line one
    line two
  number: \"123\"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
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
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 80
";

const LIST_JSON: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-list-a", "labels": {"batch": "x"}}, "data": {"a": "1"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-list-b", "labels": {"batch": "x"}}, "data": {"b": "<&>"}}
]}"#;

const STATE: &str = "configmaps,deployments.apps,services,secrets";

#[tokio::test(flavor = "multi_thread")]
async fn ours_matches_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("basic").await;
    let dir = cluster.dir().to_path_buf();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let manifest = write("m.yaml", MANIFEST);
    let list = write("list.json", LIST_JSON);
    let tree = dir.join("tree");
    write(
        "tree/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tree-a\ndata:\n  k: v\n",
    );
    write("tree/notes.txt", "not a manifest");
    write(
        "tree/sub/b.json",
        r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tree-b"}, "stringData": {"k": "v"}}"#,
    );
    let tree = tree.display().to_string();
    let bad = write(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  bad: [\n",
    );
    let no_kind = write("nokind.yaml", "apiVersion: v1\nmetadata:\n  name: x\n");
    let unknown = write(
        "unknown.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: x\n",
    );
    let missing = dir.join("missing.yaml").display().to_string();

    // Creating, and creating again (AlreadyExists for each object, with the file name).
    cmp.step(&["create", "-f", &manifest]);
    cmp.assert_same_state(STATE);
    cmp.step(&["create", "-f", &manifest]);
    // Upstream validates a List against the OpenAPI kind `List`, which our apiserver does not
    // serve yet; validation is the server's here.
    cmp.step(&["create", "--validate=false", "-f", &list, "-o", "name"]);
    cmp.step(&["create", "-f", &tree, "-R"]);
    cmp.step(&["create", "-f", &tree]);
    cmp.step_with(
        &["create", "-f", "-", "-o", "yaml"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stdin\n",
        Mode::Exact,
    );
    cmp.step(&["create", "-f", &manifest, "--dry-run=client", "-o", "name"]);
    cmp.step(&[
        "create",
        "--validate=false",
        "-f",
        &list,
        "--dry-run=server",
    ]);
    cmp.assert_same_state(STATE);

    // The generators: namespace, configmap, secret generic.
    let from_file = format!("--from-file=k2={}", write("data/f.txt", "hello\n"));
    let from_env = format!(
        "--from-env-file={}",
        write("data/env", "# comment\na=1\nb=2\n")
    );
    for args in [
        vec![
            "create",
            "configmap",
            "gen",
            "--from-literal=x=y",
            &from_file,
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec!["create", "cm", "gen", "--from-literal=x=y", &from_file],
        vec!["create", "cm", "gen"],
        vec!["create", "cm", "env", &from_env, "-o", "yaml"],
        vec!["create", "cm", "env2", &from_env, "--from-literal=a=b"],
        vec!["create", "cm", "bad", "--from-literal=novalue"],
        vec!["create", "configmap"],
        vec![
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
            "--type=Opaque",
        ],
        vec![
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
        ],
        vec![
            "create",
            "secret",
            "generic",
            "empty",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec![
            "create",
            "namespace",
            "{ns}-child",
            "--dry-run=server",
            "-o",
            "name",
        ],
    ] {
        cmp.step(&args);
    }
    cmp.assert_same_state(STATE);

    // Reading: tables, every -o, selectors, sorting, chunking.
    for args in [
        vec!["get", "cm"],
        vec!["get", "configmaps,deploy,svc"],
        vec!["get", "all"],
        vec!["get", "deploy", "-o", "wide"],
        vec!["get", "cm", "--show-labels"],
        vec!["get", "cm", "-L", "app,batch"],
        vec!["get", "cm", "-l", "batch=x"],
        vec!["get", "cm", "--field-selector", "metadata.name=cfg"],
        vec!["get", "cm", "--sort-by", ".metadata.name", "--no-headers"],
        vec!["get", "cm", "--chunk-size", "1"],
        vec!["get", "cm/cfg", "deploy/web"],
        vec!["get", "pods"],
    ] {
        cmp.step_table(&args);
    }
    for args in [
        vec!["get", "cm", "cfg", "-o", "yaml"],
        vec!["get", "cm", "cfg", "-o", "json"],
        vec!["get", "deploy", "web", "-o", "yaml"],
        vec!["get", "svc", "web", "-o", "json"],
        vec!["get", "cm", "-l", "batch=x", "-o", "yaml"],
        vec!["get", "cm,deploy", "-o", "name"],
        vec![
            "get",
            "cm",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        ],
        vec![
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
        vec![
            "get",
            "cm",
            "-o",
            "jsonpath-as-json={.items[*].metadata.name}",
        ],
        vec![
            "get",
            "cm",
            "-o",
            "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app",
        ],
        vec!["get", "pods", "-o", "json"],
        vec!["get", "cm", "cfg", "zz", "-o", "name"],
        vec!["get", "cm", "zz"],
        vec!["get", "cm", "zz", "--ignore-not-found"],
        vec!["get", "widgets"],
        vec!["get", "cm", "-o", "xml"],
    ] {
        cmp.step(&args);
    }
    cmp.shared(
        &[
            "get",
            "namespaces",
            "basic-up",
            "basic-ours",
            "--show-labels",
        ],
        Mode::Table,
    );
    cmp.shared(&["get", "cm", "-A", "-l", "app=web"], Mode::Table);
    cmp.shared(&["get", "--raw", "/api"], Mode::Exact);
    cmp.shared(
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/basic-up/configmaps/nope",
        ],
        Mode::Exact,
    );
    cmp.shared(&["api-resources"], Mode::Exact);
    cmp.shared(&["api-resources", "-o", "wide"], Mode::Exact);
    cmp.shared(
        &["api-resources", "-o", "name", "--namespaced=false"],
        Mode::Exact,
    );
    cmp.shared(
        &["api-resources", "--api-group=apps", "--verbs=list,watch"],
        Mode::Exact,
    );

    // Changing: labels, annotations, patches, scale, replace.
    for args in [
        vec!["label", "cm", "cfg", "tier=backend"],
        vec!["label", "cm", "cfg", "tier=backend"],
        vec!["label", "cm", "cfg", "tier=frontend"],
        vec!["label", "cm", "cfg", "tier=frontend", "--overwrite"],
        vec!["label", "cm", "cfg", "tier-"],
        vec!["label", "cm", "-l", "batch=x", "stage=1"],
        vec!["label", "cm", "--all", "all=yes", "-o", "name"],
        vec!["annotate", "cm", "cfg", "note=first"],
        vec!["annotate", "cm", "cfg", "note=second"],
        vec!["annotate", "cm/cfg", "note=second", "--overwrite"],
        vec![
            "annotate",
            "deploy",
            "web",
            "example.com/owner=team",
            "note-",
        ],
        vec![
            "patch",
            "cm",
            "cfg",
            "-p",
            "{\"data\":{\"color\":\"green\"}}",
        ],
        vec![
            "patch",
            "cm",
            "cfg",
            "-p",
            "{\"data\":{\"color\":\"green\"}}",
        ],
        vec![
            "patch",
            "cm",
            "cfg",
            "--type",
            "merge",
            "-p",
            "data:\n  shape: round\n",
        ],
        vec![
            "patch",
            "cm",
            "cfg",
            "--type",
            "json",
            "-p",
            "[{\"op\":\"remove\",\"path\":\"/data/shape\"}]",
        ],
        vec![
            "patch",
            "deploy",
            "web",
            "-p",
            "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.28\"}]}}}}",
        ],
        vec!["patch", "cm", "zz", "-p", "{}"],
        vec!["scale", "deploy", "web", "--replicas", "3"],
        vec![
            "scale",
            "deploy/web",
            "--replicas",
            "2",
            "--current-replicas",
            "5",
        ],
        vec![
            "scale",
            "deploy",
            "web",
            "--replicas",
            "2",
            "--current-replicas",
            "3",
        ],
        vec!["replace", "-f", &manifest],
    ] {
        cmp.step(&args);
        cmp.assert_same_state(STATE);
    }

    // Error paths.
    cmp.step(&["create", "-f", &bad]);
    cmp.step(&["create", "-f", &no_kind]);
    cmp.step(&["create", "--validate=false", "-f", &unknown]);
    cmp.step(&["create", "-f", &missing]);
    cmp.step(&["get", "cm", "--as=viewer"]);
    cmp.step(&["delete", "cm", "cfg", "--as=viewer"]);
    let stale = MANIFEST.replacen("name: cfg\n", "name: cfg\n  resourceVersion: \"1\"\n", 1);
    let stale = write("stale.yaml", stale.split("---").next().unwrap_or_default());
    cmp.step(&["replace", "-f", &stale]);
    cmp.shared(
        &["-s", "https://127.0.0.1:1", "get", "pods"],
        Mode::LastStderrLine,
    );
    // Invalid: upstream words it from the Status details (kind, name, each cause).
    let invalid = write(
        "invalid.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inv\n  labels:\n    \"a b\": c\n    d: \"e f\"\n",
    );
    cmp.step(&["create", "-f", &invalid]);
    cmp.step(&["apply", "-f", &invalid]);
    cmp.step(&["label", "cm", "cfg", "x_y-=z"]);
    cmp.step(&[
        "patch",
        "cm",
        "cfg",
        "-p",
        r#"{"metadata":{"labels":{"a b":"c"}}}"#,
    ]);
    // Not found: a named object in a namespace that does not exist either is reported as the
    // namespace's NotFound, but for delete; scale words its own.
    for args in [
        &["get", "cm", "nope"][..],
        &["get", "cm", "nope", "-w"],
        &["scale", "deploy", "nope", "--replicas=1"],
        &["scale", "deploy", "web", "nope", "--replicas=2"],
    ] {
        cmp.step(args);
    }
    for args in [
        &["get", "cm", "x", "-n", "nosuch-ns"][..],
        &["get", "cm", "x", "-n", "nosuch-ns", "-o", "yaml"],
        &["get", "cm", "x", "-n", "nosuch-ns", "-w"],
        &["describe", "cm", "x", "-n", "nosuch-ns"],
        &["label", "cm", "x", "a=b", "-n", "nosuch-ns"],
        &["scale", "deploy", "x", "--replicas=1", "-n", "nosuch-ns"],
        &["delete", "cm", "x", "-n", "nosuch-ns"],
        &["get", "cm", "-n", "nosuch-ns"],
    ] {
        cmp.shared(args, Mode::Exact);
    }
    cmp.assert_same_state(STATE);

    // Deleting.
    for args in [
        vec!["delete", "cm", "cfg"],
        vec!["delete", "cm", "cfg"],
        vec!["delete", "cm", "cfg", "--ignore-not-found"],
        // Foreground and orphan deletion need the garbage collector, which this cluster lacks.
        vec!["delete", "cm", "-l", "batch=x", "--cascade=background"],
        vec!["delete", "cm", "-l", "nothing=here"],
        vec!["delete", "cm"],
        vec!["delete", "-f", &manifest, "--dry-run=client"],
        vec!["delete", "-f", &manifest, "--now"],
        vec![
            "delete",
            "secret",
            "tree-b",
            "--grace-period=0",
            "--force",
            "-o",
            "name",
        ],
        vec!["delete", "cm", "--all", "--wait=false"],
    ] {
        cmp.step(&args);
        cmp.assert_same_state(STATE);
    }
    cmp.step_table(&["get", "cm"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_and_discovery_cache() {
    let Fixture { cluster, cmp } = Fixture::start("watch").await;
    let dir = cluster.dir().to_path_buf();
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream.ok(&[
            "create",
            "configmap",
            "first",
            "-n",
            ns,
            "--from-literal=a=b",
        ]);
    }
    let mut up = cmp
        .upstream
        .spawn(&["get", "cm", "-w", "-n", &cmp.ns_upstream]);
    let mut ours = cmp.ours.spawn(&["get", "cm", "-w", "-n", &cmp.ns_ours]);
    let events_args = |ns: &str| -> Vec<String> {
        ["get", "cm", "-w", "--output-watch-events", "-n", ns]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let up_events_args = events_args(&cmp.ns_upstream);
    let our_events_args = events_args(&cmp.ns_ours);
    let up_refs: Vec<&str> = up_events_args.iter().map(String::as_str).collect();
    let our_refs: Vec<&str> = our_events_args.iter().map(String::as_str).collect();
    let mut up_events = cmp.upstream.spawn(&up_refs);
    let mut our_events = cmp.ours.spawn(&our_refs);
    let timeout = Duration::from_secs(20);
    let listed = |out: &str| out.contains("first");
    // All four listed before the changes: one that lists after them shows `second` once.
    for bg in [&mut up, &mut ours, &mut up_events, &mut our_events] {
        bg.wait_for(timeout, "the listing", listed);
    }
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream
            .ok(&["create", "configmap", "second-with-a-longer-name", "-n", ns]);
        cmp.upstream.ok(&[
            "label",
            "configmap",
            "second-with-a-longer-name",
            "x=y",
            "-n",
            ns,
        ]);
    }
    // Whole lines only: the output is compared as it is when this holds.
    let two_events =
        |out: &str| out.matches("second-with-a-longer-name").count() >= 2 && out.ends_with('\n');
    let up_out = up.wait_for(timeout, "two events", two_events);
    let our_out = ours.wait_for(timeout, "two events", two_events);
    let up_events_out = up_events.wait_for(timeout, "two events", two_events);
    let our_events_out = our_events.wait_for(timeout, "two events", two_events);
    assert!(
        our_events_out.starts_with("EVENT      NAME"),
        "{our_events_out}"
    );
    assert_eq!(
        normalize_table(&our_events_out),
        normalize_table(&up_events_out),
        "get -w --output-watch-events output (left ours)"
    );
    assert_eq!(
        normalize_table(&our_out),
        normalize_table(&up_out),
        "get -w output (left ours)"
    );
    let mut ours_only = cmp.ours.spawn(&[
        "-v=6",
        "get",
        "cm",
        "--watch-only",
        "-o",
        "name",
        "-n",
        &cmp.ns_ours,
    ]);
    // Created before the list it would be listed (and not printed): wait for the watch, which
    // starts from the list's resourceVersion.
    ours_only.wait_for_stderr(timeout, "the watch", |err| err.contains("watch=true"));
    cmp.upstream
        .ok(&["create", "configmap", "third", "-n", &cmp.ns_ours]);
    let out = ours_only.wait_for(timeout, "the event", |o| o.contains("configmap/third\n"));
    assert_eq!(out, "configmap/third\n", "--watch-only prints events only");

    // --chunk-size pages the list: three objects, one per request, each after the first
    // continuing the previous.
    let paged = cmp.ours.run(&[
        "-v=6",
        "get",
        "cm",
        "--chunk-size=1",
        "-o",
        "name",
        "-n",
        &cmp.ns_ours,
    ]);
    assert!(paged.success, "{}", paged.stderr);
    assert_eq!(
        paged.stdout,
        "configmap/first\nconfigmap/second-with-a-longer-name\nconfigmap/third\n"
    );
    let requests: Vec<&str> = paged
        .stderr
        .lines()
        .filter(|l| l.contains("\"Response\"") && l.contains("/configmaps?"))
        .collect();
    assert_eq!(
        requests.len(),
        3,
        "one list request per object:\n{}",
        paged.stderr
    );
    assert!(
        requests.iter().all(|l| l.contains("limit=1")),
        "{requests:?}"
    );
    assert_eq!(
        requests.iter().filter(|l| l.contains("continue=")).count(),
        2,
        "{requests:?}"
    );

    // Discovery is cached where upstream keeps it, and used by the next command.
    let port = cluster.server.addr().port();
    let cache = dir
        .join("kubectl-ours/cache/discovery")
        .join(format!("127.0.0.1_{port}"));
    for file in [
        "servergroups.json",
        "v1/serverresources.json",
        "apps/v1/serverresources.json",
    ] {
        assert!(
            cache.join(file).exists(),
            "{} missing from the discovery cache",
            file
        );
    }
    let yaml = cmp
        .ours
        .ok(&["get", "cm", "first", "-o", "yaml", "-n", &cmp.ns_ours]);
    let expected = cmp
        .upstream
        .ok(&["get", "cm", "first", "-o", "yaml", "-n", &cmp.ns_upstream]);
    assert_eq!(
        normalize_identity(&replace_word(&yaml, &cmp.ns_ours, "NS")),
        normalize_identity(&replace_word(&expected, &cmp.ns_upstream, "NS"))
    );
}
