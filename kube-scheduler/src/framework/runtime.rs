//! One profile's framework: its plugins listed per extension point, and the runners that call
//! them in order (Filter and Score in parallel over nodes), as upstream's `frameworkImpl`.

use super::cycle_state::CycleState;
use super::events::ClusterEventWithHint;
use super::interface::*;
use super::node_info::NodeInfo;
use super::parallelize::Parallelizer;
use super::pod_info::PodInfo;
use super::registry::{PluginContext, Registry};
use super::snapshot::Snapshot;
use super::status::{Code, Status};
use crate::apis::config::{ExtensionPoint, ResolvedProfile};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

type P = Arc<dyn Plugin>;

/// Score plugins run together per node in one parallel pass (more run in further passes).
const MAX_SCORE_PLUGINS_PER_PASS: usize = 16;

pub struct Framework {
    pub profile_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub ctx: PluginContext,
    plugins: HashMap<String, P>,
    pre_enqueue: Vec<P>,
    queue_sort: Option<P>,
    pre_filter: Vec<P>,
    filter: Vec<P>,
    post_filter: Vec<P>,
    pre_score: Vec<P>,
    score: Vec<(P, i64)>,
    reserve: Vec<P>,
    permit: Vec<P>,
    pre_bind: Vec<P>,
    bind: Vec<P>,
    post_bind: Vec<P>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("profile_name", &self.profile_name)
            .field("plugins", &self.plugins.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn implements(p: &P, point: ExtensionPoint) -> bool {
    match point {
        ExtensionPoint::PreEnqueue => p.as_pre_enqueue().is_some(),
        ExtensionPoint::QueueSort => p.as_queue_sort().is_some(),
        ExtensionPoint::PreFilter => p.as_pre_filter().is_some(),
        ExtensionPoint::Filter => p.as_filter().is_some(),
        ExtensionPoint::PostFilter => p.as_post_filter().is_some(),
        ExtensionPoint::PreScore => p.as_pre_score().is_some(),
        ExtensionPoint::Score => p.as_score().is_some(),
        ExtensionPoint::Reserve => p.as_reserve().is_some(),
        ExtensionPoint::Permit => p.as_permit().is_some(),
        ExtensionPoint::PreBind => p.as_pre_bind().is_some(),
        ExtensionPoint::Bind => p.as_bind().is_some(),
        ExtensionPoint::PostBind => p.as_post_bind().is_some(),
    }
}

impl Framework {
    /// Builds the profile's plugins (each once, whatever the points it is enabled at).
    pub fn new(
        profile: &ResolvedProfile,
        registry: &Registry,
        ctx: PluginContext,
    ) -> Result<Self, String> {
        let mut fw = Framework {
            profile_name: profile.scheduler_name.clone(),
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            ctx,
            plugins: HashMap::new(),
            pre_enqueue: vec![],
            queue_sort: None,
            pre_filter: vec![],
            filter: vec![],
            post_filter: vec![],
            pre_score: vec![],
            score: vec![],
            reserve: vec![],
            permit: vec![],
            pre_bind: vec![],
            bind: vec![],
            post_bind: vec![],
        };
        let instance = |name: &str, fw: &mut Framework| -> Result<P, String> {
            if let Some(p) = fw.plugins.get(name) {
                return Ok(p.clone());
            }
            let factory = registry
                .get(name)
                .ok_or_else(|| format!("plugin {name:?} does not exist"))?;
            let p = factory(profile.args.get(name), &fw.ctx)
                .map_err(|e| format!("initializing plugin {name:?}: {e}"))?;
            fw.plugins.insert(name.to_string(), p.clone());
            Ok(p)
        };
        for point in ExtensionPoint::ALL {
            let specific = profile.points.get(&point).cloned().unwrap_or_default();
            let disabled = profile.disabled.get(&point).cloned().unwrap_or_default();
            let all_disabled = disabled.iter().any(|d| d == "*");
            // Upstream's order: specific entries that override a multiPoint one, then
            // multiPoint's own, then the remaining specific entries.
            let mut overrides = Vec::new();
            let mut from_multi = Vec::new();
            for (name, weight) in &profile.multi_point {
                let p = instance(name, &mut fw)?;
                if !implements(&p, point) || all_disabled || disabled.contains(name) {
                    continue;
                }
                match specific.iter().find(|(n, _)| n == name) {
                    Some(entry) => overrides.push(entry.clone()),
                    None => from_multi.push((name.clone(), *weight)),
                }
            }
            let rest = specific
                .iter()
                .filter(|(n, _)| !overrides.iter().any(|(o, _)| o == n))
                .cloned();
            let ordered: Vec<(String, i64)> = overrides
                .iter()
                .cloned()
                .chain(from_multi)
                .chain(rest)
                .collect();
            for (name, weight) in ordered {
                let plugin = instance(&name, &mut fw)?;
                if !implements(&plugin, point) {
                    return Err(format!(
                        "plugin {name:?} does not extend {} plugin",
                        point.field()
                    ));
                }
                match point {
                    ExtensionPoint::PreEnqueue => fw.pre_enqueue.push(plugin),
                    ExtensionPoint::QueueSort => fw.queue_sort = Some(plugin),
                    ExtensionPoint::PreFilter => fw.pre_filter.push(plugin),
                    ExtensionPoint::Filter => fw.filter.push(plugin),
                    ExtensionPoint::PostFilter => fw.post_filter.push(plugin),
                    ExtensionPoint::PreScore => fw.pre_score.push(plugin),
                    ExtensionPoint::Score => fw.score.push((plugin, weight.max(1))),
                    ExtensionPoint::Reserve => fw.reserve.push(plugin),
                    ExtensionPoint::Permit => fw.permit.push(plugin),
                    ExtensionPoint::PreBind => fw.pre_bind.push(plugin),
                    ExtensionPoint::Bind => fw.bind.push(plugin),
                    ExtensionPoint::PostBind => fw.post_bind.push(plugin),
                }
            }
        }
        if fw.queue_sort.is_none() {
            return Err("no queue sort plugin is enabled".into());
        }
        if fw.bind.is_empty() {
            return Err("at least one bind plugin is needed".into());
        }
        Ok(fw)
    }

    pub fn parallelizer(&self) -> &Parallelizer {
        &self.ctx.parallelizer
    }

    pub fn plugin(&self, name: &str) -> Option<&P> {
        self.plugins.get(name)
    }

    /// Names of the plugins at one extension point, in run order.
    pub fn list_plugins(&self, point: ExtensionPoint) -> Vec<&'static str> {
        let names = |v: &Vec<P>| v.iter().map(|p| p.name()).collect();
        match point {
            ExtensionPoint::PreEnqueue => names(&self.pre_enqueue),
            ExtensionPoint::QueueSort => self.queue_sort.iter().map(|p| p.name()).collect(),
            ExtensionPoint::PreFilter => names(&self.pre_filter),
            ExtensionPoint::Filter => names(&self.filter),
            ExtensionPoint::PostFilter => names(&self.post_filter),
            ExtensionPoint::PreScore => names(&self.pre_score),
            ExtensionPoint::Score => self.score.iter().map(|(p, _)| p.name()).collect(),
            ExtensionPoint::Reserve => names(&self.reserve),
            ExtensionPoint::Permit => names(&self.permit),
            ExtensionPoint::PreBind => names(&self.pre_bind),
            ExtensionPoint::Bind => names(&self.bind),
            ExtensionPoint::PostBind => names(&self.post_bind),
        }
    }

    /// Every enabled plugin's event registrations, by plugin name.
    pub fn events_to_register(&self) -> Vec<(&'static str, ClusterEventWithHint)> {
        let mut out = Vec::new();
        for p in self.plugins.values() {
            for e in p.events_to_register() {
                out.push((p.name(), e));
            }
        }
        out
    }

    pub fn run_pre_enqueue(&self, pod: &k8s_openapi::api::core::v1::Pod) -> Status {
        for p in &self.pre_enqueue {
            let s = p
                .as_pre_enqueue()
                .map_or_else(Status::success, |x| x.pre_enqueue(pod));
            if !s.is_success() {
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    pub fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        self.queue_sort
            .as_ref()
            .and_then(|p| p.as_queue_sort())
            .is_some_and(|q| q.less(a, b))
    }

    /// PreFilter of every plugin; the first rejection ends the cycle. Results are intersected.
    pub fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let (result, status, _) = self.run_pre_filter_naming(state, pod, snapshot);
        (result, status)
    }

    /// [`Framework::run_pre_filter`], also naming the plugins that narrowed the node set
    /// (the failure message cites them for the nodes they left out).
    pub fn run_pre_filter_naming(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status, Vec<&'static str>) {
        let mut narrowing = Vec::new();
        let mut result: Option<PreFilterResult> = None;
        for (j, p) in self.pre_filter.iter().enumerate() {
            let Some(pf) = p.as_pre_filter() else {
                continue;
            };
            let (r, s) = pf.pre_filter(state, pod, snapshot);
            if s.is_skip() {
                state.skip_pre_filter |= 1 << j;
                if let Some(i) = self.filter.iter().position(|f| f.name() == p.name()) {
                    state.skip_filter |= 1 << i;
                }
                continue;
            }
            if !s.is_success() {
                return (None, s.with_plugin(p.name()), narrowing);
            }
            if let Some(r) = r.filter(|r| !r.all_nodes()) {
                narrowing.push(p.name());
                let merged = match &result {
                    Some(prev) => prev.merge(&r),
                    None => r,
                };
                if merged.node_names.as_ref().is_some_and(|n| n.is_empty()) {
                    let status = Status::unresolvable(format!(
                        "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                        narrowing.join(" ")
                    ))
                    .with_plugin(p.name());
                    return (Some(merged), status, narrowing);
                }
                result = Some(merged);
            }
        }
        (result, Status::success(), narrowing)
    }

    /// Every Filter plugin on one node; the first rejection decides.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for (i, p) in self.filter.iter().enumerate() {
            if state.skip_filter & (1 << i) != 0 {
                continue;
            }
            let Some(f) = p.as_filter() else { continue };
            let s = f.filter(state, pod, node);
            if !s.is_success() {
                let mut s = s.with_plugin(p.name());
                if !s.is_rejected() {
                    s.code = Code::Error;
                }
                return s;
            }
        }
        Status::success()
    }

