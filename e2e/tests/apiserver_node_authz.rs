//! Issue 4's Node authorizer and NodeRestriction with the real kubectl acting as a kubelet (a
//! client certificate `system:node:<name>` in `system:nodes`): a node reads and patches its own
//! Node but modifies no other; it reads a secret or config map only while a pod bound to it
//! references it; it lists no secrets; it holds its own lease in kube-node-lease and no other
//! node's. Every refusal carries upstream's exact message.

use e2e::kubectl::Kubectl;
use e2e::secure::SecureCluster;
use std::time::{Duration, Instant};

fn forbidden_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains("Forbidden"))
        .unwrap_or_else(|| panic!("no Forbidden error in: {stderr}"))
}

fn kubelet(cluster: &SecureCluster, node: &str) -> Kubectl {
    cluster.cert_user(&format!("system:node:{node}"), &["system:nodes"])
}

fn create(kubectl: &Kubectl, manifest: &str) {
    let out = kubectl.run_with_stdin(&["create", "-f", "-"], manifest);
    assert!(
        out.success,
        "create failed\nmanifest:\n{manifest}\nstdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
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

fn node(name: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n")
}

fn lease(name: &str) -> String {
    format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: kube-node-lease\nspec:\n  holderIdentity: {name}\n  leaseDurationSeconds: 40\n"
    )
}

/// A pod on `node` in default using the secret `secret` (as a volume) and the config map
/// `config_map` (as an environment source).
fn pod_on(name: &str, node: &str, secret: &str, config_map: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
spec:
  nodeName: {node}
  containers:
  - name: c
    image: busybox
    envFrom:
    - configMapRef:
        name: {config_map}
    volumeMounts:
    - name: creds
      mountPath: /creds
  volumes:
  - name: creds
    secret:
      secretName: {secret}
"
    )
}

/// Node `name` as `kubectl` reads it, with status.capacity.pods set to `pods`.
fn with_pods_capacity(kubectl: &Kubectl, name: &str, pods: &str) -> serde_json::Value {
    let mut node = node_as_admin(kubectl, name);
    node["status"]["capacity"]["pods"] = serde_json::json!(pods);
    node
}

/// Node `name` as `kubectl` reads it (with its resourceVersion).
fn node_as_admin(kubectl: &Kubectl, name: &str) -> serde_json::Value {
    let node = kubectl.ok(&["get", "node", name, "-o", "json"]);
    serde_json::from_str(&node).expect("node json")
}

