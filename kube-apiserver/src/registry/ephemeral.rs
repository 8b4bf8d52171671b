//! The pod `ephemeralcontainers` subresource's update validation (upstream's
//! `ValidatePodEphemeralContainersUpdate`): the rest of the pod is validated as any pod update
//! would be, ephemeral containers may only be added, and each needs a unique name and an image.

use super::strategy::Strategy;
use super::validate;
use api_types::validation::names::is_dns1123_label;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;

fn list<'a>(pod: &'a Value, key: &str) -> &'a [Value] {
    pod.pointer(&format!("/spec/{key}"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

/// Errors of `new`, an update of `old` through the subresource.
pub fn validate_update(strategy: &Strategy, new: &Value, old: &Value) -> ErrorList {
    // Everything but the ephemeral containers goes through pod update validation unchanged.
    let mut rest = new.clone();
    if let Some(spec) = rest.get_mut("spec").and_then(Value::as_object_mut) {
        match old.pointer("/spec/ephemeralContainers") {
            Some(list) => spec.insert("ephemeralContainers".into(), list.clone()),
            None => spec.remove("ephemeralContainers"),
        };
    }
    let mut errs = validate::on_update(strategy, &rest, old);
    let path = FieldPath::new("spec").child("ephemeralContainers");
    let added = list(new, "ephemeralContainers");
    // Patches do not keep the order, so existing containers are matched by name.
    for existing in list(old, "ephemeralContainers") {
        match added.iter().find(|c| name(c) == name(existing)) {
            None => errs.push(FieldError::forbidden(
                &path,
                format!(
                    "existing ephemeral containers {:?} may not be removed\n",
                    name(existing)
                ),
            )),
            Some(now) if now != existing => errs.push(FieldError::forbidden(
                &path.child(name(existing)),
                format!(
                    "existing ephemeral containers {:?} may not be changed\n",
                    name(existing)
                ),
            )),
            Some(_) => {}
        }
    }
    let mut seen: Vec<&str> = list(new, "containers")
        .iter()
        .chain(list(new, "initContainers"))
        .map(name)
        .collect();
    let targets: Vec<&str> = list(new, "containers").iter().map(name).collect();
    for (i, c) in added.iter().enumerate() {
        let at = path.index(i);
        let n = name(c);
        if n.is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        } else {
            for problem in is_dns1123_label(n) {
                errs.push(FieldError::invalid(&at.child("name"), n, problem));
            }
            if seen.contains(&n) {
                errs.push(FieldError::duplicate(&at.child("name"), n));
            }
            seen.push(n);
        }
        if c.get("image")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            errs.push(FieldError::required(&at.child("image"), ""));
        }
        if let Some(target) = c.get("targetContainerName").and_then(Value::as_str)
            && !target.is_empty()
            && !targets.contains(&target)
        {
            errs.push(FieldError::not_found(
                &at.child("targetContainerName"),
                target,
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Part;
    use api_types::registry::by_group_version_resource;
    use serde_json::json;

    fn pod(ephemeral: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "3"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], "ephemeralContainers": ephemeral},
        })
    }

    fn errors(new: &Value, old: &Value) -> Vec<String> {
        let s = Strategy::for_resource(by_group_version_resource("", "v1", "pods").unwrap());
        let mut new = new.clone();
        s.prepare_for_update(&mut new, old, Part::EphemeralContainers);
        validate_update(&s, &new, old)
            .iter()
            .map(|e| format!("{}: {:?}", e.field, e.error_type))
            .collect()
    }

    #[test]
    fn only_additions_pass() {
        let old = pod(json!([{"name": "e1", "image": "busybox"}]));
        let added = pod(json!([{"name": "e1", "image": "busybox"}, {"name": "e2", "image": "b"}]));
        assert!(errors(&added, &old).is_empty());
        // Whatever else the write says about the pod is not taken.
        let mut relabelled = added.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        relabelled["spec"]["containers"][0]["image"] = json!("other");
        let s = Strategy::for_resource(by_group_version_resource("", "v1", "pods").unwrap());
        s.prepare_for_update(&mut relabelled, &old, Part::EphemeralContainers);
        assert!(relabelled["metadata"].get("labels").is_none());
        assert_eq!(relabelled["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(relabelled["spec"]["ephemeralContainers"][1]["name"], "e2");

        let removed = pod(json!([]));
        assert_eq!(errors(&removed, &old).len(), 1);
        let changed = pod(json!([{"name": "e1", "image": "other"}]));
        assert_eq!(errors(&changed, &old).len(), 1);
        let clash = pod(json!([{"name": "e1", "image": "busybox"}, {"name": "app", "image": "b"}]));
        assert_eq!(errors(&clash, &old).len(), 1);
        let bad = pod(
            json!([{"name": "e1", "image": "busybox"}, {"name": "x", "targetContainerName": "nope"}]),
        );
        assert_eq!(errors(&bad, &old).len(), 2, "{:?}", errors(&bad, &old));
    }
}
