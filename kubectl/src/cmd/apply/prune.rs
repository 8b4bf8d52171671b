//! `kubectl apply --prune`: after applying, delete the objects of the allowed types, in the
//! namespaces applied to, that match the selector, were created by apply (they carry the
//! last-applied annotation) and were not in this apply's configuration.

use std::collections::BTreeSet;

use super::Run;
use super::annotation::last_applied;
use crate::cmd::mutate::DryRun;
use crate::discovery::ApiResource;
use crate::printers;
use crate::resource::{self, Info};
use serde_json::Value;

/// Upstream's default prune set: namespaced kinds, then the cluster-scoped ones.
const DEFAULT_ALLOWLIST: &[(&str, &str, &str)] = &[
    ("", "v1", "ConfigMap"),
    ("", "v1", "Endpoints"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "Pod"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("", "v1", "Namespace"),
    ("", "v1", "PersistentVolume"),
];

/// What the apply touched.
#[derive(Debug, Default)]
pub struct Visited {
    objects: BTreeSet<(String, String, String)>,
    namespaces: BTreeSet<String>,
}

impl Visited {
    pub fn mark(&mut self, info: &Info, object: &Value) {
        let ns = info.namespace.clone().unwrap_or_default();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| info.name.clone())
            .unwrap_or_default();
        if info.namespace.is_some() {
            self.namespaces.insert(ns.clone());
        }
        self.objects
            .insert((info.resource.group_resource(), ns, name));
    }

    fn contains(&self, resource: &ApiResource, ns: &str, name: &str) -> bool {
        self.objects
            .contains(&(resource.group_resource(), ns.to_owned(), name.to_owned()))
    }
}

/// `(group, version, kind)` of the types to prune: `--prune-allowlist` (`core/v1/ConfigMap`,
/// `apps/v1/Deployment`) or upstream's default set.
pub fn allowlist(flags: &[String]) -> anyhow::Result<Vec<(String, String, String)>> {
    if flags.is_empty() {
        return Ok(DEFAULT_ALLOWLIST
            .iter()
            .map(|(g, v, k)| ((*g).to_owned(), (*v).to_owned(), (*k).to_owned()))
            .collect());
    }
    flags
        .iter()
        .map(|entry| {
            let parts: Vec<&str> = entry.split('/').collect();
            let [group, version, kind] = parts[..] else {
                anyhow::bail!(
                    "invalid GroupVersionKind format: {entry}, please follow <group/version/kind>"
                );
            };
            let group = if group == "core" { "" } else { group };
            Ok((group.to_owned(), version.to_owned(), kind.to_owned()))
        })
        .collect()
}

pub async fn prune(
    ctx: &Run<'_>,
    allowlist: &[(String, String, String)],
    visited: &Visited,
    selector: Option<&str>,
    delete_options: &Value,
) -> anyhow::Result<()> {
    let discovery = ctx.factory.discovery();
    let mapper = discovery.mapper().await?;
    let mut resources = Vec::new();
    let mut cluster_scoped = Vec::new();
    for (group, version, kind) in allowlist {
        let api_version = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        match mapper.for_kind(&api_version, kind) {
            Some(r) if r.namespaced => resources.push(r),
            Some(r) => cluster_scoped.push(r),
            None => anyhow::bail!("no matches for kind \"{kind}\" in version \"{api_version}\""),
        }
    }
    for ns in &visited.namespaces {
        for r in &resources {
            prune_type(ctx, r, Some(ns), visited, selector, delete_options).await?;
        }
    }
    for r in &cluster_scoped {
        prune_type(ctx, r, None, visited, selector, delete_options).await?;
    }
    Ok(())
}

async fn prune_type(
    ctx: &Run<'_>,
    r: &ApiResource,
    ns: Option<&str>,
    visited: &Visited,
    selector: Option<&str>,
    delete_options: &Value,
) -> anyhow::Result<()> {
    let mut query = Vec::new();
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        query.push(("labelSelector".to_owned(), s.to_owned()));
    }
    let url = resource::with_query(&r.collection_path(ns), &query);
    let list = ctx.factory.get(&url).await?;
    let items = list.get("items").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if last_applied(item).is_none() || visited.contains(r, ns.unwrap_or(""), name) {
            continue;
        }
        if ctx.dry_run != DryRun::Client {
            let url = resource::with_query(&r.object_path(ns, name), &ctx.dry_run.query());
            ctx.factory
                .request(
                    http::Method::DELETE,
                    &url,
                    Some((serde_json::to_vec(delete_options)?, "application/json")),
                    None,
                )
                .await?;
        }
        println!(
            "{} pruned{}",
            printers::name_line(r, item),
            ctx.dry_run.suffix()
        );
    }
    Ok(())
}

/// Upstream's klog warning when the default set (with its cluster-scoped kinds) meets an
/// explicit `--namespace`, in klog's header format.
pub fn warn_cluster_scoped_default() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (_, month, day) = civil_from_days((secs / 86_400) as i64);
    let tod = secs % 86_400;
    eprintln!(
        "W{month:02}{day:02} {:02}:{:02}:{:02}.{:06} {:>7} prune.go:71] Deprecated: kubectl apply will no longer prune non-namespaced resources by default when used with the --namespace flag in a future release. To preserve the current behaviour, list the resources you want to target explicitly in the --prune-allowlist flag.",
        tod / 3600,
        tod % 3600 / 60,
        tod % 60,
        now.subsec_micros(),
        std::process::id()
    );
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_entries() {
        let got = allowlist(&["core/v1/ConfigMap".into(), "apps/v1/Deployment".into()]).unwrap();
        assert_eq!(got[0], ("".into(), "v1".into(), "ConfigMap".into()));
        assert_eq!(got[1], ("apps".into(), "v1".into(), "Deployment".into()));
        assert!(allowlist(&["v1/ConfigMap".into()]).is_err());
        assert_eq!(allowlist(&[]).unwrap().len(), DEFAULT_ALLOWLIST.len());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
    }
}
