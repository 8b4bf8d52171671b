//! CustomResourceDefinitions driven by the real kubectl against the real apiserver binary: a CRD
//! is served at once, its schema validates, prunes and defaults instances, its printer columns,
//! explain, scale and versions work, names are checked, and deleting it removes its instances
//! and its discovery entries. On the embedded store and on etcd.

use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;
use serde_json::Value;
use std::time::{Duration, Instant};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
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
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the cron tab runs, and how often.
            properties:
              cronSpec:
                type: string
                description: The schedule, in cron format.
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              size:
                type: string
                enum: [S, M, L]
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas:
                type: integer
"#;

const CRONTAB: &str = r#"apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
"#;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

fn write(k: &Kubectl, name: &str, text: &str) -> String {
    let path = k.dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Waits (up to 60 s, a readiness wait, not a timing assertion: each try runs a kubectl, slow on
/// a loaded machine) until kubectl `args` succeeds.
fn eventually_ok(k: &Kubectl, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = k.run(args);
        if out.success {
            return out.stdout;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {} kept failing: {}",
            args.join(" "),
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until kubectl `args` fails; its stderr.
fn eventually_fails(k: &Kubectl, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = k.run(args);
        if !out.success {
            return out.stderr;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {} kept succeeding: {}",
            args.join(" "),
            out.stdout
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn condition<'a>(crd: &'a Value, kind: &str) -> &'a Value {
    crd["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no {kind} condition in {crd}"))
}

async fn suite(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), backend)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let crd_file = write(&k, "crd.yaml", CRD);
    let crontab = write(&k, "crontab.yaml", CRONTAB);

    // Served at once, established, with discovery.
    k.ok(&["apply", "-f", &crd_file]);
    eventually_ok(&k, &["get", "crontabs"]);
    let crd = json(&k.ok(&["get", "crd", "crontabs.stable.example.com", "-o", "json"]));
    assert_eq!(condition(&crd, "Established")["status"], "True");
    assert_eq!(condition(&crd, "NamesAccepted")["reason"], "NoConflicts");
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));
    let resources = k.ok(&["api-resources", "--api-group=stable.example.com"]);
    assert!(resources.contains("crontabs"), "{resources}");
    assert!(resources.contains("stable.example.com/v1 "), "{resources}");

    // Created with apply; defaults from the schema; no status on create.
    k.ok(&["apply", "-f", &crontab]);
    let created = json(&k.ok(&["get", "ct", "my-cron", "-o", "json"]));
    assert_eq!(created["spec"]["replicas"], 1);
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(created.get("status").is_none(), "{created}");

    // The printer columns.
    let table = k.ok(&["get", "crontabs"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"]);
    let row = lines.next().unwrap();
    assert!(row.starts_with("my-cron"), "{table}");
    assert!(row.contains("* * * * */5"), "{table}");

    // Schema violations are refused with their field paths.
    let bad = CRONTAB
        .replace("my-cron", "bad")
        .replace("* * * * */5", "often")
        .replace("image: my-awesome-cron-image", "replicas: 50\n  size: XL");
    let err = k.run_with_stdin(&["apply", "-f", "-"], &bad).stderr;
    assert!(err.contains("The CronTab \"bad\" is invalid"), "{err}");
    assert!(
        err.contains("spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    assert!(
        err.contains("spec.size: Unsupported value: \"XL\""),
        "{err}"
    );
    assert!(
        err.contains("spec.cronSpec: Invalid value: \"often\""),
        "{err}"
    );

    // Unknown fields: refused under strict validation, pruned (however deep) otherwise.
    let unknown = CRONTAB.replace("my-cron", "unknown").replace(
        "image: my-awesome-cron-image",
        "image: x\n  bogus: {a: {b: {c: {d: {e: {f: {g: {h: {i: {j: {k: 1}}}}}}}}}}}",
    );
    let err = k
        .run_with_stdin(&["apply", "--validate=strict", "-f", "-"], &unknown)
        .stderr;
    assert!(err.contains("unknown field \"spec.bogus\""), "{err}");
    let out = k.run_with_stdin(&["apply", "--validate=false", "-f", "-"], &unknown);
    assert!(out.success, "{}", out.stderr);
    let pruned = json(&k.ok(&["get", "ct", "unknown", "-o", "json"]));
    assert!(pruned["spec"].get("bogus").is_none(), "{pruned}");

    // explain reads the published schema.
    let explained = k.ok(&["explain", "crontab.spec"]);
    assert!(explained.contains("What the cron tab runs"), "{explained}");
    assert!(explained.contains("cronSpec"), "{explained}");

    // The scale subresource.
    k.ok(&["scale", "crontab/my-cron", "--replicas=3"]);
    let scaled = json(&k.ok(&["get", "ct", "my-cron", "-o", "json"]));
    assert_eq!(scaled["spec"]["replicas"], 3);
    assert_eq!(scaled["metadata"]["generation"], 2);
    let scale = json(&k.ok(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron/scale",
    ]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 3);

    // Another served version reads the same object (the None conversion).
    let beta = json(&k.ok(&[
        "get",
        "crontabs.v1beta1.stable.example.com",
        "my-cron",
        "-o",
        "json",
    ]));
    assert_eq!(beta["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(beta["spec"]["replicas"], 3);

    // A second CRD asking for a name in use is not served.
    let clash = CRD
        .replace(
            "crontabs.stable.example.com",
            "crontabs2.stable.example.com",
        )
        .replace("plural: crontabs", "plural: crontabs2")
        .replace("singular: crontab", "singular: crontab2")
        .replace("shortNames: [ct]", "shortNames: [ct2]");
    let out = k.run_with_stdin(&["apply", "-f", "-"], &clash);
    assert!(out.success, "{}", out.stderr);
    let deadline = Instant::now() + Duration::from_secs(60);
    let clashing = loop {
        let crd = json(&k.ok(&["get", "crd", "crontabs2.stable.example.com", "-o", "json"]));
        let found = crd["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "NamesAccepted"));
        if found || Instant::now() > deadline {
            break crd;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let accepted = condition(&clashing, "NamesAccepted");
    assert_eq!(accepted["status"], "False", "{clashing}");
    assert_eq!(accepted["reason"], "KindConflict");
    assert_eq!(condition(&clashing, "Established")["status"], "False");
    k.fails(&["get", "crontabs2"]);
    k.ok(&["delete", "crd", "crontabs2.stable.example.com"]);

    // A finalizer on an instance holds the CRD in Terminating; creates are refused meanwhile.
    k.ok(&[
        "patch",
        "ct",
        "unknown",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    k.ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--wait=false",
    ]);
    eventually_fails(&k, &["get", "ct", "my-cron"]);
    let crd = json(&k.ok(&["get", "crd", "crontabs.stable.example.com", "-o", "json"]));
    assert_eq!(condition(&crd, "Terminating")["status"], "True", "{crd}");
    let again = CRONTAB.replace("my-cron", "late");
    let err = k.run_with_stdin(&["create", "-f", "-"], &again).stderr;
    assert!(
        err.contains("create not allowed while custom resource definition is terminating"),
        "{err}"
    );
    k.ok(&[
        "patch",
        "ct",
        "unknown",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    eventually_fails(&k, &["get", "crd", "crontabs.stable.example.com"]);
    let err = k.fails(&["get", "--raw", "/apis/stable.example.com/v1"]);
    assert!(err.contains("NotFound"), "{err}");

    // Re-created, it starts empty.
    k.ok(&["apply", "-f", &crd_file]);
    let listed = eventually_ok(&k, &["get", "crontabs", "-A", "-o", "json"]);
    assert_eq!(json(&listed)["items"], serde_json::json!([]));
}

#[tokio::test]
async fn crd_suite_on_the_embedded_store() {
    suite(Backend::Embedded).await;
}

#[tokio::test]
async fn crd_suite_on_etcd() {
    suite(Backend::Etcd).await;
}

/// CRDs that cannot be served are refused with their field paths.
#[tokio::test]
async fn bad_crds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let non_structural = CRD.replace(
        "          spec:\n            type: object\n            description: What",
        "          spec:\n            description: What",
    );
    let err = k
        .run_with_stdin(&["apply", "-f", "-"], &non_structural)
        .stderr;
    assert!(err.contains("is invalid"), "{err}");
    assert!(
        err.contains(
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value"
        ),
        "{err}"
    );
    let two_storage = CRD.replace("storage: false", "storage: true");
    let err = k.run_with_stdin(&["apply", "-f", "-"], &two_storage).stderr;
    assert!(
        err.contains("must have exactly one version marked as storage version"),
        "{err}"
    );
    let wrong_name = CRD.replace(
        "name: crontabs.stable.example.com",
        "name: crontab.stable.example.com",
    );
    let err = k.run_with_stdin(&["apply", "-f", "-"], &wrong_name).stderr;
    assert!(err.contains("metadata.name"), "{err}");
    k.fails(&["get", "crontabs"]);
}
