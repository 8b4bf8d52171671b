//! certificatesigningrequest-signing-controller: signs approved requests for the
//! `kubernetes.io/*` signers with the cluster signing CA, writing `status.certificate`.

use super::authority::Authority;
use super::request::{
    certificate, check_signer, has_failed, is_approved, is_denied, parse_request,
};
use super::{enqueue_all, now_unix};
use crate::controller::serviceaccount::is_not_found;
use crate::controller::worker::run_workers_when_synced;
use crate::controller::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "certificatesigningrequest-signing-controller";

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let settings = &ctx.settings;
    let (Some(cert), Some(key)) = (
        settings.cluster_signing_cert_file.clone(),
        settings.cluster_signing_key_file.clone(),
    ) else {
        tracing::info!(
            controller = NAME,
            "skipping controller: --cluster-signing-cert-file and --cluster-signing-key-file are not both set"
        );
        return Ok(None);
    };
    let authority = Arc::new(Authority::load(&cert, &key)?);
    let max_duration = settings.cluster_signing_duration;
    let client = ctx.client_for("certificate-controller").await?;
    let informer = ctx.informers.informer::<CertificateSigningRequest>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("csrsigning");
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
                let (client, lister, authority) =
                    (client.clone(), lister.clone(), authority.clone());
                async move {
                    let Some(csr) = lister.get(&name) else {
                        return Ok(());
                    };
                    sync(&client, &authority, max_duration, &csr).await
                }
            },
        )
        .await;
    })))
}

/// The certificate's lifetime: the signer's, shortened to what the request asks for.
pub(crate) fn duration(csr: &CertificateSigningRequest, max: Duration) -> Duration {
    match csr.spec.expiration_seconds {
        Some(s) if s > 0 => max.min(Duration::from_secs(s as u64)),
        _ => max,
    }
}

async fn sync(
    client: &kube::Client,
    authority: &Authority,
    max_duration: Duration,
    csr: &CertificateSigningRequest,
) -> anyhow::Result<()> {
    if !is_approved(csr) || is_denied(csr) || has_failed(csr) || certificate(csr).is_some() {
        return Ok(());
    }
    let name = csr.metadata.name.as_deref().unwrap_or_default();
    let usages = csr.spec.usages.clone().unwrap_or_default();
    let (request, policy) = match parse_request(&csr.spec.request.0) {
        Ok(request) => match check_signer(&csr.spec.signer_name, &request, &usages) {
            Some(policy) => (request, policy),
            None => return Ok(()),
        },
        // Not ours to judge, whatever it holds.
        Err(_) if check_signer(&csr.spec.signer_name, &Default::default(), &[]).is_none() => {
            return Ok(());
        }
        // A request that does not parse or verify can never be signed: it fails, rather than
        // being retried forever.
        Err(err) => (Default::default(), Err(format!("{err:#}"))),
    };
    let mut updated = csr.clone();
    let status = updated.status.get_or_insert_default();
    match policy {
        Err(message) => {
            status
                .conditions
                .get_or_insert_default()
                .push(CertificateSigningRequestCondition {
                    type_: "Failed".into(),
                    status: "True".into(),
                    reason: Some("SignerValidationFailure".into()),
                    message: Some(message),
                    last_update_time: Some(Time(jiff::Timestamp::now())),
                    ..Default::default()
                });
        }
        Ok(()) => {
            let pem = authority
                .sign(&request, &usages, duration(csr, max_duration), now_unix())
                .with_context(|| format!("signing csr {name:?}"))?;
            status.certificate = Some(ByteString(pem.into_bytes()));
        }
    }
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    match api
        .replace_status(name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(err).with_context(|| format!("writing the status of csr {name:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_lifetimes_only_shorten_the_signers() {
        let year = Duration::from_secs(365 * 24 * 3600);
        let cases = [
            ("not asked", None, year),
            ("shorter", Some(3600), Duration::from_secs(3600)),
            ("longer", Some(10 * 365 * 24 * 3600), year),
        ];
        for (what, asked, want) in cases {
            let mut csr = CertificateSigningRequest::default();
            csr.spec.expiration_seconds = asked;
            assert_eq!(duration(&csr, year), want, "{what}");
        }
    }
}
