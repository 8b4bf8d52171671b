//! certificatesigningrequest-approving-controller (upstream's `csrapproving`): approves kubelet
//! client certificates when a SubjectAccessReview says the requester may create
//! `certificatesigningrequests/nodeclient`, or `selfnodeclient` for its own node.

use super::enqueue_all;
use super::request::{
    KUBE_APISERVER_CLIENT_KUBELET, Request, is_approved, is_denied, parse_request,
    validate_kubelet_client,
};
use crate::controller::serviceaccount::is_not_found;
use crate::controller::worker::run_workers_when_synced;
use crate::controller::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};

const NAME: &str = "certificatesigningrequest-approving-controller";
pub(crate) const APPROVE_MESSAGE: &str =
    "Auto approving kubelet client certificate after SubjectAccessReview.";

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for("certificate-controller").await?;
    let informer = ctx.informers.informer::<CertificateSigningRequest>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("csrapproving");
    enqueue_all(&informer, &queue);
    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        let lister = informer.lister();
        run_workers_when_synced(
            NAME,
            &[&*informer],
            queue,
            5,
            shutdown,
            move |name: String| {
                let (client, lister) = (client.clone(), lister.clone());
                async move {
                    let Some(csr) = lister.get(&name) else {
                        return Ok(());
                    };
                    sync(&client, &csr).await
                }
            },
        )
        .await;
    })))
}

/// The subresources whose `create` permission approves `csr`, in upstream's order; empty when
/// it is not a kubelet client request this controller judges.
pub(crate) fn recognized(csr: &CertificateSigningRequest, req: &Request) -> Vec<&'static str> {
    let usages = csr.spec.usages.clone().unwrap_or_default();
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT_KUBELET
        || validate_kubelet_client(req, &usages).is_err()
    {
        return Vec::new();
    }
    let mut subresources = Vec::new();
    if csr.spec.username.as_deref() == Some(req.common_name.as_str()) {
        subresources.push("selfnodeclient");
    }
    subresources.push("nodeclient");
    subresources
}

async fn sync(client: &kube::Client, csr: &CertificateSigningRequest) -> anyhow::Result<()> {
    if is_approved(csr) || is_denied(csr) {
        return Ok(());
    }
    let name = csr.metadata.name.as_deref().unwrap_or_default();
    let Ok(req) = parse_request(&csr.spec.request.0) else {
        return Ok(());
    };
    for subresource in recognized(csr, &req) {
        if !authorized(client, csr, subresource).await? {
            continue;
        }
        let mut approved = csr.clone();
        approved
            .status
            .get_or_insert_default()
            .conditions
            .get_or_insert_default()
            .push(CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("AutoApproved".into()),
                message: Some(APPROVE_MESSAGE.into()),
                last_update_time: Some(Time(jiff::Timestamp::now())),
                ..Default::default()
            });
        let api: Api<CertificateSigningRequest> = Api::all(client.clone());
        return match api
            .replace_subresource("approval", name, &PostParams::default(), &approved)
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if is_not_found(&err) => Ok(()),
            Err(err) => Err(err).with_context(|| format!("approving csr {name:?}")),
        };
    }
    Ok(())
}

async fn authorized(
    client: &kube::Client,
    csr: &CertificateSigningRequest,
    subresource: &str,
) -> anyhow::Result<bool> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: csr.spec.username.clone(),
            uid: csr.spec.uid.clone(),
            groups: csr.spec.groups.clone(),
            extra: csr.spec.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                subresource: Some(subresource.into()),
                verb: Some("create".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .context("creating a SubjectAccessReview")?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}
