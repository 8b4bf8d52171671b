//! `spec.conversion.strategy: Webhook`: custom resources stored in one version and served in
//! another go through the CRD's conversion webhook, as upstream's webhook converter sends them:
//! one `ConversionReview` (apiextensions.k8s.io v1 or v1beta1, the first of the CRD's
//! `conversionReviewVersions` we speak) per object or per list, over the admission webhooks'
//! HTTPS client. The answer is checked as upstream checks it (uid, result, count, version,
//! kind, and metadata other than labels and annotations unchanged), and the converted objects
//! keep the original metadata with the webhook's labels and annotations.

use crate::admission::plugins::webhook::client::{WebhookClient, resolve};
use crate::admission::plugins::webhook::config::{Endpoint, RawClientConfig};
use crate::registry::ObjectLookup;
use api_types::validation::FieldPath;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Upstream's conversion webhooks are called with client-go's default webhook timeout.
pub const TIMEOUT: Duration = Duration::from_secs(30);

const V1: &str = "apiextensions.k8s.io/v1";
const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// The conversion webhook of one CRD, shared by its served versions.
pub struct WebhookConverter {
    /// The CRD's name, for the conversion metrics.
    crd_name: String,
    endpoint: Endpoint,
    ca_bundle: Option<Vec<u8>>,
    /// `conversionReviewVersions`, in the CRD's order of preference.
    review_versions: Vec<String>,
    client: Arc<WebhookClient>,
    /// The apiserver's caches, to resolve a `service` reference; weak because the apiserver
    /// state owns the CRD registry that owns this.
    lookup: Weak<dyn ObjectLookup>,
}

impl std::fmt::Debug for WebhookConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConverter")
            .field("endpoint", &self.endpoint)
            .field("review_versions", &self.review_versions)
            .finish()
    }
}

