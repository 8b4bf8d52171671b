//! Reads of other objects from the apiserver's own watch caches, for the parts of the request
//! path that consult them (service-account and bootstrap-token authentication, the Node
//! authorizer, admission plugins) as upstream's do through informers: no storage round trip,
//! and possibly a few milliseconds behind the latest write.

use serde_json::Value;
use std::sync::Arc;

/// Objects as the watch caches hold them now.
pub trait ObjectLookup: Send + Sync {
    /// The object `name` of resource `plural` in `group` (in `namespace` for namespaced
    /// resources), or None when the cache has none.
    fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<Value>>;

    /// Every object of resource `plural` in `group` (only those in `namespace` when given)
    /// that `filter` accepts.
    fn list(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        filter: &(dyn Fn(&Value) -> bool + Send + Sync),
    ) -> Vec<Arc<Value>>;
}
