//! The `StorageObjectInUseProtection` admission plugin (being written).

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct StorageObjectInUseProtection;

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }
}
