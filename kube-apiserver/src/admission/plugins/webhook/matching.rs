//! Whether a request is sent to a webhook: its rules, namespace selector and object selector,
//! as upstream's `rules.Matcher`, `namespace.Matcher` and `object.Matcher`.

use super::config::{GROUP, Rule, Webhook};
use crate::admission::{Attributes, Operation};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use api_types::labels::Labels;
use serde_json::Value;

/// The labels of an object's metadata.
struct ObjectLabels<'a>(&'a Value);

impl Labels for ObjectLabels<'_> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.0["metadata"]["labels"][key].as_str()
    }
}

/// Writes of the webhook and policy configurations never reach webhooks, so a broken webhook
/// cannot lock the cluster out of repairing its own admission setup.
pub fn exempt(attrs: &Attributes) -> bool {
    attrs.resource.group == GROUP
}

/// Whether `list` holds `value` or the wildcard `*`.
fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// Whether one rule matches the request. `exact` is `matchPolicy: Exact`; under `Equivalent`
/// the version is not compared, because every version of a resource we serve is the same
/// stored resource (upstream converts the object to the version the rule names; we send the
/// version served).
pub fn rule_matches(rule: &Rule, attrs: &Attributes, exact: bool) -> bool {
    let resource = attrs.resource;
    listed(&rule.operations, attrs.operation.as_str())
        && listed(&rule.api_groups, resource.group)
        && (!exact || listed(&rule.api_versions, resource.version))
        && resource_listed(&rule.resources, resource.plural, &attrs.subresource)
        && scope_matches(rule.scope.as_deref(), resource.namespaced)
}

/// `pods` is the main resource only, `pods/status` one subresource, `pods/*` the resource and
/// all its subresources, `*` every main resource, `*/status` that subresource of all, `*/*`
/// everything.
fn resource_listed(resources: &[String], plural: &str, subresource: &str) -> bool {
    resources.iter().any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
        (res == "*" || res == plural) && (sub == "*" || sub == subresource)
    })
}

/// `Cluster` matches cluster-scoped resources (namespaces included), `Namespaced` namespaced
/// ones, `*` or no scope everything.
fn scope_matches(scope: Option<&str>, namespaced: bool) -> bool {
    match scope {
        Some("Cluster") => !namespaced,
        Some("Namespaced") => namespaced,
        _ => true,
    }
}

/// Whether any rule of the webhook matches.
pub fn rules_match(hook: &Webhook, attrs: &Attributes) -> bool {
    hook.rules
        .iter()
        .any(|rule| rule_matches(rule, attrs, hook.exact))
}

fn is_namespace(attrs: &Attributes) -> bool {
    attrs.is("", "namespaces")
}

/// The namespace selector. Cluster-scoped objects other than namespaces always match; a
/// namespace matches on its own labels (the new object's on create and update, since the
/// cache does not hold it yet); anything else on the labels of its namespace. A namespace the
/// cache does not know is upstream's 404.
pub fn namespace_matches(
    hook: &Webhook,
    attrs: &Attributes,
    object: Option<&Value>,
    lookup: &dyn ObjectLookup,
) -> Result<bool, ApiError> {
    let namespace = if is_namespace(attrs) {
        attrs.name.as_str()
    } else {
        attrs.namespace.as_str()
    };
    if namespace.is_empty() && !is_namespace(attrs) {
        return Ok(true);
    }
    if let Some(err) = &hook.namespace_selector_error {
        return Err(ApiError::internal(err.clone()));
    }
    if hook.namespace_selector.is_empty() {
        return Ok(true);
    }
    let writes_itself = is_namespace(attrs)
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update);
    if writes_itself && let Some(object) = object {
        return Ok(hook.namespace_selector.matches(&ObjectLabels(object)));
    }
    match lookup.get("", "namespaces", None, namespace) {
        Some(ns) => Ok(hook.namespace_selector.matches(&ObjectLabels(&ns))),
        None => Err(ApiError::not_found("", "namespaces", namespace)),
    }
}

/// The object selector: the new object's labels or the old object's.
pub fn object_matches(hook: &Webhook, object: Option<&Value>, old: Option<&Value>) -> bool {
    if hook.object_selector.is_empty() {
        return true;
    }
    [object, old]
        .into_iter()
        .flatten()
        .any(|o| hook.object_selector.matches(&ObjectLabels(o)))
}

