//! Finding the configuration: `--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, in-cluster.

use std::path::{Path, PathBuf};

use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};

use super::environment::Environment;
use super::error::ConfigError;
use super::rate_limit::RateLimitLayer;

/// client-go's default client-side QPS.
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go's default client-side burst.
pub const DEFAULT_BURST: u32 = 10;

/// A loaded configuration: kube's connection settings plus what client-go's `rest.Config` adds.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Server, TLS and credentials.
    pub kube: kube::Config,
    /// Sustained requests per second; `<= 0` disables client-side rate limiting.
    pub qps: f32,
    /// Requests allowed at once above `qps`.
    pub burst: u32,
    /// The `User-Agent` header; kube's default when `None`.
    pub user_agent: Option<String>,
}

impl ClientConfig {
    /// Wraps a kube config with client-go's default QPS and burst.
    pub fn new(kube: kube::Config) -> Self {
        Self {
            kube,
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            user_agent: None,
        }
    }

    /// Sets QPS and burst (components' `--kube-api-qps` / `--kube-api-burst`).
    pub fn with_rate_limit(mut self, qps: f32, burst: u32) -> Self {
        self.qps = qps;
        self.burst = burst;
        self
    }

    /// Sets the user agent, see [`default_user_agent`](super::default_user_agent).
    pub fn with_user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = Some(user_agent.into());
        self
    }

    /// The kube config with the user agent applied as a header.
    pub fn to_kube_config(&self) -> Result<kube::Config, ConfigError> {
        let mut config = self.kube.clone();
        if let Some(ua) = &self.user_agent {
            let value = http::HeaderValue::from_str(ua)
                .map_err(|_| ConfigError::InvalidUserAgent(ua.clone()))?;
            config
                .headers
                .retain(|(name, _)| name != http::header::USER_AGENT);
            config.headers.push((http::header::USER_AGENT, value));
        }
        Ok(config)
    }

    /// A kube client for this configuration, rate limited to `qps`/`burst`.
    ///
    /// Must be called within a tokio runtime (kube's client spawns its request buffer).
    pub fn build_client(&self) -> Result<kube::Client, ConfigError> {
        let builder = kube::client::ClientBuilder::try_from(self.to_kube_config()?)?;
        Ok(if self.qps > 0.0 {
            builder
                .with_layer(&RateLimitLayer::new(self.qps, self.burst))
                .build()
        } else {
            builder.build()
        })
    }
}

/// The client of a component: its `--kubeconfig` / `--master` (else `KUBECONFIG`, else
/// in-cluster), identified by its user agent (`component/version (os/arch) ...`).
pub async fn component_client(
    kubeconfig: Option<&Path>,
    master: Option<&str>,
    component: &str,
    version: &str,
) -> Result<kube::Client, ConfigError> {
    load_client_config(kubeconfig, master, None)
        .await?
        .with_user_agent(super::default_user_agent(component, version))
        .build_client()
}

/// Loads the configuration as client-go components do, from this process's environment.
///
/// See [`load_client_config_from`].
pub async fn load_client_config(
    kubeconfig: Option<&Path>,
    master: Option<&str>,
    context: Option<&str>,
) -> Result<ClientConfig, ConfigError> {
    load_client_config_from(&Environment::from_process(), kubeconfig, master, context).await
}

/// Loads the configuration with client-go's precedence:
///
/// 1. the explicit `kubeconfig` file (an error if it does not exist);
/// 2. else the files of `KUBECONFIG`, merged as kubectl does (the first to set a value wins;
///    missing files are skipped);
/// 3. else `~/.kube/config` if it exists;
/// 4. else, without `master`, the in-cluster config (`KUBERNETES_SERVICE_HOST`/`_PORT` and the
///    service account token and CA).
///
/// `master` replaces the server of whatever was loaded; alone, it is the whole configuration
/// (no credentials). `context` selects a kubeconfig context instead of `current-context`.
pub async fn load_client_config_from(
    env: &Environment,
    kubeconfig: Option<&Path>,
    master: Option<&str>,
    context: Option<&str>,
) -> Result<ClientConfig, ConfigError> {
    let master = master.filter(|m| !m.is_empty());
    let merged = match kubeconfig.filter(|p| !p.as_os_str().is_empty()) {
        Some(path) => {
            if !path.exists() {
                return Err(ConfigError::KubeconfigNotFound(path.to_path_buf()));
            }
            Some(Kubeconfig::read_from(path)?)
        }
        None => read_default_kubeconfigs(env)?,
    }
    .filter(|k| !is_empty(k));

    let mut config = match merged {
        Some(kc) if context.is_some() || kc.current_context.is_some() || master.is_none() => {
            from_kubeconfig(kc, context).await?
        }
        // A kubeconfig without a current context only matters when it gives the server.
        Some(_) | None => match master {
            Some(m) => kube::Config::new(parse_server(m)?),
            None => in_cluster(env).await?.ok_or(ConfigError::Empty)?,
        },
    };
    if let Some(m) = master {
        config.cluster_url = parse_server(m)?;
    }
    Ok(ClientConfig::new(config))
}

