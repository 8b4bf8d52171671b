//! What image GC asks of the runtime: the images with their pin and size, the images the
//! containers (running or dead) were made from, the sandbox image, and the image file system.

use super::{RuntimeManager, cri_error};
use anyhow::Context;
use std::collections::HashSet;

/// One image the runtime stores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeImage {
    pub id: String,
    pub repo_tags: Vec<String>,
    pub repo_digests: Vec<String>,
    pub size: u64,
    /// CRI `pinned`: the runtime asks never to remove it (its sandbox image).
    pub pinned: bool,
}

impl RuntimeImage {
    /// Whether `name` (an id, a tag or a digest reference) names this image.
    pub fn is_named(&self, name: &str) -> bool {
        self.id == name
            || self.repo_tags.iter().any(|t| t == name)
            || self.repo_digests.iter().any(|d| d == name)
    }
}

/// The value of `"sandboxImage": "..."` in containerd's verbose status `config`.
pub fn sandbox_image_of(info: &std::collections::HashMap<String, String>) -> Option<String> {
    let config: serde_json::Value = serde_json::from_str(info.get("config")?).ok()?;
    config
        .get("sandboxImage")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

impl RuntimeManager {
    pub async fn list_runtime_images(&self) -> anyhow::Result<Vec<RuntimeImage>> {
        let images = self.client.list_images().await.map_err(cri_error)?;
        Ok(images
            .into_iter()
            .map(|i| RuntimeImage {
                id: i.id,
                repo_tags: i.repo_tags,
                repo_digests: i.repo_digests,
                size: i.size,
                pinned: i.pinned,
            })
            .collect())
    }

    /// The image names and ids of every container the runtime has, dead ones included (a
    /// dead container's image is needed to restart it and to show its status).
    pub async fn images_in_use(&self) -> anyhow::Result<HashSet<String>> {
        let containers = self
            .client
            .list_containers(None)
            .await
            .map_err(cri_error)
            .context("listing containers")?;
        let mut used = HashSet::new();
        for c in containers {
            if let Some(spec) = c.image {
                used.insert(spec.image);
            }
            used.insert(c.image_ref);
        }
        used.remove("");
        Ok(used)
    }

    /// The runtime's sandbox (pause) image when it says which (containerd does, in its
    /// verbose status); runtimes without `pinned` need it kept explicitly.
    pub async fn sandbox_image(&self) -> Option<String> {
        let status = self.client.status_verbose().await.ok()?;
        sandbox_image_of(&status.info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_named_by_id_tag_or_digest() {
        let image = RuntimeImage {
            id: "sha256:abc".into(),
            repo_tags: vec!["docker.io/library/busybox:latest".into()],
            repo_digests: vec!["docker.io/library/busybox@sha256:def".into()],
            ..Default::default()
        };
        for (name, want) in [
            ("sha256:abc", true),
            ("docker.io/library/busybox:latest", true),
            ("docker.io/library/busybox@sha256:def", true),
            ("busybox", false),
        ] {
            assert_eq!(image.is_named(name), want, "{name}");
        }
    }

    #[test]
    fn the_sandbox_image_comes_from_containerds_config() {
        let info = |config: &str| {
            std::collections::HashMap::from([("config".to_string(), config.to_string())])
        };
        assert_eq!(
            sandbox_image_of(&info(r#"{"sandboxImage":"registry.k8s.io/pause:3.10"}"#)),
            Some("registry.k8s.io/pause:3.10".into())
        );
        assert_eq!(sandbox_image_of(&info(r#"{"sandboxImage":""}"#)), None);
        assert_eq!(sandbox_image_of(&info("not json")), None);
        assert_eq!(sandbox_image_of(&Default::default()), None);
    }
}
