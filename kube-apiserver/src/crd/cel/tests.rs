//! The rules of a schema, compiled and run on objects as the apiserver does.

use super::*;
use serde_json::json;

fn schema_path() -> FieldPath {
    FieldPath::from_names(&["spec", "versions"])
        .index(0)
        .child("schema")
        .child("openAPIV3Schema")
}

fn compile(schema: Value) -> CelValidator {
    match CelValidator::compile(&schema, &schema_path()) {
        Ok(Some(v)) => v,
        Ok(None) => panic!("no rules found"),
        Err(errs) => panic!("compile errors: {:?}", messages(&errs)),
    }
}

fn compile_errors(schema: Value) -> Vec<String> {
    match CelValidator::compile(&schema, &schema_path()) {
        Err(errs) => messages(&errs),
        Ok(_) => panic!("compiled without errors"),
    }
}

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.iter()
        .map(|e| format!("{}: {}", e.field, e.body()))
        .collect()
}

/// A root schema whose `spec` has `props` and `rules`.
fn spec_schema(props: Value, rules: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": props,
                "x-kubernetes-validations": rules,
            }
        }
    })
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "foo"}, "spec": spec})
}

#[test]
fn a_schema_without_rules_compiles_to_none() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
    assert!(
        CelValidator::compile(&schema, &schema_path())
            .unwrap()
            .is_none()
    );
}

#[test]
fn rules_pass_and_fail_on_create() {
    let v = compile(spec_schema(
        json!({"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}),
        json!([{"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}]),
    ));
    assert!(
        v.validate(&object(json!({"replicas": 1, "maxReplicas": 3})), None)
            .is_empty()
    );
    let errs = v.validate(&object(json!({"replicas": 5, "maxReplicas": 3})), None);
    assert_eq!(
        messages(&errs),
        ["spec: Invalid value: \"object\": replicas must not exceed maxReplicas"]
    );
}

#[test]
fn a_rule_without_message_reports_the_rule() {
    let v = compile(spec_schema(
        json!({"name": {"type": "string"}}),
        json!([{"rule": "self.name.startsWith('a')"}]),
    ));
    let errs = v.validate(&object(json!({"name": "bob"})), None);
    assert_eq!(
        messages(&errs),
        ["spec: Invalid value: \"object\": failed rule: self.name.startsWith('a')"]
    );
}

#[test]
fn root_rules_see_kind_and_the_name_only() {
    let schema = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.size() <= 5 && self.kind == 'Foo'"},
        ],
        "properties": {"spec": {"type": "object"}},
    });
    let v = compile(schema);
    let mut obj = object(json!({}));
    obj["metadata"]["labels"] = json!({"a": "b"});
    assert!(v.validate(&obj, None).is_empty());
    obj["metadata"]["name"] = json!("toolong");
    assert_eq!(
        messages(&v.validate(&obj, None)),
        [
            "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.size() <= 5 && self.kind == 'Foo'"
        ]
    );
}

#[test]
fn transition_rules_run_on_update_only() {
    let v = compile(spec_schema(
        json!({"replicas": {"type": "integer"}}),
        json!([{"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not decrease"}]),
    ));
    let old = object(json!({"replicas": 3}));
    let smaller = object(json!({"replicas": 2}));
    // Not on create, where there is no old value.
    assert!(v.validate(&smaller, None).is_empty());
    assert!(
        v.validate(&object(json!({"replicas": 4})), Some(&old))
            .is_empty()
    );
    assert_eq!(
        messages(&v.validate(&smaller, Some(&old))),
        ["spec: Invalid value: \"object\": replicas may not decrease"]
    );
}

#[test]
fn transition_rules_skip_values_new_in_the_update() {
    let schema = spec_schema(
        json!({"mode": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "mode is immutable"}]}}),
        json!([]),
    );
    let v = compile(schema);
    let old = object(json!({}));
    assert!(
        v.validate(&object(json!({"mode": "a"})), Some(&old))
            .is_empty()
    );
    let old = object(json!({"mode": "a"}));
    assert_eq!(
        messages(&v.validate(&object(json!({"mode": "b"})), Some(&old))),
        ["spec.mode: Invalid value: \"string\": mode is immutable"]
    );
}

