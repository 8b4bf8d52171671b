//! Upstream's controller names, their pre-1.28 aliases, and which are off unless asked for;
//! `--controllers` is resolved against this list.

use std::collections::BTreeSet;

/// A controller of upstream's kube-controller-manager 1.33.
pub struct ControllerName {
    pub name: &'static str,
    /// The short name used before 1.28, still accepted by `--controllers`.
    pub alias: &'static str,
    pub enabled_by_default: bool,
}

const fn on(name: &'static str, alias: &'static str) -> ControllerName {
    ControllerName {
        name,
        alias,
        enabled_by_default: true,
    }
}

const fn off(name: &'static str, alias: &'static str) -> ControllerName {
    ControllerName {
        name,
        alias,
        enabled_by_default: false,
    }
}

/// Every controller `--controllers` knows, in upstream's order.
pub const KNOWN: &[ControllerName] = &[
    off("bootstrap-signer-controller", "bootstrapsigner"),
    on(
        "certificatesigningrequest-approving-controller",
        "csrapproving",
    ),
    on("certificatesigningrequest-cleaner-controller", "csrcleaner"),
    on("certificatesigningrequest-signing-controller", "csrsigning"),
    on("cloud-node-lifecycle-controller", "cloud-node-lifecycle"),
    on(
        "clusterrole-aggregation-controller",
        "clusterrole-aggregation",
    ),
    on("cronjob-controller", "cronjob"),
    on("daemonset-controller", "daemonset"),
    on("deployment-controller", "deployment"),
    on("disruption-controller", "disruption"),
    on("endpoints-controller", "endpoint"),
    on("endpointslice-controller", "endpointslice"),
    on(
        "endpointslice-mirroring-controller",
        "endpointslicemirroring",
    ),
    on("ephemeral-volume-controller", "ephemeral-volume"),
    on("garbage-collector-controller", "garbagecollector"),
    on(
        "horizontal-pod-autoscaler-controller",
        "horizontalpodautoscaling",
    ),
    on("job-controller", "job"),
    on(
        "legacy-serviceaccount-token-cleaner-controller",
        "legacy-service-account-token-cleaner",
    ),
    on("namespace-controller", "namespace"),
    on("node-ipam-controller", "nodeipam"),
    on("node-lifecycle-controller", "nodelifecycle"),
    on("node-route-controller", "route"),
    on("persistentvolume-attach-detach-controller", "attachdetach"),
    on(
        "persistentvolume-binder-controller",
        "persistentvolume-binder",
    ),
    on(
        "persistentvolume-expander-controller",
        "persistentvolume-expander",
    ),
    on("persistentvolume-protection-controller", "pv-protection"),
    on(
        "persistentvolumeclaim-protection-controller",
        "pvc-protection",
    ),
    on("pod-garbage-collector-controller", "podgc"),
    on("replicaset-controller", "replicaset"),
    on("replicationcontroller-controller", "replicationcontroller"),
    on("resourceclaim-controller", "resourceclaim"),
    on("resourcequota-controller", "resourcequota"),
    on(
        "root-ca-certificate-publisher-controller",
        "root-ca-cert-publisher",
    ),
    off("selinux-warning-controller", "selinux-warning"),
    on("service-cidr-controller", "service-cidr"),
    on("service-lb-controller", "service"),
    on("serviceaccount-controller", "serviceaccount"),
    on("serviceaccount-token-controller", "serviceaccount-token"),
    on("statefulset-controller", "statefulset"),
    on(
        "storageversion-garbage-collector-controller",
        "storage-version-gc",
    ),
    on("taint-eviction-controller", "taint-eviction"),
    off("token-cleaner-controller", "tokencleaner"),
    on("ttl-after-finished-controller", "ttl-after-finished"),
    on("ttl-controller", "ttl"),
    on(
        "validatingadmissionpolicy-status-controller",
        "validatingadmissionpolicy-status",
    ),
    on(
        "volumeattributesclass-protection-controller",
        "volumeattributesclass-protection",
    ),
];

fn canonical(name: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|c| c.name == name || c.alias == name)
        .map(|c| c.name)
}

/// Resolves `--controllers` (`*`, `foo`, `-foo`) into the set of enabled controllers, with
/// upstream's rules: `*` enables the on-by-default set, a named controller is enabled, `-foo`
/// disables even if `*` or `foo` also appear.
pub fn resolve(flags: &[String]) -> Result<BTreeSet<&'static str>, String> {
    let mut star = false;
    let mut enabled = BTreeSet::new();
    let mut disabled = BTreeSet::new();
    for flag in flags.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
        if flag == "*" {
            star = true;
            continue;
        }
        let (negated, name) = match flag.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, flag),
        };
        let name = canonical(name)
            .ok_or_else(|| format!("{name:?} is not in the list of known controllers"))?;
        if negated {
            disabled.insert(name);
        } else {
            enabled.insert(name);
        }
    }
    if star {
        enabled.extend(
            KNOWN
                .iter()
                .filter(|c| c.enabled_by_default)
                .map(|c| c.name),
        );
    }
    Ok(enabled.difference(&disabled).copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_str(flag: &str) -> Result<BTreeSet<&'static str>, String> {
        resolve(&flag.split(',').map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn star_enables_the_default_set_only() {
        let set = resolve_str("*").unwrap();
        assert!(set.contains("replicaset-controller"));
        assert!(set.contains("garbage-collector-controller"));
        assert!(!set.contains("bootstrap-signer-controller"));
        assert!(!set.contains("token-cleaner-controller"));
        assert_eq!(
            set.len(),
            KNOWN.iter().filter(|c| c.enabled_by_default).count()
        );
    }

    #[test]
    fn names_aliases_and_negation() {
        let set = resolve_str("*,tokencleaner,-replicaset,-deployment-controller").unwrap();
        assert!(set.contains("token-cleaner-controller"));
        assert!(!set.contains("replicaset-controller"));
        assert!(!set.contains("deployment-controller"));

        let set = resolve_str("replicaset,garbagecollector").unwrap();
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            ["garbage-collector-controller", "replicaset-controller"]
        );
        assert!(resolve_str("job,-job").unwrap().is_empty());
    }

    #[test]
    fn unknown_controllers_are_rejected() {
        assert_eq!(
            resolve_str("*,frobnicator").unwrap_err(),
            "\"frobnicator\" is not in the list of known controllers"
        );
        assert!(resolve_str("-nope").is_err());
    }

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = BTreeSet::new();
        for c in KNOWN {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert!(seen.insert(c.alias), "duplicate {}", c.alias);
        }
    }
}
