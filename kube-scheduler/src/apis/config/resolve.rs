//! A defaulted profile as the framework takes it: multiPoint's plugins, each point's own
//! enabled and disabled ones, and each plugin's args. The framework expands multiPoint.

use super::types::*;
use std::collections::BTreeMap;

/// Resolves every profile of a defaulted configuration.
pub fn resolve_profiles(cfg: &KubeSchedulerConfiguration) -> Vec<ResolvedProfile> {
    cfg.profiles.iter().flatten().map(resolve_profile).collect()
}

/// Resolves one defaulted profile (see [`super::defaults::set_defaults`]).
pub fn resolve_profile(profile: &KubeSchedulerProfile) -> ResolvedProfile {
    let plugins = profile.plugins.clone().unwrap_or_default();
    let weighted = |set: &PluginSet| -> Vec<(String, i64)> {
        set.enabled()
            .iter()
            .map(|p| (p.name.clone(), i64::from(p.weight.unwrap_or(0))))
            .collect()
    };
    let mut points = BTreeMap::new();
    let mut disabled = BTreeMap::new();
    for point in ExtensionPoint::ALL {
        let Some(set) = plugins.get(point) else {
            continue;
        };
        let mut enabled = weighted(set);
        // Weights mean something only to Score.
        if point != ExtensionPoint::Score {
            enabled.iter_mut().for_each(|(_, w)| *w = 0);
        }
        if !enabled.is_empty() {
            points.insert(point, enabled);
        }
        let off: Vec<String> = set.disabled().iter().map(|p| p.name.clone()).collect();
        if !off.is_empty() {
            disabled.insert(point, off);
        }
    }
    let args = profile
        .plugin_config
        .iter()
        .flatten()
        .filter_map(|pc| pc.args.clone().map(|a| (pc.name.clone(), a)))
        .collect();
    ResolvedProfile {
        scheduler_name: profile.scheduler_name.clone().unwrap_or_default(),
        multi_point: plugins
            .multi_point
            .as_ref()
            .map(weighted)
            .unwrap_or_default(),
        points,
        disabled,
        args,
        percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::config::defaults::{DEFAULT_MULTI_POINT, set_defaults};

    fn resolved(profile: KubeSchedulerProfile) -> ResolvedProfile {
        let mut cfg = KubeSchedulerConfiguration {
            profiles: Some(vec![profile]),
            ..Default::default()
        };
        set_defaults(&mut cfg);
        resolve_profiles(&cfg).remove(0)
    }

    fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> Option<PluginSet> {
        Some(PluginSet {
            enabled: Some(enabled.iter().map(|(n, w)| Plugin::named(n, *w)).collect()),
            disabled: Some(disabled.iter().map(|n| Plugin::named(n, None)).collect()),
        })
    }

    #[test]
    fn default_profile_is_multi_point_with_weights() {
        let p = resolved(KubeSchedulerProfile::default());
        assert_eq!(p.scheduler_name, DEFAULT_SCHEDULER_NAME);
        let want: Vec<(String, i64)> = DEFAULT_MULTI_POINT
            .iter()
            .map(|(n, w)| (n.to_string(), i64::from(w.unwrap_or(0))))
            .collect();
        assert_eq!(p.multi_point, want);
        assert!(p.points.is_empty() && p.disabled.is_empty());
        assert_eq!(p.args.len(), 7);
        assert_eq!(p.args["InterPodAffinity"]["hardPodAffinityWeight"], 1);
        assert_eq!(p.percentage_of_nodes_to_score, None);
    }

    #[test]
    fn point_settings_are_carried() {
        struct Case {
            plugins: Plugins,
            point: ExtensionPoint,
            enabled: Vec<(&'static str, i64)>,
            disabled: Vec<&'static str>,
        }
        let cases = [
            Case {
                plugins: Plugins {
                    score: set(&[("ImageLocality", Some(9))], &["*"]),
                    ..Default::default()
                },
                point: ExtensionPoint::Score,
                enabled: vec![("ImageLocality", 9)],
                disabled: vec!["*"],
            },
            Case {
                plugins: Plugins {
                    filter: set(&[("NodePorts", Some(4))], &["TaintToleration"]),
                    ..Default::default()
                },
                point: ExtensionPoint::Filter,
                enabled: vec![("NodePorts", 0)],
                disabled: vec!["TaintToleration"],
            },
        ];
        for case in cases {
            let p = resolved(KubeSchedulerProfile {
                plugins: Some(case.plugins),
                percentage_of_nodes_to_score: Some(30),
                ..Default::default()
            });
            let enabled: Vec<(String, i64)> = case
                .enabled
                .iter()
                .map(|(n, w)| (n.to_string(), *w))
                .collect();
            assert_eq!(p.points.get(&case.point), Some(&enabled));
            let disabled: Vec<String> = case.disabled.iter().map(|s| s.to_string()).collect();
            assert_eq!(p.disabled.get(&case.point), Some(&disabled));
            assert_eq!(p.multi_point.len(), DEFAULT_MULTI_POINT.len());
            assert_eq!(p.percentage_of_nodes_to_score, Some(30));
        }
    }
}
