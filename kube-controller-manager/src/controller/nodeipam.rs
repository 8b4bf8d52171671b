//! Node IPAM: podCIDR allocation. Each node without a podCIDR gets the next free subnet of
//! every cluster CIDR (one per family when dual-stack); subnets of existing nodes are occupied
//! as they are seen, and released when their node goes.

mod cidr_set;

use super::worker::run_workers;
use super::{ControllerContext, InitResult};
use anyhow::Context;
use cidr_set::CidrSet;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;

const NAME: &str = "node-ipam-controller";

/// The node subnet sets for `--cluster-cidr` (comma-separated when dual-stack).
fn cidr_sets(cluster_cidr: &str, mask_size: Option<u8>) -> anyhow::Result<Vec<CidrSet>> {
    let cidrs: Vec<&str> = cluster_cidr
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    anyhow::ensure!(!cidrs.is_empty(), "--cluster-cidr is empty");
    anyhow::ensure!(cidrs.len() <= 2, "--cluster-cidr takes at most two CIDRs");
    let sets = cidrs
        .iter()
        .map(|cidr| {
            let (addr, _) = cidr_set::parse_cidr(cidr)?;
            let default = if addr.is_ipv6() { 64 } else { 24 };
            // Upstream's single mask size applies to single-stack clusters only.
            let size = if cidrs.len() == 1 {
                mask_size.unwrap_or(default)
            } else {
                default
            };
            CidrSet::new(cidr, size)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if sets.len() == 2 {
        anyhow::ensure!(
            sets[0].is_v6() != sets[1].is_v6(),
            "dual-stack --cluster-cidr needs one IPv4 and one IPv6 CIDR"
        );
    }
    Ok(sets)
}

fn pod_cidrs(node: &Node) -> Vec<String> {
    let spec = node.spec.as_ref();
    let cidrs = spec.and_then(|s| s.pod_cidrs.clone()).unwrap_or_default();
    if !cidrs.is_empty() {
        return cidrs;
    }
    spec.and_then(|s| s.pod_cidr.clone())
        .filter(|c| !c.is_empty())
        .into_iter()
        .collect()
}

struct Ipam {
    client: kube::Client,
    nodes: Lister<Node>,
    recorder: EventRecorder,
    sets: Mutex<Vec<CidrSet>>,
}

impl Ipam {
    fn occupy(&self, node: &Node) {
        let mut sets = self.sets.lock();
        for cidr in pod_cidrs(node) {
            let ok = sets.iter_mut().any(|s| s.occupy(&cidr).is_ok());
            if !ok {
                tracing::warn!(node = ?node.metadata.name, %cidr, "podCIDR is outside --cluster-cidr");
            }
        }
    }

    fn release(&self, cidrs: &[String]) {
        let mut sets = self.sets.lock();
        for cidr in cidrs {
            for set in sets.iter_mut() {
                let _ = set.release(cidr);
            }
        }
    }

    async fn sync(&self, name: String) -> anyhow::Result<()> {
        let Some(node) = self.nodes.get(&name) else {
            return Ok(());
        };
        if !pod_cidrs(&node).is_empty() {
            return Ok(());
        }
        let allocated: Option<Vec<String>> = {
            let mut sets = self.sets.lock();
            let mut got = Vec::new();
            for set in sets.iter_mut() {
                match set.allocate() {
                    Some(c) => got.push(c),
                    None => break,
                }
            }
            if got.len() == sets.len() {
                Some(got)
            } else {
                for (set, cidr) in sets.iter_mut().zip(&got) {
                    let _ = set.release(cidr);
                }
                None
            }
        };
        let Some(cidrs) = allocated else {
            self.recorder.event(
                &ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Node".into()),
                    name: Some(name.clone()),
                    uid: node.metadata.uid.clone(),
                    ..Default::default()
                },
                EventType::Normal,
                "CIDRNotAvailable",
                format!("Node {name} status is now: CIDRNotAvailable"),
            );
            anyhow::bail!("no podCIDR left for node {name}");
        };
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs},
        });
        let result = Api::<Node>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        if let Err(err) = result {
            self.release(&cidrs);
            return Err(anyhow::Error::new(err).context(format!("setting podCIDRs of node {name}")));
        }
        tracing::info!(node = %name, ?cidrs, "allocated podCIDRs");
        Ok(())
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        if !ctx.settings.allocate_node_cidrs {
            tracing::info!("node-ipam-controller: --allocate-node-cidrs is false, not starting");
            return Ok(None);
        }
        let cluster_cidr = ctx
            .settings
            .cluster_cidr
            .as_deref()
            .context("--cluster-cidr is required with --allocate-node-cidrs")?;
        let mut sets = cidr_sets(cluster_cidr, ctx.settings.node_cidr_mask_size)
            .context("--cluster-cidr / --node-cidr-mask-size")?;
        // Pod CIDRs never overlap the service range.
        for range in ctx
            .settings
            .service_cluster_ip_range
            .iter()
            .flat_map(|r| r.split(','))
        {
            let range = range.trim();
            if range.is_empty() {
                continue;
            }
            for set in sets.iter_mut() {
                set.occupy_overlapping(range)
                    .context("--service-cluster-ip-range")?;
            }
        }
        let client = ctx.client_for("node-controller").await?;
        let nodes = ctx.informers.informer::<Node>();
        let queue = RateLimitingQueue::<String>::default_controller(NAME);
        let controller = Arc::new(Ipam {
            client,
            nodes: nodes.lister(),
            recorder: ctx.recorder("cidrAllocator"),
            sets: Mutex::new(sets),
        });
        let (c1, q1, c2, q2, c3) = (
            controller.clone(),
            queue.clone(),
            controller.clone(),
            queue.clone(),
            controller.clone(),
        );
        let seen = move |c: &Ipam, q: &RateLimitingQueue<String>, n: &Node| {
            if pod_cidrs(n).is_empty() {
                if let Some(name) = n.metadata.name.clone() {
                    q.add(name);
                }
            } else {
                c.occupy(n);
            }
        };
        nodes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |n: &Arc<Node>, _| seen(&c1, &q1, n))
                .on_update(move |_, n: &Arc<Node>| seen(&c2, &q2, n))
                .on_delete(move |d: &Deleted<Node>| c3.release(&pod_cidrs(d.object()))),
        );
        let shutdown = ctx.shutdown.clone();
        Ok(Some(Box::pin(async move {
            if !nodes.wait_for_cache_sync(&shutdown).await {
                return;
            }
            // Every subnet already in use is taken before the first allocation.
            for node in controller.nodes.list() {
                controller.occupy(&node);
            }
            run_workers(NAME, queue, 1, shutdown, move |name| {
                let controller = controller.clone();
                async move { controller.sync(name).await }
            })
            .await;
        }) as super::Running))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_cidr_flags() {
        let dual = cidr_sets("10.244.0.0/16,fd00::/48", Some(26)).unwrap();
        assert_eq!(dual.len(), 2);
        let mut single = cidr_sets("10.244.0.0/16", Some(26)).unwrap();
        assert_eq!(single[0].allocate().as_deref(), Some("10.244.0.0/26"));
        assert!(cidr_sets("10.0.0.0/16,10.1.0.0/16", None).is_err());
        assert!(cidr_sets("", None).is_err());
        assert!(cidr_sets("10.0.0.0/16,fd00::/48,fd01::/48", None).is_err());
    }
}
