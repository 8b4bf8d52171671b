//! Starting the kubelet API from the kubelet's configuration: the secure port (TLS, client
//! CA, authentication and authorization from the KubeletConfiguration) and, when
//! `readOnlyPort` is set, the read-only port.

use super::auth::{AuthConfig, AuthorizationMode, ServerAuth};
use super::host::HostInterface;
use super::review::{ApiReviewer, Reviewer};
use super::{KubeletServer, start_read_only, start_secure};
use crate::app::config::{Config, KubeletConfiguration};
use anyhow::bail;
use component_base::debug::DebugHandlers;
use component_base::serving::RunningServer;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl AuthConfig {
    /// The `authentication` and `authorization` stanzas of a KubeletConfiguration.
    pub fn from_kubelet_config(c: &KubeletConfiguration) -> anyhow::Result<Self> {
        let authorization = match c.authorization.mode.as_str() {
            "Webhook" => AuthorizationMode::Webhook,
            "AlwaysAllow" => AuthorizationMode::AlwaysAllow,
            other => bail!("unknown authorization mode {other:?}"),
        };
        let ca = &c.authentication.x509.client_ca_file;
        Ok(Self {
            anonymous: c.authentication.anonymous.enabled,
            client_ca_file: (!ca.is_empty()).then(|| PathBuf::from(ca)),
            webhook_authentication: c.authentication.webhook.enabled,
            token_cache_ttl: c.authentication.webhook.cache_ttl,
            authorization,
            authorized_ttl: c.authorization.webhook.cache_authorized_ttl,
            unauthorized_ttl: c.authorization.webhook.cache_unauthorized_ttl,
        })
    }
}

/// Starts the secure kubelet API on `port` and the read-only one on `readOnlyPort` (if set).
/// `client` is the kubelet's apiserver client, needed for webhook authentication and
/// authorization. The returned servers drain when `shutdown` is cancelled.
pub async fn start(
    config: &Config,
    host: Arc<dyn HostInterface>,
    debug: DebugHandlers,
    client: Option<kube::Client>,
    shutdown: CancellationToken,
) -> anyhow::Result<Vec<RunningServer>> {
    let auth_config = AuthConfig::from_kubelet_config(&config.kubelet)?;
    let reviewer = client.map(|c| Arc::new(ApiReviewer::new(c)) as Arc<dyn Reviewer>);
    let auth = ServerAuth::new(auth_config, reviewer)?;
    let mut running = Vec::new();
    let secure = KubeletServer::new(host.clone(), debug.clone(), auth);
    running.extend(start_secure(&config.serving, secure, shutdown.clone()).await?);
    if let Some(addr) = config.read_only_addr {
        let read_only = KubeletServer::read_only(host, debug);
        running.push(start_read_only(addr, read_only, shutdown).await?);
    }
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_stanzas_map_to_auth_settings() {
        let defaults = AuthConfig::from_kubelet_config(&KubeletConfiguration::default()).unwrap();
        assert_eq!(defaults.authorization, AuthorizationMode::Webhook);
        assert!(defaults.webhook_authentication && !defaults.anonymous);
        assert_eq!(defaults.client_ca_file, None);
        assert_eq!(defaults.authorized_ttl, std::time::Duration::from_secs(300));
        assert_eq!(
            defaults.unauthorized_ttl,
            std::time::Duration::from_secs(30)
        );

        let mut c = KubeletConfiguration::default();
        c.authorization.mode = "AlwaysAllow".into();
        c.authentication.anonymous.enabled = true;
        c.authentication.x509.client_ca_file = "/ca.crt".into();
        let auth = AuthConfig::from_kubelet_config(&c).unwrap();
        assert_eq!(auth.authorization, AuthorizationMode::AlwaysAllow);
        assert!(auth.anonymous);
        assert_eq!(auth.client_ca_file, Some(PathBuf::from("/ca.crt")));

        c.authorization.mode = "RBAC".into();
        assert!(AuthConfig::from_kubelet_config(&c).is_err());
    }
}
