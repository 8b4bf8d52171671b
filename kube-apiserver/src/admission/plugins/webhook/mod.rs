//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`: upstream's dynamic admission.
//! Every write is matched against the webhooks of the `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` objects (read from the watch caches on each request, so a
//! new configuration applies within the cache's lag) and sent to those that match as an
//! admission.k8s.io/v1 `AdmissionReview` over HTTPS.
//!
//! Mutating webhooks run one after another, each seeing the previous one's patch; those with
//! `reinvocationPolicy: IfNeeded` run once more when a later webhook changed the object.
//! Validating webhooks run concurrently. A webhook that cannot be called (unreachable, timed
//! out, invalid answer) fails the request with a 500 unless its `failurePolicy` is `Ignore`.

pub mod client;
pub mod config;
pub mod matching;
pub mod review;

use crate::admission::{Attributes, Operation, Plugin};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use client::WebhookClient;
use config::{Kind, Webhook};
use serde_json::Value;

/// Why a call did not give an answer to act on.
enum CallError {
    /// Upstream's `ErrCallingWebhook`: the failure policy decides. The text follows
    /// `failed calling webhook "<name>": `.
    Calling(String),
    /// A refusal, or an error no failure policy overrides.
    Refused(ApiError),
}

/// Calls one webhook with the review of this write; the verified answer when it allows.
async fn call(
    client: &WebhookClient,
    hook: &Webhook,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    lookup: &dyn ObjectLookup,
    mutating: bool,
) -> Result<review::Response, CallError> {
    if attrs.dry_run {
        match hook.side_effects.as_deref() {
            None => return Err(CallError::Calling("Webhook SideEffects is nil".into())),
            Some("None" | "NoneOnDryRun") => {}
            Some(_) => {
                return Err(CallError::Refused(ApiError::bad_request(format!(
                    "admission webhook \"{}\" does not support dry run",
                    hook.name
                ))));
            }
        }
    }
    let version = review::pick_version(&hook.review_versions).map_err(CallError::Calling)?;
    let uid = uuid::Uuid::new_v4().to_string();
    let failed_call = |e: String| CallError::Calling(format!("failed to call webhook: {e}"));
    let target = client::resolve(&hook.endpoint, hook.timeout, lookup).map_err(failed_call)?;
    let body = serde_json::to_vec(&review::request(attrs, object, old, &uid, version))
        .map_err(|e| failed_call(e.to_string()))?;
    let answer = client
        .post(&target, hook.ca_bundle.as_deref(), body, hook.timeout)
        .await
        .map_err(failed_call)?;
    let response =
        review::parse_response(&answer, &uid, mutating, version).map_err(CallError::Calling)?;
    for warning in &response.warnings {
        attrs.warnings.push(warning.clone());
    }
    if !response.allowed {
        return Err(CallError::Refused(review::denial(
            &hook.name,
            response.status,
        )));
    }
    Ok(response)
}

/// What a failed call does to the request: nothing under `failurePolicy: Ignore`, else
/// upstream's 500.
fn on_failure(hook: &Webhook, err: CallError) -> Result<(), ApiError> {
    match err {
        CallError::Refused(e) => Err(e),
        CallError::Calling(reason) if hook.ignore_failures => {
            tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, failing open");
            Ok(())
        }
        CallError::Calling(reason) => {
            tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, failing closed");
            Err(ApiError::internal(format!(
                "failed calling webhook \"{}\": {reason}",
                hook.name
            )))
        }
    }
}

/// Upstream's `MutatingAdmissionWebhook`.
#[derive(Debug, Default)]
pub struct MutatingAdmissionWebhook {
    client: WebhookClient,
}

impl MutatingAdmissionWebhook {
    /// Runs the mutating webhooks over `object` (JSON null on delete, where a webhook may
    /// refuse but not patch).
    pub async fn run(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        lookup: &dyn ObjectLookup,
    ) -> Result<(), ApiError> {
        if matching::exempt(attrs) {
            return Ok(());
        }
        let hooks = config::webhooks(lookup, Kind::Mutating);
        if hooks.is_empty() {
            return Ok(());
        }
        // How many calls changed the object so far, and for each IfNeeded webhook called the
        // count right after its call: a later change means it saw an outdated object.
        let mut changes = 0usize;
        let mut reinvocable = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            if let Some(changed) = self.run_one(hook, attrs, object, old, lookup).await? {
                changes += usize::from(changed);
                if hook.reinvoke_if_needed {
                    reinvocable.push((i, changes));
                }
            }
        }
        // One more pass, as upstream: changes made during it do not start another.
        for (i, seen) in reinvocable {
            if seen < changes {
                self.run_one(&hooks[i], attrs, object, old, lookup).await?;
            }
        }
        Ok(())
    }

    /// Calls one webhook if it matches; whether it changed the object (None: not called or
    /// failed open).
    async fn run_one(
        &self,
        hook: &Webhook,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        lookup: &dyn ObjectLookup,
    ) -> Result<Option<bool>, ApiError> {
        let current = (!object.is_null()).then_some(&*object);
        if !matching::should_call(hook, attrs, current, old, lookup)? {
            return Ok(None);
        }
        match call(&self.client, hook, attrs, current, old, lookup, true).await {
            Ok(response) => match response.patch {
                Some(patch) => review::apply_patch(&hook.name, object, &patch).map(Some),
                None => Ok(Some(false)),
            },
            Err(e) => on_failure(hook, e).map(|()| None),
        }
    }
}

#[async_trait]
impl Plugin for MutatingAdmissionWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        self.run(attrs, object, old, state).await
    }

    /// Upstream also sends deletes to mutating webhooks (which may only refuse them); the
    /// chain's mutating phase skips deletes, so they are sent from here, still before the
    /// validating webhooks.
    async fn validate(
        &self,
        attrs: &Attributes,
        _object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Delete {
            return Ok(());
        }
        self.run(attrs, &mut Value::Null, old, state).await
    }
}

/// Upstream's `ValidatingAdmissionWebhook`.
#[derive(Debug, Default)]
pub struct ValidatingAdmissionWebhook {
    client: WebhookClient,
}

impl ValidatingAdmissionWebhook {
    /// Calls every matching validating webhook at once; the first refusal or failure, in
    /// webhook order.
    pub async fn run(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        lookup: &dyn ObjectLookup,
    ) -> Result<(), ApiError> {
        if matching::exempt(attrs) {
            return Ok(());
        }
        let hooks = config::webhooks(lookup, Kind::Validating);
        let mut called = Vec::new();
        for hook in &hooks {
            if matching::should_call(hook, attrs, object, old, lookup)? {
                called.push(hook);
            }
        }
        let calls = called.iter().map(|hook| async move {
            match call(&self.client, hook, attrs, object, old, lookup, false).await {
                Ok(_) => Ok(()),
                Err(e) => on_failure(hook, e),
            }
        });
        futures::future::join_all(calls).await.into_iter().collect()
    }
}

#[async_trait]
impl Plugin for ValidatingAdmissionWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        self.run(attrs, object, old, state).await
    }
}

#[cfg(test)]
mod tests;
