//! One scheduling cycle: snapshot, Filter, PostFilter on failure, Score, assume, Reserve,
//! Permit, then the binding cycle is started in the background and the next pod is taken.

use super::Scheduler;
use super::failure::Failure;
use super::find_nodes::{Diagnosis, find_nodes_that_fit, fit_error_message, prioritize_and_select};
use super::metrics::{AttemptResult, observe_attempt};
use crate::framework::{Code, CycleState, Framework, PodInfo, QueuedPodInfo, Status};
use std::sync::Arc;
use std::time::Instant;

/// How a failed cycle ended.
pub enum CycleFailure {
    /// No node fits; `nominated` is where preemption made room.
    Unfit {
        message: String,
        diagnosis: Diagnosis,
        nominated: Option<String>,
    },
    /// A plugin or the cache failed; retried with backoff.
    Error(Status),
}

impl Scheduler {
    pub(super) async fn schedule_one(&mut self, qpi: QueuedPodInfo) {
        let start = Instant::now();
        let pod = qpi.pod_info.clone();
        let Some(fw) = self.framework_for(&pod) else {
            // The profile went away with a config change; the pod is not ours.
            self.shared.queue.done(pod.uid());
            return;
        };
        if self.skip(&pod) {
            self.shared.queue.done(pod.uid());
            return;
        }
        let mut state = CycleState::new();
        let scheduling_cycle = self.shared.queue.scheduling_cycle();
        match self.scheduling_cycle(&fw, &mut state, &pod).await {
            Ok(node) => match self.assume_and_reserve(&fw, &mut state, &pod, &node) {
                Ok(assumed) => {
                    let shared = self.shared.clone();
                    let slot = shared.binding_slots.clone().acquire_owned().await;
                    tokio::spawn(async move {
                        shared
                            .binding_cycle(fw, state, qpi, assumed, node, start, scheduling_cycle)
                            .await;
                        drop(slot);
                    });
                }
                Err(status) => {
                    observe_attempt(AttemptResult::Error, &fw.profile_name, start.elapsed());
                    self.shared.handle_failure(
                        &fw,
                        qpi,
                        Failure::from_status(status),
                        scheduling_cycle,
                    );
                    self.shared.queue.done(pod.uid());
                }
            },
            Err(failure) => {
                let result = match &failure {
                    CycleFailure::Unfit { .. } => AttemptResult::Unschedulable,
                    CycleFailure::Error(_) => AttemptResult::Error,
                };
                observe_attempt(result, &fw.profile_name, start.elapsed());
                self.shared.handle_failure(
                    &fw,
                    qpi,
                    Failure::from_cycle(failure),
                    scheduling_cycle,
                );
                self.shared.queue.done(pod.uid());
            }
        }
    }

    fn framework_for(&self, pod: &PodInfo) -> Option<Arc<Framework>> {
        let name = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        self.shared.profiles.get(name).cloned()
    }

    /// Upstream's `skipPodSchedule`: a pod being deleted, or already assumed (an update of a
    /// pod whose binding is in flight), is not scheduled again.
    fn skip(&self, pod: &PodInfo) -> bool {
        pod.pod.metadata.deletion_timestamp.is_some() || self.shared.cache.is_assumed_pod(pod.uid())
    }

    async fn scheduling_cycle(
        &mut self,
        fw: &Arc<Framework>,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
    ) -> Result<String, CycleFailure> {
        self.shared.cache.update_snapshot(&mut self.snapshot);
        if self.snapshot.num_nodes() == 0 {
            return Err(CycleFailure::Error(Status::error(
                "no nodes available to schedule pods",
            )));
        }
        let percentage = fw
            .percentage_of_nodes_to_score
            .unwrap_or(self.percentage_of_nodes_to_score);
        let (feasible, mut diagnosis) = find_nodes_that_fit(
            fw,
            state,
            pod,
            &self.snapshot,
            &mut self.next_start_node_index,
            percentage,
        )
        .map_err(CycleFailure::Error)?;
        if feasible.is_empty() {
            let mut nominated = None;
            if fw.has_post_filter() {
                let filtered = self.statuses_of_all_nodes(&diagnosis);
                let (result, status) = fw
                    .run_post_filter(state, pod, &self.snapshot, &filtered)
                    .await;
                if status.code == Code::Error {
                    return Err(CycleFailure::Error(status));
                }
                let msg = status.message();
                if !msg.is_empty() {
                    diagnosis.post_filter_msg = if msg.starts_with("preemption:") {
                        msg
                    } else {
                        format!("preemption: {msg}")
                    };
                }
                // An empty nomination (preemption clearing a stale one) is done by the plugin.
                nominated = result
                    .and_then(|r| r.nominated_node_name)
                    .filter(|n| !n.is_empty());
            }
            return Err(CycleFailure::Unfit {
                message: fit_error_message(self.snapshot.num_nodes(), &diagnosis),
                diagnosis,
                nominated,
            });
        }
        prioritize_and_select(fw, state, pod, &feasible, &self.snapshot)
            .map_err(CycleFailure::Error)
    }

    /// PostFilter sees a status for every node: the rejected ones as Filter said, the rest
    /// with the status that stands for them (PreFilter's rejection or result).
    fn statuses_of_all_nodes(&self, d: &Diagnosis) -> crate::framework::NodeToStatus {
        let mut all = d.node_to_status.clone();
        if let Some(absent) = &d.absent_nodes_status {
            for n in &self.snapshot.node_info_list {
                all.entry(n.node_name().to_string())
                    .or_insert_with(|| absent.clone());
            }
        }
        all
    }

    /// Counts the pod on its node at once (so the next cycle sees it), then Reserve and Permit.
    fn assume_and_reserve(
        &self,
        fw: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Result<Arc<PodInfo>, Status> {
        let mut assumed_pod = (*pod.pod).clone();
        if let Some(spec) = assumed_pod.spec.as_mut() {
            spec.node_name = Some(node.to_string());
        }
        let assumed = Arc::new(PodInfo::new(Arc::new(assumed_pod)));
        self.shared
            .cache
            .assume_pod(assumed.clone())
            .map_err(Status::error)?;
        let s = fw.run_reserve(state, &assumed, node);
        if !s.is_success() {
            fw.run_unreserve(state, &assumed, node);
            self.shared.cache.forget_pod(&assumed);
            return Err(s);
        }
        let (s, wait) = fw.run_permit(state, &assumed, node);
        if !s.is_success() || wait.is_some() {
            fw.run_unreserve(state, &assumed, node);
            self.shared.cache.forget_pod(&assumed);
            // No in-tree plugin waits at Permit; waiting pods are not supported yet.
            return Err(if s.is_success() {
                Status::error("Permit plugins asked to wait, which this scheduler does not support")
            } else {
                s
            });
        }
        Ok(assumed)
    }
}
