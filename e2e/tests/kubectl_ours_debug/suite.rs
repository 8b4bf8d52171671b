//! The debug suite's cluster and its comparisons: the objects both kubectls debug, and the
//! runs compared with upstream's once random name suffixes are masked.

use e2e::kubectl::Output;
use e2e::kubectl_compare::{Comparison, normalize_identity, replace_word};
use e2e::secure::SecureCluster;

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: debug-node\n";

/// What a copy keeps or drops: labels, annotations, probes, an init container, a container
/// security context.
const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web, tier: front}
  annotations: {note: kept}
spec:
  nodeName: debug-node
  initContainers:
  - name: init
    image: busybox
    command: ["true"]
  containers:
  - name: app
    image: nginx
    livenessProbe: {exec: {command: ["true"]}}
    readinessProbe: {exec: {command: ["true"]}}
    startupProbe: {exec: {command: ["true"]}}
    securityContext: {runAsUser: 5}
  - name: side
    image: busybox
    args: [sleep, "1000"]
"#;

/// A pod-wide non-root user: profiles granting capabilities make upstream warn.
const NON_ROOT_POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: nonroot
spec:
  securityContext: {runAsUser: 1000}
  containers:
  - name: app
    image: busybox
"#;

/// The files the `--custom` and `-f` cases read, written into the cluster's temp dir.
const FILES: &[(&str, &str)] = &[
    (
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nonroot\n  labels: {from: file}\nspec:\n  securityContext: {runAsUser: 1000}\n  containers:\n  - name: app\n    image: busybox\n    readinessProbe: {exec: {command: [\"true\"]}}\n",
    ),
    (
        "elsewhere.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: elsewhere\nspec:\n  containers:\n  - name: app\n    image: nginx\n",
    ),
    (
        "deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: busybox}]\n",
    ),
    (
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: debug-node\n",
    ),
    (
        "custom.json",
        r#"{"env":[{"name":"EXTRA","value":"1"}],"securityContext":{"runAsUser":0,"capabilities":{"add":["SYS_ADMIN"]}},"stdin":true}"#,
    ),
    (
        "custom.yaml",
        "env:\n- name: FROM_FILE\n  value: \"2\"\nresources:\n  limits:\n    cpu: 100m\nworkingDir: /tmp\n",
    ),
    ("image.yaml", "image: other\n"),
    ("lifecycle.yaml", "lifecycle: {}\n"),
];

pub const PROFILES: [&str; 6] = [
    "legacy",
    "general",
    "baseline",
    "restricted",
    "netadmin",
    "sysadmin",
];

/// `metav1`'s random suffix alphabet.
const SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// `debugger-x7k2p` and `node-debugger-<node>-x7k2p` become `...-RAND`.
pub fn mask_random(text: &str) -> String {
    let is_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let n = token.len();
        let random = n > 6
            && token.contains("debugger-")
            && token.as_bytes()[n - 6] == b'-'
            && token[n - 5..].chars().all(|c| SUFFIX_ALPHABET.contains(c));
        if random {
            token.replace_range(n - 5.., "RAND");
        }
        out.push_str(token);
        token.clear();
    };
    for c in text.chars() {
        if is_name(c) {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

pub struct Suite {
    cmp: Comparison,
    cluster: SecureCluster,
}

impl Suite {
    pub async fn start() -> Self {
        // No controller manager makes the namespaces' default service accounts.
        let cluster = SecureCluster::start(&["--disable-admission-plugins=ServiceAccount"]).await;
        let cmp = Comparison::new(
            cluster.dir(),
            &cluster.server.url(),
            &cluster.server.ca_file(),
            "debug",
        );
        let created = cmp.upstream.run_with_stdin(&["create", "-f", "-"], NODE);
        assert!(created.success, "creating the node: {}", created.stderr);
        for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
            for pod in [POD, NON_ROOT_POD] {
                let out = cmp
                    .upstream
                    .run_with_stdin(&["-n", ns, "create", "-f", "-"], pod);
                assert!(out.success, "creating a pod: {}", out.stderr);
            }
        }
        for (name, text) in FILES {
            std::fs::write(cluster.dir().join(name), text).expect("writing a test file");
        }
        Suite { cmp, cluster }
    }

    /// The path of the file `name` of [`FILES`] (or of a file that does not exist).
    pub fn path(&self, name: &str) -> String {
        self.cluster.dir().join(name).display().to_string()
    }

    fn norm(text: &str, ns: &str) -> String {
        mask_random(&normalize_identity(&replace_word(text, ns, "NS")))
    }

    /// Runs `args` with both kubectls at once, each in its namespace, and asserts the same
    /// exit status and output.
    pub fn same(&self, args: &[&str]) -> (Output, Output) {
        let run = |kubectl: &e2e::kubectl::Kubectl, ns: &str| {
            let mut full = vec!["-n", ns];
            full.extend_from_slice(args);
            kubectl.run(&full)
        };
        let (up, ours) = std::thread::scope(|s| {
            let up = s.spawn(|| run(&self.cmp.upstream, &self.cmp.ns_upstream));
            let ours = run(&self.cmp.ours, &self.cmp.ns_ours);
            (up.join().expect("the upstream kubectl thread"), ours)
        });
        let what = format!("kubectl debug {}", args[1..].join(" "));
        assert_eq!(
            up.success, ours.success,
            "{what}: exit status differs\nupstream: {}{}\nours: {}{}",
            up.stdout, up.stderr, ours.stdout, ours.stderr
        );
        let (nu, no) = (&self.cmp.ns_upstream, &self.cmp.ns_ours);
        assert_eq!(
            Self::norm(&ours.stdout, no),
            Self::norm(&up.stdout, nu),
            "{what}: stdout differs (left ours, right upstream)"
        );
        assert_eq!(
            Self::norm(&ours.stderr, no),
            Self::norm(&up.stderr, nu),
            "{what}: stderr differs (left ours, right upstream)"
        );
        (up, ours)
    }

    /// A refusal: both fail the same way.
    pub fn refused(&self, args: &[&str]) {
        let (up, _) = self.same(args);
        assert!(!up.success, "kubectl {args:?} should fail");
    }

    /// Both namespaces hold the same pods (`what` names the step for the failure).
    pub fn same_pods(&self, what: &str) {
        let dump = |ns: &str| {
            let out = self
                .cmp
                .upstream
                .ok(&["get", "pods", "-n", ns, "-o", "yaml"]);
            Self::norm(&out, ns)
        };
        let (ours, up) = (dump(&self.cmp.ns_ours), dump(&self.cmp.ns_upstream));
        assert_eq!(
            ours, up,
            "after {what}: our pods (left) differ from upstream's (right)"
        );
    }

    /// The node debugging pod `args` made in each namespace, compared and then removed (its
    /// random name would order the pod lists differently).
    pub fn same_node_pod(&self, args: &[&str]) {
        let (up, _) = self.same(args);
        assert!(up.success, "kubectl {args:?}: {}", up.stderr);
        let pod = |ns: &str| {
            let names = self
                .cmp
                .upstream
                .ok(&["get", "pods", "-n", ns, "-o", "name"]);
            let name = names
                .lines()
                .find(|n| n.starts_with("pod/node-debugger-"))
                .unwrap_or_else(|| panic!("no node debugging pod in {ns}: {names}"))
                .to_owned();
            let yaml = self
                .cmp
                .upstream
                .ok(&["get", &name, "-n", ns, "-o", "yaml"]);
            self.cmp
                .upstream
                .ok(&["delete", &name, "-n", ns, "--grace-period=0", "--force"]);
            Self::norm(&yaml, ns)
        };
        let (ours, upstream) = (pod(&self.cmp.ns_ours), pod(&self.cmp.ns_upstream));
        assert_eq!(
            ours, upstream,
            "kubectl {args:?}: our node pod (left) differs from upstream's (right)"
        );
    }
}
