//! Our `kubectl apply`, `diff` and `edit` against upstream's on the same cluster
//! (e2e::kubectl_compare): client-side apply creating, configuring (replicas, a removed label, a
//! removed env entry, a list merged by key) and leaving unchanged, server-side apply and its
//! conflict, prune, the last-applied subcommands, diff with an external diff program, and edit
//! with a scripted editor (a valid change, and an invalid one that re-opens the file). Output
//! and the cluster state after each step must be upstream's.

use e2e::kubectl_compare::{Comparison, Fixture, normalize_identity, replace_word};
use std::path::{Path, PathBuf};
use std::process::Command;

const V1: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: front
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        env:
        - name: A
          value: one
        - name: B
          value: two
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  color: blue
  size: large
";

/// Replicas changed, the `tier` label and env `B` removed, a port and a sidecar added, a
/// ConfigMap key removed and one changed.
const V2: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        env:
        - name: A
          value: one
        ports:
        - containerPort: 80
        - containerPort: 443
      - name: sidecar
        image: busybox
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  color: green
";

const PRUNE_A: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep
  labels:
    set: prune
data:
  k: v
";

const PRUNE_B: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: gone
  labels:
    set: prune
data:
  k: v
";

const SSA: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
data:
  owner: first
";

const SSA_OTHER: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
data:
  owner: second
";

const CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.apply.example.com
spec:
  group: apply.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
";

/// A custom resource has no patch strategies: apply sends a JSON merge patch.
const GADGET_V1: &str = "\
apiVersion: apply.example.com/v1
kind: Gadget
metadata:
  name: g
spec:
  a: 1
  b: two
  list: [p, q]
";

const GADGET_V2: &str = "\
apiVersion: apply.example.com/v1
kind: Gadget
metadata:
  name: g
spec:
  a: 2
  list: [q]
";

const SECRET_V1: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: s
stringData:
  same: a
  changed: b
";

const SECRET_V2: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: s
stringData:
  same: a
  changed: c
  new: d
";

