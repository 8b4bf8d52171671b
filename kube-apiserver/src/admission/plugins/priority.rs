//! `Priority`: a new pod's `spec.priority` and `spec.preemptionPolicy` come from its
//! PriorityClass (or the cluster's global default class, or priority 0), and a pod may not
//! claim a priority or policy its class does not give. PriorityClasses: at most one global
//! default, and the `system-` names are the two built-in classes only.
//!
//! Upstream 1.17 dropped the rule that kept the system classes in `kube-system`: pods using
//! them elsewhere are limited by ResourceQuota (its default `limitedResources`) instead.

use super::service_account::{child_object, fetch};
use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::rest::state::ApiState;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

pub const SYSTEM_NODE_CRITICAL: &str = "system-node-critical";
pub const SYSTEM_CLUSTER_CRITICAL: &str = "system-cluster-critical";
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";
/// The priority of `system-cluster-critical`; `system-node-critical` is 1000 above.
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2_000_000_000;
/// Classes users create stay at or below this, under the system classes.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The priority of pods when no class is the global default.
pub const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: i64 = 0;
pub const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

const GROUP: &str = "scheduling.k8s.io";

/// The built-in classes, as upstream defines them; the apiserver creates them at start-up.
pub fn system_priority_classes() -> Vec<Value> {
    [
        (
            SYSTEM_NODE_CRITICAL,
            SYSTEM_CRITICAL_PRIORITY + 1000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            SYSTEM_CLUSTER_CRITICAL,
            SYSTEM_CRITICAL_PRIORITY,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ]
    .into_iter()
    .map(|(name, value, description)| {
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
            "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
        })
    })
    .collect()
}

#[derive(Debug, Default)]
pub struct Priority;

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if !attrs.is_main("", "pods") {
            return Ok(());
        }
        match (attrs.operation, old) {
            (Operation::Update, Some(old)) => {
                preserve_on_update(object, old);
                Ok(())
            }
            (Operation::Create, _) => {
                let resolved = resolve(attrs, object, state).await?;
                apply(object, &resolved)
                    .map_err(|reason| forbidden(attrs, object_name(attrs, Some(&*object)), &reason))
            }
            _ => Ok(()),
        }
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        let Some(class) = object else {
            return Ok(());
        };
        if !attrs.is_main(GROUP, "priorityclasses")
            || !matches!(attrs.operation, Operation::Create | Operation::Update)
        {
            return Ok(());
        }
        let name = object_name(attrs, Some(class));
        let errors = validate_reserved(class);
        if !errors.is_empty() {
            return Err(ApiError::invalid(GROUP, "PriorityClass", name, &errors));
        }
        if !is_global_default(class) {
            return Ok(());
        }
        let defaults = state.list(GROUP, "priorityclasses", None, &is_global_default);
        check_single_default(attrs.operation, name, global_default(&defaults))
            .map_err(|reason| forbidden(attrs, name, &reason))
    }
}

/// What a pod's class gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The class name to record (empty when no class applies).
    pub class_name: String,
    pub priority: i64,
    pub preemption_policy: String,
}