impl WebhookConverter {
    /// The converter of `crd`, or None unless its `spec.conversion.strategy` is `Webhook`.
    pub fn from_crd(
        crd: &Value,
        client: Arc<WebhookClient>,
        lookup: Weak<dyn ObjectLookup>,
    ) -> Option<Self> {
        let conversion = &crd["spec"]["conversion"];
        if conversion["strategy"] != "Webhook" {
            return None;
        }
        let webhook = &conversion["webhook"];
        // Validation requires a client config; an unreadable one fails every call instead of
        // silently serving unconverted objects.
        let raw = RawClientConfig::deserialize(&webhook["clientConfig"]).unwrap_or_default();
        let (endpoint, ca_bundle) = raw.into_parts();
        let review_versions = webhook["conversionReviewVersions"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            crd_name: crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            endpoint,
            ca_bundle,
            review_versions,
            client,
            lookup,
        })
    }

    /// `object` in `api_version`. An object already there, or an empty one, is not sent.
    /// Errors are upstream's messages, naming the object's own group, version and kind.
    pub async fn convert(&self, object: Value, api_version: &str) -> Result<Value, String> {
        if object["apiVersion"] == api_version {
            return Ok(object);
        }
        if is_empty_object(&object) {
            let mut object = object;
            object["apiVersion"] = json!(api_version);
            return Ok(object);
        }
        let gvk = gvk_of(&object);
        let from = version_of(object["apiVersion"].as_str().unwrap_or_default());
        let mut converted = self.timed(&[&object], api_version, &gvk, from).await?;
        if converted.len() != 1 {
            return Err(format!(
                "conversion webhook for {gvk} returned {} objects, expected 1",
                converted.len()
            ));
        }
        accept(&object, converted.remove(0), api_version).map_err(|r| match r {
            Rejection::Unreadable(e) => e,
            Rejection::Object(e) => {
                format!("conversion webhook for {gvk} returned invalid object: {e}")
            }
            Rejection::Metadata(e) => {
                format!("conversion webhook for {gvk} returned invalid metadata: {e}")
            }
            other => format!(
                "conversion webhook for {gvk} returned invalid object at index 0: {}",
                other.detail()
            ),
        })
    }

    /// The items of a list in `api_version`, in one review of those not there yet. Errors
    /// name the list (`<group>/<version>, Kind=<Kind>List`), as upstream's do.
    pub async fn convert_list(
        &self,
        mut items: Vec<Value>,
        api_version: &str,
        list_gvk: &str,
    ) -> Result<Vec<Value>, String> {
        let wanted: Vec<usize> = (0..items.len())
            .filter(|&i| items[i]["apiVersion"] != api_version)
            .collect();
        if wanted.is_empty() {
            return Ok(items);
        }
        let originals: Vec<&Value> = wanted.iter().map(|&i| &items[i]).collect();
        // Upstream's metric names the list's version, which is the one asked for.
        let converted = self
            .timed(&originals, api_version, list_gvk, version_of(api_version))
            .await?;
        if converted.len() != wanted.len() {
            return Err(format!(
                "conversion webhook for {list_gvk} returned {} objects, expected {}",
                converted.len(),
                wanted.len()
            ));
        }
        for (n, (converted, &i)) in converted.into_iter().zip(&wanted).enumerate() {
            // Upstream numbers the index before counting the item for unreadable objects and
            // after it for the other checks; kept, so messages read the same.
            let accepted = accept(&items[i], converted, api_version).map_err(|r| match r {
                Rejection::Unreadable(e) => format!(
                    "conversion webhook for {list_gvk} returned invalid converted object at index {n}: {e}"
                ),
                Rejection::Metadata(e) => format!(
                    "conversion webhook for {list_gvk} returned invalid metadata in object at index {}: {e}",
                    n + 1
                ),
                other => format!(
                    "conversion webhook for {list_gvk} returned invalid converted object at index {}: {}",
                    n + 1,
                    other.detail()
                ),
            })?;
            items[i] = accepted;
        }
        Ok(items)
    }

    /// [`Self::review`], recorded in upstream's
    /// `apiserver_crd_conversion_webhook_duration_seconds`.
    async fn timed(
        &self,
        objects: &[&Value],
        api_version: &str,
        gvk: &str,
        from_version: &str,
    ) -> Result<Vec<Value>, String> {
        let start = std::time::Instant::now();
        let result = self.review(objects, api_version, gvk).await;
        metrics::histogram!(
            "apiserver_crd_conversion_webhook_duration_seconds",
            "crd_name" => self.crd_name.clone(),
            "from_version" => from_version.to_owned(),
            "to_version" => version_of(api_version).to_owned(),
            "succeeded" => result.is_ok().to_string(),
        )
        .record(start.elapsed().as_secs_f64());
        result
    }

    /// Sends one review of `objects`; the converted objects of a successful answer.
    async fn review(
        &self,
        objects: &[&Value],
        api_version: &str,
        gvk: &str,
    ) -> Result<Vec<Value>, String> {
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let review_version = pick_version(&self.review_versions)?;
        let uid = uuid::Uuid::new_v4().to_string();
        let lookup = self
            .lookup
            .upgrade()
            .ok_or_else(|| failed("the apiserver is shutting down".into()))?;
        let target = resolve(&self.endpoint, TIMEOUT, &*lookup).map_err(failed)?;
        drop(lookup);
        let body = request_body(review_version, &uid, api_version, objects);
        let answer = self
            .client
            .post(
                &target,
                self.ca_bundle.as_deref(),
                serde_json::to_vec(&body).map_err(|e| failed(e.to_string()))?,
                TIMEOUT,
            )
            .await
            .map_err(failed)?;
        converted_objects(&answer, &uid, review_version).map_err(failed)
    }
}

/// The review version to send: the first of the CRD's that we speak.
fn pick_version(versions: &[String]) -> Result<&'static str, String> {
    versions
        .iter()
        .find_map(|v| match v.as_str() {
            "v1" => Some(V1),
            "v1beta1" => Some(V1BETA1),
            _ => None,
        })
        .ok_or_else(|| "no supported conversion review versions".to_string())
}

/// The `ConversionReview` asking for `objects` in `api_version`.
fn request_body(review_version: &str, uid: &str, api_version: &str, objects: &[&Value]) -> Value {
    json!({
        "apiVersion": review_version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
        // Upstream sends the empty response struct along; some webhooks echo it back.
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    })
}

/// Go's `GroupVersionKind.String()` of an object's apiVersion and kind.
fn gvk_of(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    gvk_string(api_version, kind)
}

/// The version part of an apiVersion.
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or_default()
}

/// Go's rendering of a group, version and kind: `<group>/<version>, Kind=<kind>`.
pub fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// Only apiVersion and kind: upstream converts these without calling the webhook.
fn is_empty_object(object: &Value) -> bool {
    object
        .as_object()
        .is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"))
}

