//! `kubectl auth can-i --list`: the SelfSubjectRulesReview's rules, broken down to one resource
//! (or URL) per row, merged per resource, and sorted as upstream sorts them.

use serde_json::Value;

/// One printed row.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub names: Vec<String>,
    pub urls: Vec<String>,
    pub verbs: Vec<String>,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Go's `%v` of a string slice.
fn go_list(values: &[String]) -> String {
    format!("[{}]", values.join(" "))
}

impl Rule {
    /// Upstream orders rules by their generated `String()`, whose first field is the verbs.
    fn sort_key(&self) -> String {
        format!(
            "&PolicyRule{{Verbs:{},APIGroups:{},Resources:{},ResourceNames:{},NonResourceURLs:{},}}",
            go_list(&self.verbs),
            go_list(&self.groups),
            go_list(&self.resources),
            go_list(&self.names),
            go_list(&self.urls)
        )
    }

    fn resource_column(&self) -> String {
        let mut parts = Vec::new();
        for resource in &self.resources {
            for group in &self.groups {
                parts.push(if group.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}.{group}")
                });
            }
        }
        parts.join(", ")
    }
}

/// The rows for a review's `status`.
pub fn rows(status: &Value) -> Vec<Rule> {
    let mut resource_rules: Vec<Rule> = Vec::new();
    for rule in status["resourceRules"].as_array().into_iter().flatten() {
        let verbs = strings(&rule["verbs"]);
        let names = strings(&rule["resourceNames"]);
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                let per_name: Vec<Vec<String>> = if names.is_empty() {
                    vec![Vec::new()]
                } else {
                    names.iter().map(|n| vec![n.clone()]).collect()
                };
                for names in per_name {
                    let broken = Rule {
                        groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        names,
                        urls: Vec::new(),
                        verbs: verbs.clone(),
                    };
                    // Rules on the same resource merge their verbs.
                    match resource_rules.iter_mut().find(|r| {
                        r.groups == broken.groups
                            && r.resources == broken.resources
                            && r.names == broken.names
                    }) {
                        Some(existing) => existing.verbs.extend(broken.verbs),
                        None => resource_rules.push(broken),
                    }
                }
            }
        }
    }
    let mut all = resource_rules;
    for rule in status["nonResourceRules"].as_array().into_iter().flatten() {
        let verbs = strings(&rule["verbs"]);
        for url in strings(&rule["nonResourceURLs"]) {
            all.push(Rule {
                groups: Vec::new(),
                resources: Vec::new(),
                names: Vec::new(),
                urls: vec![url],
                verbs: verbs.clone(),
            });
        }
    }
    all.sort_by_cached_key(Rule::sort_key);
    all
}

/// The table, as upstream's tabwriter prints it.
pub fn table(rules: &[Rule], headers: bool) -> String {
    let mut rows = Vec::new();
    if headers {
        rows.push(
            ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"]
                .map(String::from)
                .to_vec(),
        );
    }
    for rule in rules {
        rows.push(vec![
            rule.resource_column(),
            go_list(&rule.urls),
            go_list(&rule.names),
            go_list(&rule.verbs),
        ]);
    }
    crate::cmd::config::tabulate(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn breaks_down_merges_and_sorts() {
        let status = json!({
            "resourceRules": [
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"]},
                {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            ],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}],
        });
        let printed = table(&rows(&status), true);
        // "[get list]" sorts before "[get]", and an empty resource list before "[secrets]".
        let want = "Resources   Non-Resource URLs   Resource Names   Verbs\n\
                    *.*         []                  []               [*]\n\
                    pods        []                  []               [get list]\n\
                    \x20           [/api/*]            []               [get]\n\
                    \x20           [/api]              []               [get]\n\
                    secrets     []                  []               [get]\n";
        assert_eq!(printed, want);
    }
}
