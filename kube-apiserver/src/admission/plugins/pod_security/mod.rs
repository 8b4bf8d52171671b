//! `PodSecurity`, as upstream's built-in Pod Security Admission: each namespace picks, by
//! label, the Pod Security Standards level it enforces (refusing pods that violate it), warns
//! about and audits; unlabelled namespaces are privileged.
//!
//! - Pods are checked on create and on updates that can change what is checked (images,
//!   seccomp annotations, containers added or removed, new ephemeral containers), including
//!   through subresources that carry the pod (`ephemeralcontainers`), not through `status`,
//!   `binding`, `exec` and the like.
//! - Workloads with a pod template (deployments, replicasets, statefulsets, daemonsets, jobs,
//!   cronjobs, replicationcontrollers, podtemplates) are only warned and audited about: their
//!   pods are refused when they are created.
//! - Namespaces must carry valid labels; tightening the enforce level reports the existing
//!   pods it would refuse.
//!
//! Admission has no channel for response warnings yet, so warnings go to the log at info
//! level; audit annotations are not produced.

pub mod checks;
pub mod levels;
pub mod namespace;

use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::rest::state::ApiState;
use api_types::validation::go_quote;
use async_trait::async_trait;
use checks::{evaluate, forbidden_detail};
use levels::{Policy, policy_from_labels};
use namespace::{NamespaceReview, existing_pod_warnings, review_namespace};
use serde_json::Value;

/// Requests PodSecurity lets through unchecked (upstream's `exemptions`; none by default).
#[derive(Debug, Clone, Default)]
pub struct Exemptions {
    pub usernames: Vec<String>,
    pub namespaces: Vec<String>,
    pub runtime_classes: Vec<String>,
}

#[derive(Debug, Default)]
pub struct PodSecurity {
    /// The policy of a namespace without labels.
    pub defaults: Policy,
    pub exemptions: Exemptions,
}

/// Pod subresources that cannot change what the checks look at.
const IGNORED_POD_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// What evaluating one pod or pod template under a namespace's policy gives.
#[derive(Debug, Default, PartialEq)]
pub struct Review {
    /// Why the pod is refused (the enforce level), as upstream's message after `is forbidden: `.
    pub refusal: Option<String>,
    /// What the warn level would refuse; empty when the pod is refused anyway.
    pub warnings: Vec<String>,
}

/// Evaluates a pod's `metadata` and `spec` against `policy`; the enforce level only when
/// `enforce` (pods, not workload templates).
pub fn review(policy: &Policy, meta: &Value, spec: &Value, enforce: bool) -> Review {
    let mut out = Review::default();
    if enforce {
        let violations = evaluate(policy.enforce.level, meta, spec);
        if !violations.is_empty() {
            out.refusal = Some(format!(
                "violates PodSecurity {}: {}",
                go_quote(&policy.enforce.to_string()),
                forbidden_detail(&violations)
            ));
            return out;
        }
    }
    let violations = evaluate(policy.warn.level, meta, spec);
    if !violations.is_empty() {
        out.warnings.push(format!(
            "would violate PodSecurity {}: {}",
            go_quote(&policy.warn.to_string()),
            forbidden_detail(&violations)
        ));
    }
    out
}

/// The pod template's `metadata` and `spec` of a workload object; None for other resources
/// and for a replication controller without a template.
pub fn pod_template<'a>(
    group: &str,
    plural: &str,
    object: &'a Value,
) -> Option<(&'a Value, &'a Value)> {
    let template = match (group, plural) {
        ("", "podtemplates") => &object["template"],
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => &object["spec"]["template"],
        ("batch", "cronjobs") => &object["spec"]["jobTemplate"]["spec"]["template"],
        _ => return None,
    };
    if template.is_null() && plural == "replicationcontrollers" {
        return None;
    }
    Some((&template["metadata"], &template["spec"]))
}

