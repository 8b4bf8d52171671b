//! The audit policy (`audit.k8s.io/v1` `Policy`, YAML or JSON) read from `--audit-policy-file`,
//! validated as upstream's, and evaluated per request: the first rule that matches decides the
//! level, the stages to omit and whether managed fields are dropped; no match is `None`.

use serde::{Deserialize, Serialize};

use crate::http::auth::user::UserInfo;
use crate::http::request_info::RequestInfo;

/// The only `apiVersion` upstream's v1.33 reads policies in.
pub const API_VERSION: &str = "audit.k8s.io/v1";

/// How much of a request is recorded, least first (so levels compare with `<`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Level {
    /// Nothing.
    None,
    /// Who, what, when and the outcome; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata and both bodies.
    RequestResponse,
}

impl Level {
    const ALL: [Level; 4] = [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ];

    /// The name as written in policies and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// Where in its life a request is when an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Stage {
    /// As soon as the request is received, before it is handed on.
    RequestReceived,
    /// Once the response headers are sent (long-running requests only).
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When a handler panicked.
    Panic,
}

impl Stage {
    const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    /// The name as written in policies and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.as_str() == s)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of stages (a bit set: evaluating a policy must not allocate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StageSet(u8);

impl StageSet {
    /// Whether `stage` is in the set.
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn with(self, stage: Stage) -> Self {
        StageSet(self.0 | stage.bit())
    }

    fn union(self, other: StageSet) -> Self {
        StageSet(self.0 | other.0)
    }
}

/// What a policy decided for one request (upstream's `RequestAuditConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level of the request's events.
    pub level: Level,
    /// Stages no event is written for.
    pub omit_stages: StageSet,
    /// Whether `metadata.managedFields` is dropped from recorded bodies.
    pub omit_managed_fields: bool,
}

