//! Protobuf request bodies decode to the JSON upstream's JSON encoding of the same object is:
//! bodies are built by encoding k8s-pb structs with prost (as client-go's protobuf serializer
//! would), and compared with hand-written JSON or k8s-openapi's serde output.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use kube_apiserver::http::body::decode;
use kube_apiserver::http::negotiation::{InputFormat, negotiate_input};
use kube_apiserver::http::protobuf::{decode_protobuf, kind_message};
use prost::Message;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `k8s\0` + `runtime.Unknown` around `raw`, as client-go writes it (empty strings for the
/// encoding and content type: Go always writes non-pointer strings).
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn body<M: Message>(api_version: &str, kind: &str, object: &M) -> Vec<u8> {
    envelope(api_version, kind, object.encode_to_vec())
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// ObjectMeta as Go writes an object a client just built: every non-pointer string present
/// (empty), `creationTimestamp` the zero time (an empty message), `generation` 0.
fn go_meta(name: &str, namespace: &str, labels: &[(&str, &str)]) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(namespace),
        self_link: s(""),
        uid: s(""),
        resource_version: s(""),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        labels: map(labels),
        ..Default::default()
    })
}

fn decoded(bytes: &[u8]) -> Value {
    decode_protobuf(bytes).unwrap_or_else(|e| panic!("decode failed: {}", e.message()))
}

#[test]
fn config_map_with_binary_data() {
    let cm = core::ConfigMap {
        metadata: go_meta("c", "p", &[("app", "x")]),
        data: map(&[("a", "b"), ("empty", "")]),
        binary_data: [("bin".to_string(), vec![0u8, 1, 2, 255])].into(),
        immutable: None,
    };
    assert_eq!(
        decoded(&body("v1", "ConfigMap", &cm)),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "p", "labels": {"app": "x"}, "creationTimestamp": null},
            "data": {"a": "b", "empty": ""},
            "binaryData": {"bin": "AAEC/w=="},
        })
    );
}

#[test]
fn secret_bytes_are_base64() {
    let secret = core::Secret {
        metadata: go_meta("s", "p", &[]),
        immutable: Some(false),
        data: [("x".to_string(), b"y".to_vec())].into(),
        string_data: map(&[("plain", "text")]),
        r#type: s("Opaque"),
    };
    assert_eq!(
        decoded(&body("v1", "Secret", &secret)),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "p", "creationTimestamp": null},
            // `immutable` is a *bool: an explicit false stays.
            "immutable": false,
            "data": {"x": "eQ=="},
            "stringData": {"plain": "text"},
            "type": "Opaque",
        })
    );
}

#[test]
fn namespace_with_spec_and_status() {
    let ns = core::Namespace {
        metadata: go_meta("p", "", &[]),
        spec: Some(core::NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: Some(core::NamespaceStatus {
            phase: s(""),
            conditions: vec![],
        }),
    };
    assert_eq!(
        decoded(&body("v1", "Namespace", &ns)),
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "p", "creationTimestamp": null},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {},
        })
    );
}

fn container(name: &str, image: &str) -> core::Container {
    core::Container {
        name: s(name),
        image: s(image),
        working_dir: s(""),
        termination_message_path: s(""),
        image_pull_policy: s(""),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        ..Default::default()
    }
}

#[test]
fn deployment_with_int_or_string_and_quantities() {
    let mut c = container("web", "nginx:1.27");
    c.ports = vec![core::ContainerPort {
        name: s(""),
        host_port: Some(0),
        container_port: Some(8080),
        protocol: s("TCP"),
        host_ip: s(""),
    }];
    c.resources = Some(core::ResourceRequirements {
        limits: [("memory".to_string(), Quantity { string: s("128Mi") })].into(),
        requests: [("cpu".to_string(), Quantity { string: s("100m") })].into(),
        claims: vec![],
    });
    let deploy = apps::Deployment {
        metadata: go_meta("d", "p", &[("app", "d")]),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(2),
            selector: Some(meta::LabelSelector {
                match_labels: map(&[("app", "d")]),
                match_expressions: vec![],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: go_meta("", "", &[("app", "d")]),
                spec: Some(core::PodSpec {
                    containers: vec![c],
                    restart_policy: s(""),
                    host_network: Some(false),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(1),
                        str_val: s(""),
                    }),
                    max_surge: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: s("25%"),
                    }),
                }),
            }),
            // Non-pointer `omitempty` int: Go writes the 0, JSON leaves it out.
            min_ready_seconds: Some(0),
            // A pointer: zero is meaningful and stays.
            revision_history_limit: Some(0),
            paused: Some(false),
            progress_deadline_seconds: None,
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    assert_eq!(
        decoded(&body("apps/v1", "Deployment", &deploy)),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "p", "labels": {"app": "d"}, "creationTimestamp": null},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}, "creationTimestamp": null},
                    "spec": {"containers": [{
                        "name": "web",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                        "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "100m"}},
                    }]},
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                },
                "revisionHistoryLimit": 0,
            },
            "status": {},
        })
    );
}

