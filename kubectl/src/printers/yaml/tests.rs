use super::*;
use serde_json::json;

#[test]
fn documents() {
    let obj = json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "a", "resourceVersion": "45", "creationTimestamp": "2026-11-22T04:37:20Z", "labels": {}},
        "data": {"x": "long value with spaces that goes on and on and on and on and on and on and on and on forever"},
        "list": [{"a": 1, "b": [1, 2]}, "s", [], {}],
        "flag": true,
        "none": null,
    });
    let want = "\
apiVersion: v1
data:
  x: long value with spaces that goes on and on and on and on and on and on and on
    and on forever
flag: true
kind: ConfigMap
list:
- a: 1
  b:
  - 1
  - 2
- s
- []
- {}
metadata:
  creationTimestamp: \"2026-11-22T04:37:20Z\"
  labels: {}
  name: a
  resourceVersion: \"45\"
none: null
";
    assert_eq!(to_go_yaml(&obj), want);
}

#[test]
fn scalar_styles() {
    let cases = [
        ("plain", "plain"),
        ("", "\"\""),
        ("123", "\"123\""),
        ("0x1F", "\"0x1F\""),
        ("1.5", "\"1.5\""),
        ("1e3", "\"1e3\""),
        ("true", "\"true\""),
        ("yes", "\"yes\""),
        ("null", "\"null\""),
        ("~", "\"~\""),
        ("1:20", "\"1:20\""),
        ("2024-01-02", "\"2024-01-02\""),
        ("a: b", "'a: b'"),
        ("it's: x", "'it''s: x'"),
        ("- x", "'- x'"),
        ("*star", "'*star'"),
        (" lead", "' lead'"),
        ("trail ", "'trail '"),
        ("a #b", "'a #b'"),
        ("a#b", "a#b"),
        ("tab\there", "\"tab\\there\""),
        ("1.2.3", "1.2.3"),
        ("v1.33", "v1.33"),
        ("nginx:1.27", "nginx:1.27"),
        ("http://x", "http://x"),
        ("line\nnext", "|-\n  line\n  next"),
        ("line\n", "|\n  line"),
    ];
    for (input, want) in cases {
        let got = to_go_yaml(&json!({"k": input}));
        assert_eq!(got, format!("k: {want}\n"), "{input:?}");
    }
}

#[test]
fn numbers_and_keys() {
    assert_eq!(
        to_go_yaml(&json!({"n": 0.5, "m": 3, "true": 1, "a b": 2})),
        "a b: 2\nm: 3\n\"n\": 0.5\n\"true\": 1\n"
    );
    let keys = json!({"item10": 1, "item9": 2, "a_b": 3, "aB": 4, "a-b": 5});
    assert_eq!(
        to_go_yaml(&keys),
        "a-b: 5\na_b: 3\naB: 4\nitem9: 2\nitem10: 1\n"
    );
}

/// kubeconfig files (`config view`, and what `config set-*` writes) go through this emitter
/// too: the shapes they hold, as upstream's go-yaml writes them.
#[test]
fn kubeconfig_shapes() {
    let cases = [
        (json!({"b": "", "a": null}), "a: null\nb: \"\"\n"),
        (
            json!({"clusters": [{"name": "c", "cluster": {"server": "https://x:1"}}]}),
            "clusters:\n- cluster:\n    server: https://x:1\n  name: c\n",
        ),
        (json!({"p": {}, "l": []}), "l: []\np: {}\n"),
        (
            json!({"v": "true", "num": "123", "t": "a: b", "n": "y"}),
            "\"n\": \"y\"\nnum: \"123\"\nt: 'a: b'\nv: \"true\"\n",
        ),
        (
            json!({"client-key-data": "DATA+OMITTED", "client-certificate": "c", "client-certificate-data": "x"}),
            "client-certificate: c\nclient-certificate-data: x\nclient-key-data: DATA+OMITTED\n",
        ),
    ];
    for (value, want) in cases {
        assert_eq!(to_go_yaml(&value), want, "{value}");
    }
}
