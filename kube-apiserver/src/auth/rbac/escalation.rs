//! The escalation check, as upstream's `ConfirmNoEscalation` and `Covers`
//! (`pkg/registry/rbac/validation`): a user may write a Role, ClusterRole or binding only if
//! the rules they already hold cover every permission it grants.

use std::collections::BTreeSet;

use api_types::k8s_openapi::api::rbac::v1::PolicyRule;
use api_types::validation::go_quote;

use super::authorizer::rules_for;
use super::rule::{ALL, non_resource_url_covers};
use super::state::RbacState;
use crate::http::auth::user::UserInfo;

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or_default()
}

fn one(s: &str) -> Option<Vec<String>> {
    Some(vec![s.to_string()])
}

/// Whether `owner` rules cover every permission of `requested`.
pub fn covers(owner: &[PolicyRule], requested: &[PolicyRule]) -> bool {
    uncovered_rules(owner, requested).is_empty()
}

/// The atomic permissions of `requested` that no `owner` rule covers (empty when covered).
pub fn uncovered_rules(owner: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    requested
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// Splits a rule into single-permission rules: one group, resource, verb and (when listed)
/// resource name each, and one non-resource URL with one verb. Each of these is then either
/// wholly covered by some owner rule or not, which is what makes the comparison exact.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..Default::default()
                };
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(base);
                } else {
                    for name in names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

/// Whether `owner` covers every resource of `wanted`: `*`, exact, or `*/sub` for `res/sub`.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// Whether `owner` (any shape) covers `sub`, a rule from `breakdown_rule`.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resources_cover(list(&owner.resources), list(&sub.resources));
    let urls = list(&sub.non_resource_urls).iter().all(|path| {
        list(&owner.non_resource_urls)
            .iter()
            .any(|o| non_resource_url_covers(o, path))
    });
    // A rule limited to names never covers one that is not: the latter reaches every object.
    let owner_names = list(&owner.resource_names);
    let sub_names = list(&sub.resource_names);
    let names =
        owner_names.is_empty() || (!sub_names.is_empty() && has_all(owner_names, sub_names));
    verbs && groups && resources && urls && names
}

/// Checks that `user`, acting in `namespace` (empty for cluster scope), holds every permission
/// of `rules`; otherwise returns upstream's message listing what is missing.
pub fn confirm_no_escalation(
    state: &RbacState,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = rules_for(state, user, namespace);
    let missing = uncovered_rules(&owner, rules);
    if missing.is_empty() {
        return Ok(());
    }
    let descriptions: BTreeSet<String> =
        compact_rules(&missing).iter().map(compact_string).collect();
    let groups: Vec<String> = user.groups.iter().map(|g| go_quote(g)).collect();
    let mut msg = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        groups.join(" "),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(msg)
}

/// Merges single-group, single-resource rules that differ only in verbs (upstream's
/// `CompactRules`), so the message lists `Verbs:["get" "list"]` once per resource.
fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for r in rules {
        let simple = list(&r.api_groups).len() == 1
            && list(&r.resources).len() == 1
            && list(&r.non_resource_urls).is_empty();
        let existing = simple
            .then(|| {
                out.iter_mut().find(|o| {
                    o.api_groups == r.api_groups
                        && o.resources == r.resources
                        && o.resource_names == r.resource_names
                        && list(&o.non_resource_urls).is_empty()
                })
            })
            .flatten();
        match existing {
            Some(o) => {
                for v in &r.verbs {
                    if !o.verbs.contains(v) {
                        o.verbs.push(v.clone());
                    }
                }
            }
            None => out.push(r.clone()),
        }
    }
    out
}

/// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
pub fn compact_string(r: &PolicyRule) -> String {
    let q = |v: &[String]| {
        let items: Vec<String> = v.iter().map(|s| go_quote(s)).collect();
        format!("[{}]", items.join(" "))
    };
    let mut parts = Vec::new();
    for (label, v) in [
        ("APIGroups", list(&r.api_groups)),
        ("Resources", list(&r.resources)),
        ("NonResourceURLs", list(&r.non_resource_urls)),
        ("ResourceNames", list(&r.resource_names)),
        ("Verbs", r.verbs.as_slice()),
    ] {
        if !v.is_empty() {
            parts.push(format!("{label}:{}", q(v)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}
