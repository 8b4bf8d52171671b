//! The RESTMapper: resolves what a user types (`pods`, `po`, `pod`, `Pod`, `deployments.apps`,
//! `deploy.v1.apps`) or what a manifest says (`apiVersion` + `kind`) to a served resource, and
//! expands categories (`all`).

use serde_json::Value;

/// One served resource as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResource {
    /// Plural, the URL segment (`deployments`).
    pub name: String,
    pub singular: String,
    pub namespaced: bool,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Served in its group's preferred version.
    pub preferred: bool,
}

/// What a command acts on: the resource, resolved.
pub type Mapping = ApiResource;

impl ApiResource {
    /// `v1` or `apps/v1`.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods`, `deployments.apps`: how upstream names the resource in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.group)
        }
    }

    /// `pod`, `deployment.apps`: the prefix of `-o name` and of `kind/name` lines.
    pub fn kind_prefix(&self) -> String {
        let kind = self.kind.to_lowercase();
        if self.group.is_empty() {
            kind
        } else {
            format!("{kind}.{}", self.group)
        }
    }

    /// The collection URL, in `namespace` when the resource is namespaced and one is given.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.name),
            None => format!("{base}/{}", self.name),
        }
    }

    /// The URL of one object.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{}", self.collection_path(namespace), name)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// Every served resource, in discovery order.
#[derive(Debug, Clone, Default)]
pub struct RestMapper {
    resources: Vec<ApiResource>,
}

impl RestMapper {
    pub fn new(resources: Vec<ApiResource>) -> Self {
        RestMapper { resources }
    }

    /// Every resource (subresources excluded), discovery order.
    pub fn resources(&self) -> &[ApiResource] {
        &self.resources
    }

    /// Resolves a resource argument as `kubectl get TYPE` does; `None` when nothing matches.
    pub fn resolve(&self, arg: &str) -> Option<ApiResource> {
        let arg = arg.trim().to_lowercase();
        if arg.is_empty() {
            return None;
        }
        let parts: Vec<&str> = arg.splitn(3, '.').collect();
        if parts.len() == 3
            && let Some(found) = self.find(parts[0], Some(parts[2]), Some(parts[1]))
        {
            return Some(found);
        }
        match arg.split_once('.') {
            Some((name, group)) => self.find(name, Some(group), None),
            None => self.find(&arg, None, None),
        }
    }

    /// The resource of a manifest's `apiVersion` and `kind`.
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<ApiResource> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// The preferred resources in category `name` (`all`), in discovery order.
    pub fn category(&self, name: &str) -> Vec<ApiResource> {
        let mut out: Vec<ApiResource> = Vec::new();
        for r in self.resources.iter().filter(|r| r.preferred) {
            if r.categories.iter().any(|c| c == name)
                && !out.iter().any(|o| o.group == r.group && o.name == r.name)
            {
                out.push(r.clone());
            }
        }
        out
    }

    fn find(&self, name: &str, group: Option<&str>, version: Option<&str>) -> Option<ApiResource> {
        let in_scope = |r: &&ApiResource| {
            group.is_none_or(|g| r.group == g) && version.is_none_or(|v| r.version == v)
        };
        let matches_short = |r: &&ApiResource| r.short_names.iter().any(|s| s == name);
        let matches_name = |r: &&ApiResource| {
            r.name == name || r.singular == name || r.kind.to_lowercase() == name
        };
        // Shortcuts expand before names match, and without a version the preferred one wins.
        let pass = |preferred_only: bool| {
            let scoped = || {
                self.resources
                    .iter()
                    .filter(in_scope)
                    .filter(move |r| !preferred_only || r.preferred)
            };
            scoped()
                .find(matches_short)
                .or_else(|| scoped().find(matches_name))
                .cloned()
        };
        if version.is_some() {
            return pass(false);
        }
        pass(true).or_else(|| pass(false))
    }
}

