//! The `NodeRestriction` admission plugin (being written).

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct NodeRestriction;

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }
}
