//! Responses of resource requests: the object (or list) converted as the Accept header asked
//! (Table, PartialObjectMetadata) and encoded as JSON or YAML.

use crate::http::negotiation::{Conversion, MediaType};
pub use crate::http::response::{
    encode as respond, encode_bytes as encode, encoded as respond_bytes,
};
use crate::rest::state::ResourceEntry;
use crate::tables::custom::CustomPrinter;
use crate::tables::{IncludeObject, TableOptions, to_table};
use api_types::registry::ResourceInfo;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// List metadata carried into every representation of a list.
#[derive(Debug, Clone, Default)]
pub struct ListMeta {
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining_item_count: Option<i64>,
}

/// The `<Kind>List` object of `items`.
pub fn list_object(info: &ResourceInfo, items: Vec<Value>, meta: &ListMeta) -> Value {
    let mut metadata = json!({"resourceVersion": meta.resource_version});
    if let Some(token) = &meta.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(count) = meta.remaining_item_count {
        metadata["remainingItemCount"] = json!(count);
    }
    json!({
        "apiVersion": info.api_version(),
        "kind": format!("{}List", info.kind),
        "metadata": metadata,
        "items": items,
    })
}

/// The JSON of a list of `items` shared with the watch cache: the same bytes as encoding
/// [`list_object`], without copying the items into it.
pub fn list_json(info: &ResourceInfo, items: &[Arc<Value>], meta: &ListMeta) -> Vec<u8> {
    struct Items<'a>(&'a [Arc<Value>]);
    impl Serialize for Items<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(self.0.iter().map(|item| &**item))
        }
    }
    struct List<'a> {
        envelope: &'a Map<String, Value>,
        items: Items<'a>,
    }
    impl Serialize for List<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.envelope.len()))?;
            for (key, value) in self.envelope {
                if key == "items" {
                    map.serialize_entry(key, &self.items)?;
                } else {
                    map.serialize_entry(key, value)?;
                }
            }
            map.end()
        }
    }
    let envelope = list_object(info, Vec::new(), meta);
    let Some(envelope) = envelope.as_object() else {
        return Vec::new();
    };
    // Serializing plain JSON values into memory cannot fail.
    serde_json::to_vec(&List {
        envelope,
        items: Items(items),
    })
    .unwrap_or_default()
}

