//! The `RuntimeClass` admission plugin (being written).

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct RuntimeClass;

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }
}
