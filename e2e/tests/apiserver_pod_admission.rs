//! Issue 4's pod admission with the real kubectl: the ServiceAccount plugin (default account,
//! the projected `kube-api-access-*` volume and its mount, refusal without the account),
//! DefaultTolerationSeconds, PodSecurity (restricted and baseline namespaces) and Priority
//! (system classes resolved, unknown classes refused), each refusal with upstream's exact
//! message.

use e2e::kubectl::Kubectl;
use e2e::secure::SecureCluster;
use serde_json::{Value, json};

fn forbidden_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains("Forbidden"))
        .unwrap_or_else(|| panic!("no Forbidden error in: {stderr}"))
}

/// Creates `manifest`, printing the created object as JSON.
fn create(kubectl: &Kubectl, manifest: &str) -> Value {
    let out = kubectl.run_with_stdin(&["create", "-f", "-", "-o", "json"], manifest);
    assert!(
        out.success,
        "create failed\nmanifest:\n{manifest}\nstdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn create_fails(kubectl: &Kubectl, manifest: &str) -> String {
    let out = kubectl.run_with_stdin(&["create", "-f", "-"], manifest);
    assert!(
        !out.success,
        "create succeeded but should have failed\nmanifest:\n{manifest}\nstdout:\n{}",
        out.stdout
    );
    out.stderr
}

fn namespace_with_default_sa(admin: &Kubectl, ns: &str) {
    admin.ok(&["create", "namespace", ns]);
    admin.ok(&["create", "serviceaccount", "default", "-n", ns]);
}

fn plain_pod(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  containers:\n  - name: {name}\n    image: busybox\n"
    )
}

