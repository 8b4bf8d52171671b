//! managedFields sent as protobuf (what typed client-go clients write, e.g. an update that
//! carries the managedFields it read) decode to the JSON form and then to the same field sets
//! the JSON form gives, so the field manager honours them either way.

use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube_apiserver::apply::fieldpath::{FieldSet, PathElement};
use kube_apiserver::apply::managed::{Managed, Operation};
use kube_apiserver::http::protobuf::decode_protobuf;
use prost::Message;
use serde_json::json;

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

#[test]
fn protobuf_managed_fields_decode_to_the_same_field_sets() {
    let fields_v1 =
        json!({"f:data": {".": {}, "f:color": {}}, "f:metadata": {"f:labels": {"f:app": {}}}});
    let entry = meta::ManagedFieldsEntry {
        manager: Some("kubectl-create".into()),
        operation: Some("Update".into()),
        api_version: Some("v1".into()),
        time: Some(meta::Time {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(meta::FieldsV1 {
            raw: Some(fields_v1.to_string().into_bytes()),
        }),
        subresource: Some(String::new()),
    };
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("c".into()),
            namespace: Some("p".into()),
            managed_fields: vec![entry],
            ..Default::default()
        }),
        data: [("color".to_string(), "blue".to_string())].into(),
        ..Default::default()
    };
    let object = decode_protobuf(&envelope("v1", "ConfigMap", cm.encode_to_vec()))
        .unwrap_or_else(|e| panic!("{}", e.message()));
    let list = &object["metadata"]["managedFields"];
    assert_eq!(list[0]["fieldsV1"], fields_v1);
    assert_eq!(list[0]["time"], "2023-11-14T22:13:20Z");

    let managed = Managed::decode(Some(list)).expect("managedFields decode");
    let [entry] = managed.entries.as_slice() else {
        panic!("{managed:?}");
    };
    assert_eq!(entry.manager, "kubectl-create");
    assert_eq!(entry.operation, Operation::Update);
    assert!(entry.subresource.is_empty());
    let data = PathElement::Field("data".into());
    assert!(entry.fields.has(std::slice::from_ref(&data)));
    assert!(
        entry
            .fields
            .has(&[data, PathElement::Field("color".into())])
    );
    assert_eq!(
        Some(entry.fields.clone()),
        FieldSet::from_fields_v1(&fields_v1)
    );
    // And back: the JSON list the server stores is what was sent.
    let encoded = managed.encode().unwrap();
    assert_eq!(encoded[0]["fieldsV1"], fields_v1);
    assert_eq!(encoded[0]["manager"], "kubectl-create");
    assert!(encoded[0].get("subresource").is_none());
}
