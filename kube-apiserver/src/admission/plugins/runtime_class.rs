//! `RuntimeClass`: a pod naming a RuntimeClass (node.k8s.io) must name one that exists, and
//! takes from it the fixed overhead its sandbox costs (`spec.overhead`, which the scheduler and
//! quota add to the containers' requests) and where such sandboxes run (node selector and
//! tolerations). A pod may not bring an overhead of its own.

use super::quantity::Quantity;
use super::service_account::{child_object, fetch, items};
use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::{Map, Value};

const OVERHEAD_MISMATCH: &str =
    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";
const OVERHEAD_WITHOUT_CLASS: &str =
    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead";

#[derive(Debug, Default)]
pub struct RuntimeClass;

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || !attrs.is_main("", "pods") {
            return Ok(());
        }
        let name = object_name(attrs, Some(&*object)).to_string();
        let Some(class) = runtime_class(attrs, object, state).await? else {
            return Ok(());
        };
        set_overhead(object, &class)
            .and_then(|()| set_scheduling(object, &class))
            .map_err(|reason| forbidden(attrs, &name, &reason))
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        let Some(pod) = object else {
            return Ok(());
        };
        if attrs.operation != Operation::Create || !attrs.is_main("", "pods") {
            return Ok(());
        }
        let class = runtime_class(attrs, pod, state).await?;
        validate_overhead(pod, class.as_ref())
            .map_err(|reason| forbidden(attrs, object_name(attrs, Some(pod)), &reason))
    }
}

/// The pod's RuntimeClass (None when it names none); naming a missing one is refused.
async fn runtime_class(
    attrs: &Attributes,
    pod: &Value,
    state: &ApiState,
) -> Result<Option<Value>, ApiError> {
    let Some(class_name) = pod["spec"]["runtimeClassName"].as_str() else {
        return Ok(None);
    };
    match fetch(
        state,
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        None,
        class_name,
    )
    .await?
    {
        Some(class) => Ok(Some(class)),
        None => Err(forbidden(
            attrs,
            object_name(attrs, Some(pod)),
            &format!("pod rejected: RuntimeClass \"{class_name}\" not found"),
        )),
    }
}

/// Two resource lists hold the same amounts (`1000m` equals `1`; absent equals empty).
pub fn same_resources(a: &Value, b: &Value) -> bool {
    let empty = Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    a.len() == b.len()
        && a.iter().all(|(resource, amount)| {
            b.get(resource).is_some_and(|other| {
                match (Quantity::from_json(amount), Quantity::from_json(other)) {
                    (Some(x), Some(y)) => x == y,
                    _ => amount == other,
                }
            })
        })
}

/// Copies the class's fixed overhead into the pod, refusing a different one the pod gave.
pub fn set_overhead(pod: &mut Value, class: &Value) -> Result<(), String> {
    if class["overhead"].is_null() {
        return Ok(());
    }
    let fixed = &class["overhead"]["podFixed"];
    let given = &pod["spec"]["overhead"];
    if !given.is_null() && !same_resources(fixed, given) {
        return Err(OVERHEAD_MISMATCH.into());
    }
    let fixed = fixed.clone();
    if let Some(spec) = child_object(pod, "spec") {
        if fixed.is_null() {
            spec.remove("overhead");
        } else {
            spec.insert("overhead".into(), fixed);
        }
    }
    Ok(())
}

/// Adds the class's node selector (a pod requiring another value for one of its labels is
/// refused) and tolerations to the pod.
pub fn set_scheduling(pod: &mut Value, class: &Value) -> Result<(), String> {
    let scheduling = &class["scheduling"];
    if scheduling.is_null() {
        return Ok(());
    }
    let mut selector = pod["spec"]["nodeSelector"].as_object().cloned();
    if let Some(required) = scheduling["nodeSelector"].as_object() {
        let selector = selector.get_or_insert_with(Map::new);
        for (key, value) in required {
            if let Some(own) = selector.get(key)
                && own != value
            {
                return Err(format!(
                    "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                    value.as_str().unwrap_or_default(),
                    own.as_str().unwrap_or_default()
                ));
            }
            selector.insert(key.clone(), value.clone());
        }
    }
    let own: Vec<Value> = items(&pod["spec"]["tolerations"]).cloned().collect();
    let extra: Vec<Value> = items(&scheduling["tolerations"]).cloned().collect();
    let merged = merge_tolerations(&own, &extra);
    let Some(spec) = child_object(pod, "spec") else {
        return Ok(());
    };
    if let Some(selector) = selector {
        spec.insert("nodeSelector".into(), Value::Object(selector));
    }
    if !merged.is_empty() {
        spec.insert("tolerations".into(), Value::Array(merged));
    }
    Ok(())
}

