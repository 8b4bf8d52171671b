//! Our kubectl against the upstream one (e2e::kubectl_compare) for issue 9's deploy commands
//! on a cluster that really rolls out: apiserver, scheduler, controller manager and a hollow
//! kubelet (pods run without containers). rollout status (done, watching, errors), history
//! (table, --revision templates), undo, pause, resume, restart; set image, env, resources,
//! selector, serviceaccount, subject; autoscale; wait (condition, jsonpath, delete, create,
//! timeouts). Output must be the same, and so must the objects each kubectl changed.

use e2e::kubectl::Kubectl;
use e2e::kubectl_compare::{Comparison, normalize_identity, replace_word};
use e2e::kubelet::{Kubelet, start_apiserver};
use std::time::{Duration, Instant};

const MANIFEST: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: registry.example/app:1.0
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  log.level: debug
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
    targetPort: 8080
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: rb
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: view
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: alice
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: w1
  labels:
    group: w
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: w2
  labels:
    group: w
data:
  k: v
";

/// Polls `check` (a hang guard, not a timing assertion).
fn poll(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => panic!("{what}: {last}"),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Runs `args` in both namespaces at once (a watch whose intermediate lines depend on timing)
/// and compares the exit status and the last line of stdout and stderr.
fn step_last_line(cmp: &Comparison, args: &[&str]) {
    let run = |k: &Kubectl, ns: &str| {
        let mut full = vec!["-n", ns];
        full.extend_from_slice(args);
        k.run(&full)
    };
    let (up, ours) = std::thread::scope(|s| {
        let up = s.spawn(|| run(&cmp.upstream, &cmp.ns_upstream));
        (up.join().unwrap(), run(&cmp.ours, &cmp.ns_ours))
    });
    let last = |s: &str, ns: &str| replace_word(s.lines().last().unwrap_or(""), ns, "NS");
    let what = format!("kubectl {}", args.join(" "));
    assert_eq!(
        ours.success, up.success,
        "{what}: exit\nours: {ours:?}\nupstream: {up:?}"
    );
    assert_eq!(
        last(&ours.stdout, &cmp.ns_ours),
        last(&up.stdout, &cmp.ns_upstream),
        "{what}: last stdout line\nours: {ours:?}\nupstream: {up:?}"
    );
    assert_eq!(
        last(&ours.stderr, &cmp.ns_ours),
        last(&up.stderr, &cmp.ns_upstream),
        "{what}: last stderr line"
    );
}

/// The same `get ... -o jsonpath=...` in both namespaces must print the same.
fn same_field(cmp: &Comparison, object: &str, path: &str) {
    let get = |ns: &str| {
        let out = cmp
            .upstream
            .ok(&["-n", ns, "get", object, "-o", &format!("jsonpath={path}")]);
        normalize_identity(&replace_word(&out, ns, "NS"))
    };
    assert_eq!(
        get(&cmp.ns_ours),
        get(&cmp.ns_upstream),
        "{object} {path} differs (left ours, right upstream)"
    );
}

/// Waits until the controller has seen the Deployment's last change in both namespaces (its
/// ReplicaSet for a new template exists then), so both histories hold the same revisions.
async fn settled(api: &e2e::apiserver::ApiServer, cmp: &Comparison) {
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        let path = format!("/apis/apps/v1/namespaces/{ns}/deployments/web");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let d = api.get_json(&path).await;
            let (generation, observed) = (
                &d["metadata"]["generation"],
                &d["status"]["observedGeneration"],
            );
            if generation == observed {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{ns}: generation {generation}, observed {observed}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Waits until both Deployments have finished rolling out.
fn rolled_out(cmp: &Comparison) {
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        poll("the rollout to finish", || {
            let out =
                cmp.upstream
                    .run(&["-n", ns, "rollout", "status", "deploy/web", "--watch=false"]);
            out.stdout
                .contains("successfully rolled out")
                .then_some(())
                .ok_or(out.stdout + &out.stderr)
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_commands_match_upstream() {
    let start = Instant::now();
    // Where the time goes, shown with the log on failure (the suite's budget is ~60 s).
    let mark = |what: &str| eprintln!("[{:>5.1}s] {what}", start.elapsed().as_secs_f64());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (api, _pki) = start_apiserver(&dir.join("api"), &[])
        .await
        .expect("apiserver");
    let _kubelet =
        Kubelet::start_hollow(&dir.join("node"), &api, "hollow-0", serde_json::Value::Null)
            .await
            .expect("hollow kubelet");
    let _scheduler = e2e::scheduler::Scheduler::start(&dir.join("scheduler"), &api, None, &[])
        .await
        .expect("scheduler");
    let _kcm = e2e::controller_manager::ControllerManager::start(&dir.join("kcm"), &api, &[])
        .await
        .expect("controller manager");
    let cmp = Comparison::for_apiserver(&dir, &api, "deploy");
    // The scheduler skips the node until the node lifecycle controller lifts the not-ready
    // taint admission put on it.
    poll("the node to be Ready and untainted", || {
        let out = cmp.upstream.run(&[
            "get",
            "node",
            "hollow-0",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}/{.spec.taints}",
        ]);
        matches!(out.stdout.as_str(), "True/" | "True/[]")
            .then_some(())
            .ok_or(out.stdout + &out.stderr)
    });
    mark("cluster ready");
    let manifest = dir.join("m.yaml");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let manifest = manifest.display().to_string();
    let local = dir.join("local.yaml");
    std::fs::write(&local, MANIFEST.split("---").next().unwrap()).unwrap();
    let local = local.display().to_string();
    cmp.step(&["create", "-f", &manifest]);
    rolled_out(&cmp);

    mark("first rollout done");
    // rollout status and history of a finished rollout.
    cmp.step(&["rollout", "status", "deploy/web"]);
    cmp.step(&["rollout", "status", "deployment", "web", "--watch=false"]);
    cmp.step(&["rollout", "status", "deploy/web", "--revision=3"]);
    cmp.step(&["rollout", "status", "cm/cfg"]);
    cmp.step(&["rollout", "status", "deploy/nope"]);
    cmp.step(&["rollout", "status"]);
    cmp.step(&["rollout", "history", "deploy/web"]);

    // set image, and a rollout followed by a watching status.
    cmp.step(&["set", "image", "deploy/web", "app=registry.example/app:2.0"]);
    settled(&api, &cmp).await;
    step_last_line(&cmp, &["rollout", "status", "deploy/web", "--timeout=90s"]);
    cmp.step(&["set", "image", "deploy/web", "app=registry.example/app:2.0"]);
    cmp.step(&["set", "image", "deploy/web", "nope=x"]);
    cmp.step(&["set", "image", "deploy/web"]);
    cmp.step(&[
        "set",
        "image",
        "deploy/web",
        "*=registry.example/app:3.0",
        "--dry-run=client",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    same_field(&cmp, "deploy/web", "{.spec.template}");
    cmp.step(&[
        "set",
        "image",
        "-f",
        &local,
        "app=registry.example/app:9",
        "--local",
        "-o",
        "yaml",
    ]);
    cmp.step(&[
        "set",
        "resources",
        "-f",
        &local,
        "--requests=memory=32Mi",
        "--local",
        "-o",
        "yaml",
    ]);

    mark("set image");
    // set env.
    cmp.step(&["set", "env", "deploy/web", "MODE=fast", "LEVEL=3"]);
    settled(&api, &cmp).await;
    cmp.step(&[
        "set",
        "env",
        "deploy/web",
        "--from=configmap/cfg",
        "--prefix=CFG_",
    ]);
    settled(&api, &cmp).await;
    cmp.step(&["set", "env", "deploy/web", "--list"]);
    cmp.step(&["set", "env", "deploy/web", "--list", "--resolve"]);
    cmp.step(&["set", "env", "deploy/web", "NEW=1", "MODE-", "--list"]);
    cmp.step(&["set", "env", "deploy/web", "LEVEL-"]);
    settled(&api, &cmp).await;
    cmp.step(&[
        "set",
        "env",
        "deploy/web",
        "-c",
        "app",
        "-e",
        "EXTRA=1",
        "--dry-run=server",
        "-o",
        "name",
    ]);
    cmp.step(&["set", "env", "deploy/web", "1BAD=x"]);
    cmp.step(&["set", "env", "deploy/web"]);
    same_field(
        &cmp,
        "deploy/web",
        "{.spec.template.spec.containers[0].env}",
    );

    mark("set env");
    // set resources, serviceaccount, selector, subject.
    cmp.step(&[
        "set",
        "resources",
        "deploy/web",
        "-c",
        "app",
        "--limits=cpu=200m,memory=64Mi",
        "--requests=cpu=0.1",
    ]);
    settled(&api, &cmp).await;
    cmp.step(&[
        "set",
        "resources",
        "deploy/web",
        "-c",
        "nope",
        "--limits=cpu=1",
    ]);
    cmp.step(&["set", "resources", "deploy/web"]);
    same_field(
        &cmp,
        "deploy/web",
        "{.spec.template.spec.containers[0].resources}",
    );
    cmp.step(&["set", "sa", "deploy/web", "builder", "-o", "name"]);
    settled(&api, &cmp).await;
    same_field(
        &cmp,
        "deploy/web",
        "{.spec.template.spec.serviceAccountName}",
    );
    cmp.step(&["set", "selector", "service/web", "app=web,tier=front"]);
    cmp.step(&["set", "selector", "service/web", "app=web,tier=front"]);
    cmp.step(&["set", "selector", "deploy/web", "a=b"]);
    same_field(&cmp, "service/web", "{.spec.selector}");
    cmp.step(&[
        "set",
        "subject",
        "rolebinding/rb",
        "--user=bob",
        "--group=devs",
        "--serviceaccount={ns}:robot",
    ]);
    cmp.step(&["set", "subject", "rolebinding/rb", "--user=alice"]);
    cmp.step(&["set", "subject", "rolebinding/rb", "--serviceaccount=bad"]);
    cmp.step(&["set", "subject", "cm/cfg", "--group=x"]);
    cmp.assert_same_state("rolebindings");
    rolled_out(&cmp);

    mark("set resources, serviceaccount, selector, subject");
    // history, pause, resume, undo, restart.
    cmp.step(&["rollout", "history", "deploy/web"]);
    cmp.step(&["rollout", "history", "deploy/web", "--revision=1"]);
    cmp.step(&["rollout", "history", "deploy/web", "--revision=4"]);
    cmp.step(&["rollout", "history", "deploy/web", "--revision=99"]);
    cmp.step(&["rollout", "history", "cm/cfg"]);
    cmp.step(&["rollout", "undo", "deploy/web", "--dry-run=client"]);
    cmp.step(&["rollout", "pause", "deploy/web"]);
    cmp.step(&["rollout", "pause", "deploy/web"]);
    cmp.step(&["rollout", "undo", "deploy/web"]);
    cmp.step(&["rollout", "restart", "deploy/web"]);
    cmp.step(&["rollout", "resume", "deploy/web"]);
    cmp.step(&["rollout", "resume", "deploy/web", "-o", "name"]);
    // Upstream's resume drops `paused` rather than writing `false`.
    same_field(&cmp, "deploy/web", "{.spec}");
    cmp.step(&["rollout", "undo", "deploy/web", "--to-revision=99"]);
    cmp.step(&["rollout", "undo", "deploy/web", "--dry-run=server"]);
    cmp.step(&["rollout", "undo", "deploy/web"]);
    settled(&api, &cmp).await;
    cmp.step(&[
        "rollout",
        "undo",
        "deploy/web",
        "--to-revision=1",
        "-o",
        "name",
    ]);
    settled(&api, &cmp).await;
    step_last_line(&cmp, &["rollout", "status", "deploy/web", "--timeout=90s"]);
    cmp.step(&["rollout", "history", "deploy/web"]);
    same_field(&cmp, "deploy/web", "{.spec.template}");
    same_field(&cmp, "deploy/web", "{.metadata.annotations}");
    cmp.step(&["rollout", "restart", "deploy/web"]);
    settled(&api, &cmp).await;
    same_field(&cmp, "deploy/web", "{.spec.template.spec}");
    // The two runs may straddle a second: the annotation must be there, its value a time.
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        let at = cmp.upstream.ok(&[
            "-n",
            ns,
            "get",
            "deploy/web",
            "-o",
            "jsonpath={.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}",
        ]);
        assert!(
            at.len() == 20 && at.ends_with('Z'),
            "restartedAt {at:?} in {ns}"
        );
    }
    cmp.step(&["rollout", "restart", "cm/cfg"]);
    step_last_line(&cmp, &["rollout", "status", "deploy/web", "--timeout=90s"]);

    mark("rollout history, pause, resume, undo, restart");
    // autoscale.
    cmp.step(&[
        "autoscale",
        "deploy/web",
        "--min=2",
        "--max=5",
        "--cpu-percent=80",
    ]);
    cmp.step(&["autoscale", "deploy/web", "--max=5"]);
    cmp.step(&[
        "autoscale",
        "deployment",
        "web",
        "--max=3",
        "--name=web-b",
        "-o",
        "name",
    ]);
    cmp.step(&[
        "autoscale",
        "deploy/web",
        "--max=3",
        "--name=dry",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    cmp.step(&["autoscale", "deploy/web", "--max=1", "--min=3"]);
    cmp.step(&["autoscale", "deploy/web"]);
    cmp.step(&["autoscale", "cm/cfg", "--max=3"]);
    // Printed from the server's answer as upstream's typed decoding shows it.
    cmp.step(&[
        "autoscale",
        "deploy/web",
        "--max=4",
        "--name=web-c",
        "-o",
        "yaml",
    ]);
    same_field(&cmp, "hpa/web", "{.spec}");
    same_field(&cmp, "hpa/web-b", "{.spec}");

    mark("autoscale");
    // wait.
    cmp.step(&[
        "wait",
        "--for=condition=Available",
        "deploy/web",
        "--timeout=60s",
    ]);
    cmp.step(&[
        "wait",
        "--for=condition=available=true",
        "deployment/web",
        "-o",
        "name",
    ]);
    cmp.step(&["wait", "--for=jsonpath={.spec.replicas}=2", "deploy/web"]);
    cmp.step(&[
        "wait",
        "--for=condition=Available=false",
        "deploy/web",
        "--timeout=1s",
    ]);
    cmp.step(&[
        "wait",
        "--for=condition=Available=false",
        "deploy/web",
        "--timeout=0",
    ]);
    cmp.step(&["wait", "--for=jsonpath={.data.k}=v", "cm", "-l", "group=w"]);
    cmp.step(&[
        "wait",
        "--for=jsonpath={.data.k}",
        "configmaps",
        "-l",
        "group",
        "-o",
        "name",
    ]);
    cmp.step(&[
        "wait",
        "--for=jsonpath={.data.k}=other",
        "cm",
        "-l",
        "group=w",
        "--timeout=1s",
    ]);
    cmp.step(&["wait", "--for=condition=Ready", "pods", "-l", "app=nomatch"]);
    cmp.step(&["wait", "--for=condition=Available", "deploy/nope"]);
    cmp.step(&["wait", "--for=bogus", "cm/w1"]);
    cmp.step(&["wait", "cm/w1"]);
    cmp.step(&["wait", "--for=delete", "cm/nope"]);
    cmp.step(&["wait", "--for=delete", "cm/w1", "--timeout=1s"]);
    cmp.step(&["wait", "--for=create", "cm/later", "--timeout=1s"]);
    mark("wait steps");
    // Waits that a change ends: both kubectls wait, then the objects change.
    let background = |k: &Kubectl, ns: &str, args: &[&str]| {
        let mut full = vec!["-n", ns];
        full.extend_from_slice(args);
        k.spawn(&full)
    };
    let mut deleting = vec![
        background(
            &cmp.upstream,
            &cmp.ns_upstream,
            &["-v=6", "wait", "--for=delete", "cm/w2", "--timeout=60s"],
        ),
        background(
            &cmp.ours,
            &cmp.ns_ours,
            &["-v=6", "wait", "--for=delete", "cm/w2", "--timeout=60s"],
        ),
    ];
    let mut creating = vec![
        background(
            &cmp.upstream,
            &cmp.ns_upstream,
            &["wait", "--for=create", "cm/later", "--timeout=60s"],
        ),
        background(
            &cmp.ours,
            &cmp.ns_ours,
            &["wait", "--for=create", "cm/later", "--timeout=60s"],
        ),
    ];
    let mut phases = vec![
        background(
            &cmp.upstream,
            &cmp.ns_upstream,
            &[
                "wait",
                "--for=jsonpath={.data.k}=new",
                "cm/w1",
                "--timeout=60s",
            ],
        ),
        background(
            &cmp.ours,
            &cmp.ns_ours,
            &[
                "wait",
                "--for=jsonpath={.data.k}=new",
                "cm/w1",
                "--timeout=60s",
            ],
        ),
    ];
    // A wait for deletion that reads the object after the deletion prints nothing: change
    // nothing before both logged their list/watch by name, which follows the read (a wait
    // for create or a JSONPath value that starts late still sees it met).
    for bg in deleting.iter_mut() {
        bg.wait_for_stderr(Duration::from_secs(60), "the read", |err| {
            err.contains("fieldSelector=metadata.name")
        });
    }
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream
            .ok(&["-n", ns, "delete", "cm/w2", "--wait=false"]);
        cmp.upstream.ok(&["-n", ns, "create", "cm", "later"]);
        cmp.upstream.ok(&[
            "-n",
            ns,
            "patch",
            "cm/w1",
            "-p",
            "{\"data\":{\"k\":\"new\"}}",
        ]);
    }
    for (set, want) in [
        (&mut deleting, "configmap/w2 condition met\n"),
        (&mut creating, "configmap/later condition met\n"),
        (&mut phases, "configmap/w1 condition met\n"),
    ] {
        for bg in set.iter_mut() {
            let out = bg.wait_for(Duration::from_secs(60), want, |out| out == want);
            assert_eq!(out, want);
        }
    }
    mark("waits ended by changes");
}
