//! Label selector parsing, printing, matching and conversion, against upstream's behaviour.

use std::collections::BTreeMap;

use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement,
};
use api_types::labels::{Operator, Requirement, Selector, SelectorError, Set};

/// Label pairs of one test case.
type Pairs = &'static [(&'static str, &'static str)];

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn parses_to_canonical_form() {
    let cases = [
        ("", ""),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("z=c,x=a,y=b", "x=a,y=b,z=c"),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x==a"),
        ("  a  =  b  ", "a=b"),
        ("\ta\n==\rb", "a==b"),
        ("a", "a"),
        ("a,!b", "a,!b"),
        ("a in (y,x)", "a in (x,y)"),
        ("a in (x, y, x)", "a in (x,y)"),
        ("a notin (x)", "a notin (x)"),
        ("a in ()", "a in ()"),
        ("a in (,x)", "a in (,x)"),
        ("a in (x,)", "a in (,x)"),
        ("a in (x,,y)", "a in (,x,y)"),
        ("in=notin", "in=notin"),
        ("a in (in,notin)", "a in (in,notin)"),
        (
            "example.com/app=web,tier in (fe,be)",
            "example.com/app=web,tier in (be,fe)",
        ),
        ("env in(prod),!dbg", "!dbg,env in (prod)"),
    ];
    for (input, want) in cases {
        let s = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(s.to_string(), want, "input {input:?}");
        // The canonical form parses back to the same selector.
        assert_eq!(
            Selector::parse(&s.to_string()).ok(),
            Some(s),
            "round trip of {input:?}"
        );
    }
}

