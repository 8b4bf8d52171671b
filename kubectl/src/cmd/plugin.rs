//! Plugins: an executable `kubectl-foo-bar` on PATH runs as `kubectl foo bar` (upstream's plugin
//! handler), and `kubectl plugin list` shows what PATH offers with upstream's warnings.

use clap::{Args, Subcommand};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flags of `kubectl plugin`.
#[derive(Debug, Clone, Args)]
pub struct PluginArgs {
    #[command(subcommand)]
    pub command: PluginCommand,
}

/// The subcommands of `kubectl plugin`.
#[derive(Debug, Clone, Subcommand)]
pub enum PluginCommand {
    /// List all visible plugin executables on a user's PATH
    List(ListArgs),
}

/// Flags of `kubectl plugin list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// If true, display only the binary name of each plugin, rather than its full path
    #[arg(long)]
    pub name_only: bool,
}

const PREFIX: &str = "kubectl-";

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn path_dirs() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(&path) {
        if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Go's `exec.LookPath` for a bare name.
fn look_path(name: &str) -> Option<PathBuf> {
    path_dirs()
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// The names of the built-in command path `pieces` leads to, as cobra's `Find`: `None` when the
/// first piece is not a command.
fn builtin_path(root: &clap::Command, pieces: &[&str]) -> Option<String> {
    let mut command = root;
    let mut path = vec![root.get_name().to_string()];
    for piece in pieces {
        match command.find_subcommand(piece) {
            Some(sub) => {
                command = sub;
                path.push(sub.get_name().to_string());
            }
            None => break,
        }
    }
    (path.len() > 1).then(|| path.join(" "))
}

/// Runs a plugin when the command line names one instead of a built-in command; `None` lets
/// normal parsing go on. Never returns when the plugin starts (the process becomes the plugin).
pub fn dispatch(args: &[OsString]) -> Option<ExitCode> {
    let root = <crate::app::options::Cli as clap::CommandFactory>::command();
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().unwrap_or("-"))
        .collect();
    let first = *words.first()?;
    if first.starts_with('-')
        || matches!(first, "help" | "__complete" | "__completeNoDesc")
        || root.find_subcommand(first).is_some()
    {
        return None;
    }
    // Dashes inside a word become underscores, so `foo-bar` and `foo bar` stay distinct.
    let mut pieces: Vec<String> = words
        .iter()
        .take_while(|w| !w.starts_with('-'))
        .map(|w| w.replace('-', "_"))
        .collect();
    while !pieces.is_empty() {
        if let Some(path) = look_path(&format!("{PREFIX}{}", pieces.join("-"))) {
            return Some(exec(&path, &args[1 + pieces.len()..]));
        }
        pieces.pop();
    }
    eprintln!("error: unknown command \"{first}\" for \"kubectl\"");
    Some(ExitCode::FAILURE)
}

fn exec(path: &Path, args: &[OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(path).args(args).exec();
    eprintln!("Error: fork/exec {}: {err}", path.display());
    ExitCode::FAILURE
}

/// Runs a `kubectl plugin` subcommand.
pub fn run(args: &PluginArgs) -> anyhow::Result<()> {
    match &args.command {
        PluginCommand::List(list_args) => list(
            &<crate::app::options::Cli as clap::CommandFactory>::command(),
            list_args,
        ),
    }
}

/// `kubectl plugin list`.
pub fn list(root: &clap::Command, args: &ListArgs) -> anyhow::Result<()> {
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    let mut warnings = 0;
    let mut header = false;
    for dir in path_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(PREFIX))
            .collect();
        names.sort();
        for name in names {
            if !header {
                println!("The following compatible plugins are available:\n");
                header = true;
            }
            let path = dir.join(&name);
            if args.name_only {
                println!("{name}");
            } else {
                println!("{}", path.display());
            }
            let mut problems = Vec::new();
            if !is_executable(&path) {
                problems.push(format!(
                    "warning: {} identified as a kubectl plugin, but it is not executable",
                    path.display()
                ));
            }
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                problems.push(format!(
                    "warning: {} is overshadowed by a similarly named plugin: {}",
                    path.display(),
                    first.display()
                ));
            } else {
                seen.push((name.clone(), path.clone()));
            }
            let pieces: Vec<&str> = name[PREFIX.len()..].split('-').collect();
            if let Some(command) = builtin_path(root, &pieces) {
                problems.push(format!(
                    "warning: {name} overwrites existing command: \"{command}\""
                ));
            }
            for problem in &problems {
                eprintln!("  - {problem}");
            }
            warnings += problems.len();
        }
    }
    if !header {
        anyhow::bail!("error: unable to find any kubectl plugins in your PATH");
    }
    match warnings {
        0 => Ok(()),
        1 => anyhow::bail!("error: one plugin warning was found"),
        n => anyhow::bail!("error: {n} plugin warnings were found"),
    }
}
