//! The image GC manager: a loop that detects images and frees the image file system when it
//! is above the high threshold, and [`ImageGcManager::delete_unused_images`] for the eviction
//! manager.

use super::policy::{
    ImageGcPolicy, ImageRecord, detect, eviction_order, select_to_free, select_too_old,
};
use crate::kuberuntime::RuntimeManager;
use anyhow::Context;
use client_go_rs::events::{EventRecorder, EventType};
use k8s_openapi::api::core::v1::ObjectReference;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// Upstream's `ImageGCPeriod`.
pub const IMAGE_GC_PERIOD: Duration = Duration::from_secs(5 * 60);

/// Frees the image file system by removing unused images.
pub struct ImageGcManager {
    runtime: Arc<RuntimeManager>,
    policy: ImageGcPolicy,
    /// Image names never removed besides CRI-pinned ones (the sandbox image).
    protected: Vec<String>,
    records: tokio::sync::Mutex<BTreeMap<String, ImageRecord>>,
    recorder: Option<EventRecorder>,
    node: ObjectReference,
}

/// `capacity` and `available` bytes of the file system holding the runtime's images.
fn fs_stats(mountpoint: &Path) -> anyhow::Result<(u64, u64)> {
    let s = nix::sys::statvfs::statvfs(mountpoint)
        .with_context(|| format!("statvfs {}", mountpoint.display()))?;
    let frag = s.fragment_size() as u64;
    Ok((s.blocks() as u64 * frag, s.blocks_available() as u64 * frag))
}

impl ImageGcManager {
    /// Fails on an invalid policy, as upstream's constructor.
    pub fn new(
        runtime: Arc<RuntimeManager>,
        policy: ImageGcPolicy,
        node_name: &str,
        recorder: Option<EventRecorder>,
    ) -> anyhow::Result<Self> {
        policy.validate().context("invalid image GC policy")?;
        Ok(Self {
            runtime,
            policy,
            protected: Vec::new(),
            records: tokio::sync::Mutex::new(BTreeMap::new()),
            recorder,
            // Upstream's node reference: the node's name doubles as its uid.
            node: ObjectReference {
                kind: Some("Node".into()),
                name: Some(node_name.into()),
                uid: Some(node_name.into()),
                ..Default::default()
            },
        })
    }

    /// Never removes `image` (e.g. `--pod-infra-container-image`), whatever the runtime pins.
    pub fn protect(&mut self, image: impl Into<String>) {
        self.protected.push(image.into());
    }

    fn warn(&self, reason: &str, message: &str) {
        if let Some(r) = &self.recorder {
            r.event(&self.node, EventType::Warning, reason, message.to_string());
        }
    }

    /// Refreshes the records; the ids of the images in use.
    async fn detect(
        &self,
        records: &mut BTreeMap<String, ImageRecord>,
        now: SystemTime,
    ) -> anyhow::Result<std::collections::HashSet<String>> {
        let images = self
            .runtime
            .list_runtime_images()
            .await
            .context("listing images")?;
        let in_use = self.runtime.images_in_use().await?;
        let mut protected = self.protected.clone();
        protected.extend(self.runtime.sandbox_image().await);
        Ok(detect(records, &images, &in_use, &protected, now))
    }

    async fn detect_only(&self) -> anyhow::Result<()> {
        let mut records = self.records.lock().await;
        self.detect(&mut records, SystemTime::now()).await.map(drop)
    }

    /// Removes images by id; the bytes freed. Stops at the first failure, as upstream.
    async fn remove(
        &self,
        records: &mut BTreeMap<String, ImageRecord>,
        ids: &[String],
    ) -> anyhow::Result<u64> {
        let mut freed = 0;
        for id in ids {
            let size = records.get(id).map_or(0, |r| r.size);
            tracing::info!(image = %id, size, "removing an unused image");
            self.runtime
                .remove_image(id)
                .await
                .with_context(|| format!("removing image {id}"))?;
            records.remove(id);
            freed += size;
        }
        Ok(freed)
    }

    /// Frees up to `bytes` from unused images old enough; the bytes freed.
    async fn free_space(&self, bytes: u64, now: SystemTime) -> anyhow::Result<u64> {
        let mut records = self.records.lock().await;
        let in_use = self.detect(&mut records, now).await?;
        let order = eviction_order(&records, &in_use);
        let (ids, _) = select_to_free(&order, now, self.policy.min_age, bytes);
        self.remove(&mut records, &ids).await
    }

    /// Everything unused and old enough goes: the eviction manager's reclaim of the image
    /// file system. The bytes freed.
    pub async fn delete_unused_images(&self) -> anyhow::Result<u64> {
        self.free_space(u64::MAX, SystemTime::now()).await
    }

    /// One round: images unused past `imageMaximumGCAge`, then enough to get under the low
    /// threshold when the image file system is above the high one.
    pub async fn garbage_collect(&self) -> anyhow::Result<()> {
        let now = SystemTime::now();
        if !self.policy.max_age.is_zero() {
            let mut records = self.records.lock().await;
            let in_use = self.detect(&mut records, now).await?;
            let order = eviction_order(&records, &in_use);
            let old = select_too_old(&order, now, self.policy.max_age);
            self.remove(&mut records, &old).await?;
        }
        let fs = self
            .runtime
            .image_fs_usage()
            .await
            .context("getting the image file system")?;
        let Some((mountpoint, _)) = fs.into_iter().find(|(m, _)| !m.is_empty()) else {
            anyhow::bail!("the runtime reports no image file system");
        };
        let (capacity, available) = fs_stats(Path::new(&mountpoint))?;
        let Some(bytes) = self.policy.bytes_to_free(capacity, available) else {
            // Still keep first-detected times current, so images age as upstream's do.
            return self.detect_only().await;
        };
        tracing::info!(
            usage_percent = 100 - available * 100 / capacity.max(1),
            high = self.policy.high_threshold_percent,
            bytes,
            "image file system above the high threshold: freeing images"
        );
        let freed = self.free_space(bytes, now).await?;
        if freed < bytes {
            let message = format!(
                "Failed to garbage collect required amount of images. Attempted to free {bytes} bytes, but only found {freed} bytes eligible to free."
            );
            self.warn("FreeDiskSpaceFailed", &message);
            anyhow::bail!(message);
        }
        Ok(())
    }

    /// Runs [`Self::garbage_collect`] now and every `period` until `shutdown`, as upstream's
    /// `StartGarbageCollection`: a failure twice in a row becomes an `ImageGCFailed` event.
    /// With GC disabled (100%, no maximum age) images are still detected, so that
    /// [`Self::delete_unused_images`] knows how old they are, as upstream's `Start`.
    pub fn start(self: Arc<Self>, period: Duration, shutdown: CancellationToken) {
        let disabled = self.policy.disabled();
        if disabled {
            tracing::info!("image garbage collection disabled (high threshold 100%)");
        }
        tokio::spawn(async move {
            let mut failed_before = false;
            loop {
                let round = if disabled {
                    self.detect_only().await
                } else {
                    self.garbage_collect().await
                };
                match round {
                    Ok(()) => failed_before = false,
                    Err(e) => {
                        let message = format!("{e:#}");
                        if failed_before {
                            self.warn("ImageGCFailed", &message);
                        }
                        tracing::warn!(error = %message, "image garbage collection failed");
                        failed_before = true;
                    }
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(period) => {}
                }
            }
        });
    }
}

#[async_trait::async_trait]
impl crate::eviction::ImageReclaimer for ImageGcManager {
    async fn delete_unused_images(&self) -> anyhow::Result<u64> {
        ImageGcManager::delete_unused_images(self).await
    }
}
