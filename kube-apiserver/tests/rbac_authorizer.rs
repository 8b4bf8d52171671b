//! The RBAC authorizer against hand-made Roles, ClusterRoles and bindings: subjects, scopes,
//! verbs, groups, resources, subresources, resource names, non-resource URLs, and updates.

mod common;
use common::rbac::{allowed, request, user};
use std::sync::Arc;

use api_types::k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_apiserver::auth::rbac::{RbacAuthorizer, RbacObject, RbacStore};
use kube_apiserver::http::auth::authorizer::{Attributes, Authorizer, Decision};
use kube_apiserver::http::auth::user::UserInfo;

fn s(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|x| x.to_string()).collect())
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: s(verbs).unwrap(),
        api_groups: s(groups),
        resources: s(resources),
        ..Default::default()
    }
}

fn meta(ns: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: ns.map(str::to_string),
        name: Some(name.to_string()),
        ..Default::default()
    }
}

fn subject(kind: &str, name: &str, ns: Option<&str>) -> Subject {
    Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: ns.map(str::to_string),
        api_group: None,
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    }
}

fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> RbacObject {
    RbacObject::ClusterRole(ClusterRole {
        metadata: meta(None, name),
        rules: Some(rules),
        aggregation_rule: None,
    })
}

fn crb(name: &str, role: &str, subjects: Vec<Subject>) -> RbacObject {
    RbacObject::ClusterRoleBinding(ClusterRoleBinding {
        metadata: meta(None, name),
        role_ref: role_ref("ClusterRole", role),
        subjects: Some(subjects),
    })
}

fn rb(ns: &str, name: &str, kind: &str, role: &str, subjects: Vec<Subject>) -> RbacObject {
    RbacObject::RoleBinding(RoleBinding {
        metadata: meta(Some(ns), name),
        role_ref: role_ref(kind, role),
        subjects: Some(subjects),
    })
}

/// A policy exercising every matching form.
fn policy() -> Vec<RbacObject> {
    vec![
        cluster_role(
            "pod-reader",
            vec![rule(&["get", "list", "watch"], &[""], &["pods"])],
        ),
        cluster_role("log-reader", vec![rule(&["get"], &[""], &["pods/log"])]),
        cluster_role(
            "any-status",
            vec![rule(&["get", "update"], &["*"], &["*/status"])],
        ),
        cluster_role("apps-all", vec![rule(&["*"], &["apps"], &["*"])]),
        cluster_role(
            "one-configmap",
            vec![PolicyRule {
                resource_names: s(&["app-config"]),
                ..rule(
                    &["get", "list", "watch", "update", "delete"],
                    &[""],
                    &["configmaps"],
                )
            }],
        ),
        cluster_role(
            "metrics",
            vec![PolicyRule {
                verbs: s(&["get"]).unwrap(),
                non_resource_urls: s(&["/metrics", "/logs/*"]),
                ..Default::default()
            }],
        ),
        RbacObject::Role(Role {
            metadata: meta(Some("team-a"), "secret-writer"),
            rules: Some(vec![rule(&["create", "update"], &[""], &["secrets"])]),
        }),
        // Cluster-wide.
        crb(
            "alice-pods",
            "pod-reader",
            vec![subject("User", "alice", None)],
        ),
        crb("ops-apps", "apps-all", vec![subject("Group", "ops", None)]),
        crb(
            "metrics",
            "metrics",
            vec![subject("Group", "monitor", None)],
        ),
        crb(
            "ctrl-status",
            "any-status",
            vec![subject("ServiceAccount", "ctrl", Some("kube-system"))],
        ),
        // A namespaceless ServiceAccount subject in a ClusterRoleBinding matches nobody.
        crb(
            "nobody",
            "pod-reader",
            vec![subject("ServiceAccount", "ghost", None)],
        ),
        // Namespaced: a ClusterRole granted in one namespace only.
        rb(
            "team-a",
            "bob-pods",
            "ClusterRole",
            "pod-reader",
            vec![subject("User", "bob", None)],
        ),
        rb(
            "team-a",
            "bob-logs",
            "ClusterRole",
            "log-reader",
            vec![subject("User", "bob", None)],
        ),
        rb(
            "team-a",
            "bob-cm",
            "ClusterRole",
            "one-configmap",
            vec![subject("User", "bob", None)],
        ),
        // A Role of the binding's namespace.
        rb(
            "team-a",
            "writer",
            "Role",
            "secret-writer",
            vec![subject("Group", "team-a-devs", None)],
        ),
        // A ServiceAccount subject without namespace means the binding's namespace.
        rb(
            "team-a",
            "builder",
            "ClusterRole",
            "pod-reader",
            vec![subject("ServiceAccount", "builder", None)],
        ),
    ]
}

