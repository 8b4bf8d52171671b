//! The PrioritySort plugin: the active queue pops higher-priority pods first, and among equals
//! the one queued earliest.

use crate::framework::{Plugin, PluginContext, QueueSortPlugin, QueuedPodInfo};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "PrioritySort";

pub struct PrioritySort;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(PrioritySort))
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing;
    use std::time::{Duration, Instant};

    fn queued(priority: Option<i32>, at: Instant) -> QueuedPodInfo {
        let mut pod = testing::pod("p", &[]);
        if let Some(spec) = pod.spec.as_mut() {
            spec.priority = priority;
        }
        QueuedPodInfo::new(testing::pod_info(pod), at)
    }

    #[test]
    fn orders_by_priority_then_time() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let cases = [
            (
                "higher priority first",
                queued(Some(100), t1),
                queued(Some(50), t0),
                true,
            ),
            (
                "lower priority after",
                queued(Some(50), t0),
                queued(Some(100), t1),
                false,
            ),
            (
                "equal priority earlier first",
                queued(Some(10), t0),
                queued(Some(10), t1),
                true,
            ),
            (
                "equal priority later after",
                queued(Some(10), t1),
                queued(Some(10), t0),
                false,
            ),
            (
                "unset counts as zero",
                queued(None, t0),
                queued(Some(0), t1),
                true,
            ),
            (
                "same pod is not less",
                queued(Some(1), t0),
                queued(Some(1), t0),
                false,
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(PrioritySort.less(&a, &b), want, "{name}");
        }
    }
}
