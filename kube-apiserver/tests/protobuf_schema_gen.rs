//! Generates `src/http/protobuf/schema_table.rs`, the message table the protobuf request decoder
//! walks, and checks that the committed table is what generation gives today.
//!
//! Regenerate (after bumping `k8s-pb` or `k8s-openapi`):
//!
//! ```text
//! cargo test -p kube-apiserver --test protobuf_schema_gen -- --ignored regenerate
//! ```
//!
//! Inputs, both from the cargo registry:
//! - the wire schema: `k8s-pb`'s prost-generated sources (`#[prost(string, optional, tag = "1")]`
//!   attributes and field types), read as text, so nothing of upstream is copied into the repo;
//! - the JSON names: k8s-openapi's schemars schemas (via our OpenAPI definitions). prost named
//!   each field by heck's snake_case of the proto field name, which is upstream's JSON name, so
//!   a JSON property matches the field whose name is its snake_case.
//!
//! Only messages reachable from the served kinds are kept.

use heck::ToSnakeCase;
use kube_apiserver::openapi::definitions::Definitions;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const TABLE_PATH: &str = "src/http/protobuf/schema_table.rs";

/// Non-pointer Go scalars with `omitempty`: Go's protobuf writes them even when unset, upstream's
/// JSON leaves their zero value out. Every other optional number or bool is a pointer (or a
/// required field) whose zero is meaningful (`replicas: 0`), so zeros are kept by default; this
/// list covers the types kubectl's generators and typed clients send.
const NON_POINTER_OMITEMPTY: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta.generation",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition.observedGeneration",
    "io.k8s.api.core.v1.Container.stdin",
    "io.k8s.api.core.v1.Container.stdinOnce",
    "io.k8s.api.core.v1.Container.tty",
    "io.k8s.api.core.v1.EphemeralContainerCommon.stdin",
    "io.k8s.api.core.v1.EphemeralContainerCommon.stdinOnce",
    "io.k8s.api.core.v1.EphemeralContainerCommon.tty",
    "io.k8s.api.core.v1.ContainerPort.hostPort",
    "io.k8s.api.core.v1.Probe.initialDelaySeconds",
    "io.k8s.api.core.v1.Probe.timeoutSeconds",
    "io.k8s.api.core.v1.Probe.periodSeconds",
    "io.k8s.api.core.v1.Probe.successThreshold",
    "io.k8s.api.core.v1.Probe.failureThreshold",
    "io.k8s.api.core.v1.PodSpec.hostNetwork",
    "io.k8s.api.core.v1.PodSpec.hostPID",
    "io.k8s.api.core.v1.PodSpec.hostIPC",
    "io.k8s.api.core.v1.PodStatus.observedGeneration",
    "io.k8s.api.core.v1.PodCondition.observedGeneration",
    "io.k8s.api.core.v1.VolumeMount.readOnly",
    "io.k8s.api.core.v1.VolumeMountStatus.readOnly",
    "io.k8s.api.core.v1.ServicePort.nodePort",
    "io.k8s.api.core.v1.ServiceSpec.healthCheckNodePort",
    "io.k8s.api.core.v1.ServiceSpec.publishNotReadyAddresses",
    "io.k8s.api.core.v1.ContainerStateTerminated.signal",
    "io.k8s.api.core.v1.ContainerImage.sizeBytes",
    "io.k8s.api.core.v1.NodeSpec.unschedulable",
    "io.k8s.api.core.v1.Event.count",
    "io.k8s.api.core.v1.EventSeries.count",
    "io.k8s.api.core.v1.ReplicationControllerSpec.minReadySeconds",
    "io.k8s.api.core.v1.ReplicationControllerStatus.fullyLabeledReplicas",
    "io.k8s.api.core.v1.ReplicationControllerStatus.readyReplicas",
    "io.k8s.api.core.v1.ReplicationControllerStatus.availableReplicas",
    "io.k8s.api.core.v1.ReplicationControllerStatus.observedGeneration",
    "io.k8s.api.core.v1.GCEPersistentDiskVolumeSource.partition",
    "io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource.partition",
    "io.k8s.api.core.v1.ISCSIVolumeSource.chapAuthDiscovery",
    "io.k8s.api.core.v1.ISCSIVolumeSource.chapAuthSession",
    "io.k8s.api.core.v1.ISCSIPersistentVolumeSource.chapAuthDiscovery",
    "io.k8s.api.core.v1.ISCSIPersistentVolumeSource.chapAuthSession",
    "io.k8s.api.core.v1.ScaleIOVolumeSource.sslEnabled",
    "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource.sslEnabled",
    "io.k8s.api.core.v1.GCEPersistentDiskVolumeSource.readOnly",
    "io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource.readOnly",
    "io.k8s.api.core.v1.GlusterfsVolumeSource.readOnly",
    "io.k8s.api.core.v1.GlusterfsPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.NFSVolumeSource.readOnly",
    "io.k8s.api.core.v1.RBDVolumeSource.readOnly",
    "io.k8s.api.core.v1.RBDPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.ISCSIVolumeSource.readOnly",
    "io.k8s.api.core.v1.ISCSIPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.CinderVolumeSource.readOnly",
    "io.k8s.api.core.v1.CinderPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.CephFSVolumeSource.readOnly",
    "io.k8s.api.core.v1.CephFSPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.FCVolumeSource.readOnly",
    "io.k8s.api.core.v1.FlexVolumeSource.readOnly",
    "io.k8s.api.core.v1.FlexPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.AzureFileVolumeSource.readOnly",
    "io.k8s.api.core.v1.AzureFilePersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.QuobyteVolumeSource.readOnly",
    "io.k8s.api.core.v1.PortworxVolumeSource.readOnly",
    "io.k8s.api.core.v1.ScaleIOVolumeSource.readOnly",
    "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.StorageOSVolumeSource.readOnly",
    "io.k8s.api.core.v1.StorageOSPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.CSIPersistentVolumeSource.readOnly",
    "io.k8s.api.core.v1.PersistentVolumeClaimVolumeSource.readOnly",
    "io.k8s.api.apps.v1.DeploymentSpec.minReadySeconds",
    "io.k8s.api.apps.v1.DeploymentSpec.paused",
    "io.k8s.api.apps.v1.DeploymentStatus.observedGeneration",
    "io.k8s.api.apps.v1.DeploymentStatus.replicas",
    "io.k8s.api.apps.v1.DeploymentStatus.updatedReplicas",
    "io.k8s.api.apps.v1.DeploymentStatus.readyReplicas",
    "io.k8s.api.apps.v1.DeploymentStatus.availableReplicas",
    "io.k8s.api.apps.v1.DeploymentStatus.unavailableReplicas",
    "io.k8s.api.apps.v1.ReplicaSetSpec.minReadySeconds",
    "io.k8s.api.apps.v1.ReplicaSetStatus.fullyLabeledReplicas",
    "io.k8s.api.apps.v1.ReplicaSetStatus.readyReplicas",
    "io.k8s.api.apps.v1.ReplicaSetStatus.availableReplicas",
    "io.k8s.api.apps.v1.ReplicaSetStatus.observedGeneration",
    "io.k8s.api.apps.v1.DaemonSetSpec.minReadySeconds",
    "io.k8s.api.apps.v1.DaemonSetStatus.observedGeneration",
    "io.k8s.api.apps.v1.DaemonSetStatus.updatedNumberScheduled",
    "io.k8s.api.apps.v1.DaemonSetStatus.numberAvailable",
    "io.k8s.api.apps.v1.DaemonSetStatus.numberUnavailable",
    "io.k8s.api.apps.v1.StatefulSetSpec.minReadySeconds",
    "io.k8s.api.apps.v1.StatefulSetStatus.observedGeneration",
    "io.k8s.api.apps.v1.StatefulSetStatus.readyReplicas",
    "io.k8s.api.apps.v1.StatefulSetStatus.currentReplicas",
    "io.k8s.api.apps.v1.StatefulSetStatus.updatedReplicas",
    "io.k8s.api.batch.v1.JobStatus.active",
    "io.k8s.api.batch.v1.JobStatus.succeeded",
    "io.k8s.api.batch.v1.JobStatus.failed",
    "io.k8s.api.autoscaling.v1.ScaleSpec.replicas",
    "io.k8s.api.policy.v1.PodDisruptionBudgetStatus.observedGeneration",
    "io.k8s.api.scheduling.v1.PriorityClass.globalDefault",
    "io.k8s.api.networking.v1.ServiceBackendPort.number",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec.preserveUnknownFields",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion.deprecated",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.exclusiveMaximum",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.exclusiveMinimum",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.uniqueItems",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.nullable",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.x-kubernetes-embedded-resource",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.x-kubernetes-int-or-string",
    "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec.insecureSkipTLSVerify",
];

