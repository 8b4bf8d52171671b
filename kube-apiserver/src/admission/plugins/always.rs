//! `AlwaysAdmit` and `AlwaysDeny`: upstream's trivial plugins, kept for clusters that name them.

use crate::admission::{Attributes, Plugin, object_name};
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::Value;

/// Admits everything.
#[derive(Debug, Default)]
pub struct AlwaysAdmit;

#[async_trait]
impl Plugin for AlwaysAdmit {
    fn name(&self) -> &'static str {
        "AlwaysAdmit"
    }
}

/// Refuses every write.
#[derive(Debug, Default)]
pub struct AlwaysDeny;

#[async_trait]
impl Plugin for AlwaysDeny {
    fn name(&self) -> &'static str {
        "AlwaysDeny"
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        Err(ApiError::forbidden(
            attrs.resource.group,
            attrs.resource.plural,
            object_name(attrs, object.or(old)),
            "admission control is denying all modifications",
        ))
    }
}
