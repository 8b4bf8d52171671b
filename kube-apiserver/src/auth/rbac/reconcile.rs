//! Start-up reconciliation of the bootstrap policy, as upstream's `storage_rbac` post-start hook
//! with `pkg/registry/rbac/reconciliation`: missing objects are created; existing ones keep
//! everything they have and gain what the policy adds (rules, aggregation selectors, binding
//! subjects, labels, annotations), unless annotated `autoupdate: "false"`. A binding whose
//! roleRef changed is deleted and recreated, since a roleRef cannot be updated.

use anyhow::Context;
use api_types::k8s_openapi::api::rbac::v1::{AggregationRule, PolicyRule, RoleRef, Subject};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Serialize;
use serde_json::{Value, json};

use super::bootstrap::{
    AUTOUPDATE_ANNOTATION, bootstrap_cluster_role_bindings, bootstrap_cluster_roles,
    bootstrap_role_bindings, bootstrap_roles,
};
use super::escalation::uncovered_rules;
use crate::registry::{DeleteOptions, Part, RegistryError, ResourceStore};
use crate::rest::state::ApiState;

const GROUP: &str = "rbac.authorization.k8s.io";
const VERSION: &str = "v1";

/// What reconciling one object did; counted by the tests that check a second run is a no-op.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileCounts {
    /// Objects created (including recreated bindings).
    pub created: usize,
    /// Objects updated in place.
    pub updated: usize,
    /// Bindings deleted to be recreated with a new roleRef.
    pub recreated: usize,
    /// Objects left alone because they opt out with `autoupdate: "false"`.
    pub protected: usize,
}

/// Creates or updates every bootstrap ClusterRole, ClusterRoleBinding, Role and RoleBinding.
pub async fn reconcile_bootstrap_policy(state: &ApiState) -> anyhow::Result<()> {
    let counts = reconcile_with_counts(state).await?;
    tracing::info!(
        created = counts.created,
        updated = counts.updated,
        recreated = counts.recreated,
        protected = counts.protected,
        "reconciled the bootstrap RBAC policy"
    );
    Ok(())
}

/// [`reconcile_bootstrap_policy`], telling what it wrote.
pub async fn reconcile_with_counts(state: &ApiState) -> anyhow::Result<ReconcileCounts> {
    let store = |plural: &str| {
        state
            .store(GROUP, VERSION, plural)
            .with_context(|| format!("{plural}.{GROUP} is not served"))
    };
    let mut counts = ReconcileCounts::default();
    // Roles before bindings, so a binding never points at a role that does not exist yet.
    let cluster_roles = store("clusterroles")?;
    for role in bootstrap_cluster_roles() {
        reconcile_one(
            cluster_roles,
            None,
            to_value(&role)?,
            Kind::Role,
            &mut counts,
        )
        .await?;
    }
    let cluster_role_bindings = store("clusterrolebindings")?;
    for binding in bootstrap_cluster_role_bindings() {
        let value = to_value(&binding)?;
        reconcile_one(
            cluster_role_bindings,
            None,
            value,
            Kind::Binding,
            &mut counts,
        )
        .await?;
    }
    let roles = store("roles")?;
    for role in bootstrap_roles() {
        let namespace = role.metadata.namespace.clone().unwrap_or_default();
        ensure_namespace(state, &namespace).await?;
        let value = to_value(&role)?;
        reconcile_one(roles, Some(&namespace), value, Kind::Role, &mut counts).await?;
    }
    let role_bindings = store("rolebindings")?;
    for binding in bootstrap_role_bindings() {
        let namespace = binding.metadata.namespace.clone().unwrap_or_default();
        ensure_namespace(state, &namespace).await?;
        let value = to_value(&binding)?;
        reconcile_one(
            role_bindings,
            Some(&namespace),
            value,
            Kind::Binding,
            &mut counts,
        )
        .await?;
    }
    Ok(counts)
}

fn to_value(object: &impl Serialize) -> anyhow::Result<Value> {
    serde_json::to_value(object).context("encoding a bootstrap RBAC object")
}

