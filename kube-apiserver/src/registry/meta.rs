//! Reading and writing `metadata` of objects held as JSON.

use rand::Rng;
use serde_json::{Map, Value};

/// Upstream's alphabet for generated name suffixes: no vowels (no words) and no look-alikes.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const SUFFIX_LEN: usize = 5;
/// generateName prefixes are cut so the generated name fits a DNS label (63).
const MAX_PREFIX_LEN: usize = 63 - SUFFIX_LEN;

/// `metadata` of `object`, created if absent (a non-object value is replaced).
pub fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let map = object.as_object_mut().expect("made an object above");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("made an object above")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

pub fn name(object: &Value) -> Option<&str> {
    meta_str(object, "name").filter(|n| !n.is_empty())
}

pub fn namespace(object: &Value) -> Option<&str> {
    meta_str(object, "namespace").filter(|n| !n.is_empty())
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers` (removing the field when empty, as upstream serializes it).
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    let meta = meta_mut(object);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

/// Whether deletion of the object has started.
pub fn is_terminating(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
}

/// A name from a `generateName` prefix: the prefix (cut to fit) and five random characters.
pub fn generate_name(prefix: &str) -> String {
    let cut = prefix
        .char_indices()
        .nth(MAX_PREFIX_LEN)
        .map_or(prefix, |(i, _)| &prefix[..i]);
    let mut rng = rand::rng();
    let suffix: String = (0..SUFFIX_LEN)
        .map(|_| SUFFIX_ALPHABET[rng.random_range(0..SUFFIX_ALPHABET.len())] as char)
        .collect();
    format!("{cut}{suffix}")
}

/// Now, as upstream writes timestamps (RFC 3339, whole seconds, UTC).
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `seconds` from now, in the same format.
pub fn now_plus(seconds: i64) -> String {
    let later = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    later.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The object without `metadata` and `status`: what a change to counts as a spec change for
/// `metadata.generation`.
pub fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_names_keep_the_prefix_and_fit() {
        let name = generate_name("web-");
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert!(name[4..].bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
        let long = "x".repeat(100);
        assert_eq!(generate_name(&long).len(), 63);
    }

    #[test]
    fn finalizers_round_trip() {
        let mut obj = json!({"metadata": {"name": "a"}});
        assert!(finalizers(&obj).is_empty());
        set_finalizers(&mut obj, &["kubernetes".into()]);
        assert_eq!(finalizers(&obj), ["kubernetes"]);
        set_finalizers(&mut obj, &[]);
        assert!(obj["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let now = now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z'));
        assert!(now_plus(30) > now);
    }
}