#[test]
fn rejects_bad_syntax_with_upstream_messages() {
    let qualified = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    let cases: Vec<(&str, String)> = vec![
        (
            "x=a||y=b",
            format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {LABEL_VALUE_MSG}"),
        ),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".into()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".into()),
        (
            "x<a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into(),
        ),
        ("a in x", "unable to parse requirement: found 'x' expected: '('".into()),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'".into()),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'".into()),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
        ("a,", "found '', expected: identifier after ','".into()),
        ("a,,b", "found ',', expected: identifier after ','".into()),
        (",a", "found ',', expected: !, identifier, or 'end of string'".into()),
        ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
        ("!", "unable to parse requirement: found '', expected: identifier".into()),
        ("a=(", "unable to parse requirement: found '(', expected: identifier".into()),
        (
            "a/b/c=d",
            format!("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": {qualified}"),
        ),
        (
            "-a",
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
        ),
        (
            "a=-b",
            format!("unable to parse requirement: values[0][a]: Invalid value: \"-b\": {LABEL_VALUE_MSG}"),
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
fn matches_like_upstream() {
    let cases: &[(&str, Pairs, bool)] = &[
        ("", &[("x", "y")], true),
        ("", &[], true),
        ("x=y", &[("x", "y")], true),
        ("x=y", &[("x", "z")], false),
        ("x=y", &[], false),
        ("x==y", &[("x", "y")], true),
        ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
        ("x=y,z=w", &[("x", "y")], false),
        ("x!=y", &[("x", "z")], true),
        ("x!=y", &[], true),
        ("x!=y", &[("x", "y")], false),
        ("x", &[("x", "")], true),
        ("x", &[("y", "z")], false),
        ("!x", &[("y", "z")], true),
        ("!x", &[("x", "z")], false),
        ("x in (a,b)", &[("x", "b")], true),
        ("x in (a,b)", &[("x", "c")], false),
        ("x in (a,b)", &[], false),
        ("x notin (a,b)", &[("x", "c")], true),
        ("x notin (a,b)", &[], true),
        ("x notin (a,b)", &[("x", "a")], false),
        ("x=", &[("x", "")], true),
        ("x=", &[], false),
        ("x in ()", &[("x", "")], true),
        ("x>1", &[("x", "2")], true),
        ("x>1", &[("x", "1")], false),
        ("x>1", &[("x", "a")], false),
        ("x>1", &[], false),
        ("x<1", &[("x", "-5")], true),
        ("x<1", &[("x", "1")], false),
    ];
    for (sel, labels, want) in cases {
        let s = Selector::parse(sel).expect("valid selector");
        assert_eq!(s.matches(&set(labels)), *want, "{sel:?} against {labels:?}");
        let as_set: Set = labels.iter().copied().collect();
        assert_eq!(s.matches(&as_set), *want, "{sel:?} against Set {labels:?}");
    }
}

#[test]
fn requirement_construction_errors() {
    let cases: Vec<(&str, Operator, Vec<&str>, &str)> = vec![
        (
            "x",
            Operator::In,
            vec![],
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "x",
            Operator::Equals,
            vec!["a", "b"],
            "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value",
        ),
        (
            "x",
            Operator::Exists,
            vec!["a"],
            "values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist",
        ),
        (
            "x",
            Operator::GreaterThan,
            vec!["1", "2"],
            "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
        ),
        (
            "",
            Operator::Exists,
            vec![],
            "key: Invalid value: \"\": name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ];
    for (key, op, vals, want) in cases {
        let err = Requirement::new(key, op, vals.clone()).expect_err("must fail");
        assert_eq!(err.to_string(), want, "{key:?} {op:?} {vals:?}");
    }
    let r = Requirement::new("x", Operator::In, ["b", "a", "b"]).expect("valid");
    assert_eq!(r.values(), ["a".to_string(), "b".to_string()]);
    assert_eq!(r.to_string(), "x in (a,b)");
}

fn expr(key: &str, op: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
    }
}

#[test]
fn converts_label_selector() {
    // nil selects nothing, empty selects everything.
    let nothing = Selector::from_label_selector(None).expect("nil");
    assert!(nothing.is_nothing());
    assert!(!nothing.matches(&set(&[])));
    assert!(!nothing.matches(&set(&[("a", "b")])));
    let all = Selector::from_label_selector(Some(&LabelSelector::default())).expect("empty");
    assert!(all.is_empty());
    assert!(all.matches(&set(&[])));
    assert!(all.matches(&set(&[("a", "b")])));

    let ls = LabelSelector {
        match_labels: Some(set(&[("app", "web")])),
        match_expressions: Some(vec![
            expr("tier", "In", Some(&["fe", "be"])),
            expr("env", "NotIn", Some(&["dev"])),
            expr("canary", "DoesNotExist", None),
            expr("owner", "Exists", Some(&[])),
        ]),
    };
    let s = Selector::from_label_selector(Some(&ls)).expect("valid");
    assert_eq!(
        s.to_string(),
        "app=web,!canary,env notin (dev),owner,tier in (be,fe)"
    );
    let cases: &[(&[(&str, &str)], bool)] = &[
        (&[("app", "web"), ("tier", "fe"), ("owner", "me")], true),
        (
            &[
                ("app", "web"),
                ("tier", "fe"),
                ("owner", "me"),
                ("env", "prod"),
            ],
            true,
        ),
        (
            &[
                ("app", "web"),
                ("tier", "fe"),
                ("owner", "me"),
                ("env", "dev"),
            ],
            false,
        ),
        (
            &[
                ("app", "web"),
                ("tier", "fe"),
                ("owner", "me"),
                ("canary", "1"),
            ],
            false,
        ),
        (&[("app", "web"), ("tier", "fe")], false),
        (&[("app", "db"), ("tier", "fe"), ("owner", "me")], false),
    ];
    for (labels, want) in cases {
        assert_eq!(s.matches(&set(labels)), *want, "{labels:?}");
    }

    let bad_op = LabelSelector {
        match_expressions: Some(vec![expr("a", "Foo", None)]),
        ..Default::default()
    };
    let err = Selector::from_label_selector(Some(&bad_op)).expect_err("bad operator");
    assert_eq!(err, SelectorError::UnknownOperator("Foo".into()));
    assert_eq!(
        err.to_string(),
        "\"Foo\" is not a valid label selector operator"
    );

    let empty_in = LabelSelector {
        match_expressions: Some(vec![expr("a", "In", None)]),
        ..Default::default()
    };
    let err = Selector::from_label_selector(Some(&empty_in)).expect_err("empty In");
    assert_eq!(
        err.to_string(),
        "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
    );

    let bad_value = LabelSelector {
        match_labels: Some(set(&[("a", "b c")])),
        ..Default::default()
    };
    let err = Selector::from_label_selector(Some(&bad_value)).expect_err("bad value");
    assert_eq!(
        err.to_string(),
        format!("values[0][a]: Invalid value: \"b c\": {LABEL_VALUE_MSG}")
    );
}

#[test]
fn set_helpers() {
    let s: Set = [("b", "2"), ("a", "1")].into_iter().collect();
    assert_eq!(s.to_string(), "a=1,b=2");
    assert_eq!(s.get("a"), "1");
    assert_eq!(s.get("zz"), "");
    assert!(s.has("b"));
    let sel = s.as_selector().expect("valid set");
    assert_eq!(sel.to_string(), "a=1,b=2");
    assert!(sel.matches(&s));
    assert_eq!(sel.requires_exact_match("a"), Some("1"));
    assert_eq!(sel.requires_exact_match("c"), None);

    assert_eq!(Set::parse("a=1, b=2").expect("parse"), s);
    assert!(Set::parse("a").is_err());
    assert!(Set::parse("a=b=c").is_err());
    assert!(Set::parse("a=-").is_err());

    let other: Set = [("a", "9"), ("c", "3")].into_iter().collect();
    assert!(s.conflicts(&other));
    assert_eq!(s.merge(&other).to_string(), "a=9,b=2,c=3");
    let disjoint: Set = [("c", "3")].into_iter().collect();
    assert!(!s.conflicts(&disjoint));
}
