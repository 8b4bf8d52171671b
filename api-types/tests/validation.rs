//! Validators through the JSON entry points, with upstream's exact messages where kubectl
//! users see them.

use api_types::defaults::default_object;
use api_types::validation::{ErrorList, validate_create, validate_update};
use serde_json::{Value, json};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn gvk(obj: &Value) -> (String, String, String) {
    let api_version = obj["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    (
        group.to_string(),
        version.to_string(),
        obj["kind"].as_str().unwrap_or("").to_string(),
    )
}

/// Defaults then validates, as the apiserver does on create.
fn create(obj: Value) -> ErrorList {
    let (g, v, k) = gvk(&obj);
    let mut obj = obj;
    default_object(&g, &v, &k, &mut obj).expect("defaults");
    validate_create(&g, &v, &k, &obj)
}

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec})
}

#[test]
fn valid_objects_pass() {
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let objects = [
        pod(
            json!({"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "name": "http"}],
                                    "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                   "volumes": [{"name": "data", "emptyDir": {}}]}),
        ),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "ns"},
               "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}, "template": template}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "ns"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "s", "template": template}}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "ns"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"},
               "spec": {"selector": {"app": "a"}, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443, "targetPort": "https"}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "ns"},
               "spec": {"type": "ExternalName", "externalName": "example.com."}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a.b_C-1": "x"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": {"k": "eA=="}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "name": "web-x7k2p", "namespace": "ns"},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    ];
    for obj in objects {
        let errs = create(obj.clone());
        assert!(errs.is_empty(), "{obj}: {errs}");
    }
}

#[test]
fn object_meta_errors() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns"}}),
            vec!["metadata.name: Required value: name or generateName is required".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name", "namespace": "ns"}}),
            vec![format!("metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            vec!["metadata.namespace: Required value".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": "x"}}),
            vec!["metadata.namespace: Forbidden: not allowed on this type".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Web_", "name": "web-1", "namespace": "ns"}}),
            vec![format!("metadata.generateName: Invalid value: \"Web_\": {SUBDOMAIN_MSG}")],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}),
            vec!["metadata.name: Invalid value: \"a.b\": must not contain dots".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "labels": {"a/b/c": "x", "ok": "bad value"}}}),
            vec![
                "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into(),
                "metadata.labels: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into(),
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "annotations": {"big": "x".repeat(256 * 1024)}}}),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns",
                   "ownerReferences": [{"apiVersion": "", "kind": "K", "name": "n", "uid": "u"}]}}),
            vec!["metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty".into()],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}),
            vec!["metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".into()],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(messages(&create(obj.clone())), want, "{obj}");
    }
}

