//! The client configuration a kubectl invocation uses: the kubeconfig chain with the global
//! flags layered on top, as upstream's `genericclioptions.ConfigFlags`.

use super::options::GlobalOptions;
use client_go_rs::config::{ClientConfig, ConfigError, load_client_config};
use std::time::Duration;

/// Where kubectl goes when nothing configures a server, as upstream's kubectl does.
const FALLBACK_SERVER: &str = "http://localhost:8080";

/// Loads the configuration for these flags.
pub async fn client_config(global: &GlobalOptions) -> anyhow::Result<ClientConfig> {
    for path in kubeconfig_files(global) {
        crate::klog::config_loaded(&path);
    }
    let mut config = if global.cluster.is_some() || global.user.is_some() {
        // client-go-rs selects only contexts; a cluster or user override needs kube's options.
        custom_kubeconfig(global).await?
    } else {
        let loaded = load_client_config(
            global.kubeconfig.as_deref(),
            global.server.as_deref(),
            global.context.as_deref(),
        )
        .await;
        match loaded {
            Err(ConfigError::Empty) => {
                load_client_config(None, Some(FALLBACK_SERVER), None).await?
            }
            other => other?,
        }
    };
    let auth = &mut config.kube.auth_info;
    if let Some(token) = &global.token {
        auth.token = Some(token.clone().into());
    }
    if let Some(cert) = &global.client_certificate {
        auth.client_certificate = Some(cert.display().to_string());
        auth.client_certificate_data = None;
    }
    if let Some(key) = &global.client_key {
        auth.client_key = Some(key.display().to_string());
        auth.client_key_data = None;
    }
    if let Some(user) = &global.as_user {
        auth.impersonate = Some(user.clone());
    }
    if !global.as_group.is_empty() {
        auth.impersonate_groups = Some(global.as_group.clone());
    }
    if let Some(ca) = &global.certificate_authority {
        anyhow::ensure!(
            ca.exists(),
            "unable to read certificate-authority {} for {} due to open {}: no such file or directory",
            ca.display(),
            config.kube.cluster_url,
            ca.display()
        );
        config.kube.root_cert_file = Some(ca.clone());
    }
    if global.insecure_skip_tls_verify {
        config.kube.accept_invalid_certs = true;
    }
    let timeout = parse_timeout(&global.request_timeout)?;
    config.kube.read_timeout = timeout;
    config.kube.write_timeout = timeout;
    // kubectl is a user's tool: upstream's kubectl sets QPS 50 / burst 300 for its clients.
    Ok(config
        .with_rate_limit(50.0, 300)
        .with_user_agent(client_go_rs::config::default_user_agent(
            "kubectl",
            component_base::version::GIT_VERSION,
        )))
}

/// The kubeconfig files read, in clientcmd's order: `--kubeconfig`, else the existing files
/// of `KUBECONFIG`, else `~/.kube/config` if it exists.
fn kubeconfig_files(global: &GlobalOptions) -> Vec<std::path::PathBuf> {
    if let Some(path) = global.kubeconfig.as_ref().filter(|p| p.exists()) {
        return vec![path.clone()];
    }
    let listed: Vec<std::path::PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed.into_iter().filter(|p| p.exists()).collect();
    }
    std::env::var_os("HOME")
        .map(|home| std::path::PathBuf::from(home).join(".kube").join("config"))
        .filter(|p| p.exists())
        .into_iter()
        .collect()
}

async fn custom_kubeconfig(global: &GlobalOptions) -> anyhow::Result<ClientConfig> {
    let kubeconfig = match &global.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path)?,
        None => kube::config::Kubeconfig::read()?,
    };
    let options = kube::config::KubeConfigOptions {
        context: global.context.clone(),
        cluster: global.cluster.clone(),
        user: global.user.clone(),
    };
    let mut kube = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
    if let Some(server) = &global.server {
        kube.cluster_url = server.parse()?;
    }
    Ok(ClientConfig::new(kube))
}

/// `--request-timeout`: `0` (none), a bare number of seconds, or a Go duration (`5s`, `1m30s`).
pub fn parse_timeout(text: &str) -> anyhow::Result<Option<Duration>> {
    let invalid = || {
        anyhow::anyhow!(
            "Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)"
        )
    };
    let text = text.trim();
    if text.is_empty() || text == "0" {
        return Ok(None);
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Some(Duration::from_secs(secs)));
    }
    let duration = parse_go_duration(text).ok_or_else(invalid)?;
    Ok((!duration.is_zero()).then_some(duration))
}

/// A Go duration string (`1h2m3.5s`, `300ms`); `None` if it does not parse.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        let cases = [
            ("0", Some(None)),
            ("5", Some(Some(Duration::from_secs(5)))),
            ("2m", Some(Some(Duration::from_secs(120)))),
            ("1m30s", Some(Some(Duration::from_secs(90)))),
            ("500ms", Some(Some(Duration::from_millis(500)))),
            ("abc", None),
            ("5x", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_timeout(text).ok(), want, "{text}");
        }
    }
}