/// The validating phase's view: the pod's overhead is exactly its class's, and a pod whose
/// class defines none (or that has no class) has none.
pub fn validate_overhead(pod: &Value, class: Option<&Value>) -> Result<(), String> {
    let given = &pod["spec"]["overhead"];
    match class.map(|c| &c["overhead"]).filter(|o| !o.is_null()) {
        Some(overhead) if !same_resources(&overhead["podFixed"], given) => {
            Err(OVERHEAD_MISMATCH.into())
        }
        Some(_) => Ok(()),
        None if !given.is_null() => Err(OVERHEAD_WITHOUT_CLASS.into()),
        None => Ok(()),
    }
}

/// A toleration's fields, absent ones empty.
#[derive(Debug, PartialEq)]
struct Toleration<'a> {
    key: &'a str,
    operator: &'a str,
    value: &'a str,
    effect: &'a str,
    seconds: Option<i64>,
}

impl<'a> Toleration<'a> {
    fn of(t: &'a Value) -> Self {
        let s = |f: &str| t[f].as_str().unwrap_or_default();
        Toleration {
            key: s("key"),
            operator: s("operator"),
            value: s("value"),
            effect: s("effect"),
            seconds: t["tolerationSeconds"].as_i64(),
        }
    }

    /// Whether `self` tolerates everything `t` does.
    fn covers(&self, t: &Toleration<'_>) -> bool {
        if self == t {
            return true;
        }
        if t.key != self.key && !(self.key.is_empty() && self.operator == "Exists") {
            return false;
        }
        if t.effect != self.effect && !self.effect.is_empty() {
            return false;
        }
        if self.effect == "NoExecute"
            && let Some(limit) = self.seconds
            && t.seconds.is_none_or(|s| s > limit)
        {
            return false;
        }
        match self.operator {
            // An empty operator means Equal.
            "Equal" | "" => matches!(t.operator, "Equal" | "") && t.value == self.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// Both lists in order, without the tolerations another one already covers (of equal ones,
/// the first stays).
pub fn merge_tolerations(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let parsed: Vec<Toleration<'_>> = all.iter().map(|t| Toleration::of(t)).collect();
    let mut kept: Vec<usize> = Vec::new();
    for (i, t) in parsed.iter().enumerate() {
        let covered_by_kept = kept.iter().any(|&k| parsed[k].covers(t));
        let covered_later = parsed[i + 1..]
            .iter()
            .any(|later| later != t && later.covers(t));
        if !covered_by_kept && !covered_later {
            kept.push(i);
        }
    }
    kept.into_iter().map(|i| all[i].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(body: Value) -> Value {
        let mut c = json!({"metadata": {"name": "kata"}, "handler": "kata"});
        if let (Some(c), Some(body)) = (c.as_object_mut(), body.as_object()) {
            c.extend(body.clone());
        }
        c
    }

    #[test]
    fn overhead_is_copied_and_a_different_one_refused() {
        let kata = class(json!({"overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}}}));
        let mut pod = json!({"spec": {"runtimeClassName": "kata"}});
        assert_eq!(set_overhead(&mut pod, &kata), Ok(()));
        assert_eq!(
            pod["spec"]["overhead"],
            json!({"cpu": "250m", "memory": "120Mi"})
        );
        assert_eq!(validate_overhead(&pod, Some(&kata)), Ok(()));

        let mut same = json!({"spec": {"overhead": {"cpu": "0.25", "memory": "120Mi"}}});
        assert_eq!(set_overhead(&mut same, &kata), Ok(()));

        let mut other = json!({"spec": {"overhead": {"cpu": "1"}}});
        assert_eq!(
            set_overhead(&mut other, &kata),
            Err(OVERHEAD_MISMATCH.into())
        );
        assert_eq!(
            validate_overhead(&other, Some(&kata)),
            Err(OVERHEAD_MISMATCH.into())
        );
    }

    #[test]
    fn an_overhead_needs_a_class_that_defines_one() {
        let pod = json!({"spec": {"overhead": {"cpu": "1"}}});
        assert_eq!(
            validate_overhead(&pod, None),
            Err(OVERHEAD_WITHOUT_CLASS.into())
        );
        let plain = class(json!({}));
        assert_eq!(
            validate_overhead(&pod, Some(&plain)),
            Err(OVERHEAD_WITHOUT_CLASS.into())
        );
        assert_eq!(
            validate_overhead(&json!({"spec": {}}), Some(&plain)),
            Ok(())
        );
        let mut untouched = json!({"spec": {}});
        assert_eq!(set_overhead(&mut untouched, &plain), Ok(()));
        assert!(untouched["spec"].get("overhead").is_none());
    }

    #[test]
    fn node_selector_is_merged_and_conflicts_refused() {
        let kata = class(json!({"scheduling": {"nodeSelector": {"sandbox": "kata"}}}));
        let mut pod = json!({"spec": {"nodeSelector": {"zone": "a"}}});
        assert_eq!(set_scheduling(&mut pod, &kata), Ok(()));
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"zone": "a", "sandbox": "kata"})
        );

        let mut bare = json!({"spec": {}});
        assert_eq!(set_scheduling(&mut bare, &kata), Ok(()));
        assert_eq!(bare["spec"]["nodeSelector"], json!({"sandbox": "kata"}));

        let mut clash = json!({"spec": {"nodeSelector": {"sandbox": "gvisor"}}});
        assert_eq!(
            set_scheduling(&mut clash, &kata),
            Err("conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor".into())
        );
    }

    #[test]
    fn tolerations_are_appended_without_redundant_ones() {
        let kata = class(json!({"scheduling": {"tolerations": [
            {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dup", "operator": "Equal", "value": "x"},
        ]}}));
        let mut pod = json!({"spec": {"tolerations": [
            {"key": "dup", "operator": "Equal", "value": "x"},
            {"key": "sandbox", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
        ]}});
        assert_eq!(set_scheduling(&mut pod, &kata), Ok(()));
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "dup", "operator": "Equal", "value": "x"},
                {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"},
            ])
        );
    }

    #[test]
    fn toleration_coverage_follows_upstream() {
        let all = json!({"operator": "Exists"});
        let specific = json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute",
            "tolerationSeconds": 10});
        let shorter = json!({"key": "k", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 5});
        assert!(Toleration::of(&all).covers(&Toleration::of(&specific)));
        // A bounded NoExecute toleration does not cover a longer one.
        assert!(!Toleration::of(&shorter).covers(&Toleration::of(&specific)));
        assert_eq!(
            merge_tolerations(std::slice::from_ref(&specific), std::slice::from_ref(&all)),
            vec![all.clone()]
        );
        assert_eq!(
            merge_tolerations(&[specific.clone(), shorter.clone()], &[]),
            vec![specific, shorter]
        );
    }

    mod through_the_state {
        use super::super::super::service_account::fixture::{attrs, fixture};
        use super::*;

        #[tokio::test]
        async fn the_class_must_exist_and_is_applied() {
            let f = fixture().await;
            f.create(
                "node.k8s.io",
                "runtimeclasses",
                None,
                json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                       "metadata": {"name": "kata"}, "handler": "kata",
                       "overhead": {"podFixed": {"cpu": "250m"}}}),
            )
            .await;
            let a = attrs(Operation::Create, "", "pods", "ns", "p");
            let mut pod = json!({"metadata": {"name": "p"}, "spec": {"runtimeClassName": "kata"}});
            RuntimeClass
                .admit(&a, &mut pod, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m"}));
            RuntimeClass
                .validate(&a, Some(&pod), None, &f.state)
                .await
                .expect("valid");

            let mut ghost =
                json!({"metadata": {"name": "p"}, "spec": {"runtimeClassName": "ghost"}});
            let err = RuntimeClass
                .admit(&a, &mut ghost, None, &f.state)
                .await
                .expect_err("refused");
            assert_eq!(err.code().as_u16(), 403);
            assert_eq!(
                err.message(),
                "pods \"p\" is forbidden: pod rejected: RuntimeClass \"ghost\" not found"
            );
        }
    }
}
