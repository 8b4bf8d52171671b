//! Upstream's `ValidateKubeSchedulerConfiguration` and the in-tree plugin args validation, with
//! its field paths and messages (`profiles[0].pluginConfig[1].args.hardPodAffinityWeight:
//! Invalid value: 101: not in valid range [0, 100]`).

use super::args::{
    DefaultPreemptionArgs, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PodTopologySpreadArgs,
    PodTopologySpreadConstraintsDefaulting, ResourceSpec, ScoringStrategyType,
    UtilizationShapePoint, VolumeBindingArgs,
};
use super::types::*;
use api_types::validation::names::is_qualified_name;
use api_types::validation::{BadValue, ErrorList, FieldError, FieldPath};
use component_base::duration::GoDuration;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The highest score a RequestedToCapacityRatio shape point may give.
const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;
/// Score weights are kept small so a profile's total score cannot overflow.
const MAX_SCORE_WEIGHT: i32 = 100;

/// The in-tree volume limit plugins v1 no longer has (upstream names them in its error).
const REMOVED_PLUGINS: &[&str] = &[
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

/// Validates a defaulted configuration (see [`super::defaults::set_defaults`]).
pub fn validate(cfg: &KubeSchedulerConfiguration) -> ErrorList {
    let mut errs = ErrorList::new();
    let cc = cfg.client_connection.clone().unwrap_or_default();
    if let Some(burst) = cc.burst
        && burst < 0
    {
        errs.push(FieldError::invalid(
            &FieldPath::from_names(&["clientConnection", "burst"]),
            burst,
            "must be non-negative",
        ));
    }
    errs.append(validate_leader_election(
        &cfg.leader_election.clone().unwrap_or_default(),
    ));

    let parallelism = cfg.parallelism.unwrap_or(16);
    if parallelism <= 0 {
        errs.push(FieldError::invalid(
            &FieldPath::new("parallelism"),
            parallelism,
            "should be an integer value greater than zero",
        ));
    }

    let profiles_path = FieldPath::new("profiles");
    let profiles = cfg.profiles.as_deref().unwrap_or_default();
    if profiles.is_empty() {
        errs.push(FieldError::required(&profiles_path, ""));
    } else {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, profile) in profiles.iter().enumerate() {
            let path = profiles_path.index(i);
            errs.append(validate_profile(&path, profile));
            let name = profile.scheduler_name.as_deref().unwrap_or_default();
            if let Some(first) = seen.get(name) {
                errs.push(FieldError::duplicate(
                    &path.child("schedulerName"),
                    BadValue::Raw(
                        profiles_path
                            .index(*first)
                            .child("schedulerName")
                            .to_string(),
                    ),
                ));
            } else {
                seen.insert(name, i);
            }
        }
        errs.append(validate_common_queue_sort(&profiles_path, profiles));
    }

    if let Some(e) = validate_percentage(
        &FieldPath::new("percentageOfNodesToScore"),
        cfg.percentage_of_nodes_to_score,
    ) {
        errs.push(e);
    }
    let initial = cfg.pod_initial_backoff_seconds.unwrap_or(1);
    let max = cfg.pod_max_backoff_seconds.unwrap_or(10);
    if initial <= 0 {
        errs.push(FieldError::invalid(
            &FieldPath::new("podInitialBackoffSeconds"),
            initial,
            "must be greater than 0",
        ));
    }
    if max < initial {
        errs.push(FieldError::invalid(
            &FieldPath::new("podMaxBackoffSeconds"),
            max,
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    errs
}

/// Checks the plugins a user listed, before defaults are merged in, so the indices in the
/// paths are those of the file: names known to the registry, no plugin twice at one point,
/// and score weights in 1..=100 (0 or none means the default weight).
pub fn validate_user_plugins(cfg: &KubeSchedulerConfiguration) -> ErrorList {
    let known: BTreeSet<&str> = crate::plugins::in_tree_registry().names().collect();
    let mut errs = ErrorList::new();
    for (i, profile) in cfg.profiles.iter().flatten().enumerate() {
        let Some(plugins) = &profile.plugins else {
            continue;
        };
        let path = FieldPath::new("profiles").index(i).child("plugins");
        let mut sets: Vec<(&str, &PluginSet)> = Vec::new();
        if let Some(set) = &plugins.multi_point {
            sets.push(("multiPoint", set));
        }
        for point in ExtensionPoint::ALL {
            if let Some(set) = plugins.get(point) {
                sets.push((point.field(), set));
            }
        }
        for (field, set) in sets {
            let enabled_path = path.child(field).child("enabled");
            let mut seen = BTreeSet::new();
            for (j, plugin) in set.enabled().iter().enumerate() {
                let p = enabled_path.index(j);
                if REMOVED_PLUGINS.contains(&plugin.name.as_str()) {
                    errs.push(FieldError::invalid(
                        &p,
                        plugin.name.as_str(),
                        format!(
                            "was invalid in version {API_VERSION:?} (KubeSchedulerConfiguration is version {API_VERSION:?})"
                        ),
                    ));
                } else if !known.contains(plugin.name.as_str()) {
                    errs.push(FieldError::invalid(
                        &p.child("name"),
                        plugin.name.as_str(),
                        format!("plugin {:?} does not exist", plugin.name),
                    ));
                }
                if !seen.insert(plugin.name.as_str()) {
                    errs.push(FieldError::duplicate(
                        &p.child("name"),
                        plugin.name.as_str(),
                    ));
                }
                if let Some(w) = plugin.weight
                    && w != 0
                    && !(1..=MAX_SCORE_WEIGHT).contains(&w)
                {
                    errs.push(FieldError::invalid(
                        &p.child("weight"),
                        w,
                        format!("not in valid range [1, {MAX_SCORE_WEIGHT}]"),
                    ));
                }
            }
        }
    }
    errs
}

fn validate_leader_election(le: &LeaderElectionConfiguration) -> ErrorList {
    let mut errs = ErrorList::new();
    let enabled = le.leader_elect.unwrap_or(true);
    let path = FieldPath::new("leaderElection");
    // A malformed duration fails upstream's decoding whether or not election is on.
    let duration = |field: &str, value: &Option<String>, errs: &mut ErrorList| {
        let text = value.clone().unwrap_or_default();
        match text.parse::<GoDuration>() {
            Ok(d) if d.0.is_zero() && enabled => {
                errs.push(FieldError::invalid(
                    &path.child(field),
                    text,
                    "must be greater than zero",
                ));
                None
            }
            Ok(d) => Some(d.0),
            Err(e) => {
                errs.push(FieldError::invalid(&path.child(field), text, e));
                None
            }
        }
    };
    let lease = duration("leaseDuration", &le.lease_duration, &mut errs);
    let renew = duration("renewDeadline", &le.renew_deadline, &mut errs);
    duration("retryPeriod", &le.retry_period, &mut errs);
    if !enabled {
        return errs;
    }
    if let (Some(lease), Some(renew)) = (lease, renew)
        && lease <= renew
    {
        errs.push(FieldError::invalid(
            &path.child("leaseDuration"),
            le.renew_deadline.clone().unwrap_or_default(),
            "LeaseDuration must be greater than RenewDeadline",
        ));
    }
    let lock = le.resource_lock.clone().unwrap_or_default();
    if lock.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceLock"),
            "",
            "resourceLock is required",
        ));
    } else if lock != "leases" {
        errs.push(FieldError::invalid(
            &path.child("resourceLock"),
            lock,
            r#"resourceLock value must be "leases""#,
        ));
    }
    for (field, value) in [
        ("resourceNamespace", &le.resource_namespace),
        ("resourceName", &le.resource_name),
    ] {
        if value.as_deref().unwrap_or_default().is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                "",
                format!("{field} is required"),
            ));
        }
    }
    errs
}

