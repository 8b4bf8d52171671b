//! `--overrides` and `--override-type` of `run` and `expose`: a patch applied to the generated
//! object before it is sent, as a JSON merge patch (the default), a JSON patch or a strategic
//! merge patch.

use api_types::strategicpatch::{self, Schema};
use clap::Args;
use serde_json::Value;

#[derive(Debug, Clone, Args)]
pub struct OverrideFlags {
    /// An inline JSON override for the generated object. If this is non-empty, it is used to
    /// override the generated object. Requires that the object supply a valid apiVersion
    /// field.
    #[arg(long, value_name = "string")]
    pub overrides: Option<String>,
    /// The method used to override the generated object: json, merge, or strategic.
    #[arg(long, default_value = "merge", value_name = "string")]
    pub override_type: String,
}

impl OverrideFlags {
    /// `object` with the override applied (unchanged when there is none).
    pub fn apply(&self, object: Value) -> anyhow::Result<Value> {
        let Some(overrides) = self.overrides.as_deref().filter(|o| !o.is_empty()) else {
            return Ok(object);
        };
        match self.override_type.as_str() {
            "json" => {
                let patch: json_patch::Patch = serde_json::from_str(overrides)
                    .map_err(|_| anyhow::anyhow!("Invalid JSON Patch"))?;
                let mut object = object;
                json_patch::patch(&mut object, &patch).map_err(|err| anyhow::anyhow!("{err}"))?;
                Ok(object)
            }
            "merge" => {
                let patch = parse_object(overrides)?;
                let mut object = object;
                json_patch::merge(&mut object, &patch);
                Ok(object)
            }
            "strategic" => {
                let patch = parse_object(overrides)?;
                let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
                let group = object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.split_once('/'))
                    .map_or("", |(group, _)| group);
                let schema = Schema::for_kind(group, kind);
                strategicpatch::merge_objects(&object, &patch, schema)
                    .map_err(|err| anyhow::anyhow!("{err}"))
            }
            other => anyhow::bail!("invalid override type: {other}"),
        }
    }
}

fn parse_object(text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).map_err(|_| anyhow::anyhow!("Invalid JSON Patch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flags(overrides: &str, kind: &str) -> OverrideFlags {
        OverrideFlags {
            overrides: Some(overrides.into()),
            override_type: kind.into(),
        }
    }

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "spec": {"containers": [{"name": "x", "image": "y"}]}})
    }

    #[test]
    fn merge_replaces_lists_strategic_merges_them_by_name() {
        let patch = r#"{"spec":{"containers":[{"name":"x","tty":true}]}}"#;
        let merged = flags(patch, "merge").apply(pod()).unwrap();
        assert_eq!(
            merged["spec"]["containers"],
            json!([{"name": "x", "tty": true}])
        );
        let merged = flags(patch, "strategic").apply(pod()).unwrap();
        assert_eq!(
            merged["spec"]["containers"],
            json!([{"name": "x", "image": "y", "tty": true}])
        );
    }

    #[test]
    fn json_patch_and_errors() {
        let patch = r#"[{"op":"add","path":"/spec/hostname","value":"h"}]"#;
        let patched = flags(patch, "json").apply(pod()).unwrap();
        assert_eq!(patched["spec"]["hostname"], "h");
        let err = flags("{}", "bad").apply(pod()).unwrap_err();
        assert_eq!(err.to_string(), "invalid override type: bad");
        let err = flags("{bad", "merge").apply(pod()).unwrap_err();
        assert_eq!(err.to_string(), "Invalid JSON Patch");
        assert_eq!(flags("", "bad").apply(pod()).unwrap(), pod());
    }
}
