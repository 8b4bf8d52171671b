//! The Services service links are made from, from one shared informer (a watch of every
//! Service), as upstream's kubelet keeps a Service lister rather than asking per pod.

use client_go_rs::informers::SharedInformer;
use k8s_openapi::api::core::v1::Service;
use std::sync::Arc;

/// The kubelet's view of Services; [`ServiceLister::default`] knows none (standalone).
#[derive(Clone, Default)]
pub struct ServiceLister {
    informer: Option<Arc<SharedInformer<Service>>>,
}

impl ServiceLister {
    pub fn new(informer: Arc<SharedInformer<Service>>) -> Self {
        Self {
            informer: Some(informer),
        }
    }

    /// The Services of `namespace` and the master service `default/kubernetes`: what
    /// [`super::service_env`] needs. Fails until the first list arrived, as upstream (a
    /// container made before would miss its links for good).
    pub fn services_for(&self, namespace: &str) -> anyhow::Result<Vec<Service>> {
        let Some(informer) = &self.informer else {
            return Ok(Vec::new());
        };
        if !informer.has_synced() {
            anyhow::bail!(
                "services have not yet been read at least once, cannot construct envvars"
            );
        }
        let lister = informer.indexer();
        let mut out: Vec<Service> = lister
            .list_namespace(namespace)
            .into_iter()
            .map(|s| (*s).clone())
            .collect();
        if namespace != "default"
            && let Some(master) = lister.get("default", "kubernetes")
        {
            out.push((*master).clone());
        }
        Ok(out)
    }
}