/// Polls (bounded) until `kubectl` reading `args` gives `want_ok`; returns the last output's
/// stderr. The node graph follows pods through a watch, so a change may take a moment.
fn wait_access(kubectl: &Kubectl, args: &[&str], want_ok: bool) -> String {
    // A hang guard: each try runs a kubectl, which a loaded machine makes slow.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = kubectl.run(args);
        if out.success == want_ok {
            return out.stderr;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {} still {} after 60s\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            if out.success { "allowed" } else { "refused" },
            out.stdout,
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_modifies_only_its_own_node_object() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    create(&admin, &node("n1"));
    create(&admin, &node("n2"));
    let n1 = kubelet(&cluster, "n1");

    let whoami = n1.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo}"]);
    assert!(
        whoami.contains("\"username\":\"system:node:n1\""),
        "{whoami}"
    );
    assert!(whoami.contains("system:nodes"), "{whoami}");

    // Its own Node: read, label (an unrestricted prefix), status patch.
    assert_eq!(
        n1.ok(&["get", "node", "n1", "-o", "jsonpath={.metadata.name}"]),
        "n1"
    );
    n1.ok(&["label", "node", "n1", "example.com/x=y"]);
    assert_eq!(
        admin.ok(&[
            "get",
            "node",
            "n1",
            "-o",
            "jsonpath={.metadata.labels.example\\.com/x}"
        ]),
        "y"
    );
    // (A status write is a PUT of nodes/status: upstream's node rules grant update and patch
    // of it but not get, so kubectl must not read it first: the object carries its
    // resourceVersion.)
    let out = n1.run_with_stdin(
        &["replace", "--subresource=status", "-f", "-"],
        &with_pods_capacity(&n1, "n1", "110").to_string(),
    );
    assert!(out.success, "{}", out.stderr);
    assert_eq!(
        admin.ok(&[
            "get",
            "node",
            "n1",
            "-o",
            "jsonpath={.status.capacity.pods}"
        ]),
        "110"
    );
    // NodeRestriction keeps the node-restriction.kubernetes.io/ prefix for administrators.
    let err = n1.fails(&["label", "node", "n1", "node-restriction.kubernetes.io/a=b"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): nodes \"n1\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/a"
    );

    // Another node: not readable (upstream 1.33's Node authorizer, AuthorizeNodeWithSelectors),
    // so kubectl's read-modify-write commands stop at the read.
    let err = n1.fails(&["get", "node", "n2"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): nodes \"n2\" is forbidden: User \"system:node:n1\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object"
    );
    let err = n1.fails(&["get", "nodes"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): nodes is forbidden: User \"system:node:n1\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read all nodes, only its own Node object"
    );
    let err = n1.fails(&["label", "node", "n2", "example.com/x=y"]);
    assert!(
        err.contains("node 'n1' cannot read 'n2', only its own Node object"),
        "{err}"
    );
    // Writes are authorized for any node and left to NodeRestriction, which refuses another
    // node's object and status (the objects carry their resourceVersion, so kubectl writes
    // without reading).
    let mut other = node_as_admin(&admin, "n2");
    other["metadata"]["labels"] = serde_json::json!({"example.com/x": "y"});
    let out = n1.run_with_stdin(&["replace", "-f", "-"], &other.to_string());
    assert!(!out.success, "{}", out.stdout);
    assert_eq!(
        forbidden_line(&out.stderr),
        "Error from server (Forbidden): error when replacing \"STDIN\": nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
    );
    let mut other = node_as_admin(&admin, "n2");
    other["status"]["capacity"]["pods"] = serde_json::json!("1");
    let out = n1.run_with_stdin(
        &["replace", "--subresource=status", "-f", "-"],
        &other.to_string(),
    );
    assert!(!out.success, "{}", out.stdout);
    assert_eq!(
        forbidden_line(&out.stderr),
        "Error from server (Forbidden): error when replacing \"STDIN\": nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
    );
    // Deleting is no node's to do.
    let err = n1.fails(&["delete", "node", "n2"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): nodes \"n2\" is forbidden: User \"system:node:n1\" cannot delete resource \"nodes\" in API group \"\" at the cluster scope"
    );
    let n2 = admin.ok(&["get", "node", "n2", "-o", "json"]);
    let n2: serde_json::Value = serde_json::from_str(&n2).expect("node json");
    assert!(
        n2["metadata"]["labels"].get("example.com/x").is_none(),
        "{n2}"
    );
    assert!(n2["status"]["capacity"]["pods"].is_null(), "{n2}");
    // Nor may it register a Node under another name.
    let err = create_fails(&n1, &node("n3"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": nodes \"n3\" is forbidden: node \"n1\" is not allowed to modify node \"n3\""
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_reads_only_the_secrets_of_its_pods() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    create(&admin, &node("n1"));
    create(&admin, &node("n2"));
    admin.ok(&["create", "serviceaccount", "default", "-n", "default"]);
    for name in ["s1", "s2"] {
        admin.ok(&["create", "secret", "generic", name, "--from-literal=k=v"]);
    }
    for name in ["c1", "c2"] {
        admin.ok(&["create", "configmap", name, "--from-literal=k=v"]);
    }
    let n1 = kubelet(&cluster, "n1");
    let n2 = kubelet(&cluster, "n2");

    // No pod on n1 references s1 yet.
    let err = n1.fails(&["get", "secret", "s1", "-n", "default"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets \"s1\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    let err = n1.fails(&["get", "configmap", "c1", "-n", "default"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): configmaps \"c1\" is forbidden: User \"system:node:n1\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );

    // A pod bound to n1 that uses s1 and c1; another bound to n2 using s2 and c2.
    create(&admin, &pod_on("p1", "n1", "s1", "c1"));
    create(&admin, &pod_on("p2", "n2", "s2", "c2"));
    wait_access(&n1, &["get", "secret", "s1", "-n", "default"], true);
    let data = n1.ok(&[
        "get",
        "secret",
        "s1",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.k}",
    ]);
    assert_eq!(data, "dg==", "base64 of v");
    wait_access(&n1, &["get", "configmap", "c1", "-n", "default"], true);
    wait_access(&n2, &["get", "secret", "s2", "-n", "default"], true);
    // Still nothing of the other node's pod.
    let err = n1.fails(&["get", "secret", "s2", "-n", "default"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    let err = n2.fails(&["get", "secret", "s1", "-n", "default"]);
    assert!(
        err.contains("no relationship found between node 'n2' and this object"),
        "{err}"
    );
    // Writes are never the node's, even to a secret it may read.
    let err = n1.fails(&["label", "secret", "s1", "-n", "default", "example.com/x=y"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets \"s1\" is forbidden: User \"system:node:n1\" cannot patch resource \"secrets\" in API group \"\" in the namespace \"default\": can only read resources of this type"
    );

    // No listing, cluster-wide or in a namespace.
    let err = n1.fails(&["get", "secrets", "-A"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" at the cluster scope: can only read namespaced object of this type"
    );
    let err = n1.fails(&["get", "secrets", "-n", "default"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": No Object name found"
    );

    // The relationship ends with the pod.
    admin.ok(&[
        "delete",
        "pod",
        "p1",
        "-n",
        "default",
        "--grace-period=0",
        "--force",
    ]);
    let err = wait_access(&n1, &["get", "secret", "s1", "-n", "default"], false);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): secrets \"s1\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    wait_access(&n1, &["get", "configmap", "c1", "-n", "default"], false);
    // n2's pod is untouched.
    n2.ok(&["get", "secret", "s2", "-n", "default"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_holds_only_its_own_lease() {
    let cluster = SecureCluster::start(&[]).await;
    let admin = cluster.admin();
    create(&admin, &node("n1"));
    create(&admin, &node("n2"));
    let n1 = kubelet(&cluster, "n1");

    create(&n1, &lease("n1"));
    n1.ok(&["get", "lease", "n1", "-n", "kube-node-lease"]);
    n1.ok(&[
        "patch",
        "lease",
        "n1",
        "-n",
        "kube-node-lease",
        "--type=merge",
        "-p",
        r#"{"spec":{"leaseDurationSeconds":41}}"#,
    ]);
    assert_eq!(
        admin.ok(&[
            "get",
            "lease",
            "n1",
            "-n",
            "kube-node-lease",
            "-o",
            "jsonpath={.spec.leaseDurationSeconds}"
        ]),
        "41"
    );

    // Another node's lease: not created (admission knows the name), not read or written
    // (the authorizer does).
    let err = create_fails(&n1, &lease("n2"));
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): error when creating \"STDIN\": leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the same name as the requesting node"
    );
    assert!(
        admin
            .run(&["get", "lease", "n2", "-n", "kube-node-lease"])
            .stderr
            .contains("NotFound"),
        "the refused lease must not exist"
    );
    create(&admin, &lease("n2"));
    let err = n1.fails(&["get", "lease", "n2", "-n", "kube-node-lease"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): leases.coordination.k8s.io \"n2\" is forbidden: User \"system:node:n1\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only access node lease with the same name as the requesting node"
    );
    let err = n1.fails(&["delete", "lease", "n2", "-n", "kube-node-lease"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): leases.coordination.k8s.io \"n2\" is forbidden: User \"system:node:n1\" cannot delete resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only access node lease with the same name as the requesting node"
    );
    // Leases elsewhere are not a node's at all.
    let err = n1.fails(&["get", "lease", "n1", "-n", "default"]);
    assert_eq!(
        forbidden_line(&err),
        "Error from server (Forbidden): leases.coordination.k8s.io \"n1\" is forbidden: User \"system:node:n1\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\": can only access leases in the \"kube-node-lease\" system namespace"
    );
}
