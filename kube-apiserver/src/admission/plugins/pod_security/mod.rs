//! The `PodSecurity` admission plugin (being written).

pub mod checks;
pub mod levels;

use crate::admission::Plugin;
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct PodSecurity;

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }
}