fn assert_absent(admin: &Kubectl, name: &str, ns: &str) {
    let out = admin.run(&["get", "pod", name, "-n", ns]);
    assert!(
        !out.success && out.stderr.contains("NotFound"),
        "the refused pod {ns}/{name} must not exist: {out:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn service_account_and_default_tolerations_are_applied() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    namespace_with_default_sa(&admin, "app");

    let pod = create(&admin, &plain_pod("web", "app"));
    let spec = &pod["spec"];
    assert_eq!(spec["serviceAccountName"], "default", "{pod:#}");
    assert_eq!(spec["serviceAccount"], "default", "{pod:#}");

    // One projected volume, kube-api-access-<5 random chars>, exactly upstream's sources.
    let volumes = spec["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 1, "{pod:#}");
    let volume = &volumes[0];
    let name = volume["name"].as_str().expect("volume name");
    let suffix = name
        .strip_prefix("kube-api-access-")
        .unwrap_or_else(|| panic!("volume {name}"));
    assert_eq!(suffix.len(), 5, "{name}");
    assert!(
        suffix
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
        "{name}: upstream's random string alphabet"
    );
    assert_eq!(
        volume["projected"],
        json!({
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}]
                }},
                {"downwardAPI": {"items": [{
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
                }]}}
            ]
        }),
        "{pod:#}"
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{
            "name": name,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": true
        }]),
        "{pod:#}"
    );
    // DefaultTolerationSeconds.
    assert_eq!(
        spec["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]),
        "{pod:#}"
    );
    // Priority with no class and no global default.
    assert_eq!(spec["priority"], 0, "{pod:#}");
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority", "{pod:#}");
    // What was returned is what was stored.
    let stored: Value =
        serde_json::from_str(&admin.ok(&["get", "pod", "web", "-n", "app", "-o", "json"]))
            .expect("pod json");
    assert_eq!(stored["spec"], pod["spec"]);

    // A named account is used as given; opting out of automount leaves the pod alone; a
    // toleration the pod sets itself is kept as it is.
    admin.ok(&["create", "serviceaccount", "builder", "-n", "app"]);
    let pod = create(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: build
  namespace: app
spec:
  serviceAccountName: builder
  automountServiceAccountToken: false
  tolerations:
  - key: node.kubernetes.io/not-ready
    operator: Exists
    effect: NoExecute
    tolerationSeconds: 10
  containers:
  - name: build
    image: busybox
",
    );
    assert_eq!(pod["spec"]["serviceAccountName"], "builder", "{pod:#}");
    assert!(pod["spec"]["volumes"].is_null(), "{pod:#}");
    assert!(
        pod["spec"]["containers"][0]["volumeMounts"].is_null(),
        "{pod:#}"
    );
    assert_eq!(
        pod["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]),
        "{pod:#}"
    );
    // The deprecated `serviceAccount` is an alias read when serviceAccountName is not given.
    let pod = create(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: alias
  namespace: app
spec:
  serviceAccount: builder
  containers:
  - name: alias
    image: busybox
",
    );
    assert_eq!(pod["spec"]["serviceAccountName"], "builder", "{pod:#}");
    assert_eq!(pod["spec"]["serviceAccount"], "builder", "{pod:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_without_its_service_account_is_refused() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    admin.ok(&["create", "namespace", "bare"]);

    let err = create_fails(&admin, &plain_pod("x", "bare"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"x\" is forbidden: error looking up service account bare/default: serviceaccount \"default\" not found"
    );
    assert_absent(&admin, "x", "bare");
    let err = create_fails(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: why
  namespace: bare
spec:
  serviceAccountName: ghost
  containers:
  - name: why
    image: busybox
",
    );
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"why\" is forbidden: error looking up service account bare/ghost: serviceaccount \"ghost\" not found"
    );

    // Once the account exists the same pod is admitted.
    admin.ok(&["create", "serviceaccount", "default", "-n", "bare"]);
    let pod = create(&admin, &plain_pod("x", "bare"));
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_security_enforces_the_namespace_level() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    namespace_with_default_sa(&admin, "locked");
    admin.ok(&[
        "label",
        "namespace",
        "locked",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    namespace_with_default_sa(&admin, "base");
    admin.ok(&[
        "label",
        "namespace",
        "base",
        "pod-security.kubernetes.io/enforce=baseline",
    ]);

    let privileged = |ns: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: x
  namespace: {ns}
spec:
  containers:
  - name: x
    image: busybox
    securityContext:
      privileged: true
"
        )
    };
    let err = create_fails(&admin, &privileged("locked"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\": privileged (container \"x\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"x\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"x\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"x\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"x\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    assert_absent(&admin, "x", "locked");
    // A plain pod misses only the restricted checks.
    let err = create_fails(&admin, &plain_pod("plain", "locked"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"plain\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"plain\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"plain\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"plain\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"plain\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    let compliant = create(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: ok
  namespace: locked
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: ok
    image: busybox
    securityContext:
      allowPrivilegeEscalation: false
      capabilities:
        drop: [ALL]
",
    );
    assert_eq!(compliant["metadata"]["name"], "ok");

    // Baseline: privileged and host namespaces are refused, a plain pod is fine.
    let err = create_fails(&admin, &privileged("base"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"x\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"x\" must not set securityContext.privileged=true)"
    );
    let err = create_fails(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: h
  namespace: base
spec:
  hostNetwork: true
  containers:
  - name: h
    image: busybox
",
    );
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"h\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"
    );
    assert_absent(&admin, "h", "base");
    // All three, in upstream's order (network, PID, IPC).
    let err = create_fails(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: h3
  namespace: base
spec:
  hostIPC: true
  hostNetwork: true
  hostPID: true
  containers:
  - name: h3
    image: busybox
",
    );
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"h3\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"
    );
    create(&admin, &plain_pod("plain", "base"));

    // An unlabelled namespace is privileged: anything goes.
    namespace_with_default_sa(&admin, "open");
    create(&admin, &privileged("open"));
}

#[tokio::test(flavor = "multi_thread")]
async fn priority_classes_resolve_to_their_value() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    namespace_with_default_sa(&admin, "prio");

    let with_class = |name: &str, class: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: prio
spec:
  priorityClassName: {class}
  containers:
  - name: c
    image: busybox
"
        )
    };
    let pod = create(&admin, &with_class("crit", "system-cluster-critical"));
    assert_eq!(pod["spec"]["priority"], 2000000000, "{pod:#}");
    assert_eq!(
        pod["spec"]["priorityClassName"], "system-cluster-critical",
        "{pod:#}"
    );
    assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    let pod = create(&admin, &with_class("node-crit", "system-node-critical"));
    assert_eq!(pod["spec"]["priority"], 2000001000, "{pod:#}");

    // A class of the cluster's own, and a non-preempting one.
    admin.ok(&[
        "create",
        "priorityclass",
        "batch-low",
        "--value=-5",
        "--preemption-policy=Never",
    ]);
    let pod = create(&admin, &with_class("low", "batch-low"));
    assert_eq!(pod["spec"]["priority"], -5, "{pod:#}");
    assert_eq!(pod["spec"]["preemptionPolicy"], "Never", "{pod:#}");

    let err = create_fails(&admin, &with_class("lost", "nope"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"lost\" is forbidden: no PriorityClass with name nope was found"
    );
    assert_absent(&admin, "lost", "prio");

    // The integer is the admission plugin's to set.
    let err = create_fails(
        &admin,
        "apiVersion: v1
kind: Pod
metadata:
  name: self-rated
  namespace: prio
spec:
  priority: 7
  containers:
  - name: c
    image: busybox
",
    );
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"self-rated\" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
    );
}