/// Pointer strings whose empty value means something (`storageClassName: ""` asks for no
/// class, unlike an unset class): their `""` is kept; other optional strings drop it.
const POINTER_STRINGS: &[&str] = &[
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec.storageClassName",
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec.volumeAttributesClassName",
    "io.k8s.api.core.v1.HostPathVolumeSource.type",
];

/// A field as parsed from k8s-pb.
#[derive(Debug, Clone)]
struct PbField {
    rust_name: String,
    tag: u32,
    /// `string`, `bytes`, `bool`, `int32`, `int64`, `double` or `message`.
    ty: String,
    label: &'static str,
    /// The resolved k8s-pb path of a message type (`api.core.v1.Container`).
    message: Option<String>,
}

/// A field of the table: the k8s-pb field, its JSON name (`""` when inlined), its `Zero`.
type OutField = (PbField, String, &'static str);
/// A message of the table: definition name, `Special` variant, fields by tag.
type OutMessage = (String, &'static str, Vec<OutField>);

/// A message as parsed from k8s-pb, keyed by its k8s-pb path.
#[derive(Debug, Default)]
struct PbMessage {
    fields: Vec<PbField>,
}

/// The directory of k8s-pb's sources in the cargo registry, from `cargo metadata`.
fn k8s_pb_src() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata json");
    let pkg = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "k8s-pb")
        .expect("k8s-pb in the dependency graph (dev-dependency of kube-apiserver)");
    let manifest = PathBuf::from(pkg["manifest_path"].as_str().expect("manifest_path"));
    manifest.parent().expect("crate dir").join("src")
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read k8s-pb dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(&path, out);
        } else if path.file_name().is_some_and(|n| n == "mod.rs") {
            out.push(path);
        }
    }
}

