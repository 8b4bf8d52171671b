//! `kubectl config set-context|set-cluster|set-credentials`: merge the given fields into an entry.
//!
//! Flags that share a name with a global flag (`--server`, `--token`, `--namespace`,
//! `--insecure-skip-tls-verify`, `--cluster`, `--user`, `--certificate-authority`, ...) keep the
//! global flag's field name and type: clap then lets the local flag shadow the global one, as
//! cobra does for upstream, and the value it copies up to the global flags still downcasts.

use super::Session;
use super::view::go_io_error;
use crate::kubeconfig::model::{AuthInfo, Cluster, ExecConfig, ExecEnvVar, base64_encode};
use crate::kubeconfig::write::modify_config;
use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};

/// Flags of `kubectl config set-context`.
#[derive(Debug, Clone, Args)]
pub struct SetContextArgs {
    pub name: Option<String>,
    /// Modify the current context
    #[arg(long)]
    pub current: bool,
    /// cluster for the context entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub cluster: Option<String>,
    /// user for the context entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub user: Option<String>,
    /// namespace for the context entry in kubeconfig
    #[arg(short = 'n', long, value_name = "string")]
    pub namespace: Option<String>,
}

/// Flags of `kubectl config set-cluster`.
#[derive(Debug, Clone, Args)]
pub struct SetClusterArgs {
    pub name: Option<String>,
    /// server for the cluster entry in kubeconfig
    #[arg(short = 's', long, value_name = "string")]
    pub server: Option<String>,
    /// Path to certificate-authority file for the cluster entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub certificate_authority: Option<PathBuf>,
    /// embed-certs for the cluster entry in kubeconfig
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub embed_certs: Option<bool>,
    /// insecure-skip-tls-verify for the cluster entry in kubeconfig
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// tls-server-name for the cluster entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub tls_server_name: Option<String>,
    /// proxy-url for the cluster entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub proxy_url: Option<String>,
}

/// Flags of `kubectl config set-credentials`.
#[derive(Debug, Clone, Args)]
pub struct SetCredentialsArgs {
    pub name: Option<String>,
    /// Path to client-certificate file for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub client_certificate: Option<PathBuf>,
    /// Path to client-key file for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub client_key: Option<PathBuf>,
    /// Embed client cert/key for the user entry in kubeconfig
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub embed_certs: Option<bool>,
    /// token for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub token: Option<String>,
    /// username for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub username: Option<String>,
    /// password for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub password: Option<String>,
    /// Command for the exec credential plugin for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub exec_command: Option<String>,
    /// API version of the exec credential plugin for the user entry in kubeconfig
    #[arg(long, value_name = "string")]
    pub exec_api_version: Option<String>,
    /// New arguments for the exec credential plugin command for the user entry in kubeconfig
    #[arg(long, value_name = "stringArray")]
    pub exec_arg: Option<Vec<String>>,
    /// 'key=value' environment values for the exec credential plugin
    #[arg(long, value_name = "stringArray")]
    pub exec_env: Vec<String>,
    /// ProvideClusterInfo of the exec credentials plugin for the user entry in kubeconfig
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub exec_provide_cluster_info: Option<bool>,
}

/// Applies the exec flags: a new command starts a plugin (or replaces its command and clears
/// its arguments); the other flags change an existing plugin only.
fn apply_exec(user: &mut AuthInfo, args: &SetCredentialsArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.exec_command {
        match &mut user.exec {
            Some(exec) => {
                exec.command = command.clone();
                exec.args = None;
            }
            None => {
                user.exec = Some(ExecConfig {
                    command: command.clone(),
                    ..Default::default()
                })
            }
        }
    }
    let Some(exec) = &mut user.exec else {
        return Ok(());
    };
    if let Some(version) = &args.exec_api_version {
        exec.api_version = version.clone();
    }
    if let Some(list) = &args.exec_arg {
        exec.args = Some(list.clone());
    }
    if let Some(provide) = args.exec_provide_cluster_info {
        exec.provide_cluster_info = provide;
    }
    let mut remove = Vec::new();
    let mut set = Vec::new();
    for entry in &args.exec_env {
        if let Some((name, value)) = entry.split_once('=') {
            set.push((name.to_string(), value.to_string()));
        } else if let Some(name) = entry.strip_suffix('-') {
            remove.push(name.to_string());
        } else {
            bail!("environment variables must be formatted key=value or key-: {entry}");
        }
    }
    if !remove.is_empty() {
        let env = exec.env.get_or_insert_with(Vec::new);
        env.retain(|var| !remove.contains(&var.name));
    }
    for (name, value) in set {
        let env = exec.env.get_or_insert_with(Vec::new);
        match env.iter_mut().find(|var| var.name == name) {
            Some(var) => var.value = value,
            None => env.push(ExecEnvVar { name, value }),
        }
    }
    Ok(())
}

fn path_text(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

fn absolute(path: &str) -> String {
    crate::kubeconfig::load::absolute(Path::new(path))
        .display()
        .to_string()
}

fn read_base64(flag: &str, path: &str) -> anyhow::Result<String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(base64_encode(&bytes)),
        Err(err) => bail!(
            "could not read {flag} data from {path}: open {path}: {}",
            go_io_error(&err)
        ),
    }
}

