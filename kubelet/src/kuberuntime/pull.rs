//! Making sure a container's image is there (upstream's `EnsureImageExists`): the pull
//! policy, pull secrets, the per-image pull backoff and upstream's waiting reasons.

use super::RuntimeManager;
use super::credentials::credentials_for;
use super::events::{NORMAL, WARNING};
use super::images::{PullPolicy, pull_policy, with_default_tag};
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use std::time::SystemTime;

/// A failed image step: (reason, message) as the container's waiting state shows it.
pub type PullFailure = (&'static str, String);

/// Upstream's `Pulled` message after a pull: both durations cut to milliseconds and printed
/// as Go prints durations.
pub fn pulled_message(
    image: &str,
    pulling: std::time::Duration,
    total: std::time::Duration,
    size: u64,
) -> String {
    let ms = |d: std::time::Duration| {
        component_base::duration::GoDuration(std::time::Duration::from_millis(d.as_millis() as u64))
    };
    format!(
        "Successfully pulled image {image:?} in {} ({} including waiting). Image size: {size} bytes.",
        ms(pulling),
        ms(total)
    )
}

pub fn grpc_error_string(e: &tonic::Status) -> String {
    format!("rpc error: code = {:?} desc = {}", e.code(), e.message())
}

impl RuntimeManager {
    /// The image id to create the container from.
    pub(super) async fn ensure_image(
        &self,
        pod: &Pod,
        container: &Container,
        secrets: &[Secret],
        sandbox_config: &cri::PodSandboxConfig,
    ) -> Result<String, PullFailure> {
        let spec_image = container.image.clone().unwrap_or_default();
        let warn = |reason: &'static str, message: &str| {
            self.event(pod, Some(container), WARNING, reason, message.to_string());
        };
        let image = with_default_tag(&spec_image).map_err(|e| {
            let message = format!(
                "Failed to apply default image tag {spec_image:?}: couldn't parse image name {spec_image:?}: {e}"
            );
            warn("InspectFailed", &message);
            ("InvalidImageName", message)
        })?;
        let present = self
            .client
            .image_status(&image)
            .await
            .map_err(|e| {
                let message = format!(
                    "Failed to inspect image {spec_image:?}: {}",
                    grpc_error_string(&e)
                );
                warn("InspectFailed", &message);
                ("ImageInspectError", message)
            })?
            .map(|i| i.id);
        let policy = pull_policy(container.image_pull_policy.as_deref(), &spec_image);
        let must_pull = match policy {
            PullPolicy::Always => true,
            PullPolicy::IfNotPresent => present.is_none(),
            PullPolicy::Never => false,
        };
        if !must_pull {
            if present.is_some() {
                self.event(
                    pod,
                    Some(container),
                    NORMAL,
                    "Pulled",
                    format!("Container image {spec_image:?} already present on machine"),
                );
            }
            return present.ok_or_else(|| {
                let message = format!(
                    "Container image {spec_image:?} is not present with pull policy of Never"
                );
                warn("ErrImageNeverPull", &message);
                ("ErrImageNeverPull", message)
            });
        }
        let key = format!(
            "{}_{}",
            pod.metadata.uid.as_deref().unwrap_or_default(),
            spec_image
        );
        if self
            .image_backoff
            .lock()
            .in_backoff_since_update(&key, SystemTime::now())
        {
            let message = format!("Back-off pulling image {spec_image:?}");
            self.event(pod, Some(container), NORMAL, "BackOff", message.clone());
            warn("Failed", "Error: ImagePullBackOff");
            return Err(("ImagePullBackOff", message));
        }
        self.event(
            pod,
            Some(container),
            NORMAL,
            "Pulling",
            format!("Pulling image {spec_image:?}"),
        );
        let started = std::time::Instant::now();
        let (result, pulling) = {
            // serializeImagePulls: one pull at a time, as upstream's serial puller.
            let _serial = if self.options.serialize_image_pulls {
                Some(self.pull_lock.lock().await)
            } else {
                None
            };
            let pulling = std::time::Instant::now();
            let result = self
                .pull_with_credentials(&image, secrets, sandbox_config)
                .await;
            (result, pulling)
        };
        match result {
            Ok(image_ref) => {
                let pulled_in = pulling.elapsed();
                let size = self
                    .client
                    .image_status(&image_ref)
                    .await
                    .ok()
                    .flatten()
                    .map_or(0, |i| i.size);
                self.event(
                    pod,
                    Some(container),
                    NORMAL,
                    "Pulled",
                    pulled_message(&spec_image, pulled_in, started.elapsed(), size),
                );
                let mut backoff = self.image_backoff.lock();
                backoff.reset(&key);
                backoff.gc(SystemTime::now());
                Ok(image_ref)
            }
            Err(e) => {
                let now = SystemTime::now();
                self.image_backoff.lock().next(&key, now, now);
                let message = grpc_error_string(&e);
                warn(
                    "Failed",
                    &format!("Failed to pull image {spec_image:?}: {message}"),
                );
                warn("Failed", "Error: ErrImagePull");
                Err(("ErrImagePull", message))
            }
        }
    }

    /// Tries each matching credential in turn, anonymously when none matches.
    async fn pull_with_credentials(
        &self,
        image: &str,
        secrets: &[Secret],
        sandbox_config: &cri::PodSandboxConfig,
    ) -> Result<String, tonic::Status> {
        let creds = credentials_for(image, secrets);
        let attempts: Vec<Option<cri::AuthConfig>> = if creds.is_empty() {
            vec![None]
        } else {
            creds.into_iter().map(Some).collect()
        };
        let mut last = tonic::Status::unknown("no pull attempted");
        for auth in attempts {
            tracing::info!(image, "pulling image");
            match self
                .client
                .pull_image(image, auth, Some(sandbox_config.clone()))
                .await
            {
                Ok(image_ref) if !image_ref.is_empty() => return Ok(image_ref),
                Ok(_) => {
                    // Some runtimes answer without a ref: ask for the stored image's id.
                    if let Ok(Some(i)) = self.client.image_status(image).await {
                        return Ok(i.id);
                    }
                    last = tonic::Status::unknown(format!("image {image} missing after pull"));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::pulled_message;
    use std::time::Duration;

    #[test]
    fn pulled_messages_print_go_durations_in_milliseconds() {
        assert_eq!(
            pulled_message(
                "busybox",
                Duration::from_micros(1_234_567),
                Duration::from_micros(2_500_900),
                4096
            ),
            "Successfully pulled image \"busybox\" in 1.234s (2.5s including waiting). Image size: 4096 bytes."
        );
        assert!(
            pulled_message("b", Duration::from_micros(512_300), Duration::ZERO, 1)
                .contains("in 512ms (0s including waiting)")
        );
    }
}
