//! The volume binder's assumptions: PVs and PVCs as this scheduler intends them to become
//! (a PV's claimRef set, a claim's selected node annotated) between Reserve and the moment the
//! informers show the real objects, so that the next pods do not pick the same volume.

use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Resource;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Whether the informer's copy is newer than the assumed one (then the assumption is over:
/// either it came true or someone else changed the object).
fn informer_is_newer<K: Resource>(informer: &K, assumed: &K) -> bool {
    let a = informer
        .meta()
        .resource_version
        .as_deref()
        .unwrap_or_default();
    let b = assumed
        .meta()
        .resource_version
        .as_deref()
        .unwrap_or_default();
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => a != b,
    }
}

/// Assumed objects over an informer's lister, keyed as the lister keys them.
pub struct AssumeCache<K> {
    lister: Lister<K>,
    assumed: Mutex<HashMap<String, Arc<K>>>,
}

impl<K: Resource> AssumeCache<K> {
    pub fn new(lister: Lister<K>) -> Self {
        Self {
            lister,
            assumed: Mutex::new(HashMap::new()),
        }
    }

    fn resolve(&self, key: &str, informer: Option<Arc<K>>) -> Option<Arc<K>> {
        let mut assumed = self.assumed.lock();
        match (assumed.get(key), informer) {
            (Some(a), Some(i)) if informer_is_newer(i.as_ref(), a.as_ref()) => {
                assumed.remove(key);
                Some(i)
            }
            (Some(a), Some(_)) => Some(a.clone()),
            // The object is gone: so is the assumption.
            (Some(_), None) => {
                assumed.remove(key);
                None
            }
            (None, i) => i,
        }
    }

    pub fn assume(&self, key: String, obj: Arc<K>) {
        self.assumed.lock().insert(key, obj);
    }

    /// Drops an assumption (Unreserve, or a failed API write).
    pub fn restore(&self, key: &str) {
        self.assumed.lock().remove(key);
    }

    pub fn lister(&self) -> &Lister<K> {
        &self.lister
    }
}

impl AssumeCache<PersistentVolume> {
    pub fn get(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.resolve(name, self.lister.get(name))
    }

    /// The volumes of one class, assumptions applied.
    pub fn list_class(&self, class: &str) -> Vec<Arc<PersistentVolume>> {
        let pvs = self
            .lister
            .list_matching(|pv| super::helpers::volume_class(pv) == class);
        if self.assumed.lock().is_empty() {
            return pvs;
        }
        pvs.into_iter()
            .filter_map(|pv| {
                let name = pv.metadata.name.clone().unwrap_or_default();
                self.resolve(&name, Some(pv))
            })
            .collect()
    }
}

impl AssumeCache<PersistentVolumeClaim> {
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        let informer = self.lister.namespace(namespace).get(name);
        if self.assumed.lock().is_empty() {
            return informer;
        }
        self.resolve(&format!("{namespace}/{name}"), informer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use client_go_rs::listers::Indexer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pv(name: &str, rv: &str, class: &str) -> Arc<PersistentVolume> {
        Arc::new(PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PersistentVolumeSpec {
                storage_class_name: Some(class.into()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn assumptions_last_until_the_informer_moves_on() {
        let indexer = Arc::new(Indexer::<PersistentVolume>::new());
        indexer.insert(pv("a", "5", "fast"));
        let cache = AssumeCache::new(Lister::new(indexer.clone()));
        // Same version as the informer's: the assumption wins.
        cache.assume("a".into(), pv("a", "5", "assumed"));
        assert_eq!(volume_class_of(&cache.get("a")), "assumed");
        assert_eq!(cache.list_class("fast").len(), 1);
        assert_eq!(
            volume_class_of(&cache.list_class("fast").first().cloned()),
            "assumed"
        );
        // An older informer copy does not undo it either.
        indexer.insert(pv("a", "4", "fast"));
        assert_eq!(volume_class_of(&cache.get("a")), "assumed");
        // A newer one ends it.
        indexer.insert(pv("a", "6", "fast"));
        assert_eq!(volume_class_of(&cache.get("a")), "fast");
        // Restore drops an assumption at once.
        cache.assume("a".into(), pv("a", "6", "assumed"));
        cache.restore("a");
        assert_eq!(volume_class_of(&cache.get("a")), "fast");
        // A deleted object takes its assumption with it.
        cache.assume("a".into(), pv("a", "6", "assumed"));
        indexer.delete("a");
        assert!(cache.get("a").is_none());
    }

    fn volume_class_of(pv: &Option<Arc<PersistentVolume>>) -> String {
        pv.as_ref()
            .and_then(|p| p.spec.as_ref())
            .and_then(|s| s.storage_class_name.clone())
            .unwrap_or_default()
    }
}