    /// Filter counting pods nominated to this node with at least the pod's priority, as
    /// upstream: the node must fit both with them (they will land there) and without them
    /// (they may not, and affinity to them must not be what made it fit).
    pub fn run_filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let nominated: Vec<Arc<PodInfo>> = self
            .ctx
            .nominator()
            .map(|n| n.nominated_pods_for_node(node.node_name()))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.uid() != pod.uid() && p.priority() >= pod.priority())
            .collect();
        if nominated.is_empty() {
            return self.run_filter(state, pod, node);
        }
        let mut with_state = state.clone();
        let mut with_node = node.clone();
        for p in &nominated {
            with_node.add_pod(p.clone());
            let s = self.run_pre_filter_extension_add_pod(&mut with_state, pod, p, &with_node);
            if !s.is_success() {
                return s;
            }
        }
        let s = self.run_filter(&with_state, pod, &with_node);
        if !s.is_success() {
            return s;
        }
        self.run_filter(state, pod, node)
    }

    pub fn run_pre_filter_extension_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for (j, p) in self.pre_filter.iter().enumerate() {
            if state.skip_pre_filter & (1 << j) != 0 {
                continue;
            }
            if let Some(ext) = p.as_pre_filter().and_then(|x| x.pre_filter_extensions()) {
                let s = ext.add_pod(state, pod, to_add, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    pub fn run_pre_filter_extension_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for (j, p) in self.pre_filter.iter().enumerate() {
            if state.skip_pre_filter & (1 << j) != 0 {
                continue;
            }
            if let Some(ext) = p.as_pre_filter().and_then(|x| x.pre_filter_extensions()) {
                let s = ext.remove_pod(state, pod, to_remove, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    pub fn has_post_filter(&self) -> bool {
        !self.post_filter.is_empty()
    }

    /// PostFilter plugins in order until one succeeds (preemption nominates a node).
    pub async fn run_post_filter(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let mut reasons = Vec::new();
        for p in &self.post_filter {
            let Some(pf) = p.as_post_filter() else {
                continue;
            };
            let (r, s) = pf.post_filter(self, state, pod, snapshot, filtered).await;
            if s.is_success() {
                return (r, s);
            }
            if s.code == Code::Error {
                return (None, s.with_plugin(p.name()));
            }
            reasons.extend(s.reasons);
        }
        (None, Status::with_reasons(Code::Unschedulable, reasons))
    }

    pub fn run_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        snapshot: &Snapshot,
    ) -> Status {
        for p in &self.pre_score {
            let Some(ps) = p.as_pre_score() else { continue };
            let s = ps.pre_score(state, pod, nodes, snapshot);
            if s.is_skip() {
                if let Some(i) = self.score.iter().position(|(sp, _)| sp.name() == p.name()) {
                    state.skip_score |= 1 << i;
                }
                continue;
            }
            if !s.is_success() {
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }

    /// Score, NormalizeScore and weights for every node: the weighted total per node, in
    /// `nodes` order. One parallel pass over the nodes runs every active Score plugin on each
    /// (one hand-off to the pool per cycle, not one per plugin), into one flat table.
    pub fn run_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<i64>, Status> {
        let active: Vec<(&'static str, &dyn ScorePlugin, i64)> = self
            .score
            .iter()
            .enumerate()
            .filter(|(i, _)| state.skip_score & (1 << i) == 0)
            .map(|(_, (p, w))| (p.name(), p.as_score().expect("listed at Score"), *w))
            .collect();
        let width = active.len();
        let mut totals = vec![0i64; nodes.len()];
        if width == 0 {
            return Ok(totals);
        }
        // Node-major: row n holds node n's raw score from each active plugin.
        let rows: Vec<Result<[i64; MAX_SCORE_PLUGINS_PER_PASS], Status>> = active
            .chunks(MAX_SCORE_PLUGINS_PER_PASS)
            .flat_map(|group| {
                self.ctx.parallelizer.map(nodes.len(), |n| {
                    let mut row = [0i64; MAX_SCORE_PLUGINS_PER_PASS];
                    for (slot, (name, sp, _)) in row.iter_mut().zip(group) {
                        let (v, s) = sp.score(state, pod, &nodes[n]);
                        if !s.is_success() {
                            return Err(s.with_plugin(name));
                        }
                        *slot = v;
                    }
                    Ok(row)
                })
            })
            .collect();
        let rows: Vec<[i64; MAX_SCORE_PLUGINS_PER_PASS]> =
            rows.into_iter().collect::<Result<_, _>>()?;
        // Names are cloned once per cycle, then each plugin normalizes the same list in turn.
        let mut ns: Vec<NodeScore> = nodes
            .iter()
            .map(|n| NodeScore {
                name: n.name.clone(),
                score: 0,
            })
            .collect();
        for (k, (name, sp, weight)) in active.iter().enumerate() {
            let (group, col) = (
                k / MAX_SCORE_PLUGINS_PER_PASS,
                k % MAX_SCORE_PLUGINS_PER_PASS,
            );
            let group_rows = &rows[group * nodes.len()..(group + 1) * nodes.len()];
            for (slot, row) in ns.iter_mut().zip(group_rows) {
                slot.score = row[col];
            }
            let s = sp.normalize_score(state, pod, &mut ns);
            if !s.is_success() {
                return Err(s.with_plugin(name));
            }
            for (total, n) in totals.iter_mut().zip(&ns) {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&n.score) {
                    return Err(Status::error(format!(
                        "plugin {name:?} returns an invalid score {}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        n.score,
                    )));
                }
                *total += n.score * weight;
            }
        }
        Ok(totals)
    }

    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.reserve {
            if let Some(r) = p.as_reserve() {
                let s = r.reserve(state, pod, node);
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// Unreserve in reverse order, as upstream.
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for p in self.reserve.iter().rev() {
            if let Some(r) = p.as_reserve() {
                r.unreserve(state, pod, node);
            }
        }
    }

    /// Permit: a rejection ends the cycle; `Wait` answers give the longest timeout to wait.
    pub fn run_permit(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, Option<Duration>) {
        let mut wait: Option<Duration> = None;
        for p in &self.permit {
            let Some(pm) = p.as_permit() else { continue };
            let (s, timeout) = pm.permit(state, pod, node);
            match s.code {
                Code::Success => {}
                Code::Wait => wait = Some(wait.map_or(timeout, |w| w.max(timeout))),
                _ => return (s.with_plugin(p.name()), None),
            }
        }
        (Status::success(), wait)
    }

    pub async fn run_pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.pre_bind {
            if let Some(pb) = p.as_pre_bind() {
                let s = pb.pre_bind(state, pod, node).await;
                if !s.is_success() {
                    return s.with_plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// The first bind plugin that does not Skip binds.
    pub async fn run_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.bind {
            if let Some(b) = p.as_bind() {
                let s = b.bind(state, pod, node).await;
                if s.is_skip() {
                    continue;
                }
                return if s.is_success() {
                    s
                } else {
                    s.with_plugin(p.name())
                };
            }
        }
        Status::skip()
    }

    pub fn run_post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) {
        for p in &self.post_bind {
            if let Some(pb) = p.as_post_bind() {
                pb.post_bind(state, pod, node);
            }
        }
    }
}