/// Parses every `mod.rs` of k8s-pb into messages keyed by `module.path.Struct`.
fn parse_k8s_pb(src: &Path) -> BTreeMap<String, PbMessage> {
    let mut files = Vec::new();
    collect_files(src, &mut files);
    let mut messages = BTreeMap::new();
    for file in files {
        let rel = file
            .parent()
            .expect("dir")
            .strip_prefix(src)
            .expect("under src");
        let module: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let text = std::fs::read_to_string(&file).expect("read k8s-pb file");
        parse_file(&module, &text, &mut messages);
    }
    messages
}

fn parse_file(module: &[String], text: &str, messages: &mut BTreeMap<String, PbMessage>) {
    let mut current: Option<(String, PbMessage)> = None;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            if let Some(name) = rest.strip_suffix(" {}") {
                // A message without fields (`CustomResourceSubresourceStatus`).
                let key = format!("{}.{}", module.join("."), name.trim());
                messages.insert(key, PbMessage::default());
            } else if let Some(name) = rest.strip_suffix(" {") {
                current = Some((name.trim().to_string(), PbMessage::default()));
            }
            continue;
        }
        if line == "}" {
            if let Some((name, msg)) = current.take() {
                messages.insert(format!("{}.{name}", module.join(".")), msg);
            }
            continue;
        }
        let Some((_, msg)) = current.as_mut() else {
            continue;
        };
        let trimmed = line.trim();
        let Some(attr) = trimmed
            .strip_prefix("#[prost(")
            .and_then(|a| a.strip_suffix(")]"))
        else {
            continue;
        };
        // The declaration may span lines; it ends at a `,` with balanced angle brackets.
        let mut decl = String::new();
        for next in lines.by_ref() {
            let next = next.trim();
            if next.starts_with("///") {
                continue;
            }
            decl.push_str(next);
            let depth = decl.matches('<').count() as i64 - decl.matches('>').count() as i64;
            if depth == 0 && decl.ends_with(',') {
                break;
            }
        }
        msg.fields.push(parse_field(module, attr, &decl));
    }
}