fn validate_percentage(path: &FieldPath, value: Option<i32>) -> Option<FieldError> {
    let v = value?;
    (!(0..=100).contains(&v)).then(|| FieldError::invalid(path, v, "not in valid range [0-100]"))
}

fn validate_profile(path: &FieldPath, profile: &KubeSchedulerProfile) -> ErrorList {
    let mut errs = ErrorList::new();
    if profile
        .scheduler_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        errs.push(FieldError::required(&path.child("schedulerName"), ""));
    }
    if let Some(e) = validate_percentage(
        &path.child("percentageOfNodesToScore"),
        profile.percentage_of_nodes_to_score,
    ) {
        errs.push(e);
    }
    let known: BTreeSet<&str> = crate::plugins::in_tree_registry().names().collect();
    let mut seen = BTreeSet::new();
    for (i, pc) in profile.plugin_config.iter().flatten().enumerate() {
        let pc_path = path.child("pluginConfig").index(i);
        if !seen.insert(pc.name.as_str()) {
            errs.push(FieldError::duplicate(&pc_path, pc.name.as_str()));
        }
        if !known.contains(pc.name.as_str()) {
            errs.push(FieldError::invalid(
                &pc_path.child("name"),
                pc.name.as_str(),
                format!("plugin {:?} does not exist", pc.name),
            ));
            continue;
        }
        errs.append(validate_plugin_args(
            &pc_path.child("args"),
            &pc.name,
            pc.args.as_ref(),
        ));
    }
    errs
}

