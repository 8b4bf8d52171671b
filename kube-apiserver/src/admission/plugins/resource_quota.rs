//! The `ResourceQuota` admission plugin (being written).

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct ResourceQuota;

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }
}
