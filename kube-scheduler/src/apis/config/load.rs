//! Reading a `--config` file as upstream's strict decoder does: YAML or JSON, the right
//! apiVersion and kind, no unknown field and no wrong type anywhere (plugin args included),
//! each error naming its field; then defaults and validation.

use super::defaults::{PLUGINS_WITH_ARGS, set_defaults};
use super::types::*;
use super::validation::{validate, validate_user_plugins};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// Reads, decodes, defaults and validates a configuration file.
pub fn load_config_file(path: &Path) -> Result<KubeSchedulerConfiguration, String> {
    let data = std::fs::read_to_string(path)
        .map_err(|e| format!("reading config file {}: {e}", path.display()))?;
    let cfg = decode(&data)?;
    complete(cfg).map_err(|e| e.to_string())
}

/// Defaults and validates a decoded configuration.
pub fn complete(
    mut cfg: KubeSchedulerConfiguration,
) -> Result<KubeSchedulerConfiguration, api_types::validation::ErrorList> {
    // The plugin lists are checked as the user wrote them (their indices), the rest once
    // defaulted; all errors are reported together, as upstream's aggregate.
    let mut errs = validate_user_plugins(&cfg);
    set_defaults(&mut cfg);
    errs.append(validate(&cfg));
    errs.into_result()?;
    Ok(cfg)
}

/// Strictly decodes a KubeSchedulerConfiguration (YAML, of which JSON is a subset).
pub fn decode(data: &str) -> Result<KubeSchedulerConfiguration, String> {
    let doc: serde_yaml::Value =
        serde_yaml::from_str(data).map_err(|e| format!("decoding config file: {e}"))?;
    let text = |key: &str| doc.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    check_type_meta(text("apiVersion"), text("kind"))?;
    let cfg: KubeSchedulerConfiguration = strict(data).map_err(|e| e.to_string())?;
    for (i, profile) in cfg.profiles.iter().flatten().enumerate() {
        for (j, pc) in profile.plugin_config.iter().flatten().enumerate() {
            let path = format!("profiles[{i}].pluginConfig[{j}].args");
            check_args(&path, &pc.name, pc.args.as_ref())?;
        }
    }
    Ok(cfg)
}

fn check_type_meta(api_version: &str, kind: &str) -> Result<(), String> {
    if kind.is_empty() {
        return Err("Object 'Kind' is missing in config file".into());
    }
    if api_version.is_empty() {
        return Err("Object 'apiVersion' is missing in config file".into());
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if group == GROUP && version != "v1" {
        return Err(format!(
            "no kind {kind:?} is registered for version {api_version:?}: {api_version} is no \
             longer served (the v1beta versions were removed), use {API_VERSION}"
        ));
    }
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "no kind {kind:?} is registered for version {api_version:?}: the config file must be \
             a {KIND} of {API_VERSION}"
        ));
    }
    Ok(())
}

/// Decodes one in-tree plugin's args as their own kind would be, so a typo inside `args` is
/// refused like one anywhere else.
fn check_args(path: &str, name: &str, args: Option<&Value>) -> Result<(), String> {
    use super::args::*;
    let Some(args) = args.filter(|a| !a.is_null()) else {
        return Ok(());
    };
    if !PLUGINS_WITH_ARGS.contains(&name) {
        return Ok(());
    }
    let want = format!("{name}Args");
    let kind = args.get("kind").and_then(Value::as_str).unwrap_or(&want);
    let api_version = args
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(API_VERSION);
    if kind != want || api_version != API_VERSION {
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        return Err(format!(
            "{path}: args for plugin {name} were not of type {want}.{GROUP}, got {kind}.{group}"
        ));
    }
    let yaml = serde_yaml::to_string(args).map_err(|e| format!("{path}: {e}"))?;
    let result = match name {
        "DefaultPreemption" => strict::<DefaultPreemptionArgs>(&yaml).map(drop),
        "InterPodAffinity" => strict::<InterPodAffinityArgs>(&yaml).map(drop),
        "NodeAffinity" => strict::<NodeAffinityArgs>(&yaml).map(drop),
        "NodeResourcesBalancedAllocation" => {
            strict::<NodeResourcesBalancedAllocationArgs>(&yaml).map(drop)
        }
        "NodeResourcesFit" => strict::<NodeResourcesFitArgs>(&yaml).map(drop),
        "PodTopologySpread" => strict::<PodTopologySpreadArgs>(&yaml).map(drop),
        "VolumeBinding" => strict::<VolumeBindingArgs>(&yaml).map(drop),
        _ => Ok(()),
    };
    result.map_err(|e| format!("decoding args for plugin {name}: {}", e.under(path)))
}

/// A decoding error at a field path.
#[derive(Debug)]
struct DecodeError {
    /// Where, as `profiles[0].plugins` (empty: the top level).
    path: String,
    /// An unknown field's name, which upstream reports as part of the path.
    unknown: Option<String>,
    message: String,
    location: Option<String>,
}

impl DecodeError {
    fn under(mut self, prefix: &str) -> Self {
        self.path = match self.path.as_str() {
            "" | "." => prefix.to_string(),
            p => format!("{prefix}.{p}"),
        };
        self
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self
            .location
            .as_deref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        match &self.unknown {
            Some(field) => {
                let full = match self.path.as_str() {
                    "" | "." => field.clone(),
                    p => format!("{p}.{field}"),
                };
                write!(f, "strict decoding error: unknown field {full:?}{at}")
            }
            None if self.path.is_empty() || self.path == "." => {
                write!(f, "decoding config file: {}{at}", self.message)
            }
            None => write!(f, "{}: {}{at}", self.path, self.message),
        }
    }
}