#[test]
fn service_target_ports() {
    let port = |name: &str, port: i32, target: IntOrString| core::ServicePort {
        name: s(name),
        protocol: s("TCP"),
        app_protocol: None,
        port: Some(port),
        target_port: Some(target),
        node_port: Some(0),
    };
    let svc = core::Service {
        metadata: go_meta("d", "p", &[]),
        spec: Some(core::ServiceSpec {
            ports: vec![
                port(
                    "",
                    80,
                    IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: s(""),
                    },
                ),
                port(
                    "https",
                    443,
                    IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: s("https"),
                    },
                ),
            ],
            selector: map(&[("app", "d")]),
            cluster_ip: s(""),
            r#type: s("ClusterIP"),
            session_affinity: s(""),
            ..Default::default()
        }),
        status: Some(core::ServiceStatus {
            load_balancer: Some(core::LoadBalancerStatus::default()),
            conditions: vec![],
        }),
    };
    assert_eq!(
        decoded(&body("v1", "Service", &svc)),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "d", "namespace": "p", "creationTimestamp": null},
            "spec": {
                "ports": [
                    {"protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https"},
                ],
                "selector": {"app": "d"},
                "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        })
    );
}

#[test]
fn pod_times_match_k8s_openapi_serialization() {
    use api_types::k8s_openapi::api::core::v1 as oa;
    use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1 as oa_meta;
    use api_types::k8s_openapi::jiff::Timestamp;

    let t = |seconds: i64, nanos: i32| {
        Some(meta::Time {
            seconds: Some(seconds),
            nanos: Some(nanos),
        })
    };
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: s("pod1"),
            namespace: s("p"),
            // Upstream keeps whole seconds of protobuf times.
            creation_timestamp: t(1_700_000_000, 999_000_000),
            deletion_timestamp: t(1_700_000_100, 0),
            deletion_grace_period_seconds: Some(0),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: s("c"),
                image: s("busybox:1.36"),
                command: vec!["sleep".into(), "3600".into()],
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(30),
            automount_service_account_token: Some(false),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: s("Running"),
            start_time: t(1_700_000_001, 0),
            conditions: vec![core::PodCondition {
                r#type: s("Ready"),
                status: s("True"),
                last_transition_time: t(1_700_000_002, 0),
                ..Default::default()
            }],
            container_statuses: vec![core::ContainerStatus {
                name: s("c"),
                ready: Some(true),
                restart_count: Some(2),
                image: s("busybox:1.36"),
                image_id: s("sha256:abc"),
                state: Some(core::ContainerState {
                    running: Some(core::ContainerStateRunning {
                        started_at: t(1_700_000_003, 0),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    let ts =
        |seconds: i64| oa_meta::Time(Timestamp::from_second(seconds).expect("valid timestamp"));
    let want = oa::Pod {
        metadata: oa_meta::ObjectMeta {
            name: Some("pod1".into()),
            namespace: Some("p".into()),
            creation_timestamp: Some(ts(1_700_000_000)),
            deletion_timestamp: Some(ts(1_700_000_100)),
            deletion_grace_period_seconds: Some(0),
            ..Default::default()
        },
        spec: Some(oa::PodSpec {
            containers: vec![oa::Container {
                name: "c".into(),
                image: Some("busybox:1.36".into()),
                command: Some(vec!["sleep".into(), "3600".into()]),
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(30),
            automount_service_account_token: Some(false),
            ..Default::default()
        }),
        status: Some(oa::PodStatus {
            phase: Some("Running".into()),
            start_time: Some(ts(1_700_000_001)),
            conditions: Some(vec![oa::PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(ts(1_700_000_002)),
                ..Default::default()
            }]),
            container_statuses: Some(vec![oa::ContainerStatus {
                name: "c".into(),
                ready: true,
                restart_count: 2,
                image: "busybox:1.36".into(),
                image_id: "sha256:abc".into(),
                state: Some(oa::ContainerState {
                    running: Some(oa::ContainerStateRunning {
                        started_at: Some(ts(1_700_000_003)),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    };
    let want = serde_json::to_value(&want).expect("serialize k8s-openapi pod");
    let got = decoded(&body("v1", "Pod", &pod));
    assert_eq!(got, want);
    assert_eq!(got["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
}

#[test]
fn micro_time_raw_extension_and_unknown_fields() {
    let event = k8s_pb::api::events::v1::Event {
        metadata: Some(meta::ObjectMeta {
            name: s("e"),
            ..Default::default()
        }),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(123_456_789),
        }),
        reason: s("Started"),
        ..Default::default()
    };
    assert_eq!(
        decoded(&body("events.k8s.io/v1", "Event", &event)),
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "reason": "Started",
        })
    );

    let revision = apps::ControllerRevision {
        metadata: Some(meta::ObjectMeta {
            name: s("r"),
            ..Default::default()
        }),
        data: Some(RawExtension {
            raw: Some(br#"{"spec":{"template":{"x":[1,"a"]}}}"#.to_vec()),
        }),
        revision: Some(3),
    };
    let mut raw = revision.encode_to_vec();
    // Unknown fields of every wire type (a newer client's) are skipped.
    raw.extend([0xc8, 0x3e, 0x01]); // field 1001, varint 1
    raw.extend([0xd2, 0x3e, 0x02, b'h', b'i']); // field 1002, "hi"
    raw.extend([0xd9, 0x3e, 0, 0, 0, 0, 0, 0, 0, 0]); // field 1003, fixed64
    raw.extend([0xe5, 0x3e, 0, 0, 0, 0]); // field 1004, fixed32
    assert_eq!(
        decoded(&envelope("apps/v1", "ControllerRevision", raw)),
        json!({
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": "r"},
            "data": {"spec": {"template": {"x": [1, "a"]}}},
            "revision": 3,
        })
    );
}

#[test]
fn custom_resource_definition_schema_shapes() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    let string_prop = ext::JsonSchemaProps {
        r#type: s("string"),
        default: Some(ext::Json {
            raw: Some(br#""x""#.to_vec()),
        }),
        ..Default::default()
    };
    let schema = ext::JsonSchemaProps {
        r#type: s("object"),
        properties: [("name".to_string(), string_prop.clone())].into(),
        additional_properties: Some(Box::new(ext::JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        })),
        items: Some(Box::new(ext::JsonSchemaPropsOrArray {
            schema: Some(Box::new(string_prop)),
            j_son_schemas: vec![],
        })),
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Default::default()
    };
    let crd = ext::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: s("foos.example.com"),
            ..Default::default()
        }),
        spec: Some(ext::CustomResourceDefinitionSpec {
            group: s("example.com"),
            scope: s("Namespaced"),
            names: Some(ext::CustomResourceDefinitionNames {
                plural: s("foos"),
                kind: s("Foo"),
                ..Default::default()
            }),
            versions: vec![ext::CustomResourceDefinitionVersion {
                name: s("v1"),
                served: Some(true),
                storage: Some(true),
                schema: Some(ext::CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let got = decoded(&body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
    ));
    assert_eq!(
        got["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "default": "x"}},
            "additionalProperties": false,
            "items": {"type": "string", "default": "x"},
            "x-kubernetes-preserve-unknown-fields": true,
        })
    );
    assert_eq!(
        got["spec"]["names"],
        json!({"plural": "foos", "kind": "Foo"})
    );
}

#[test]
fn every_served_kind_has_a_message() {
    for info in api_types::registry::all() {
        let api_version = api_types::registry::api_version(info.group, info.version);
        assert!(
            kind_message(&api_version, info.kind).is_some(),
            "no protobuf message for {api_version} {}",
            info.kind
        );
    }
}

fn bad(bytes: &[u8]) -> String {
    let err = decode_protobuf(bytes).expect_err("malformed body must fail");
    assert_eq!(err.code().as_u16(), 400, "{}", err.message());
    assert_eq!(err.reason(), "BadRequest");
    err.message().to_string()
}

#[test]
fn malformed_bodies_are_400() {
    let cm = core::ConfigMap {
        metadata: go_meta("c", "p", &[]),
        ..Default::default()
    };
    let good = body("v1", "ConfigMap", &cm);
    decoded(&good);

    assert!(bad(b"{\"kind\":\"ConfigMap\"}").contains("expected prefix"));
    assert!(bad(b"").contains("expected prefix"));
    // Every truncation of a valid body fails cleanly (no panic), except the full body.
    for len in 4..good.len() {
        let _ = decode_protobuf(&good[..len]);
    }
    assert!(bad(&good[..good.len() - 1]).contains("end of data"));
    // A truncated varint in the envelope.
    assert!(bad(b"k8s\0\x0a\x80").contains("varint"));
    // `data` (a map, length-delimited) sent as a varint.
    let wrong = envelope("v1", "ConfigMap", vec![0x10, 0x01]);
    assert!(bad(&wrong).contains("wrong wire type"), "{}", bad(&wrong));
    // A compressed envelope.
    let mut gz = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s("v1"),
            kind: s("ConfigMap"),
        }),
        raw: Some(cm.encode_to_vec()),
        content_encoding: s("gzip"),
        content_type: None,
    }
    .encode_to_vec();
    gz.splice(0..0, *b"k8s\0");
    assert!(bad(&gz).contains("content encoding"));
    assert!(bad(&envelope("v1", "Nope", vec![])).contains("no kind \"Nope\""));
    assert!(bad(&envelope("v1", "", vec![])).contains("Kind"));
    // An IntOrString of an impossible type.
    let svc = core::Service {
        spec: Some(core::ServiceSpec {
            ports: vec![core::ServicePort {
                target_port: Some(IntOrString {
                    r#type: Some(7),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(bad(&body("v1", "Service", &svc)).contains("IntOrString"));
    // Embedded JSON that is not JSON.
    let rev = apps::ControllerRevision {
        data: Some(RawExtension {
            raw: Some(b"{nope".to_vec()),
        }),
        ..Default::default()
    };
    assert!(bad(&body("apps/v1", "ControllerRevision", &rev)).contains("embedded JSON"));
}

#[test]
fn deep_nesting_is_400_not_a_stack_overflow() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    // 2000 levels of `not` (a JSONSchemaProps inside a JSONSchemaProps), built from the inside
    // out as raw bytes so building it does not recurse either.
    let mut schema: Vec<u8> = Vec::new();
    let not_tag = {
        let probe = ext::JsonSchemaProps {
            not: Some(Box::new(ext::JsonSchemaProps::default())),
            ..Default::default()
        };
        // The key of `not` followed by the empty message's length, 0.
        let bytes = probe.encode_to_vec();
        bytes[..bytes.len() - 1].to_vec()
    };
    for _ in 0..2000 {
        let mut outer = not_tag.clone();
        prost::encoding::encode_varint(schema.len() as u64, &mut outer);
        outer.extend(&schema);
        schema = outer;
    }
    // openAPIV3Schema (field 1) holding the deep schema.
    let mut validation_bytes = vec![0x0a];
    prost::encoding::encode_varint(schema.len() as u64, &mut validation_bytes);
    validation_bytes.extend(&schema);
    let version = ext::CustomResourceDefinitionVersion {
        name: s("v1"),
        ..Default::default()
    };
    let mut version_bytes = version.encode_to_vec();
    // schema is field 4 of CustomResourceDefinitionVersion.
    version_bytes.push(0x22);
    prost::encoding::encode_varint(validation_bytes.len() as u64, &mut version_bytes);
    version_bytes.extend(&validation_bytes);
    let mut spec = vec![0x3a]; // versions = 7
    prost::encoding::encode_varint(version_bytes.len() as u64, &mut spec);
    spec.extend(&version_bytes);
    let mut crd = vec![0x12]; // spec = 2
    prost::encoding::encode_varint(spec.len() as u64, &mut crd);
    crd.extend(&spec);
    let msg = bad(&envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        crd,
    ));
    assert!(msg.contains("nesting deeper"), "{msg}");
}

#[test]
fn content_type_selects_the_protobuf_decoder() {
    let format = negotiate_input(Some("application/vnd.kubernetes.protobuf")).expect("negotiate");
    assert_eq!(format, InputFormat::Protobuf);
    let ns = core::Namespace {
        metadata: go_meta("p", "", &[]),
        ..Default::default()
    };
    let value = decode(&body("v1", "Namespace", &ns), format).expect("decode");
    assert_eq!(value["metadata"]["name"], "p");
    let err = negotiate_input(Some("application/cbor")).expect_err("415");
    assert_eq!(err.code().as_u16(), 415);
    assert!(
        err.message()
            .ends_with("application/json, application/yaml, application/vnd.kubernetes.protobuf"),
        "{}",
        err.message()
    );
}

#[test]
fn delete_options_in_any_group_version() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: s("Foreground"),
        dry_run: vec!["All".into()],
        ..Default::default()
    };
    assert_eq!(
        decoded(&body("apps/v1", "DeleteOptions", &opts)),
        json!({
            "apiVersion": "apps/v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "propagationPolicy": "Foreground",
            "dryRun": ["All"],
        })
    );
}