/// `KUBECONFIG` if it names any file, else `~/.kube/config`; `None` when neither exists.
fn read_default_kubeconfigs(env: &Environment) -> Result<Option<Kubeconfig>, ConfigError> {
    let listed: Vec<PathBuf> = env.kubeconfig_paths();
    let paths: Vec<PathBuf> = if listed.is_empty() {
        env.default_kubeconfig_path().into_iter().collect()
    } else {
        listed
    };
    let mut merged: Option<Kubeconfig> = None;
    // kubectl ignores KUBECONFIG entries that do not exist.
    for path in paths.iter().filter(|p| p.exists()) {
        let next = Kubeconfig::read_from(path)?;
        merged = Some(match merged {
            Some(m) => m.merge(next)?,
            None => next,
        });
    }
    Ok(merged)
}

/// client-go treats a kubeconfig with nothing in it as no kubeconfig at all.
fn is_empty(kc: &Kubeconfig) -> bool {
    kc.clusters.is_empty()
        && kc.contexts.is_empty()
        && kc.auth_infos.is_empty()
        && kc.current_context.is_none()
}

async fn from_kubeconfig(
    kc: Kubeconfig,
    context: Option<&str>,
) -> Result<kube::Config, ConfigError> {
    let context = context.filter(|c| !c.is_empty());
    match context {
        Some(c) if !kc.contexts.iter().any(|nc| nc.name == c) => {
            return Err(ConfigError::ContextNotFound(c.to_string()));
        }
        None if kc.current_context.as_deref().is_none_or(str::is_empty) => {
            return Err(ConfigError::NoCurrentContext);
        }
        _ => {}
    }
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    Ok(kube::Config::from_custom_kubeconfig(kc, &options).await?)
}

/// client-go's default scheme for a server given without one.
fn parse_server(url: &str) -> Result<http::Uri, ConfigError> {
    let full = if url.contains("://") {
        url.to_string()
    } else {
        format!("https://{url}")
    };
    let uri: http::Uri =
        full.parse()
            .map_err(|e: http::uri::InvalidUri| ConfigError::InvalidServer {
                url: url.to_string(),
                reason: e.to_string(),
            })?;
    if uri.host().is_none() {
        return Err(ConfigError::InvalidServer {
            url: url.to_string(),
            reason: "no host".to_string(),
        });
    }
    Ok(uri)
}

/// The in-cluster config, `None` when not running in a pod (the service variables unset).
///
/// The token is read from its file on each use by kube, so rotated tokens are picked up.
async fn in_cluster(env: &Environment) -> Result<Option<kube::Config>, ConfigError> {
    let (Some(host), Some(port)) = (
        env.service_host.as_deref().filter(|h| !h.is_empty()),
        env.service_port.as_deref().filter(|p| !p.is_empty()),
    ) else {
        return Ok(None);
    };
    let port: u16 = port
        .parse()
        .map_err(|_| ConfigError::InCluster(format!("invalid KUBERNETES_SERVICE_PORT {port:?}")))?;
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let server = format!("https://{host}:{port}");
    let uri = parse_server(&server)?;

    let dir = &env.service_account_dir;
    let token = dir.join("token");
    std::fs::metadata(&token)
        .map_err(|e| ConfigError::InCluster(format!("open {}: {e}", token.display())))?;
    let ca = dir.join("ca.crt");
    // client-go logs and goes on without a CA file: TLS then uses the system roots.
    let ca = match std::fs::metadata(&ca) {
        Ok(_) => Some(ca.to_string_lossy().into_owned()),
        Err(e) => {
            tracing::error!(path = %ca.display(), error = %e, "expected to load root CA config");
            None
        }
    };
    let namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());

    // Going through a kubeconfig lets kube parse the CA and re-read the token file on each use,
    // so rotated tokens are picked up.
    let user = AuthInfo {
        token_file: Some(token.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let mut kc = single_cluster_kubeconfig(&uri.to_string(), user);
    if let Some(cluster) = kc.clusters.first_mut().and_then(|c| c.cluster.as_mut()) {
        cluster.certificate_authority = ca;
    }
    if let Some(context) = kc.contexts.first_mut().and_then(|c| c.context.as_mut()) {
        context.namespace = namespace;
    }
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| ConfigError::InCluster(e.to_string()))?;
    Ok(Some(config))
}

/// A kubeconfig with one cluster at `server`, one user and one context, all named `default`.
fn single_cluster_kubeconfig(server: &str, user: AuthInfo) -> Kubeconfig {
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: "default".into(),
            cluster: Some(Cluster {
                server: Some(server.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "default".into(),
            auth_info: Some(user),
            ..Default::default()
        }],
        contexts: vec![NamedContext {
            name: "default".into(),
            context: Some(Context {
                cluster: "default".into(),
                user: Some("default".into()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some("default".into()),
        ..Default::default()
    }
}