const STATE: &str = "configmaps,deployments.apps";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_diff_edit_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("apply").await;
    let dir = cluster.dir().to_path_buf();
    let v1 = write(&dir, "v1.yaml", V1);
    let v2 = write(&dir, "v2.yaml", V2);

    // Client-side apply: create, unchanged, configure.
    cmp.step(&["apply", "-f", &v1]);
    cmp.assert_same_state(STATE);
    cmp.step(&["apply", "-f", &v1]);
    cmp.step_with(&["apply", "-f", "-"], V1, e2e::kubectl_compare::Mode::Exact);
    cmp.step(&["apply", "-f", &v2, "--dry-run=client"]);
    cmp.step(&["apply", "-f", &v2, "--dry-run=server"]);
    cmp.step(&["apply", "-f", &v2, "--dry-run=client", "-o", "yaml"]);
    cmp.step(&["apply", "-f", &v2, "--dry-run=server", "-o", "json"]);
    cmp.assert_same_state(STATE);
    cmp.step(&["apply", "-f", &v2]);
    cmp.assert_same_state(STATE);
    cmp.step(&["apply", "-f", &v2, "-o", "name"]);
    cmp.step(&["apply", "-f", &v2, "-o", "json"]);
    cmp.step(&["apply", "view-last-applied", "deployment", "web"]);
    cmp.step(&["apply", "view-last-applied", "cm/cfg", "-o", "json"]);
    cmp.step(&["apply", "set-last-applied", "-f", &v1]);
    cmp.assert_same_state(STATE);
    cmp.step(&["apply", "-f", &v2]);
    cmp.assert_same_state(STATE);

    // A field changed by someone else survives an apply that never managed it.
    cmp.step(&["annotate", "deployment", "web", "note=kept"]);
    cmp.step(&["apply", "-f", &v2]);
    cmp.assert_same_state(STATE);

    // Errors: no file, an unknown kind.
    cmp.step(&["apply"]);
    let unknown = write(
        &dir,
        "unknown.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: x\n",
    );
    // (With validation on, upstream first asks the OpenAPI v3 document for the kind and fails
    // on our apiserver's answer for an unknown group; the builder's message is the same.)
    cmp.step(&["apply", "--validate=false", "-f", &unknown]);

    // Prune: the object left out of the configuration goes.
    let prune_dir = dir.join("prune");
    write(&dir, "prune/a.yaml", PRUNE_A);
    let b = write(&dir, "prune/b.yaml", PRUNE_B);
    cmp.step(&["apply", "-f", &prune_dir.display().to_string()]);
    std::fs::remove_file(&b).unwrap();
    cmp.step(&["apply", "--prune", "-f", &prune_dir.display().to_string()]);
    cmp.step(&[
        "apply",
        "--prune",
        "-l",
        "set=prune",
        "--prune-allowlist=core/v1/ConfigMap",
        "--prune-allowlist=apps/v1/Deployment",
        "-f",
        &prune_dir.display().to_string(),
    ]);
    cmp.assert_same_state(STATE);
    // The default set: upstream's stderr carries a klog line (time, pid) and the server's
    // deprecation warning for Endpoints, so only the outcome and stdout are compared.
    write(&dir, "prune/b.yaml", PRUNE_B);
    cmp.step(&["apply", "-f", &prune_dir.display().to_string()]);
    std::fs::remove_file(&b).unwrap();
    let prune_args = [
        "apply",
        "--prune",
        "-l",
        "set=prune",
        "-f",
        &prune_dir.display().to_string(),
    ];
    let [up, ours] = run_both(&cmp, &dir, &prune_args, &[]);
    assert_eq!(
        (ours.0, &ours.1),
        (up.0, &up.1),
        "apply --prune (default set)"
    );
    assert!(
        ours.2
            .contains("prune.go:71] Deprecated: kubectl apply will no longer prune non-namespaced"),
        "{}",
        ours.2
    );
    cmp.assert_same_state(STATE);

    // Server-side apply, a conflict with another manager, and forcing it.
    let ssa = write(&dir, "ssa.yaml", SSA);
    let ssa_other = write(&dir, "ssa-other.yaml", SSA_OTHER);
    cmp.step(&["apply", "--server-side", "-f", &ssa]);
    cmp.step(&["apply", "--server-side", "-f", &ssa]);
    cmp.step(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &ssa_other,
    ]);
    cmp.step(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &ssa_other,
    ]);
    cmp.step(&["apply", "--server-side", "--dry-run=client", "-f", &ssa]);
    cmp.step(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "-f",
        &ssa,
        "-o",
        "name",
    ]);
    cmp.step(&["apply", "--force-conflicts", "-f", &ssa]);
    // Objects never applied client-side: no annotation to view or set.
    cmp.step(&["apply", "view-last-applied", "cm", "ssa"]);
    cmp.step(&["apply", "view-last-applied", "cm", "nothere"]);
    cmp.step(&["apply", "view-last-applied", "cm", "ssa", "-o", "wide"]);
    cmp.step(&["apply", "view-last-applied", "cm", "keep", "-o", "wide"]);
    cmp.step(&["apply", "set-last-applied", "-f", &ssa]);
    cmp.step(&[
        "apply",
        "set-last-applied",
        "-f",
        &ssa,
        "--create-annotation",
        "--dry-run=client",
    ]);
    cmp.assert_same_state(STATE);

    // Client-side applied objects taken over by server-side apply, then a CSA change again.
    // (Upstream also migrates the client-side managers' fields to `kubectl` and keeps the
    // annotation under `kubectl-last-applied`; ours does not yet, which only managedFields
    // show.)
    cmp.step(&["apply", "--server-side", "-f", &v2]);
    cmp.assert_same_state(STATE);
    cmp.step(&["apply", "-f", &v2]);

    diff_steps(&cmp, &dir, &v1, &v2);
    edit_steps(&cmp, &dir);
    custom_resource_steps(&cmp, &dir);
}