fn decode<T: DeserializeOwned + Default>(
    path: &FieldPath,
    args: Option<&Value>,
) -> Result<T, FieldError> {
    super::args::decode_args(args).map_err(|e| {
        FieldError::invalid(
            path,
            BadValue::Omitted,
            format!("has to match plugin args: {e}"),
        )
    })
}

/// Validates one plugin's args (plugins without args accept anything, as upstream).
pub fn validate_plugin_args(path: &FieldPath, name: &str, args: Option<&Value>) -> ErrorList {
    let result = match name {
        "DefaultPreemption" => decode(path, args).map(|a| default_preemption(path, &a)),
        "InterPodAffinity" => decode(path, args).map(|a| inter_pod_affinity(path, &a)),
        "NodeAffinity" => decode(path, args).map(|a| node_affinity(path, &a)),
        "NodeResourcesBalancedAllocation" => {
            decode(path, args).map(|a| balanced_allocation(path, &a))
        }
        "NodeResourcesFit" => decode(path, args).map(|a| node_resources_fit(path, &a)),
        "PodTopologySpread" => decode(path, args).map(|a| pod_topology_spread(path, &a)),
        "VolumeBinding" => decode(path, args).map(|a| volume_binding(path, &a)),
        _ => Ok(ErrorList::new()),
    };
    result.unwrap_or_else(ErrorList::from)
}

