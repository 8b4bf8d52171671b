//! Whether one `PolicyRule` grants a request, as upstream's `RuleAllows` and the matchers of
//! `pkg/apis/rbac/v1/evaluation_helpers.go`.

use api_types::k8s_openapi::api::rbac::v1::PolicyRule;

use crate::http::request_info::RequestInfo;

/// The wildcard that matches every verb, group, resource or non-resource URL.
pub const ALL: &str = "*";

/// Whether `rule` grants `request`. Resource requests match verbs, API groups, resources
/// (with subresources) and resource names; other requests match verbs and non-resource URLs.
pub fn rule_allows(request: &RequestInfo, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &request.verb) {
        return false;
    }
    if request.is_resource_request {
        api_group_matches(rule, &request.api_group)
            && resource_matches_parts(rule, &request.resource, &request.subresource)
            && resource_name_matches(rule, &request.name)
    } else {
        non_resource_url_matches(rule, &request.path)
    }
}

/// Whether any of `rules` grants `request`.
pub fn rules_allow(request: &RequestInfo, rules: &[PolicyRule]) -> bool {
    rules.iter().any(|r| rule_allows(request, r))
}

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or_default()
}

/// `*` or the exact verb.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `*` or the exact group (`""` is the core group).
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|g| g == ALL || g == group)
}

/// `*`, the exact `resource` or `resource/subresource`, or `*/subresource` when the request
/// names a subresource. Upstream has no `resource/*` form: `pods/*` matches only a
/// subresource literally called `*`, so it is deliberately not treated as a wildcard here.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    list(&rule.resources).iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.strip_prefix("*/").is_some_and(|sub| sub == subresource))
    })
}

/// [`resource_matches`] for a request's resource and subresource, without building the
/// combined `resource/subresource` string (this runs for every rule of every request).
fn resource_matches_parts(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    list(&rule.resources).iter().any(|r| {
        r == ALL
            || (subresource.is_empty() && r == resource)
            || (!subresource.is_empty()
                && (r
                    .strip_prefix(resource)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|sub| sub == subresource)
                    || r.strip_prefix("*/").is_some_and(|sub| sub == subresource)))
    })
}

/// No resource names means any name; otherwise the request's name must be listed. A request
/// without a name (create, list, watch, deletecollection without a `metadata.name` field
/// selector) therefore never matches a rule with resource names.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || names.iter().any(|n| n == name)
}

/// `*`, the exact path, or a prefix ending in `*` (`/apis/*` matches `/apis/apps/v1`).
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    list(&rule.non_resource_urls)
        .iter()
        .any(|u| non_resource_url_covers(u, path))
}

/// Whether the rule URL `owner` (possibly ending in `*`) covers the path `path`, shared by
/// matching and the escalation check. Upstream trims every trailing `*` before the prefix test.
pub(crate) fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == ALL
        || owner == path
        || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| Some(s.iter().map(|x| x.to_string()).collect());
        PolicyRule {
            verbs: verbs.iter().map(|x| x.to_string()).collect(),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: if names.is_empty() { None } else { v(names) },
            non_resource_urls: None,
        }
    }

    #[test]
    fn resource_forms() {
        let cases = [
            (&["pods"][..], "pods", "", true),
            (&["pods"][..], "pods/log", "log", false),
            (&["pods/log"][..], "pods/log", "log", true),
            (&["*/log"][..], "pods/log", "log", true),
            (&["*/log"][..], "pods/status", "status", false),
            (&["*/log"][..], "pods", "", false),
            (&["*"][..], "pods/exec", "exec", true),
            // Not a wildcard upstream.
            (&["pods/*"][..], "pods/log", "log", false),
        ];
        for (resources, combined, sub, want) in cases {
            let r = rule(&["get"], &[""], resources, &[]);
            assert_eq!(
                resource_matches(&r, combined, sub),
                want,
                "{resources:?} vs {combined}"
            );
        }
    }

    #[test]
    fn names_and_urls() {
        let r = rule(&["get"], &[""], &["pods"], &["a"]);
        assert!(resource_name_matches(&r, "a"));
        assert!(!resource_name_matches(&r, "b"));
        assert!(!resource_name_matches(&r, ""));
        assert!(non_resource_url_covers("/apis/*", "/apis/apps"));
        assert!(non_resource_url_covers("/apis/*", "/apis/"));
        assert!(!non_resource_url_covers("/apis/*", "/apis"));
        assert!(non_resource_url_covers("*", "/anything"));
        assert!(!non_resource_url_covers("/healthz", "/healthz/etcd"));
    }
}