#[test]
fn optional_old_self_runs_on_create_too() {
    let v = compile(spec_schema(
        json!({"mode": {"type": "string"}}),
        json!([{
            "rule": "!oldSelf.hasValue() || self.mode == oldSelf.value().mode",
            "message": "mode is immutable",
            "optionalOldSelf": true,
        }]),
    ));
    assert!(v.validate(&object(json!({"mode": "a"})), None).is_empty());
    let old = object(json!({"mode": "a"}));
    assert_eq!(
        v.validate(&object(json!({"mode": "b"})), Some(&old)).len(),
        1
    );
}

#[test]
fn rules_on_list_items_run_per_item() {
    let schema = spec_schema(
        json!({"ports": {"type": "array", "items": {
            "type": "object",
            "properties": {"port": {"type": "integer"}, "name": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.port > 0 && self.port < 65536", "message": "port out of range"}],
        }}}),
        json!([]),
    );
    let v = compile(schema);
    let errs = v.validate(
        &object(json!({"ports": [{"port": 80}, {"port": 0}, {"port": 70000}]})),
        None,
    );
    assert_eq!(
        messages(&errs),
        [
            "spec.ports[1]: Invalid value: \"object\": port out of range",
            "spec.ports[2]: Invalid value: \"object\": port out of range",
        ]
    );
}

#[test]
fn map_lists_pair_old_and_new_items_by_key() {
    let schema = spec_schema(
        json!({"ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}],
            }
        }}),
        json!([]),
    );
    let v = compile(schema);
    let old = object(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}));
    // Reordered and extended: paired by name, so nothing changed.
    let reordered = object(json!({"ports": [
        {"name": "c", "port": 9}, {"name": "b", "port": 2}, {"name": "a", "port": 1}]}));
    assert!(v.validate(&reordered, Some(&old)).is_empty());
    let changed = object(json!({"ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}]}));
    assert_eq!(
        messages(&v.validate(&changed, Some(&old))),
        ["spec.ports[0]: Invalid value: \"object\": port is immutable"]
    );
}

#[test]
fn rules_on_map_values_run_per_value() {
    let schema = spec_schema(
        json!({"limits": {
            "type": "object",
            "additionalProperties": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
        }}),
        json!([]),
    );
    let v = compile(schema);
    let errs = v.validate(&object(json!({"limits": {"cpu": 1, "memory": -1}})), None);
    assert_eq!(
        messages(&errs),
        ["spec.limits[memory]: Invalid value: \"integer\": failed rule: self >= 0"]
    );
}

#[test]
fn message_expression_gives_the_message() {
    let v = compile(spec_schema(
        json!({"replicas": {"type": "integer"}, "name": {"type": "string"}}),
        json!([{
            "rule": "self.replicas < 10",
            "message": "static",
            "messageExpression": "'replicas is ' + string(self.replicas) + ', must be below 10'",
        }, {
            "rule": "self.replicas < 15",
            // The checker cannot type optional values: it must not refuse this.
            "messageExpression": "'was ' + optional.of(self).value().name",
        }, {
            "rule": "self.replicas < 20",
            "message": "below twenty",
            // Fails at run time (no such key): the static message is used.
            "messageExpression": "'name ' + self.name",
        }]),
    ));
    let errs = v.validate(&object(json!({"replicas": 25})), None);
    assert_eq!(
        messages(&errs),
        [
            "spec: Invalid value: \"object\": replicas is 25, must be below 10",
            "spec: Invalid value: \"object\": failed rule: self.replicas < 15",
            "spec: Invalid value: \"object\": below twenty",
        ]
    );
}

#[test]
fn reason_and_field_path_shape_the_error() {
    let v = compile(spec_schema(
        json!({"replicas": {"type": "integer"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
        json!([
            {"rule": "self.replicas != 0", "message": "must be set", "reason": "FieldValueRequired", "fieldPath": ".replicas"},
            {"rule": "self.replicas < 100", "message": "too many", "reason": "FieldValueForbidden"},
            {"rule": "!('x' in self.labels)", "reason": "FieldValueDuplicate", "fieldPath": ".labels['x']"},
        ]),
    ));
    let errs = v.validate(&object(json!({"replicas": 0, "labels": {"x": "y"}})), None);
    assert_eq!(
        messages(&errs),
        [
            "spec.replicas: Required value: must be set",
            "spec.labels[x]: Duplicate value: \"object\"",
        ]
    );
    let errs = v.validate(&object(json!({"replicas": 100, "labels": {}})), None);
    assert_eq!(messages(&errs), ["spec: Forbidden: too many"]);
    assert_eq!(
        errs.iter().next().unwrap().error_type.reason(),
        "FieldValueForbidden"
    );
}

#[test]
fn unchanged_values_are_ratcheted() {
    let v = compile(spec_schema(
        json!({"name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 4"}]},
               "other": {"type": "string"}}),
        json!([]),
    ));
    // A value that became invalid under a newer rule may stay as it was.
    let old = object(json!({"name": "toolong", "other": "a"}));
    let update = object(json!({"name": "toolong", "other": "b"}));
    assert!(v.validate(&update, Some(&old)).is_empty());
    let changed = object(json!({"name": "toolonger", "other": "b"}));
    assert_eq!(v.validate(&changed, Some(&old)).len(), 1);
}

#[test]
fn evaluation_errors_are_reported_not_raised() {
    let v = compile(spec_schema(
        json!({"a": {"type": "integer"}, "b": {"type": "integer"}, "x": {"x-kubernetes-int-or-string": true}}),
        json!([
            {"rule": "self.a / self.b > 0"},
            {"rule": "self.x > 1"},
            {"rule": "self.a > 0"},
        ]),
    ));
    let errs = messages(&v.validate(&object(json!({"a": 1, "b": 0, "x": "str"})), None));
    assert_eq!(
        errs[0],
        "spec: Invalid value: \"object\": division by zero evaluating rule: self.a / self.b > 0"
    );
    assert!(
        errs[1].contains("call arguments did not match a supported operator, function or macro signature for rule: self.x > 1"),
        "{errs:?}"
    );
    // A missing optional field is a "no such key" at run time, as upstream.
    let errs = messages(&v.validate(&object(json!({"b": 1, "x": 2})), None));
    assert_eq!(
        errs,
        [
            "spec: Invalid value: \"object\": no such key: a evaluating rule: self.a / self.b > 0",
            "spec: Invalid value: \"object\": no such key: a evaluating rule: self.a > 0",
        ]
    );
}

#[test]
fn null_values_are_not_validated() {
    let v = compile(spec_schema(
        json!({"name": {"type": "string", "nullable": true, "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}}),
        json!([]),
    ));
    assert!(v.validate(&object(json!({"name": null})), None).is_empty());
    assert!(v.validate(&json!(null), None).is_empty());
    assert!(v.validate(&json!("not an object"), None).is_empty());
}

#[test]
fn escaped_property_names_and_common_functions() {
    let v = compile(spec_schema(
        json!({
            "x-name": {"type": "string"},
            "namespace": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": "number"},
            "timeout": {"type": "string", "format": "duration"},
            "url": {"type": "string", "format": "uri"},
            "enabled": {"type": "boolean"},
        }),
        json!([
            {"rule": "self.x__dash__name.matches('^[a-z]+$')"},
            {"rule": "self.__namespace__.lowerAscii() == self.__namespace__"},
            {"rule": "self.items.all(i, i.size() > 0) && self.items.exists_one(i, i == 'a')"},
            {"rule": "self.items.filter(i, i.startsWith('b')).size() == 1"},
            {"rule": "self.items.map(i, i.size()).sum() == 3"},
            {"rule": "self.ratio > 0.5"},
            {"rule": "self.timeout < duration('1h')"},
            {"rule": "self.items.isSorted()"},
            {"rule": "cel.bind(first, self.items[0], first == 'a')"},
            // Holds on both objects: checks that two-variable forms compile and run.
            {"rule": "self.items.all(i, v, i >= 0 && v.size() > 0)"},
            // A string of format uri is a plain string: fit for a message.
            {"rule": "self.enabled", "messageExpression": "self.url"},
        ]),
    ));
    let good = object(json!({
        "x-name": "abc", "namespace": "ns", "items": ["a", "b", "c"],
        "ratio": 1, "timeout": "30m", "url": "https://a", "enabled": true,
    }));
    assert_eq!(messages(&v.validate(&good, None)), Vec::<String>::new());
    let bad = object(json!({
        "x-name": "ABC", "namespace": "NS", "items": ["c", "b", "bb"],
        "ratio": 0, "timeout": "2h", "url": "https://b", "enabled": false,
    }));
    let errs = messages(&v.validate(&bad, None));
    assert_eq!(errs.len(), 10, "{errs:#?}");
    assert_eq!(errs[9], "spec: Invalid value: \"object\": https://b");
}

#[test]
fn compile_errors_carry_their_paths() {
    let errs = compile_errors(spec_schema(
        json!({"replicas": {"type": "integer"}, "ports": {"type": "array", "items": {
            "type": "object", "properties": {"port": {"type": "integer"}}}}}),
        json!([
            {"rule": "self.replicas >"},
            {"rule": "self.nope > 1"},
            {"rule": "self.replicas + 1"},
            {"rule": "foo(self.replicas)"},
            {"rule": "self.replicas > 1", "messageExpression": "self.replicas"},
            {"rule": "self.ports.all(p, p.prot > 0)"},
            {"rule": "cel.bind(p, self.ports[0], p.prot > 0)"},
        ]),
    ));
    let base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(errs.len(), 7, "{errs:#?}");
    assert!(
        errs[0].starts_with(&format!(
            "{base}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.replicas >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:"
        )),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].starts_with(&format!("{base}[1].rule: Invalid value: "))
            && errs[1].contains("compilation failed: ERROR: <input>:1:")
            && errs[1].contains("undefined field 'nope'"),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].ends_with(": cel expression must evaluate to a bool"),
        "{}",
        errs[2]
    );
    assert!(
        errs[3].contains("undeclared reference to 'foo' (in container '')"),
        "{}",
        errs[3]
    );
    assert!(
        errs[4].starts_with(&format!("{base}[4].messageExpression: Invalid value: "))
            && errs[4].ends_with("messageExpression must evaluate to a string"),
        "{}",
        errs[4]
    );
    // Comprehension variables take the type of the list's items.
    assert!(errs[5].contains("undefined field 'prot'"), "{}", errs[5]);
}

#[test]
fn rule_fields_are_checked() {
    let errs = compile_errors(spec_schema(
        json!({"replicas": {"type": "integer"}}),
        json!([
            {"rule": "  "},
            {"rule": "true", "message": " "},
            {"rule": "true", "message": "a\nb"},
            {"rule": "true &&\ntrue"},
            {"rule": "true", "reason": "FieldValueWrong"},
            {"rule": "true", "fieldPath": ".nope"},
            {"rule": "true", "messageExpression": " "},
        ]),
    ));
    let base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        errs,
        [
            format!("{base}[0].rule: Required value: rule is not specified"),
            format!(
                "{base}[1].message: Invalid value: \" \": message must be non-empty if specified"
            ),
            format!(
                "{base}[2].message: Invalid value: \"a\\nb\": message must not contain line breaks"
            ),
            format!(
                "{base}[3].message: Required value: message must be specified if rule contains line breaks"
            ),
            format!(
                "{base}[4].reason: Unsupported value: \"FieldValueWrong\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
            ),
            format!(
                "{base}[5].fieldPath: Invalid value: \".nope\": fieldPath must be a valid path"
            ),
            format!(
                "{base}[6].messageExpression: Required value: messageExpression must be non-empty if specified"
            ),
        ]
    );
}

#[test]
fn old_self_under_a_set_list_is_refused() {
    let errs = compile_errors(spec_schema(
        json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
        }}}),
        json!([]),
    ));
    assert_eq!(
        errs,
        [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags]"
        ]
    );
}

