//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` (being written).

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct MutatingAdmissionWebhook;

#[async_trait]
impl Plugin for MutatingAdmissionWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }
}

#[derive(Debug, Default)]
pub struct ValidatingAdmissionWebhook;

#[async_trait]
impl Plugin for ValidatingAdmissionWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }
}
