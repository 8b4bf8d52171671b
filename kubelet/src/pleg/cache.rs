//! The latest runtime status of each pod with the time it was observed, as upstream's
//! `kubecontainer.Cache`: a pod worker asks for a status newer than its last sync and waits
//! until a relist (or its own inspection) provides one.

use crate::container::PodRuntimeStatus;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

#[derive(Default)]
struct Inner {
    pods: HashMap<String, (Arc<PodRuntimeStatus>, Instant)>,
    /// Every pod not in `pods` is known to be unchanged up to this time (the last relist).
    global: Option<Instant>,
}

#[derive(Default)]
pub struct Cache {
    inner: Mutex<Inner>,
    changed: Notify,
}

impl Cache {
    /// The cached status of `uid` and when it was observed.
    pub fn get(&self, uid: &str) -> Option<(Arc<PodRuntimeStatus>, Instant)> {
        self.inner.lock().pods.get(uid).cloned()
    }

    /// Records a status observed at `at`; an older observation never replaces a newer one.
    pub fn set(&self, uid: &str, status: PodRuntimeStatus, at: Instant) {
        let mut inner = self.inner.lock();
        if inner.pods.get(uid).is_some_and(|(_, t)| *t > at) {
            return;
        }
        inner.pods.insert(uid.to_string(), (Arc::new(status), at));
        drop(inner);
        self.changed.notify_waiters();
    }

    pub fn delete(&self, uid: &str) {
        self.inner.lock().pods.remove(uid);
    }

    /// Every pod is known up to `at` (a relist finished).
    pub fn update_time(&self, at: Instant) {
        let mut inner = self.inner.lock();
        if inner.global.is_none_or(|g| g < at) {
            inner.global = Some(at);
        }
        drop(inner);
        self.changed.notify_waiters();
    }

    fn newer_than(&self, uid: &str, min: Option<Instant>) -> Option<Arc<PodRuntimeStatus>> {
        let inner = self.inner.lock();
        let entry = inner.pods.get(uid);
        let fresh = |t: Instant| min.is_none_or(|m| t > m);
        match entry {
            Some((status, t)) if fresh(*t) || inner.global.is_some_and(fresh) => {
                Some(status.clone())
            }
            None if inner.global.is_some_and(fresh) => Some(Arc::new(PodRuntimeStatus {
                uid: uid.to_string(),
                ..Default::default()
            })),
            _ => None,
        }
    }

    /// A status of `uid` observed after `min` (any observation when None), waiting for it.
    pub async fn get_newer_than(&self, uid: &str, min: Option<Instant>) -> Arc<PodRuntimeStatus> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(status) = self.newer_than(uid, min) {
                return status;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn waits_for_a_newer_observation() {
        let cache = Arc::new(Cache::default());
        let t0 = Instant::now();
        cache.set("u", PodRuntimeStatus::default(), t0);
        // Observed at t0 exactly is not newer than t0.
        assert!(cache.newer_than("u", Some(t0)).is_none());
        assert!(cache.newer_than("u", None).is_some());
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.get_newer_than("other", Some(t0)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        cache.update_time(t0 + Duration::from_millis(1));
        let status = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the relist")
            .expect("joins");
        assert_eq!(status.uid, "other");
        // An older observation does not replace a newer one.
        let newer = PodRuntimeStatus {
            name: "new".into(),
            ..Default::default()
        };
        cache.set("u", newer, t0 + Duration::from_secs(2));
        cache.set(
            "u",
            PodRuntimeStatus::default(),
            t0 + Duration::from_secs(1),
        );
        assert_eq!(
            cache.get("u").map(|(s, _)| s.name.clone()).as_deref(),
            Some("new")
        );
    }
}