impl Resolved {
    /// What a class object gives. A class stored before the policy existed has none, which
    /// defaulting makes PreemptLowerPriority.
    pub fn from_class(class: &Value) -> Self {
        Resolved {
            class_name: class["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            priority: class["value"].as_i64().unwrap_or_default(),
            preemption_policy: class["preemptionPolicy"]
                .as_str()
                .unwrap_or(PREEMPT_LOWER_PRIORITY)
                .to_string(),
        }
    }

    /// What a pod naming no class gets: the global default class, else priority 0.
    pub fn default_from(default_class: Option<&Value>) -> Self {
        default_class
            .map(Self::from_class)
            .unwrap_or_else(|| Resolved {
                class_name: String::new(),
                priority: DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
                preemption_policy: PREEMPT_LOWER_PRIORITY.to_string(),
            })
    }
}

async fn resolve(attrs: &Attributes, pod: &Value, state: &ApiState) -> Result<Resolved, ApiError> {
    let class_name = pod["spec"]["priorityClassName"]
        .as_str()
        .unwrap_or_default();
    if class_name.is_empty() {
        let defaults = state.list(GROUP, "priorityclasses", None, &is_global_default);
        return Ok(Resolved::default_from(global_default(&defaults)));
    }
    match fetch(state, GROUP, "v1", "priorityclasses", None, class_name).await {
        Ok(Some(class)) => Ok(Resolved::from_class(&class)),
        Ok(None) => Err(forbidden(
            attrs,
            object_name(attrs, Some(pod)),
            &format!("no PriorityClass with name {class_name} was found"),
        )),
        Err(e) => Err(ApiError::internal(format!(
            "failed to get PriorityClass with name {class_name}: {}",
            e.message()
        ))),
    }
}

pub fn is_global_default(class: &Value) -> bool {
    class["globalDefault"].as_bool().unwrap_or(false)
}

/// The global default class. Two may exist after racing creates; the lower value wins, so
/// pods are never placed higher than someone meant.
pub fn global_default(classes: &[Arc<Value>]) -> Option<&Value> {
    classes
        .iter()
        .map(|c| c.as_ref())
        .filter(|c| is_global_default(c))
        .min_by_key(|c| c["value"].as_i64().unwrap_or_default())
}

/// Writes the resolved priority, class name and policy into a new pod, refusing a priority
/// or policy the pod gave that differs (the error is the 403's reason).
pub fn apply(pod: &mut Value, resolved: &Resolved) -> Result<(), String> {
    let spec = &pod["spec"];
    if let Some(given) = spec["priority"].as_i64()
        && given != resolved.priority
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
            resolved.priority
        ));
    }
    if let Some(given) = spec["preemptionPolicy"].as_str()
        && given != resolved.preemption_policy
    {
        return Err(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
            resolved.preemption_policy
        ));
    }
    let Some(spec) = child_object(pod, "spec") else {
        return Ok(());
    };
    if !resolved.class_name.is_empty() {
        spec.insert(
            "priorityClassName".into(),
            Value::from(resolved.class_name.clone()),
        );
    }
    spec.insert("priority".into(), Value::from(resolved.priority));
    spec.insert(
        "preemptionPolicy".into(),
        Value::from(resolved.preemption_policy.clone()),
    );
    Ok(())
}

/// An update that drops the priority or policy keeps the stored ones (validation refuses any
/// other change to them).
pub fn preserve_on_update(pod: &mut Value, old: &Value) {
    for field in ["priority", "preemptionPolicy"] {
        let kept = &old["spec"][field];
        if kept.is_null() || !pod["spec"][field].is_null() {
            continue;
        }
        let kept = kept.clone();
        if let Some(spec) = child_object(pod, "spec") {
            spec.insert(field.into(), kept);
        }
    }
}

/// A class becoming the global default while another one is (the error is the 403's reason).
pub fn check_single_default(
    operation: Operation,
    name: &str,
    existing: Option<&Value>,
) -> Result<(), String> {
    let Some(existing) = existing else {
        return Ok(());
    };
    let existing_name = existing["metadata"]["name"].as_str().unwrap_or_default();
    if operation == Operation::Create || existing_name != name {
        return Err(format!(
            "PriorityClass {existing_name} is already marked as default. Only one default can exist"
        ));
    }
    Ok(())
}

