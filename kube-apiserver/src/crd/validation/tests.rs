//! Tests of CRD validation and defaulting, on CRD fixtures as JSON.

use super::*;
use serde_json::json;

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "default": 1},
                            "size": {"type": "string", "enum": ["S", "M"]},
                        }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                    },
                }},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
            }],
        },
    })
}

fn errors(new: &Value, old: Option<&Value>) -> String {
    validate_crd(new, old).to_string()
}

fn assert_has(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
}

#[test]
fn a_good_crd_is_valid() {
    assert_eq!(errors(&crd(), None), "");
}

#[test]
fn name_must_be_plural_dot_group() {
    let mut c = crd();
    c["metadata"]["name"] = json!("widget.example.com");
    assert_eq!(
        errors(&c, None),
        r#"metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group"#
    );
}

#[test]
fn group_scope_and_names() {
    let mut c = crd();
    c["metadata"]["name"] = json!("Widgets.example");
    c["spec"]["group"] = json!("example");
    c["spec"]["scope"] = json!("Global");
    c["spec"]["names"] = json!({"plural": "Widgets", "kind": "Wid_get", "listKind": "Wid_get",
                                "shortNames": ["w d"]});
    assert_has(
        &errors(&c, None),
        &[
            "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            "spec.names.singular: Required value",
            "spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label must consist of lower case alphanumeric characters",
            "spec.names.kind: Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: a DNS-1035 label",
            "spec.names.shortNames[0]: Invalid value: \"w d\"",
            "spec.names.listKind: Invalid value: \"Wid_get\": kind and listKind may not be the same",
        ],
    );
    let mut c = crd();
    c["spec"].as_object_mut().unwrap().remove("scope");
    assert_eq!(errors(&c, None), "spec.scope: Required value");
}

#[test]
fn versions_need_exactly_one_storage_and_unique_names() {
    let mut c = crd();
    let v = c["spec"]["versions"][0].clone();
    let mut v2 = v.clone();
    v2["name"] = json!("v1");
    c["spec"]["versions"] = json!([v, v2]);
    assert_has(
        &errors(&c, None),
        &[
            "spec.versions: Invalid value: [",
            "must contain unique version names",
            "must have exactly one version marked as storage version",
        ],
    );
    let mut c = crd();
    c["spec"]["versions"][0]["storage"] = json!(false);
    c["spec"]["versions"][0]["name"] = json!("V1");
    assert_has(
        &errors(&c, None),
        &[
            "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label",
            "must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: []: must have at least one stored version",
        ],
    );
    let mut c = crd();
    c["spec"]["versions"] = json!([]);
    assert_has(
        &errors(&c, None),
        &["must have exactly one version marked as storage version"],
    );
}

#[test]
fn schemas_are_required_and_structural() {
    let mut c = crd();
    c["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    assert_eq!(
        errors(&c, None),
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
    );

    // One version: its schema is checked where upstream hoists it, spec.validation.
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("type");
    assert_eq!(
        errors(&c, None),
        "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
    );

    // Different schemas per version are pathed per version.
    let mut c = crd();
    let mut v2 = c["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = json!({});
    c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    assert_eq!(
        errors(&c, None),
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[extra].type: Required value: must not be empty for specified object fields"
    );
}

#[test]
fn defaults_in_schemas_must_validate() {
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]
        ["default"] = json!("XL");
    assert_has(
        &errors(&c, None),
        &[
            "spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Unsupported value: \"XL\": supported values: \"S\", \"M\"",
        ],
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] =
        json!([{"required": ["spec"]}]);
    assert_has(
        &errors(&c, None),
        &[
            "spec.validation.openAPIV3Schema: Invalid value: {",
            "fields are allowed at the root of the schema if the status subresource is enabled",
        ],
    );
}

