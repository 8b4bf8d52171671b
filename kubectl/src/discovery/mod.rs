//! Server discovery with upstream's disk cache. As kubectl 1.33, `/api` and `/apis` are asked
//! for the aggregated form (`apidiscovery.k8s.io` `APIGroupDiscoveryList`), which holds every
//! resource, so a cold cache costs two requests; a server answering the legacy `APIGroupList`
//! costs one more per group-version. The cache is upstream's layout, so both kubectls can share
//! it: `<cache-dir>/discovery/<host_port>/servergroups.json` and
//! `<group>/<version>/serverresources.json`, trusted for six hours and refreshed when a name
//! does not resolve, as upstream's memcached/disk discovery client does.

mod aggregated;
pub mod mapper;

use crate::factory::Factory;
use http::Method;
pub use mapper::{ApiResource, Mapping, RestMapper};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long cached discovery is trusted (upstream's kubectl: six hours).
const CACHE_TTL: Duration = Duration::from_secs(6 * 3600);

/// Discovery for one server.
pub struct Discovery<'a> {
    factory: &'a Factory,
    dir: PathBuf,
}

/// One group as `/apis` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    /// `group/version` strings, preferred first as the server lists them.
    pub versions: Vec<String>,
    pub preferred: String,
}

impl<'a> Discovery<'a> {
    pub fn new(factory: &'a Factory, dir: PathBuf) -> Self {
        Discovery { factory, dir }
    }

    /// The mapper over every served resource, from the cache when it is fresh.
    pub async fn mapper(&self) -> anyhow::Result<RestMapper> {
        self.load(false).await
    }

    /// The mapper fetched anew (after a name did not resolve).
    pub async fn refreshed_mapper(&self) -> anyhow::Result<RestMapper> {
        self.load(true).await
    }

    /// The served groups (`api-versions`), the core group first.
    pub async fn groups(&self, fresh: bool) -> anyhow::Result<Vec<Group>> {
        let (doc, _) = self.server_groups(fresh).await?;
        Ok(parse_groups(&doc))
    }

    async fn load(&self, fresh: bool) -> anyhow::Result<RestMapper> {
        let (doc, mut fetched) = self.server_groups(fresh).await?;
        let groups = parse_groups(&doc);
        let mut wanted = Vec::new();
        for group in &groups {
            for gv in &group.versions {
                wanted.push((group.clone(), gv.clone()));
            }
        }
        // What the aggregated answer held needs no request; the rest (a legacy server, or a
        // warm cache) comes from each group-version's file or document.
        let lists = futures::future::join_all(wanted.iter().map(|(_, gv)| {
            let known = fetched.remove(gv);
            async move {
                match known {
                    Some(list) => Ok(list),
                    None => self.resources(gv, fresh).await,
                }
            }
        }))
        .await;
        let mut resources = Vec::new();
        for ((group, gv), list) in wanted.iter().zip(lists) {
            // A group-version that fails (an unavailable aggregated API) is skipped, as upstream
            // does after warning; the rest still resolve.
            let Ok(list) = list else { continue };
            let version = gv.rsplit('/').next().unwrap_or(gv).to_owned();
            resources.extend(mapper::parse_resource_list(
                &group.name,
                &version,
                gv == &group.preferred,
                &list,
            ));
        }
        Ok(RestMapper::new(resources))
    }

    /// The `APIGroupList` (core group first) and, when the server answered in the aggregated
    /// form, every group-version's `APIResourceList` with it. Fetched documents are cached as
    /// upstream's disk client writes them: `servergroups.json` and, from an aggregated answer,
    /// each `<gv>/serverresources.json` at once.
    async fn server_groups(&self, fresh: bool) -> anyhow::Result<(Value, HashMap<String, Value>)> {
        let path = self.dir.join("servergroups.json");
        if !fresh && let Some(doc) = read_fresh(&path) {
            return Ok((doc, HashMap::new()));
        }
        let (core, apis) = futures::future::try_join(
            self.factory
                .request(Method::GET, "/api", None, Some(aggregated::ACCEPT)),
            self.factory
                .request(Method::GET, "/apis", None, Some(aggregated::ACCEPT)),
        )
        .await?;
        let mut lists = HashMap::new();
        let mut groups = Vec::new();
        match aggregated::split(&core) {
            Some(split) => {
                groups.extend(split.groups);
                lists.extend(split.lists);
            }
            // The legacy group goes first, as upstream's ServerGroups puts it.
            None => groups.push(json!({
                "name": "",
                "versions": core.get("versions").and_then(Value::as_array).cloned().unwrap_or_default()
                    .iter().filter_map(Value::as_str)
                    .map(|v| json!({"groupVersion": v, "version": v})).collect::<Vec<_>>(),
                "preferredVersion": {"groupVersion": "v1", "version": "v1"},
            })),
        }
        match aggregated::split(&apis) {
            Some(split) => {
                groups.extend(split.groups);
                lists.extend(split.lists);
            }
            None => groups.extend(
                apis.get("groups")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            ),
        }
        let doc = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
        write_cache(&path, &doc);
        for (gv, list) in &lists {
            write_cache(&self.dir.join(gv).join("serverresources.json"), list);
        }
        Ok((doc, lists))
    }

    async fn resources(&self, group_version: &str, fresh: bool) -> anyhow::Result<Value> {
        let path = self.dir.join(group_version).join("serverresources.json");
        if !fresh && let Some(doc) = read_fresh(&path) {
            return Ok(doc);
        }
        let url = if group_version.contains('/') {
            format!("/apis/{group_version}")
        } else {
            format!("/api/{group_version}")
        };
        let doc = self.factory.get(&url).await?;
        write_cache(&path, &doc);
        Ok(doc)
    }
}

/// The groups of an `APIGroupList` document.
fn parse_groups(doc: &Value) -> Vec<Group> {
    let list = doc.get("groups").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .map(|g| {
            let versions: Vec<String> = g
                .get("versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.get("groupVersion").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            let preferred = g
                .pointer("/preferredVersion/groupVersion")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| versions.first().cloned())
                .unwrap_or_default();
            Group {
                name: g
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                versions,
                preferred,
            }
        })
        .collect()
}

fn read_fresh(path: &Path) -> Option<Value> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let age = SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    if age > CACHE_TTL {
        return None;
    }
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Best effort: a cache that cannot be written only costs requests next time.
fn write_cache(path: &Path, doc: &Value) {
    if let Some(parent) = path.parent()
        && std::fs::create_dir_all(parent).is_ok()
        && let Ok(bytes) = serde_json::to_vec(doc)
    {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

#[cfg(test)]
mod tests_client;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_server_order_and_preference() {
        let doc = json!({"groups": [
            {"name": "", "versions": [{"groupVersion": "v1"}], "preferredVersion": {"groupVersion": "v1"}},
            {"name": "autoscaling", "versions": [{"groupVersion": "autoscaling/v2"}, {"groupVersion": "autoscaling/v1"}],
             "preferredVersion": {"groupVersion": "autoscaling/v2"}},
        ]});
        let groups = parse_groups(&doc);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[1].preferred, "autoscaling/v2");
        assert_eq!(groups[1].versions, vec!["autoscaling/v2", "autoscaling/v1"]);
    }

    #[test]
    fn stale_or_missing_cache_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.json");
        assert!(read_fresh(&path).is_none());
        write_cache(&path, &json!({"x": 1}));
        assert_eq!(read_fresh(&path), Some(json!({"x": 1})));
    }
}
