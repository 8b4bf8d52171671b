//! The args of the in-tree plugins (upstream's `types_pluginargs.go`), as `pluginConfig`
//! spells them. Defaults and validation live in `defaults.rs` / `validation.rs`; plugins
//! decode their args with [`decode_args`].

use k8s_openapi::api::core::v1::{NodeAffinity, TopologySpreadConstraint};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Decodes a plugin's args (`None`: the type's defaults).
pub fn decode_args<T: DeserializeOwned + Default>(args: Option<&Value>) -> Result<T, String> {
    match args {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string()),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default = "default_min_candidate_pct")]
    pub min_candidate_nodes_percentage: i32,
    #[serde(default = "default_min_candidate_abs")]
    pub min_candidate_nodes_absolute: i32,
}

fn default_min_candidate_pct() -> i32 {
    10
}
fn default_min_candidate_abs() -> i32 {
    100
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        Self {
            api_version: None,
            kind: None,
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterPodAffinityArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default = "one")]
    pub hard_pod_affinity_weight: i32,
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: bool,
}

fn one() -> i32 {
    1
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        Self {
            api_version: None,
            kind: None,
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinityArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<NodeAffinity>,
}

/// A resource and its weight in a scoring strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: String,
    #[serde(default)]
    pub weight: i64,
}

/// The default scored resources: cpu and memory, weight 1 each.
pub fn default_resource_specs() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesBalancedAllocationArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default = "default_resource_specs")]
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        Self {
            api_version: None,
            kind: None,
            resources: default_resource_specs(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ScoringStrategyType {
    #[default]
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    pub utilization: i32,
    pub score: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    #[serde(default, rename = "type")]
    pub type_: ScoringStrategyType,
    #[serde(default = "default_resource_specs")]
    pub resources: Vec<ResourceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        Self {
            type_: ScoringStrategyType::LeastAllocated,
            resources: default_resource_specs(),
            requested_to_capacity_ratio: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesFitArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_resource_groups: Vec<String>,
    #[serde(default)]
    pub scoring_strategy: ScoringStrategy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PodTopologySpreadConstraintsDefaulting {
    /// The cluster-level defaults (zone and hostname, ScheduleAnyway).
    #[default]
    System,
    /// `defaultConstraints` as given.
    List,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    #[serde(default)]
    pub defaulting_type: PodTopologySpreadConstraintsDefaulting,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeBindingArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default = "default_bind_timeout")]
    pub bind_timeout_seconds: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shape: Vec<UtilizationShapePoint>,
}

fn default_bind_timeout() -> i64 {
    600
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        Self {
            api_version: None,
            kind: None,
            bind_timeout_seconds: 600,
            shape: Vec::new(),
        }
    }
}