fn items(list: &Value) -> &[Value] {
    list.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Whether a pod update can change the outcome: the rest of a pod's spec is immutable.
pub fn significant_pod_update(pod: &Value, old: &Value) -> bool {
    const POD_SECCOMP: &str = "seccomp.security.alpha.kubernetes.io/pod";
    const CONTAINER_SECCOMP: &str = "container.seccomp.security.alpha.kubernetes.io/";
    let annotation = |p: &Value, key: &str| {
        p["metadata"]["annotations"][key]
            .as_str()
            .map(str::to_owned)
    };
    if annotation(pod, POD_SECCOMP) != annotation(old, POD_SECCOMP) {
        return true;
    }
    let container_changed = |c: &Value, o: &Value| {
        let seccomp = format!(
            "{CONTAINER_SECCOMP}{}",
            c["name"].as_str().unwrap_or_default()
        );
        c["image"] != o["image"] || annotation(pod, &seccomp) != annotation(old, &seccomp)
    };
    for key in ["containers", "initContainers"] {
        let (new, before) = (items(&pod["spec"][key]), items(&old["spec"][key]));
        if new.len() != before.len() || new.iter().zip(before).any(|(c, o)| container_changed(c, o))
        {
            return true;
        }
    }
    let before = items(&old["spec"]["ephemeralContainers"]);
    items(&pod["spec"]["ephemeralContainers"]).iter().any(|c| {
        match before.iter().find(|o| o["name"] == c["name"]) {
            Some(o) => container_changed(c, o),
            None => true,
        }
    })
}

impl PodSecurity {
    fn exempt_namespace(&self, namespace: &str) -> bool {
        !namespace.is_empty() && self.exemptions.namespaces.iter().any(|n| n == namespace)
    }

    fn exempt_user(&self, user: &str) -> bool {
        !user.is_empty() && self.exemptions.usernames.iter().any(|u| u == user)
    }

    fn exempt_runtime_class(&self, spec: &Value) -> bool {
        let class = spec["runtimeClassName"].as_str().unwrap_or_default();
        !class.is_empty() && self.exemptions.runtime_classes.iter().any(|c| c == class)
    }

    /// The labels of the request's namespace, from the watch cache or, for a namespace
    /// created a moment ago, from storage.
    async fn namespace_labels(attrs: &Attributes, state: &ApiState) -> Result<Value, ApiError> {
        let lookup_failed =
            || ApiError::internal(format!("failed to lookup namespace {}", attrs.namespace));
        if let Some(ns) = state.get("", "namespaces", None, &attrs.namespace) {
            return Ok(ns["metadata"]["labels"].clone());
        }
        let ns = state
            .store("", "v1", "namespaces")
            .ok_or_else(lookup_failed)?
            .get(None, &attrs.namespace)
            .await
            .map_err(|_| lookup_failed())?;
        Ok(ns["metadata"]["labels"].clone())
    }

    fn log_warnings(attrs: &Attributes, _name: &str, warnings: &[String]) {
        for warning in warnings {
            attrs.warnings.push(warning.clone());
        }
    }

    async fn validate_namespace(
        &self,
        attrs: &Attributes,
        object: &Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        match review_namespace(attrs.operation, object, old, self.defaults) {
            NamespaceReview::Allowed => Ok(()),
            NamespaceReview::Invalid(errors) => Err(ApiError::invalid(
                attrs.resource.group,
                attrs.resource.kind,
                object_name(attrs, Some(object)),
                &errors,
            )),
            NamespaceReview::CheckPods(enforce) => {
                let name = object_name(attrs, Some(object));
                if self.exempt_namespace(name) {
                    return Ok(());
                }
                let pods = state.list("", "pods", Some(name), &|_| true);
                let warnings = existing_pod_warnings(name, enforce, &pods, |class| {
                    self.exemptions.runtime_classes.iter().any(|c| c == class)
                });
                Self::log_warnings(attrs, name, &warnings);
                Ok(())
            }
        }
    }
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if !matches!(attrs.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        let Some(object) = object else {
            return Ok(());
        };
        let group = attrs.resource.group;
        let plural = attrs.resource.plural;
        if attrs.is("", "namespaces") {
            if !attrs.subresource.is_empty() {
                return Ok(());
            }
            return self.validate_namespace(attrs, object, old, state).await;
        }
        let is_pod = attrs.is("", "pods");
        let (meta, spec) = if is_pod {
            if IGNORED_POD_SUBRESOURCES.contains(&attrs.subresource.as_str()) {
                return Ok(());
            }
            (&object["metadata"], &object["spec"])
        } else {
            match pod_template(group, plural, object) {
                Some(template) if attrs.subresource.is_empty() => template,
                _ => return Ok(()),
            }
        };
        if self.exempt_namespace(&attrs.namespace) || self.exempt_user(&attrs.user.name) {
            return Ok(());
        }
        let labels = Self::namespace_labels(attrs, state).await?;
        let (policy, label_errors) = policy_from_labels(&labels, self.defaults);
        let nothing_to_check = if is_pod {
            policy.fully_privileged()
        } else {
            policy.warn.level == levels::Level::Privileged
        };
        if label_errors.is_empty() && nothing_to_check {
            return Ok(());
        }
        if is_pod
            && attrs.operation == Operation::Update
            && old.is_some_and(|old| !significant_pod_update(object, old))
        {
            return Ok(());
        }
        if self.exempt_runtime_class(spec) {
            return Ok(());
        }
        let name = object_name(attrs, Some(object));
        let outcome = review(&policy, meta, spec, is_pod);
        if let Some(refusal) = outcome.refusal {
            return Err(forbidden(attrs, name, &refusal));
        }
        Self::log_warnings(attrs, name, &outcome.warnings);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(enforce: &str, warn: &str) -> Policy {
        let labels = json!({
            levels::ENFORCE_LEVEL_LABEL: enforce,
            levels::WARN_LEVEL_LABEL: warn,
        });
        let (policy, errors) = policy_from_labels(&labels, Policy::default());
        assert!(errors.is_empty());
        policy
    }

    #[test]
    fn refusal_message_is_upstreams() {
        let spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        let out = review(&policy("restricted", "restricted"), &json!({}), &spec, true);
        assert_eq!(
            out.refusal.as_deref(),
            Some(
                r#"violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
            )
        );
        // A refused pod gets no warnings on top.
        assert!(out.warnings.is_empty());
        let err = ApiError::forbidden("", "pods", "x", out.refusal.as_deref().unwrap());
        assert!(
            err.message().starts_with(
                r#"pods "x" is forbidden: violates PodSecurity "restricted:latest": "#
            ),
            "{}",
            err.message()
        );
        assert_eq!(err.code().as_u16(), 403);
    }

    #[test]
    fn warn_level_warns_without_refusing() {
        let spec = json!({"hostPID": true, "containers": [{"name": "c"}]});
        let out = review(&policy("privileged", "baseline"), &json!({}), &spec, true);
        assert_eq!(out.refusal, None);
        assert_eq!(
            out.warnings,
            vec![r#"would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)"#]
        );
        // Templates are never refused, whatever the enforce level.
        let out = review(
            &policy("restricted", "privileged"),
            &json!({}),
            &spec,
            false,
        );
        assert_eq!(out, Review::default());
    }

    #[test]
    fn version_label_shows_in_the_message() {
        let labels = json!({
            levels::ENFORCE_LEVEL_LABEL: "baseline",
            levels::ENFORCE_VERSION_LABEL: "v1.29",
        });
        let (policy, _) = policy_from_labels(&labels, Policy::default());
        let spec = json!({"hostNetwork": true, "containers": []});
        let out = review(&policy, &json!({}), &spec, true);
        assert_eq!(
            out.refusal.as_deref(),
            Some(r#"violates PodSecurity "baseline:v1.29": host namespaces (hostNetwork=true)"#)
        );
    }

    #[test]
    fn templates_of_workloads() {
        let tpl =
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}});
        let deploy = json!({"spec": {"template": tpl}});
        let (meta, spec) = pod_template("apps", "deployments", &deploy).expect("template");
        assert_eq!(meta["labels"]["a"], "b");
        assert_eq!(spec["containers"][0]["name"], "c");
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": tpl}}}});
        let (_, spec) = pod_template("batch", "cronjobs", &cron).expect("template");
        assert_eq!(spec["containers"][0]["name"], "c");
        let podtemplate = json!({"template": tpl});
        assert!(pod_template("", "podtemplates", &podtemplate).is_some());
        assert!(pod_template("", "replicationcontrollers", &json!({"spec": {}})).is_none());
        assert!(
            pod_template(
                "",
                "replicationcontrollers",
                &json!({"spec": {"template": tpl}})
            )
            .is_some()
        );
        assert!(pod_template("", "services", &deploy).is_none());
        assert!(pod_template("extensions", "deployments", &deploy).is_none());
    }

    #[test]
    fn which_pod_updates_are_checked() {
        let pod = json!({
            "metadata": {"labels": {"a": "1"}, "annotations": {}},
            "spec": {
                "containers": [{"name": "c", "image": "nginx:1"}],
                "initContainers": [{"name": "i", "image": "busybox"}],
            },
        });
        let mut relabelled = pod.clone();
        relabelled["metadata"]["labels"]["a"] = json!("2");
        relabelled["spec"]["activeDeadlineSeconds"] = json!(5);
        assert!(!significant_pod_update(&relabelled, &pod));

        let mut new_image = pod.clone();
        new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(significant_pod_update(&new_image, &pod));

        let mut new_init_image = pod.clone();
        new_init_image["spec"]["initContainers"][0]["image"] = json!("alpine");
        assert!(significant_pod_update(&new_init_image, &pod));

        let mut seccomp = pod.clone();
        seccomp["metadata"]["annotations"]["container.seccomp.security.alpha.kubernetes.io/c"] =
            json!("unconfined");
        assert!(significant_pod_update(&seccomp, &pod));

        let mut debug = pod.clone();
        debug["spec"]["ephemeralContainers"] = json!([{"name": "dbg", "image": "busybox"}]);
        assert!(significant_pod_update(&debug, &pod));
        // The same ephemeral container again (e.g. a status write) is not significant.
        let mut again = debug.clone();
        again["metadata"]["labels"]["b"] = json!("x");
        assert!(!significant_pod_update(&again, &debug));
    }

    /// The plugin over a real state: namespaces read back from storage, refusals as Status.
    mod through_the_state {
        use super::*;
        use crate::http::auth::user::UserInfo;
        use crate::test_support::{TestState, test_state};

        async fn fixture(namespaces: &[(&str, Value)]) -> TestState {
            let test = test_state().await;
            let store = test
                .state
                .store("", "v1", "namespaces")
                .expect("namespaces");
            for (name, labels) in namespaces {
                store
                    .create(
                        None,
                        json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name, "labels": labels}}),
                    )
                    .await
                    .expect("namespace");
            }
            test
        }

        fn attrs(
            op: Operation,
            group: &str,
            plural: &str,
            sub: &str,
            ns: &str,
            name: &str,
        ) -> Attributes {
            Attributes {
                operation: op,
                resource: api_types::registry::by_group_resource(group, plural).expect("resource"),
                subresource: sub.to_string(),
                namespace: ns.to_string(),
                name: name.to_string(),
                user: UserInfo::default(),
                dry_run: false,
                warnings: Default::default(),
            }
        }

        fn bare_pod(name: &str) -> Value {
            json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        }

        #[tokio::test]
        async fn pods_are_refused_only_where_enforced() {
            let f = fixture(&[
                ("open", json!({})),
                ("locked", json!({levels::ENFORCE_LEVEL_LABEL: "restricted"})),
                ("warned", json!({levels::WARN_LEVEL_LABEL: "restricted"})),
            ])
            .await;
            let plugin = PodSecurity::default();
            let pod = bare_pod("p");
            for ns in ["open", "warned"] {
                let a = attrs(Operation::Create, "", "pods", "", ns, "p");
                assert!(
                    plugin
                        .validate(&a, Some(&pod), None, &f.state)
                        .await
                        .is_ok(),
                    "{ns}"
                );
            }
            let a = attrs(Operation::Create, "", "pods", "", "locked", "p");
            let err = plugin
                .validate(&a, Some(&pod), None, &f.state)
                .await
                .expect_err("refused");
            assert_eq!(err.code().as_u16(), 403);
            assert_eq!(err.reason(), "Forbidden");
            assert_eq!(
                err.message(),
                r#"pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
            );

            // Status writes and label changes of an existing pod are not checked again...
            let mut relabelled = pod.clone();
            relabelled["metadata"]["labels"] = json!({"x": "y"});
            let a = attrs(Operation::Update, "", "pods", "", "locked", "p");
            assert!(
                plugin
                    .validate(&a, Some(&relabelled), Some(&pod), &f.state)
                    .await
                    .is_ok()
            );
            let a = attrs(Operation::Update, "", "pods", "status", "locked", "p");
            assert!(
                plugin
                    .validate(&a, Some(&pod), Some(&pod), &f.state)
                    .await
                    .is_ok()
            );
            // ...but adding an ephemeral container is.
            let mut debugged = pod.clone();
            debugged["spec"]["ephemeralContainers"] = json!([{"name": "dbg", "image": "busybox"}]);
            let a = attrs(
                Operation::Update,
                "",
                "pods",
                "ephemeralcontainers",
                "locked",
                "p",
            );
            assert!(
                plugin
                    .validate(&a, Some(&debugged), Some(&pod), &f.state)
                    .await
                    .is_err()
            );

            // Workloads are never refused, only warned about.
            let deploy = json!({"metadata": {"name": "d"}, "spec": {"template": {
                "metadata": {}, "spec": pod["spec"].clone()}}});
            for ns in ["locked", "warned"] {
                let a = attrs(Operation::Create, "apps", "deployments", "", ns, "d");
                assert!(
                    plugin
                        .validate(&a, Some(&deploy), None, &f.state)
                        .await
                        .is_ok()
                );
            }
        }

        #[tokio::test]
        async fn namespace_labels_are_validated() {
            let f = fixture(&[]).await;
            let plugin = PodSecurity::default();
            let ns =
                json!({"metadata": {"name": "n", "labels": {levels::ENFORCE_LEVEL_LABEL: "foo"}}});
            let a = attrs(Operation::Create, "", "namespaces", "", "", "n");
            let err = plugin
                .validate(&a, Some(&ns), None, &f.state)
                .await
                .expect_err("invalid");
            assert_eq!(err.code().as_u16(), 422);
            assert_eq!(
                err.message(),
                r#"Namespace "n" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#
            );
            let ok = json!({"metadata": {"name": "n", "labels": {levels::ENFORCE_LEVEL_LABEL: "baseline"}}});
            assert!(plugin.validate(&a, Some(&ok), None, &f.state).await.is_ok());
            // A pod in a namespace that does not exist cannot be judged.
            let a = attrs(Operation::Create, "", "pods", "", "missing", "p");
            let err = plugin
                .validate(&a, Some(&bare_pod("p")), None, &f.state)
                .await
                .expect_err("no namespace");
            assert_eq!(err.code().as_u16(), 500);
        }
    }
}