/// Upstream creates the namespace of a namespaced bootstrap role when it is missing.
async fn ensure_namespace(state: &ApiState, namespace: &str) -> anyhow::Result<()> {
    let namespaces = state
        .store("", "v1", "namespaces")
        .context("namespaces are not served")?;
    match namespaces.get(None, namespace).await {
        Ok(_) => return Ok(()),
        Err(RegistryError::NotFound { .. }) => {}
        Err(err) => return Err(anyhow::anyhow!("reading namespace {namespace}: {err}")),
    }
    let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    match namespaces.create(None, object).await {
        Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(()),
        Err(err) => Err(anyhow::anyhow!("creating namespace {namespace}: {err}")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Role,
    Binding,
}

/// What an existing object needs.
#[derive(Debug, PartialEq)]
enum Plan {
    Nothing,
    Protected,
    Update(Value),
    Recreate,
}

async fn reconcile_one(
    store: &ResourceStore,
    namespace: Option<&str>,
    expected: Value,
    kind: Kind,
    counts: &mut ReconcileCounts,
) -> anyhow::Result<()> {
    let name = expected["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let what = || format!("{} {name}", store.info().plural);
    let existing = match store.get(namespace, &name).await {
        Ok(existing) => existing,
        Err(RegistryError::NotFound { .. }) => {
            return create(store, namespace, expected, counts)
                .await
                .with_context(what);
        }
        Err(err) => return Err(anyhow::anyhow!("reading {}: {err}", what())),
    };
    match plan(kind, &existing, &expected) {
        Plan::Nothing => Ok(()),
        Plan::Protected => {
            counts.protected += 1;
            Ok(())
        }
        Plan::Update(_) => {
            // Recomputed from the object read under compare-and-swap, so a concurrent writer's
            // change is kept rather than overwritten by the plan made from the earlier read.
            let written = store
                .guaranteed_update(namespace, &name, Part::Main, |current| {
                    Ok(match plan(kind, current, &expected) {
                        Plan::Update(next) => next,
                        _ => current.clone(),
                    })
                })
                .await;
            written.map_err(|err| anyhow::anyhow!("updating {}: {err}", what()))?;
            counts.updated += 1;
            Ok(())
        }
        Plan::Recreate => {
            match store
                .delete(namespace, &name, &DeleteOptions::default())
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => {}
                Err(err) => return Err(anyhow::anyhow!("deleting {}: {err}", what())),
            }
            counts.recreated += 1;
            create(store, namespace, expected, counts)
                .await
                .with_context(what)
        }
    }
}

async fn create(
    store: &ResourceStore,
    namespace: Option<&str>,
    expected: Value,
    counts: &mut ReconcileCounts,
) -> anyhow::Result<()> {
    match store.create(namespace, expected).await {
        Ok(_) => {
            counts.created += 1;
            Ok(())
        }
        // Another apiserver got there first; the next start reconciles its copy.
        Err(RegistryError::AlreadyExists { .. }) => Ok(()),
        Err(err) => Err(anyhow::anyhow!("creating: {err:?}")),
    }
}

fn plan(kind: Kind, existing: &Value, expected: &Value) -> Plan {
    if existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION.0].as_str() == Some("false") {
        return Plan::Protected;
    }
    let mut next = existing.clone();
    merge_map(&mut next, expected, "labels");
    merge_map(&mut next, expected, "annotations");
    match kind {
        Kind::Role => reconcile_rules(&mut next, expected),
        Kind::Binding => {
            let existing_ref: Option<RoleRef> = parse(&existing["roleRef"]);
            let expected_ref: Option<RoleRef> = parse(&expected["roleRef"]);
            if existing_ref != expected_ref {
                return Plan::Recreate;
            }
            reconcile_subjects(&mut next, expected);
        }
    }
    if &next == existing {
        Plan::Nothing
    } else {
        Plan::Update(next)
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: &Value) -> Option<T> {
    if v.is_null() {
        return None;
    }
    serde_json::from_value(v.clone()).ok()
}

fn set(object: &mut Value, field: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        map.insert(field.to_string(), value);
    }
}

/// Adds the expected labels or annotations the object lacks; its own values win.
fn merge_map(next: &mut Value, expected: &Value, field: &str) {
    let Some(wanted) = expected["metadata"][field].as_object() else {
        return;
    };
    let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let entry = meta
        .entry(field.to_string())
        .or_insert_with(|| Value::Object(Default::default()));
    if !entry.is_object() {
        *entry = Value::Object(Default::default());
    }
    let map = entry.as_object_mut().expect("made an object above");
    for (k, v) in wanted {
        map.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// Rules are only ever added: the permissions the policy grants that the object's rules do
/// not cover, one atomic rule each as upstream appends them. Aggregation selectors likewise,
/// except that an object the policy does not aggregate loses its aggregation rule.
fn reconcile_rules(next: &mut Value, expected: &Value) {
    let have: Vec<PolicyRule> = parse(&next["rules"]).unwrap_or_default();
    let want: Vec<PolicyRule> = parse(&expected["rules"]).unwrap_or_default();
    let missing = uncovered_rules(&have, &want);
    if !missing.is_empty() {
        let mut rules = have;
        rules.extend(missing);
        set(next, "rules", json!(rules));
    }
    let have_agg: Option<AggregationRule> = parse(&next["aggregationRule"]);
    let want_agg: Option<AggregationRule> = parse(&expected["aggregationRule"]);
    match (have_agg, want_agg) {
        (Some(_), None) => {
            if let Some(map) = next.as_object_mut() {
                map.remove("aggregationRule");
            }
        }
        (have, Some(want)) => {
            let mut selectors: Vec<LabelSelector> = have
                .and_then(|a| a.cluster_role_selectors)
                .unwrap_or_default();
            let before = selectors.len();
            for s in want.cluster_role_selectors.unwrap_or_default() {
                if !selectors.contains(&s) {
                    selectors.push(s);
                }
            }
            if selectors.len() != before || next.get("aggregationRule").is_none() {
                let rule = AggregationRule {
                    cluster_role_selectors: Some(selectors),
                };
                set(next, "aggregationRule", json!(rule));
            }
        }
        (None, None) => {}
    }
}

/// The same subject, reading an absent and an empty apiGroup or namespace alike (the store
/// may default one where the policy leaves it out).
fn same_subject(a: &Subject, b: &Subject) -> bool {
    let norm = |s: &Option<String>| s.clone().unwrap_or_default();
    a.kind == b.kind
        && a.name == b.name
        && norm(&a.api_group) == norm(&b.api_group)
        && norm(&a.namespace) == norm(&b.namespace)
}

/// Subjects are only ever added.
fn reconcile_subjects(next: &mut Value, expected: &Value) {
    let mut have: Vec<Subject> = parse(&next["subjects"]).unwrap_or_default();
    let want: Vec<Subject> = parse(&expected["subjects"]).unwrap_or_default();
    let before = have.len();
    for s in want {
        if !have.iter().any(|h| same_subject(h, &s)) {
            have.push(s);
        }
    }
    if have.len() != before {
        set(next, "subjects", json!(have));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(rules: Value, annotations: Value) -> Value {
        json!({
            "metadata": {"name": "r", "annotations": annotations, "labels": {"a": "1"}},
            "rules": rules,
        })
    }

    #[test]
    fn roles_gain_missing_rules_and_keep_their_own() {
        let expected = role(
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
            json!({AUTOUPDATE_ANNOTATION.0: "true"}),
        );
        let existing = role(
            json!([
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            ]),
            json!({AUTOUPDATE_ANNOTATION.0: "true", "mine": "x"}),
        );
        let Plan::Update(next) = plan(Kind::Role, &existing, &expected) else {
            panic!("expected an update");
        };
        let rules: Vec<PolicyRule> = parse(&next["rules"]).unwrap();
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert_eq!(rules[2].verbs, vec!["list"]);
        assert_eq!(next["metadata"]["annotations"]["mine"], "x");
        // Once reconciled, nothing more to do.
        assert_eq!(plan(Kind::Role, &next, &expected), Plan::Nothing);
    }

    #[test]
    fn opted_out_objects_are_left_alone() {
        let expected = role(
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            json!({}),
        );
        let existing = role(json!([]), json!({AUTOUPDATE_ANNOTATION.0: "false"}));
        assert_eq!(plan(Kind::Role, &existing, &expected), Plan::Protected);
    }

    #[test]
    fn bindings_gain_subjects_and_are_recreated_for_a_new_role_ref() {
        let binding = |role: &str, subjects: Value| {
            json!({
                "metadata": {"name": "b"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
                "subjects": subjects,
            })
        };
        let g = |n: &str| json!({"apiGroup": GROUP, "kind": "Group", "name": n});
        let expected = binding("view", json!([g("a"), g("b")]));
        let existing = binding("view", json!([g("c"), g("a")]));
        let Plan::Update(next) = plan(Kind::Binding, &existing, &expected) else {
            panic!("expected an update");
        };
        assert_eq!(next["subjects"], json!([g("c"), g("a"), g("b")]));
        let other = binding("edit", json!([g("a"), g("b")]));
        assert_eq!(plan(Kind::Binding, &other, &expected), Plan::Recreate);
        // A service account subject stored with an empty apiGroup is the same subject.
        let sa = json!({"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"});
        let mut stored_sa = sa.clone();
        stored_sa["apiGroup"] = json!("");
        assert_eq!(
            plan(
                Kind::Binding,
                &binding("view", json!([stored_sa])),
                &binding("view", json!([sa]))
            ),
            Plan::Nothing
        );
    }

    /// Against the registry: everything is created once, a second run writes nothing, and a
    /// changed object is mended as upstream does it.
    #[tokio::test]
    async fn reconciles_through_the_registry() {
        use crate::test_support::test_state;
        let t = test_state().await;
        let state = &t.state;
        let total = bootstrap_cluster_roles().len()
            + bootstrap_cluster_role_bindings().len()
            + bootstrap_roles().len()
            + bootstrap_role_bindings().len();
        let first = reconcile_with_counts(state).await.unwrap();
        assert_eq!(first.created, total, "{first:?}");
        let namespaces = state.store("", "v1", "namespaces").unwrap();
        namespaces.get(None, "kube-public").await.unwrap();

        let revision = state.backend.current_revision().await.unwrap();
        let second = reconcile_with_counts(state).await.unwrap();
        assert_eq!(second, ReconcileCounts::default());
        assert_eq!(state.backend.current_revision().await.unwrap(), revision);

        let cluster_roles = state.store(GROUP, VERSION, "clusterroles").unwrap();
        let bindings = state.store(GROUP, VERSION, "clusterrolebindings").unwrap();
        // Rules removed by hand come back; a label added by hand stays.
        cluster_roles
            .guaranteed_update(None, "system:node-proxier", Part::Main, |current| {
                let mut next = current.clone();
                next["rules"] = json!([]);
                next["metadata"]["labels"]["mine"] = json!("yes");
                Ok(next)
            })
            .await
            .unwrap();
        // An opted-out role keeps what it was given.
        cluster_roles
            .guaranteed_update(None, "view", Part::Main, |current| {
                let mut next = current.clone();
                next["metadata"]["annotations"][AUTOUPDATE_ANNOTATION.0] = json!("false");
                next["aggregationRule"] = Value::Null;
                Ok(next)
            })
            .await
            .unwrap();
        // A binding to another role is replaced.
        bindings
            .delete(None, "system:monitoring", &DeleteOptions::default())
            .await
            .unwrap();
        bindings
            .create(
                None,
                json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "system:monitoring"},
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
                    "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": "extra"}],
                }),
            )
            .await
            .unwrap();

        let third = reconcile_with_counts(state).await.unwrap();
        assert_eq!(
            third,
            ReconcileCounts {
                created: 1,
                updated: 1,
                recreated: 1,
                protected: 1,
            }
        );
        let proxier = cluster_roles
            .get(None, "system:node-proxier")
            .await
            .unwrap();
        assert_eq!(proxier["metadata"]["labels"]["mine"], "yes");
        let have: Vec<PolicyRule> = parse(&proxier["rules"]).unwrap();
        let want = bootstrap_cluster_roles()
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some("system:node-proxier"))
            .unwrap()
            .rules
            .unwrap();
        assert!(uncovered_rules(&have, &want).is_empty());
        let view = cluster_roles.get(None, "view").await.unwrap();
        assert!(view.get("aggregationRule").is_none_or(Value::is_null));
        let monitoring = bindings.get(None, "system:monitoring").await.unwrap();
        assert_eq!(monitoring["roleRef"]["name"], "system:monitoring");
        assert_eq!(
            monitoring["subjects"],
            json!([{"apiGroup": GROUP, "kind": "Group", "name": "system:monitoring"}])
        );
    }
}
