//! Roles and ClusterRoles: their rules broken down to one resource (or URL) each, simple
//! rules on the same resource merged, sorted by the rule's Go string as upstream's
//! `rbac.CompactRules` and `SortableRuleSlice` do, then the `PolicyRule` table.

use super::writer::{PrefixWriter, annotations_multiline, arr, labels_multiline, obj, s, scalar};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq)]
struct Rule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    names: Vec<String>,
    urls: Vec<String>,
}

fn strings(v: &Value, field: &str) -> Vec<String> {
    arr(v, field).iter().map(|x| scalar(Some(x))).collect()
}

/// `rbac.BreakdownRule`.
fn breakdown(rule: &Value) -> Vec<Rule> {
    let verbs = strings(rule, "/verbs");
    let names = strings(rule, "/resourceNames");
    let mut out = Vec::new();
    for group in strings(rule, "/apiGroups") {
        for resource in strings(rule, "/resources") {
            let one = |names: Vec<String>| Rule {
                verbs: verbs.clone(),
                groups: vec![group.clone()],
                resources: vec![resource.clone()],
                names,
                urls: Vec::new(),
            };
            if names.is_empty() {
                out.push(one(Vec::new()));
            } else {
                out.extend(names.iter().map(|n| one(vec![n.clone()])));
            }
        }
    }
    for url in strings(rule, "/nonResourceURLs") {
        out.push(Rule {
            verbs: verbs.clone(),
            urls: vec![url],
            ..Rule::default()
        });
    }
    out
}

/// `rbac.CompactRules`: simple rules (one group, one resource, at most one name) on the same
/// target merged, their verbs in first-seen order.
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for rule in rules {
        let is_simple = rule.names.len() <= 1
            && rule.urls.is_empty()
            && rule.groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let same = simple.iter_mut().find(|r| {
            r.groups == rule.groups && r.resources == rule.resources && r.names == rule.names
        });
        match same {
            Some(existing) => {
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => simple.push(rule),
        }
    }
    out.extend(simple);
    out
}

fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// The generated `PolicyRule.String()`, which upstream sorts by.
fn go_string(r: &Rule) -> String {
    format!(
        "&PolicyRule{{Verbs:{},APIGroups:{},Resources:{},ResourceNames:{},NonResourceURLs:{},}}",
        go_list(&r.verbs),
        go_list(&r.groups),
        go_list(&r.resources),
        go_list(&r.names),
        go_list(&r.urls)
    )
}

/// `CombineResourceGroup`: `resource.group[/subresource]`.
fn combine(resources: &[String], groups: &[String]) -> String {
    let Some(first) = resources.first() else {
        return String::new();
    };
    let (resource, sub) = match first.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (first.as_str(), None),
    };
    let mut text = resource.to_owned();
    if let Some(g) = groups.first().filter(|g| !g.is_empty()) {
        text.push_str(&format!(".{g}"));
    }
    if let Some(sub) = sub {
        text.push_str(&format!("/{sub}"));
    }
    text
}

/// Role or ClusterRole.
pub fn role(role: &Value) -> String {
    let mut rules: Vec<Rule> = compact(arr(role, "/rules").iter().flat_map(breakdown).collect());
    rules.sort_by_cached_key(go_string);
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(role, "/metadata/name")));
    labels_multiline(&mut w, "", "Labels", obj(role, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(role, "/metadata/annotations"));
    w.write(0, "PolicyRule:\n");
    w.write(1, "Resources\tNon-Resource URLs\tResource Names\tVerbs\n");
    w.write(1, "---------\t-----------------\t--------------\t-----\n");
    for r in &rules {
        w.write(
            1,
            &format!(
                "{}\t{}\t{}\t{}\n",
                combine(&r.resources, &r.groups),
                go_list(&r.urls),
                go_list(&r.names),
                go_list(&r.verbs)
            ),
        );
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_broken_down_compacted_sorted() {
        let r = json!({"metadata": {"name": "r"}, "rules": [
            {"apiGroups": ["", "apps"], "resources": ["pods", "deployments/scale"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "get"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get"]},
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}
        ]});
        let text = role(&r);
        let rows: Vec<&str> = text.lines().skip(6).collect();
        assert_eq!(
            rows,
            vec![
                "  pods                    []                 []              [get list]",
                "                          [/healthz]         []              [get]",
                "  deployments/scale       []                 []              [get]",
                "  secrets                 []                 [a]             [get]",
                "  secrets                 []                 [b]             [get]",
                "  deployments.apps/scale  []                 []              [get]",
                "  pods.apps               []                 []              [get]",
            ]
        );
    }
}
