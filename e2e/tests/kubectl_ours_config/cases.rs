//! The kubeconfig files and command scripts `config_commands_match_upstream` runs with both
//! kubectls.

pub const A: &str = "apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster:
    server: https://1.2.3.4:6443
    certificate-authority-data: QUJD
contexts:
- name: ctx1
  context:
    cluster: c1
    user: u1
    namespace: ns1
current-context: ctx1
users:
- name: u1
  user:
    token: secret-token
    client-certificate-data: QUJD
    client-key-data: QUJD
";

pub const B: &str = "apiVersion: v1
kind: Config
clusters:
- name: c2
  cluster:
    server: http://5.6.7.8
    certificate-authority: ca.crt
contexts:
- name: ctx2
  context:
    cluster: c2
    user: u2
- name: ctx1
  context:
    cluster: c2
current-context: ctx2
preferences: {}
users:
- name: u2
  user:
    username: bob
    password: pw
";

/// Paths relative to the file's directory, one of them reaching outside it.
pub const RELATIVE: &str = "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://a
    certificate-authority: ../ca.crt
- name: d
  cluster:
    server: https://d
    certificate-authority: ./x/../ca.crt
users:
- name: u
  user:
    client-key: ../ca.crt
    client-certificate: cert.pem
";

pub struct Case {
    pub name: &'static str,
    /// `$KUBECONFIG`; `None` removes it (then `~/.kube/config` in the case's HOME is used).
    pub kubeconfig_env: Option<&'static str>,
    /// Flags put before every command (e.g. `--kubeconfig=...`).
    pub prefix: &'static [&'static str],
    pub files: &'static [(&'static str, &'static str)],
    pub commands: &'static [&'static str],
}

pub const READS: &[&str] = &[
    "config view",
    "config view --raw",
    "config view -o json",
    "config view --minify",
    "config view --minify --raw -o json",
    "config view --flatten",
    "config view -o wide",
    "config current-context",
    "config get-contexts",
    "config get-contexts -o name",
    "config get-contexts ctx2 nope",
    "config get-contexts nope other",
    "config get-contexts --no-headers",
    "config get-contexts -o wide",
    "config get-clusters",
    "config get-users",
    "config view -o jsonpath={.clusters[0].name}",
    "config view --minify -o jsonpath={.users[*].name}",
];

pub const WRITES: &[&str] = &[
    "config use-context nope",
    "config use-context ctx2",
    "config use ctx1",
    "config set-context new --cluster=cx --user=ux",
    "config set-context ctx2 --namespace=foo",
    "config set-context --current --namespace=bar",
    "config set-context",
    "config set-context --current x",
    "config set-cluster c9 --server=https://9.9.9.9 --insecure-skip-tls-verify=true",
    "config set-cluster c9 --certificate-authority=ca.crt --insecure-skip-tls-verify",
    "config set-cluster c9 --certificate-authority=ca.crt",
    "config set-cluster c9 --embed-certs --certificate-authority=ca.crt",
    "config set-cluster c9 --embed-certs",
    "config set-cluster c9 --embed-certs --certificate-authority=missing.crt",
    "config set-cluster c2 --tls-server-name=x",
    "config set-cluster c2 --server=https://new",
    "config set-credentials u9 --token=t --username=a",
    "config set-credentials u9 --token=t",
    "config set-credentials u9 --username=a --password=p",
    "config set-credentials u9 --client-certificate=ca.crt --client-key=../outside.pem",
    "config set-credentials u9 --client-certificate=ca.crt --embed-certs",
    "config set-credentials u9 --embed-certs",
    "config view",
    "config view --flatten",
    "config delete-context nope",
    "config delete-context ctx1",
    "config delete-cluster c2",
    "config delete-user u2",
    "config delete-user nope",
    "config rename-context ctx2 ctx3",
    "config rename-context nope x",
    "config rename-context ctx3 new",
    "config view",
    "config current-context",
    "config view --minify",
    "config set clusters.c1.server https://z",
    "config set clusters.newc.server https://n",
    "config set clusters.c1.insecure-skip-tls-verify true",
    "config set clusters.c1.insecure-skip-tls-verify maybe",
    "config set current-context ctx3",
    "config set contexts.new.namespace foo",
    "config unset users.u1.token",
    "config unset clusters.c1.nosuch",
    "config unset contexts.new",
    "config set preferences.colors true",
    "config set clusters.c1.certificate-authority-data QUJDRA==",
    "config set clusters.c1.certificate-authority-data notb64!",
    "config set clusters.c1.certificate-authority-data abc --set-raw-bytes",
    "config unset current-context",
    "config view",
    "config set-credentials ex --exec-command=/bin/cred --exec-api-version=client.authentication.k8s.io/v1 --exec-arg=a --exec-arg=b --exec-env=K=V",
    "config set-credentials ex --exec-env=X=Y",
    "config view -o json",
    "config set-credentials ex --exec-env=K- --exec-arg=c --exec-provide-cluster-info",
    "config set-credentials ex --exec-command=/bin/other",
    "config view",
];

pub const CASES: &[Case] = &[
    Case {
        name: "merged-reads",
        kubeconfig_env: Some("a.yaml:b.yaml:missing.yaml"),
        prefix: &[],
        files: &[("a.yaml", A), ("b.yaml", B)],
        commands: READS,
    },
    Case {
        name: "merged-writes",
        kubeconfig_env: Some("a.yaml:b.yaml:missing.yaml"),
        prefix: &[],
        files: &[("a.yaml", A), ("b.yaml", B)],
        commands: WRITES,
    },
    Case {
        name: "none-exists",
        kubeconfig_env: Some("sub/first.yaml:second.yaml"),
        prefix: &[],
        files: &[],
        commands: &[
            "config view",
            "config view -o json",
            "config current-context",
            "config get-contexts",
            "config set-cluster cc --server=https://x --insecure-skip-tls-verify=true",
            "config set-context c --cluster=cc --user=u --namespace=default",
            "config use-context c",
            "config view --minify",
            "config view --minify --flatten",
        ],
    },
    Case {
        name: "explicit-file",
        kubeconfig_env: Some("a.yaml:b.yaml"),
        prefix: &["--kubeconfig=dir/explicit.yaml"],
        files: &[("a.yaml", A), ("b.yaml", B)],
        commands: &[
            "config view",
            "config set-cluster cc --server=https://x --certificate-authority=dir/ca.crt",
            "config set-credentials u --client-key=dir/k.pem --token=tok",
            "config set-context c --cluster=cc --user=u",
            "config use c",
            "config view --minify",
            "config view --merge=false",
            "config view --flatten",
            "config delete-context c",
            "config get-contexts",
        ],
    },
    Case {
        name: "relative-paths",
        kubeconfig_env: Some("sub/k.yaml"),
        prefix: &[],
        files: &[("sub/k.yaml", RELATIVE)],
        commands: &[
            "config view",
            "config view --flatten",
            "config set-cluster c --server=https://b",
            "config set-cluster d --server=https://e",
            "config set-credentials u --token=t",
            "config view --raw",
            "config view --flatten",
        ],
    },
    Case {
        name: "home-config",
        kubeconfig_env: None,
        prefix: &[],
        files: &[(".kube/config", B)],
        commands: &[
            "config get-contexts",
            "config set-context ctx2 --namespace=kube-system",
            "config set-context ctx4 --cluster=c2",
            "config view",
            "config view --merge=false",
        ],
    },
];
