//! Upstream's `SetDefaults_KubeSchedulerConfiguration` for v1: the default profile's plugins
//! (all in `multiPoint`), merged with what the user enabled and disabled, and every args-taking
//! plugin's args filled in so `/configz` and `--write-config-to` show what runs.

use super::args::{
    DefaultPreemptionArgs, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PodTopologySpreadArgs, ResourceSpec,
    VolumeBindingArgs, decode_args, default_resource_specs,
};
use super::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;

/// v1.33's default profile, in upstream's order, with its score weights.
pub const DEFAULT_MULTI_POINT: &[(&str, Option<i32>)] = &[
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", Some(3)),
    ("NodeAffinity", Some(2)),
    ("NodePorts", None),
    ("NodeResourcesFit", Some(1)),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", Some(2)),
    ("InterPodAffinity", Some(2)),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", Some(1)),
    ("ImageLocality", Some(1)),
    ("DefaultBinder", None),
];

/// The in-tree plugins that take args (upstream registers a `<Name>Args` kind for each).
pub const PLUGINS_WITH_ARGS: &[&str] = &[
    "DefaultPreemption",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
];

/// The default plugins: everything in `multiPoint`.
pub fn default_plugins() -> Plugins {
    Plugins {
        multi_point: Some(PluginSet {
            enabled: Some(
                DEFAULT_MULTI_POINT
                    .iter()
                    .map(|(name, weight)| Plugin::named(name, *weight))
                    .collect(),
            ),
            disabled: None,
        }),
        ..Plugins::default()
    }
}

/// Merges the user's plugins into the defaults, point by point (upstream's `mergePlugins`).
pub fn merge_plugins(mut defaults: Plugins, custom: Option<&Plugins>) -> Plugins {
    let Some(custom) = custom else {
        return defaults;
    };
    defaults.multi_point = merge_set(defaults.multi_point.take(), custom.multi_point.as_ref());
    for point in ExtensionPoint::ALL {
        let slot = defaults.slot_mut(point);
        *slot = merge_set(slot.take(), custom.get(point));
    }
    defaults
}

