//! Our kubectl's `create` generators against upstream's on the same secured cluster: every
//! generator's `--dry-run=client -o yaml` must be byte-identical, the real create must print the
//! same line and leave the same objects, and the error paths must match.

use e2e::kubectl_compare::{Fixture, Mode};

/// Types compared whole; jobs (controller-uid labels) and services (allocated node ports) are
/// compared through the fields the generators set.
const STATE: &str = "deployments.apps,cronjobs.batch,serviceaccounts,roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,resourcequotas,poddisruptionbudgets.policy,ingresses.networking.k8s.io,secrets";

/// Each generator's arguments; every one runs with `--dry-run=client -o yaml`, then for real.
fn generators<'a>(tls_crt: &'a str, tls_key: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec![
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--image=busybox",
            "--replicas=2",
            "--port=80",
        ],
        vec![
            "deployment",
            "sleeper",
            "--image=busybox",
            "--",
            "sleep",
            "3600",
        ],
        vec!["job", "once", "--image=busybox", "--", "date"],
        vec![
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--",
            "date",
        ],
        vec![
            "cronjob",
            "tock",
            "--image=busybox",
            "--schedule=0 * * * *",
            "--restart=Never",
        ],
        vec!["serviceaccount", "robot"],
        vec!["service", "clusterip", "cip", "--tcp=80:8080", "--tcp=443"],
        vec!["service", "clusterip", "headless", "--clusterip=None"],
        vec!["service", "nodeport", "np", "--tcp=80:http"],
        vec!["service", "loadbalancer", "lb", "--tcp=80:8080"],
        vec![
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
            "--tcp=80",
        ],
        vec![
            "role",
            "reader",
            "--verb=get,list",
            "--verb=watch",
            "--resource=pods,deployments.apps,pods/status",
            "--resource-name=a",
        ],
        vec![
            "rolebinding",
            "rb",
            "--role=reader",
            "--group=devs",
            "--serviceaccount=default:robot",
        ],
        vec![
            "rolebinding",
            "rb-user",
            "--clusterrole=view",
            "--user=alice",
        ],
        vec![
            "quota",
            "q",
            "--hard=cpu=1,memory=1G,pods=2",
            "--scopes=BestEffort",
        ],
        vec![
            "poddisruptionbudget",
            "pdb",
            "--selector=app=web",
            "--min-available=1",
        ],
        vec!["pdb", "pdb2", "--selector=app=web", "--max-unavailable=50%"],
        vec![
            "ingress",
            "ing",
            "--rule=foo.com/bar*=svc:8080,tls=sec",
            "--rule=/path=svc2:http",
            "--class=nginx",
            "--annotation=a=b",
            "--default-backend=d:80",
        ],
        vec![
            "secret",
            "docker-registry",
            "reg",
            "--docker-server=r.example.com",
            "--docker-username=u",
            "--docker-password=p",
            "--docker-email=e@example.com",
        ],
        vec!["secret", "tls", "tls", tls_crt, tls_key],
    ]
}

/// Cluster-scoped generators: the names carry the namespace so both runs can create them.
fn cluster_generators() -> Vec<Vec<&'static str>> {
    vec![
        vec![
            "clusterrole",
            "logs.{ns}",
            "--verb=get",
            "--non-resource-url=/logs/*",
        ],
        vec!["clusterrole", "agg.{ns}", "--aggregation-rule=a=b"],
        vec!["clusterrole", "pods.{ns}", "--verb=get", "--resource=pods"],
        vec![
            "clusterrolebinding",
            "crb.{ns}",
            "--clusterrole=view",
            "--group=devs",
        ],
        vec![
            "priorityclass",
            "pc.{ns}",
            "--value=1000",
            "--description=hi",
            "--preemption-policy=Never",
        ],
    ]
}

const ERRORS: &[&[&str]] = &[
    &["create", "deployment", "d"],
    &[
        "create",
        "deployment",
        "d",
        "--image=a",
        "--image=b",
        "--",
        "x",
    ],
    &["create", "job", "j"],
    &["create", "job", "j", "--from=deployment/web"],
    &["create", "job", "j", "--from=cronjob/missing"],
    &["create", "cronjob", "c"],
    &["create", "role", "r"],
    &["create", "role", "r", "--verb=get"],
    &[
        "create",
        "role",
        "r",
        "--verb=get",
        "--resource=nosuchthing",
    ],
    &["create", "clusterrole", "c", "--verb=get"],
    &["create", "rolebinding", "rb"],
    &[
        "create",
        "rolebinding",
        "rb",
        "--role=r",
        "--serviceaccount=bad",
    ],
    &["create", "clusterrolebinding", "c"],
    &["create", "quota", "q", "--hard=x"],
    &["create", "pdb", "p"],
    &["create", "pdb", "p", "--selector=a=b"],
    &[
        "create",
        "pdb",
        "p",
        "--selector=a=b",
        "--min-available=1",
        "--max-unavailable=1",
    ],
    &["create", "ingress", "i"],
    &["create", "ingress", "i", "--rule=foo"],
    &["create", "secret", "tls", "t"],
    &["create", "secret", "docker-registry", "d"],
    &["create", "service", "clusterip"],
    &["create", "service", "nodeport", "n"],
    &["create", "serviceaccount", "a", "b"],
    &["create", "token", "missing"],
];

