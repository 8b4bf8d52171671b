//! The command-line contract of the five binaries, run as real processes: `--help` with named
//! flag sections, the version, and a one-line error with exit status 1 for bad flags.

use e2e::bin;
use std::process::{Command, Output};

const DAEMONS: &[&str] = &[
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
];

fn run(binary: &str, args: &[&str]) -> Output {
    Command::new(bin(binary))
        .args(args)
        .output()
        .expect("running the binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn daemons_list_flags_in_named_sections() {
    for daemon in DAEMONS {
        let out = run(daemon, &["--help"]);
        assert!(out.status.success(), "{daemon} --help failed");
        let help = text(&out.stdout);
        for section in ["Logs flags:", "Global flags:"] {
            assert!(
                help.contains(section),
                "{daemon} --help lacks {section}\n{help}"
            );
        }
        assert!(
            help.contains("--v <Level>"),
            "{daemon} --help lacks -v\n{help}"
        );
        assert!(
            help.contains("--version"),
            "{daemon} --help lacks --version\n{help}"
        );
    }
    let sections = |daemon| text(&run(daemon, &["--help"]).stdout);
    assert!(sections("kube-apiserver").contains("Secure serving flags:"));
    assert!(sections("kube-scheduler").contains("Leader election flags:"));
    assert!(sections("kube-controller-manager").contains("Generic flags:"));
    assert!(sections("kubelet").contains("Serving flags:"));
}

#[test]
fn daemons_print_their_version() {
    for daemon in DAEMONS {
        let out = run(daemon, &["--version"]);
        assert!(out.status.success(), "{daemon} --version failed");
        assert_eq!(text(&out.stdout), "Kubernetes v1.33.0\n", "{daemon}");

        let raw = run(daemon, &["--version=raw"]);
        let info: serde_json::Value =
            serde_json::from_slice(&raw.stdout).expect("--version=raw prints JSON");
        assert_eq!(info["gitVersion"], "v1.33.0", "{daemon}");
    }
}

#[test]
fn bad_flags_are_one_line_errors_with_status_1() {
    let bad: &[&[&str]] = &[
        &["--v=abc"],
        &["--no-such-flag"],
        &["--vmodule=nonsense"],
        &["--logging-format=xml"],
        &["--version=maybe"],
    ];
    for daemon in DAEMONS {
        for args in bad {
            let out = run(daemon, args);
            assert_eq!(out.status.code(), Some(1), "{daemon} {args:?}");
            let stderr = text(&out.stderr);
            assert_eq!(stderr.lines().count(), 1, "{daemon} {args:?}: {stderr}");
            assert!(stderr.starts_with("Error: "), "{daemon} {args:?}: {stderr}");
            assert!(out.stdout.is_empty(), "{daemon} {args:?} printed to stdout");
        }
    }
}

#[test]
fn invalid_values_name_the_flag() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("kube-apiserver", &["--v=abc"], "--v"),
        ("kube-apiserver", &["--secure-port=99999"], "--secure-port"),
        (
            "kube-apiserver",
            &["--bind-address=not-an-ip"],
            "--bind-address",
        ),
        (
            "kube-scheduler",
            &["--leader-elect-lease-duration=soon"],
            "--leader-elect-lease-duration",
        ),
        (
            "kube-scheduler",
            &["--leader-elect-renew-deadline=20s"],
            "--leader-elect-renew-deadline",
        ),
        (
            "kube-controller-manager",
            &["--controllers=*,frobnicator"],
            "--controllers",
        ),
        (
            "kube-controller-manager",
            &["--kubeconfig=/nonexistent/kubeconfig"],
            "--kubeconfig",
        ),
        ("kubelet", &["--port=0"], "--port"),
        ("kubelet", &["--healthz-port=-1"], "--healthz-port"),
    ];
    for (daemon, args, flag) in cases {
        let out = run(daemon, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{daemon} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{daemon} {args:?}: {stderr}");
        assert!(stderr.contains(flag), "{daemon} {args:?}: {stderr}");
    }
}

#[test]
fn kubectl_version_client_and_errors() {
    let out = run("kubectl", &["version", "--client"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "Client Version: v1.33.0\n");

    let out = run("kubectl", &["version", "--client", "-o", "json"]);
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(parsed["clientVersion"]["gitVersion"], "v1.33.0");
    assert!(parsed.get("serverVersion").is_none());

    let out = run("kubectl", &["version", "--client", "-o", "yaml"]);
    assert!(text(&out.stdout).contains("gitVersion: v1.33.0"));

    for args in [
        &["version", "--no-such-flag"][..],
        &["--v=abc", "version"],
        &["frobnicate"],
    ] {
        let out = run("kubectl", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
    assert!(run("kubectl", &["--help"]).status.success());
}