#[test]
fn pod_errors() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"containers": []}), vec!["spec.containers: Required value".into()]),
        (
            json!({"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}),
            vec!["spec.containers[1].name: Duplicate value: \"a\"".into()],
        ),
        (
            json!({"initContainers": [{"name": "a", "image": "x"}], "containers": [{"name": "a", "image": "y"}]}),
            vec!["spec.containers[0].name: Duplicate value: \"a\"".into()],
        ),
        (json!({"containers": [{"name": "a"}]}), vec!["spec.containers[0].image: Required value".into()]),
        (
            json!({"containers": [{"name": "A_b", "image": "x"}]}),
            vec![format!("spec.containers[0].name: Invalid value: \"A_b\": {LABEL_MSG}")],
        ),
        (
            json!({"restartPolicy": "Sometimes", "containers": [{"name": "a", "image": "x"}]}),
            vec!["spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into()],
        ),
        (
            json!({"dnsPolicy": "Weird", "containers": [{"name": "a", "image": "x"}]}),
            vec!["spec.dnsPolicy: Unsupported value: \"Weird\": supported values: \"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\", \"None\"".into()],
        ),
        (
            json!({"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 0}, {"containerPort": 70000, "protocol": "ICMP"}]}]}),
            vec![
                "spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
                "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
            ],
        ),
        (
            json!({"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "abc"}, "requests": {"memory": "2Gi"}}}]}),
            vec![
                "spec.containers[0].resources.limits[cpu]: Invalid value: \"abc\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into(),
                // Pod defaulting copied the limit into requests.
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"abc\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into(),
            ],
        ),
        (
            json!({"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}]}),
            vec!["spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1".into()],
        ),
        (
            json!({"containers": [{"name": "a", "image": "x", "volumeMounts": [{"name": "missing", "mountPath": "/m"}]}],
                   "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]}),
            vec![
                "spec.volumes[1].name: Duplicate value: \"v\"".into(),
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"".into(),
            ],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(messages(&create(pod(spec.clone()))), want, "{spec}");
    }
}

#[test]
fn status_for_invalid_pod_matches_upstream() {
    let errs = create(pod(
        json!({"containers": [{"name": "a"}, {"name": "a", "image": "x"}]}),
    ));
    let status = errs.to_status("", "Pod", "p");
    let json = serde_json::to_value(&status).expect("serialise");
    assert_eq!(
        json,
        json!({
            "apiVersion": "v1", "kind": "Status", "metadata": {},
            "status": "Failure", "code": 422, "reason": "Invalid",
            "message": "Pod \"p\" is invalid: [spec.containers[0].image: Required value, spec.containers[1].name: Duplicate value: \"a\"]",
            "details": {
                "name": "p", "group": "", "kind": "Pod",
                "causes": [
                    {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"},
                    {"reason": "FieldValueDuplicate", "message": "Duplicate value: \"a\"", "field": "spec.containers[1].name"}
                ]
            }
        })
    );
}

fn deployment(selector: Value, labels: Value, extra: Value) -> Value {
    let mut spec = json!({"selector": selector, "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
}

#[test]
fn workload_errors() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            deployment(json!({"matchLabels": {"app": "a"}}), json!({"app": "b"}), json!({})),
            vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`".into()],
        ),
        (
            deployment(json!({}), json!({"app": "b"}), json!({})),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment".into()],
        ),
        (
            deployment(json!({"matchLabels": {"app": "a"}}), json!({"app": "a"}), json!({"replicas": -1})),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0".into()],
        ),
        (
            deployment(json!({"matchLabels": {"app": "a"}}), json!({"app": "a"}), json!({"progressDeadlineSeconds": 5, "minReadySeconds": 10})),
            vec!["spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds".into()],
        ),
        (
            deployment(json!({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}), json!({"app": "a"}), json!({})),
            vec!["spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Bogus\"}]}: invalid label selector".into()],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(messages(&create(obj.clone())), want, "{obj}");
    }

    let mut never = deployment(
        json!({"matchLabels": {"app": "a"}}),
        json!({"app": "a"}),
        json!({}),
    );
    never["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    assert_eq!(
        messages(&create(never)),
        vec!["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".to_string()]
    );

    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "ns"},
                     "spec": {"selector": {"matchLabels": {"app": "a"}}, "podManagementPolicy": "Random",
                              "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    assert_eq!(
        messages(&create(sts)),
        vec!["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'".to_string()]
    );
}

fn service(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}, "spec": spec})
}

#[test]
fn service_errors() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({}), vec!["spec.ports: Required value".into()]),
        (json!({"clusterIP": "None"}), vec![]),
        (
            json!({"type": "Magic", "ports": [{"port": 80}]}),
            vec!["spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"".into()],
        ),
        (
            json!({"ports": [{"port": 80}, {"port": 81}]}),
            vec!["spec.ports[0].name: Required value".into(), "spec.ports[1].name: Required value".into()],
        ),
        (
            json!({"ports": [{"name": "a", "port": 0}]}),
            // targetPort defaulted from port, so it is reported too (as upstream).
            vec![
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
            ],
        ),
        (
            json!({"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]}),
            vec!["spec.ports[1].name: Duplicate value: \"a\"".into()],
        ),
        (
            json!({"ports": [{"port": 80, "nodePort": 30000}]}),
            vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'".into()],
        ),
        (json!({"type": "ExternalName"}), vec!["spec.externalName: Required value".into()]),
        (
            json!({"clusterIP": "10.0.0.300", "ports": [{"port": 80}]}),
            vec!["spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(messages(&create(service(spec.clone()))), want, "{spec}");
    }
}

#[test]
fn config_map_and_secret_errors() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
                    "data": {"a/b": "x", "..x": "y"}});
    assert_eq!(
        messages(&create(cm)),
        vec![
            "data[..x]: Invalid value: \"..x\": must not start with '..'".to_string(),
            "data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string(),
        ]
    );
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
                     "data": {"a": "x".repeat(1024 * 1024 + 1)}});
    assert_eq!(
        messages(&create(big)),
        vec!["<nil>: Too long: may not be more than 1048576 bytes".to_string()]
    );
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
                     "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
    assert_eq!(
        messages(&create(tls)),
        vec!["data[tls.key]: Required value".to_string()]
    );
}

fn stored(obj: Value) -> Value {
    let (g, v, k) = gvk(&obj);
    let mut obj = obj;
    default_object(&g, &v, &k, &mut obj).expect("defaults");
    obj["metadata"]["resourceVersion"] = json!("5");
    obj["metadata"]["uid"] = json!("uid-1");
    obj
}

#[test]
fn updates() {
    let old = stored(pod(
        json!({"containers": [{"name": "a", "image": "nginx:1"}], "activeDeadlineSeconds": 100,
                                "tolerations": [{"key": "k", "operator": "Exists"}]}),
    ));

    // Allowed: image, lower activeDeadlineSeconds, an added toleration.
    let mut ok = old.clone();
    ok["spec"]["containers"][0]["image"] = json!("nginx:2");
    ok["spec"]["activeDeadlineSeconds"] = json!(50);
    ok["spec"]["tolerations"] =
        json!([{"key": "k", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]);
    let errs = validate_update("", "v1", "Pod", &ok, &old);
    assert!(errs.is_empty(), "{errs}");

    let mut bad = old.clone();
    bad["spec"]["restartPolicy"] = json!("Never");
    let errs = validate_update("", "v1", "Pod", &bad, &old);
    assert_eq!(errs.len(), 1, "{errs}");
    let msg = errs.to_string();
    assert!(msg.starts_with("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"), "{msg}");
    assert!(msg.contains("spec.restartPolicy"), "{msg}");

    // Scheduling gates: removing one releases the pod; adding one is refused.
    let mut gated = old.clone();
    gated["spec"]["schedulingGates"] = json!([{"name": "a"}, {"name": "b"}]);
    let mut ungated = gated.clone();
    ungated["spec"]["schedulingGates"] = json!([{"name": "b"}]);
    let errs = validate_update("", "v1", "Pod", &ungated, &gated);
    assert!(errs.is_empty(), "{errs}");
    let mut regated = gated.clone();
    regated["spec"]["schedulingGates"] = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]);
    assert_eq!(
        messages(&validate_update("", "v1", "Pod", &regated, &gated)),
        vec!["spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate 'c'".to_string()]
    );

    let mut raised = old.clone();
    raised["spec"]["activeDeadlineSeconds"] = json!(200);
    assert_eq!(
        messages(&validate_update("", "v1", "Pod", &raised, &old)),
        vec!["spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value".to_string()]
    );

    let mut removed = old.clone();
    removed["spec"]["tolerations"] = json!([]);
    assert_eq!(
        messages(&validate_update("", "v1", "Pod", &removed, &old)),
        vec!["spec.tolerations[0]: Forbidden: existing toleration can not be modified except its tolerationSeconds".to_string()]
    );

    let mut meta = old.clone();
    meta["metadata"]["name"] = json!("other");
    meta["metadata"]["uid"] = json!("uid-2");
    meta["metadata"]["resourceVersion"] = json!("");
    assert_eq!(
        messages(&validate_update("", "v1", "Pod", &meta, &old)),
        vec![
            "metadata.resourceVersion: Invalid value: \"\": must be specified for an update"
                .to_string(),
            "metadata.name: Invalid value: \"other\": field is immutable".to_string(),
            "metadata.uid: Invalid value: \"uid-2\": field is immutable".to_string(),
        ]
    );

    let old_svc = stored(service(
        json!({"clusterIP": "10.0.0.10", "ports": [{"port": 80}]}),
    ));
    let mut svc = old_svc.clone();
    svc["spec"]["clusterIP"] = json!("None");
    svc["spec"]["clusterIPs"] = json!(["None"]);
    assert_eq!(
        messages(&validate_update("", "v1", "Service", &svc, &old_svc)),
        vec!["spec.clusterIPs[0]: Invalid value: [\"None\"]: may not change once set".to_string()]
    );

    let old_d = stored(deployment(
        json!({"matchLabels": {"app": "a"}}),
        json!({"app": "a"}),
        json!({}),
    ));
    let mut d = old_d.clone();
    d["spec"]["selector"] = json!({"matchLabels": {"app": "a", "v": "2"}});
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "a", "v": "2"});
    assert_eq!(
        messages(&validate_update("apps", "v1", "Deployment", &d, &old_d)),
        vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"a\",\"v\":\"2\"}}: field is immutable".to_string()]
    );
    let mut scaled = old_d.clone();
    scaled["spec"]["replicas"] = json!(5);
    assert!(validate_update("apps", "v1", "Deployment", &scaled, &old_d).is_empty());
}

#[test]
fn unknown_kinds_and_bad_json() {
    assert!(validate_create("example.com", "v1", "Widget", &json!({"spec": 1})).is_empty());
    let errs = validate_create("", "v1", "Pod", &json!({"spec": {"containers": 5}}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs.to_string()
            .starts_with("<nil>: Invalid value: cannot decode Pod: "),
        "{errs}"
    );
}
