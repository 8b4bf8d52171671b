//! Expected texts are what Go 1.24's text/template (kubectl 1.33) prints for the same
//! template and data.

use super::*;
use serde_json::json;

fn data() -> Value {
    json!({
        "kind": "ConfigMap",
        "metadata": {"name": "cm1", "labels": {"tier": "front", "app.kubernetes.io/name": "web"},
                     "annotations": null},
        "data": {"b": "2", "a": "1", "secret": "aHVudGVyMg=="},
        "spec": {"replicas": 3, "ratio": 0.5, "big": 1000000, "paused": false,
                 "items": [{"name": "x", "port": 80}, {"name": "y", "port": 8080}], "empty": []},
    })
}

fn render(text: &str) -> String {
    match GoTemplate::parse(text).map(|t| t.render(&data())) {
        Ok(Ok(out)) => out,
        Ok(Err(f)) => format!("EXEC {}", f.message),
        Err(e) => format!("PARSE {e}"),
    }
}

fn render_strict(text: &str) -> Result<String, Failure> {
    GoTemplate::parse(text)
        .unwrap()
        .allow_missing_keys(false)
        .render(&data())
}

#[test]
fn fields_and_printing() {
    assert_eq!(render("{{.metadata.name}}"), "cm1");
    assert_eq!(
        render("{{.spec.replicas}} {{.spec.ratio}} {{.spec.big}}"),
        "3 0.5 1000000"
    );
    assert_eq!(
        render("{{.metadata.labels}}"),
        "map[app.kubernetes.io/name:web tier:front]"
    );
    assert_eq!(
        render("{{.spec.items}}"),
        "[map[name:x port:80] map[name:y port:8080]]"
    );
    assert_eq!(
        render("{{.nope}} {{.nope.deeper}} {{.metadata.annotations}}"),
        "<no value> <no value> <no value>"
    );
    assert_eq!(render(r#"{{"a\tb"}}{{"\n"}}{{`raw\n`}}"#), "a\tb\nraw\\n");
}

#[test]
fn control_structures() {
    assert_eq!(
        render("{{range $k, $v := .data}}{{$k}}={{$v}};{{end}}"),
        "a=1;b=2;secret=aHVudGVyMg==;"
    );
    assert_eq!(
        render("{{range $i, $p := .spec.items}}{{$i}}:{{$p.name}} {{end}}"),
        "0:x 1:y "
    );
    assert_eq!(render("{{range .spec.empty}}x{{else}}none{{end}}"), "none");
    assert_eq!(render("{{range .nope}}x{{else}}none{{end}}"), "none");
    assert_eq!(
        render("{{range .spec.items}}{{.port}}{{else}}none{{end}}"),
        "808080"
    );
    assert_eq!(
        render(r#"{{if eq .kind "Pod"}}pod{{else if eq .kind "ConfigMap"}}cm{{else}}?{{end}}"#),
        "cm"
    );
    assert_eq!(
        render("{{with .spec}}{{.replicas}}{{end}}{{with .nope}}x{{else}}no{{end}}"),
        "3no"
    );
    assert_eq!(
        render("{{$n := .kind}}{{$n}} {{$n = \"b\"}}{{$n}}"),
        "ConfigMap b"
    );
    assert_eq!(
        render("{{- /* note */ -}}\n  {{.kind -}}  \n x {{- .kind}}"),
        "ConfigMapxConfigMap"
    );
    assert_eq!(render("{{(index .spec.items 1).name}}"), "y");
}

#[test]
fn functions() {
    assert_eq!(
        render(r#"{{index .metadata.labels "app.kubernetes.io/name"}}"#),
        "web"
    );
    assert_eq!(render(r#"{{index .data "zz"}}"#), "<no value>");
    assert_eq!(
        render("{{len .data}} {{len .spec.items}} {{len .kind}}"),
        "3 2 9"
    );
    assert_eq!(render("{{.data.secret | base64decode}}"), "hunter2");
    assert_eq!(
        render(r#"{{exists . "spec" "items" 1 "port"}} {{exists . "spec" "items" 2}}"#),
        "true false"
    );
    assert_eq!(
        render(
            "{{and .spec.replicas .spec.paused}} {{or .spec.paused .kind}} {{not .spec.paused}}"
        ),
        "false ConfigMap true"
    );
    assert_eq!(
        render(
            "{{gt .spec.replicas 2}} {{le .spec.ratio 0.5}} {{ne .kind \"x\"}} {{lt \"a\" \"b\"}}"
        ),
        "true true true true"
    );
    assert_eq!(
        render(r#"{{printf "%-5s|%5d|%05.1f|%q|%x" .kind .spec.replicas .spec.ratio "a\"b" 255}}"#),
        "ConfigMap|    3|000.5|\"a\\\"b\"|ff"
    );
    assert_eq!(
        render(r#"{{printf "%d %s" "x"}} {{printf "%f" .spec.replicas}} {{printf "%d" 1 2}}"#),
        "%!d(string=x) %!s(MISSING) %!f(int64=3) 1%!(EXTRA int=2)"
    );
    assert_eq!(
        render("{{print 1 2 \"a\" \"b\" 3}} {{println 1 \"a\"}}"),
        "1 2ab3 1 a\n"
    );
    assert_eq!(
        render("{{1e6}} {{0.000012}} {{printf \"%e|%g|%v\" 1234.5678 100000.0 .nope}}"),
        "1e+06 1.2e-05 1.234568e+03|100000|<nil>"
    );
    assert_eq!(
        render(r#"{{html "<a&b>"}} {{urlquery "a b/c"}}"#),
        "&lt;a&amp;b&gt; a+b%2Fc"
    );
}

#[test]
fn errors_read_as_go_writes_them() {
    for (text, err) in [
        (
            "{{.x}",
            "PARSE template: output:1: bad character U+007D '}'",
        ),
        (
            "{{foo .x}}",
            "PARSE template: output:1: function \"foo\" not defined",
        ),
        ("{{if .x}}", "PARSE template: output:1: unexpected EOF"),
        (
            "{{$x}}",
            "PARSE template: output:1: undefined variable \"$x\"",
        ),
        ("{{end}}", "PARSE template: output:1: unexpected {{end}}"),
        (
            "a\n{{\"abc}}",
            "PARSE template: output:2: unterminated quoted string",
        ),
        (
            "{{3x}}",
            "PARSE template: output:1: bad number syntax: \"3x\"",
        ),
        (
            "{{}}",
            "PARSE template: output:1: missing value for command",
        ),
        (
            "{{.x.y}} {{.metadata.name.z}}",
            "EXEC error executing template \"{{.x.y}} {{.metadata.name.z}}\": template: output:1:20: executing \"output\" at <.metadata.name.z>: can't evaluate field z in type interface {}",
        ),
        (
            "{{index .spec.items 5}}",
            "EXEC error executing template \"{{index .spec.items 5}}\": template: output:1:2: executing \"output\" at <index .spec.items 5>: error calling index: index out of range: 5",
        ),
        (
            "{{range .kind}}{{end}}",
            "EXEC error executing template \"{{range .kind}}{{end}}\": template: output:1:8: executing \"output\" at <.kind>: range can't iterate over ConfigMap",
        ),
        (
            "{{eq .kind 1}}",
            "EXEC error executing template \"{{eq .kind 1}}\": template: output:1:2: executing \"output\" at <eq .kind 1>: error calling eq: incompatible types for comparison",
        ),
    ] {
        assert_eq!(render(text), err, "{text}");
    }
}

#[test]
fn missing_keys_fail_when_not_allowed() {
    let failure = render_strict("ab{{.x}}").unwrap_err();
    assert_eq!(
        failure.message,
        "error executing template \"ab{{.x}}\": template: output:1:4: executing \"output\" at <.x>: map has no entry for key \"x\""
    );
    assert!(
        failure
            .stdout
            .starts_with("abError executing template: template: output:1:4:")
    );
    assert!(failure.stdout.contains(
        "\ttemplate was:\n\t\tab{{.x}}\n\traw data was:\n\t\t{\"data\":{\"a\":\"1\",\"b\":\"2\","
    ));
    assert!(failure.stdout.contains("\tobject given to template engine was:\n\t\tmap[data:map[a:1 b:2 secret:aHVudGVyMg==] kind:ConfigMap metadata:map[annotations:<nil> labels:"));
    assert!(failure.stdout.ends_with("]]\n\n"));
    assert_eq!(render_strict("{{.metadata.name}}").unwrap(), "cm1");
}

#[test]
fn go_json_escapes_html() {
    assert_eq!(
        value::go_json_compact(&json!({"b": "<&>", "a": [1, 0.5, null, true]})),
        r#"{"a":[1,0.5,null,true],"b":"\u003c\u0026\u003e"}"#
    );
}

#[test]
fn flags() {
    let ok = |f: &str, t: Option<&str>| from_flags(f, t, true).map(|r| r.map(|t| t.raw));
    assert_eq!(ok("go-template={{.a}}", None).unwrap().unwrap(), "{{.a}}");
    assert_eq!(ok("template={{.a}}", None).unwrap().unwrap(), "{{.a}}");
    assert_eq!(
        ok("go-template", Some("{{.b}}")).unwrap().unwrap(),
        "{{.b}}"
    );
    assert!(ok("json", None).is_none());
    assert!(ok("jsonpath={.a}", None).is_none());
    assert_eq!(
        ok("go-template", None).unwrap().unwrap_err().to_string(),
        "template format specified but no template given"
    );
    assert_eq!(
        ok("go-template-file=/nonexistent/t", None)
            .unwrap()
            .unwrap_err()
            .to_string(),
        "error reading --template /nonexistent/t, open /nonexistent/t: no such file or directory"
    );
    assert_eq!(
        ok("go-template={{.a}", None)
            .unwrap()
            .unwrap_err()
            .to_string(),
        "error parsing template {{.a}, template: output:1: bad character U+007D '}'"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmpl");
    std::fs::write(&path, "{{.kind}}\n").unwrap();
    let t = from_flags("templatefile", path.to_str(), true)
        .unwrap()
        .unwrap();
    assert_eq!(t.render(&data()).unwrap(), "ConfigMap\n");
}

#[path = "tests_templates.rs"]
mod templates;
