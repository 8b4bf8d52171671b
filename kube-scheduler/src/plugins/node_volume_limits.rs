//! The NodeVolumeLimits plugin.

use crate::framework::{Plugin, PluginContext};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeVolumeLimits";

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Err(format!("{NAME} is being written"))
}
