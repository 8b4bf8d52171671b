//! Field selector parsing, printing, matching and translation, against upstream's behaviour.

use api_types::fields::{FieldSelectorError, Operator, Selector, Set};

#[test]
fn parses_to_canonical_form() {
    let cases = [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a=b"),
        ("a!=b", "a!=b"),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("z=c,x=a", "x=a,z=c"),
        ("a=b,,c=d", "a=b,c=d"),
        ("a=b,", "a=b"),
        ("a=", "a="),
        ("metadata.name=x\\,y", "metadata.name=x\\,y"),
        ("a=b\\=c", "a=b\\=c"),
        ("a=b\\\\c", "a=b\\\\c"),
        ("spec.nodeName!=", "spec.nodeName!="),
    ];
    for (input, want) in cases {
        let s = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(s.to_string(), want, "input {input:?}");
        assert_eq!(
            Selector::parse(&s.to_string()).ok(),
            Some(s),
            "round trip {input:?}"
        );
    }
    let s = Selector::parse("a!=b,c==d").expect("valid");
    let r = s.requirements();
    assert_eq!(
        (r[0].field.as_str(), r[0].operator, r[0].value.as_str()),
        ("a", Operator::NotEquals, "b")
    );
    assert_eq!(
        (r[1].field.as_str(), r[1].operator, r[1].value.as_str()),
        ("c", Operator::Equals, "d")
    );
    let s = Selector::parse("a=x\\,y\\=z\\\\").expect("valid");
    assert_eq!(s.requirements()[0].value, "x,y=z\\");
}

#[test]
fn rejects_bad_input_with_upstream_messages() {
    let cases = [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a<b", "invalid selector: 'a<b'; can't understand 'a<b'"),
        (
            "a in (b)",
            "invalid selector: 'a in (b)'; can't understand 'a in (b)'",
        ),
        (
            "a=b=c",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "a==b==c",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "a=b\\c",
            "invalid field selector: invalid escape sequence: \\c",
        ),
        (
            "a=b\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
    ];
    for (input, want) in cases {
        match Selector::parse(input) {
            Ok(s) => panic!("{input:?} parsed as {s}"),
            Err(e) => assert_eq!(e.to_string(), want, "input {input:?}"),
        }
    }
}

#[test]
fn matches_field_sets() {
    let pod = Set::new()
        .with("metadata.name", "p1")
        .with("metadata.namespace", "default")
        .with("spec.nodeName", "")
        .with("status.phase", "Running");
    let cases = [
        ("", true),
        ("metadata.name=p1", true),
        ("metadata.name==p1", true),
        ("metadata.name=p2", false),
        ("metadata.name!=p2", true),
        ("metadata.name!=p1", false),
        ("spec.nodeName=", true),
        ("spec.nodeName!=", false),
        ("status.phase=Running,metadata.namespace=default", true),
        ("status.phase=Running,metadata.namespace=kube-system", false),
        // A field the set does not hold reads as "".
        ("spec.unknown=", true),
        ("spec.unknown=x", false),
        ("spec.unknown!=x", true),
    ];
    for (sel, want) in cases {
        let s = Selector::parse(sel).expect("valid");
        assert_eq!(s.matches(&pod), want, "{sel:?}");
        assert_eq!(s.matches(&pod.0), want, "{sel:?} on a map");
    }
}

#[test]
fn translates_against_supported_fields() {
    let supported = [
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "status.phase",
    ];
    let ok = Selector::parse("spec.nodeName=n1,status.phase!=Failed").expect("valid");
    assert_eq!(ok.translate(&supported), Ok(ok.clone()));
    let bad = Selector::parse("metadata.name=a,spec.foo=bar").expect("valid");
    let err = bad.translate(&supported).expect_err("unsupported");
    assert_eq!(err, FieldSelectorError::UnsupportedField("spec.foo".into()));
    assert_eq!(err.to_string(), "field label not supported: spec.foo");

    // Transform may rename fields (e.g. legacy aliases) or drop them.
    let renamed = Selector::parse("spec.host=n1,x=y")
        .expect("valid")
        .transform(|f, v| -> Result<_, FieldSelectorError> {
            Ok(match f {
                "spec.host" => ("spec.nodeName".to_string(), v.to_string()),
                _ => (String::new(), String::new()),
            })
        })
        .expect("no error");
    assert_eq!(renamed.to_string(), "spec.nodeName=n1");
}

#[test]
fn helpers() {
    let s = Selector::parse("spec.nodeName=n1,metadata.name!=x").expect("valid");
    assert_eq!(s.requires_exact_match("spec.nodeName"), Some("n1"));
    assert_eq!(s.requires_exact_match("metadata.name"), None);
    assert!(Selector::everything().is_empty());
    assert!(!s.is_empty());
    let one = Selector::one_term_equal("metadata.name", "a,b");
    assert_eq!(one.to_string(), "metadata.name=a\\,b");
    assert_eq!(Selector::parse(&one.to_string()).ok(), Some(one));
    let set: Set = [("b", "x=y"), ("a", "1")].into_iter().collect();
    assert_eq!(set.to_string(), "a=1,b=x\\=y");
    assert_eq!(set.as_selector().to_string(), "a=1,b=x\\=y");
    assert!(set.as_selector().matches(&set));
}