#[test]
fn scale_paths_and_printer_columns() {
    let mut c = crd();
    c["spec"]["versions"][0]["subresources"]["scale"] = json!({
        "specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas",
        "labelSelectorPath": ".metadata.labels"});
    c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
        {"name": "", "type": "float", "format": "weird", "jsonPath": ""},
        {"name": "Age", "type": "date", "jsonPath": "metadata.creationTimestamp"},
    ]);
    assert_has(
        &errors(&c, None),
        &[
            "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.subresources.scale.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with .",
            "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status",
            "spec.additionalPrinterColumns[0].name: Required value",
            "spec.additionalPrinterColumns[0].type: Invalid value: \"float\": must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[0].format: Invalid value: \"weird\": must be one of byte,date,date-time,double,float,int32,int64,password",
            "spec.additionalPrinterColumns[0].JSONPath: Required value",
            "spec.additionalPrinterColumns[1].JSONPath: Invalid value: \"metadata.creationTimestamp\": must be a simple json path starting with .",
        ],
    );
    let mut c = crd();
    c["spec"]["versions"][0]["subresources"]["scale"]
        .as_object_mut()
        .unwrap()
        .remove("specReplicasPath");
    assert_eq!(
        errors(&c, None),
        "spec.subresources.scale.specReplicasPath: Required value"
    );
}

#[test]
fn selectable_fields() {
    let mut c = crd();
    c["spec"]["versions"][0]["selectableFields"] = json!([
        {"jsonPath": ".spec.size"},
        {"jsonPath": ".spec.size"},
        {"jsonPath": ".spec"},
        {"jsonPath": ".spec.nope"},
        {"jsonPath": ""},
    ]);
    assert_has(
        &errors(&c, None),
        &[
            "spec.selectableFields[1].jsonPath: Duplicate value: \".spec.size\"",
            "spec.selectableFields[2].jsonPath: Invalid value: \".spec\": must point to a field of type string, boolean or integer.",
            "spec.selectableFields[3].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
            "spec.selectableFields[4].jsonPath: Required value",
        ],
    );
    c["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.replicas"}]);
    assert_eq!(errors(&c, None), "");
}

#[test]
fn conversion_strategies() {
    let mut c = crd();
    c["spec"]["conversion"] = json!({"strategy": "Magic"});
    assert_eq!(
        errors(&c, None),
        "spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""
    );
    c["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_has(
        &errors(&c, None),
        &[
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ],
    );
    c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "http://user@host/x?a=b"}, "conversionReviewVersions": ["v2"]}});
    assert_has(
        &errors(&c, None),
        &[
            "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme",
            "user information is not permitted in the URL",
            "query parameters are not permitted in the URL",
            "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
        ],
    );
    c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "conv", "namespace": "default", "port": 443}},
        "conversionReviewVersions": ["v1"]}});
    assert_eq!(errors(&c, None), "");
    c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
        "clientConfig": {"url": "https://x"}}});
    assert_eq!(
        errors(&c, None),
        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"
    );
}

#[test]
fn updates_keep_scope_group_plural_and_stored_versions() {
    let mut old = crd();
    old["status"] = json!({"storedVersions": ["v1"],
        "conditions": [{"type": "Established", "status": "True"}]});
    let mut new = old.clone();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["group"] = json!("other.com");
    assert_has(
        &errors(&new, Some(&old)),
        &[
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.group: Invalid value: \"other.com\": field is immutable",
        ],
    );

    // Before the CRD is established the scope may still change.
    let mut unestablished = crd();
    unestablished["status"] = json!({"storedVersions": ["v1"]});
    let mut new = unestablished.clone();
    new["spec"]["scope"] = json!("Cluster");
    assert_eq!(errors(&new, Some(&unestablished)), "");

    // v1 was stored: replacing it with v2 drops a stored version.
    let mut new = old.clone();
    new["spec"]["versions"][0]["name"] = json!("v2");
    assert_eq!(
        errors(&new, Some(&old)),
        "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
    );
}

#[test]
fn protected_groups_need_approval() {
    let mut c = crd();
    c["metadata"]["name"] = json!("widgets.apps.k8s.io");
    c["spec"]["group"] = json!("apps.k8s.io");
    assert_eq!(
        errors(&c, None),
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, testing"});
    assert_eq!(errors(&c, None), "");
}

#[test]
fn preserve_unknown_fields_cannot_be_set() {
    let mut c = crd();
    c["spec"]["preserveUnknownFields"] = json!(true);
    assert_has(
        &errors(&c, None),
        &[
            "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ],
    );
}

#[test]
fn bad_shapes_do_not_panic() {
    for bad in [
        json!({}),
        json!({"spec": "x"}),
        json!({"spec": {"versions": "x", "names": 3}}),
        json!({"spec": {"versions": [1, null, {"schema": {"openAPIV3Schema": "x"}}]}}),
        json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {"type": 7}}}]}}),
        json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": 1, "conversionReviewVersions": [1]}}}}),
    ] {
        let mut b = bad.clone();
        default_crd(&mut b);
        assert!(!validate_crd(&b, None).is_empty());
        assert!(!validate_crd(&b, Some(&bad)).is_empty());
    }
}