#[test]
fn expensive_rules_are_refused_at_run_time_not_run() {
    let v = compile(spec_schema(
        json!({"items": {"type": "array", "items": {"type": "integer"}}}),
        json!([
            {"rule": "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))"},
            {"rule": "self.items.size() >= 0"},
        ]),
    ));
    let small = object(json!({"items": [1, 2, 3]}));
    assert!(v.validate(&small, None).is_empty());
    let items: Vec<i64> = (0..2000).collect();
    let big = object(json!({ "items": items }));
    let errs = messages(&v.validate(&big, None));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains(
            "no further validation rules will be run due to call cost exceeds limit for rule"
        ),
        "{errs:?}"
    );
}

#[test]
fn validator_is_shareable() {
    fn assert_send_sync<T: Send + Sync + std::fmt::Debug>() {}
    assert_send_sync::<CelValidator>();
}

#[test]
fn rules_may_not_read_metadata_beyond_the_name() {
    let schema = json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.labels.size() > 0"}],
        "properties": {"spec": {"type": "object"}},
    });
    let errs = compile_errors(schema);
    assert!(
        errs[0].starts_with(
            "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: "
        ) && errs[0].contains("undefined field 'labels'"),
        "{errs:?}"
    );
}

#[test]
fn preserved_unknown_fields_are_not_visible_to_rules() {
    let errs = compile_errors(spec_schema(
        json!({"config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "string"}}}}),
        json!([{"rule": "has(self.config.known) || has(self.config.unknown)"}]),
    ));
    assert!(errs[0].contains("undefined field 'unknown'"), "{errs:?}");
    // Untyped preserved values are dynamic: anything may be read from them.
    let v = compile(spec_schema(
        json!({"raw": {"x-kubernetes-preserve-unknown-fields": true}}),
        json!([{"rule": "!has(self.raw) || self.raw.a == 1"}]),
    ));
    assert!(
        v.validate(&object(json!({"raw": {"a": 1}})), None)
            .is_empty()
    );
    assert_eq!(v.validate(&object(json!({"raw": {"a": 2}})), None).len(), 1);
}

#[test]
fn compile_errors_are_shaped_as_cel_go_prints_them() {
    let errs = compile_errors(spec_schema(
        json!({"replicas": {"type": "integer"}}),
        json!([{"rule": "self.replicas.foo == 1 || y"}]),
    ));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].ends_with(
            "compilation failed: ERROR: <input>:1:14: type 'int' does not support field selection\n | self.replicas.foo == 1 || y\n | .............^\nERROR: <input>:1:27: undeclared reference to 'y' (in container '')\n | self.replicas.foo == 1 || y\n | ..........................^"
        ),
        "{}",
        errs[0]
    );
}

