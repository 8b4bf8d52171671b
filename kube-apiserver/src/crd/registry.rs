//! The custom resources being served: for each installed CRD its served versions' entries and
//! the one watch cache of its key prefix. Discovery and the REST handler read it; the CRD
//! controller installs and removes CRDs.

use super::conversion::WebhookConverter;
use super::info::resource_info;
use super::version_order::kube_aware_cmp;
use super::{CustomResource, ScalePaths, schema};
use crate::admission::plugins::webhook::client::WebhookClient;
use crate::registry::ObjectLookup;
use crate::registry::ResourceStore;
use crate::registry::keys;
use crate::rest::state::ResourceEntry;
use crate::storage::backend::{Backend, StorageError};
use crate::storage::cacher::Cacher;
use crate::tables::custom::CustomPrinter;
use api_types::registry::ResourceInfo;
use parking_lot::RwLock;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// What is served for one CRD.
struct Installed {
    /// The CRD as last installed.
    crd: Arc<Value>,
    /// The served versions, in the group's preference order.
    infos: Vec<&'static ResourceInfo>,
    cacher: Arc<Cacher>,
    /// Stops the cache when the CRD is removed or moves to another prefix.
    stop: CancellationToken,
}

#[derive(Default)]
struct Served {
    /// By (group, version, plural).
    entries: HashMap<(String, String, String), Arc<ResourceEntry>>,
    /// By CRD name.
    crds: BTreeMap<String, Installed>,
}

/// The installed CRDs.
pub struct CrdRegistry {
    backend: Arc<dyn Backend>,
    served: RwLock<Served>,
    shutdown: CancellationToken,
    /// One HTTPS client (TLS configurations, kept-alive connections) for every CRD's
    /// conversion webhook.
    webhooks: Arc<WebhookClient>,
    /// The apiserver's caches, for conversion webhooks named by service.
    lookup: Weak<dyn ObjectLookup>,
}

/// A served group of custom resources, as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomGroup {
    pub name: String,
    /// Most preferred first (upstream's kube-aware version order).
    pub versions: Vec<String>,
}

impl CrdRegistry {
    /// An empty registry whose caches stop with `shutdown`; conversion webhooks given by
    /// service are found through `lookup`.
    pub fn new(
        backend: Arc<dyn Backend>,
        shutdown: CancellationToken,
        lookup: Weak<dyn ObjectLookup>,
    ) -> Self {
        Self {
            backend,
            served: RwLock::new(Served::default()),
            shutdown,
            webhooks: Arc::default(),
            lookup,
        }
    }