/// The converted objects of a webhook's answer, checked as upstream checks the review (v1:
/// its kind and uid; both: a response with a successful result).
fn converted_objects(answer: &[u8], uid: &str, review_version: &str) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    if !review.is_object() {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type ConversionReview",
            go_json_type(&review)
        ));
    }
    if review_version == V1 {
        let api_version = review["apiVersion"].as_str().unwrap_or(V1);
        let kind = review["kind"].as_str().unwrap_or("ConversionReview");
        if api_version != V1 || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of {}, got {}",
                gvk_string(V1, "ConversionReview"),
                gvk_string(api_version, kind)
            ));
        }
    }
    let response = &review["response"];
    if response.is_null() {
        return Err("no response provided".into());
    }
    if review_version == V1 {
        let got = response["uid"].as_str().unwrap_or_default();
        if got != uid {
            return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
        }
    }
    let result = &response["result"];
    let status = result["status"].as_str().unwrap_or_default();
    if status != "Success" {
        return match result["message"].as_str().filter(|m| !m.is_empty()) {
            Some(message) => Err(message.to_string()),
            None => Err(format!(
                "response.result.status was '{status}', not 'Success'"
            )),
        };
    }
    Ok(response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// Why a converted object was not accepted.
#[derive(Debug, PartialEq)]
enum Rejection {
    /// Not an object at all.
    Unreadable(String),
    GroupVersion {
        expected: String,
        received: String,
    },
    Kind {
        expected: String,
        received: String,
    },
    /// Name, namespace or uid changed.
    Object(String),
    /// The metadata could not be restored (labels or annotations unusable).
    Metadata(String),
}

impl Rejection {
    fn detail(&self) -> String {
        match self {
            Rejection::GroupVersion { expected, received } => {
                format!("invalid groupVersion (expected {expected}, received {received})")
            }
            Rejection::Kind { expected, received } => {
                format!("invalid kind (expected {expected}, received {received})")
            }
            Rejection::Unreadable(e) | Rejection::Object(e) | Rejection::Metadata(e) => e.clone(),
        }
    }
}

/// Checks `converted` against `original` and gives it `original`'s metadata with the
/// webhook's labels and annotations: a webhook converts the body, never the identity.
fn accept(original: &Value, converted: Value, api_version: &str) -> Result<Value, Rejection> {
    let Value::Object(mut converted) = converted else {
        return Err(Rejection::Unreadable(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_type(&converted)
        )));
    };
    let text = |m: &Map<String, Value>, k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let received = text(&converted, "apiVersion");
    if received != api_version {
        return Err(Rejection::GroupVersion {
            expected: api_version.to_string(),
            received,
        });
    }
    let expected_kind = original["kind"].as_str().unwrap_or_default();
    let received_kind = text(&converted, "kind");
    if received_kind != expected_kind {
        return Err(Rejection::Kind {
            expected: expected_kind.to_string(),
            received: received_kind,
        });
    }
    let empty = Map::new();
    let before = original["metadata"].as_object().unwrap_or(&empty);
    let after = converted
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (field, label) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (text(before, field), text(after, field));
        if e != a {
            return Err(Rejection::Object(format!(
                "must have the same {label}: {e} != {a}"
            )));
        }
    }
    let metadata = restore_metadata(before, converted.get("metadata"))?;
    converted.insert("metadata".into(), Value::Object(metadata));
    Ok(Value::Object(converted))
}

/// `original`'s metadata with the labels and annotations of the webhook's answer, which are
/// validated when they changed.
fn restore_metadata(
    original: &Map<String, Value>,
    answered: Option<&Value>,
) -> Result<Map<String, Value>, Rejection> {
    let answered = match answered {
        None => {
            return Err(Rejection::Metadata(
                "missing metadata in converted object".into(),
            ));
        }
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(Rejection::Metadata(format!(
                "invalid metadata of type {} in converted object",
                go_json_type(other)
            )));
        }
    };
    let mut restored = original.clone();
    for field in ["labels", "annotations"] {
        let response = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(Rejection::Metadata(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_json_type(other)
                )));
            }
        };
        let empty = Map::new();
        let before = match restored.get(field) {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(Rejection::Metadata(format!(
                    "invalid metadata.{field} of type {} in original object",
                    go_json_type(other)
                )));
            }
        };
        let mut strings = BTreeMap::new();
        for (k, v) in response {
            let Some(v) = v.as_str() else {
                return Err(Rejection::Metadata(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_json_type(v)
                )));
            };
            strings.insert(k.clone(), v.to_string());
        }
        if before != response {
            let errs = if field == "labels" {
                api_types::validation::validate_labels(
                    &strings,
                    &FieldPath::new("metadata").child("labels"),
                )
            } else {
                // Upstream's path says `annotation`.
                api_types::validation::validate_annotations(
                    &strings,
                    &FieldPath::new("metadata").child("annotation"),
                )
            };
            if !errs.is_empty() {
                return Err(Rejection::Metadata(errs.to_string()));
            }
        }
        restored.insert(field.into(), Value::Object(response.clone()));
    }
    Ok(restored)
}

