//! The store's side of admission: the two calls a write makes, so that plugins see the stored
//! object of an update inside the store's compare-and-swap loop (a retried update is admitted
//! again against the newer object, as upstream's `GuaranteedUpdate` does).

use super::RegistryError;
use async_trait::async_trait;
use serde_json::Value;

/// Admission for one request, set on the store with `ResourceStore::with_admission`.
#[async_trait]
pub trait WriteAdmission: Send + Sync {
    /// Before defaulting and validation: may change `object`. `old` is the stored object of
    /// an update.
    async fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), RegistryError>;

    /// After validation, right before the write: may refuse. `object` is None for a delete.
    async fn validate(
        &self,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), RegistryError>;
}
