//! Reading discovery's resource lists, shared by the controllers that act on every served
//! resource (the garbage collector, namespace deletion).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::core::ApiResource;

/// The dynamic-client description of `r`, served in `group`/`version` (`""` for core).
pub fn api_resource(group: &str, version: &str, r: &APIResource) -> ApiResource {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version,
        kind: r.kind.clone(),
        plural: r.name.clone(),
    }
}

/// Whether `r` is a resource itself, not a subresource such as `pods/status`.
pub fn is_top_level(r: &APIResource) -> bool {
    !r.name.contains('/')
}

/// Whether `r` supports every one of `verbs`.
pub fn has_verbs(r: &APIResource, verbs: &[&str]) -> bool {
    verbs.iter().all(|verb| r.verbs.iter().any(|v| v == verb))
}
