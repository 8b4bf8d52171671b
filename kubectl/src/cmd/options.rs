//! `kubectl options`: the flags every command takes, in upstream's listing format.

use crate::app::options::Cli;
use clap::CommandFactory;
use std::io::Write as _;

/// Flags of `kubectl options`.
#[derive(Debug, Clone, clap::Args)]
pub struct OptionsArgs {}

/// Upstream's `--flag=default` rendering: `''` around strings, `[]` for lists.
fn default_text(arg: &clap::Arg) -> String {
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let is_flag = !arg.get_action().takes_values();
    let is_list = matches!(arg.get_action(), clap::ArgAction::Append);
    if is_flag {
        return defaults.first().cloned().unwrap_or_else(|| "false".into());
    }
    if is_list {
        return format!("[{}]", defaults.join(","));
    }
    format!("'{}'", defaults.first().cloned().unwrap_or_default())
}

pub fn run(_args: &OptionsArgs) -> anyhow::Result<()> {
    let command = Cli::command();
    let mut globals: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| a.get_long().is_some() && !a.is_hide_set())
        .collect();
    globals.sort_by_key(|a| a.get_long());
    let mut out = String::from("The following options can be passed to any command:\n\n");
    for arg in globals {
        let long = arg.get_long().unwrap_or_default();
        let short = arg
            .get_short()
            .map(|s| format!("-{s}, "))
            .unwrap_or_default();
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "    {short}--{long}={}:\n\t{}\n\n",
            default_text(arg),
            help.replace('\n', " ")
        ));
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}
