//! Image garbage collection (upstream's `images.ImageGCManager`): the kubelet tracks when it
//! first saw each image and when a container last used it, and removes unused images, least
//! recently used first, when the image file system is above `imageGCHighThresholdPercent`
//! (down to `imageGCLowThresholdPercent`) or when unused past `imageMaximumGCAge`. Pinned
//! images (the sandbox image) and images of any container, dead or alive, stay.
//!
//! Entry points: [`ImageGcManager::start`] (the 5-minute loop, from the run wiring) and
//! [`ImageGcManager::delete_unused_images`] (the eviction manager's reclaim).

mod manager;
mod policy;

pub use manager::{IMAGE_GC_PERIOD, ImageGcManager};
pub use policy::{ImageGcPolicy, ImageRecord};