#[test]
fn decisions_table() {
    let a = RbacAuthorizer::new(Arc::new(RbacStore::new(policy())));
    let alice = user("alice", &["system:authenticated"]);
    let bob = user("bob", &["system:authenticated"]);
    let dev = user("carol", &["team-a-devs", "system:authenticated"]);
    let ops = user("dave", &["ops"]);
    let mon = user("mon", &["monitor"]);
    let ctrl = user(
        "system:serviceaccount:kube-system:ctrl",
        &["system:serviceaccounts"],
    );
    let builder = user(
        "system:serviceaccount:team-a:builder",
        &["system:serviceaccounts"],
    );
    let builder_b = user(
        "system:serviceaccount:team-b:builder",
        &["system:serviceaccounts"],
    );
    let ghost = user("system:serviceaccount:default:ghost", &[]);
    let cases: &[(&UserInfo, &str, &str, bool)] = &[
        // ClusterRoleBinding: every namespace and cluster-wide.
        (&alice, "GET", "/api/v1/namespaces/x/pods/p", true),
        (&alice, "GET", "/api/v1/pods", true),
        (&alice, "GET", "/api/v1/namespaces/x/pods?watch=true", true),
        (&alice, "DELETE", "/api/v1/namespaces/x/pods/p", false),
        (&alice, "GET", "/api/v1/namespaces/x/services", false),
        // The subresource needs its own grant.
        (&alice, "GET", "/api/v1/namespaces/x/pods/p/log", false),
        // Wrong group: pods are core only.
        (&alice, "GET", "/apis/apps/v1/namespaces/x/pods", false),
        // RoleBinding to a ClusterRole: only in that namespace.
        (&bob, "GET", "/api/v1/namespaces/team-a/pods", true),
        (&bob, "GET", "/api/v1/namespaces/team-b/pods", false),
        (&bob, "GET", "/api/v1/pods", false),
        (&bob, "GET", "/api/v1/namespaces/team-a/pods/p/log", true),
        (&bob, "GET", "/api/v1/namespaces/team-b/pods/p/log", false),
        // resourceNames: only requests naming an allowed object.
        (
            &bob,
            "GET",
            "/api/v1/namespaces/team-a/configmaps/app-config",
            true,
        ),
        (
            &bob,
            "PUT",
            "/api/v1/namespaces/team-a/configmaps/app-config",
            true,
        ),
        (
            &bob,
            "DELETE",
            "/api/v1/namespaces/team-a/configmaps/app-config",
            true,
        ),
        (
            &bob,
            "GET",
            "/api/v1/namespaces/team-a/configmaps/other",
            false,
        ),
        (&bob, "GET", "/api/v1/namespaces/team-a/configmaps", false),
        (
            &bob,
            "GET",
            "/api/v1/namespaces/team-a/configmaps?watch=1",
            false,
        ),
        (
            &bob,
            "DELETE",
            "/api/v1/namespaces/team-a/configmaps",
            false,
        ),
        // A list pinned to the name by a field selector does carry the name.
        (
            &bob,
            "GET",
            "/api/v1/namespaces/team-a/configmaps?fieldSelector=metadata.name%3Dapp-config",
            true,
        ),
        // Role of the namespace, bound to a group.
        (&dev, "POST", "/api/v1/namespaces/team-a/secrets", true),
        (&dev, "GET", "/api/v1/namespaces/team-a/secrets/s", false),
        (&dev, "POST", "/api/v1/namespaces/team-b/secrets", false),
        // Wildcard resources and verbs within a group.
        (
            &ops,
            "DELETE",
            "/apis/apps/v1/namespaces/x/deployments/d",
            true,
        ),
        (
            &ops,
            "PATCH",
            "/apis/apps/v1/namespaces/x/deployments/d/scale",
            true,
        ),
        (
            &ops,
            "POST",
            "/apis/apps/v1/namespaces/x/statefulsets",
            true,
        ),
        (&ops, "GET", "/apis/batch/v1/namespaces/x/jobs", false),
        // */subresource across groups.
        (&ctrl, "PUT", "/api/v1/namespaces/x/pods/p/status", true),
        (
            &ctrl,
            "GET",
            "/apis/apps/v1/namespaces/x/deployments/d/status",
            true,
        ),
        (&ctrl, "PUT", "/api/v1/nodes/n/status", true),
        (&ctrl, "GET", "/api/v1/namespaces/x/pods/p", false),
        (&ctrl, "GET", "/api/v1/namespaces/x/pods/p/log", false),
        // ServiceAccount subjects.
        (&builder, "GET", "/api/v1/namespaces/team-a/pods", true),
        (&builder, "GET", "/api/v1/namespaces/team-b/pods", false),
        (&builder_b, "GET", "/api/v1/namespaces/team-a/pods", false),
        (&ghost, "GET", "/api/v1/namespaces/default/pods", false),
        // Non-resource URLs, exact and with a * suffix; resource rules never match them.
        (&mon, "GET", "/metrics", true),
        (&mon, "GET", "/metrics/slis", false),
        (&mon, "GET", "/logs/kube-apiserver.log", true),
        (&mon, "GET", "/logs/", true),
        (&mon, "GET", "/logs", false),
        (&mon, "POST", "/metrics", false),
        (&alice, "GET", "/metrics", false),
    ];
    for (u, method, path, want) in cases {
        assert_eq!(
            allowed(&a, u, method, path),
            *want,
            "{} {method} {path}",
            u.name
        );
    }
}

