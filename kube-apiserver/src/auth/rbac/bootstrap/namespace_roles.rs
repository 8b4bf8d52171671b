//! The default namespaced Roles and RoleBindings: in kube-system, leader election for the
//! control-plane components, the extension-apiserver authentication reader and the bootstrap
//! token controllers; in kube-public, the bootstrap signer's access to `cluster-info`.

use api_types::k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};

use super::{EVENT_WRITE, READ, meta, named, rule, subject};

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";

fn ns_role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
    let mut metadata = meta(name, &[]);
    metadata.namespace = Some(namespace.to_string());
    Role {
        metadata,
        rules: Some(rules),
    }
}

fn ns_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Subject>) -> RoleBinding {
    let mut metadata = meta(name, &[]);
    metadata.namespace = Some(namespace.to_string());
    RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "Role".to_string(),
            name: role.to_string(),
        },
        subjects: Some(subjects),
    }
}

fn sa(name: &str) -> Subject {
    subject("ServiceAccount", name, Some(KUBE_SYSTEM))
}

fn user(name: &str) -> Subject {
    subject("User", name, None)
}

pub(super) fn roles() -> Vec<Role> {
    // Leader election moved from ConfigMaps and Endpoints to Leases; LeaseCandidates are the
    // coordinated leader election's.
    let leader_locking = || {
        let verbs = &["create", "get", "list", "update", "watch"];
        vec![
            rule(verbs, &["coordination.k8s.io"], &["leases"]),
            rule(verbs, &["coordination.k8s.io"], &["leasecandidates"]),
        ]
    };
    vec![
        ns_role(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            vec![
                rule(READ, &[""], &["configmaps"]),
                named(&["update"], &[""], &["configmaps"], &["cluster-info"]),
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
            ],
        ),
        ns_role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![named(
                READ,
                &[""],
                &["configmaps"],
                &["extension-apiserver-authentication"],
            )],
        ),
        ns_role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            leader_locking(),
        ),
        ns_role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            leader_locking(),
        ),
        ns_role(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            vec![rule(READ, &[""], &["secrets"])],
        ),
        ns_role(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[""],
                &["configmaps"],
            )],
        ),
        ns_role(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![
                rule(&["delete", "get", "list", "watch"], &[""], &["secrets"]),
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
            ],
        ),
    ]
}

pub(super) fn role_bindings() -> Vec<RoleBinding> {
    let same = |ns: &str, name: &str, subjects: Vec<Subject>| ns_binding(ns, name, name, subjects);
    vec![
        same(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            vec![sa("bootstrap-signer")],
        ),
        ns_binding(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![
                user("system:kube-controller-manager"),
                user("system:kube-scheduler"),
            ],
        ),
        same(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            vec![
                user("system:kube-controller-manager"),
                sa("kube-controller-manager"),
                sa("leader-election-controller"),
            ],
        ),
        same(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            vec![user("system:kube-scheduler"), sa("kube-scheduler")],
        ),
        same(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            vec![sa("bootstrap-signer")],
        ),
        same(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![sa("cloud-provider")],
        ),
        same(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![sa("token-cleaner")],
        ),
    ]
}
