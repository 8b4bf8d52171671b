//! One real node: our apiserver (Node,RBAC, static token users), a containerd and our kubelet
//! running on it, as the suites that run real containers bring them up.

use crate::apiserver::ApiServer;
use crate::containerd::Containerd;
use crate::kubectl_compare::Comparison;
use crate::kubelet::{Kubelet, start_apiserver};
use crate::pki::Pki;
use anyhow::Context;
use std::path::Path;

/// A `--token-auth-file` with only the `e2e` token, an administrator.
pub const ADMIN_TOKENS: &str = "e2e,e2e-admin,1000,\"system:masters\"\n";

/// The running node, stopped on drop.
pub struct Node {
    // Dropped in this order: kubelet, containerd, apiserver.
    pub kubelet: Kubelet,
    pub containerd: Containerd,
    pub api: ApiServer,
    pub pki: Pki,
}

impl Node {
    /// Starts everything under `dir`, the kubelet registering as `node`. `tokens` is the
    /// apiserver's `--token-auth-file` (`token,user,uid[,"groups"]` lines): the e2e helpers
    /// act as the `e2e` token's user, so it must be an administrator.
    pub async fn start(dir: &Path, node: &str, tokens: &str) -> Self {
        let token_file = dir.join("tokens.csv");
        std::fs::write(&token_file, tokens).expect("writing the token file");
        let token_flag = format!("--token-auth-file={}", token_file.display());
        let (api, pki) = start_apiserver(dir, &["--authorization-mode=Node,RBAC", &token_flag])
            .await
            .expect("starting the apiserver");
        let (containerd, kubelet) = start_runtime(dir, &api, node)
            .await
            .unwrap_or_else(|err| panic!("node {node}: {err:#}"));
        Node {
            kubelet,
            containerd,
            api,
            pki,
        }
    }

    /// [`Node::start`] with [`ADMIN_TOKENS`], and both kubectls against it (their files in
    /// `dir`, their namespaces named after `ns`), the namespace `ns` created for tests that
    /// run both in one namespace.
    pub async fn with_kubectls(dir: &Path, node: &str, ns: &str) -> (Self, Comparison) {
        let node = Self::start(dir, node, ADMIN_TOKENS).await;
        let cmp = Comparison::for_apiserver(dir, &node.api, ns);
        cmp.upstream.ok(&["create", "namespace", ns]);
        (node, cmp)
    }

    /// The kubelet log's last `n` lines, for a failure's message.
    pub fn kubelet_log_tail(&self, n: usize) -> String {
        let log = self.kubelet.logs();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// A containerd (in `dir/containerd`) and our kubelet on it with the default configuration
/// (in `dir/kubelet`), registering with `api` as `name`.
pub async fn start_runtime(
    dir: &Path,
    api: &ApiServer,
    name: &str,
) -> anyhow::Result<(Containerd, Kubelet)> {
    let containerd_dir = dir.join("containerd");
    // Containerd::start blocks until its socket answers: off the runtime's workers.
    let containerd = tokio::task::spawn_blocking(move || Containerd::start(&containerd_dir))
        .await?
        .context("starting containerd")?;
    let kubelet = Kubelet::start(
        &dir.join("kubelet"),
        api,
        &containerd,
        name,
        serde_json::Value::Null,
        &[],
    )
    .await
    .context("starting the kubelet")?;
    Ok((containerd, kubelet))
}
