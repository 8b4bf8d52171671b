//! Finalizer list edits shared by the protection controllers.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

pub fn with_finalizer(meta: &ObjectMeta, finalizer: &str) -> Vec<String> {
    let mut list = meta.finalizers.clone().unwrap_or_default();
    if !list.iter().any(|f| f == finalizer) {
        list.push(finalizer.to_string());
    }
    list
}

pub fn without_finalizer(meta: &ObjectMeta, finalizer: &str) -> Vec<String> {
    meta.finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect()
}