    /// The entry of a served custom resource version.
    pub fn entry(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceEntry>> {
        self.served
            .read()
            .entries
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// The entry of a custom resource by group and plural, in its preferred version.
    pub fn preferred_entry(&self, group: &str, plural: &str) -> Option<Arc<ResourceEntry>> {
        let served = self.served.read();
        let info = served
            .crds
            .values()
            .flat_map(|c| c.infos.first())
            .find(|i| i.group == group && i.plural == plural)?;
        served
            .entries
            .get(&(
                info.group.to_owned(),
                info.version.to_owned(),
                info.plural.to_owned(),
            ))
            .cloned()
    }

    /// Every served group, sorted by name, with its versions in preference order.
    pub fn groups(&self) -> Vec<CustomGroup> {
        let served = self.served.read();
        let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for installed in served.crds.values() {
            for info in &installed.infos {
                let versions = groups.entry(info.group).or_default();
                if !versions.iter().any(|v| v == info.version) {
                    versions.push(info.version.to_owned());
                }
            }
        }
        groups
            .into_iter()
            .map(|(name, mut versions)| {
                versions.sort_by(|a, b| kube_aware_cmp(a, b));
                CustomGroup {
                    name: name.to_owned(),
                    versions,
                }
            })
            .collect()
    }

    /// The served resources of one group-version, sorted by plural.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<&'static ResourceInfo> {
        let served = self.served.read();
        let mut infos: Vec<&'static ResourceInfo> = served
            .crds
            .values()
            .flat_map(|c| c.infos.iter().copied())
            .filter(|i| i.group == group && i.version == version)
            .collect();
        infos.sort_by_key(|i| i.plural);
        infos
    }

    /// The installed CRDs (as last installed).
    pub fn installed(&self) -> Vec<Arc<Value>> {
        self.served
            .read()
            .crds
            .values()
            .map(|c| c.crd.clone())
            .collect()
    }

    /// The CRD called `name` as last installed.
    pub fn installed_crd(&self, name: &str) -> Option<Arc<Value>> {
        self.served.read().crds.get(name).map(|c| c.crd.clone())
    }

    /// Serves `crd`'s served versions (replacing what was served for it). The watch cache is
    /// kept when the key prefix is unchanged, so watchers of the resource survive CRD updates.
    /// Returns whether what is served changed: a CRD write that leaves the served parts as
    /// they were (its controller's own status updates) only refreshes the kept copy, without
    /// compiling its schemas and rules again.
    pub async fn install(&self, crd: Arc<Value>) -> Result<bool, StorageError> {
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        {
            let mut served = self.served.write();
            if let Some(installed) = served.crds.get_mut(&name)
                && served_parts(&installed.crd) == served_parts(&crd)
            {
                installed.crd = crd;
                return Ok(false);
            }
        }
        let versions = served_versions(&crd);
        let Some(storage_version) = storage_version(&crd) else {
            return Ok(self.uninstall(&name));
        };
        let infos: Vec<&'static ResourceInfo> = versions
            .iter()
            .map(|v| resource_info(&crd, v, &storage_version))
            .collect();
        let Some(first) = infos.first() else {
            return Ok(self.uninstall(&name));
        };
        let prefix = keys::resource_prefix(first);
        let reusable = {
            let served = self.served.read();
            served
                .crds
                .get(&name)
                .filter(|c| c.cacher.prefix() == prefix)
                .map(|c| (c.cacher.clone(), c.stop.clone()))
        };
        let (cacher, stop) = match reusable {
            Some(found) => found,
            None => {
                let stop = self.shutdown.child_token();
                let cacher = Cacher::start(self.backend.clone(), prefix, stop.clone()).await?;
                (cacher, stop)
            }
        };
        let terminating = crd["metadata"]["deletionTimestamp"].is_string();
        let conversion =
            WebhookConverter::from_crd(&crd, self.webhooks.clone(), self.lookup.clone())
                .map(Arc::new);
        let mut entries = Vec::new();
        for (version, info) in versions.iter().zip(&infos) {
            let custom = Arc::new(custom_resource(
                &crd,
                version,
                &storage_version,
                terminating,
                conversion.clone(),
            ));
            let store = ResourceStore::for_custom(info, self.backend.clone(), custom.clone());
            entries.push((
                (
                    info.group.to_owned(),
                    info.version.to_owned(),
                    info.plural.to_owned(),
                ),
                Arc::new(ResourceEntry {
                    store,
                    cacher: cacher.clone(),
                    custom: Some(custom),
                }),
            ));
        }
        let mut served = self.served.write();
        if let Some(old) = served.crds.remove(&name) {
            remove_entries(&mut served.entries, &old.infos);
            if !Arc::ptr_eq(&old.cacher, &cacher) {
                old.stop.cancel();
            }
        }
        served.entries.extend(entries);
        served.crds.insert(
            name,
            Installed {
                crd,
                infos,
                cacher,
                stop,
            },
        );
        Ok(true)
    }

    /// Stops serving the CRD called `name`; whether it was served.
    pub fn uninstall(&self, name: &str) -> bool {
        let mut served = self.served.write();
        let Some(old) = served.crds.remove(name) else {
            return false;
        };
        remove_entries(&mut served.entries, &old.infos);
        old.stop.cancel();
        true
    }
}

/// What serving a CRD depends on: its spec, the names it was given and whether it is being
/// deleted (status conditions and storedVersions change nothing served).
fn served_parts(crd: &Value) -> (&Value, &Value, &Value) {
    (
        &crd["spec"],
        &crd["status"]["acceptedNames"],
        &crd["metadata"]["deletionTimestamp"],
    )
}

fn remove_entries(
    entries: &mut HashMap<(String, String, String), Arc<ResourceEntry>>,
    infos: &[&'static ResourceInfo],
) {
    for info in infos {
        entries.remove(&(
            info.group.to_owned(),
            info.version.to_owned(),
            info.plural.to_owned(),
        ));
    }
}

/// The versions with `served: true`, most preferred first.
fn served_versions(crd: &Value) -> Vec<&Value> {
    let mut versions: Vec<&Value> = crd["spec"]["versions"]
        .as_array()
        .map(|v| v.iter().filter(|v| v["served"] == true).collect())
        .unwrap_or_default();
    versions.sort_by(|a, b| {
        kube_aware_cmp(
            a["name"].as_str().unwrap_or_default(),
            b["name"].as_str().unwrap_or_default(),
        )
    });
    versions
}

/// The name of the version marked `storage: true`.
pub fn storage_version(crd: &Value) -> Option<String> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .map(String::from)
}

/// What the REST layer needs of one version. A schema that fails to compile here passed CRD
/// validation before, so it is served without it rather than not at all.
fn custom_resource(
    crd: &Value,
    version: &Value,
    storage_version: &str,
    terminating: bool,
    conversion: Option<Arc<WebhookConverter>>,
) -> CustomResource {
    let raw_schema = &version["schema"]["openAPIV3Schema"];
    let schema = raw_schema
        .is_object()
        .then(|| schema::Structural::new(raw_schema).ok())
        .flatten()
        .map(Arc::new);
    let cel = raw_schema
        .is_object()
        .then(|| {
            super::cel::CelValidator::compile(
                raw_schema,
                &api_types::validation::FieldPath::new("openAPIV3Schema"),
            )
            .ok()
            .flatten()
        })
        .flatten()
        .map(Arc::new);
    let columns = version["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let printer = CustomPrinter::new(&columns).unwrap_or_else(|err| {
        tracing::warn!(crd = %crd["metadata"]["name"], %err, "printer columns not usable");
        CustomPrinter::default()
    });
    let scale = version["subresources"]["scale"]
        .as_object()
        .map(|scale| ScalePaths {
            spec_replicas_path: text(scale.get("specReplicasPath")),
            status_replicas_path: text(scale.get("statusReplicasPath")),
            label_selector_path: scale
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(String::from),
        });
    CustomResource {
        crd_name: crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        storage_version: storage_version.to_owned(),
        schema,
        cel,
        printer: Arc::new(printer),
        scale,
        terminating,
        conversion,
    }
}

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}
