//! `kubectl rollout`: status (watching until done or the deadline), history, undo, pause,
//! resume and restart of Deployments, DaemonSets and StatefulSets.

pub mod history;
pub mod pause;
pub mod status;
pub mod template;

use crate::app::options::GlobalOptions;
use crate::resource::Selection;
use clap::{Args, Subcommand};

/// Flags of `kubectl rollout`.
#[derive(Debug, Clone, Args)]
pub struct RolloutArgs {
    #[command(subcommand)]
    pub command: RolloutCommand,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum RolloutCommand {
    /// Show the status of the rollout
    Status(status::StatusArgs),
    /// View rollout history
    History(history::HistoryArgs),
    /// Undo a previous rollout
    Undo(history::UndoArgs),
    /// Mark the provided resource as paused
    Pause(pause::PauseArgs),
    /// Resume a paused resource
    Resume(pause::PauseArgs),
    /// Restart a resource
    Restart(pause::PauseArgs),
}

/// What selects the objects of a rollout subcommand.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// (TYPE NAME | TYPE/NAME ...)
    pub args: Vec<String>,
    /// Filename, directory, or URL to files identifying the resource to get from a server.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
}

impl TargetArgs {
    pub fn selection(&self) -> Selection {
        Selection {
            filenames: self.filenames.clone(),
            recursive: self.recursive,
            selector: self.selector.clone(),
            chunk_size: 500,
            ..Default::default()
        }
    }

    /// Upstream's check before anything is read.
    pub fn require(&self) -> anyhow::Result<()> {
        if self.args.is_empty() && self.filenames.is_empty() {
            anyhow::bail!("required resource not specified");
        }
        Ok(())
    }
}

pub async fn run(global: &GlobalOptions, args: &RolloutArgs) -> anyhow::Result<()> {
    match &args.command {
        RolloutCommand::Status(a) => status::run(global, a).await,
        RolloutCommand::History(a) => history::run(global, a).await,
        RolloutCommand::Undo(a) => history::run_undo(global, a).await,
        RolloutCommand::Pause(a) => pause::run(global, a, pause::Action::Pause).await,
        RolloutCommand::Resume(a) => pause::run(global, a, pause::Action::Resume).await,
        RolloutCommand::Restart(a) => pause::run(global, a, pause::Action::Restart).await,
    }
}