/// The resources of one `APIResourceList` (subresources left out).
pub fn parse_resource_list(
    group: &str,
    version: &str,
    preferred: bool,
    list: &Value,
) -> Vec<ApiResource> {
    let strings = |v: &Value, key: &str| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    list.get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let name = r.get("name")?.as_str()?;
            if name.contains('/') {
                return None;
            }
            let kind = r.get("kind")?.as_str()?.to_owned();
            let singular = match r.get("singularName").and_then(Value::as_str) {
                Some(s) if !s.is_empty() => s.to_owned(),
                _ => kind.to_lowercase(),
            };
            Some(ApiResource {
                name: name.to_owned(),
                singular,
                namespaced: r
                    .get("namespaced")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                group: group.to_owned(),
                version: version.to_owned(),
                kind,
                verbs: strings(r, "verbs"),
                short_names: strings(r, "shortNames"),
                categories: strings(r, "categories"),
                preferred,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mapper() -> RestMapper {
        let core = json!({"resources": [
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event", "verbs": ["get"], "shortNames": ["ev"]},
            {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": ["get", "list"], "shortNames": ["po"], "categories": ["all"]},
            {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
            {"name": "services", "singularName": "service", "namespaced": true, "kind": "Service", "verbs": ["get"], "shortNames": ["svc"], "categories": ["all"]},
        ]});
        let apps = json!({"resources": [
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": ["get"], "shortNames": ["deploy"], "categories": ["all"]},
        ]});
        let events = json!({"resources": [
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event", "verbs": ["get"], "shortNames": ["ev"]},
        ]});
        let hpa2 = json!({"resources": [{"name": "horizontalpodautoscalers", "singularName": "horizontalpodautoscaler", "namespaced": true, "kind": "HorizontalPodAutoscaler", "shortNames": ["hpa"], "categories": ["all"]}]});
        let hpa1 = json!({"resources": [{"name": "horizontalpodautoscalers", "singularName": "horizontalpodautoscaler", "namespaced": true, "kind": "HorizontalPodAutoscaler", "shortNames": ["hpa"], "categories": ["all"]}]});
        let mut all = parse_resource_list("", "v1", true, &core);
        all.extend(parse_resource_list("apps", "v1", true, &apps));
        all.extend(parse_resource_list("events.k8s.io", "v1", true, &events));
        all.extend(parse_resource_list("autoscaling", "v2", true, &hpa2));
        all.extend(parse_resource_list("autoscaling", "v1", false, &hpa1));
        RestMapper::new(all)
    }

    #[test]
    fn resolves_names_like_kubectl() {
        let m = mapper();
        let cases = [
            ("pods", Some(("", "v1", "pods"))),
            ("po", Some(("", "v1", "pods"))),
            ("pod", Some(("", "v1", "pods"))),
            ("Pod", Some(("", "v1", "pods"))),
            ("PODS", Some(("", "v1", "pods"))),
            ("deployments.apps", Some(("apps", "v1", "deployments"))),
            ("deploy.v1.apps", Some(("apps", "v1", "deployments"))),
            ("deploy", Some(("apps", "v1", "deployments"))),
            ("ev", Some(("", "v1", "events"))),
            (
                "events.events.k8s.io",
                Some(("events.k8s.io", "v1", "events")),
            ),
            (
                "hpa",
                Some(("autoscaling", "v2", "horizontalpodautoscalers")),
            ),
            (
                "hpa.v1.autoscaling",
                Some(("autoscaling", "v1", "horizontalpodautoscalers")),
            ),
            ("pods/status", None),
            ("foo", None),
            ("deployments.batch", None),
            ("", None),
        ];
        for (arg, want) in cases {
            let got = m.resolve(arg);
            let got = got
                .as_ref()
                .map(|r| (r.group.as_str(), r.version.as_str(), r.name.as_str()));
            assert_eq!(got, want, "{arg}");
        }
    }

    #[test]
    fn kinds_categories_and_paths() {
        let m = mapper();
        let deploy = m.for_kind("apps/v1", "Deployment").unwrap();
        assert_eq!(
            deploy.object_path(Some("ns"), "web"),
            "/apis/apps/v1/namespaces/ns/deployments/web"
        );
        assert_eq!(deploy.kind_prefix(), "deployment.apps");
        assert_eq!(
            m.for_kind("v1", "Pod").unwrap().collection_path(None),
            "/api/v1/pods"
        );
        assert!(m.for_kind("v2", "Pod").is_none());
        let all: Vec<String> = m
            .category("all")
            .iter()
            .map(|r| r.group_resource())
            .collect();
        assert_eq!(
            all,
            [
                "pods",
                "services",
                "deployments.apps",
                "horizontalpodautoscalers.autoscaling"
            ]
        );
    }
}