pub fn set_context(session: &Session, args: &SetContextArgs) -> anyhow::Result<()> {
    let config = &session.loaded.config;
    let name = match (args.name.as_deref(), args.current) {
        (Some(name), true) if !name.is_empty() => {
            bail!("you cannot specify both a context name and --current")
        }
        (_, true) => {
            if config.current_context.is_empty() {
                bail!("no current context is set");
            }
            config.current_context.clone()
        }
        (Some(name), false) if !name.is_empty() => name.to_string(),
        _ => bail!("you must specify a non-empty context name or --current"),
    };
    let mut new = config.clone();
    let exists = new.contexts.contains_key(&name);
    let context = new.contexts.entry(name.clone()).or_default();
    if let Some(cluster) = &args.cluster {
        context.cluster = cluster.clone();
    }
    if let Some(user) = &args.user {
        context.user = user.clone();
    }
    if let Some(namespace) = &args.namespace {
        context.namespace = non_empty(namespace);
    }
    modify_config(&session.paths, &session.loaded, &new)?;
    let verb = if exists { "modified" } else { "created" };
    println!("Context \"{name}\" {verb}.");
    Ok(())
}

pub fn set_cluster(session: &Session, args: &SetClusterArgs) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref().filter(|n| !n.is_empty()) else {
        bail!("Unexpected args: []");
    };
    let embed = args.embed_certs == Some(true);
    let ca = path_text(args.certificate_authority.as_deref());
    if embed && ca.is_empty() {
        bail!("you must specify a --certificate-authority to embed");
    }
    if embed && let Err(err) = std::fs::metadata(&ca) {
        bail!(
            "could not stat certificate-authority file {ca}: stat {ca}: {}",
            go_io_error(&err)
        );
    }
    if args.insecure_skip_tls_verify == Some(true) && !ca.is_empty() {
        bail!("you cannot specify a certificate authority and insecure mode at the same time");
    }
    let mut new = session.loaded.config.clone();
    let cluster: &mut Cluster = new.clusters.entry(name.to_string()).or_default();
    if let Some(server) = &args.server {
        cluster.server = server.clone();
        // A new server invalidates the name its certificate was checked against.
        cluster.tls_server_name = None;
    }
    if let Some(tls_server_name) = &args.tls_server_name {
        cluster.tls_server_name = non_empty(tls_server_name);
    }
    if let Some(proxy_url) = &args.proxy_url {
        cluster.proxy_url = non_empty(proxy_url);
    }
    if let Some(insecure) = args.insecure_skip_tls_verify {
        cluster.insecure_skip_tls_verify = insecure;
        if insecure {
            cluster.certificate_authority = None;
            cluster.certificate_authority_data = None;
        }
    }
    if args.certificate_authority.is_some() {
        if embed {
            cluster.certificate_authority_data =
                non_empty(&read_base64("certificate-authority", &ca)?);
            cluster.insecure_skip_tls_verify = false;
            cluster.certificate_authority = None;
        } else {
            cluster.certificate_authority = non_empty(&absolute(&ca));
            if !ca.is_empty() {
                cluster.insecure_skip_tls_verify = false;
                cluster.certificate_authority_data = None;
            }
        }
    }
    modify_config(&session.paths, &session.loaded, &new)?;
    println!("Cluster \"{name}\" set.");
    Ok(())
}

pub fn set_credentials(session: &Session, args: &SetCredentialsArgs) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref().filter(|n| !n.is_empty()) else {
        bail!("Unexpected args: []");
    };
    let embed = args.embed_certs == Some(true);
    let cert = path_text(args.client_certificate.as_deref());
    let key = path_text(args.client_key.as_deref());
    let (cert, key) = (cert.as_str(), key.as_str());
    if embed {
        if cert.is_empty() && key.is_empty() {
            bail!("you must specify a --client-certificate or --client-key to embed");
        }
        for (flag, path) in [("client-certificate", cert), ("client-key", key)] {
            if let (false, Err(err)) = (path.is_empty(), std::fs::metadata(path)) {
                bail!(
                    "could not stat {flag} file {path}: stat {path}: {}",
                    go_io_error(&err)
                );
            }
        }
    }
    let mut methods = Vec::new();
    if args.token.as_deref().is_some_and(|t| !t.is_empty()) {
        methods.push("--token");
    }
    if args.username.as_deref().is_some_and(|t| !t.is_empty())
        || args.password.as_deref().is_some_and(|t| !t.is_empty())
    {
        methods.push("--username/--password");
    }
    if methods.len() > 1 {
        bail!(
            "you cannot specify more than one authentication method at the same time: {}",
            methods.join(", ")
        );
    }
    let mut new = session.loaded.config.clone();
    let user: &mut AuthInfo = new.auth_infos.entry(name.to_string()).or_default();
    if args.client_certificate.is_some() {
        if embed {
            user.client_certificate_data = non_empty(&read_base64("client-certificate", cert)?);
            user.client_certificate = None;
        } else {
            user.client_certificate = non_empty(&absolute(cert));
            if user.client_certificate.is_some() {
                user.client_certificate_data = None;
            }
        }
    }
    if args.client_key.is_some() {
        if embed {
            user.client_key_data = non_empty(&read_base64("client-key", key)?);
            user.client_key = None;
        } else {
            user.client_key = non_empty(&absolute(key));
            if user.client_key.is_some() {
                user.client_key_data = None;
            }
        }
    }
    let mut set_token = false;
    let mut set_basic = false;
    if let Some(token) = &args.token {
        user.token = non_empty(token);
        set_token = user.token.is_some();
    }
    if let Some(username) = &args.username {
        user.username = non_empty(username);
        set_basic = set_basic || user.username.is_some();
    }
    if let Some(password) = &args.password {
        user.password = non_empty(password);
        set_basic = set_basic || user.password.is_some();
    }
    // Setting one way to authenticate drops the other.
    if set_token && !set_basic {
        user.username = None;
        user.password = None;
    }
    if set_basic && !set_token {
        user.token = None;
    }
    apply_exec(user, args)?;
    modify_config(&session.paths, &session.loaded, &new)?;
    println!("User \"{name}\" set.");
    Ok(())
}
