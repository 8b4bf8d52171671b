//! The bootstrap policy loaded into the RBAC authorizer: super-users, anonymous and
//! authenticated users, the components, and the admin/edit/view aggregation chain.

mod common;
use common::rbac::{allowed, user};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use api_types::k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, PolicyRule, RoleBinding, RoleRef, Subject,
};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use kube_apiserver::auth::rbac::{
    RbacAuthorizer, RbacObject, RbacStore, bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles, covers,
};
use kube_apiserver::http::auth::user::UserInfo;

fn bootstrap_objects() -> Vec<RbacObject> {
    bootstrap_cluster_roles()
        .into_iter()
        .map(RbacObject::ClusterRole)
        .chain(
            bootstrap_cluster_role_bindings()
                .into_iter()
                .map(RbacObject::ClusterRoleBinding),
        )
        .collect()
}

fn binding(ns: &str, name: &str, role: &str, user: &str) -> RbacObject {
    RbacObject::RoleBinding(RoleBinding {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            ..Default::default()
        }]),
    })
}

fn check(a: &RbacAuthorizer, cases: &[(&UserInfo, &str, &str, bool)]) {
    for (u, method, path, want) in cases {
        assert_eq!(
            allowed(a, u, method, path),
            *want,
            "{} {method} {path}",
            u.name
        );
    }
}

#[test]
fn bootstrap_data_is_consistent() {
    let roles = bootstrap_cluster_roles();
    let names: BTreeSet<String> = roles
        .iter()
        .map(|r| r.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names.len(), roles.len(), "duplicate role names");
    for required in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:aggregate-to-admin",
        "system:aggregate-to-edit",
        "system:aggregate-to-view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:node",
        "system:node-proxier",
        "system:monitoring",
    ] {
        assert!(names.contains(required), "missing {required}");
    }
    for r in &roles {
        let labels = r.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/bootstrapping"], "rbac-defaults");
        // Aggregated roles carry no rules of their own; every other role has some.
        assert_eq!(
            r.aggregation_rule.is_some(),
            r.rules.as_ref().is_none_or(|v| v.is_empty()),
            "{:?}",
            r.metadata.name
        );
    }
    for b in bootstrap_cluster_role_bindings() {
        assert!(
            names.contains(&b.role_ref.name),
            "{} unbound",
            b.role_ref.name
        );
        assert_eq!(b.metadata.name, Some(b.role_ref.name.clone()));
    }
}