/// Whether the request goes to the webhook (rules first, so a selector's lookup error only
/// surfaces for webhooks the request is otherwise for, as upstream).
pub fn should_call(
    hook: &Webhook,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    lookup: &dyn ObjectLookup,
) -> Result<bool, ApiError> {
    if !rules_match(hook, attrs) || !object_matches(hook, object, old) {
        return Ok(false);
    }
    namespace_matches(hook, attrs, object, lookup)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::admission::plugins::webhook::config::parse;
    use crate::http::auth::user::UserInfo;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Arc;

    /// An in-memory [`ObjectLookup`] keyed by (group, plural).
    #[derive(Default)]
    pub(crate) struct FakeLookup {
        pub objects: HashMap<(String, String), Vec<Value>>,
    }

    impl FakeLookup {
        pub(crate) fn with(mut self, group: &str, plural: &str, object: Value) -> Self {
            self.objects
                .entry((group.to_string(), plural.to_string()))
                .or_default()
                .push(object);
            self
        }
    }

    impl ObjectLookup for FakeLookup {
        fn get(
            &self,
            group: &str,
            plural: &str,
            namespace: Option<&str>,
            name: &str,
        ) -> Option<Arc<Value>> {
            self.list(group, plural, namespace, &|o| {
                o["metadata"]["name"].as_str() == Some(name)
            })
            .into_iter()
            .next()
        }

        fn list(
            &self,
            group: &str,
            plural: &str,
            namespace: Option<&str>,
            filter: &(dyn Fn(&Value) -> bool + Send + Sync),
        ) -> Vec<Arc<Value>> {
            self.objects
                .get(&(group.to_string(), plural.to_string()))
                .into_iter()
                .flatten()
                .filter(|o| {
                    namespace.is_none_or(|ns| o["metadata"]["namespace"].as_str() == Some(ns))
                })
                .filter(|o| filter(o))
                .map(|o| Arc::new(o.clone()))
                .collect()
        }
    }

    pub(crate) fn attrs(
        op: Operation,
        group: &str,
        plural: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            operation: op,
            resource: api_types::registry::by_group_resource(group, plural).expect(plural),
            subresource: sub.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            user: UserInfo {
                name: "alice".into(),
                uid: "u-1".into(),
                groups: vec!["devs".into(), "system:authenticated".into()],
                extra: Default::default(),
            },
            dry_run: false,
            warnings: Default::default(),
        }
    }

    fn rule(ops: &[&str], groups: &[&str], versions: &[&str], res: &[&str], scope: &str) -> Rule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Rule {
            operations: v(ops),
            api_groups: v(groups),
            api_versions: v(versions),
            resources: v(res),
            scope: (!scope.is_empty()).then(|| scope.to_string()),
        }
    }

    #[test]
    fn rule_table() {
        use Operation::*;
        let pod = attrs(Create, "", "pods", "", "ns", "p");
        let pod_status = attrs(Update, "", "pods", "status", "ns", "p");
        let deploy = attrs(Create, "apps", "deployments", "", "ns", "d");
        let node = attrs(Create, "", "nodes", "", "", "n");
        let namespace = attrs(Create, "", "namespaces", "", "", "team");
        let cases: Vec<(Rule, &Attributes, bool, bool)> = vec![
            (
                rule(&["CREATE"], &[""], &["v1"], &["pods"], ""),
                &pod,
                true,
                true,
            ),
            (rule(&["*"], &["*"], &["*"], &["*"], "*"), &pod, true, true),
            (
                rule(&["UPDATE"], &[""], &["v1"], &["pods"], ""),
                &pod,
                true,
                false,
            ),
            (
                rule(&["CREATE"], &["apps"], &["v1"], &["pods"], ""),
                &pod,
                true,
                false,
            ),
            // `pods` and `*` are the main resource only.
            (
                rule(&["*"], &[""], &["v1"], &["pods"], ""),
                &pod_status,
                true,
                false,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["*"], ""),
                &pod_status,
                true,
                false,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["pods/status"], ""),
                &pod_status,
                true,
                true,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["pods/status"], ""),
                &pod,
                true,
                false,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["pods/*"], ""),
                &pod_status,
                true,
                true,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["pods/*"], ""),
                &pod,
                true,
                true,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["*/status"], ""),
                &pod_status,
                true,
                true,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*/*"], ""),
                &pod_status,
                true,
                true,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["services/status"], ""),
                &pod_status,
                true,
                false,
            ),
            // Versions: Exact compares them, Equivalent does not.
            (
                rule(&["*"], &["apps"], &["v1beta1"], &["deployments"], ""),
                &deploy,
                true,
                false,
            ),
            (
                rule(&["*"], &["apps"], &["v1beta1"], &["deployments"], ""),
                &deploy,
                false,
                true,
            ),
            (
                rule(&["*"], &["apps"], &["v1"], &["deployments"], ""),
                &deploy,
                true,
                true,
            ),
            // Scope.
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
                &pod,
                true,
                true,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Cluster"),
                &pod,
                true,
                false,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Cluster"),
                &node,
                true,
                true,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
                &node,
                true,
                false,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Cluster"),
                &namespace,
                true,
                true,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
                &namespace,
                true,
                false,
            ),
            // Empty lists match nothing.
            (rule(&[], &["*"], &["*"], &["*"], ""), &pod, true, false),
            (rule(&["*"], &["*"], &["*"], &[], ""), &pod, true, false),
        ];
        for (i, (rule, attrs, exact, want)) in cases.iter().enumerate() {
            assert_eq!(
                rule_matches(rule, attrs, *exact),
                *want,
                "case {i}: {rule:?}"
            );
        }
    }

    #[test]
    fn configuration_objects_are_exempt() {
        let a = attrs(
            Operation::Create,
            GROUP,
            "validatingwebhookconfigurations",
            "",
            "",
            "x",
        );
        assert!(exempt(&a));
        assert!(!exempt(&attrs(
            Operation::Create,
            "",
            "pods",
            "",
            "ns",
            "p"
        )));
    }

    fn hook_with(selectors: Value) -> Webhook {
        let mut hook = json!({"name": "h.example.com", "clientConfig": {"url": "https://h"},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]});
        hook.as_object_mut()
            .unwrap()
            .extend(selectors.as_object().unwrap().clone());
        parse(&hook).unwrap()
    }

    fn namespace(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}})
    }

    #[test]
    fn namespace_selector_reads_the_namespace_of_the_request() {
        let lookup = FakeLookup::default()
            .with("", "namespaces", namespace("prod", json!({"env": "prod"})))
            .with("", "namespaces", namespace("dev", json!({"env": "dev"})));
        let hook = hook_with(json!({"namespaceSelector": {"matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod"]}]}}));
        let pod = |ns: &str| attrs(Operation::Create, "", "pods", "", ns, "p");
        assert!(namespace_matches(&hook, &pod("prod"), None, &lookup).unwrap());
        assert!(!namespace_matches(&hook, &pod("dev"), None, &lookup).unwrap());
        let missing = namespace_matches(&hook, &pod("gone"), None, &lookup).unwrap_err();
        assert_eq!(missing.code().as_u16(), 404);
        assert_eq!(missing.message(), "namespaces \"gone\" not found");
        // Cluster-scoped objects are not subject to it.
        let node = attrs(Operation::Create, "", "nodes", "", "", "n");
        assert!(namespace_matches(&hook, &node, None, &lookup).unwrap());
    }

    #[test]
    fn a_namespace_matches_on_its_own_labels() {
        let lookup =
            FakeLookup::default().with("", "namespaces", namespace("prod", json!({"env": "prod"})));
        let hook = hook_with(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}));
        // Create: the new object's labels, the cache has nothing yet.
        let create = attrs(Operation::Create, "", "namespaces", "", "", "fresh");
        let new = namespace("fresh", json!({"env": "prod"}));
        assert!(namespace_matches(&hook, &create, Some(&new), &lookup).unwrap());
        let other = namespace("fresh", json!({"env": "dev"}));
        assert!(!namespace_matches(&hook, &create, Some(&other), &lookup).unwrap());
        // Delete: the stored namespace's labels.
        let delete = attrs(Operation::Delete, "", "namespaces", "", "", "prod");
        assert!(namespace_matches(&hook, &delete, None, &lookup).unwrap());
    }

    #[test]
    fn object_selector_reads_new_or_old_labels() {
        let hook = hook_with(json!({"objectSelector": {"matchLabels": {"app": "web"}}}));
        let web = json!({"metadata": {"labels": {"app": "web"}}});
        let db = json!({"metadata": {"labels": {"app": "db"}}});
        let none = json!({"metadata": {}});
        assert!(object_matches(&hook, Some(&web), None));
        assert!(!object_matches(&hook, Some(&db), None));
        assert!(!object_matches(&hook, Some(&none), None));
        assert!(object_matches(&hook, Some(&db), Some(&web)));
        assert!(object_matches(&hook, None, Some(&web)));
        let any = hook_with(json!({}));
        assert!(object_matches(&any, Some(&none), None));
        let absent = hook_with(json!({"objectSelector": {"matchExpressions": [
            {"key": "skip", "operator": "DoesNotExist"}]}}));
        assert!(object_matches(&absent, Some(&web), None));
        assert!(!object_matches(
            &absent,
            Some(&json!({"metadata": {"labels": {"skip": ""}}})),
            None
        ));
    }
}
