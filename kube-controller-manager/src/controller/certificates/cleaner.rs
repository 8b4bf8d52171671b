//! certificatesigningrequest-cleaner-controller: deletes requests that have served their
//! purpose, with upstream's deadlines. Upstream lists every request hourly; here each request
//! is requeued for the moment it becomes deletable.

use super::now_unix;
use super::request::{certificate, has_failed, is_approved, is_denied};
use crate::controller::serviceaccount::is_not_found;
use crate::controller::worker::run_workers;
use crate::controller::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, DeleteParams, Preconditions};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "certificatesigningrequest-cleaner-controller";
/// Approved (and issued), denied or failed requests go after an hour.
const DECIDED_EXPIRATION: i64 = 3600;
/// Requests nobody decided on go after a day.
const PENDING_EXPIRATION: i64 = 24 * 3600;

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for("certificate-controller").await?;
    let informer = ctx.informers.informer::<CertificateSigningRequest>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("csrcleaner");
    let (q1, q2) = (queue.clone(), queue.clone());
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |csr: &Arc<CertificateSigningRequest>, _| schedule(&q1, csr))
            .on_update(move |_, csr: &Arc<CertificateSigningRequest>| schedule(&q2, csr)),
    );
    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        if !informer.wait_for_cache_sync(&shutdown).await {
            return;
        }
        let lister = informer.lister();
        run_workers(NAME, queue.clone(), 1, shutdown, move |name: String| {
            let (client, lister, queue) = (client.clone(), lister.clone(), queue.clone());
            async move {
                let Some(csr) = lister.get(&name) else {
                    return Ok(());
                };
                match delete_at(&csr) {
                    Some(at) if at <= now_unix() => delete(&client, &csr).await,
                    Some(at) => {
                        queue.add_after(name, Duration::from_secs((at - now_unix()) as u64));
                        Ok(())
                    }
                    None => Ok(()),
                }
            }
        })
        .await;
    })))
}

fn schedule(queue: &RateLimitingQueue<String>, csr: &CertificateSigningRequest) {
    let (Some(name), Some(at)) = (&csr.metadata.name, delete_at(csr)) else {
        return;
    };
    let wait = at - now_unix();
    if wait <= 0 {
        queue.add(name.clone());
    } else {
        queue.add_after(name.clone(), Duration::from_secs(wait as u64));
    }
}

fn last_update(csr: &CertificateSigningRequest, kind: &str) -> Option<i64> {
    csr.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .filter(|c| c.type_ == kind)
        .filter_map(|c| c.last_update_time.as_ref().map(|t| t.0.as_second()))
        .max()
}

/// When the issued certificate expires.
fn certificate_expiry(csr: &CertificateSigningRequest) -> Option<i64> {
    let block = pem::parse(certificate(csr)?).ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(block.contents()).ok()?;
    Some(cert.validity().not_after.timestamp())
}

/// When `csr` may be deleted (Unix seconds), as upstream's cleaner decides: issued an hour
/// after approval or once its certificate expired, denied or failed an hour after, pending a
/// day after creation.
pub(crate) fn delete_at(csr: &CertificateSigningRequest) -> Option<i64> {
    let mut deadlines = Vec::new();
    if is_approved(csr) && certificate(csr).is_some() {
        deadlines.extend(last_update(csr, "Approved").map(|t| t + DECIDED_EXPIRATION));
    }
    if let Some(expiry) = certificate_expiry(csr) {
        deadlines.push(expiry);
    }
    if is_denied(csr) {
        deadlines.extend(last_update(csr, "Denied").map(|t| t + DECIDED_EXPIRATION));
    }
    if has_failed(csr) {
        deadlines.extend(last_update(csr, "Failed").map(|t| t + DECIDED_EXPIRATION));
    }
    let pending = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(Vec::is_empty);
    if pending {
        deadlines.extend(
            csr.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second() + PENDING_EXPIRATION),
        );
    }
    deadlines.into_iter().min()
}

async fn delete(client: &kube::Client, csr: &CertificateSigningRequest) -> anyhow::Result<()> {
    let name = csr.metadata.name.as_deref().unwrap_or_default();
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: csr.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {
            tracing::info!(csr = name, "cleaned up certificate signing request");
            Ok(())
        }
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(err).with_context(|| format!("deleting csr {name:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequestCondition, CertificateSigningRequestStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const T0: i64 = 1_800_000_000;

    fn at(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).expect("time"))
    }

    fn csr(conditions: &[(&str, i64)], cert: Option<String>) -> CertificateSigningRequest {
        CertificateSigningRequest {
            metadata: ObjectMeta {
                name: Some("c".into()),
                creation_timestamp: Some(at(T0)),
                ..Default::default()
            },
            status: Some(CertificateSigningRequestStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(kind, t)| CertificateSigningRequestCondition {
                            type_: kind.to_string(),
                            status: "True".into(),
                            last_update_time: Some(at(*t)),
                            ..Default::default()
                        })
                        .collect(),
                ),
                certificate: cert.map(|c| k8s_openapi::ByteString(c.into_bytes())),
            }),
            ..Default::default()
        }
    }

    fn cert_expiring(not_after: i64) -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).expect("params");
        params.not_after = x509_parser::time::ASN1Time::from_timestamp(not_after)
            .expect("time")
            .to_datetime();
        params.self_signed(&key).expect("cert").pem()
    }

    #[test]
    fn deadlines_follow_upstreams_cleaner() {
        let cases = [
            ("pending", csr(&[], None), Some(T0 + PENDING_EXPIRATION)),
            (
                "denied",
                csr(&[("Denied", T0 + 10)], None),
                Some(T0 + 10 + DECIDED_EXPIRATION),
            ),
            (
                "failed",
                csr(&[("Failed", T0 + 20)], None),
                Some(T0 + 20 + DECIDED_EXPIRATION),
            ),
            (
                "issued",
                csr(&[("Approved", T0 + 5)], Some(cert_expiring(T0 + 86400))),
                Some(T0 + 5 + DECIDED_EXPIRATION),
            ),
            (
                "issued, certificate already expired",
                csr(&[("Approved", T0 + 5)], Some(cert_expiring(T0 + 60))),
                Some(T0 + 60),
            ),
            (
                "approved, not issued yet",
                csr(&[("Approved", T0)], None),
                None,
            ),
        ];
        for (what, c, want) in cases {
            assert_eq!(delete_at(&c), want, "{what}");
        }
    }
}
