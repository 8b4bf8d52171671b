//! token-cleaner (upstream's `TokenCleaner`): deletes bootstrap token secrets whose
//! `expiration` has passed, each at its expiry.

use super::token::{NAMESPACE, SECRET_TYPE, expiration};
use crate::controller::serviceaccount::is_not_found;
use crate::controller::worker::run_workers;
use crate::controller::{ControllerContext, InitResult};
use anyhow::Context as _;
use client_go_rs::informers::EventHandlerFuncs;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "token-cleaner-controller";

/// Seconds until `secret` must be deleted: `Some(0)` (or less) when now, `None` never.
pub(crate) fn seconds_left(secret: &Secret, now: i64) -> Option<i64> {
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return None;
    }
    match expiration(secret)? {
        Ok(at) => Some(at - now),
        // Upstream deletes a token whose expiration does not parse.
        Err(()) => Some(0),
    }
}

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let client = ctx.client_for("token-cleaner").await?;
    let secrets = ctx.informers.informer::<Secret>();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::default_controller("token_cleaner");
    let (q1, q2) = (queue.clone(), queue.clone());
    secrets.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<Secret>, _| enqueue(&q1, s))
            .on_update(move |_, s: &Arc<Secret>| enqueue(&q2, s)),
    );
    let shutdown = ctx.shutdown.clone();
    Ok(Some(Box::pin(async move {
        if !secrets.wait_for_cache_sync(&shutdown).await {
            return;
        }
        let lister = secrets.lister();
        run_workers(NAME, queue.clone(), 1, shutdown, move |name: String| {
            let (client, lister, queue) = (client.clone(), lister.clone(), queue.clone());
            async move {
                let Some(secret) = lister.namespace(NAMESPACE).get(&name) else {
                    return Ok(());
                };
                match seconds_left(&secret, jiff::Timestamp::now().as_second()) {
                    Some(left) if left <= 0 => delete(&client, &secret).await,
                    Some(left) => {
                        queue.add_after(name, Duration::from_secs(left as u64));
                        Ok(())
                    }
                    None => Ok(()),
                }
            }
        })
        .await;
    })))
}

fn enqueue(queue: &RateLimitingQueue<String>, secret: &Secret) {
    if secret.metadata.namespace.as_deref() != Some(NAMESPACE) {
        return;
    }
    let (Some(name), Some(left)) = (
        &secret.metadata.name,
        seconds_left(secret, jiff::Timestamp::now().as_second()),
    ) else {
        return;
    };
    if left <= 0 {
        queue.add(name.clone());
    } else {
        queue.add_after(name.clone(), Duration::from_secs(left as u64));
    }
}

async fn delete(client: &kube::Client, secret: &Secret) -> anyhow::Result<()> {
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: secret.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {
            tracing::info!(secret = name, "deleted expired bootstrap token");
            Ok(())
        }
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(err).with_context(|| format!("deleting bootstrap token {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::token::tests::token_secret;
    use super::*;

    #[test]
    fn expired_tokens_are_due_and_others_wait() {
        let now: i64 = 1_800_000_000;
        let at = |s: i64| jiff::Timestamp::from_second(s).unwrap().to_string();
        let (past, future) = (at(now - 5), at(now + 30));
        let cases = [
            (
                "expired",
                token_secret("abcdef", &[("expiration", &past)]),
                Some(-5),
            ),
            (
                "expiring",
                token_secret("abcdef", &[("expiration", &future)]),
                Some(30),
            ),
            (
                "unparsable",
                token_secret("abcdef", &[("expiration", "never")]),
                Some(0),
            ),
            ("no expiration", token_secret("abcdef", &[]), None),
        ];
        for (what, secret, want) in cases {
            assert_eq!(seconds_left(&secret, now), want, "{what}");
        }
    }
}
