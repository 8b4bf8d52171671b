//! `kubectl version`: the client's version and, unless `--client`, the server's.

use crate::app::options::GlobalOptions;
use crate::printers::go_struct;
use clap::{Args, ValueEnum};
use k8s_openapi::apimachinery::pkg::version::Info;
use serde::Serialize;

/// Flags of `kubectl version`.
#[derive(Debug, Clone, Args)]
pub struct VersionArgs {
    /// If true, shows client version only (no server required).
    #[arg(long)]
    pub client: bool,

    /// One of 'yaml' or 'json'.
    #[arg(short = 'o', long, value_enum, value_name = "string")]
    pub output: Option<Output>,
}

/// `-o` formats of `kubectl version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Json,
    Yaml,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client_version: Info,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<Info>,
}

/// The versions in Go's field order, as upstream's `-o json` writes its `version.Info`s.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrderedVersions<'a> {
    client_version: go_struct::Ordered<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<go_struct::Ordered<'a>>,
}

/// Prints the versions; a server that cannot be reached is an error after the client's version.
pub async fn run(global: &GlobalOptions, args: &VersionArgs) -> anyhow::Result<()> {
    let mut client_version = component_base::version::info();
    // Emulation and compatibility versions describe a server; upstream's client leaves them out.
    client_version.emulation_major = None;
    client_version.emulation_minor = None;
    client_version.min_compatibility_major = None;
    client_version.min_compatibility_minor = None;
    let mut versions = Versions {
        client_version,
        server_version: None,
    };
    let server_error = if args.client {
        None
    } else {
        match server_version(global).await {
            Ok(info) => {
                versions.server_version = Some(info);
                None
            }
            Err(err) => Some(err),
        }
    };
    match args.output {
        Some(Output::Json) => {
            let client = serde_json::to_value(&versions.client_version)?;
            let server = versions
                .server_version
                .as_ref()
                .map(serde_json::to_value)
                .transpose()?;
            let ordered = OrderedVersions {
                client_version: go_struct::ordered_as("version.Info", &client),
                server_version: server
                    .as_ref()
                    .map(|s| go_struct::ordered_as("version.Info", s)),
            };
            println!("{}", serde_json::to_string_pretty(&ordered)?)
        }
        Some(Output::Yaml) => println!("{}", serde_yaml::to_string(&versions)?),
        None => {
            println!("Client Version: {}", versions.client_version.git_version);
            if let Some(server) = &versions.server_version {
                println!("Server Version: {}", server.git_version);
            }
        }
    }
    match server_error {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

async fn server_version(global: &GlobalOptions) -> anyhow::Result<Info> {
    let config = crate::app::config::client_config(global).await?;
    let server = config.kube.cluster_url.clone();
    let client = config.build_client()?;
    client.apiserver_version().await.map_err(|err| match err {
        kube::Error::HyperError(_) | kube::Error::Service(_) => anyhow::anyhow!(
            "The connection to the server {} was refused - did you specify the right host or port?",
            server
                .authority()
                .map(|a| a.as_str())
                .unwrap_or("<unknown>")
        ),
        other => anyhow::Error::new(other).context("error getting the server version"),
    })
}