/// serde_yaml reports `path: message at line L column C`; the parts are taken apart so the
/// field leads the message, as in upstream's errors.
fn strict<T: DeserializeOwned>(data: &str) -> Result<T, DecodeError> {
    serde_yaml::from_str(data).map_err(|e| {
        let text = e.to_string();
        let (body, location) = match (text.rfind(" at line "), e.location()) {
            (Some(i), Some(_)) => (text[..i].to_string(), Some(text[i + 4..].to_string())),
            _ => (text.clone(), None),
        };
        let (path, message) = match body.split_once(": ") {
            Some((p, m)) if looks_like_path(p) => (p.to_string(), m.to_string()),
            _ => (String::new(), body.clone()),
        };
        let unknown = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(field, _)| field.to_string());
        DecodeError {
            path,
            unknown,
            message,
            location,
        }
    })
}

fn looks_like_path(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '[' | ']' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    fn load(body: &str) -> Result<KubeSchedulerConfiguration, String> {
        let cfg = decode(&format!("{HEAD}{body}"))?;
        complete(cfg).map_err(|e| e.to_string())
    }

    #[test]
    fn errors_name_their_field() {
        let cases: &[(&str, &str)] = &[
            (
                "parallelism: 0\n",
                "parallelism: Invalid value: 0: should be an integer value greater than zero",
            ),
            (
                "parallelism: abc\n",
                "parallelism: invalid type: string \"abc\", expected i32",
            ),
            (
                "paralelism: 4\n",
                "strict decoding error: unknown field \"paralelism\"",
            ),
            (
                "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n      - name: NodeAffinity\n        weight: -1\n",
                "profiles[0].plugins.score.enabled[1].weight: Invalid value: -1: not in valid range [1, 100]",
            ),
            (
                "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: Frobnicate\n",
                "profiles[0].plugins.filter.enabled[0].name: Invalid value: \"Frobnicate\": plugin \"Frobnicate\" does not exist",
            ),
            (
                "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        wieght: 2\n",
                "strict decoding error: unknown field \"profiles[0].plugins.score.enabled[0].wieght\"",
            ),
            (
                "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n        - name: cpu\n          weight: 101\n",
                "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
            ),
            (
                "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 3\n      colour: red\n",
                "decoding args for plugin InterPodAffinity: strict decoding error: unknown field \"profiles[0].pluginConfig[0].args.colour\"",
            ),
            (
                "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      kind: VolumeBindingArgs\n",
                "args for plugin InterPodAffinity were not of type InterPodAffinityArgs.kubescheduler.config.k8s.io",
            ),
            (
                "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
                "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
            ),
            (
                "profiles:\n- schedulerName: a\n- schedulerName: a\n",
                "profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName",
            ),
            (
                "profiles:\n- {}\n- schedulerName: b\n",
                "profiles[0].schedulerName: Required value",
            ),
            (
                "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      disabled:\n      - name: '*'\n",
                "profiles[1].plugins.queueSort: Invalid value: ",
            ),
            (
                "leaderElection:\n  leaderElect: false\n  retryPeriod: soon\n",
                "leaderElection.retryPeriod: Invalid value: \"soon\": time: invalid duration",
            ),
            (
                "percentageOfNodesToScore: 101\n",
                "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
            ),
            (
                "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 10s\n",
                "leaderElection.leaseDuration: Invalid value: \"10s\": LeaseDuration must be greater than RenewDeadline",
            ),
        ];
        for (body, want) in cases {
            match load(body) {
                Ok(_) => panic!("accepted:\n{body}"),
                Err(e) => assert!(e.contains(want), "{body}\ngot:  {e}\nwant: {want}"),
            }
        }
    }

    #[test]
    fn type_meta_is_checked() {
        let cases: &[(&str, &str)] = &[
            (
                "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
                "kubescheduler.config.k8s.io/v1beta3 is no longer served",
            ),
            (
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
                "no kind \"Pod\" is registered",
            ),
            (
                "apiVersion: kubescheduler.config.k8s.io/v1\n",
                "Object 'Kind' is missing",
            ),
            (
                "kind: KubeSchedulerConfiguration\n",
                "Object 'apiVersion' is missing",
            ),
            ("{ not yaml", "decoding config file"),
        ];
        for (data, want) in cases {
            let err = decode(data).err().unwrap_or_default();
            assert!(err.contains(want), "{data}\ngot:  {err}\nwant: {want}");
        }
    }

    #[test]
    fn json_and_yaml_decode_the_same() {
        let yaml = load("parallelism: 4\nprofiles:\n- schedulerName: x\n");
        let json = decode(
            r#"{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration","parallelism":4,"profiles":[{"schedulerName":"x"}]}"#,
        )
        .map(|c| complete(c).map_err(|e| e.to_string()));
        assert_eq!(yaml.ok(), json.ok().and_then(Result::ok));
    }

    #[test]
    fn valid_files_are_defaulted() {
        let cfg = load(
            "profiles:\n- schedulerName: one\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n- schedulerName: two\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let profiles = cfg.profiles.unwrap_or_default();
        assert_eq!(profiles.len(), 2);
        let fit = profiles[0]
            .plugin_config
            .iter()
            .flatten()
            .find(|c| c.name == "NodeResourcesFit")
            .and_then(|c| c.args.clone())
            .unwrap_or_default();
        assert_eq!(fit["scoringStrategy"]["type"], "MostAllocated");
        assert_eq!(fit["scoringStrategy"]["resources"][0]["weight"], 1);
        assert_eq!(cfg.parallelism, Some(16));
    }
}
