//! One real node: our apiserver (Node,RBAC, static token users), a containerd and our kubelet
//! running on it, as the suites that run real containers bring them up.

use crate::apiserver::ApiServer;
use crate::containerd::Containerd;
use crate::kubelet::{Kubelet, start_apiserver};
use crate::pki::Pki;
use std::path::Path;

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
        let containerd = Containerd::start(&dir.join("containerd")).expect("starting containerd");
        let kubelet = Kubelet::start(
            &dir.join("kubelet"),
            &api,
            &containerd,
            node,
            serde_json::Value::Null,
            &[],
        )
        .await
        .expect("starting the kubelet");
        Node {
            kubelet,
            containerd,
            api,
            pki,
        }
    }
}
