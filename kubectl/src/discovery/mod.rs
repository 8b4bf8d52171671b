//! Server discovery (`/api`, `/apis` and every group-version's resource list) with upstream's
//! disk cache: `<cache-dir>/discovery/<host_port>/servergroups.json` and
//! `<group>/<version>/serverresources.json`, trusted for six hours and refreshed when a name
//! does not resolve, as upstream's memcached/disk discovery client does.

pub mod mapper;

use crate::factory::Factory;
pub use mapper::{ApiResource, Mapping, RestMapper};
use serde_json::{Value, json};
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
        let doc = self.server_groups(fresh).await?;
        Ok(parse_groups(&doc))
    }

    async fn load(&self, fresh: bool) -> anyhow::Result<RestMapper> {
        let groups = self.groups(fresh).await?;
        let mut wanted = Vec::new();
        for group in &groups {
            for gv in &group.versions {
                wanted.push((group.clone(), gv.clone()));
            }
        }
        let lists =
            futures::future::join_all(wanted.iter().map(|(_, gv)| self.resources(gv, fresh))).await;
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

    async fn server_groups(&self, fresh: bool) -> anyhow::Result<Value> {
        let path = self.dir.join("servergroups.json");
        if !fresh && let Some(doc) = read_fresh(&path) {
            return Ok(doc);
        }
        let core = self.factory.get("/api").await?;
        let apis = self.factory.get("/apis").await?;
        // The legacy group goes first, as upstream's ServerGroups puts it.
        let mut groups = vec![json!({
            "name": "",
            "versions": core.get("versions").and_then(Value::as_array).cloned().unwrap_or_default()
                .iter().filter_map(Value::as_str)
                .map(|v| json!({"groupVersion": v, "version": v})).collect::<Vec<_>>(),
            "preferredVersion": {"groupVersion": "v1", "version": "v1"},
        })];
        groups.extend(
            apis.get("groups")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        let doc = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
        write_cache(&path, &doc);
        Ok(doc)
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
