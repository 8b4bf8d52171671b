//! `-o json` of the objects upstream's kubectl holds as Go structs, against upstream on the same
//! cluster: the generators (client-built and as the server returns them), `run`, `expose`,
//! `autoscale`, `set`, `rollout`, `create job --from` and `create token` print `kind` before
//! `apiVersion` and every field in Go's declaration order, with the zero values of fields that
//! are not omitempty. Commands that hold maps (`label`, `patch`, `get`) keep sorted keys.

use e2e::kubectl_compare::{Fixture, normalize_identity, replace_word};

#[tokio::test(flavor = "multi_thread")]
async fn typed_objects_print_in_go_struct_order() {
    let Fixture {
        cluster: _cluster,
        cmp,
    } = Fixture::start("json").await;
    let json = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let outcome = cmp.step(&args);
        assert!(
            outcome.upstream.success,
            "{args:?}: {}",
            outcome.upstream.stderr
        );
        outcome
    };

    // Client-built, then as the server returns them.
    for generator in [
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
            "--port=80",
        ][..],
        &[
            "create",
            "configmap",
            "cm",
            "--from-literal=b=2",
            "--from-literal=a=1",
        ],
        &["create", "secret", "generic", "sec", "--from-literal=k=v"],
        &["create", "serviceaccount", "robot"],
        &["create", "service", "clusterip", "cip", "--tcp=80:8080"],
        &["create", "role", "reader", "--verb=get", "--resource=pods"],
        &[
            "create",
            "rolebinding",
            "rb",
            "--role=reader",
            "--user=alice",
        ],
        &["create", "quota", "q", "--hard=pods=2,cpu=1"],
        &[
            "create",
            "pdb",
            "pdb",
            "--selector=app=web",
            "--min-available=1",
        ],
        &["create", "ingress", "ing", "--rule=foo.com/bar=svc:80"],
        &[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ],
    ] {
        let mut dry = generator.to_vec();
        dry.push("--dry-run=client");
        json(&dry);
        json(generator);
    }
    // A created Job carries its uid in labels: only the client-built one compares.
    json(&[
        "create",
        "job",
        "once",
        "--image=busybox",
        "--dry-run=client",
    ]);
    json(&[
        "run",
        "pod1",
        "--image=busybox",
        "--labels=app=p",
        "--dry-run=client",
    ]);
    // No controller manager runs here to create it; ServiceAccount admission needs it.
    cmp.step(&["create", "serviceaccount", "default"]);
    // Without the token volume, whose name ends in random letters.
    let no_token = r#"--overrides={"spec":{"automountServiceAccountToken":false}}"#;
    json(&[
        "run",
        "pod2",
        "--image=busybox",
        "--env=A=B",
        "--port=80",
        no_token,
    ]);
    json(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--dry-run=client",
    ]);
    json(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--target-port=8080",
    ]);
    json(&[
        "autoscale",
        "deployment",
        "web",
        "--max=3",
        "--cpu-percent=50",
    ]);
    json(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    json(&["set", "env", "deployment/web", "A=B"]);
    json(&["set", "resources", "deployment/web", "--limits=cpu=200m"]);
    json(&["set", "serviceaccount", "deployment/web", "robot"]);
    json(&["set", "subject", "rolebinding/rb", "--user=bob"]);
    json(&["set", "selector", "service/cip", "app=other"]);
    json(&["rollout", "pause", "deployment/web"]);
    json(&["rollout", "resume", "deployment/web"]);
    json(&[
        "create",
        "job",
        "manual",
        "--from=cronjob/tick",
        "--dry-run=client",
    ]);
    // --overrides in its three types, and its refusals.
    let tty = r#"--overrides={"spec":{"containers":[{"name":"o","tty":true}]}}"#;
    let hostname = r#"--overrides=[{"op":"add","path":"/spec/hostname","value":"h"}]"#;
    for args in [
        &["run", "o", "--image=busybox", tty][..],
        &[
            "run",
            "o",
            "--image=busybox",
            tty,
            "--override-type=strategic",
        ],
        &[
            "run",
            "o",
            "--image=busybox",
            hostname,
            "--override-type=json",
        ],
        &[
            "expose",
            "deployment",
            "web",
            "--port=80",
            r#"--overrides={"spec":{"type":"NodePort"}}"#,
        ],
    ] {
        let mut dry = args.to_vec();
        dry.push("--dry-run=client");
        json(&dry);
    }
    for args in [
        &[
            "run",
            "o",
            "--image=busybox",
            "--overrides={}",
            "--override-type=bad",
        ][..],
        &["run", "o", "--image=busybox", "--overrides={bad"],
    ] {
        let outcome = cmp.step(args);
        assert!(!outcome.ours.success, "{args:?}");
    }
    // Held as maps upstream: sorted keys.
    json(&["label", "deployment/web", "tier=front"]);
    json(&["annotate", "configmap/cm", "note=x"]);
    json(&["patch", "configmap/cm", "-p", r#"{"data":{"c":"3"}}"#]);
    // Every change above is owned by the same field managers (kubectl-label, -annotate, ...).
    for object in [
        "deployment/web",
        "configmap/cm",
        "rolebinding/rb",
        "service/cip",
    ] {
        cmp.step(&[
            "get",
            object,
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ]);
    }

    // taint: the patched node as a struct, a client dry run as the struct made a map again.
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        let node = format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {ns}\n");
        let out = cmp.upstream.run_with_stdin(&["apply", "-f", "-"], &node);
        assert!(out.success, "{}", out.stderr);
    }
    json(&[
        "taint",
        "node",
        "{ns}",
        "a=b:NoSchedule",
        "--dry-run=client",
    ]);
    json(&["taint", "node", "{ns}", "a=b:NoSchedule"]);

    // `version`: the same keys in the same order (the values are each binary's own; ours has
    // no kustomize).
    for format in ["json", "yaml"] {
        let keys = |kubectl: &e2e::kubectl::Kubectl| {
            let out = kubectl.ok(&["version", "-o", format]);
            out.lines()
                .filter(|l| !l.contains("kustomizeVersion"))
                .map(|l| l.split(':').next().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&cmp.ours), keys(&cmp.upstream), "version -o {format}");
    }

    // A token differs per request: compare all but its value and expiry.
    let token = |kubectl: &e2e::kubectl::Kubectl, ns: &str| {
        let out = kubectl.ok(&["create", "token", "robot", "-n", ns, "-o", "json"]);
        let masked: Vec<&str> = out
            .lines()
            .filter(|l| !l.contains("\"token\":") && !l.contains("\"expirationTimestamp\":"))
            .collect();
        normalize_identity(&replace_word(&masked.join("\n"), ns, "NS"))
    };
    assert_eq!(
        token(&cmp.ours, &cmp.ns_ours),
        token(&cmp.upstream, &cmp.ns_upstream),
        "create token -o json (left ours, right upstream)"
    );
}