#[test]
fn default_subjects() {
    let a = RbacAuthorizer::new(Arc::new(RbacStore::new(bootstrap_objects())));
    let anon = UserInfo::anonymous();
    let authed = user("jane", &["system:authenticated"]);
    let master = user("root", &["system:masters", "system:authenticated"]);
    let sched = user("system:kube-scheduler", &["system:authenticated"]);
    let kcm = user("system:kube-controller-manager", &["system:authenticated"]);
    let proxy = user("system:kube-proxy", &["system:authenticated"]);
    let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
    let monitor = user("prom", &["system:monitoring", "system:authenticated"]);
    let dns = user(
        "system:serviceaccount:kube-system:kube-dns",
        &["system:serviceaccounts", "system:authenticated"],
    );
    check(
        &a,
        &[
            // cluster-admin through system:masters: everything, resources and paths.
            (&master, "DELETE", "/api/v1/namespaces/kube-system", true),
            (
                &master,
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                true,
            ),
            (&master, "GET", "/api/v1/namespaces/x/pods/p/exec", true),
            (&master, "GET", "/metrics", true),
            (&master, "PUT", "/anything/at/all", true),
            // Anonymous: the public-info paths only.
            (&anon, "GET", "/healthz", true),
            (&anon, "GET", "/livez", true),
            (&anon, "GET", "/readyz", true),
            (&anon, "GET", "/version", true),
            (&anon, "GET", "/version/", true),
            (&anon, "GET", "/healthz/etcd", false),
            (&anon, "POST", "/healthz", false),
            (&anon, "GET", "/api", false),
            (&anon, "GET", "/apis", false),
            (&anon, "GET", "/openapi/v2", false),
            (&anon, "GET", "/metrics", false),
            (&anon, "GET", "/api/v1/namespaces/default/pods", false),
            (
                &anon,
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                false,
            ),
            // Authenticated: discovery, public info and the self reviews.
            (&authed, "GET", "/api", true),
            (&authed, "GET", "/api/v1", true),
            (&authed, "GET", "/apis/apps/v1", true),
            (&authed, "GET", "/openapi/v3/apis/apps/v1", true),
            (&authed, "GET", "/version", true),
            (
                &authed,
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                true,
            ),
            (
                &authed,
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                true,
            ),
            (
                &authed,
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                true,
            ),
            (
                &authed,
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                false,
            ),
            (&authed, "GET", "/metrics", false),
            (&authed, "GET", "/api/v1/namespaces/default/pods", false),
            // Monitoring group.
            (&monitor, "GET", "/metrics", true),
            (&monitor, "GET", "/metrics/slis", true),
            (&monitor, "GET", "/readyz/etcd", true),
            (&monitor, "GET", "/livez/ping", true),
            (&monitor, "GET", "/api/v1/pods", false),
            // The scheduler, with system:volume-scheduler.
            (&sched, "POST", "/api/v1/namespaces/x/pods/p/binding", true),
            (&sched, "POST", "/api/v1/namespaces/x/bindings", true),
            (&sched, "GET", "/api/v1/nodes?watch=true", true),
            (&sched, "PATCH", "/api/v1/namespaces/x/pods/p/status", true),
            (&sched, "DELETE", "/api/v1/namespaces/x/pods/p", true),
            (&sched, "POST", "/api/v1/namespaces/x/pods", false),
            (&sched, "PUT", "/api/v1/persistentvolumes/pv1", true),
            (&sched, "GET", "/apis/storage.k8s.io/v1/csinodes", true),
            (
                &sched,
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                true,
            ),
            (
                &sched,
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
                true,
            ),
            (
                &sched,
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
                false,
            ),
            (
                &sched,
                "PATCH",
                "/apis/events.k8s.io/v1/namespaces/x/events/e",
                true,
            ),
            // The controller manager reads everything but writes little itself.
            (&kcm, "GET", "/apis/apps/v1/deployments", true),
            (
                &kcm,
                "GET",
                "/apis/example.com/v1/namespaces/x/widgets?watch=1",
                true,
            ),
            (
                &kcm,
                "GET",
                "/apis/apps/v1/namespaces/x/deployments/d",
                false,
            ),
            (
                &kcm,
                "POST",
                "/api/v1/namespaces/x/serviceaccounts/sa/token",
                true,
            ),
            (&kcm, "PUT", "/api/v1/namespaces/x/secrets/s", true),
            (&kcm, "DELETE", "/api/v1/namespaces/x/configmaps/c", false),
            (
                &kcm,
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
                true,
            ),
            // kube-proxy.
            (
                &proxy,
                "GET",
                "/apis/discovery.k8s.io/v1/endpointslices?watch=1",
                true,
            ),
            (&proxy, "GET", "/api/v1/nodes/n1", true),
            (&proxy, "GET", "/api/v1/services/s", false),
            (&proxy, "GET", "/api/v1/services", true),
            // system:node is bound to nobody (the Node authorizer's job).
            (&node, "GET", "/api/v1/nodes/n1", false),
            // kube-dns's service account.
            (&dns, "GET", "/api/v1/services", true),
            (&dns, "GET", "/api/v1/secrets", false),
        ],
    );
}