#[test]
fn allow_reason_names_the_binding() {
    let a = RbacAuthorizer::new(Arc::new(RbacStore::new(policy())));
    let builder = user("system:serviceaccount:team-a:builder", &[]);
    let r = request("GET", "/api/v1/namespaces/team-a/pods");
    let (d, reason) = a.decide(&Attributes {
        user: &builder,
        request: &r,
    });
    assert_eq!(d, Decision::Allow);
    assert_eq!(
        reason,
        "RBAC: allowed by RoleBinding \"builder/team-a\" of ClusterRole \"pod-reader\" to ServiceAccount \"builder/team-a\""
    );
    let alice = user("alice", &[]);
    let r = request("GET", "/api/v1/pods");
    let (_, reason) = a.decide(&Attributes {
        user: &alice,
        request: &r,
    });
    assert_eq!(
        reason,
        "RBAC: allowed by ClusterRoleBinding \"alice-pods\" of ClusterRole \"pod-reader\" to User \"alice\""
    );
}

#[test]
fn missing_roles_give_no_opinion_with_reason() {
    let store = RbacStore::new(vec![
        crb(
            "dangling",
            "does-not-exist",
            vec![subject("User", "eve", None)],
        ),
        rb(
            "ns",
            "dangling-role",
            "Role",
            "gone",
            vec![subject("User", "eve", None)],
        ),
    ]);
    let a = RbacAuthorizer::new(Arc::new(store));
    let eve = user("eve", &[]);
    let r = request("GET", "/api/v1/namespaces/ns/pods");
    let d = a.authorize(&Attributes {
        user: &eve,
        request: &r,
    });
    assert_eq!(
        d,
        Decision::NoOpinion(
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"does-not-exist\" not found, role.rbac.authorization.k8s.io \"gone\" not found]".into()
        )
    );
    // Nothing bound at all: no opinion, no reason.
    let nobody = user("nobody", &[]);
    assert_eq!(
        a.authorize(&Attributes {
            user: &nobody,
            request: &r
        }),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn updates_swap_the_snapshot() {
    let store = Arc::new(RbacStore::default());
    let a = RbacAuthorizer::new(store.clone());
    let frank = user("frank", &[]);
    let path = "/api/v1/namespaces/x/pods";
    assert!(!allowed(&a, &frank, "GET", path));

    let role = cluster_role("reader", vec![rule(&["list"], &[""], &["pods"])]);
    let binding = crb("frank", "reader", vec![subject("User", "frank", None)]);
    store.upsert(binding.clone());
    // The binding alone grants nothing until its role exists.
    assert!(!allowed(&a, &frank, "GET", path));
    let old = store.snapshot();
    store.upsert(role.clone());
    assert!(allowed(&a, &frank, "GET", path));
    // A snapshot taken before stays as it was.
    assert!(old.cluster_role("reader").is_none());

    // Modify the role: the new rules apply at once.
    store.upsert(cluster_role(
        "reader",
        vec![rule(&["get"], &[""], &["pods"])],
    ));
    assert!(!allowed(&a, &frank, "GET", path));
    assert!(allowed(&a, &frank, "GET", "/api/v1/namespaces/x/pods/p"));

    store.delete(&binding);
    assert!(!allowed(&a, &frank, "GET", "/api/v1/namespaces/x/pods/p"));

    store.replace(vec![role, binding]);
    assert!(allowed(&a, &frank, "GET", path));
    store.replace(Vec::new());
    assert!(!allowed(&a, &frank, "GET", path));
}