/// The Go type a JSON value decodes to, as Go's messages name it.
fn go_json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                         "labels": {"app": "x"}, "generation": 2},
            "spec": {"cronSpec": "* * * * *"},
        })
    }

    fn v2(object: &Value) -> Value {
        let mut out = object.clone();
        out["apiVersion"] = json!("stable.example.com/v2");
        out["spec"] = json!({"schedule": object["spec"]["cronSpec"]});
        out
    }

    #[test]
    fn the_first_spoken_review_version_is_sent() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(pick_version(&v(&["v2", "v1beta1", "v1"])), Ok(V1BETA1));
        assert_eq!(pick_version(&v(&["v1", "v1beta1"])), Ok(V1));
        assert_eq!(
            pick_version(&v(&["v3"])),
            Err("no supported conversion review versions".into())
        );
        let body = request_body(V1, "id", "stable.example.com/v2", &[&stored()]);
        assert_eq!(
            body["request"]["desiredAPIVersion"],
            "stable.example.com/v2"
        );
        assert_eq!(body["request"]["uid"], "id");
        assert_eq!(
            body["request"]["objects"][0]["spec"]["cronSpec"],
            "* * * * *"
        );
    }

    fn answer(uid: &str, result: Value, objects: Value) -> Vec<u8> {
        json!({"apiVersion": V1, "kind": "ConversionReview",
               "response": {"uid": uid, "result": result, "convertedObjects": objects}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn answers_are_checked_as_upstream_checks_them() {
        let ok = json!({"status": "Success"});
        assert_eq!(
            converted_objects(&answer("u", ok.clone(), json!([{"a": 1}])), "u", V1).unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            converted_objects(&answer("other", ok.clone(), json!([])), "u", V1).unwrap_err(),
            "expected response.uid=\"u\", got \"other\""
        );
        // v1beta1 answers are not held to their uid.
        assert!(converted_objects(&answer("other", ok, json!([])), "u", V1BETA1).is_ok());
        assert_eq!(
            converted_objects(
                &answer(
                    "u",
                    json!({"status": "Failure", "message": "no way"}),
                    json!([])
                ),
                "u",
                V1
            )
            .unwrap_err(),
            "no way"
        );
        assert_eq!(
            converted_objects(&answer("u", json!({}), json!([])), "u", V1).unwrap_err(),
            "response.result.status was '', not 'Success'"
        );
        assert_eq!(
            converted_objects(
                br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#,
                "u",
                V1
            )
            .unwrap_err(),
            "no response provided"
        );
        assert_eq!(
            converted_objects(
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{}}"#,
                "u",
                V1
            )
            .unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got admission.k8s.io/v1, Kind=AdmissionReview"
        );
        assert!(converted_objects(b"not json", "u", V1).is_err());
    }

    #[test]
    fn converted_objects_keep_the_original_identity() {
        let original = stored();
        let mut converted = v2(&original);
        // The webhook may change labels and annotations, nothing else of the metadata.
        converted["metadata"]["labels"] = json!({"app": "y"});
        converted["metadata"]["annotations"] = json!({"note": "converted"});
        converted["metadata"]["resourceVersion"] = json!("999");
        converted["metadata"]["generation"] = json!(5);
        let accepted = accept(&original, converted, "stable.example.com/v2").unwrap();
        assert_eq!(accepted["spec"], json!({"schedule": "* * * * *"}));
        assert_eq!(accepted["metadata"]["labels"], json!({"app": "y"}));
        assert_eq!(
            accepted["metadata"]["annotations"],
            json!({"note": "converted"})
        );
        assert_eq!(accepted["metadata"]["resourceVersion"], "7");
        assert_eq!(accepted["metadata"]["generation"], 2);
        // Labels left out of the answer are gone, as upstream drops them.
        let mut converted = v2(&original);
        converted["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        let accepted = accept(&original, converted, "stable.example.com/v2").unwrap();
        assert!(accepted["metadata"].get("labels").is_none());
    }

    #[test]
    fn bad_conversions_are_refused() {
        let original = stored();
        let to = "stable.example.com/v2";
        let mut wrong_version = v2(&original);
        wrong_version["apiVersion"] = json!("stable.example.com/v3");
        assert_eq!(
            accept(&original, wrong_version, to).unwrap_err().detail(),
            "invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v3)"
        );
        let mut wrong_kind = v2(&original);
        wrong_kind["kind"] = json!("Other");
        assert_eq!(
            accept(&original, wrong_kind, to).unwrap_err().detail(),
            "invalid kind (expected CronTab, received Other)"
        );
        let mut renamed = v2(&original);
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(
            accept(&original, renamed, to).unwrap_err(),
            Rejection::Object("must have the same name: a != b".into())
        );
        let mut new_uid = v2(&original);
        new_uid["metadata"]["uid"] = json!("u2");
        assert_eq!(
            accept(&original, new_uid, to).unwrap_err(),
            Rejection::Object("must have the same UID: u1 != u2".into())
        );
        let mut bad_label = v2(&original);
        bad_label["metadata"]["labels"] = json!({"app": 3});
        assert_eq!(
            accept(&original, bad_label, to).unwrap_err(),
            Rejection::Metadata(
                "metadata.labels[app] must be a string, but is int64 in converted object".into()
            )
        );
        let mut invalid_label = v2(&original);
        invalid_label["metadata"]["labels"] = json!({"app": "not valid!"});
        assert!(matches!(
            accept(&original, invalid_label, to).unwrap_err(),
            Rejection::Metadata(m) if m.starts_with("metadata.labels: Invalid value: \"not valid!\"")
        ));
        let mut no_meta = v2(&original);
        no_meta.as_object_mut().unwrap().remove("metadata");
        // Without metadata the identity checks fail first, as upstream's order has them.
        assert_eq!(
            accept(&original, no_meta, to).unwrap_err(),
            Rejection::Object("must have the same name: a != ".into())
        );
        assert!(matches!(
            accept(&original, json!("text"), to).unwrap_err(),
            Rejection::Unreadable(_)
        ));
    }

    #[test]
    fn go_names_of_versions_and_kinds() {
        assert_eq!(
            gvk_string("stable.example.com/v1", "CronTab"),
            "stable.example.com/v1, Kind=CronTab"
        );
        assert_eq!(gvk_string("v1", "Pod"), "/v1, Kind=Pod");
        assert!(is_empty_object(&json!({"apiVersion": "a/v1", "kind": "K"})));
        assert!(!is_empty_object(&stored()));
    }

    /// A lookup that is never there (its state was dropped).
    struct NoObjects;

    impl ObjectLookup for NoObjects {
        fn get(&self, _: &str, _: &str, _: Option<&str>, _: &str) -> Option<Arc<Value>> {
            None
        }

        fn list(
            &self,
            _: &str,
            _: &str,
            _: Option<&str>,
            _: &(dyn Fn(&Value) -> bool + Send + Sync),
        ) -> Vec<Arc<Value>> {
            Vec::new()
        }
    }

    fn converter(url: &str) -> WebhookConverter {
        let crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": url}, "conversionReviewVersions": ["v1"]}}}});
        let lookup: Weak<dyn ObjectLookup> = Weak::<NoObjects>::new();
        WebhookConverter::from_crd(&crd, Arc::new(WebhookClient::default()), lookup).unwrap()
    }

    #[tokio::test]
    async fn objects_already_in_the_version_are_not_sent() {
        // Nothing listens there: any call would fail.
        let converter = converter("https://127.0.0.1:1/convert");
        let object = stored();
        assert_eq!(
            converter
                .convert(object.clone(), "stable.example.com/v1")
                .await
                .unwrap(),
            object
        );
        let items = vec![object.clone(), object.clone()];
        assert_eq!(
            converter
                .convert_list(items.clone(), "stable.example.com/v1", "x")
                .await
                .unwrap(),
            items
        );
        let empty = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"});
        assert_eq!(
            converter
                .convert(empty, "stable.example.com/v2")
                .await
                .unwrap()["apiVersion"],
            "stable.example.com/v2"
        );
        // The lookup is gone (no apiserver state): the call fails with upstream's prefix.
        let err = converter
            .convert(object, "stable.example.com/v2")
            .await
            .unwrap_err();
        assert!(
            err.starts_with("conversion webhook for stable.example.com/v1, Kind=CronTab failed: "),
            "{err}"
        );
    }

    #[test]
    fn only_webhook_strategies_build_a_converter() {
        let none = json!({"spec": {"conversion": {"strategy": "None"}}});
        let lookup: Weak<dyn ObjectLookup> = Weak::<NoObjects>::new();
        assert!(WebhookConverter::from_crd(&none, Arc::default(), lookup).is_none());
        let c = converter("https://h/x");
        assert_eq!(c.endpoint, Endpoint::Url("https://h/x".into()));
        assert_eq!(c.review_versions, ["v1"]);
    }
}
