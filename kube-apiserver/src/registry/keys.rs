//! Where each resource lives in the key space: upstream's etcd layout, so that an etcd written
//! by one apiserver reads the same to the other.

use api_types::registry::ResourceInfo;

/// The prefix every key starts with (`--etcd-prefix` maps it for etcd).
pub const ROOT: &str = "/registry";

/// The key prefix of a resource, ending in `/`: `/registry/<resource>/` with upstream's
/// historical exceptions (services and endpoints share `services/`, nodes are `minions`,
/// ingresses `ingress`; events.k8s.io events are core events) and group-qualified prefixes for
/// the groups upstream stores that way.
pub fn resource_prefix(info: &ResourceInfo) -> String {
    let path = match (info.group, info.plural) {
        ("", "services") => "services/specs",
        ("", "endpoints") => "services/endpoints",
        ("", "nodes") => "minions",
        ("events.k8s.io", "events") => "events",
        ("networking.k8s.io", "ingresses") => "ingress",
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            "apiextensions.k8s.io/customresourcedefinitions"
        }
        ("apiregistration.k8s.io", "apiservices") => "apiregistration.k8s.io/apiservices",
        ("flowcontrol.apiserver.k8s.io", plural) => return format!("{ROOT}/{plural}/"),
        // Custom resources live under their group, as upstream's apiextensions stores them.
        (group, plural) if api_types::registry::by_group_resource(group, plural).is_none() => {
            return format!("{ROOT}/{group}/{plural}/");
        }
        (_, plural) => plural,
    };
    format!("{ROOT}/{path}/")
}

/// The prefix of a resource's objects in one namespace (all of them for cluster-scoped ones).
pub fn namespace_prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    match namespace.filter(|_| info.namespaced) {
        Some(ns) => format!("{}{ns}/", resource_prefix(info)),
        None => resource_prefix(info),
    }
}

/// The key of one object.
pub fn object_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    format!("{}{name}", namespace_prefix(info, namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::registry::by_group_version_resource;

    fn info(group: &str, version: &str, plural: &str) -> &'static ResourceInfo {
        by_group_version_resource(group, version, plural).expect("known resource")
    }

    #[test]
    fn keys_follow_upstreams_layout() {
        let cases = [
            (
                info("", "v1", "pods"),
                Some("default"),
                "web",
                "/registry/pods/default/web",
            ),
            (
                info("", "v1", "services"),
                Some("ns"),
                "svc",
                "/registry/services/specs/ns/svc",
            ),
            (
                info("", "v1", "endpoints"),
                Some("ns"),
                "svc",
                "/registry/services/endpoints/ns/svc",
            ),
            (info("", "v1", "nodes"), None, "n1", "/registry/minions/n1"),
            (
                info("", "v1", "namespaces"),
                None,
                "kube-system",
                "/registry/namespaces/kube-system",
            ),
            (
                info("apps", "v1", "deployments"),
                Some("a"),
                "d",
                "/registry/deployments/a/d",
            ),
            (
                info("events.k8s.io", "v1", "events"),
                Some("a"),
                "e",
                "/registry/events/a/e",
            ),
            (
                info("networking.k8s.io", "v1", "ingresses"),
                Some("a"),
                "i",
                "/registry/ingress/a/i",
            ),
            // A namespace given for a cluster-scoped resource is ignored.
            (
                info("", "v1", "nodes"),
                Some("ns"),
                "n1",
                "/registry/minions/n1",
            ),
        ];
        for (info, ns, name, want) in cases {
            assert_eq!(object_key(info, ns, name), want);
        }
        assert_eq!(
            namespace_prefix(info("", "v1", "pods"), None),
            "/registry/pods/"
        );
    }
}
