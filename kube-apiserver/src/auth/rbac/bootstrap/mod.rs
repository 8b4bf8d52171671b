//! Upstream's bootstrap RBAC policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`) as data:
//! the default ClusterRoles and ClusterRoleBindings a 1.33 apiserver creates (the components'
//! roles, the aggregated user-facing roles and one role per kube-controller-manager controller)
//! and the Roles and RoleBindings it creates in kube-system and kube-public. Verbs, groups and
//! resources are sorted as upstream's rule builder stores them; rules keep upstream's order.

mod aggregated;
mod controller_roles;
mod namespace_roles;
mod roles;

pub use controller_roles::CONTROLLER_ROLE_PREFIX;

use std::collections::BTreeMap;

use api_types::k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject,
};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// Label on every bootstrap object.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// Annotation telling the apiserver it may reconcile the object on start.
pub const AUTOUPDATE_ANNOTATION: (&str, &str) =
    ("rbac.authorization.kubernetes.io/autoupdate", "true");
/// Labels that aggregate a ClusterRole into `admin`, `edit` and `view`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// See `AGGREGATE_TO_ADMIN`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// See `AGGREGATE_TO_ADMIN`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The default ClusterRoles, sorted by name.
pub fn bootstrap_cluster_roles() -> Vec<ClusterRole> {
    let mut out = roles::cluster_roles();
    out.extend(aggregated::cluster_roles());
    out.extend(controller_roles::cluster_roles());
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}

/// The default ClusterRoleBindings, sorted by name.
pub fn bootstrap_cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    let groups = |names: &[&str]| -> Vec<Subject> {
        names.iter().map(|n| subject("Group", n, None)).collect()
    };
    let users = |names: &[&str]| -> Vec<Subject> {
        names.iter().map(|n| subject("User", n, None)).collect()
    };
    let mut out = vec![
        binding("cluster-admin", groups(&["system:masters"])),
        binding("system:monitoring", groups(&["system:monitoring"])),
        binding("system:discovery", groups(&["system:authenticated"])),
        binding("system:basic-user", groups(&["system:authenticated"])),
        binding(
            "system:public-info-viewer",
            groups(&["system:authenticated", "system:unauthenticated"]),
        ),
        binding("system:node-proxier", users(&["system:kube-proxy"])),
        binding(
            "system:kube-controller-manager",
            users(&["system:kube-controller-manager"]),
        ),
        binding(
            "system:kube-dns",
            vec![subject("ServiceAccount", "kube-dns", Some("kube-system"))],
        ),
        binding("system:kube-scheduler", users(&["system:kube-scheduler"])),
        binding("system:volume-scheduler", users(&["system:kube-scheduler"])),
        binding(
            "system:service-account-issuer-discovery",
            groups(&["system:serviceaccounts"]),
        ),
        // Kept with no subjects since the Node authorizer took over (1.7), so reconciliation
        // can drop a subject an old cluster still carries.
        binding("system:node", Vec::new()),
    ];
    out.extend(controller_roles::cluster_role_bindings());
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}

/// The default namespaced Roles (kube-system and kube-public), sorted by namespace and name.
pub fn bootstrap_roles() -> Vec<Role> {
    let mut out = namespace_roles::roles();
    out.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    out
}

/// The default namespaced RoleBindings, sorted by namespace and name.
pub fn bootstrap_role_bindings() -> Vec<RoleBinding> {
    let mut out = namespace_roles::role_bindings();
    out.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    out
}

fn meta(name: &str, extra_labels: &[(&str, &str)]) -> ObjectMeta {
    let mut labels = BTreeMap::from([(
        BOOTSTRAPPING_LABEL.0.to_string(),
        BOOTSTRAPPING_LABEL.1.to_string(),
    )]);
    for (k, v) in extra_labels {
        labels.insert(k.to_string(), v.to_string());
    }
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            AUTOUPDATE_ANNOTATION.0.to_string(),
            AUTOUPDATE_ANNOTATION.1.to_string(),
        )])),
        ..Default::default()
    }
}

fn subject(kind: &str, name: &str, namespace: Option<&str>) -> Subject {
    Subject {
        // Upstream sets the RBAC group on users and groups, none on service accounts.
        api_group: (kind != "ServiceAccount").then(|| "rbac.authorization.k8s.io".to_string()),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.map(str::to_string),
    }
}

fn binding(role: &str, subjects: Vec<Subject>) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(role, &[]),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(subjects),
    }
}

/// A ClusterRole with rules and extra labels.
fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, labels),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// A ClusterRole whose rules are aggregated from ClusterRoles labelled `select = "true"`.
fn aggregated_role(name: &str, labels: &[(&str, &str)], select: &str) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, labels),
        rules: None,
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some(BTreeMap::from([(select.to_string(), "true".to_string())])),
                match_expressions: None,
            }]),
        }),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A resource rule.
fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        resource_names: None,
        non_resource_urls: None,
    }
}

/// A resource rule limited to named objects.
fn named(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        resource_names: Some(strings(names)),
        ..rule(verbs, groups, resources)
    }
}

/// A non-resource URL rule.
fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: Some(strings(paths)),
        ..Default::default()
    }
}

/// `get`, `list`, `watch`.
const READ: &[&str] = &["get", "list", "watch"];
/// The writes, sorted.
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
/// Reads and writes, sorted.
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// What components do to events.
const EVENT_WRITE: &[&str] = &["create", "patch", "update"];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const CONTROLLERS: &[&str] = &[
        "attachdetach-controller",
        "certificate-controller",
        "clusterrole-aggregation-controller",
        "cronjob-controller",
        "daemon-set-controller",
        "deployment-controller",
        "disruption-controller",
        "endpoint-controller",
        "endpointslice-controller",
        "endpointslicemirroring-controller",
        "ephemeral-volume-controller",
        "expand-controller",
        "generic-garbage-collector",
        "horizontal-pod-autoscaler",
        "job-controller",
        "legacy-service-account-token-cleaner",
        "namespace-controller",
        "node-controller",
        "persistent-volume-binder",
        "pod-garbage-collector",
        "pv-protection-controller",
        "pvc-protection-controller",
        "replicaset-controller",
        "replication-controller",
        "resourcequota-controller",
        "root-ca-cert-publisher",
        "route-controller",
        "service-account-controller",
        "service-cidrs-controller",
        "service-controller",
        "statefulset-controller",
        "ttl-after-finished-controller",
        "ttl-controller",
        "validatingadmissionpolicy-status-controller",
    ];

    fn marked(meta: &ObjectMeta) -> bool {
        let label = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(BOOTSTRAPPING_LABEL.0));
        let annotation = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(AUTOUPDATE_ANNOTATION.0));
        label.map(String::as_str) == Some(BOOTSTRAPPING_LABEL.1)
            && annotation.map(String::as_str) == Some(AUTOUPDATE_ANNOTATION.1)
    }

    #[test]
    fn policy_counts_and_marks() {
        let roles = bootstrap_cluster_roles();
        let names: BTreeSet<&str> = roles
            .iter()
            .map(|r| r.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names.len(), roles.len(), "duplicate names");
        // Upstream's 25 component and user-facing roles, 6 of the aggregated family, and the
        // controllers.
        assert_eq!(roles.len(), 25 + 6 + CONTROLLERS.len());
        for c in CONTROLLERS {
            assert!(
                names.contains(format!("system:controller:{c}").as_str()),
                "{c}"
            );
        }
        for certificates in [
            "certificatesigningrequests:nodeclient",
            "certificatesigningrequests:selfnodeclient",
            "kube-apiserver-client-approver",
            "kube-apiserver-client-kubelet-approver",
            "kubelet-serving-approver",
            "legacy-unknown-approver",
        ] {
            let name = format!("system:certificates.k8s.io:{certificates}");
            assert!(names.contains(name.as_str()), "{name}");
        }
        let bindings = bootstrap_cluster_role_bindings();
        assert_eq!(bindings.len(), 12 + CONTROLLERS.len());
        for b in &bindings {
            assert!(
                names.contains(b.role_ref.name.as_str()),
                "{:?}",
                b.metadata.name
            );
            assert!(marked(&b.metadata));
        }
        let node = bindings
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some("system:node"))
            .unwrap();
        assert_eq!(node.subjects.as_deref(), Some(&[][..]));
        let gc = bindings
            .iter()
            .find(|b| {
                b.metadata.name.as_deref() == Some("system:controller:generic-garbage-collector")
            })
            .unwrap();
        assert_eq!(
            gc.subjects.as_deref().unwrap(),
            &[subject(
                "ServiceAccount",
                "generic-garbage-collector",
                Some("kube-system")
            )]
        );
        assert!(roles.iter().all(|r| marked(&r.metadata)));

        let ns_roles = bootstrap_roles();
        let ns_bindings = bootstrap_role_bindings();
        assert_eq!((ns_roles.len(), ns_bindings.len()), (7, 7));
        for b in &ns_bindings {
            assert!(marked(&b.metadata));
            assert!(
                ns_roles
                    .iter()
                    .any(|r| r.metadata.namespace == b.metadata.namespace
                        && r.metadata.name.as_deref() == Some(b.role_ref.name.as_str())),
                "{:?}",
                b.metadata.name
            );
        }
        assert!(ns_roles.iter().all(|r| marked(&r.metadata)));
    }
}
