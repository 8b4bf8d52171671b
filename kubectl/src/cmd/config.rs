//! `kubectl config`: reads and edits kubeconfig files with upstream's merge and write rules
//! (see `crate::kubeconfig`). Runs without a server.

mod contexts;
mod property;
mod set;
mod view;

pub use contexts::tabulate;
pub use view::go_json;

use crate::app::options::GlobalOptions;
use crate::kubeconfig::{Loaded, PathOptions};
use clap::{Args, Subcommand};

/// Flags of `kubectl config`.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// The subcommands of `kubectl config`.
#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Display merged kubeconfig settings or a specified kubeconfig file
    View(view::ViewArgs),
    /// Display the current-context
    CurrentContext,
    /// Set the current-context in a kubeconfig file
    #[command(visible_alias = "use")]
    UseContext(contexts::NameArg),
    /// Describe one or many contexts
    GetContexts(contexts::GetContextsArgs),
    /// Display clusters defined in the kubeconfig
    GetClusters,
    /// Display users defined in the kubeconfig
    GetUsers,
    /// Set a context entry in kubeconfig
    SetContext(set::SetContextArgs),
    /// Set a cluster entry in kubeconfig
    SetCluster(set::SetClusterArgs),
    /// Set a user entry in kubeconfig
    SetCredentials(set::SetCredentialsArgs),
    /// Delete the specified context from the kubeconfig
    DeleteContext(contexts::NameArg),
    /// Delete the specified cluster from the kubeconfig
    DeleteCluster(contexts::NameArg),
    /// Delete the specified user from the kubeconfig
    DeleteUser(contexts::NameArg),
    /// Rename a context from the kubeconfig file
    RenameContext(contexts::RenameArgs),
    /// Set an individual value in a kubeconfig file
    Set(property::SetArgs),
    /// Unset an individual value in a kubeconfig file
    Unset(property::UnsetArgs),
}

/// What every subcommand works on: the files' rules and their merged content.
pub struct Session {
    pub paths: PathOptions,
    pub loaded: Loaded,
}

impl Session {
    fn open(global: &GlobalOptions) -> anyhow::Result<Self> {
        let paths = PathOptions::from_env(global.kubeconfig.as_deref());
        let loaded = Loaded::load(&paths)?;
        Ok(Session { paths, loaded })
    }

    /// The file upstream's messages name: the explicit file, else the default one.
    fn config_file(&self) -> String {
        self.paths.default_filename().display().to_string()
    }
}

/// Runs a `kubectl config` subcommand.
pub fn run(global: &GlobalOptions, args: &ConfigArgs) -> anyhow::Result<()> {
    dispatch(global, args).map_err(|err| anyhow::anyhow!("error: {err:#}"))
}

fn dispatch(global: &GlobalOptions, args: &ConfigArgs) -> anyhow::Result<()> {
    let session = Session::open(global)?;
    match &args.command {
        ConfigCommand::View(view) => view::run(&session, view),
        ConfigCommand::CurrentContext => contexts::current_context(&session),
        ConfigCommand::UseContext(name) => contexts::use_context(&session, name),
        ConfigCommand::GetContexts(get) => contexts::get_contexts(&session, get),
        ConfigCommand::GetClusters => contexts::list_names(session.loaded.config.clusters.keys()),
        ConfigCommand::GetUsers => contexts::list_names(session.loaded.config.auth_infos.keys()),
        ConfigCommand::SetContext(set) => set::set_context(&session, set),
        ConfigCommand::SetCluster(set) => set::set_cluster(&session, set),
        ConfigCommand::SetCredentials(set) => set::set_credentials(&session, set),
        ConfigCommand::DeleteContext(name) => {
            contexts::delete(&session, contexts::Kind::Context, name)
        }
        ConfigCommand::DeleteCluster(name) => {
            contexts::delete(&session, contexts::Kind::Cluster, name)
        }
        ConfigCommand::DeleteUser(name) => contexts::delete(&session, contexts::Kind::User, name),
        ConfigCommand::RenameContext(rename) => contexts::rename(&session, rename),
        ConfigCommand::Set(set) => property::set(&session, set),
        ConfigCommand::Unset(unset) => property::unset(&session, unset),
    }
}