fn parse_field(module: &[String], attr: &str, decl: &str) -> PbField {
    let tag = attr
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no tag in {attr}"));
    let (name, ty_text) = decl
        .strip_prefix("pub ")
        .and_then(|d| d.split_once(':'))
        .unwrap_or_else(|| panic!("bad declaration {decl}"));
    let rust_name = name.trim().trim_start_matches("r#").to_string();
    let ty_text: String = ty_text.chars().filter(|c| !c.is_whitespace()).collect();
    let (label, ty) = if let Some(map) = attr.strip_prefix("btree_map = \"") {
        let value = map.split('"').next().unwrap_or("");
        let value = value
            .split(", ")
            .nth(1)
            .unwrap_or_else(|| panic!("map {attr}"));
        ("Map", value.to_string())
    } else {
        let ty = attr.split([',', ' ']).next().unwrap_or("").to_string();
        let label = if attr.contains("repeated") {
            "Repeated"
        } else {
            "Optional"
        };
        (label, ty)
    };
    let message = (ty == "message").then(|| resolve_type(module, &ty_text));
    PbField {
        rust_name,
        tag,
        ty,
        label,
        message,
    }
}

/// The k8s-pb path of the message a field's Rust type names, relative paths resolved.
fn resolve_type(module: &[String], ty: &str) -> String {
    let mut ty = ty.trim_end_matches(',');
    if let Some(i) = ty.find("::prost::alloc::string::String,") {
        ty = &ty[i + "::prost::alloc::string::String,".len()..];
    }
    for wrapper in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
        "::prost::alloc::collections::BTreeMap<",
    ] {
        ty = ty.strip_prefix(wrapper).unwrap_or(ty);
        ty = ty.strip_prefix(wrapper).unwrap_or(ty);
    }
    // rustfmt may leave a trailing comma inside the brackets.
    let ty = ty.trim_end_matches(['>', ',']);
    let mut path: Vec<String> = module.to_vec();
    let mut segments = ty.split("::").peekable();
    if segments.peek() == Some(&"crate") {
        path.clear();
        segments.next();
    }
    for seg in segments {
        if seg == "super" {
            path.pop();
        } else {
            path.push(seg.to_string());
        }
    }
    path.join(".")
}

/// The upstream-style definition name of a k8s-pb path (`api.core.v1.Pod` ->
/// `io.k8s.api.core.v1.Pod`), with the case of the OpenAPI definition when one matches
/// (k8s-pb renames `JSONSchemaProps` to `JsonSchemaProps`).
fn definition_name(pb_path: &str, by_lower: &HashMap<String, String>) -> String {
    let (first, rest) = pb_path.split_once('.').unwrap_or((pb_path, ""));
    let guess = format!("io.k8s.{}.{rest}", first.replace('_', "-"));
    by_lower
        .get(&guess.to_lowercase())
        .cloned()
        .unwrap_or(guess)
}

fn special_of(name: &str, msg: &PbMessage, defs: &Definitions) -> &'static str {
    let short = name.rsplit('.').next().unwrap_or("");
    match name {
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => return "Quantity",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => return "IntOrString",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => return "Time",
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => return "MicroTime",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Duration" => return "Duration",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
        | "io.k8s.apimachinery.pkg.runtime.RawExtension" => return "RawJson",
        _ => {}
    }
    if name.starts_with("io.k8s.apiextensions-apiserver.") {
        match short {
            "JSON" => return "RawJson",
            "JSONSchemaPropsOrArray" => return "SchemaOrArray",
            "JSONSchemaPropsOrBool" => return "SchemaOrBool",
            "JSONSchemaPropsOrStringArray" => return "SchemaOrStringArray",
            _ => {}
        }
    }
    // A Go `[]string` type given a message of its own for protobuf (`ExtraValue`): one
    // repeated string field `items`, and no object schema in the OpenAPI.
    let single_items = matches!(msg.fields.as_slice(),
        [f] if f.rust_name == "items" && f.ty == "string" && f.label == "Repeated");
    if single_items && !defs.schemas.contains_key(name) {
        return "StringList";
    }
    "None"
}

fn rust_ty(ty: &str, message: Option<usize>) -> String {
    match (ty, message) {
        ("string", _) => "String".into(),
        ("bytes", _) => "Bytes".into(),
        ("bool", _) => "Bool".into(),
        ("int32", _) => "Int32".into(),
        ("int64", _) => "Int64".into(),
        ("double", _) => "Double".into(),
        ("message", Some(i)) => format!("Msg({i})"),
        other => panic!("unsupported protobuf type {other:?}"),
    }
}

