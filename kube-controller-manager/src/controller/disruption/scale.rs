//! The scale of the controllers owning a budget's pods: ReplicaSets (or the Deployment
//! owning them), ReplicationControllers and StatefulSets from the caches, any other kind
//! through its `scale` subresource (upstream's finders).

use super::status::{Scale, controller_of};
use anyhow::Context as _;
use client_go_rs::listers::Lister;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone)]
pub struct Finders {
    pub client: kube::Client,
    pub replica_sets: Lister<ReplicaSet>,
    pub deployments: Lister<Deployment>,
    pub stateful_sets: Lister<StatefulSet>,
    pub replication_controllers: Lister<ReplicationController>,
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

impl Finders {
    /// The scale of every distinct controller of `pods`, by the controller reference's uid.
    pub async fn resolve(
        &self,
        ns: &str,
        pods: &[Arc<Pod>],
    ) -> HashMap<String, Result<Scale, String>> {
        let mut found = HashMap::new();
        for pod in pods {
            let Some(owner) = controller_of(pod) else {
                continue;
            };
            if found.contains_key(&owner.uid) {
                continue;
            }
            let scale = self.scale(ns, owner).await.map_err(|e| format!("{e:#}"));
            found.insert(owner.uid.clone(), scale);
        }
        found
    }

    async fn scale(&self, ns: &str, owner: &OwnerReference) -> anyhow::Result<Scale> {
        let group = group_of(&owner.api_version);
        let name = owner.name.as_str();
        let matching_uid = |uid: &Option<String>| uid.as_deref() == Some(owner.uid.as_str());
        match (group, owner.kind.as_str()) {
            ("apps", "ReplicaSet") => {
                let rs = self
                    .replica_sets
                    .namespace(ns)
                    .get(name)
                    .filter(|rs| matching_uid(&rs.metadata.uid))
                    .with_context(|| format!("replicaset {ns}/{name} not found"))?;
                let deployment = rs
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|r| r.controller == Some(true) && r.kind == "Deployment");
                // A Deployment's pods count by the Deployment's scale, whichever ReplicaSet
                // holds them.
                if let Some(d) = deployment {
                    let dep = self
                        .deployments
                        .namespace(ns)
                        .get(&d.name)
                        .filter(|dep| dep.metadata.uid.as_deref() == Some(d.uid.as_str()))
                        .with_context(|| format!("deployment {ns}/{} not found", d.name))?;
                    let replicas = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    return Ok((d.uid.clone(), replicas));
                }
                let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Ok((owner.uid.clone(), replicas))
            }
            ("apps", "Deployment") => {
                let dep = self
                    .deployments
                    .namespace(ns)
                    .get(name)
                    .filter(|d| matching_uid(&d.metadata.uid))
                    .with_context(|| format!("deployment {ns}/{name} not found"))?;
                let replicas = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Ok((owner.uid.clone(), replicas))
            }
            ("apps", "StatefulSet") => {
                let ss = self
                    .stateful_sets
                    .namespace(ns)
                    .get(name)
                    .filter(|s| matching_uid(&s.metadata.uid))
                    .with_context(|| format!("statefulset {ns}/{name} not found"))?;
                let replicas = ss.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Ok((owner.uid.clone(), replicas))
            }
            ("", "ReplicationController") => {
                let rc = self
                    .replication_controllers
                    .namespace(ns)
                    .get(name)
                    .filter(|r| matching_uid(&r.metadata.uid))
                    .with_context(|| format!("replicationcontroller {ns}/{name} not found"))?;
                let replicas = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Ok((owner.uid.clone(), replicas))
            }
            _ => self.scale_subresource(ns, owner).await,
        }
    }

    async fn scale_subresource(&self, ns: &str, owner: &OwnerReference) -> anyhow::Result<Scale> {
        let (group, version) = match owner.api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", owner.api_version.as_str()),
        };
        let gvk = GroupVersionKind::gvk(group, version, &owner.kind);
        let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .with_context(|| format!("resolving {}/{}", owner.api_version, owner.kind))?;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &resource);
        let scale = api
            .get_scale(&owner.name)
            .await
            .with_context(|| format!("getting the scale of {} {ns}/{}", owner.kind, owner.name))?;
        let uid = scale.metadata.uid.clone().unwrap_or_default();
        if uid != owner.uid {
            anyhow::bail!(
                "{} {ns}/{} has uid {uid}, not {}",
                owner.kind,
                owner.name,
                owner.uid
            );
        }
        let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
        Ok((uid, replicas))
    }
}