/// Upstream's validation of the reserved names and the user ceiling: a `system-` class must
/// be one of the built-in ones exactly, any other stays at or below the ceiling.
pub fn validate_reserved(class: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let name = class["metadata"]["name"].as_str().unwrap_or_default();
    let value = class["value"].as_i64().unwrap_or_default();
    if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
        if let Err(why) = known_system_class(name, value, is_global_default(class)) {
            errors.push(FieldError::forbidden(
                &FieldPath::new("metadata").child("name"),
                format!(
                    "priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: {why}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errors.push(FieldError::forbidden(
            &FieldPath::new("value"),
            format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    errors
}

fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    let system = system_priority_classes();
    let Some(known) = system.iter().find(|c| c["metadata"]["name"] == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    let known_value = known["value"].as_i64().unwrap_or_default();
    if known_value != value {
        return Err(format!(
            "value of {name} PriorityClass must be {known_value}"
        ));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i64, default: bool) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {"name": name},
            "value": value,
            "globalDefault": default,
            "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
        }))
    }

    #[test]
    fn system_classes_are_upstreams() {
        let classes = system_priority_classes();
        assert_eq!(classes[0]["metadata"]["name"], "system-node-critical");
        assert_eq!(classes[0]["value"], 2_000_001_000);
        assert_eq!(classes[1]["metadata"]["name"], "system-cluster-critical");
        assert_eq!(classes[1]["value"], 2_000_000_000);
        assert_eq!(
            classes[1]["description"],
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
        );
        for c in &classes {
            assert!(validate_reserved(c).is_empty(), "{c}");
        }
    }

    #[test]
    fn a_named_class_sets_priority_and_policy() {
        let mut never = (*class("batch", 100, false)).clone();
        never["preemptionPolicy"] = json!("Never");
        let mut pod = json!({"spec": {"priorityClassName": "batch"}});
        apply(&mut pod, &Resolved::from_class(&never)).expect("admitted");
        assert_eq!(pod["spec"]["priority"], 100);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        assert_eq!(pod["spec"]["priorityClassName"], "batch");
    }

    #[test]
    fn no_class_takes_the_lowest_global_default_or_zero() {
        let classes = vec![
            class("high", 1000, true),
            class("low", 10, true),
            class("other", 1, false),
        ];
        let resolved = Resolved::default_from(global_default(&classes));
        assert_eq!(resolved.class_name, "low");
        let mut pod = json!({"spec": {}});
        apply(&mut pod, &resolved).expect("admitted");
        assert_eq!(pod["spec"]["priorityClassName"], "low");
        assert_eq!(pod["spec"]["priority"], 10);

        let none = Resolved::default_from(global_default(&[class("other", 1, false)]));
        let mut pod = json!({"spec": {}});
        apply(&mut pod, &none).expect("admitted");
        assert_eq!(
            pod["spec"],
            json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"})
        );
    }

    #[test]
    fn a_class_without_a_policy_preempts() {
        let old = json!({"metadata": {"name": "old"}, "value": 5});
        assert_eq!(
            Resolved::from_class(&old).preemption_policy,
            PREEMPT_LOWER_PRIORITY
        );
    }

    #[test]
    fn a_pod_may_repeat_but_not_contradict_its_class() {
        let resolved = Resolved::from_class(&class("batch", 100, false));
        let mut same =
            json!({"spec": {"priority": 100, "preemptionPolicy": "PreemptLowerPriority"}});
        assert_eq!(apply(&mut same, &resolved), Ok(()));

        let mut other = json!({"spec": {"priority": 7}});
        assert_eq!(
            apply(&mut other, &resolved),
            Err("the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 100 from the given PriorityClass name".into())
        );
        let mut policy = json!({"spec": {"preemptionPolicy": "Never"}});
        assert_eq!(
            apply(&mut policy, &resolved),
            Err("the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name".into())
        );
    }

    #[test]
    fn updates_keep_the_stored_priority() {
        let old = json!({"spec": {"priority": 100, "preemptionPolicy": "Never"}});
        let mut pod = json!({"spec": {"containers": []}});
        preserve_on_update(&mut pod, &old);
        assert_eq!(pod["spec"]["priority"], 100);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");

        let mut changed = json!({"spec": {"priority": 5}});
        preserve_on_update(&mut changed, &old);
        assert_eq!(changed["spec"]["priority"], 5);
    }

    #[test]
    fn only_one_global_default() {
        let existing = class("def", 1, true);
        assert_eq!(check_single_default(Operation::Create, "x", None), Ok(()));
        assert_eq!(
            check_single_default(Operation::Create, "x", Some(&existing)),
            Err(
                "PriorityClass def is already marked as default. Only one default can exist".into()
            )
        );
        assert!(check_single_default(Operation::Update, "x", Some(&existing)).is_err());
        assert_eq!(
            check_single_default(Operation::Update, "def", Some(&existing)),
            Ok(())
        );
    }

    #[test]
    fn system_names_are_reserved_and_user_values_capped() {
        let body = |c: &Value| {
            validate_reserved(c)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            body(&class("system-mine", 5, false)),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        assert_eq!(
            body(&class(SYSTEM_NODE_CRITICAL, 5, false)),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"
            ]
        );
        assert_eq!(
            body(&class(
                SYSTEM_CLUSTER_CRITICAL,
                SYSTEM_CRITICAL_PRIORITY,
                true
            )),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-cluster-critical PriorityClass must be false"
            ]
        );
        assert_eq!(
            body(&class("big", HIGHEST_USER_DEFINABLE_PRIORITY + 1, false)),
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
            ]
        );
        assert!(body(&class("big", HIGHEST_USER_DEFINABLE_PRIORITY, false)).is_empty());
    }

    mod through_the_state {
        use super::super::super::service_account::fixture::{attrs, fixture};
        use super::*;

        fn stored_class(name: &str, value: i64, default: bool) -> Value {
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value, "globalDefault": default})
        }

        #[tokio::test]
        async fn pods_resolve_stored_classes_and_missing_ones_are_refused() {
            let f = fixture().await;
            f.create(
                GROUP,
                "priorityclasses",
                None,
                stored_class("high", 1000, false),
            )
            .await;
            f.create(
                GROUP,
                "priorityclasses",
                None,
                stored_class("base", 7, true),
            )
            .await;
            let a = attrs(Operation::Create, "", "pods", "ns", "p");

            let mut named =
                json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "high"}});
            Priority
                .admit(&a, &mut named, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(named["spec"]["priority"], 1000);
            assert_eq!(named["spec"]["preemptionPolicy"], PREEMPT_LOWER_PRIORITY);

            let mut plain = json!({"metadata": {"name": "p"}, "spec": {}});
            Priority
                .admit(&a, &mut plain, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(plain["spec"]["priorityClassName"], "base");
            assert_eq!(plain["spec"]["priority"], 7);

            let mut missing =
                json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}});
            let err = Priority
                .admit(&a, &mut missing, None, &f.state)
                .await
                .expect_err("refused");
            assert_eq!(err.code().as_u16(), 403);
            assert_eq!(
                err.message(),
                "pods \"p\" is forbidden: no PriorityClass with name nope was found"
            );
        }

        #[tokio::test]
        async fn a_second_global_default_is_refused() {
            let f = fixture().await;
            f.create(
                GROUP,
                "priorityclasses",
                None,
                stored_class("first", 1, true),
            )
            .await;
            let create = attrs(Operation::Create, GROUP, "priorityclasses", "", "second");
            let err = Priority
                .validate(
                    &create,
                    Some(&stored_class("second", 2, true)),
                    None,
                    &f.state,
                )
                .await
                .expect_err("refused");
            assert_eq!(
                err.message(),
                "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"
            );
            Priority
                .validate(
                    &create,
                    Some(&stored_class("second", 2, false)),
                    None,
                    &f.state,
                )
                .await
                .expect("not a default");
            let update = attrs(Operation::Update, GROUP, "priorityclasses", "", "first");
            let first = stored_class("first", 3, true);
            Priority
                .validate(&update, Some(&first), Some(&first), &f.state)
                .await
                .expect("the default itself may change");

            let reserved = attrs(Operation::Create, GROUP, "priorityclasses", "", "system-x");
            let err = Priority
                .validate(
                    &reserved,
                    Some(&stored_class("system-x", 1, false)),
                    None,
                    &f.state,
                )
                .await
                .expect_err("reserved");
            assert_eq!(err.code().as_u16(), 422);
        }
    }
}