/// Default plugins minus the disabled ones (`*`: all of them); a user entry with a default's
/// name replaces it in place, keeping upstream's order; the other user entries follow.
fn merge_set(default: Option<PluginSet>, custom: Option<&PluginSet>) -> Option<PluginSet> {
    let Some(custom) = custom else {
        return default;
    };
    let default = default.unwrap_or_default();
    let disabled: Vec<Plugin> = custom
        .disabled()
        .iter()
        .chain(default.disabled())
        .map(|p| Plugin::named(&p.name, None))
        .collect();
    let off: BTreeSet<&str> = disabled.iter().map(|p| p.name.as_str()).collect();
    let mut replaced = BTreeSet::new();
    let mut enabled = Vec::new();
    if !off.contains("*") {
        for d in default.enabled() {
            if off.contains(d.name.as_str()) {
                continue;
            }
            match custom.enabled().iter().position(|c| c.name == d.name) {
                Some(i) => {
                    replaced.insert(i);
                    enabled.push(custom.enabled()[i].clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    enabled.extend(
        custom
            .enabled()
            .iter()
            .enumerate()
            .filter(|(i, _)| !replaced.contains(i))
            .map(|(_, p)| p.clone()),
    );
    Some(PluginSet {
        enabled: (!enabled.is_empty()).then_some(enabled),
        disabled: (!disabled.is_empty()).then_some(disabled),
    })
}

/// Fills in every default of the configuration, as upstream does when it decodes the file.
pub fn set_defaults(cfg: &mut KubeSchedulerConfiguration) {
    cfg.api_version.get_or_insert_with(|| API_VERSION.into());
    cfg.kind.get_or_insert_with(|| KIND.into());
    cfg.parallelism.get_or_insert(16);
    let profiles = cfg.profiles.get_or_insert_with(Vec::new);
    if profiles.is_empty() {
        profiles.push(KubeSchedulerProfile::default());
    }
    // Only a lone profile gets the default name; validation asks the others for theirs.
    if let [only] = profiles.as_mut_slice() {
        only.scheduler_name
            .get_or_insert_with(|| DEFAULT_SCHEDULER_NAME.into());
    }
    for profile in profiles.iter_mut() {
        set_profile_defaults(profile);
    }
    cfg.percentage_of_nodes_to_score.get_or_insert(0);

    let le = cfg.leader_election.get_or_insert_with(Default::default);
    le.leader_elect.get_or_insert(true);
    le.lease_duration.get_or_insert_with(|| "15s".into());
    le.renew_deadline.get_or_insert_with(|| "10s".into());
    le.retry_period.get_or_insert_with(|| "2s".into());
    fill_empty(&mut le.resource_lock, "leases");
    fill_empty(&mut le.resource_namespace, "kube-system");
    fill_empty(&mut le.resource_name, "kube-scheduler");

    let cc = cfg.client_connection.get_or_insert_with(Default::default);
    cc.kubeconfig.get_or_insert_with(String::new);
    cc.accept_content_types.get_or_insert_with(String::new);
    fill_empty(&mut cc.content_type, "application/vnd.kubernetes.protobuf");
    if cc.qps.unwrap_or(0.0) == 0.0 {
        cc.qps = Some(50.0);
    }
    if cc.burst.unwrap_or(0) == 0 {
        cc.burst = Some(100);
    }

    cfg.pod_initial_backoff_seconds.get_or_insert(1);
    cfg.pod_max_backoff_seconds.get_or_insert(10);
    let profiling = *cfg.enable_profiling.get_or_insert(true);
    if profiling {
        cfg.enable_contention_profiling.get_or_insert(true);
    }
}

fn fill_empty(field: &mut Option<String>, value: &str) {
    if field.as_deref().unwrap_or_default().is_empty() {
        *field = Some(value.into());
    }
}

fn set_profile_defaults(profile: &mut KubeSchedulerProfile) {
    let plugins = merge_plugins(default_plugins(), profile.plugins.as_ref());
    let configs = profile.plugin_config.get_or_insert_with(Vec::new);
    for pc in configs.iter_mut() {
        if let Some(Ok(args)) = default_args(&pc.name, pc.args.as_ref()) {
            pc.args = Some(args);
        }
    }
    // Upstream appends the missing ones in name order.
    let names: BTreeSet<&str> = plugin_names(&plugins).collect();
    for name in names {
        if configs.iter().any(|c| c.name == name) {
            continue;
        }
        if let Some(Ok(args)) = default_args(name, None) {
            configs.push(PluginConfig {
                name: name.into(),
                args: Some(args),
            });
        }
    }
    profile.plugins = Some(plugins);
}

/// Every plugin enabled somewhere in `plugins`.
fn plugin_names(plugins: &Plugins) -> impl Iterator<Item = &str> {
    plugins
        .multi_point
        .iter()
        .chain(ExtensionPoint::ALL.iter().filter_map(|p| plugins.get(*p)))
        .flat_map(|set| set.enabled())
        .map(|p| p.name.as_str())
}

/// The args of `name` with upstream's defaults filled in, typed as `<name>Args` of v1
/// (`None`: the plugin takes no args; `Err`: the args do not decode).
pub fn default_args(name: &str, args: Option<&Value>) -> Option<Result<Value, String>> {
    Some(match name {
        "DefaultPreemption" => fill::<DefaultPreemptionArgs>(name, args, |_| {}),
        "InterPodAffinity" => fill::<InterPodAffinityArgs>(name, args, |_| {}),
        "NodeAffinity" => fill::<NodeAffinityArgs>(name, args, |_| {}),
        "NodeResourcesBalancedAllocation" => {
            fill::<NodeResourcesBalancedAllocationArgs>(name, args, |a| {
                default_weights(&mut a.resources)
            })
        }
        "NodeResourcesFit" => fill::<NodeResourcesFitArgs>(name, args, |a| {
            default_weights(&mut a.scoring_strategy.resources)
        }),
        "PodTopologySpread" => fill::<PodTopologySpreadArgs>(name, args, |_| {}),
        "VolumeBinding" => fill::<VolumeBindingArgs>(name, args, |_| {}),
        _ => return None,
    })
}

/// No resources means the default ones; a weight left at 0 means 1.
fn default_weights(resources: &mut Vec<ResourceSpec>) {
    if resources.is_empty() {
        *resources = default_resource_specs();
    }
    for r in resources.iter_mut().filter(|r| r.weight == 0) {
        r.weight = 1;
    }
}

trait TypeMeta {
    fn set_type_meta(&mut self, kind: String);
}

macro_rules! type_meta {
    ($($t:ty),*) => {$(
        impl TypeMeta for $t {
            fn set_type_meta(&mut self, kind: String) {
                self.api_version = Some(API_VERSION.into());
                self.kind = Some(kind);
            }
        }
    )*};
}

type_meta!(
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    VolumeBindingArgs
);

fn fill<T>(name: &str, args: Option<&Value>, fix: impl FnOnce(&mut T)) -> Result<Value, String>
where
    T: DeserializeOwned + Default + Serialize + TypeMeta,
{
    let mut typed: T = decode_args(args)?;
    fix(&mut typed);
    typed.set_type_meta(format!("{name}Args"));
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(set: &Option<PluginSet>) -> Vec<(String, Option<i32>)> {
        set.as_ref()
            .map(|s| {
                s.enabled()
                    .iter()
                    .map(|p| (p.name.clone(), p.weight))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> PluginSet {
        PluginSet {
            enabled: Some(enabled.iter().map(|(n, w)| Plugin::named(n, *w)).collect()),
            disabled: Some(disabled.iter().map(|n| Plugin::named(n, None)).collect()),
        }
    }

    #[test]
    fn empty_config_gets_upstreams_defaults() {
        let mut cfg = KubeSchedulerConfiguration::default();
        set_defaults(&mut cfg);
        assert_eq!(cfg.parallelism, Some(16));
        assert_eq!(cfg.percentage_of_nodes_to_score, Some(0));
        assert_eq!(
            (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds),
            (Some(1), Some(10))
        );
        let cc = cfg.client_connection.clone().unwrap_or_default();
        assert_eq!((cc.qps, cc.burst), (Some(50.0), Some(100)));
        assert_eq!(
            cc.content_type.as_deref(),
            Some("application/vnd.kubernetes.protobuf")
        );
        let le = cfg.leader_election.clone().unwrap_or_default();
        assert_eq!(le.leader_elect, Some(true));
        assert_eq!(le.lease_duration.as_deref(), Some("15s"));
        assert_eq!(le.resource_name.as_deref(), Some("kube-scheduler"));
        assert_eq!(le.resource_namespace.as_deref(), Some("kube-system"));
        let profiles = cfg.profiles.unwrap_or_default();
        assert_eq!(profiles.len(), 1);
        assert_eq!(
            profiles[0].scheduler_name.as_deref(),
            Some(DEFAULT_SCHEDULER_NAME)
        );
        let plugins = profiles[0].plugins.clone().unwrap_or_default();
        let expected: Vec<(String, Option<i32>)> = DEFAULT_MULTI_POINT
            .iter()
            .map(|(n, w)| (n.to_string(), *w))
            .collect();
        assert_eq!(names(&plugins.multi_point), expected);
        let configured: Vec<String> = profiles[0]
            .plugin_config
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect();
        let mut sorted = PLUGINS_WITH_ARGS.to_vec();
        sorted.sort();
        assert_eq!(configured, sorted);
    }

    #[test]
    fn merge_cases() {
        struct Case {
            name: &'static str,
            custom: PluginSet,
            want: Vec<&'static str>,
            want_weight: Option<(&'static str, Option<i32>)>,
        }
        let cases = [
            Case {
                name: "disable one",
                custom: set(&[], &["ImageLocality"]),
                want: DEFAULT_MULTI_POINT
                    .iter()
                    .map(|(n, _)| *n)
                    .filter(|n| *n != "ImageLocality")
                    .collect(),
                want_weight: None,
            },
            Case {
                name: "star disables all, enabled kept",
                custom: set(&[("PrioritySort", None), ("DefaultBinder", None)], &["*"]),
                want: vec!["PrioritySort", "DefaultBinder"],
                want_weight: None,
            },
            Case {
                name: "re-enabled default keeps its place with the new weight",
                custom: set(&[("TaintToleration", Some(7))], &[]),
                want: DEFAULT_MULTI_POINT.iter().map(|(n, _)| *n).collect(),
                want_weight: Some(("TaintToleration", Some(7))),
            },
        ];
        for case in cases {
            let custom = Plugins {
                multi_point: Some(case.custom),
                ..Default::default()
            };
            let merged = merge_plugins(default_plugins(), Some(&custom));
            let got = names(&merged.multi_point);
            let got_names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(got_names, case.want, "{}", case.name);
            if let Some((plugin, weight)) = case.want_weight {
                let w = got.iter().find(|(n, _)| n == plugin).map(|(_, w)| *w);
                assert_eq!(w, Some(weight), "{}", case.name);
            }
        }
    }

    #[test]
    fn specific_points_merge_on_their_own() {
        let custom = Plugins {
            score: Some(set(&[("ImageLocality", Some(5))], &["NodeResourcesFit"])),
            ..Default::default()
        };
        let merged = merge_plugins(default_plugins(), Some(&custom));
        assert_eq!(
            names(&merged.score),
            vec![("ImageLocality".to_string(), Some(5))]
        );
        let disabled: Vec<&str> = merged
            .score
            .as_ref()
            .map(|s| s.disabled().iter().map(|p| p.name.as_str()).collect())
            .unwrap_or_default();
        assert_eq!(disabled, vec!["NodeResourcesFit"]);
        assert_eq!(names(&merged.multi_point).len(), DEFAULT_MULTI_POINT.len());
        assert!(merged.filter.is_none());
    }

    #[test]
    fn args_defaults() {
        let cases: &[(&str, Option<Value>, &str, Value)] = &[
            (
                "DefaultPreemption",
                None,
                "/minCandidateNodesPercentage",
                json!(10),
            ),
            (
                "DefaultPreemption",
                Some(json!({"minCandidateNodesAbsolute": 5})),
                "/minCandidateNodesPercentage",
                json!(10),
            ),
            ("InterPodAffinity", None, "/hardPodAffinityWeight", json!(1)),
            ("VolumeBinding", None, "/bindTimeoutSeconds", json!(600)),
            (
                "PodTopologySpread",
                None,
                "/defaultingType",
                json!("System"),
            ),
            (
                "NodeResourcesFit",
                None,
                "/scoringStrategy/type",
                json!("LeastAllocated"),
            ),
            (
                "NodeResourcesFit",
                Some(
                    json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}),
                ),
                "/scoringStrategy/resources/0/weight",
                json!(1),
            ),
            (
                "NodeResourcesFit",
                Some(json!({"scoringStrategy": {"type": "MostAllocated", "resources": []}})),
                "/scoringStrategy/resources/1/name",
                json!("memory"),
            ),
            (
                "NodeResourcesBalancedAllocation",
                None,
                "/resources/1/name",
                json!("memory"),
            ),
            ("NodeAffinity", None, "/kind", json!("NodeAffinityArgs")),
            (
                "VolumeBinding",
                None,
                "/apiVersion",
                json!("kubescheduler.config.k8s.io/v1"),
            ),
        ];
        for (name, args, pointer, want) in cases {
            let got = default_args(name, args.as_ref())
                .and_then(Result::ok)
                .unwrap_or_default();
            assert_eq!(got.pointer(pointer), Some(want), "{name} {args:?}: {got}");
        }
        assert!(default_args("TaintToleration", None).is_none());
        assert!(matches!(
            default_args("InterPodAffinity", Some(&json!({"bogus": 1}))),
            Some(Err(_))
        ));
    }

    #[test]
    fn every_default_plugin_is_registered() {
        let registry = crate::plugins::in_tree_registry();
        for (name, _) in DEFAULT_MULTI_POINT {
            assert!(
                registry.get(name).is_some(),
                "{name} is not in the registry"
            );
        }
    }

    #[test]
    fn several_profiles_keep_their_names_unset() {
        let mut cfg = KubeSchedulerConfiguration {
            profiles: Some(vec![
                KubeSchedulerProfile::default(),
                KubeSchedulerProfile {
                    scheduler_name: Some("b".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        set_defaults(&mut cfg);
        let profiles = cfg.profiles.unwrap_or_default();
        assert_eq!(profiles[0].scheduler_name, None);
        assert_eq!(profiles[1].scheduler_name.as_deref(), Some("b"));
    }
}