#[tokio::test(flavor = "multi_thread")]
async fn create_generators_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("create").await;
    let dir = cluster.dir().to_path_buf();
    let (crt, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    let status = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(status.success(), "openssl req");
    let crt_flag = format!("--cert={}", crt.display());
    let key_flag = format!("--key={}", key.display());

    for generator in generators(&crt_flag, &key_flag)
        .into_iter()
        .chain(cluster_generators())
    {
        // `--` ends the flags: put the output flags before it.
        let split = generator
            .iter()
            .position(|a| *a == "--")
            .unwrap_or(generator.len());
        let with = |extra: &[&'static str]| -> Vec<&str> {
            let mut args = vec!["create"];
            args.extend_from_slice(&generator[..split]);
            args.extend_from_slice(extra);
            args.extend_from_slice(&generator[split..]);
            args
        };
        cmp.step(&with(&["--dry-run=client", "-o", "yaml"]));
        // Go's struct field order, not the sorted keys of -o yaml.
        cmp.step(&with(&["--dry-run=client", "-o", "json"]));
        cmp.step(&with(&["--dry-run=client", "-o", "name"]));
        cmp.step(&with(&[]));
        // Creating again: AlreadyExists, in each generator's own wording.
        cmp.step(&with(&[]));
    }
    cmp.step(&[
        "create",
        "deployment",
        "srv",
        "--image=nginx",
        "--dry-run=server",
        "-o",
        "name",
    ]);
    cmp.step(&["create", "job", "manual", "--from=cronjob/tick"]);
    cmp.step(&[
        "create",
        "job",
        "manual2",
        "--from=cronjob/tick",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    cmp.assert_same_state(STATE);
    // Read by upstream's kubectl in both namespaces, so only the create side is under test.
    let columns = "custom-columns=NAME:.metadata.name,LABELS:.metadata.labels,TYPE:.spec.type,PORTS:.spec.ports[*].port,TARGETS:.spec.ports[*].targetPort,NAMES:.spec.ports[*].name,SEL:.spec.selector,EXT:.spec.externalName,OWNER:.metadata.ownerReferences[*].name,IMAGES:.spec.template.spec.containers[*].image";
    let view = |ns: &str| {
        cmp.upstream
            .ok(&["get", "services,jobs", "-n", ns, "-o", columns])
    };
    let mask_uid = |text: String| {
        text.lines()
            .map(|l| l.split("controller-uid:").next().unwrap_or(l).to_owned())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        mask_uid(view(&cmp.ns_ours)),
        mask_uid(view(&cmp.ns_upstream)),
        "services and jobs created by ours (left) and upstream (right)"
    );
    for args in ERRORS {
        cmp.step_with(args, "", Mode::Exact);
    }
    // run and expose (no controller manager here: the default ServiceAccount by hand).
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream
            .ok(&["create", "serviceaccount", "default", "-n", ns]);
    }
    for args in [
        vec![
            "run",
            "web-pod",
            "--image=nginx",
            "--env=A=1",
            "--port=80",
            "--labels=app=web,tier=fe",
            "--restart=Never",
            "--dry-run=client",
            "-o",
            "yaml",
            "--",
            "a",
            "b",
        ],
        vec![
            "run",
            "cmd-pod",
            "--image=busybox",
            "--command",
            "--dry-run=client",
            "-o",
            "yaml",
            "--",
            "sh",
            "-c",
            "true",
        ],
        vec![
            "run",
            "exposed",
            "--image=nginx",
            "--port=80",
            "--expose",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec!["run", "exposed", "--image=nginx", "--port=80", "--expose"],
        vec!["run", "plain", "--image=busybox", "--", "sleep", "1"],
        vec!["run", "plain", "--image=busybox"],
        vec!["run", "x", "--image=busybox", "--expose"],
        vec!["run", "x", "--image=busybox", "--restart=Bad"],
        vec!["run", "x", "--image=busybox", "-i", "--dry-run=client"],
        vec!["run", "x"],
        vec![
            "expose",
            "deployment",
            "web",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec![
            "expose",
            "deployment",
            "web",
            "--port=8080",
            "--target-port=80",
            "--name=web-svc",
            "--type=NodePort",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec![
            "expose",
            "deployment",
            "web",
            "--port=8080",
            "--target-port=80",
            "--name=web-svc",
        ],
        vec![
            "expose",
            "pod",
            "exposed",
            "--name=pod-svc",
            "--protocol=UDP",
        ],
        vec![
            "expose",
            "svc",
            "cip",
            "--name=cip-copy",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec!["expose", "pod/plain"],
        vec!["expose", "secret", "reg", "--port=80"],
        vec!["expose", "deployment", "nosuch", "--port=80"],
    ] {
        cmp.step(&args);
    }
    // Pods carry randomly named token volumes: compare what run set.
    let pods = |ns: &str| {
        cmp.upstream.ok(&[
            "get",
            "pods",
            "-n",
            ns,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels} {.spec.containers[0].args} {.spec.containers[0].ports} {.spec.restartPolicy}{\"\\n\"}{end}",
        ])
    };
    assert_eq!(
        pods(&cmp.ns_ours),
        pods(&cmp.ns_upstream),
        "pods made by run"
    );
    let services = |ns: &str| {
        cmp.upstream.ok(&[
            "get",
            "services",
            "-n",
            ns,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels} {.spec.selector} {.spec.ports[*].port} {.spec.ports[*].targetPort} {.spec.ports[*].protocol} {.spec.type}{\"\\n\"}{end}",
        ])
    };
    assert_eq!(
        services(&cmp.ns_ours),
        services(&cmp.ns_upstream),
        "services made by run and expose"
    );

    // A token is new each time: both succeed and print one.
    let out = cmp.step_with(
        &["create", "token", "robot", "-o", "jsonpath={.kind}"],
        "",
        Mode::Exact,
    );
    assert_eq!(out.ours.stdout, "TokenRequest");
    let ours = cmp.ours.ok(&[
        "-n",
        &cmp.ns_ours,
        "create",
        "token",
        "robot",
        "--duration=10m",
    ]);
    assert_eq!(ours.trim().split('.').count(), 3, "a JWT: {ours}");
}
