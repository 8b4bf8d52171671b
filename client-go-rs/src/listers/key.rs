//! Cache keys, as client-go's `MetaNamespaceKeyFunc`.

use kube::{Resource, ResourceExt};

/// The cache key of an object: `namespace/name`, or `name` when it has no namespace.
pub fn object_key<K: Resource>(obj: &K) -> String {
    let name = obj.name_any();
    match obj.meta().namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name,
    }
}

/// Splits a cache key into `(namespace, name)`; the namespace is `None` for cluster-scoped keys.
///
/// Returns `None` for a key with more than one `/`, which no object can have.
pub fn split_key(key: &str) -> Option<(Option<&str>, &str)> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Some((None, name)),
        (Some(ns), Some(name), None) => Some((Some(ns), name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kube::api::ObjectMeta;

    #[test]
    fn namespaced_and_cluster_keys() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let node = Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(object_key(&pod), "ns/p");
        assert_eq!(object_key(&node), "n1");
    }

    #[test]
    fn split_keys() {
        assert_eq!(split_key("ns/p"), Some((Some("ns"), "p")));
        assert_eq!(split_key("n1"), Some((None, "n1")));
        assert_eq!(split_key("a/b/c"), None);
    }
}
