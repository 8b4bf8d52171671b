//! The hollow runtime's CRI ImageService: every image is present and every pull succeeds at
//! once (a hollow node has no registry to reach and no disk to fill).

use super::state::{State, now_nanos};
use k8s_cri::v1 as cri;
use k8s_cri::v1::image_service_server::ImageService;
use parking_lot::Mutex;
use std::sync::Arc;
use tonic::{Request, Response, Status};

type Answer<T> = Result<Response<T>, Status>;

/// What a hollow image weighs, for the node's image list and the scheduler's ImageLocality.
const IMAGE_SIZE: u64 = 1 << 20;

pub(super) struct HollowImages {
    pub state: Arc<Mutex<State>>,
    /// Where the image filesystem is said to be (the kubelet's root dir).
    pub mountpoint: String,
}

fn image(reference: &str) -> cri::Image {
    cri::Image {
        id: State::image_id(reference),
        repo_tags: vec![reference.to_string()],
        size: IMAGE_SIZE,
        ..Default::default()
    }
}

#[tonic::async_trait]
impl ImageService for HollowImages {
    async fn list_images(
        &self,
        _: Request<cri::ListImagesRequest>,
    ) -> Answer<cri::ListImagesResponse> {
        let images = self.state.lock().images.keys().map(|r| image(r)).collect();
        Ok(Response::new(cri::ListImagesResponse { images }))
    }

    async fn image_status(
        &self,
        request: Request<cri::ImageStatusRequest>,
    ) -> Answer<cri::ImageStatusResponse> {
        let reference = request
            .into_inner()
            .image
            .map(|i| i.image)
            .unwrap_or_default();
        Ok(Response::new(cri::ImageStatusResponse {
            image: Some(image(&reference)),
            ..Default::default()
        }))
    }

    async fn pull_image(
        &self,
        request: Request<cri::PullImageRequest>,
    ) -> Answer<cri::PullImageResponse> {
        let reference = request
            .into_inner()
            .image
            .map(|i| i.image)
            .unwrap_or_default();
        let id = State::image_id(&reference);
        self.state.lock().images.insert(reference, id.clone());
        Ok(Response::new(cri::PullImageResponse { image_ref: id }))
    }

    async fn remove_image(
        &self,
        request: Request<cri::RemoveImageRequest>,
    ) -> Answer<cri::RemoveImageResponse> {
        let reference = request
            .into_inner()
            .image
            .map(|i| i.image)
            .unwrap_or_default();
        self.state
            .lock()
            .images
            .retain(|r, id| *r != reference && *id != reference);
        Ok(Response::new(cri::RemoveImageResponse {}))
    }

    async fn image_fs_info(
        &self,
        _: Request<cri::ImageFsInfoRequest>,
    ) -> Answer<cri::ImageFsInfoResponse> {
        let count = self.state.lock().images.len() as u64;
        let usage = cri::FilesystemUsage {
            timestamp: now_nanos(),
            fs_id: Some(cri::FilesystemIdentifier {
                mountpoint: self.mountpoint.clone(),
            }),
            used_bytes: Some(cri::UInt64Value {
                value: count * IMAGE_SIZE,
            }),
            inodes_used: Some(cri::UInt64Value { value: count }),
        };
        Ok(Response::new(cri::ImageFsInfoResponse {
            image_filesystems: vec![usage.clone()],
            container_filesystems: vec![usage],
        }))
    }
}