/// `PartialObjectMetadata` of one object.
fn partial_metadata(object: &Value, version: &str) -> Value {
    json!({
        "apiVersion": format!("meta.k8s.io/{version}"),
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Converts `body` (an object, or a list when `list` is given) as `media` asks; Tables with
/// the built-in printer of `info`.
pub fn convert(
    info: &ResourceInfo,
    body: Value,
    list: Option<&ListMeta>,
    media: &MediaType,
    include_object: IncludeObject,
) -> Value {
    convert_with(info, body, list, media, include_object, None)
}

/// The printer of a custom resource's Tables (its CRD's printer columns); `None` for
/// built-in resources.
pub fn printer_of(entry: &ResourceEntry) -> Option<&CustomPrinter> {
    entry.custom.as_deref().map(|custom| &*custom.printer)
}

/// [`convert`], with Tables printed by `printer` when given (custom resources).
pub fn convert_with(
    info: &ResourceInfo,
    body: Value,
    list: Option<&ListMeta>,
    media: &MediaType,
    include_object: IncludeObject,
    printer: Option<&CustomPrinter>,
) -> Value {
    match media.conversion {
        Conversion::Table { version } => {
            let objects = match list {
                Some(_) => body["items"].as_array().cloned().unwrap_or_default(),
                None => vec![body],
            };
            let mut options = TableOptions::at(jiff::Timestamp::now());
            options.include_object = include_object;
            if let Some(meta) = list {
                options.resource_version = Some(meta.resource_version.clone());
                options.continue_token = meta.continue_token.clone();
                options.remaining_item_count = meta.remaining_item_count;
            } else if printer.is_some() {
                // Upstream's CRD table convertor reads the list metadata of whatever it is
                // given; a single object lends its resourceVersion.
                options.resource_version = objects[0]["metadata"]["resourceVersion"]
                    .as_str()
                    .filter(|rv| !rv.is_empty())
                    .map(str::to_owned);
            }
            let mut table = match printer {
                Some(printer) => printer.to_table(&objects, &options),
                None => to_table(info.group, info.plural, &objects, &options),
            };
            table["apiVersion"] = json!(format!("meta.k8s.io/{version}"));
            table
        }
        Conversion::PartialObjectMetadata { version }
        | Conversion::PartialObjectMetadataList { version } => match list {
            Some(meta) => {
                let items: Vec<Value> = body["items"]
                    .as_array()
                    .map(|items| items.iter().map(|o| partial_metadata(o, version)).collect())
                    .unwrap_or_default();
                let mut out = json!({
                    "apiVersion": format!("meta.k8s.io/{version}"),
                    "kind": "PartialObjectMetadataList",
                    "metadata": {"resourceVersion": meta.resource_version},
                    "items": items,
                });
                if let Some(token) = &meta.continue_token {
                    out["metadata"]["continue"] = json!(token);
                }
                out
            }
            None => partial_metadata(&body, version),
        },
        _ => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::negotiation::{EndpointRestrictions, negotiate_output};

    #[test]
    fn shared_items_encode_as_the_list_object_does() {
        let info = api_types::registry::by_group_version_resource("", "v1", "configmaps").unwrap();
        let items: Vec<Arc<Value>> = (0..3)
            .map(|i| {
                Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("c{i}"), "managedFields": [{"manager": "m"}]},
                    "data": {"k": "v"}}))
            })
            .collect();
        let meta = ListMeta {
            resource_version: "42".into(),
            ..Default::default()
        };
        let copied = list_object(info, items.iter().map(|i| (**i).clone()).collect(), &meta);
        assert_eq!(
            list_json(info, &items, &meta),
            serde_json::to_vec(&copied).unwrap()
        );
        assert_eq!(
            list_json(info, &[], &meta),
            serde_json::to_vec(&list_object(info, Vec::new(), &meta)).unwrap()
        );
    }

    fn table_media() -> MediaType {
        negotiate_output(
            Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
            EndpointRestrictions::RESOURCE,
        )
        .unwrap()
    }

    #[test]
    fn custom_resources_print_their_columns() {
        let info = api_types::registry::by_group_resource("apps", "deployments").unwrap();
        let printer = CustomPrinter::new(&[json!({
            "name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas",
        })])
        .unwrap();
        let object = json!({
            "metadata": {"name": "a", "resourceVersion": "7"},
            "spec": {"replicas": 2},
        });
        let table = convert_with(
            info,
            object.clone(),
            None,
            &table_media(),
            IncludeObject::None,
            Some(&printer),
        );
        assert_eq!(table["columnDefinitions"][1]["name"], "Replicas");
        assert_eq!(table["rows"][0]["cells"], json!(["a", 2]));
        assert_eq!(table["metadata"]["resourceVersion"], "7");

        let list = list_object(info, vec![object], &ListMeta::default());
        let meta = ListMeta {
            resource_version: "9".into(),
            ..Default::default()
        };
        let table = convert_with(
            info,
            list,
            Some(&meta),
            &table_media(),
            IncludeObject::None,
            Some(&printer),
        );
        assert_eq!(table["metadata"]["resourceVersion"], "9");
        assert_eq!(table["rows"][0]["cells"], json!(["a", 2]));

        // Without a printer, the built-in columns.
        let table = convert(
            info,
            json!({"metadata": {"name": "a"}}),
            None,
            &table_media(),
            IncludeObject::None,
        );
        assert_ne!(table["columnDefinitions"][1]["name"], "Replicas");
    }
}