fn custom_resource_steps(cmp: &Comparison, dir: &Path) {
    let crd = write(dir, "crd.yaml", CRD);
    cmp.upstream.ok(&["apply", "-f", &crd]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !cmp.upstream.run(&["get", "gadgets", "-A"]).success {
        assert!(
            std::time::Instant::now() < deadline,
            "the Gadget CRD was not served within 30s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let g1 = write(dir, "gadget-v1.yaml", GADGET_V1);
    let g2 = write(dir, "gadget-v2.yaml", GADGET_V2);
    cmp.step(&["apply", "-f", &g1]);
    cmp.step(&["apply", "-f", &g1]);
    cmp.step(&["apply", "-f", &g2]);
    cmp.assert_same_state("gadgets.apply.example.com");
    cmp.step(&["apply", "view-last-applied", "gadget", "g"]);
}

/// Both kubectls' exit code, stdout and stderr for `args` in their namespace, with `env`.
fn run_both(
    cmp: &Comparison,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> [(Option<i32>, String, String); 2] {
    let run = |binary: PathBuf, who: &str, ns: &str| {
        let kdir = dir.join(who);
        let mut full: Vec<String> = vec![
            format!("--cache-dir={}", kdir.join("cache").display()),
            "-n".into(),
            ns.into(),
        ];
        full.extend(args.iter().map(|a| a.to_string()));
        let out = Command::new(binary)
            .args(&full)
            .env("KUBECONFIG", kdir.join("kubeconfig"))
            .env("HOME", &kdir)
            .envs(env.iter().copied())
            .output()
            .expect("running kubectl");
        let norm =
            |b: &[u8]| normalize_identity(&replace_word(&String::from_utf8_lossy(b), ns, "NS"));
        (out.status.code(), norm(&out.stdout), norm(&out.stderr))
    };
    [
        run(
            PathBuf::from(e2e::kubectl::UPSTREAM_KUBECTL),
            "kubectl-upstream",
            &cmp.ns_upstream,
        ),
        run(e2e::bin("kubectl"), "kubectl-ours", &cmp.ns_ours),
    ]
}

fn assert_same(what: &str, results: &[(Option<i32>, String, String); 2]) {
    let [up, ours] = results;
    if ours != up {
        // The first line that differs, as whole outputs are long.
        let first = |a: &str, b: &str| {
            a.lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .map(|i| {
                    format!(
                        "line {i}: ours {:?} upstream {:?}",
                        a.lines().nth(i),
                        b.lines().nth(i)
                    )
                })
                .unwrap_or_else(|| "one is a prefix of the other".to_owned())
        };
        panic!(
            "{what}: differs (ours vs upstream)\nexit: {:?} vs {:?}\nstdout {}\nstderr {}\nours stderr: {}\nupstream stderr: {}",
            ours.0,
            up.0,
            first(&ours.1, &up.1),
            first(&ours.2, &up.2),
            ours.2,
            up.2
        );
    }
}

fn diff_steps(cmp: &Comparison, dir: &Path, v1: &str, v2: &str) {
    // The external diff prints the two trees' files and their contents, and exits as diff -r.
    let script = write(
        dir,
        "fake-diff.sh",
        "#!/bin/sh\ndiff -r \"$1\" \"$2\" >/dev/null; rc=$?\ncd \"$1\" && for f in *; do echo \"== $f\"; cat \"$f\"; done\ncd \"$2\" && for f in *; do echo \"== $f\"; cat \"$f\"; done\nexit $rc\n",
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = [("KUBECTL_EXTERNAL_DIFF", script.as_str())];
    let same = run_both(cmp, dir, &["diff", "-f", v2], &env);
    assert_same("diff (no changes)", &same);
    assert_eq!(same[1].0, Some(0), "no differences: exit 0");
    let changed = run_both(cmp, dir, &["diff", "-f", v1], &env);
    assert_same("diff (changes, external)", &changed);
    assert_eq!(changed[1].0, Some(1), "differences: exit 1");
    let plain = run_both(cmp, dir, &["diff", "-f", v1], &[]);
    assert_eq!(plain[1].0, plain[0].0, "diff -u exit code");
    // A new object (empty live side) beside changed ones, and the server-side variant.
    let fresh = write(
        dir,
        "fresh.yaml",
        &format!(
            "{V1}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  k: v\n"
        ),
    );
    assert_same(
        "diff (a new object)",
        &run_both(cmp, dir, &["diff", "-f", &fresh], &env),
    );
    // Server-side: a dry-run apply patch. (Only on an object never client-side applied: upstream
    // migrates client-side field ownership to server-side apply first, which ours lacks.)
    let ssa_new = write(
        dir,
        "ssa-new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-new\ndata:\n  k: v\n",
    );
    assert_same(
        "diff --server-side",
        &run_both(cmp, dir, &["diff", "--server-side", "-f", &ssa_new], &env),
    );
    // Secret values are masked on both sides.
    let s1 = write(dir, "secret-v1.yaml", SECRET_V1);
    let s2 = write(dir, "secret-v2.yaml", SECRET_V2);
    cmp.step(&["apply", "-f", &s1]);
    let secret = run_both(cmp, dir, &["diff", "-f", &s2], &env);
    assert_same("diff (a Secret)", &secret);
    assert!(secret[1].1.contains("*** (after)"), "{}", secret[1].1);
    let missing = dir.join("missing.yaml").display().to_string();
    let error = run_both(cmp, dir, &["diff", "-f", &missing], &env);
    assert_same("diff (error)", &error);
    cmp.assert_same_state(STATE);
}

fn edit_steps(cmp: &Comparison, dir: &Path) {
    // A scripted editor: changes a value in place.
    let sed = write(
        dir,
        "edit-ok.sh",
        "#!/bin/sh\nsed -i 's/color: green/color: purple/' \"$1\"\n",
    );
    // An editor that makes the object invalid, and the second time (the file re-opened with
    // the error in its header) keeps a copy in $HOME and saves nothing new.
    let bad = write(
        dir,
        "edit-bad.sh",
        "#!/bin/sh\nif grep -q 'bad-label' \"$1\"; then cp \"$1\" \"$HOME/seen.yaml\"; exit 0; fi\nsed -i 's/^  name: cfg$/  name: cfg\\n  labels: {bad-label!: x}/' \"$1\"\n",
    );
    let to_two = write(
        dir,
        "edit-replicas.sh",
        "#!/bin/sh\nsed -i 's/replicas: 3/replicas: 2/' \"$1\"\n",
    );
    // The last-applied configuration still says 3 replicas.
    let to_four = write(
        dir,
        "edit-annotation.sh",
        "#!/bin/sh\nsed -i 's/replicas: 3/replicas: 4/' \"$1\"\n",
    );
    for script in [&sed, &bad, &to_two, &to_four] {
        std::fs::set_permissions(script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let ok = run_both(
        cmp,
        dir,
        &["edit", "cm", "cfg"],
        &[("KUBE_EDITOR", sed.as_str())],
    );
    assert_same("edit", &ok);
    cmp.assert_same_state(STATE);
    let patch = run_both(
        cmp,
        dir,
        &["edit", "deploy", "web", "--output-patch"],
        &[("KUBE_EDITOR", to_two.as_str())],
    );
    assert_same("edit --output-patch", &patch);
    assert!(
        patch[1].1.contains("deployment.apps/web edited"),
        "{:?}",
        patch[1]
    );
    cmp.assert_same_state(STATE);
    let annotation = run_both(
        cmp,
        dir,
        &["apply", "edit-last-applied", "deploy", "web"],
        &[("KUBE_EDITOR", to_four.as_str())],
    );
    assert_same("apply edit-last-applied", &annotation);
    assert!(
        annotation[1].1.contains("deployment.apps/web edited"),
        "{:?}",
        annotation[1]
    );
    cmp.assert_same_state(STATE);
    let unchanged = run_both(cmp, dir, &["edit", "cm", "cfg"], &[("KUBE_EDITOR", "true")]);
    assert_same("edit without change", &unchanged);
    let invalid = run_both(
        cmp,
        dir,
        &["edit", "cm", "cfg"],
        &[("KUBE_EDITOR", bad.as_str())],
    );
    let temp_names = |r: &[(Option<i32>, String, String); 2]| {
        r.clone()
            .map(|(code, out, err)| (code, out, numbered("kubectl-edit-", &err)))
    };
    assert_same("edit with an invalid change", &temp_names(&invalid));
    assert_eq!(invalid[1].0, Some(1));
    let seen = |who: &str, ns: &str| {
        let text = std::fs::read_to_string(dir.join(who).join("seen.yaml")).unwrap();
        normalize_identity(&replace_word(&text, ns, "NS"))
    };
    assert_eq!(
        seen("kubectl-ours", &cmp.ns_ours),
        seen("kubectl-upstream", &cmp.ns_upstream),
        "the re-opened file (left ours, right upstream)"
    );
    cmp.assert_same_state(STATE);
}

/// `text` with the digits after each `prefix` replaced by `N` (temp file names).
fn numbered(prefix: &str, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        out.push_str(&rest[..i + prefix.len()]);
        rest = rest[i + prefix.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

const IMMUTABLE: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: frozen
  labels:
    set: force
immutable: true
data:
  k: one
";

/// `apply --force` replacing what a patch cannot change (upstream's deleteAndCreate), its flag
/// checks, a replacement whose old object does not go (a finalizer holds it), and `--prune
/// --wait`, which upstream 1.33's plain prune accepts without waiting.
#[tokio::test(flavor = "multi_thread")]
async fn apply_force_and_wait_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("force").await;
    let dir = cluster.dir().to_path_buf();
    let one = write(&dir, "frozen-1.yaml", IMMUTABLE);
    let two = write(
        &dir,
        "frozen-2.yaml",
        &IMMUTABLE.replace("k: one", "k: two"),
    );
    cmp.step(&["apply", "-f", &one]);
    cmp.step(&["apply", "-f", &two, "--force", "--dry-run=client"]);
    cmp.step(&["apply", "-f", &two, "--force"]);
    cmp.assert_same_state("configmaps");
    for bad in [
        &["--force", "--server-side"][..],
        &["--force", "--prune", "--all"],
        &["--force", "--dry-run=server"],
        &["--cascade=bogus"],
        &["--timeout=abc"],
    ] {
        let mut args = vec!["apply", "-f", &one];
        args.extend_from_slice(bad);
        cmp.step(&args);
    }

    // A finalizer keeps the deleted object: the replacement's single check finds it still
    // there (--timeout=0) and fails with the manifest named, in both.
    let held = write(
        &dir,
        "held-1.yaml",
        &IMMUTABLE.replace(
            "name: frozen",
            "name: held\n  finalizers: [example.com/hold]",
        ),
    );
    let held_two = write(
        &dir,
        "held-2.yaml",
        &std::fs::read_to_string(&held)
            .unwrap()
            .replace("k: one", "k: two"),
    );
    cmp.step(&["apply", "-f", &held]);
    cmp.step(&["apply", "-f", &held_two, "--force"]);
    let release = [
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ];
    cmp.step(&release);

    // --prune --wait: the pruned object is held by its finalizer; neither kubectl waits.
    let keep = dir.join("keep");
    write(
        &dir,
        "keep/a.yaml",
        &IMMUTABLE.replace("name: frozen", "name: kept"),
    );
    let gone = write(
        &dir,
        "keep/b.yaml",
        &IMMUTABLE.replace(
            "name: frozen",
            "name: pruned\n  finalizers: [example.com/hold]",
        ),
    );
    let keep = keep.display().to_string();
    cmp.step(&["apply", "-f", &keep]);
    std::fs::remove_file(&gone).unwrap();
    cmp.step(&[
        "apply",
        "--prune",
        "--wait",
        "-l",
        "set=force",
        "--prune-allowlist=core/v1/ConfigMap",
        "-f",
        &keep,
    ]);
    cmp.assert_same_state("configmaps");
    let mut release_pruned = release;
    release_pruned[2] = "pruned";
    cmp.step(&release_pruned);
}
