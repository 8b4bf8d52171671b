//! The binding cycle, run in the background so the next pod is scheduled meanwhile:
//! PreBind, Bind, then the cache confirms the assumption and the `Scheduled` event is written.

use super::Shared;
use super::failure::{Failure, pod_reference};
use super::metrics::{AttemptResult, observe_attempt, observe_pod_scheduled};
use crate::framework::events::events::ASSIGNED_POD_DELETE;
use crate::framework::{CycleState, Framework, PodInfo, QueuedPodInfo};
use client_go_rs::events::EventType;
use std::sync::Arc;
use std::time::Instant;

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn binding_cycle(
        self: Arc<Self>,
        fw: Arc<Framework>,
        mut state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Arc<PodInfo>,
        node: String,
        start: Instant,
        scheduling_cycle: u64,
    ) {
        let mut status = fw.run_pre_bind(&state, &assumed, &node).await;
        if status.is_success() {
            status = fw.run_bind(&state, &assumed, &node).await;
        }
        if !status.is_success() {
            fw.run_unreserve(&mut state, &assumed, &node);
            self.cache.forget_pod(&assumed);
            // Pods rejected because of this one's assumed resources may fit again.
            self.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE,
                Some(&assumed.pod as &dyn std::any::Any),
                None,
            );
            observe_attempt(AttemptResult::Error, &fw.profile_name, start.elapsed());
            let mut failure = Failure::from_status(status);
            failure.reason = "SchedulerError";
            failure.is_error = true;
            self.handle_failure(&fw, qpi, failure, scheduling_cycle);
            self.queue.done(assumed.uid());
            return;
        }
        self.cache.finish_binding(&assumed);
        if let Some(recorder) = self.recorders.get(&fw.profile_name) {
            recorder.event_with(
                &pod_reference(&assumed.pod),
                None,
                EventType::Normal,
                "Scheduled",
                "Binding",
                format!(
                    "Successfully assigned {}/{} to {}",
                    assumed.namespace(),
                    assumed.name(),
                    node
                ),
            );
        }
        observe_attempt(AttemptResult::Scheduled, &fw.profile_name, start.elapsed());
        if let Some(first) = qpi.initial_attempt_timestamp {
            observe_pod_scheduled(qpi.attempts, first.elapsed());
        }
        fw.run_post_bind(&state, &assumed, &node);
        self.queue.done(assumed.uid());
    }
}