fn default_preemption(path: &FieldPath, a: &DefaultPreemptionArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    let pct = path.child("minCandidateNodesPercentage");
    let abs = path.child("minCandidateNodesAbsolute");
    if !(0..=100).contains(&a.min_candidate_nodes_percentage) {
        errs.push(FieldError::invalid(
            &pct,
            a.min_candidate_nodes_percentage,
            "not in valid range [0, 100]",
        ));
    }
    if a.min_candidate_nodes_absolute < 0 {
        errs.push(FieldError::invalid(
            &abs,
            a.min_candidate_nodes_absolute,
            "not in valid range [0, inf)",
        ));
    }
    if a.min_candidate_nodes_percentage == 0 && a.min_candidate_nodes_absolute == 0 {
        errs.push(FieldError::invalid(
            &pct,
            0,
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ));
        errs.push(FieldError::invalid(
            &abs,
            0,
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
    errs
}

fn inter_pod_affinity(path: &FieldPath, a: &InterPodAffinityArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    if !(0..=100).contains(&a.hard_pod_affinity_weight) {
        errs.push(FieldError::invalid(
            &path.child("hardPodAffinityWeight"),
            a.hard_pod_affinity_weight,
            "not in valid range [0, 100]",
        ));
    }
    errs
}

fn node_affinity(path: &FieldPath, a: &NodeAffinityArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(affinity) = &a.added_affinity else {
        return errs;
    };
    let base = path.child("addedAffinity");
    if let Some(sel) = &affinity.required_during_scheduling_ignored_during_execution {
        let terms = base
            .child("requiredDuringSchedulingIgnoredDuringExecution")
            .child("nodeSelectorTerms");
        for (i, term) in sel.node_selector_terms.iter().enumerate() {
            errs.append(selector_term(&terms.index(i), term));
        }
    }
    let preferred = base.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (i, p) in affinity
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .flatten()
        .enumerate()
    {
        errs.append(selector_term(
            &preferred.index(i).child("preference"),
            &p.preference,
        ));
    }
    errs
}

/// The operator checks of upstream's node selector parsing (`nodeaffinity.NewNodeSelector`).
fn selector_term(
    path: &FieldPath,
    term: &k8s_openapi::api::core::v1::NodeSelectorTerm,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (field, reqs) in [
        ("matchExpressions", &term.match_expressions),
        ("matchFields", &term.match_fields),
    ] {
        for (i, r) in reqs.iter().flatten().enumerate() {
            let p = path.child(field).index(i);
            let n = r.values.as_ref().map_or(0, Vec::len);
            match r.operator.as_str() {
                "In" | "NotIn" if n == 0 => errs.push(FieldError::required(
                    &p.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if n > 0 => errs.push(FieldError::forbidden(
                    &p.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                "Gt" | "Lt" if n != 1 => errs.push(FieldError::required(
                    &p.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                other => errs.push(FieldError::invalid(
                    &p.child("operator"),
                    other,
                    "not a valid selector operator",
                )),
            }
            if field == "matchExpressions" {
                for msg in is_qualified_name(&r.key) {
                    errs.push(FieldError::invalid(&p.child("key"), r.key.as_str(), msg));
                }
            }
        }
    }
    errs
}

fn resources(path: &FieldPath, specs: &[ResourceSpec]) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, r) in specs.iter().enumerate() {
        if r.weight <= 0 || r.weight > 100 {
            errs.push(FieldError::invalid(
                &path.index(i).child("weight"),
                r.weight,
                format!("resource weight of {} not in valid range (0, 100]", r.name),
            ));
        }
    }
    errs
}

fn shape(path: &FieldPath, points: &[UtilizationShapePoint]) -> ErrorList {
    let mut errs = ErrorList::new();
    if points.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one point must be specified",
        ));
        return errs;
    }
    if let Some(i) = (1..points.len()).find(|&i| points[i - 1].utilization >= points[i].utilization)
    {
        errs.push(FieldError::invalid(
            &path.index(i).child("utilization"),
            points[i].utilization,
            "values must be sorted in increasing order",
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(FieldError::invalid(
                &path.index(i).child("utilization"),
                p.utilization,
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            errs.push(FieldError::invalid(
                &path.index(i).child("score"),
                p.score,
                format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errs
}

fn balanced_allocation(path: &FieldPath, a: &NodeResourcesBalancedAllocationArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = BTreeSet::new();
    for (i, r) in a.resources.iter().enumerate() {
        let p = path.child("resources").index(i);
        if !seen.insert(r.name.as_str()) {
            errs.push(FieldError::duplicate(&p.child("name"), r.name.as_str()));
        }
        if r.weight != 1 {
            errs.push(FieldError::invalid(
                &p.child("weight"),
                r.weight,
                "must be 1",
            ));
        }
    }
    errs
}

fn node_resources_fit(path: &FieldPath, a: &NodeResourcesFitArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, name) in a.ignored_resources.iter().enumerate() {
        let p = path.child("ignoredResources").index(i);
        for msg in is_qualified_name(name) {
            errs.push(FieldError::invalid(&p, name.as_str(), msg));
        }
    }
    for (i, group) in a.ignored_resource_groups.iter().enumerate() {
        let p = path.child("ignoredResourceGroups").index(i);
        if group.contains('/') {
            errs.push(FieldError::invalid(
                &p,
                group.as_str(),
                "resource group name can't contain '/'",
            ));
        }
        for msg in is_qualified_name(group) {
            errs.push(FieldError::invalid(&p, group.as_str(), msg));
        }
    }
    let strategy = path.child("scoringStrategy");
    let s = &a.scoring_strategy;
    errs.append(resources(&strategy.child("resources"), &s.resources));
    let ratio = strategy.child("requestedToCapacityRatio");
    match (s.type_, &s.requested_to_capacity_ratio) {
        (ScoringStrategyType::RequestedToCapacityRatio, None) => errs.push(FieldError::required(
            &ratio,
            "must be specified when type is RequestedToCapacityRatio",
        )),
        (ScoringStrategyType::RequestedToCapacityRatio, Some(r)) => {
            errs.append(shape(&ratio.child("shape"), &r.shape));
        }
        (_, Some(_)) => errs.push(FieldError::forbidden(
            &ratio,
            "must be nil when type is not RequestedToCapacityRatio",
        )),
        (_, None) => {}
    }
    errs
}

fn pod_topology_spread(path: &FieldPath, a: &PodTopologySpreadArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    if a.defaulting_type == PodTopologySpreadConstraintsDefaulting::System
        && !a.default_constraints.is_empty()
    {
        errs.push(FieldError::invalid(
            &path.child("defaultingType"),
            "System",
            "when .defaultConstraints are not empty",
        ));
    }
    let list = path.child("defaultConstraints");
    for (i, c) in a.default_constraints.iter().enumerate() {
        let p = list.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                &p.child("maxSkew"),
                c.max_skew,
                "not in valid range (0, inf)",
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                &p.child("topologyKey"),
                "can not be empty",
            ));
        } else {
            for msg in is_qualified_name(&c.topology_key) {
                errs.push(FieldError::invalid(
                    &p.child("topologyKey"),
                    c.topology_key.as_str(),
                    msg,
                ));
            }
        }
        match c.when_unsatisfiable.as_str() {
            "" => errs.push(FieldError::required(
                &p.child("whenUnsatisfiable"),
                "can not be empty",
            )),
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => errs.push(FieldError::not_supported(
                &p.child("whenUnsatisfiable"),
                other,
                &["DoNotSchedule", "ScheduleAnyway"],
            )),
        }
        if c.label_selector.is_some() {
            errs.push(FieldError::forbidden(
                &p.child("labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        if a.default_constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                &p,
                format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable),
            ));
        }
    }
    errs
}

fn volume_binding(path: &FieldPath, a: &VolumeBindingArgs) -> ErrorList {
    let mut errs = ErrorList::new();
    if a.bind_timeout_seconds < 0 {
        errs.push(FieldError::invalid(
            &path.child("bindTimeoutSeconds"),
            a.bind_timeout_seconds,
            "invalid BindTimeoutSeconds, should not be a negative value",
        ));
    }
    // StorageCapacityScoring is an alpha gate, off in v1.33: a shape must not take effect
    // silently once the gate turns on.
    if !a.shape.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("shape"),
            BadValue::json(&a.shape),
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
        ));
    }
    errs
}

/// Every profile must sort its queue the same way (one queue serves them all).
fn validate_common_queue_sort(path: &FieldPath, profiles: &[KubeSchedulerProfile]) -> ErrorList {
    let mut errs = ErrorList::new();
    let queue_sort = |p: &KubeSchedulerProfile| {
        p.plugins
            .as_ref()
            .and_then(|pl| pl.queue_sort.clone())
            .map(|s| {
                (
                    s.enabled.unwrap_or_default(),
                    s.disabled.unwrap_or_default(),
                )
            })
            .unwrap_or_default()
    };
    let canon = queue_sort(&profiles[0]);
    if canon.0.len() > 1 {
        errs.push(FieldError::invalid(
            &path
                .index(0)
                .child("plugins")
                .child("queueSort")
                .child("Enabled"),
            canon.0.len(),
            "only one queue sort plugin can be enabled",
        ));
    }
    let name = canon.0.first().map(|p| p.name.clone());
    let args_of = |p: &KubeSchedulerProfile| {
        p.plugin_config
            .iter()
            .flatten()
            .find(|c| Some(&c.name) == name.as_ref())
            .map(|c| c.args.clone())
    };
    let canon_args = args_of(&profiles[0]).flatten();
    for (i, profile) in profiles.iter().enumerate().skip(1) {
        let curr = queue_sort(profile);
        if curr != canon {
            let set = PluginSet {
                enabled: Some(curr.0),
                disabled: Some(curr.1),
            };
            errs.push(FieldError::invalid(
                &path.index(i).child("plugins").child("queueSort"),
                BadValue::json(&set),
                "must be the same for all profiles",
            ));
        }
        if let Some(args) = args_of(profile)
            && args != canon_args
        {
            errs.push(FieldError::invalid(
                &path.index(i).child("pluginConfig").child("args"),
                BadValue::json(&args),
                "queueSort must be the same for all profiles",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each case: plugin, args, and the messages expected (empty: valid).
    #[test]
    fn plugin_args_cases() {
        let cases: &[(&str, Value, &[&str])] = &[
            ("DefaultPreemption", json!({}), &[]),
            (
                "DefaultPreemption",
                json!({"minCandidateNodesPercentage": 101}),
                &[
                    "args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
                ],
            ),
            (
                "DefaultPreemption",
                json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
                &[
                    "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                    "args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
                ],
            ),
            (
                "DefaultPreemption",
                json!({"minCandidateNodesAbsolute": -1}),
                &["args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
            ),
            (
                "InterPodAffinity",
                json!({"hardPodAffinityWeight": 101}),
                &["args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"],
            ),
            ("InterPodAffinity", json!({"hardPodAffinityWeight": 0}), &[]),
            (
                "NodeResourcesBalancedAllocation",
                json!({"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu", "weight": 1}]}),
                &[
                    "args.resources[0].weight: Invalid value: 2: must be 1",
                    "args.resources[1].name: Duplicate value: \"cpu\"",
                ],
            ),
            (
                "NodeResourcesFit",
                json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}]}}),
                &[
                    "args.scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio",
                ],
            ),
            (
                "NodeResourcesFit",
                json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}],
                    "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}, {"utilization": 40, "score": 0}, {"utilization": 101, "score": 1}]}}}),
                &[
                    "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order",
                    "args.scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
                    "args.scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
                ],
            ),
            (
                "NodeResourcesFit",
                json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}],
                    "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]}}}),
                &[
                    "args.scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio",
                ],
            ),
            (
                "NodeResourcesFit",
                json!({"ignoredResourceGroups": ["example.com/x"], "scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}]}}),
                &[
                    "args.ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'",
                ],
            ),
            (
                "PodTopologySpread",
                json!({"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]}),
                &[
                    "args.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty",
                ],
            ),
            (
                "PodTopologySpread",
                json!({"defaultingType": "List", "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"},
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}]}),
                &[
                    "args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
                    "args.defaultConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                    "args.defaultConstraints[1].topologyKey: Required value: can not be empty",
                    "args.defaultConstraints[1].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",
                    "args.defaultConstraints[2].whenUnsatisfiable: Unsupported value: \"Sometimes\"",
                    "args.defaultConstraints[2]: Duplicate value: \"{zone, Sometimes}\"",
                ],
            ),
            (
                "VolumeBinding",
                json!({"bindTimeoutSeconds": -1}),
                &[
                    "args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
                ],
            ),
            (
                "VolumeBinding",
                json!({"shape": [{"utilization": 0, "score": 0}]}),
                &[
                    "args.shape: Invalid value: [{\"utilization\":0,\"score\":0}]: unexpected field `shape`",
                ],
            ),
            (
                "NodeAffinity",
                json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "zone", "operator": "Near", "values": ["a"]}]}]}}}),
                &[
                    "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value",
                    "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: \"Near\"",
                ],
            ),
            ("TaintToleration", json!({"anything": true}), &[]),
        ];
        for (plugin, args, want) in cases {
            let errs = validate_plugin_args(&FieldPath::new("args"), plugin, Some(args));
            let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{plugin} {args}: {got:#?}");
            for w in *want {
                assert!(
                    got.iter().any(|g| g.starts_with(w)),
                    "{plugin} {args}: want {w:?} in {got:#?}"
                );
            }
        }
    }

    fn defaulted(profiles: Value) -> KubeSchedulerConfiguration {
        let mut cfg: KubeSchedulerConfiguration =
            serde_json::from_value(json!({ "profiles": profiles })).unwrap_or_default();
        super::super::defaults::set_defaults(&mut cfg);
        cfg
    }

    #[test]
    fn configuration_cases() {
        let cases: &[(Value, &str)] = &[
            (json!([{"schedulerName": "a"}, {"schedulerName": "b"}]), ""),
            (
                json!([{"schedulerName": "a", "percentageOfNodesToScore": -1}]),
                "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
            ),
            (
                json!([{"schedulerName": "a", "pluginConfig": [{"name": "Frob"}]}]),
                "profiles[0].pluginConfig[0].name: Invalid value: \"Frob\": plugin \"Frob\" does not exist",
            ),
            (
                json!([{"schedulerName": "a", "pluginConfig": [{"name": "NodePorts"}, {"name": "NodePorts"}]}]),
                "profiles[0].pluginConfig[1]: Duplicate value: \"NodePorts\"",
            ),
            (
                json!([{"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
                       {"schedulerName": "b"}]),
                "profiles[1].plugins.queueSort: Invalid value: {\"enabled\":[],\"disabled\":[]}: must be the same for all profiles",
            ),
        ];
        for (profiles, want) in cases {
            let got = validate(&defaulted(profiles.clone())).to_string();
            if want.is_empty() {
                assert_eq!(got, "", "{profiles}");
            } else {
                assert!(got.contains(want), "{profiles}\ngot:  {got}\nwant: {want}");
            }
        }
    }

    #[test]
    fn user_plugin_cases() {
        let cases: &[(Value, &str)] = &[
            (
                json!({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 100}]}}),
                "",
            ),
            (
                json!({"score": {"enabled": [{"name": "ImageLocality", "weight": 0}]}}),
                "",
            ),
            (
                json!({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 101}]}}),
                "profiles[0].plugins.multiPoint.enabled[0].weight: Invalid value: 101: not in valid range [1, 100]",
            ),
            (
                json!({"filter": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]}}),
                "profiles[0].plugins.filter.enabled[1].name: Duplicate value: \"NodePorts\"",
            ),
            (
                json!({"filter": {"disabled": [{"name": "NoSuchPlugin"}]}}),
                "",
            ),
        ];
        for (plugins, want) in cases {
            let cfg: KubeSchedulerConfiguration =
                serde_json::from_value(json!({"profiles": [{"plugins": plugins}]}))
                    .unwrap_or_default();
            assert!(cfg.profiles.is_some(), "{plugins} did not decode");
            assert_eq!(validate_user_plugins(&cfg).to_string(), *want, "{plugins}");
        }
    }
}
