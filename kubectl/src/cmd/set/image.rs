//! `kubectl set image TYPE NAME CONTAINER=IMAGE...` (`*` names every container).

use super::{Change, CommonArgs, apply_changes, objects};
use crate::app::options::GlobalOptions;
use clap::Args;
use serde_json::Value;

/// Flags of `kubectl set image`.
#[derive(Debug, Clone, Args)]
pub struct ImageArgs {
    /// (-f FILENAME | TYPE NAME) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ...
    pub args: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Resource arguments and `key=value` pairs.
pub type Split = (Vec<String>, Vec<(String, String)>);

/// Splits `args` into resources and `key=value` pairs, as upstream's `GetResourcesAndPairs`:
/// every resource comes before the first pair.
pub fn resources_and_pairs(args: &[String], pair_type: &str) -> anyhow::Result<Split> {
    let mut resources = Vec::new();
    let mut pairs = Vec::new();
    for arg in args {
        if arg.contains('=') {
            let (k, v) = arg.split_once('=').unwrap_or_default();
            if k.is_empty() || v.is_empty() {
                anyhow::bail!("invalid {pair_type}: {arg}");
            }
            pairs.push((k.to_owned(), v.to_owned()));
        } else if pairs.is_empty() {
            resources.push(arg.clone());
        } else {
            anyhow::bail!("all resources must be specified before {pair_type} changes: {arg}");
        }
    }
    Ok((resources, pairs))
}

pub async fn run(global: &GlobalOptions, args: &ImageArgs) -> anyhow::Result<()> {
    let (resources, images) = resources_and_pairs(&args.args, "image")?;
    if resources.is_empty() && args.common.filenames.is_empty() {
        anyhow::bail!(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
        );
    }
    if images.is_empty() {
        anyhow::bail!("at least one image update is required");
    }
    let change = Change {
        verb: "image updated",
        print_unchanged: false,
    };
    apply_changes(
        global,
        &resources,
        &args.common,
        change,
        |target, object| {
            let kind = target.info.resource.kind.clone();
            let Some(spec) = objects::pod_spec_mut(object, &kind) else {
                return Err(anyhow::anyhow!(
                    "error: {}/{} the object is not a pod or does not have a pod template: *v1.{kind}",
                    target.info.resource.name,
                    target.info.name.as_deref().unwrap_or("")
                ));
            };
            let mut missing = Vec::new();
            for (name, image) in &images {
                let mut found = false;
                for key in ["initContainers", "containers", "ephemeralContainers"] {
                    for c in spec
                        .get_mut(key)
                        .and_then(Value::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        if name == "*" || c.get("name").and_then(Value::as_str) == Some(name) {
                            c["image"] = Value::String(image.clone());
                            found = true;
                        }
                    }
                }
                if !found {
                    missing.push(anyhow::anyhow!("unable to find container named \"{name}\""));
                }
            }
            Ok(missing)
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn pairs() {
        let (r, p) = resources_and_pairs(&s(&["deploy", "web", "a=b:1", "*=c"]), "image").unwrap();
        assert_eq!(r, s(&["deploy", "web"]));
        assert_eq!(
            p,
            vec![("a".into(), "b:1".into()), ("*".into(), "c".into())]
        );
        for bad in [&["deploy/web", "a="][..], &["a=b", "deploy/web"], &["=b"]] {
            assert!(resources_and_pairs(&s(bad), "image").is_err(), "{bad:?}");
        }
    }
}