#[test]
fn embedded_resources_show_their_kind_and_name_only() {
    let v = compile(spec_schema(
        json!({"template": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [
                {"rule": "self.kind == 'Pod' && self.metadata.name.startsWith('p')"},
                ],
        }}),
        json!([]),
    ));
    let template = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pod", "labels": {"a": "b"}}, "spec": {}});
    assert!(
        v.validate(&object(json!({ "template": template })), None)
            .is_empty()
    );
    let other = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pod"}});
    assert_eq!(
        v.validate(&object(json!({ "template": other })), None)
            .len(),
        1
    );
}

#[test]
fn int_or_string_values_keep_their_json_type() {
    let v = compile(spec_schema(
        json!({"port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [
            {"rule": "type(self) == int ? self > 0 : self.matches('^[a-z]+$')"},
        ]}}),
        json!([]),
    ));
    assert!(v.validate(&object(json!({"port": 80})), None).is_empty());
    assert!(
        v.validate(&object(json!({"port": "http"})), None)
            .is_empty()
    );
    assert_eq!(v.validate(&object(json!({"port": 0})), None).len(), 1);
    assert_eq!(v.validate(&object(json!({"port": "HTTP"})), None).len(), 1);
}

/// Rules in the style of widely used CRDs (Gateway API) compile and judge as upstream does.
#[test]
fn gateway_api_style_rules() {
    let filter = json!({
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"type": "string"},
            "requestRedirect": {"type": "object", "properties": {"port": {"type": "integer"}}},
            "urlRewrite": {"type": "object", "properties": {"hostname": {"type": "string"}}},
        },
        "x-kubernetes-validations": [
            {"message": "filter.requestRedirect must be specified for RequestRedirect filter.type",
             "rule": "!(!has(self.requestRedirect) && self.type == 'RequestRedirect')"},
            {"message": "filter.requestRedirect must be nil if the filter.type is not RequestRedirect",
             "rule": "!(has(self.requestRedirect) && self.type != 'RequestRedirect')"},
        ],
    });
    let path = json!({
        "type": "object",
        "properties": {"type": {"type": "string"}, "value": {"type": "string", "maxLength": 1024}},
        "x-kubernetes-validations": [
            {"message": "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']",
             "rule": "(self.type in ['Exact','PathPrefix']) ? self.value.startsWith('/') : true"},
            {"message": "must not contain '//' when type one of ['Exact', 'PathPrefix']",
             "rule": "(self.type in ['Exact','PathPrefix']) ? !self.value.contains('//') : true"},
            {"message": "must only contain valid characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) for types ['Exact', 'PathPrefix']",
             "rule": "(self.type in ['Exact','PathPrefix']) ? self.value.matches(r\"\"\"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$\"\"\") : true"},
        ],
    });
    let rule = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "filters": {"type": "array", "maxItems": 16, "items": filter,
                "x-kubernetes-validations": [
                    {"message": "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both",
                     "rule": "!(self.exists(f, f.type == 'RequestRedirect') && self.exists(f, f.type == 'URLRewrite'))"},
                    {"message": "RequestRedirect filter cannot be repeated",
                     "rule": "self.filter(f, f.type == 'RequestRedirect').size() <= 1"},
                ]},
            "matches": {"type": "array", "maxItems": 64, "items": {
                "type": "object", "properties": {"path": path}}},
        },
    });
    let v = compile(spec_schema(
        json!({
            "hostnames": {"type": "array", "maxItems": 16, "items": {"type": "string"}},
            "rules": {"type": "array", "maxItems": 16, "items": rule,
                "x-kubernetes-validations": [
                    {"message": "Rule name must be unique within the route",
                     "rule": "self.all(l1, !has(l1.name) || self.exists_one(l2, has(l2.name) && l1.name == l2.name))"},
                ]},
        }),
        json!([
            {"message": "While 16 rules and 64 matches per rule are allowed, the total number of matches across all rules in a route must be less than 128",
             "rule": "(self.rules.size() > 0 ? self.rules[0].matches.size() : 0) + (self.rules.size() > 1 ? self.rules[1].matches.size() : 0) <= 128"},
        ]),
    ));
    let good = object(json!({"rules": [{
        "matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
        "filters": [{"type": "RequestRedirect", "requestRedirect": {"port": 8080}}],
    }]}));
    assert_eq!(messages(&v.validate(&good, None)), Vec::<String>::new());
    let bad = object(json!({"rules": [{
        "matches": [{"path": {"type": "Exact", "value": "api//x"}}],
        "filters": [
            {"type": "RequestRedirect"},
            {"type": "URLRewrite", "requestRedirect": {}},
        ],
    }]}));
    assert_eq!(
        messages(&v.validate(&bad, None)),
        [
            "spec.rules[0].filters: Invalid value: \"array\": May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both",
            "spec.rules[0].filters[0]: Invalid value: \"object\": filter.requestRedirect must be specified for RequestRedirect filter.type",
            "spec.rules[0].filters[1]: Invalid value: \"object\": filter.requestRedirect must be nil if the filter.type is not RequestRedirect",
            "spec.rules[0].matches[0].path: Invalid value: \"object\": value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']",
            "spec.rules[0].matches[0].path: Invalid value: \"object\": must not contain '//' when type one of ['Exact', 'PathPrefix']",
        ]
    );
}