#[test]
fn view_edit_admin_chain() {
    let mut objects = bootstrap_objects();
    objects.push(binding("app", "viewer", "view", "vera"));
    objects.push(binding("app", "editor", "edit", "ed"));
    objects.push(binding("app", "admin", "admin", "ada"));
    let store = Arc::new(RbacStore::new(objects));
    let a = RbacAuthorizer::new(store.clone());
    let vera = user("vera", &["system:authenticated"]);
    let ed = user("ed", &["system:authenticated"]);
    let ada = user("ada", &["system:authenticated"]);
    let ns = "/api/v1/namespaces/app";
    let apps = "/apis/apps/v1/namespaces/app";
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/app";
    check(
        &a,
        &[
            (&vera, "GET", &format!("{ns}/pods"), true),
            (&vera, "GET", &format!("{ns}/pods/p/log"), true),
            (&vera, "GET", &format!("{apps}/deployments/d/scale"), true),
            (&vera, "GET", &format!("{ns}/secrets/s"), false),
            (&vera, "POST", &format!("{ns}/pods"), false),
            (&vera, "POST", &format!("{ns}/pods/p/exec"), false),
            (&vera, "GET", "/api/v1/namespaces/other/pods", false),
            (&ed, "GET", &format!("{ns}/pods"), true),
            (&ed, "POST", &format!("{apps}/deployments"), true),
            (&ed, "PATCH", &format!("{apps}/deployments/d/scale"), true),
            (&ed, "GET", &format!("{ns}/secrets/s"), true),
            (&ed, "POST", &format!("{ns}/pods/p/exec"), true),
            (&ed, "POST", &format!("{ns}/pods/p/eviction"), true),
            (
                &ed,
                "POST",
                &format!("{ns}/serviceaccounts/default/token"),
                true,
            ),
            (&ed, "POST", &format!("{rbac}/rolebindings"), false),
            (&ed, "PUT", &format!("{ns}/resourcequotas/q"), false),
            (&ada, "GET", &format!("{ns}/pods"), true),
            (&ada, "POST", &format!("{apps}/deployments"), true),
            (&ada, "POST", &format!("{rbac}/rolebindings"), true),
            (&ada, "DELETE", &format!("{rbac}/roles/r"), true),
            (
                &ada,
                "POST",
                "/apis/authorization.k8s.io/v1/namespaces/app/localsubjectaccessreviews",
                true,
            ),
            (&ada, "PUT", &format!("{ns}/resourcequotas/q"), false),
            (&ada, "DELETE", "/api/v1/namespaces/app", false),
            (&ada, "GET", "/api/v1/namespaces/other/secrets", false),
        ],
    );

    // The chain as rule sets: each level covers the one below and not the one above.
    let state = store.snapshot();
    let rules = |n: &str| state.cluster_role_rules(n).unwrap().to_vec();
    let (view, edit, admin) = (rules("view"), rules("edit"), rules("admin"));
    assert_eq!(view, rules("system:aggregate-to-view"));
    assert!(covers(&edit, &view) && covers(&admin, &edit) && covers(&admin, &view));
    assert!(!covers(&view, &edit) && !covers(&edit, &admin));

    // A CRD's role labelled aggregate-to-view extends view, and through it edit and admin;
    // deleting it takes the rules away again.
    let widgets = RbacObject::ClusterRole(ClusterRole {
        metadata: ObjectMeta {
            name: Some("widgets-view".into()),
            labels: Some(BTreeMap::from([(
                "rbac.authorization.k8s.io/aggregate-to-view".into(),
                "true".into(),
            )])),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            verbs: vec!["get".into(), "list".into()],
            api_groups: Some(vec!["example.com".into()]),
            resources: Some(vec!["widgets".into()]),
            ..Default::default()
        }]),
        aggregation_rule: None,
    });
    let path = "/apis/example.com/v1/namespaces/app/widgets";
    for u in [&vera, &ed, &ada] {
        assert!(!allowed(&a, u, "GET", path));
    }
    store.upsert(widgets.clone());
    for u in [&vera, &ed, &ada] {
        assert!(allowed(&a, u, "GET", path), "{}", u.name);
        assert!(!allowed(&a, u, "POST", path), "{}", u.name);
    }
    store.delete(&widgets);
    for u in [&vera, &ed, &ada] {
        assert!(!allowed(&a, u, "GET", path), "{}", u.name);
    }
}

fn aggregated(name: &str, labels: &[(&str, &str)], selector: LabelSelector) -> RbacObject {
    RbacObject::ClusterRole(ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        // Stale rules an aggregated role carries are replaced by the aggregate.
        rules: Some(vec![PolicyRule {
            verbs: vec!["*".into()],
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            ..Default::default()
        }]),
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![selector]),
        }),
    })
}

#[test]
fn aggregation_expressions_and_cycles() {
    let exists = |key: &str| LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.into(),
            operator: "Exists".into(),
            values: None,
        }]),
    };
    let leaf = |name: &str, label: &str, resource: &str| {
        RbacObject::ClusterRole(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(BTreeMap::from([(label.into(), "x".into())])),
                ..Default::default()
            },
            rules: Some(vec![PolicyRule {
                verbs: vec!["get".into()],
                api_groups: Some(vec!["".into()]),
                resources: Some(vec![resource.into()]),
                ..Default::default()
            }]),
            aggregation_rule: None,
        })
    };
    // a and b select each other (a cycle) and one leaf each.
    let store = RbacStore::new(vec![
        aggregated("a", &[("to-b", "1")], exists("to-a")),
        aggregated("b", &[("to-a", "1")], exists("to-b")),
        leaf("leaf-a", "to-a", "pods"),
        leaf("leaf-b", "to-b", "services"),
        leaf("unrelated", "other", "secrets"),
    ]);
    let state = store.snapshot();
    for name in ["a", "b"] {
        let rules = state.cluster_role_rules(name).unwrap();
        let resources: BTreeSet<String> = rules
            .iter()
            .flat_map(|r| r.resources.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            resources,
            BTreeSet::from(["pods".to_string(), "services".to_string()]),
            "{name}"
        );
        // The stale wildcard rule is gone.
        assert!(rules.iter().all(|r| r.verbs == ["get"]), "{name}");
    }
    assert!(state.cluster_role_rules("missing").is_none());
}
