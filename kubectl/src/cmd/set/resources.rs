//! `kubectl set resources`: `--limits` and `--requests` (`cpu=200m,memory=512Mi`) merged into
//! the resources of the containers `-c` selects.

use super::{Change, CommonArgs, apply_changes, containers_matching, objects};
use crate::app::options::GlobalOptions;
use clap::Args;
use serde_json::{Map, Value};

/// Flags of `kubectl set resources`.
#[derive(Debug, Clone, Args)]
pub struct ResourcesArgs {
    /// (-f FILENAME | TYPE NAME)
    pub args: Vec<String>,
    /// The names of containers in the selected pod templates to change, all containers are
    /// selected by default - may use wildcards
    #[arg(
        short = 'c',
        long = "containers",
        default_value = "*",
        value_name = "string"
    )]
    pub containers: String,
    /// The resource requirement limits for this container. For example, 'cpu=200m,memory=512Mi'.
    #[arg(long, value_name = "string")]
    pub limits: Option<String>,
    /// The resource requirement requests for this container. For example, 'cpu=100m,memory=256Mi'.
    #[arg(long, value_name = "string")]
    pub requests: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Parses `cpu=200m,memory=512Mi` into a resource list with canonical quantities.
pub fn parse_resource_list(text: &str) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let Some((name, quantity)) = part.split_once('=') else {
            anyhow::bail!("Invalid argument syntax {part}, expected <resource>=<value>");
        };
        let quantity = canonical_quantity(quantity).ok_or_else(|| {
            anyhow::anyhow!("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        })?;
        out.insert(name.to_owned(), Value::String(quantity));
    }
    Ok(out)
}

/// A quantity as the apiserver would store it, for the common shapes: plain decimals with a
/// fraction become millis (`0.1` -> `100m`); suffixed and integer values stay as written.
pub fn canonical_quantity(q: &str) -> Option<String> {
    let digits_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(digits_end);
    if number.is_empty() || number.parse::<f64>().is_err() {
        return None;
    }
    const SUFFIXES: &[&str] = &[
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    if !SUFFIXES.contains(&suffix) {
        return None;
    }
    if suffix.is_empty()
        && let Some((int, frac)) = number.split_once('.')
        && frac.len() <= 3
    {
        let millis = format!("{int}{frac:0<3}");
        let millis = millis.trim_start_matches('0');
        return Some(if millis.is_empty() {
            "0".to_owned()
        } else if let Some(whole) = millis.strip_suffix("000") {
            whole.to_owned()
        } else {
            format!("{millis}m")
        });
    }
    Some(q.to_owned())
}

pub async fn run(global: &GlobalOptions, args: &ResourcesArgs) -> anyhow::Result<()> {
    let limits = parse_resource_list(args.limits.as_deref().unwrap_or(""))?;
    let requests = parse_resource_list(args.requests.as_deref().unwrap_or(""))?;
    if limits.is_empty() && requests.is_empty() {
        anyhow::bail!(
            "you must specify an update to requests or limits (in the form of --requests/--limits)"
        );
    }
    if args.args.is_empty() && args.common.filenames.is_empty() {
        anyhow::bail!(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
        );
    }
    let change = Change {
        verb: "resource requirements updated",
        print_unchanged: false,
    };
    apply_changes(global, &args.args, &args.common, change, |target, object| {
        let kind = target.info.resource.kind.clone();
        let Some(spec) = objects::pod_spec_mut(object, &kind) else {
            return Err(anyhow::anyhow!(
                "error: {}/{} the object is not a pod or does not have a pod template: *v1.{kind}",
                target.info.resource.name,
                target.info.name.as_deref().unwrap_or("")
            ));
        };
        let containers = containers_matching(spec, &args.containers, true);
        if containers.is_empty() {
            return Ok(vec![anyhow::anyhow!(
                "error: unable to find container named {}",
                args.containers
            )]);
        }
        for c in containers {
            let res = c
                .entry("resources")
                .or_insert_with(|| Value::Object(Map::new()));
            for (key, list) in [("limits", &limits), ("requests", &requests)] {
                if list.is_empty() {
                    continue;
                }
                if let Some(res) = res.as_object_mut() {
                    let have = res
                        .entry(key)
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(have) = have.as_object_mut() {
                        have.extend(list.clone());
                    }
                }
            }
        }
        Ok(Vec::new())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for (q, want) in [
            ("200m", Some("200m")),
            ("0.1", Some("100m")),
            ("1.5", Some("1500m")),
            ("2.0", Some("2")),
            ("512Mi", Some("512Mi")),
            ("1", Some("1")),
            ("abc", None),
            ("1Zi", None),
        ] {
            assert_eq!(canonical_quantity(q).as_deref(), want, "{q}");
        }
        let list = parse_resource_list("cpu=200m,memory=512Mi").unwrap();
        assert_eq!(list.len(), 2);
        assert!(parse_resource_list("cpu").is_err());
    }
}
