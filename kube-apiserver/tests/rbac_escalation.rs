//! The escalation check: whether a user's rules cover the rules they want to grant.

use std::sync::Arc;

use api_types::k8s_openapi::api::rbac::v1::{PolicyRule, RoleBinding, RoleRef, Subject};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_apiserver::auth::rbac::{
    RbacObject, RbacStore, bootstrap_cluster_role_bindings, bootstrap_cluster_roles,
    breakdown_rule, confirm_no_escalation, covers, uncovered_rules,
};
use kube_apiserver::http::auth::user::UserInfo;

fn s(v: &[&str]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.iter().map(|x| x.to_string()).collect())
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|x| x.to_string()).collect(),
        api_groups: s(groups),
        resources: s(resources),
        resource_names: s(names),
        non_resource_urls: None,
    }
}

fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|x| x.to_string()).collect(),
        non_resource_urls: s(paths),
        ..Default::default()
    }
}

#[test]
fn covers_table() {
    let all = rule(&["*"], &["*"], &["*"], &[]);
    let get_pods = rule(&["get"], &[""], &["pods"], &[]);
    let read_pods = rule(&["get", "list", "watch"], &[""], &["pods"], &[]);
    let cases: &[(&str, Vec<PolicyRule>, Vec<PolicyRule>, bool)] = &[
        (
            "wildcards cover all",
            vec![all.clone()],
            vec![read_pods.clone()],
            true,
        ),
        (
            "same rule",
            vec![read_pods.clone()],
            vec![read_pods.clone()],
            true,
        ),
        ("nothing needs nothing", vec![], vec![], true),
        ("empty owner", vec![], vec![get_pods.clone()], false),
        (
            "fewer verbs",
            vec![get_pods.clone()],
            vec![read_pods.clone()],
            false,
        ),
        (
            "split across owner rules",
            vec![
                get_pods.clone(),
                rule(&["list", "watch"], &[""], &["pods"], &[]),
            ],
            vec![read_pods.clone()],
            true,
        ),
        (
            "other group",
            vec![rule(&["*"], &["apps"], &["*"], &[])],
            vec![get_pods.clone()],
            false,
        ),
        (
            "star verb in group",
            vec![rule(&["*"], &["apps"], &["*"], &[])],
            vec![rule(&["delete"], &["apps"], &["deployments/scale"], &[])],
            true,
        ),
        (
            "resource does not cover its subresource",
            vec![get_pods.clone()],
            vec![rule(&["get"], &[""], &["pods/log"], &[])],
            false,
        ),
        (
            "*/status covers pods/status",
            vec![rule(&["get"], &[""], &["*/status"], &[])],
            vec![rule(&["get"], &[""], &["pods/status"], &[])],
            true,
        ),
        (
            "*/status does not cover pods",
            vec![rule(&["get"], &[""], &["*/status"], &[])],
            vec![get_pods.clone()],
            false,
        ),
        (
            "unnamed covers named",
            vec![get_pods.clone()],
            vec![rule(&["get"], &[""], &["pods"], &["a", "b"])],
            true,
        ),
        (
            "named does not cover unnamed",
            vec![rule(&["get"], &[""], &["pods"], &["a"])],
            vec![get_pods.clone()],
            false,
        ),
        (
            "named covers a subset",
            vec![rule(&["get"], &[""], &["pods"], &["a", "b"])],
            vec![rule(&["get"], &[""], &["pods"], &["b"])],
            true,
        ),
        (
            "named does not cover other names",
            vec![rule(&["get"], &[""], &["pods"], &["a"])],
            vec![rule(&["get"], &[""], &["pods"], &["a", "c"])],
            false,
        ),
        (
            "url prefix",
            vec![urls(&["get"], &["/apis/*"])],
            vec![urls(&["get"], &["/apis/apps", "/apis/"])],
            true,
        ),
        (
            "url prefix is not the bare path",
            vec![urls(&["get"], &["/apis/*"])],
            vec![urls(&["get"], &["/apis"])],
            false,
        ),
        (
            "url verb",
            vec![urls(&["get"], &["*"])],
            vec![urls(&["post"], &["/healthz"])],
            false,
        ),
        (
            "resource rules do not cover urls",
            vec![all.clone()],
            vec![urls(&["get"], &["/healthz"])],
            false,
        ),
        (
            "url rules do not cover resources",
            vec![urls(&["*"], &["*"])],
            vec![get_pods.clone()],
            false,
        ),
    ];
    for (name, owner, requested, want) in cases {
        assert_eq!(covers(owner, requested), *want, "{name}");
        assert_eq!(
            uncovered_rules(owner, requested).is_empty(),
            *want,
            "{name}"
        );
    }
}

#[test]
fn breakdown_and_missing() {
    let r = PolicyRule {
        non_resource_urls: s(&["/x"]),
        ..rule(&["get", "list"], &["", "apps"], &["a", "b"], &["n1", "n2"])
    };
    // 2 groups x 2 resources x 2 verbs x 2 names, plus 1 url x 2 verbs.
    assert_eq!(breakdown_rule(&r).len(), 18);
    let missing = uncovered_rules(
        &[rule(&["get"], &[""], &["pods"], &[])],
        &[rule(&["get", "delete"], &[""], &["pods"], &[])],
    );
    assert_eq!(missing, vec![rule(&["delete"], &[""], &["pods"], &[])]);
}

#[test]
fn confirm_against_bound_rules() {
    let mut objects: Vec<RbacObject> = bootstrap_cluster_roles()
        .into_iter()
        .map(RbacObject::ClusterRole)
        .chain(
            bootstrap_cluster_role_bindings()
                .into_iter()
                .map(RbacObject::ClusterRoleBinding),
        )
        .collect();
    objects.push(RbacObject::RoleBinding(RoleBinding {
        metadata: ObjectMeta {
            namespace: Some("app".into()),
            name: Some("ada-admin".into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "admin".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: "ada".into(),
            ..Default::default()
        }]),
    }));
    let store = Arc::new(RbacStore::new(objects));
    let state = store.snapshot();
    let ada = UserInfo {
        name: "ada".into(),
        uid: String::new(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    };
    let edit = state.cluster_role_rules("edit").unwrap().to_vec();
    // In her namespace, ada may hand out edit; cluster-wide she holds only the defaults.
    assert_eq!(confirm_no_escalation(&state, &ada, "app", &edit), Ok(()));
    assert!(confirm_no_escalation(&state, &ada, "", &edit).is_err());
    assert!(confirm_no_escalation(&state, &ada, "other", &edit).is_err());
    // The default rules every authenticated user holds can be granted anywhere.
    let basic = state
        .cluster_role_rules("system:basic-user")
        .unwrap()
        .to_vec();
    assert_eq!(confirm_no_escalation(&state, &ada, "", &basic), Ok(()));

    let err = confirm_no_escalation(
        &state,
        &ada,
        "app",
        &[
            rule(&["get", "list", "delete"], &[""], &["nodes"], &[]),
            rule(&["get"], &[""], &["pods"], &[]),
        ],
    )
    .unwrap_err();
    assert_eq!(
        err,
        "user \"ada\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"list\" \"delete\"]}"
    );

    // cluster-admin holders may grant anything.
    let root = UserInfo {
        name: "root".into(),
        uid: String::new(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    };
    let everything = vec![rule(&["*"], &["*"], &["*"], &[]), urls(&["*"], &["*"])];
    assert_eq!(
        confirm_no_escalation(&state, &root, "", &everything),
        Ok(())
    );
    assert!(confirm_no_escalation(&state, &ada, "app", &everything).is_err());
}
