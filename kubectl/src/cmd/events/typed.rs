//! Events as upstream's `kubectl events` prints them: decoded into the typed `corev1.Event`
//! and encoded again, so fields that are not `omitempty` appear (`"firstTimestamp": null`,
//! `"source": {}`) and `-o json` follows the Go struct's field order, not the alphabet.

use crate::printers::go_struct;
use serde_json::{Map, Value};

/// The event as the typed encoding writes it; without `managedFields` unless `keep_managed`
/// (upstream's json and yaml printers omit them unless asked).
pub fn typed_event(mut event: Value, keep_managed: bool) -> Value {
    if let Some(obj) = event.as_object_mut() {
        obj.insert("kind".into(), Value::String("Event".into()));
        obj.insert("apiVersion".into(), Value::String("v1".into()));
    }
    if !keep_managed {
        crate::printers::strip_managed_fields(&mut event);
    }
    go_struct::as_typed(&event)
}

/// The `EventList` upstream prints for `-o json|yaml|jsonpath`.
pub fn event_list(items: Vec<Value>) -> Value {
    let mut list = Map::new();
    list.insert("kind".into(), Value::String("EventList".into()));
    list.insert("apiVersion".into(), Value::String("v1".into()));
    list.insert("metadata".into(), Value::Object(Map::new()));
    list.insert("items".into(), Value::Array(items));
    Value::Object(list)
}

/// `json.MarshalIndent(list, "", "    ")` of the typed list or event, with a final newline.
pub fn to_json(typed: &Value) -> String {
    go_struct::to_go_json(typed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn struct_order_and_defaults() {
        let e = typed_event(
            json!({
                "type": "Normal", "reason": "R", "metadata": {"uid": "u", "name": "e",
                "managedFields": []}, "involvedObject": {"name": "p", "kind": "Pod"}
            }),
            false,
        );
        let text = to_json(&event_list(vec![e]));
        let want = "{\n    \"kind\": \"EventList\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {},\n    \"items\": [\n        {\n            \"kind\": \"Event\",\n            \"apiVersion\": \"v1\",\n            \"metadata\": {\n                \"name\": \"e\",\n                \"uid\": \"u\",\n                \"creationTimestamp\": null\n            },\n            \"involvedObject\": {\n                \"kind\": \"Pod\",\n                \"name\": \"p\"\n            },\n            \"reason\": \"R\",\n            \"source\": {},\n            \"firstTimestamp\": null,\n            \"lastTimestamp\": null,\n            \"type\": \"Normal\",\n            \"eventTime\": null,\n            \"reportingComponent\": \"\",\n            \"reportingInstance\": \"\"\n        }\n    ]\n}\n";
        assert_eq!(text, want);
    }
}