/// Resources of one API group a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupResources {
    /// The group; empty is the core group.
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*`, `*/status`, `pods/*`); empty means all.
    pub resources: Vec<String>,
    /// Object names; empty means all.
    pub resource_names: Vec<String>,
}

/// One rule of a policy. Empty lists match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// The level of requests matching this rule.
    pub level: Level,
    /// User names.
    pub users: Vec<String>,
    /// Groups, any of which the user must be in.
    pub user_groups: Vec<String>,
    /// Verbs (`get`, `list`, `watch`, `create`, ...; the lower-cased method for non-resource
    /// requests).
    pub verbs: Vec<String>,
    /// Resources; a rule with resources or namespaces matches resource requests only.
    pub resources: Vec<GroupResources>,
    /// Namespaces (`""` matches cluster-scoped requests).
    pub namespaces: Vec<String>,
    /// Non-resource paths, exact or with a `*` suffix; matches non-resource requests only.
    pub non_resource_urls: Vec<String>,
    /// The rule's stages plus the policy's.
    pub omit_stages: StageSet,
    /// None: the policy's setting.
    pub omit_managed_fields: Option<bool>,
}

/// A validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Rules in order; the first match wins.
    pub rules: Vec<PolicyRule>,
    /// Stages omitted for every request (already merged into each rule).
    pub omit_stages: StageSet,
    /// Whether managed fields are dropped unless a rule says otherwise.
    pub omit_managed_fields: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPolicy {
    api_version: Option<String>,
    kind: Option<String>,
    rules: Option<Vec<RawRule>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    level: Option<String>,
    users: Option<Vec<String>>,
    user_groups: Option<Vec<String>>,
    verbs: Option<Vec<String>>,
    resources: Option<Vec<RawGroupResources>>,
    namespaces: Option<Vec<String>>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Option<Vec<String>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawGroupResources {
    group: Option<String>,
    resources: Option<Vec<String>>,
    resource_names: Option<Vec<String>>,
}

impl Policy {
    /// Reads and validates the policy in `path`; the error names the file and the problem.
    pub fn load(path: &std::path::Path) -> Result<Policy, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("failed to read file path {:?}: {e}", path.display()))?;
        Policy::parse(&bytes).map_err(|e| format!("{e}: from file {}", path.display()))
    }

    /// Decodes (YAML, so JSON too) and validates a policy.
    pub fn parse(bytes: &[u8]) -> Result<Policy, String> {
        let raw: RawPolicy =
            serde_yaml::from_slice(bytes).map_err(|e| format!("failed decoding: yaml: {e}"))?;
        match (raw.api_version.as_deref(), raw.kind.as_deref()) {
            (None | Some(""), _) => {
                return Err("failed decoding: Object 'apiVersion' is missing".into());
            }
            (_, None | Some("")) => return Err("failed decoding: Object 'Kind' is missing".into()),
            (Some(API_VERSION), Some("Policy")) => {}
            (Some(version), Some(kind)) => {
                return Err(format!(
                    "failed decoding: no kind {kind:?} is registered for version {version:?}: \
                     audit policies are kind \"Policy\" in {API_VERSION:?}"
                ));
            }
        }
        let mut errors = Vec::new();
        let omit_stages = stages(
            raw.omit_stages.as_deref().unwrap_or_default(),
            "omitStages",
            &mut errors,
        );
        let raw_rules = raw.rules.unwrap_or_default();
        let mut rules = Vec::with_capacity(raw_rules.len());
        for (i, rule) in raw_rules.into_iter().enumerate() {
            if let Some(rule) = validate_rule(rule, &format!("rules[{i}]"), &mut errors) {
                rules.push(PolicyRule {
                    omit_stages: rule.omit_stages.union(omit_stages),
                    ..rule
                });
            }
        }
        if !errors.is_empty() {
            return Err(if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            });
        }
        if rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: raw.omit_managed_fields.unwrap_or(false),
        })
    }

    /// The decision for a request by `user` (None: authentication failed) about `info`.
    pub fn evaluate(&self, user: Option<&UserInfo>, info: &RequestInfo) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule.matches(user, info) {
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages: rule.omit_stages,
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages,
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

fn stages(names: &[String], path: &str, errors: &mut Vec<String>) -> StageSet {
    let mut set = StageSet::default();
    for (i, name) in names.iter().enumerate() {
        match Stage::parse(name) {
            Some(stage) => set = set.with(stage),
            None => errors.push(format!(
                "{path}[{i}]: Invalid value: {name:?}: allowed stages are {}",
                Stage::ALL.map(Stage::as_str).join(",")
            )),
        }
    }
    set
}

fn validate_rule(raw: RawRule, path: &str, errors: &mut Vec<String>) -> Option<PolicyRule> {
    let before = errors.len();
    let level = match raw.level.as_deref() {
        None | Some("") => {
            errors.push(format!("{path}.level: Required value"));
            Level::None
        }
        Some(name) => Level::parse(name).unwrap_or_else(|| {
            let supported: Vec<String> = Level::ALL
                .iter()
                .map(|l| format!("{:?}", l.as_str()))
                .collect();
            errors.push(format!(
                "{path}.level: Unsupported value: {name:?}: supported values: {}",
                supported.join(", ")
            ));
            Level::None
        }),
    };
    let non_resource_urls = raw.non_resource_urls.unwrap_or_default();
    for (i, url) in non_resource_urls.iter().enumerate() {
        if url == "*" {
            continue;
        }
        if !url.starts_with('/') {
            errors.push(format!(
                "{path}.nonResourceURLs[{i}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
            ));
        }
        if !url.is_empty() && url[..url.len() - 1].contains('*') {
            errors.push(format!(
                "{path}.nonResourceURLs[{i}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
            ));
        }
    }
    let mut resources = Vec::new();
    for gr in raw.resources.unwrap_or_default() {
        let gr = GroupResources {
            group: gr.group.unwrap_or_default(),
            resources: gr.resources.unwrap_or_default(),
            resource_names: gr.resource_names.unwrap_or_default(),
        };
        if !gr.group.is_empty() && !is_dns_subdomain(&gr.group) {
            errors.push(format!(
                "{path}.resources.group: Invalid value: {:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                gr.group
            ));
        }
        if !gr.resource_names.is_empty() && gr.resources.is_empty() {
            errors.push(format!(
                "{path}.resources.resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                gr.resource_names
            ));
        }
        resources.push(gr);
    }
    let omit_stages = stages(
        raw.omit_stages.as_deref().unwrap_or_default(),
        &format!("{path}.omitStages"),
        errors,
    );
    let namespaces = raw.namespaces.unwrap_or_default();
    if !non_resource_urls.is_empty() && (!resources.is_empty() || !namespaces.is_empty()) {
        errors.push(format!(
            "{path}.nonResourceURLs: Invalid value: {non_resource_urls:?}: rules cannot apply to both regular resources and non-resource URLs"
        ));
    }
    (errors.len() == before).then(|| PolicyRule {
        level,
        users: raw.users.unwrap_or_default(),
        user_groups: raw.user_groups.unwrap_or_default(),
        verbs: raw.verbs.unwrap_or_default(),
        resources,
        namespaces,
        non_resource_urls,
        omit_stages,
        omit_managed_fields: raw.omit_managed_fields,
    })
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

impl PolicyRule {
    /// Whether the rule applies to a request by `user` about `info` (upstream's `ruleMatches`).
    pub fn matches(&self, user: Option<&UserInfo>, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| has(&self.users, &u.name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user.is_some_and(|u| u.groups.iter().any(|g| has(&self.user_groups, g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&info.path, spec));
        }
        true
    }

    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !has(&self.namespaces, &info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (resource, sub) = (info.resource.as_str(), info.subresource.as_str());
        self.resources.iter().any(|gr| {
            if gr.group != info.api_group {
                return false;
            }
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, &info.name) {
                return false;
            }
            gr.resources.iter().any(|spec| {
                if spec == "*" {
                    return true;
                }
                // `pods/*` covers pods and every subresource of pods.
                if let Some(base) = spec.strip_suffix("/*")
                    && base == resource
                {
                    return true;
                }
                if sub.is_empty() {
                    return spec == resource;
                }
                // `*/status` covers the status of every resource.
                if spec.strip_prefix("*/") == Some(sub) {
                    return true;
                }
                spec.len() == resource.len() + 1 + sub.len()
                    && spec.starts_with(resource)
                    && spec.as_bytes()[resource.len()] == b'/'
                    && spec.ends_with(sub)
            })
        })
    }
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn req(method: &str, path: &str) -> RequestInfo {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        RequestInfo::parse(method, path, query).expect("request info")
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    userGroups: ["system:nodes"]
    resources: [{group: "", resources: ["nodes/status"]}]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
        resourceNames: ["top-secret"]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
    omitManagedFields: false
  - level: Request
    resources: [{group: "", resources: ["*/status"]}]
    omitStages: [ResponseStarted]
  - level: Metadata
    resources: [{group: "apps", resources: ["deployments/*"]}]
  - level: Request
    namespaces: ["kube-system"]
  - level: Metadata
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources: [{group: "batch"}]
omitManagedFields: true
"#;

    #[test]
    fn first_matching_rule_wins() {
        let p = Policy::parse(POLICY.as_bytes()).expect("policy");
        let alice = user("alice", &["system:authenticated"]);
        let level = |u: &UserInfo, m: &str, path: &str| p.evaluate(Some(u), &req(m, path)).level;
        let proxy = user("system:kube-proxy", &[]);
        assert_eq!(level(&proxy, "GET", "/api/v1/pods?watch=1"), Level::None);
        // The same user's list falls through to later rules (none matches pods).
        assert_eq!(level(&proxy, "GET", "/api/v1/pods"), Level::None);
        let node = user("system:node:n1", &["system:nodes"]);
        assert_eq!(
            level(&node, "PUT", "/api/v1/nodes/n1/status"),
            Level::None,
            "the node rule is before */status"
        );
        assert_eq!(
            level(&alice, "PUT", "/api/v1/nodes/n1/status"),
            Level::Request,
            "*/status"
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/a/configmaps/top-secret"),
            Level::Metadata
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/a/configmaps/other"),
            Level::RequestResponse
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/a/configmaps"),
            Level::RequestResponse,
            "a list has no name, so resourceNames rules do not match it"
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/a/secrets"),
            Level::None
        );
        assert_eq!(
            level(&alice, "GET", "/apis/apps/v1/namespaces/a/deployments"),
            Level::Metadata,
            "deployments/* covers deployments"
        );
        assert_eq!(
            level(
                &alice,
                "PUT",
                "/apis/apps/v1/namespaces/a/deployments/d/scale"
            ),
            Level::Metadata
        );
        assert_eq!(
            level(&alice, "GET", "/apis/apps/v1/namespaces/a/replicasets"),
            Level::None
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/kube-system/pods"),
            Level::Request
        );
        assert_eq!(level(&alice, "GET", "/healthz/etcd"), Level::Metadata);
        assert_eq!(level(&alice, "GET", "/version"), Level::Metadata);
        assert_eq!(level(&alice, "GET", "/versions"), Level::None);
        assert_eq!(
            level(&alice, "GET", "/apis/batch/v1/jobs"),
            Level::Metadata,
            "a group without resources is every resource of the group"
        );
    }

    #[test]
    fn stages_and_managed_fields_merge_with_the_policy() {
        let p = Policy::parse(POLICY.as_bytes()).expect("policy");
        let alice = user("alice", &[]);
        let cm = p.evaluate(Some(&alice), &req("GET", "/api/v1/namespaces/a/configmaps"));
        assert!(cm.omit_stages.contains(Stage::RequestReceived));
        assert!(!cm.omit_stages.contains(Stage::ResponseStarted));
        assert!(!cm.omit_managed_fields, "the rule overrides the policy");
        let status = p.evaluate(Some(&alice), &req("PUT", "/api/v1/nodes/n/status"));
        assert!(status.omit_stages.contains(Stage::RequestReceived));
        assert!(status.omit_stages.contains(Stage::ResponseStarted));
        assert!(status.omit_managed_fields, "the policy's default");
        let none = p.evaluate(Some(&alice), &req("GET", "/api/v1/pods"));
        assert_eq!(none.level, Level::None);
        assert!(none.omit_managed_fields);
    }

    #[test]
    fn users_and_groups_need_a_user() {
        let p = Policy::parse(
            br#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[
                {"level":"Request","userGroups":["devs"]},
                {"level":"Metadata"}]}"#,
        )
        .expect("json policy");
        let info = req("GET", "/api/v1/pods");
        assert_eq!(p.evaluate(None, &info).level, Level::Metadata);
        assert_eq!(
            p.evaluate(Some(&user("bob", &["devs"])), &info).level,
            Level::Request
        );
    }

    #[test]
    fn bad_policies_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
                "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n",
                "no kind \"Policy\" is registered for version \"audit.k8s.io/v1beta1\"",
            ),
            (
                "kind: Policy\nrules: []\n",
                "Object 'apiVersion' is missing",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [\n",
                "failed decoding: yaml: ",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
                "loaded illegal policy with 0 rules",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- {}\n",
                "rules[0].level: Required value",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Sometimes]\n",
                "rules[0].omitStages[0]: Invalid value: \"Sometimes\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/a*b\", \"c\"]\n",
                "wildcards '*' must be the final character",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/a\"]\n  namespaces: [x]\n",
                "rules cannot apply to both regular resources and non-resource URLs",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: \"apps/v1\"}]\n",
                "rules[0].resources.group: Invalid value: \"apps/v1\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{resourceNames: [a]}]\n",
                "using resourceNames requires at least one resource",
            ),
        ];
        for (doc, want) in cases {
            let err = Policy::parse(doc.as_bytes()).expect_err(doc);
            assert!(err.contains(want), "{doc}\n=> {err}\nwant {want}");
        }
        let err = Policy::load(std::path::Path::new("/nonexistent/policy.yaml"))
            .expect_err("missing file");
        assert!(err.starts_with("failed to read file path"), "{err}");
    }
}