/// Builds the table's source text.
fn generate() -> String {
    let pb = parse_k8s_pb(&k8s_pb_src());
    let defs = Definitions::build();
    let by_lower: HashMap<String, String> = defs
        .schemas
        .keys()
        .map(|k| (k.to_lowercase(), k.clone()))
        .collect();
    let by_name: HashMap<String, &String> = pb
        .keys()
        .map(|path| (definition_name(path, &by_lower), path))
        .collect();

    // Roots: every served kind, in a stable order.
    let mut roots: BTreeMap<(String, String), String> = BTreeMap::new();
    for kind in &defs.kinds {
        let name = (kind.name)().into_owned();
        assert!(
            by_name.contains_key(&name),
            "no k8s-pb message for {name} ({}/{} {})",
            kind.group,
            kind.version,
            kind.kind
        );
        let api_version = if kind.group.is_empty() {
            kind.version.to_string()
        } else {
            format!("{}/{}", kind.group, kind.version)
        };
        roots.insert((api_version, kind.kind.to_string()), name);
    }
    // DeleteOptions, which typed clients send with DELETE in any group-version (the decoder
    // looks it up by kind).
    roots.insert(
        ("meta.k8s.io/v1".into(), "DeleteOptions".into()),
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions".into(),
    );

    let mut dropped = Vec::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    // normalized name -> JSON names over every schema, for messages without a schema of their
    // own (`EphemeralContainerCommon`, inlined into `EphemeralContainer`).
    let mut global: HashMap<String, BTreeSet<String>> = HashMap::new();
    for schema in defs.schemas.values() {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for p in props.keys() {
                global.entry(normalize(p)).or_default().insert(p.clone());
            }
        }
    }

    // Reachable messages, breadth first from the roots through served fields only; indexes in
    // discovery order.
    let mut order: Vec<OutMessage> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut queue: VecDeque<String> = roots.values().cloned().collect();
    while let Some(name) = queue.pop_front() {
        if index.contains_key(&name) {
            continue;
        }
        index.insert(name.clone(), order.len());
        let msg = &pb[by_name[&name]];
        let special = special_of(&name, msg, &defs);
        let schema = defs.schemas.get(&name);
        let props: Vec<String> = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let required: BTreeSet<String> = schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut fields = Vec::new();
        for f in &msg.fields {
            let json = match json_name(f, &props, &global, &pb, &by_name, &by_lower) {
                Name::Json(json) => json,
                Name::Inline => String::new(),
                Name::NotServed => {
                    // Newer than our API level (k8s-pb tracks a later Kubernetes): upstream
                    // 1.33 skips the tag as unknown, and so do we.
                    dropped.push(format!("{name}.{}", f.rust_name));
                    continue;
                }
            };
            let key = format!("{name}.{json}");
            if f.ty != "message" {
                used.insert(key.clone());
            }
            let zero = if required.contains(&json) {
                "Keep"
            } else {
                match f.ty.as_str() {
                    "string" if POINTER_STRINGS.contains(&key.as_str()) => "Keep",
                    "string" | "bytes" => "Omit",
                    _ if NON_POINTER_OMITEMPTY.contains(&key.as_str()) => "Omit",
                    _ => "Keep",
                }
            };
            if let Some(target) = &f.message {
                let target = definition_name(target, &by_lower);
                assert!(by_name.contains_key(&target), "unknown message {target}");
                queue.push_back(target);
            }
            fields.push((f.clone(), json, zero));
        }
        fields.sort_by_key(|(f, _, _)| f.tag);
        order.push((name, special, fields));
    }

    let mut out = String::new();
    out.push_str(
        "//! @generated by `cargo test -p kube-apiserver --test protobuf_schema_gen -- --ignored \
         regenerate`\n//! from the k8s-pb and k8s-openapi crates; do not edit.\n\n",
    );
    out.push_str(
        "use super::schema::{Field, KindMessage as K, Label::{self, *}, Message as M, Special::*, \
         Ty::{self, *}, Zero::{self, *}};\n\n",
    );
    out.push_str(
        "/// A field, positionally (keeps the table one line per field).\n\
         const fn f(tag: u32, json: &'static str, ty: Ty, label: Label, zero: Zero) -> Field {\n    \
         Field { tag, json, ty, label, zero }\n}\n\n",
    );
    let _ = writeln!(out, "/// Every message a served kind can contain.");
    let _ = writeln!(out, "#[rustfmt::skip]");
    let _ = writeln!(out, "pub static MESSAGES: [M; {}] = [", order.len());
    for (name, special, fields) in &order {
        let _ = writeln!(
            out,
            "    M {{ name: {name:?}, special: {special}, fields: &["
        );
        for (f, json, zero) in fields {
            let target = f
                .message
                .as_ref()
                .map(|t| index[&definition_name(t, &by_lower)]);
            let _ = writeln!(
                out,
                "        f({}, {json:?}, {}, {}, {zero}),",
                f.tag,
                rust_ty(&f.ty, target),
                f.label
            );
        }
        let _ = writeln!(out, "    ] }},");
    }
    out.push_str("];\n\n");
    let _ = writeln!(
        out,
        "/// Served kinds and their messages, sorted by apiVersion and kind."
    );
    let _ = writeln!(out, "#[rustfmt::skip]");
    let _ = writeln!(out, "pub static KINDS: [K; {}] = [", roots.len());
    for ((api_version, kind), name) in &roots {
        let _ = writeln!(
            out,
            "    K {{ api_version: {api_version:?}, kind: {kind:?}, message: {} }},",
            index[name]
        );
    }
    out.push_str("];\n");
    // A misspelt entry of the curated lists would silently do nothing.
    for listed in NON_POINTER_OMITEMPTY.iter().chain(POINTER_STRINGS) {
        assert!(
            used.contains(*listed),
            "{listed} is not a scalar field of any message"
        );
    }
    println!("fields not served at our API level (skipped as unknown): {dropped:#?}");
    out
}

