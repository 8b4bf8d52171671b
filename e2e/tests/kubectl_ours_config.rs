//! `kubectl config` (ours) against the real kubectl: each case runs the same commands with both on
//! copies of the same kubeconfig files (merged through `$KUBECONFIG` or one `--kubeconfig`) and
//! compares stdout, stderr, exit code and every file left behind, after every command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real kubectl of our apiserver's minor; `/usr/bin/kubectl` (a dispatcher) runs its own
/// built-in version when no server answers, so the versioned binary next to it is preferred.
fn upstream() -> PathBuf {
    let dispatcher = std::fs::canonicalize(e2e::kubectl::UPSTREAM_KUBECTL).unwrap_or_else(|_| {
        panic!(
            "{} (the upstream kubectl) is required",
            e2e::kubectl::UPSTREAM_KUBECTL
        )
    });
    let versioned = dispatcher.with_file_name("kubectl.1.33");
    if versioned.exists() {
        versioned
    } else {
        dispatcher
    }
}

#[path = "kubectl_ours_config/cases.rs"]
mod cases;
use cases::{A, CASES, Case};

#[derive(Debug, PartialEq)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    files: BTreeMap<String, String>,
}

fn snapshot(dir: &Path, root: &Path, files: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("listing the case dir") {
        let path = entry.expect("a dir entry").path();
        let name = path
            .strip_prefix(root)
            .expect("under root")
            .display()
            .to_string();
        if path.is_dir() {
            files.insert(format!("{name}/"), String::new());
            snapshot(&path, root, files);
        } else {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|_| "<binary>".into());
            files.insert(name, text);
        }
    }
}

fn run(binary: &Path, dir: &Path, case: &Case, command: &str) -> Run {
    let mut cmd = Command::new(binary);
    cmd.current_dir(dir).env("HOME", dir).args(case.prefix);
    cmd.args(command.split_whitespace());
    match case.kubeconfig_env {
        Some(value) => cmd.env("KUBECONFIG", value),
        None => cmd.env_remove("KUBECONFIG"),
    };
    let output = cmd.output().expect("running kubectl");
    let mut stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    // Upstream lists clusters and users in Go's random map order.
    if command.contains("get-clusters") || command.contains("get-users") {
        let mut lines: Vec<&str> = stdout.lines().collect();
        lines[1..].sort_unstable();
        stdout = lines.join("\n") + "\n";
    }
    let mut files = BTreeMap::new();
    snapshot(dir, dir, &mut files);
    Run {
        code: output.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        files,
    }
}

fn prepare(dir: &Path, case: &Case) {
    for (name, text) in case.files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating dirs");
        std::fs::write(&path, text).expect("writing a kubeconfig");
    }
    std::fs::write(dir.join("ca.crt"), "CA-DATA\n").expect("writing ca.crt");
    std::fs::create_dir_all(dir.join("dir")).expect("creating dir/");
    std::fs::write(dir.join("dir/ca.crt"), "DIR-CA\n").expect("writing dir/ca.crt");
}

