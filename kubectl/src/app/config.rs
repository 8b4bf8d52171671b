//! The client configuration a kubectl invocation uses: the kubeconfig chain with the global
//! flags layered on top, as upstream's `genericclioptions.ConfigFlags`.

use super::options::GlobalOptions;
use client_go_rs::config::{ClientConfig, ConfigError, load_client_config};

/// Where kubectl goes when nothing configures a server, as upstream's kubectl does.
const FALLBACK_SERVER: &str = "http://localhost:8080";

/// Loads the configuration for these flags.
pub async fn client_config(global: &GlobalOptions) -> Result<ClientConfig, ConfigError> {
    let loaded = load_client_config(
        global.kubeconfig.as_deref(),
        global.server.as_deref(),
        global.context.as_deref(),
    )
    .await;
    let mut config = match loaded {
        Err(ConfigError::Empty) => load_client_config(None, Some(FALLBACK_SERVER), None).await?,
        other => other?,
    };
    if let Some(token) = &global.token {
        config.kube.auth_info.token = Some(token.clone().into());
    }
    if global.insecure_skip_tls_verify {
        config.kube.accept_invalid_certs = true;
    }
    Ok(
        config.with_user_agent(client_go_rs::config::default_user_agent(
            "kubectl",
            component_base::version::GIT_VERSION,
        )),
    )
}
