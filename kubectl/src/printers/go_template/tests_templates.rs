//! Named templates, break/continue and the builtins Go 1.24 added or changed, against the
//! texts kubectl 1.33 prints for the same template and data.

use super::*;

/// The `executing ...` error of a failed run.
fn exec_error(text: &str) -> String {
    let failure = GoTemplate::parse(text)
        .unwrap()
        .render(&data())
        .unwrap_err();
    failure.message.split_once("\": ").unwrap().1.to_owned()
}

#[test]
fn named_templates() {
    assert_eq!(
        render(r#"{{define "T"}}<{{.name}}>{{end}}{{range .spec.items}}{{template "T" .}}{{end}}"#),
        "<x><y>"
    );
    assert_eq!(
        render(r#"{{block "B" .metadata}}{{.name}}{{end}} {{template "B" .spec.items}}"#)
            .split(": ")
            .last(),
        Some("can't evaluate field name in type []interface {}")
    );
    // A blank redefinition changes nothing; a second real one is an error.
    assert_eq!(
        render(r#"{{define "T"}}a{{end}}{{define "T"}} {{end}}{{template "T"}}"#),
        "a"
    );
    assert_eq!(
        render(r#"{{define "T"}}a{{end}}{{define "T"}}b{{end}}"#),
        "PARSE template: output:1: template: multiple definition of template \"T\""
    );
    assert_eq!(
        render(r#"{{define "T"}}[{{.}}]{{end}}{{template "T"}}"#),
        "[<no value>]"
    );
    assert_eq!(
        exec_error(r#"{{template "nope"}}"#),
        "template: output:1:11: executing \"output\" at <{{template \"nope\"}}>: template \"nope\" not defined"
    );
    assert_eq!(
        exec_error(r#"{{define "T"}}{{.x.y}}{{end}}{{template "T" .kind}}"#),
        "template: output:1:18: executing \"T\" at <.x.y>: can't evaluate field x in type string"
    );
    assert_eq!(
        exec_error(r#"{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}"#),
        "template: output:1:25: executing \"r\" at <{{template \"r\" .}}>: exceeded maximum template depth (100000)"
    );
    for (text, want) in [
        (
            r#"{{if 1}}{{define "x"}}{{end}}{{end}}"#,
            "unexpected <define> in command",
        ),
        (
            r#"{{define T}}{{end}}"#,
            "unexpected \"T\" in define clause",
        ),
        (
            r#"{{define "T"}}a{{else}}b{{end}}"#,
            "unexpected {{else}} in define clause",
        ),
        (r#"{{block "b"}}x{{end}}"#, "missing value for block clause"),
        (
            r#"{{$x := 1}}{{block "b" .}}{{$x}}{{end}}"#,
            "undefined variable \"$x\"",
        ),
    ] {
        assert_eq!(render(text), format!("PARSE template: output:1: {want}"));
    }
}

#[test]
fn break_and_continue() {
    let names = |cond: &str| {
        render(&format!(
            "{{{{range .spec.items}}}}{{{{if eq .name \"x\"}}}}{{{{{cond}}}}}{{{{end}}}}{{{{.name}}}}{{{{end}}}}"
        ))
    };
    assert_eq!(names("break"), "");
    assert_eq!(names("continue"), "y");
    assert_eq!(
        render("{{range .spec.items}}{{range 3}}{{.}}{{break}}{{end}}{{.name}}{{end}}"),
        "0x0y"
    );
    assert_eq!(
        render("{{break}}"),
        "PARSE template: output:1: {{break}} outside {{range}}"
    );
    assert_eq!(
        render("{{range .spec.items}}{{else}}{{continue}}{{end}}"),
        "PARSE template: output:1: {{continue}} outside {{range}}"
    );
}

#[test]
fn slice_js_call() {
    assert_eq!(
        render(
            "{{slice .metadata.name 1}} {{slice .spec.items 1}} {{len (slice .spec.items 0 1 1)}}"
        ),
        "m1 [map[name:y port:8080]] 1"
    );
    assert_eq!(
        render(r#"{{js "<a href='x'>" 1}}"#),
        r"\u003Ca href\u003D\'x\'\u003E1"
    );
    for (text, want) in [
        ("{{slice .kind 2 1}}", "invalid slice index: 2 > 1"),
        ("{{slice .kind 1 2 3}}", "cannot 3-index slice a string"),
        ("{{slice .nope 1}}", "slice of untyped nil"),
        ("{{slice .kind 99}}", "index out of range: 99"),
        (
            "{{slice .metadata 1}}",
            "can't slice item of type map[string]interface {}",
        ),
        ("{{call .kind 1}}", "non-function .kind of type string"),
        ("{{call .nope}}", "call of nil"),
    ] {
        let name = text[2..].split(' ').next().unwrap();
        assert!(
            exec_error(text).ends_with(&format!("error calling {name}: {want}")),
            "{text}: {}",
            exec_error(text)
        );
    }
}

#[test]
fn nil_arguments_and_uncomparable_values() {
    assert_eq!(
        render("{{html .nope}} {{js nil 2}} {{urlquery .metadata.annotations}}"),
        "&lt;no value&gt; \\u003Cno value\\u003E2 %3Cno+value%3E"
    );
    assert_eq!(render("{{eq .data nil}} {{eq .nope .data}}"), "false false");
    for (text, want) in [
        (
            "{{len nil}}",
            "reflect: call of reflect.Value.Type on zero Value",
        ),
        ("{{len .metadata.annotations}}", "len of nil pointer"),
        (
            "{{index .data .nope}}",
            "value is nil; should be of type string",
        ),
        (
            "{{index .spec.items nil}}",
            "cannot index slice/array with nil",
        ),
        ("{{eq .data 1}}", "incompatible types for comparison"),
        (
            "{{eq .metadata.labels .metadata.labels}}",
            "non-comparable type map[app.kubernetes.io/name:web tier:front]: map[string]interface {}",
        ),
        (
            "{{ne .spec.empty .data}}",
            "non-comparable types []: []interface {}, map[string]interface {}: map[a:1 b:2 secret:aHVudGVyMg==]",
        ),
    ] {
        assert!(
            exec_error(text).ends_with(want),
            "{text}: {}",
            exec_error(text)
        );
    }
}
