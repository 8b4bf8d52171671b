//! Decoding JSON and YAML request bodies into `serde_json::Value` while noting duplicate keys,
//! which a plain decode silently collapses (the last value wins, as in Go). Upstream's strict
//! decoders report them under `fieldValidation`: JSON as `duplicate field "<path>"`, YAML as
//! go-yaml's `line <n>: key "<key>" already set in map`.
//!
//! The check rides on the decode itself: a key is looked up in the object being built before
//! its value is inserted, so a body without duplicates costs nothing extra. Only when a YAML
//! body has duplicates are their lines found, by decoding again up to each of them.

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// At most this many YAML duplicates are located (each costs a partial decode).
const MAX_LOCATED: usize = 64;

/// A duplicate key of a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// `spec.template.spec.containers[0].imagePullPolicy`.
    pub path: String,
    /// Where in the document it was met: the count of keys read before it.
    pub position: usize,
}

/// What the decoder keeps track of besides the value.
#[derive(Default)]
struct Context {
    /// The path of the value being decoded (JSON only, for messages).
    path: String,
    /// Keys read so far.
    keys: usize,
    /// Paths whose first position is wanted (see [`key_positions`]).
    wanted: Option<HashSet<String>>,
    positions: HashMap<String, usize>,
    duplicates: Vec<Duplicate>,
    /// YAML: the duplicate (by order of appearance) to stop at, to learn its location.
    stop_at: Option<usize>,
    yaml_duplicates: usize,
    stopped_key: Option<String>,
}

/// The marker of the error that stops a locating decode.
const STOP: &str = "\u{0}duplicate key located";

#[derive(Clone, Copy)]
struct ValueSeed<'c> {
    ctx: &'c RefCell<Context>,
    yaml: bool,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // JSON has no NaN or infinities (YAML's `.nan`, `.inf`).
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} cannot be represented in JSON")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let len = self.push(|path| {
                use std::fmt::Write;
                let _ = write!(path, "[{}]", items.len());
            });
            let item = seq.next_element_seed(self);
            self.ctx.borrow_mut().path.truncate(len);
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed {
            ctx: self.ctx,
            seen: &out,
            yaml: self.yaml,
        })? {
            let len = self.push(|path| {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            });
            {
                let mut ctx = self.ctx.borrow_mut();
                let position = ctx.keys;
                ctx.keys += 1;
                if !self.yaml && out.contains_key(&key) {
                    let path = ctx.path.clone();
                    ctx.duplicates.push(Duplicate { path, position });
                }
                let first_seen = ctx
                    .wanted
                    .as_ref()
                    .is_some_and(|w| w.contains(ctx.path.as_str()));
                if first_seen && !ctx.positions.contains_key(ctx.path.as_str()) {
                    let path = ctx.path.clone();
                    ctx.positions.insert(path, position);
                }
            }
            let value = map.next_value_seed(self);
            self.ctx.borrow_mut().path.truncate(len);
            out.insert(key, value?);
        }
        Ok(Value::Object(out))
    }

    /// A YAML tag other than the core ones: the tagged value, tag dropped (as upstream's
    /// YAML-to-JSON conversion does).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (_tag, variant): (de::IgnoredAny, _) = data.variant()?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
}

impl ValueSeed<'_> {
    /// Extends the current path (JSON only: YAML messages carry lines instead); returns the
    /// length to truncate it back to.
    fn push(&self, extend: impl FnOnce(&mut String)) -> usize {
        let mut ctx = self.ctx.borrow_mut();
        let len = ctx.path.len();
        if !self.yaml {
            extend(&mut ctx.path);
        }
        len
    }
}

/// A mapping key: a string in JSON; in YAML any scalar, written as YAML prints it.
struct KeySeed<'c, 'm> {
    ctx: &'c RefCell<Context>,
    seen: &'m Map<String, Value>,
    yaml: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_, '_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        if self.yaml {
            deserializer.deserialize_any(self)
        } else {
            deserializer.deserialize_str(self)
        }
    }
}