#[test]
fn defaulting() {
    let mut c = json!({"spec": {"names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1"}]}});
    default_crd(&mut c);
    assert_eq!(c["spec"]["names"]["singular"], "widget");
    assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(c["spec"]["versions"][0]["served"], false);
    assert_eq!(c["spec"]["versions"][0]["storage"], false);

    let mut c = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
    default_crd(&mut c);
    assert_eq!(
        c["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
    // Idempotent.
    let once = c.clone();
    default_crd(&mut c);
    assert_eq!(c, once);
}

#[test]
fn the_registry_defaults_and_validates_crds() {
    use crate::registry::strategy::Strategy;
    use crate::registry::validate;
    let info =
        api_types::registry::by_group_resource("apiextensions.k8s.io", "customresourcedefinitions")
            .expect("CRDs are a built-in resource");
    let strategy = Strategy::for_resource(info);

    let mut c = crd();
    c["spec"]["names"]
        .as_object_mut()
        .unwrap()
        .remove("listKind");
    validate::default(&strategy, &mut c).unwrap();
    assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(c["spec"]["conversion"]["strategy"], "None");
    assert!(validate::on_create(&strategy, &c).is_empty());

    let mut bad = c.clone();
    bad["metadata"]["name"] = json!("gadgets.example.com");
    assert_eq!(
        validate::on_create(&strategy, &bad).to_string(),
        r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
    );
    let mut changed = c.clone();
    changed["spec"]["names"]["plural"] = json!("gizmos");
    assert!(
        validate::on_update(&strategy, &changed, &c)
            .to_string()
            .contains("spec.names.plural: Invalid value: \"gizmos\": field is immutable")
    );
}

#[test]
fn a_kubebuilder_style_crd_is_accepted() {
    let schema = json!({
        "description": "Widget is the Schema for the widgets API",
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema", "type": "string"},
            "kind": {"description": "Kind is a string value", "type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["image"],
                "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "message": "no negatives"}],
                "properties": {
                    "image": {"type": "string", "minLength": 1},
                    "replicas": {"type": "integer", "format": "int32", "default": 1},
                    "memory": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                               "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
                               "x-kubernetes-int-or-string": true},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"},
                               "x-kubernetes-map-type": "atomic"},
                    "args": {"type": "array", "items": {"type": "string"},
                             "x-kubernetes-list-type": "atomic"},
                    "env": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"],
                                      "properties": {"name": {"type": "string"},
                                                     "value": {"type": "string"}}}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "x-kubernetes-preserve-unknown-fields": true},
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["type"],
                                   "items": {"type": "object", "required": ["type", "status"],
                                             "properties": {
                                                 "type": {"type": "string"},
                                                 "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                                                 "lastTransitionTime": {"type": "string", "format": "date-time"}}}},
                },
            },
        },
    });
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema.clone();
    assert_eq!(errors(&c, None), "");

    let s = Structural::new(&schema).unwrap();
    let mut object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"image": "nginx", "memory": "128Mi", "extra": true,
                 "template": {"apiVersion": "v1", "kind": "Pod", "spec": {"any": 1}}},
        "status": {"conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2024-01-01T00:00:00Z"}]},
    });
    assert_eq!(s.prune(&mut object), vec!["spec.extra"]);
    s.apply_defaults(&mut object);
    assert_eq!(object["spec"]["replicas"], 1);
    assert!(s.validate(&object).is_empty(), "{}", s.validate(&object));
    object["spec"]["memory"] = json!("lots");
    object["status"]["conditions"][0]["lastTransitionTime"] = json!("noon");
    let text = s.validate(&object).to_string();
    assert_has(
        &text,
        &[
            "spec.memory: Invalid value: \"lots\": spec.memory in body should match '^(\\+|-)?",
            "status.conditions[0].lastTransitionTime: Invalid value: \"noon\": status.conditions[0].lastTransitionTime in body must be of type date-time: \"noon\"",
        ],
    );
}
