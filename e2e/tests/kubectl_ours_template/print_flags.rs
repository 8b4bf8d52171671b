//! `--template`, `--allow-missing-template-keys` and `--show-managed-fields` of the commands
//! other than `get` that print objects (upstream's PrintFlags), against upstream's output.
//! label/annotate work on configmap/other: ours sends no field manager for them yet, which
//! would show in the managedFields of an object printed whole.

use super::step_masked;
use e2e::kubectl_compare::Comparison;

/// The steps, over the objects of the main test (`objects` is their manifest).
pub fn steps(cmp: &Comparison, objects: &str) {
    // A dry run creates nothing: the same object printed each way, client- and server-side.
    let create = ["create", "configmap", "fresh", "--from-literal=k=v"];
    for printing in [
        &[
            "--dry-run=client",
            "-o",
            "go-template={{.metadata.name}}:{{.data.k}}",
        ][..],
        &[
            "--dry-run=client",
            "--template",
            "{{.metadata.name}}={{.data.k}}",
        ],
        &[
            "--dry-run=server",
            "-o",
            "go-template={{.metadata.name}} {{len .metadata}}",
        ],
        &["--dry-run=server", "-o", "yaml", "--show-managed-fields"],
    ] {
        cmp.step(&[&create[..], printing].concat());
    }
    cmp.step(&[
        "label",
        "configmap/other",
        "extra=1",
        "-o",
        "go-template",
        "--template={{.metadata.labels.extra}}/{{.metadata.name}}",
    ]);
    cmp.step(&[
        "annotate",
        "configmap/other",
        "note=x",
        "--template={{range $k, $v := .metadata.annotations}}{{$k}}={{$v}};{{end}}",
    ]);
    cmp.step(&[
        "apply",
        "-f",
        objects,
        "--template={{.kind}}/{{.metadata.name}} ",
    ]);
    cmp.step(&[
        "apply",
        "-f",
        objects,
        "-o",
        "go-template",
        "--template={{.kind}} {{range .items}}{{.metadata.name}} {{end}}",
    ]);
    cmp.step(&[
        "scale",
        "deployment/web",
        "--replicas=2",
        "--template={{.spec.replicas}}",
    ]);
    cmp.step(&[
        "set",
        "image",
        "deployment/web",
        "nginx=nginx:1.28",
        "--dry-run=server",
        "-o",
        "template",
        "--template={{range .spec.template.spec.containers}}{{.image}} {{end}}",
    ]);
    cmp.step(&["events", "--template={{.kind}} {{len .items}}"]);
    cmp.step(&[
        "events",
        "-o",
        "go-template",
        "--template={{.nope}}",
        "--allow-missing-template-keys=false",
    ]);
    let (success, stdout) = step_masked(
        cmp,
        &[
            "label",
            "configmap/cfg",
            "extra=3",
            "--dry-run=client",
            "--allow-missing-template-keys=false",
            "--template={{.metadata.name}} {{.nope}}",
        ],
    );
    assert!(
        !success && stdout.contains("map has no entry for key"),
        "{stdout}"
    );
}