#[test]
fn config_commands_match_upstream() {
    let ours = e2e::bin("kubectl");
    let theirs = upstream();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let mut failures = Vec::new();
    for case in CASES {
        // Same path length on both sides so absolute paths in output differ only by one letter.
        let (up_dir, our_dir) = (
            tmp.path().join(case.name).join("u"),
            tmp.path().join(case.name).join("o"),
        );
        for dir in [&up_dir, &our_dir] {
            std::fs::create_dir_all(dir).expect("creating the case dir");
            prepare(dir, case);
        }
        for command in case.commands {
            let want = run(&theirs, &up_dir, case, command);
            let got = run(&ours, &our_dir, case, command);
            let normalize = |text: &str| text.replace(&our_dir.display().to_string(), "<dir>");
            let want_text = normalize(&format!("{want:#?}").replace(
                &up_dir.display().to_string(),
                &our_dir.display().to_string(),
            ));
            let got_text = normalize(&format!("{got:#?}"));
            if want_text != got_text {
                failures.push(format!(
                    "[{}] kubectl {command}\n--- upstream\n{want_text}\n--- ours\n{got_text}",
                    case.name
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// What one command printed and returned.
#[derive(Debug, PartialEq)]
struct Printed {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run_plain(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Printed {
    let output = Command::new(binary)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("running kubectl");
    Printed {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn write_script(path: &Path, body: &str, executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("writing a plugin");
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn plugins_match_upstream() {
    let tmp = tempfile::tempdir().expect("a temp dir");
    let (p1, p2, empty) = (
        tmp.path().join("p1"),
        tmp.path().join("p2"),
        tmp.path().join("empty"),
    );
    for dir in [&p1, &p2, &empty] {
        std::fs::create_dir_all(dir).expect("creating a PATH dir");
    }
    write_script(&p1.join("kubectl-foo"), "echo \"foo: $*\"; exit 3", true);
    write_script(&p2.join("kubectl-foo"), "echo shadowed", true);
    write_script(&p1.join("kubectl-foo_bar"), "echo \"foo_bar: $0 $*\"", true);
    write_script(&p2.join("kubectl-foo-bar-baz"), "echo \"fbb: $*\"", true);
    write_script(&p2.join("kubectl-noexec"), "echo never", false);
    write_script(&p2.join("kubectl-version"), "echo hi", true);
    let path = format!("{}:{}:/usr/bin:/bin", p1.display(), p2.display());
    let empty_path = format!("{}:/usr/bin:/bin", empty.display());
    let cases: &[(&[&str], &str)] = &[
        (&["plugin", "list"], &path),
        (&["plugin", "list", "--name-only"], &path),
        (&["plugin", "list"], &empty_path),
        (&["foo", "a", "-b", "c"], &path),
        (&["foo-bar", "x"], &path),
        (&["foo", "bar", "baz", "q", "--flag"], &path),
        (&["foo", "bar"], &path),
        (&["nosuch"], &path),
    ];
    let (ours, theirs) = (e2e::bin("kubectl"), upstream());
    for (args, path) in cases {
        let env = [("PATH", *path)];
        let want = run_plain(&theirs, args, &env);
        assert_eq!(run_plain(&ours, args, &env), want, "kubectl {args:?}");
    }
    // The plugin really ran: its output and exit code came through.
    let ran = run_plain(&ours, &["foo", "a"], &[("PATH", &path)]);
    assert_eq!((ran.code, ran.stdout.as_str()), (Some(3), "foo: a\n"));
}

/// A service the way cluster add-ons label theirs, so cluster-info lists it.
const CLUSTER_SERVICE: &str = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"kube-dns","namespace":"kube-system","labels":{"kubernetes.io/cluster-service":"true","kubernetes.io/name":"CoreDNS"}},"spec":{"ports":[{"name":"dns","port":53,"protocol":"UDP"}]}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn auth_and_cluster_info_match_upstream() {
    let cluster = e2e::secure::SecureCluster::start(&[]).await;
    let dir = cluster.dir().join("compare");
    std::fs::create_dir_all(&dir).expect("creating the compare dir");
    let mut kubeconfigs = BTreeMap::new();
    for (token, ..) in e2e::secure::TOKEN_USERS {
        let path = dir.join(format!("{token}.kubeconfig"));
        e2e::kubectl::write_token_kubeconfig(
            &path,
            &cluster.server.url(),
            &cluster.server.ca_file(),
            token,
        )
        .expect("writing a kubeconfig");
        kubeconfigs.insert(*token, path.display().to_string());
    }
    let admin = cluster.admin();
    let manifest = dir.join("svc.json");
    std::fs::write(&manifest, CLUSTER_SERVICE).expect("writing the service");
    admin.ok(&["create", "-f", &manifest.display().to_string()]);
    let (ours, theirs) = (
        e2e::bin("kubectl"),
        PathBuf::from(e2e::kubectl::UPSTREAM_KUBECTL),
    );
    let cases: &[(&str, &[&str])] = &[
        ("e2e", &["cluster-info"]),
        ("e2e", &["api-versions"]),
        ("e2e", &["auth", "can-i", "--list"]),
        ("viewer-token", &["auth", "can-i", "--list", "--no-headers"]),
        (
            "viewer-token",
            &["auth", "can-i", "--list", "-n", "kube-system"],
        ),
        ("viewer-token", &["auth", "can-i", "--list", "get"]),
        (
            "viewer-token",
            &["auth", "can-i", "get", "pods", "--no-headers"],
        ),
        ("e2e", &["__complete", "get", ""]),
        (
            "e2e",
            &["__complete", "get", "svc", "-n", "kube-system", "kube"],
        ),
        ("e2e", &["__complete", "delete", "csr", ""]),
        ("e2e", &["auth", "whoami"]),
        ("e2e", &["auth", "whoami", "-o", "json"]),
        ("e2e", &["auth", "whoami", "-o", "yaml"]),
        ("viewer-token", &["auth", "whoami"]),
        ("e2e", &["auth", "can-i", "get", "pods"]),
        ("viewer-token", &["auth", "can-i", "get", "pods"]),
        ("viewer-token", &["auth", "can-i", "get", "pods", "-q"]),
        ("viewer-token", &["auth", "can-i", "get", "pods", "extra"]),
        ("viewer-token", &["auth", "can-i", "get", "nodes"]),
        ("viewer-token", &["auth", "can-i", "list", "secrets", "-A"]),
        ("viewer-token", &["auth", "can-i", "frob", "pods"]),
        ("viewer-token", &["auth", "can-i", "get", "/healthz"]),
        ("viewer-token", &["auth", "can-i", "get", "nosuch.apps"]),
        ("e2e", &["auth", "can-i", "get", "nosuch"]),
        (
            "e2e",
            &[
                "auth",
                "can-i",
                "create",
                "pods",
                "--subresource=exec",
                "-n",
                "kube-system",
            ],
        ),
        ("e2e", &["auth", "can-i", "get", "deploy.apps/web"]),
        ("e2e", &["auth", "can-i", "list", "secrets", "--as=viewer"]),
    ];
    for (user, args) in cases {
        let env = [("KUBECONFIG", kubeconfigs[user].as_str())];
        let want = run_plain(&theirs, args, &env);
        let got = run_plain(&ours, args, &env);
        assert_eq!(got, want, "kubectl {args:?} as {user}");
    }
    // certificate approve/deny: same output and the same condition left on the CSR.
    let csr = |name: &str| {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, csr_manifest(name)).expect("writing a CSR");
        admin.ok(&["create", "-f", &path.display().to_string()]);
    };
    let admin_env = [("KUBECONFIG", kubeconfigs["e2e"].as_str())];
    for (verb, up_name, our_name) in [("approve", "up-a", "our-a"), ("deny", "up-d", "our-d")] {
        csr(up_name);
        csr(our_name);
        for force in [&[][..], &["--force"][..]] {
            let up_args = [&["certificate", verb, up_name, "nosuch"][..], force].concat();
            let our_args = [&["certificate", verb, our_name, "nosuch"][..], force].concat();
            let want = run_plain(&theirs, &up_args, &admin_env);
            let got = run_plain(&ours, &our_args, &admin_env);
            assert_eq!(
                (got.code, got.stdout.replace(our_name, up_name), got.stderr),
                (want.code, want.stdout, want.stderr),
                "certificate {verb} {force:?}"
            );
        }
        let conditions = |name: &str| {
            admin.ok(&[
                "get", "csr", name, "-o",
                "jsonpath={range .status.conditions[*]}{.type}/{.status}/{.reason}/{.message};{end}",
            ])
        };
        assert_eq!(conditions(our_name), conditions(up_name));
        assert!(
            conditions(our_name).contains("/True/Kubectl"),
            "{}",
            conditions(our_name)
        );
    }
    // The other decision is refused, forced or not; -o prints the request as read.
    for args in [
        &["certificate", "deny", "{a}"][..],
        &["certificate", "approve", "{d}", "--force"],
        &["certificate", "approve", "{a}", "-o", "name"],
        &[
            "certificate",
            "approve",
            "{a}",
            "-o",
            "jsonpath={.spec.signerName}",
        ],
        &[
            "certificate",
            "deny",
            "{d}",
            "-o",
            "go-template={{.metadata.name}}",
        ],
    ] {
        let with = |a: &str, d: &str| -> Vec<String> {
            args.iter()
                .map(|x| x.replace("{a}", a).replace("{d}", d))
                .collect()
        };
        let (up_args, our_args) = (with("up-a", "up-d"), with("our-a", "our-d"));
        let up_args: Vec<&str> = up_args.iter().map(String::as_str).collect();
        let our_args: Vec<&str> = our_args.iter().map(String::as_str).collect();
        let want = run_plain(&theirs, &up_args, &admin_env);
        let got = run_plain(&ours, &our_args, &admin_env);
        let mask = |text: &str| text.replace("our-", "up-");
        assert_eq!(
            (got.code, mask(&got.stdout), mask(&got.stderr)),
            (want.code, want.stdout, want.stderr),
            "kubectl {args:?}"
        );
    }
    for args in [
        &["certificate", "approve"][..],
        &["completion", "nosuch"][..],
        &["completion"][..],
    ] {
        let want = run_plain(&theirs, args, &admin_env);
        assert_eq!(run_plain(&ours, args, &admin_env), want, "kubectl {args:?}");
    }
    // The add-on service is listed through the apiserver's proxy, not only the control plane.
    let info = run_plain(
        &ours,
        &["cluster-info"],
        &[("KUBECONFIG", kubeconfigs["e2e"].as_str())],
    );
    assert!(
        info.stdout.contains(&format!(
            "CoreDNS is running at {}/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy\n",
            cluster.server.url().trim_end_matches('/')
        )),
        "{info:?}"
    );
}

fn csr_manifest(name: &str) -> String {
    // The apiserver parses the request, so it must be a real PKCS#10 CSR.
    let key = rcgen::KeyPair::generate().expect("a key");
    let params = rcgen::CertificateParams::new(vec![]).expect("params");
    let mut params = params;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let request = params
        .serialize_request(&key)
        .expect("a CSR")
        .pem()
        .expect("PEM");
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(request);
    format!(
        r#"{{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{{"name":"{name}"}},"spec":{{"request":"{encoded}","signerName":"kubernetes.io/kube-apiserver-client","usages":["client auth"]}}}}"#
    )
}

#[test]
fn completion_and_options() {
    let ours = e2e::bin("kubectl");
    let tmp = tempfile::tempdir().expect("a temp dir");
    let kubeconfig = tmp.path().join("config");
    std::fs::write(&kubeconfig, A).expect("writing a kubeconfig");
    let env = [("KUBECONFIG", kubeconfig.to_str().expect("utf-8 path"))];
    // The __complete protocol, as upstream answers it for the same words.
    let theirs = upstream();
    for args in [
        &["__complete", "conf"][..],
        &["__completeNoDesc", "config", "--kubeconf"][..],
    ] {
        let want = run_plain(&theirs, args, &env);
        assert_eq!(run_plain(&ours, args, &env), want, "kubectl {args:?}");
    }
    let contexts = run_plain(&ours, &["__complete", "config", "use-context", ""], &env);
    assert_eq!(contexts.stdout, "ctx1\n:4\n");
    // The bash script really completes through __complete.
    let script = run_plain(&ours, &["completion", "bash"], &env).stdout;
    let script_file = tmp.path().join("kubectl.bash");
    std::fs::write(&script_file, script).expect("writing the script");
    let bin_dir = ours.parent().expect("a bin dir").display().to_string();
    let probe = format!(
        "source {}; COMP_WORDS=(kubectl config use-c); COMP_CWORD=2; __kubectl_complete; echo \"${{COMPREPLY[*]}}\"",
        script_file.display()
    );
    let path = format!("{bin_dir}:/usr/bin:/bin");
    let completed = run_plain(
        Path::new("/bin/bash"),
        &["-c", &probe],
        &[("PATH", path.as_str())],
    );
    assert_eq!(completed.stdout, "use-context\n", "{completed:?}");
    for shell in ["zsh", "fish"] {
        let printed = run_plain(&ours, &["completion", shell], &env);
        assert!(
            printed.stdout.contains("__complete"),
            "{shell}: {printed:?}"
        );
    }
    // `options` lists the global flags in upstream's layout.
    let options = run_plain(&ours, &["options"], &env).stdout;
    assert!(options.starts_with("The following options can be passed to any command:\n\n"));
    assert!(options.contains("\n    --kubeconfig='':\n\t"), "{options}");
    assert!(
        options.contains("\n    -n, --namespace='':\n\t"),
        "{options}"
    );
}