#[test]
fn rules_inside_all_of_apply_to_the_same_values() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
            "allOf": [{
                "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min above max"}],
                "properties": {"min": {"x-kubernetes-validations": [{"rule": "self >= 0", "message": "negative"}]}},
            }],
        }},
    });
    let v = compile(schema);
    assert!(
        v.validate(&object(json!({"min": 1, "max": 2})), None)
            .is_empty()
    );
    assert_eq!(
        messages(&v.validate(&object(json!({"min": -3, "max": -5})), None)),
        [
            "spec: Invalid value: \"object\": min above max",
            "spec.min: Invalid value: \"integer\": negative",
        ]
    );
    let errs = compile_errors(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "allOf": [{"x-kubernetes-validations": [{"rule": "self.nope"}]}]}},
    }));
    assert!(
        errs[0].starts_with("spec.versions[0].schema.openAPIV3Schema.properties[spec].allOf[0].x-kubernetes-validations[0].rule: "),
        "{errs:?}"
    );
}

#[test]
fn set_and_map_lists_compare_regardless_of_order() {
    let v = compile(spec_schema(
        json!({
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "tags are immutable"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "order": {"type": "array", "items": {"type": "string"}},
        }),
        json!([
            {"rule": "self.ports == oldSelf.ports", "message": "ports are immutable"},
            {"rule": "!(self.order != oldSelf.order)", "message": "order is immutable"},
            {"rule": "!(self.tags != oldSelf.tags)", "message": "tags differ"},
            // `+` merges: a set gains only what it lacks, a map list replaces by key.
            {"rule": "(self.tags + ['a', 'z']).size() <= 3"},
            {"rule": "(self.ports + [{'name': 'x', 'port': 9}]).size() == self.ports.size() + (self.ports.exists(p, p.name == 'x') ? 0 : 1)"},
        ]),
    ));
    let old = object(json!({
        "tags": ["a", "b"],
        "ports": [{"name": "x", "port": 1}, {"name": "y", "port": 2}],
        "order": ["a", "b"],
    }));
    let reordered = object(json!({
        "tags": ["b", "a"],
        "ports": [{"name": "y", "port": 2}, {"name": "x", "port": 1}],
        "order": ["a", "b"],
    }));
    assert_eq!(
        messages(&v.validate(&reordered, Some(&old))),
        Vec::<String>::new()
    );
    let changed = object(json!({
        "tags": ["a", "c"],
        "ports": [{"name": "y", "port": 3}, {"name": "x", "port": 1}],
        "order": ["b", "a"],
    }));
    assert_eq!(
        messages(&v.validate(&changed, Some(&old))),
        [
            "spec: Invalid value: \"object\": ports are immutable",
            "spec: Invalid value: \"object\": order is immutable",
            "spec: Invalid value: \"object\": tags differ",
            "spec.tags: Invalid value: \"array\": tags are immutable",
        ]
    );
}