impl KeySeed<'_, '_> {
    /// In YAML a duplicate is counted here, inside the key's own deserialization, so that the
    /// error stopping a locating decode carries the key's line.
    fn key<E: de::Error>(&self, key: String, quoted: String) -> Result<String, E> {
        if self.yaml && self.seen.contains_key(&key) {
            let mut ctx = self.ctx.borrow_mut();
            let ordinal = ctx.yaml_duplicates;
            ctx.yaml_duplicates += 1;
            if ctx.stop_at == Some(ordinal) {
                ctx.stopped_key = Some(quoted);
                return Err(E::custom(STOP));
            }
        }
        Ok(key)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_, '_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        self.key(v.to_string(), crate::http::status::go_quote(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        let quoted = crate::http::status::go_quote(&v);
        self.key(v, quoted)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        self.key(v.to_string(), v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        self.key(v.to_string(), v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        self.key(v.to_string(), v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        self.key(v.to_string(), v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        self.key("null".to_string(), "<nil>".to_string())
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<String, A::Error> {
        let (_tag, variant): (de::IgnoredAny, _) = data.variant()?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<String, A::Error> {
        Err(de::Error::custom("mapping keys must be scalars"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<String, A::Error> {
        Err(de::Error::custom("mapping keys must be scalars"))
    }
}

/// Decodes JSON; the duplicate keys in the order met. serde_json's nesting limit applies.
pub fn decode_json(bytes: &[u8]) -> Result<(Value, Vec<Duplicate>), serde_json::Error> {
    let ctx = RefCell::new(Context::default());
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = ValueSeed {
        ctx: &ctx,
        yaml: false,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, ctx.into_inner().duplicates))
}

/// Where (in keys read before it) each of `paths` first appears in a JSON body.
pub fn key_positions(bytes: &[u8], paths: &[String]) -> HashMap<String, usize> {
    let ctx = RefCell::new(Context {
        wanted: Some(paths.iter().cloned().collect()),
        ..Context::default()
    });
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let decoded = ValueSeed {
        ctx: &ctx,
        yaml: false,
    }
    .deserialize(&mut deserializer);
    match decoded {
        Ok(_) => ctx.into_inner().positions,
        Err(_) => HashMap::new(),
    }
}

fn decode_yaml_with(bytes: &[u8], ctx: &RefCell<Context>) -> Result<Value, serde_yaml::Error> {
    // serde_yaml bounds nesting (128 levels) and alias expansion itself.
    ValueSeed { ctx, yaml: true }.deserialize(serde_yaml::Deserializer::from_slice(bytes))
}

/// Decodes YAML as upstream's YAML-to-JSON conversion does (keys become strings, tags are
/// dropped, the last of duplicate keys wins). With `locate`, also go-yaml's message for each
/// duplicate key: `line 5: key "name" already set in map`.
pub fn decode_yaml(bytes: &[u8], locate: bool) -> Result<(Value, Vec<String>), serde_yaml::Error> {
    let ctx = RefCell::new(Context::default());
    let value = decode_yaml_with(bytes, &ctx)?;
    let found = ctx.borrow().yaml_duplicates;
    let mut messages = Vec::new();
    if locate {
        for ordinal in 0..found.min(MAX_LOCATED) {
            let ctx = RefCell::new(Context {
                stop_at: Some(ordinal),
                ..Context::default()
            });
            let Err(err) = decode_yaml_with(bytes, &ctx) else {
                break;
            };
            let key = ctx.into_inner().stopped_key.unwrap_or_default();
            let line = err.location().map_or(0, |l| l.line());
            messages.push(format!("line {line}: key {key} already set in map"));
        }
    }
    Ok((value, messages))
}

/// Whether an error came from a locating decode stopping, not from the input.
pub fn is_stop(err: &serde_yaml::Error) -> bool {
    err.to_string().starts_with(STOP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_duplicates_with_their_paths() {
        let body = br#"{"metadata": {"name": "a", "name": "b", "labels": {"x": "1"}},
            "spec": {"paused": true, "selector": {}, "paused": false,
              "template": {"spec": {"containers": [{"name": "c"}, {"image": "i", "image": "j"}]}}}}"#;
        let (value, duplicates) = decode_json(body).expect("decodes");
        assert_eq!(value["metadata"]["name"], "b", "the last one wins");
        assert_eq!(value["spec"]["paused"], false);
        let paths: Vec<&str> = duplicates.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.name",
                "spec.paused",
                "spec.template.spec.containers[1].image"
            ]
        );
        assert!(duplicates.windows(2).all(|w| w[0].position < w[1].position));
        let positions = key_positions(body, &["spec.selector".to_string()]);
        assert!(positions["spec.selector"] < duplicates[1].position);
        assert!(positions["spec.selector"] > duplicates[0].position);
    }

    #[test]
    fn json_without_duplicates_decodes_as_serde_json_does() {
        let body =
            br#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "big": 18446744073709551615}"#;
        let (value, duplicates) = decode_json(body).expect("decodes");
        assert!(duplicates.is_empty());
        assert_eq!(value, serde_json::from_slice::<Value>(body).unwrap());
        assert!(decode_json(b"{\"a\": 1} x").is_err(), "trailing characters");
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        assert!(decode_json(deep.as_bytes()).is_err(), "nesting limit");
    }

    #[test]
    fn yaml_duplicates_with_their_lines() {
        let body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\ndata:\n  k: v\n  other: x\n  k: w\n";
        let (value, messages) = decode_yaml(body, true).expect("decodes");
        assert_eq!(value["metadata"]["name"], "b");
        assert_eq!(value["data"], json!({"k": "w", "other": "x"}));
        assert_eq!(
            messages,
            [
                "line 5: key \"name\" already set in map",
                "line 9: key \"k\" already set in map"
            ]
        );
        let (_, unlocated) = decode_yaml(body, false).expect("decodes");
        assert!(unlocated.is_empty());
    }

    #[test]
    fn yaml_conversion_rules() {
        let (value, _) =
            decode_yaml(b"1: one\ntrue: yes\nn: 1.5\nt: !custom x\nz: ~\n", true).expect("yaml");
        assert_eq!(
            value,
            json!({"1": "one", "true": "yes", "n": 1.5, "t": "x", "z": null})
        );
        assert!(decode_yaml(b"x: .nan\n", false).is_err());
        let err = decode_yaml(b"? [a]\n: b\n", false).expect_err("sequence key");
        assert!(err.to_string().contains("mapping keys must be scalars"));
        assert!(!is_stop(&err));
    }
}
