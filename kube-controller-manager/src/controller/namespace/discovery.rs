//! Which namespaced resources a namespace deletion must empty: the preferred version of every
//! group (core `/api` and `/apis`), resources that support `list` and `delete`, as upstream's
//! `ServerPreferredNamespacedResources` filtered by those verbs.

use crate::controller::utils::discovery;
use anyhow::Context as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::core::ApiResource;

/// One namespaced resource to empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletable {
    pub resource: ApiResource,
    pub delete_collection: bool,
}

impl Deletable {
    /// `<resource>.<group>`, as upstream names a resource in the namespace conditions.
    pub fn display(&self) -> String {
        format!("{}.{}", self.resource.plural, self.resource.group)
    }
}

/// What discovery found; group versions that failed are reported, not fatal.
#[derive(Debug, Default)]
pub struct Discovered {
    pub resources: Vec<Deletable>,
    /// `<group version>: <error>` of each group version that could not be discovered.
    pub failed: Vec<String>,
    pub unparsable: Vec<String>,
}

/// Discovers the deletable namespaced resources. Only a failure to list the groups themselves
/// is an error: the namespace cannot be emptied without knowing what it may hold.
pub async fn discover(client: &kube::Client) -> anyhow::Result<Discovered> {
    let mut found = Discovered::default();
    let core = client
        .list_core_api_versions()
        .await
        .context("discovering /api")?;
    if let Some(version) = core.versions.first() {
        match client.list_core_api_resources(version).await {
            Ok(list) => found.resources.extend(deletable(&list, "", version)),
            Err(err) => {
                found.failed.push(format!("{version}: {err}"));
            }
        }
    }
    let groups = client
        .list_api_groups()
        .await
        .context("discovering /apis")?;
    for group in groups.groups {
        let Some(preferred) = group
            .preferred_version
            .clone()
            .or_else(|| group.versions.first().cloned())
        else {
            continue;
        };
        let gv = preferred.group_version;
        let Some((g, v)) = gv.split_once('/') else {
            found.unparsable.push(gv);
            continue;
        };
        match client.list_api_group_resources(&gv).await {
            Ok(list) => found.resources.extend(deletable(&list, g, v)),
            Err(err) => {
                found.failed.push(format!("{gv}: {err}"));
            }
        }
    }
    Ok(found)
}

/// The namespaced, listable and deletable top-level resources of one group version.
pub fn deletable(list: &APIResourceList, group: &str, version: &str) -> Vec<Deletable> {
    list.resources
        .iter()
        .filter(|r| r.namespaced && discovery::is_top_level(r))
        .filter(|r| discovery::has_verbs(r, &["list", "delete"]))
        .map(|r| Deletable {
            resource: discovery::api_resource(group, version, r),
            delete_collection: discovery::has_verbs(r, &["deletecollection"]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    fn resource(name: &str, namespaced: bool, verbs: &[&str]) -> APIResource {
        APIResource {
            name: name.into(),
            kind: "Thing".into(),
            namespaced,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn only_namespaced_listable_deletable_top_level_resources() {
        let list = APIResourceList {
            group_version: "example.com/v1".into(),
            resources: vec![
                resource("widgets", true, &["list", "delete", "deletecollection"]),
                resource("widgets/status", true, &["get", "update", "list", "delete"]),
                resource("gadgets", true, &["list", "delete"]),
                resource("bindings", true, &["create"]),
                resource("nodes", false, &["list", "delete"]),
            ],
        };
        let found = deletable(&list, "example.com", "v1");
        let names: Vec<(String, bool)> = found
            .iter()
            .map(|d| (d.display(), d.delete_collection))
            .collect();
        assert_eq!(
            names,
            [
                ("widgets.example.com".to_string(), true),
                ("gadgets.example.com".to_string(), false)
            ]
        );
        assert_eq!(found[0].resource.api_version, "example.com/v1");
        let core = deletable(&list, "", "v1");
        assert_eq!(core[0].resource.api_version, "v1");
        assert_eq!(core[0].display(), "widgets.");
    }
}
