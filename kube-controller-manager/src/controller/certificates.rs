//! CertificateSigningRequest approving, signing and cleaning.

mod approving;
mod authority;
mod cleaner;
mod request;
mod signing;

use super::{ControllerContext, InitResult};
use client_go_rs::informers::{EventHandlerFuncs, SharedInformer};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use std::sync::Arc;

pub fn init_approving(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(approving::init(ctx))
}

pub fn init_cleaner(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(cleaner::init(ctx))
}

pub fn init_signing(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(signing::init(ctx))
}

/// Every add and update of a request enqueues its name.
fn enqueue_all(
    informer: &SharedInformer<CertificateSigningRequest>,
    queue: &RateLimitingQueue<String>,
) {
    let (q1, q2) = (queue.clone(), queue.clone());
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |csr: &Arc<CertificateSigningRequest>, _| {
                if let Some(name) = &csr.metadata.name {
                    q1.add(name.clone());
                }
            })
            .on_update(move |_, csr: &Arc<CertificateSigningRequest>| {
                if let Some(name) = &csr.metadata.name {
                    q2.add(name.clone());
                }
            }),
    );
}

fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}