/// What a k8s-pb field is in JSON.
enum Name {
    /// A property of this name.
    Json(String),
    /// An embedded Go struct (`json:",inline"`): its fields are the parent's.
    Inline,
    /// Not in the message's OpenAPI schema: a field of a later Kubernetes version.
    NotServed,
}

/// Lower case without underscores: how prost's snake_case and a JSON name compare when
/// acronyms split differently (`pod_ips` / `podIPs`, `a_pi_group` / `apiGroup`).
fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-' && *c != '$')
        .flat_map(char::to_lowercase)
        .collect()
}

fn json_name(
    f: &PbField,
    props: &[String],
    global: &HashMap<String, BTreeSet<String>>,
    pb: &BTreeMap<String, PbMessage>,
    by_name: &HashMap<String, &String>,
    by_lower: &HashMap<String, String>,
) -> Name {
    let exact: Vec<&String> = props
        .iter()
        .filter(|p| p.to_snake_case() == f.rust_name)
        .collect();
    if let [one] = exact.as_slice() {
        return Name::Json((*one).clone());
    }
    let loose: Vec<&String> = props
        .iter()
        .filter(|p| normalize(p) == normalize(&f.rust_name))
        .collect();
    if let [one] = loose.as_slice() {
        return Name::Json((*one).clone());
    }
    if props.is_empty() {
        // No schema of our own: the name every schema agrees on, else prost's guess.
        return match global.get(&normalize(&f.rust_name)) {
            Some(names) if names.len() == 1 => {
                Name::Json(names.iter().next().cloned().unwrap_or_default())
            }
            _ => Name::Json(lower_camel(&f.rust_name)),
        };
    }
    // An embedded struct: a message whose fields are properties of this one.
    if let Some(target) = &f.message {
        let target = &pb[by_name[&definition_name(target, by_lower)]];
        let inlined = target.fields.iter().any(|tf| {
            props
                .iter()
                .any(|p| normalize(p) == normalize(&tf.rust_name))
        });
        if inlined {
            return Name::Inline;
        }
    }
    Name::NotServed
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn table_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE_PATH)
}

/// Writes the table (run with `--ignored`), formatted with rustfmt when available.
#[test]
#[ignore = "regenerates src/http/protobuf/schema_table.rs"]
fn regenerate() {
    let path = table_path();
    std::fs::write(&path, generate()).expect("write table");
    let status = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .arg(&path)
        .status()
        .expect("run rustfmt");
    assert!(status.success(), "rustfmt failed");
}

/// The committed table is what the registry crates give today (so it is never edited by
/// hand, and a k8s-pb or k8s-openapi bump that changes it is noticed).
#[test]
fn committed_table_is_up_to_date() {
    let committed = std::fs::read_to_string(table_path()).expect("read table");
    let fresh = generate();
    let squash = |s: &str| {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != ',')
            .collect::<String>()
    };
    assert!(
        squash(&committed) == squash(&fresh),
        "schema_table.rs is stale: cargo test -p kube-apiserver --test protobuf_schema_gen -- --ignored regenerate"
    );
}
