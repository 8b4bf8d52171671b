//! `-o go-template` / `template` / `go-template-file` / `templatefile` / `--template` of our
//! kubectl against upstream's on the same secured cluster (e2e::kubectl_compare): the output
//! of each template over single objects and lists, byte for byte, and the two error shapes
//! (a template that does not parse; one that fails executing, whose debugging notes upstream
//! writes to stdout) with their exit code.

#[path = "kubectl_ours_template/print_flags.rs"]
mod print_flags;

use e2e::kubectl_compare::{Comparison, Fixture, Mode, normalize_identity, replace_word};

const OBJECTS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels:
    app.kubernetes.io/name: web
    tier: front
data:
  color: blue
  b.c: dotted
  number: \"123\"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data:
  z: last
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter2
  user: admin
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
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
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
  - name: admin
    port: 9090
";

const FILE_TEMPLATE: &str = "\
{{- /* one line per object, kind-specific */ -}}
{{range $i, $o := .items -}}
{{$i}} {{printf \"%-12s|%-10s|\" $o.kind $o.metadata.name}}
{{- if eq $o.kind \"ConfigMap\"}} keys={{len $o.data}}
{{- else if eq $o.kind \"Deployment\"}} replicas={{$o.spec.replicas}}
{{- else}} other{{end}}
{{end -}}
";

/// Values the two namespaces' copies of an object cannot share, wherever they stand in a
/// line: compact JSON (`"uid":"..."`) and Go's map form (`uid:...`).
fn mask_inline(text: &str) -> String {
    let mut out = text.to_owned();
    for key in ["uid", "resourceVersion", "creationTimestamp", "time"] {
        for (open, close) in [(format!("\"{key}\":\""), '"'), (format!(" {key}:"), ' ')] {
            let mut masked = String::new();
            let mut rest = out.as_str();
            while let Some(i) = rest.find(&open) {
                masked.push_str(&rest[..i + open.len()]);
                rest = &rest[i + open.len()..];
                let end = rest.find([close, ']', '\n']).unwrap_or(rest.len());
                masked.push('X');
                rest = &rest[end..];
            }
            masked.push_str(rest);
            out = masked;
        }
    }
    out
}

/// Runs `args` with both kubectls (each in its namespace) and compares with identities
/// masked inside lines too: an execution error prints the whole object.
fn step_masked(cmp: &Comparison, args: &[&str]) -> (bool, String) {
    let run = |kubectl: &e2e::kubectl::Kubectl, ns: &str| {
        let mut full = vec!["-n", ns];
        full.extend_from_slice(args);
        let out = kubectl.run(&full);
        let norm = |t: &str| mask_inline(&normalize_identity(&replace_word(t, ns, "NS")));
        (out.success, norm(&out.stdout), norm(&out.stderr))
    };
    let up = run(&cmp.upstream, &cmp.ns_upstream);
    let ours = run(&cmp.ours, &cmp.ns_ours);
    assert_eq!(
        ours,
        up,
        "kubectl {}: ours (left) differs from upstream",
        args.join(" ")
    );
    (up.0, up.1)
}

#[tokio::test(flavor = "multi_thread")]
async fn templates_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("tmpl").await;
    let dir = cluster.dir().to_path_buf();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let objects = write("objects.yaml", OBJECTS);
    let file_template = write("lines.tmpl", FILE_TEMPLATE);
    let missing_file = format!("go-template-file={}", dir.join("missing.tmpl").display());
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream.ok(&["apply", "-n", ns, "-f", &objects]);
    }

    let single = [
        ("configmap/cfg", "{{.metadata.name}}{{\"\\n\"}}"),
        ("configmap/cfg", "{{.metadata.labels}} {{.data}}"),
        (
            "configmap/cfg",
            "{{index .metadata.labels \"app.kubernetes.io/name\"}}/{{index .data \"b.c\"}}",
        ),
        (
            "configmap/cfg",
            "{{range $k, $v := .data}}{{$k}}={{$v}};{{end}}",
        ),
        (
            "configmap/cfg",
            "{{.nope}} {{.nope.deeper}} {{index .data \"nope\"}}",
        ),
        (
            "configmap/cfg",
            "{{if .data.color}}{{.data.color}}{{else}}none{{end}} {{with .data.nope}}x{{else}}no{{end}}",
        ),
        (
            "configmap/cfg",
            "{{len .data}} {{len .metadata.name}} {{len .metadata.managedFields}}",
        ),
        (
            "configmap/cfg",
            "{{exists . \"data\" \"color\"}} {{exists . \"data\" \"nope\"}}",
        ),
        (
            "secret/creds",
            "{{.data.password | base64decode}} {{base64decode .data.user}}",
        ),
        (
            "deployment/web",
            "{{.spec.replicas}} {{printf \"%05d|%-4d|%x|%5.2f\" .spec.replicas .spec.replicas 255 1.5}}",
        ),
        (
            "deployment/web",
            "{{printf \"%f %s %d\" .spec.replicas .spec.replicas}} {{print 1 2 \"a\" 3}}",
        ),
        (
            "deployment/web",
            "{{if gt .spec.replicas 2}}many{{end}} {{if and .spec.replicas (not .spec.paused)}}on{{end}} {{or .spec.paused \"unpaused\"}}",
        ),
        (
            "deployment/web",
            "{{with .spec.template.spec}}{{range .containers}}{{.name}}={{.image}} {{end}}{{end}}",
        ),
        (
            "deployment/web",
            "{{(index .spec.template.spec.containers 1).name}} {{.spec.strategy}} {{.spec.selector}}",
        ),
        (
            "deployment/web",
            "{{$n := .metadata.name}}{{$n}} {{$n = \"renamed\"}}{{$n}} {{.spec.template.spec.containers}}",
        ),
        (
            "service/web",
            "{{range .spec.ports}}{{.name}}:{{.port}}->{{.targetPort}}/{{.protocol}}{{\"\\n\"}}{{end}}",
        ),
        (
            "service/web",
            "{{- /* trims */ -}}   {{ .kind -}}   /   {{- .metadata.name }}",
        ),
        (
            "configmap/cfg",
            "{{define \"pair\"}}[{{.}}]{{end}}{{range $k, $v := .data}}{{template \"pair\" $k}}{{end}} {{block \"labels\" .metadata.labels}}{{range $k, $v := .}}{{$k}}:{{$v}};{{end}}{{end}} {{template \"pair\"}}",
        ),
        (
            "deployment/web",
            "{{range .spec.template.spec.containers}}{{if eq .name \"nginx\"}}{{continue}}{{end}}{{.name}} {{end}}{{range $i, $c := .spec.template.spec.containers}}{{if $i}}{{break}}{{end}}{{$c.image}}{{end}}",
        ),
        (
            "deployment/web",
            "{{slice .metadata.name 1}} {{slice .spec.template.spec.containers 1}} {{js .spec.selector}} {{js \"a<b>&='x'\"}}",
        ),
        (
            "configmap/cfg",
            "{{len (slice .metadata.name 0 2)}} {{html \"<x>\"}} {{urlquery \"a b&c\"}} {{and 0 .nope.x}} {{or 1 .nope.x}} {{not .data}} {{print nil}} {{println 1 \"a\"}}",
        ),
        (
            "configmap/cfg",
            "{{html .nope}} {{js nil 1}} {{eq .data nil}} {{len .metadata.name}}",
        ),
        (
            "deployment/web",
            "{{eq .spec.replicas 3}} {{ne .kind \"Pod\"}} {{lt 1 2}} {{le 2 2}} {{gt 1.5 1.2}} {{ge \"b\" \"a\"}} {{eq .kind \"A\" \"Deployment\"}}",
        ),
    ];
    for (object, template) in single {
        let output = format!("go-template={template}");
        cmp.step(&["get", object, "-o", &output]);
    }
    let lists = [
        "{{range .items}}{{.metadata.name}} {{end}}{{.kind}} {{len .items}} {{.metadata}}",
        "{{range $i, $p := .items}}{{if $i}},{{end}}{{$i}}={{$p.metadata.name}}{{end}}",
        "{{range .items}}{{if eq .kind \"ConfigMap\"}}{{.metadata.name}}{{range $k, $v := .data}} {{$k}}{{end}}{{\"\\n\"}}{{end}}{{end}}",
    ];
    for template in lists {
        cmp.step(&[
            "get",
            "configmaps,secrets",
            "-o",
            &format!("go-template={template}"),
        ]);
    }
    // An empty selection still runs the template over an empty List.
    cmp.step(&[
        "get",
        "configmaps",
        "-l",
        "tier=none",
        "-o",
        "go-template={{.kind}} {{len .items}}",
    ]);

    // The other spellings: template=, the files, and --template with or without -o.
    cmp.step(&["get", "configmap/cfg", "-o", "template={{.metadata.name}}"]);
    cmp.step(&["get", "configmap/cfg", "--template={{.kind}}"]);
    cmp.step(&[
        "get",
        "configmap/cfg",
        "-o",
        "go-template",
        "--template={{.kind}}",
    ]);
    cmp.step(&[
        "get",
        "cm,secret,deploy,svc",
        "-o",
        &format!("go-template-file={file_template}"),
    ]);
    cmp.step(&[
        "get",
        "cm,secret,deploy,svc",
        "-o",
        "templatefile",
        "--template",
        &file_template,
    ]);
    // Printing flags of other commands.
    print_flags::steps(&cmp, &objects);

    // Errors: no template, an unreadable file, templates that do not parse.
    for bad in [
        vec!["-o", "go-template"],
        vec!["-o", missing_file.as_str()],
        vec!["-o", "go-template={{.x}"],
        vec!["-o", "go-template={{nofunc .x}}"],
        vec!["-o", "go-template={{if .x}}"],
        vec!["-o", "go-template={{$undefined}}"],
        vec!["-o", "go-template={{break}}"],
        vec!["-o", "go-template={{if 1}}{{define \"x\"}}{{end}}{{end}}"],
        vec![
            "-o",
            "go-template={{define \"a\"}}1{{end}}{{define \"a\"}}2{{end}}",
        ],
        vec!["-o", "go-template={{block \"b\"}}{{end}}"],
    ] {
        let mut args = vec!["get", "configmap/cfg"];
        args.extend(bad);
        let out = cmp.step_with(&args, "", Mode::Exact);
        assert!(
            !out.upstream.success && out.upstream.stderr.starts_with("error: "),
            "{args:?}"
        );
    }
    // Execution errors: the output so far, then upstream's notes (with the whole object) on
    // stdout, and the error on stderr.
    for (template, strict) in [
        (
            "{{.metadata.name}} {{.x}}",
            "--allow-missing-template-keys=false",
        ),
        ("{{.metadata.name.z}}", "--allow-missing-template-keys=true"),
        ("{{index .data 3}}", "--allow-missing-template-keys=true"),
        (
            "{{.data.number | base64decode}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{template \"nope\" .}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{define \"T\"}}{{.metadata.name.z}}{{end}}{{template \"T\" .}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{call .metadata.name}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{slice .metadata.name 3 1}}",
            "--allow-missing-template-keys=true",
        ),
        ("{{lt .data 1}}", "--allow-missing-template-keys=true"),
        (
            "{{eq .metadata.name 1}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{index .data .nope}}",
            "--allow-missing-template-keys=true",
        ),
        (
            "{{eq .data .metadata}}",
            "--allow-missing-template-keys=true",
        ),
    ] {
        let output = format!("go-template={template}");
        let (success, stdout) = step_masked(&cmp, &["get", "configmap/cfg", strict, "-o", &output]);
        assert!(!success, "{template} should fail");
        assert!(
            stdout.contains("Error executing template: template: output:1:"),
            "{stdout}"
        );
    }
}
