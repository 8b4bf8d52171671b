//! Upstream's `Complete` and `Validate` checks of the flags, with their messages.

use super::DebugArgs;
use super::image;
use serde_json::Value;

/// pflag's `stringToString`: one `k=v` pair, or (with more than one `=`) comma-separated
/// pairs; later keys win.
pub fn string_to_string(values: &[String], flag: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for value in values {
        let bad = |what: &str| {
            anyhow::anyhow!(
                "invalid argument {value:?} for \"--{flag}\" flag: {what} must be formatted as key=value\nSee 'kubectl debug --help' for usage."
            )
        };
        let pairs: Vec<&str> = match value.matches('=').count() {
            0 => return Err(bad(value)),
            1 => vec![value.trim_matches('"')],
            // pflag reads these as one CSV record; no quoting is handled here.
            _ => value.split(',').collect(),
        };
        for pair in pairs {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(bad(pair));
            };
            out.retain(|(old, _)| old != k);
            out.push((k.to_owned(), v.to_owned()));
        }
    }
    // Upstream ranges over a Go map (random order); sorted is one of its orders.
    out.sort();
    Ok(out)
}

/// Upstream's `Validate`, in its order; `Targeting container` is printed on the way.
pub fn validate(
    args: &DebugArgs,
    set_images: &[(String, String)],
    attach: bool,
    custom: Option<&Value>,
) -> anyhow::Result<()> {
    let container = args.container.as_deref().unwrap_or("");
    if attach && args.attach.is_some() && args.image.is_empty() && container.is_empty() {
        anyhow::bail!(
            "you must specify --container or create a new container using --image in order to attach."
        );
    }
    if !args.copy_to.is_empty() {
        if args.image.is_empty() && set_images.is_empty() && args.args.is_empty() {
            anyhow::bail!("you must specify --image, --set-image or command arguments.");
        }
        if !args.args.is_empty() && container.is_empty() && args.image.is_empty() {
            anyhow::bail!(
                "you must specify an existing container or a new image when specifying args."
            );
        }
    } else if args.replace {
        anyhow::bail!("--replace may only be used with --copy-to.");
    } else if args.same_node {
        anyhow::bail!("--same-node may only be used with --copy-to.");
    } else if !set_images.is_empty() {
        anyhow::bail!("--set-image may only be used with --copy-to.");
    } else if args.image.is_empty() {
        anyhow::bail!("you must specify --image when not using --copy-to.");
    }
    if !args.image.is_empty() && !image::is_reference(&args.image) {
        anyhow::bail!(
            "invalid image name {:?}: invalid reference format",
            args.image
        );
    }
    if args.targets.is_empty() && args.filename.is_empty() {
        anyhow::bail!("NAME or filename is required for debug");
    }
    if !matches!(
        args.image_pull_policy.as_str(),
        "Always" | "IfNotPresent" | "Never" | ""
    ) {
        anyhow::bail!("invalid image pull policy: {}", args.image_pull_policy);
    }
    for (name, image) in set_images {
        if !image::is_reference(image) {
            anyhow::bail!(
                "invalid image name {image:?} for container {name:?}: invalid reference format"
            );
        }
    }
    if !args.target.is_empty() {
        if !args.copy_to.is_empty() {
            anyhow::bail!(
                "--target is incompatible with --copy-to. Use --share-processes instead."
            );
        }
        if !args.quiet {
            println!(
                "Targeting container {:?}. If you don't see processes from this container it may be because the container runtime doesn't support this feature.",
                args.target
            );
        }
    }
    if args.tty && !args.stdin {
        anyhow::bail!("-i/--stdin is required for containers with -t/--tty=true");
    }
    if let Some(custom) = custom {
        let set = |k: &str| match custom.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if ["name", "command", "image", "volumeDevices"]
            .iter()
            .any(|k| set(k))
            || custom.get("lifecycle").is_some_and(|l| !l.is_null())
        {
            anyhow::bail!(
                "name, command, image, lifecycle and volume devices are not modifiable via custom profile"
            );
        }
    }
    if args.profile == "legacy" {
        eprintln!(
            "--profile=legacy is deprecated and will be removed in the future. It is recommended to explicitly specify a profile, for example \"--profile=general\"."
        );
    }
    Ok(())
}

/// `--custom`: a partial container spec in JSON or YAML.
pub fn read_custom(path: &str) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        let reason = match err.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
            _ => err.to_string(),
        };
        anyhow::anyhow!(
            "must pass a container spec json file for custom profile: open {path}: {reason}"
        )
    })?;
    let parsed = serde_json::from_str::<Value>(&text)
        .or_else(|_| serde_yaml::from_str::<Value>(&text))
        .map_err(|err| anyhow::anyhow!("{path} does not contain a valid container spec: {err}"))?;
    match parsed {
        Value::Object(_) => Ok(parsed),
        // An empty document leaves the container as it is.
        Value::Null => Ok(Value::Object(Default::default())),
        _ => anyhow::bail!("{path} does not contain a valid container spec: not an object"),
    }
}
