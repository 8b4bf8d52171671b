//! The resource registry: the one table of built-in resources that discovery (/api, /apis),
//! kubectl and the apiserver read.
//!
//! It describes what a default Kubernetes v1.33 kube-apiserver serves in its GA groups (beta
//! APIs are off by default there, so `resource.k8s.io` and other beta-only groups are absent):
//! for each (group, version, resource) its kind, names, scope, verbs, short names, categories,
//! subresources and storage version, plus each group's versions in preference order.
//! Everything is `&'static` data; lookups do not allocate.
//!
//! ```
//! use api_types::registry::{self, Verb};
//!
//! let deploy = registry::lookup("deploy").unwrap();
//! assert_eq!((deploy.group, deploy.version, deploy.plural), ("apps", "v1", "deployments"));
//! assert!(deploy.subresource("scale").is_some());
//! assert_eq!(registry::lookup("hpa").unwrap().version, "v2");
//! assert!(!registry::lookup("namespaces").unwrap().supports(Verb::DeleteCollection));
//! ```

mod groups;
mod lookup;
mod table;
mod types;

pub use lookup::{
    all, by_group_kind, by_group_resource, by_group_version_kind, by_group_version_resource, group,
    groups, lookup, resources_in,
};
pub use types::{ApiGroup, GroupVersion, ResourceInfo, Subresource, Verb, api_version};

#[cfg(test)]
mod tests;