#[test]
fn library_names_pass_the_check() {
    let rules: Vec<Value> = [
        "math.greatest(self.a, 1) >= 1 && math.least([self.a, 5]) <= 5",
        "math.abs(-self.a) >= 0 && math.ceil(1.5) == 2.0",
        "optional.of(self.a).optMap(x, x + 1).orValue(0) > 0",
        "lists.range(3).size() == 3 && [3, 1].sort() == [1, 3]",
        "base64.encode(b'hi') == 'aGk=' && strings.quote('a') == '\"a\"'",
        "'a,b'.split(',').join('-') == 'a-b' && 'x'.upperAscii() == 'X'",
        "'%s!'.format(['hi']) == 'hi!' && 'abc'.charAt(1) == 'b' && 'abc'.substring(1) == 'bc'",
        "duration('1m').getSeconds() == 60 && timestamp('2024-01-01T00:00:00Z').getFullYear() == 2024",
        "type(self.a) == int && dyn(self.a) == 1 && double(self.a) == 1.0 && string(self.a) == '1'",
        "[1, 2].exists_one(x, x == 1) && [1, 2].existsOne(x, x == 2)",
    ]
    .iter()
    .map(|r| json!({"rule": r}))
    .collect();
    let v = compile(spec_schema(
        json!({"a": {"type": "integer"}}),
        Value::Array(rules),
    ));
    assert_eq!(
        messages(&v.validate(&object(json!({"a": 1})), None)),
        Vec::<String>::new()
    );
}
