//! What the collector watches and how it finds objects: every resource of a group's preferred
//! version that supports list, watch and delete (upstream's GetDeletableResources minus the
//! ignored ones), and a kind -> resource mapping over every served version (ownerReferences may
//! name any of them).

use crate::controller::utils::discovery;
use anyhow::Context as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::core::ApiResource;
use std::collections::HashMap;

/// Resources the collector never watches (upstream's DefaultIgnoredResources): events are many
/// and never own anything.
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

/// A resource and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub resource: ApiResource,
    pub namespaced: bool,
}

impl Resource {
    /// `apiVersion/plural`: the key of its monitor.
    pub fn key(&self) -> String {
        format!("{}/{}", self.resource.api_version, self.resource.plural)
    }
}

/// What one discovery pass found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// The resources to monitor.
    pub deletable: Vec<Resource>,
    /// `(apiVersion, kind)` -> resource, for every served version.
    pub mapper: HashMap<(String, String), Resource>,
    /// Group versions whose resources could not be listed.
    pub failed: Vec<String>,
}

/// Discovers the served resources. Only failing to list the groups is an error; a group version
/// that fails is reported and skipped (its monitors stay as they were).
pub async fn discover(client: &kube::Client) -> anyhow::Result<Discovered> {
    let mut found = Discovered::default();
    let core = client
        .list_core_api_versions()
        .await
        .context("discovering /api")?;
    for (i, version) in core.versions.iter().enumerate() {
        match client.list_core_api_resources(version).await {
            Ok(list) => found.add(&list, "", version, i == 0),
            Err(err) => found.failed.push(format!("{version}: {err}")),
        }
    }
    let groups = client
        .list_api_groups()
        .await
        .context("discovering /apis")?;
    for group in groups.groups {
        let preferred = group
            .preferred_version
            .as_ref()
            .or_else(|| group.versions.first())
            .map(|v| v.version.clone());
        for v in &group.versions {
            match client.list_api_group_resources(&v.group_version).await {
                Ok(list) => found.add(
                    &list,
                    &group.name,
                    &v.version,
                    preferred.as_deref() == Some(v.version.as_str()),
                ),
                Err(err) => found.failed.push(format!("{}: {err}", v.group_version)),
            }
        }
    }
    Ok(found)
}

impl Discovered {
    /// Adds one group version's resources: all to the mapper, the deletable ones of the
    /// preferred version to the monitored set.
    pub fn add(&mut self, list: &APIResourceList, group: &str, version: &str, preferred: bool) {
        for r in list.resources.iter().filter(|r| discovery::is_top_level(r)) {
            let resource = Resource {
                resource: discovery::api_resource(group, version, r),
                namespaced: r.namespaced,
            };
            self.mapper
                .entry((resource.resource.api_version.clone(), r.kind.clone()))
                .or_insert_with(|| resource.clone());
            let ignored = IGNORED.iter().any(|(g, p)| *g == group && *p == r.name);
            if preferred && !ignored && discovery::has_verbs(r, &["list", "watch", "delete"]) {
                self.deletable.push(resource);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    fn resource(name: &str, kind: &str, verbs: &[&str]) -> APIResource {
        APIResource {
            name: name.into(),
            kind: kind.into(),
            namespaced: true,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn monitors_listable_watchable_deletable_top_level_resources_of_preferred_versions() {
        let all = ["list", "watch", "delete", "get"];
        let list = APIResourceList {
            group_version: "v1".into(),
            resources: vec![
                resource("pods", "Pod", &all),
                resource("pods/status", "Pod", &all),
                resource("events", "Event", &all),
                resource("bindings", "Binding", &["create"]),
                resource("componentstatuses", "ComponentStatus", &["get", "list"]),
            ],
        };
        let mut d = Discovered::default();
        d.add(&list, "", "v1", true);
        let keys: Vec<String> = d.deletable.iter().map(Resource::key).collect();
        assert_eq!(keys, vec!["v1/pods"]);
        assert!(d.mapper.contains_key(&("v1".into(), "Binding".into())));

        let widgets = APIResourceList {
            group_version: "example.com/v1beta1".into(),
            resources: vec![resource("widgets", "Widget", &all)],
        };
        d.add(&widgets, "example.com", "v1beta1", false);
        assert_eq!(
            d.deletable.len(),
            1,
            "non-preferred versions are not monitored"
        );
        let w = &d.mapper[&("example.com/v1beta1".into(), "Widget".into())];
        assert_eq!(w.resource.plural, "widgets");
        assert!(w.namespaced);
    }
}
