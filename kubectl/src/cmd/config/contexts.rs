//! The `kubectl config` subcommands that read, switch, list, delete and rename entries.

use super::Session;
use crate::kubeconfig::write::modify_config;
use anyhow::bail;
use clap::Args;
use std::io::Write as _;

/// A single NAME argument (missing is upstream's usage error, not a clap one).
#[derive(Debug, Clone, Args)]
pub struct NameArg {
    pub name: Option<String>,
}

/// Flags of `kubectl config rename-context`.
#[derive(Debug, Clone, Args)]
pub struct RenameArgs {
    pub old: Option<String>,
    pub new: Option<String>,
}

/// Flags of `kubectl config get-contexts`.
#[derive(Debug, Clone, Args)]
pub struct GetContextsArgs {
    pub names: Vec<String>,
    /// Output format. One of: (name).
    #[arg(short = 'o', long, value_name = "string", default_value = "")]
    pub output: String,
    /// When using the default or custom-column output format, don't print headers (default print headers).
    #[arg(long)]
    pub no_headers: bool,
}

pub fn current_context(session: &Session) -> anyhow::Result<()> {
    let current = &session.loaded.config.current_context;
    if current.is_empty() {
        bail!("current-context is not set");
    }
    println!("{current}");
    Ok(())
}

pub fn use_context(session: &Session, args: &NameArg) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref() else {
        bail!("Unexpected args: []");
    };
    if name.is_empty() {
        bail!("empty context names are not allowed");
    }
    if !session.loaded.config.contexts.contains_key(name) {
        bail!("no context exists with the name: \"{name}\"");
    }
    let mut config = session.loaded.config.clone();
    config.current_context = name.to_string();
    modify_config(&session.paths, &session.loaded, &config)?;
    println!("Switched to context \"{name}\".");
    Ok(())
}

/// Pads cells as kubectl's tabwriter (min width 6, padding 3); the last cell is not padded.
pub fn tabulate(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            let longest = rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max();
            (longest.unwrap_or(0) + 3).max(6)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < row.len() {
                out.push_str(&" ".repeat(widths[i] - cell.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

pub fn get_contexts(session: &Session, args: &GetContextsArgs) -> anyhow::Result<()> {
    let config = &session.loaded.config;
    let name_only = match args.output.as_str() {
        "" => false,
        "name" => true,
        other => bail!(
            "--output {other} is not available in kubectl config get-contexts; resetting to default output format"
        ),
    };
    let names: Vec<String> = if args.names.is_empty() {
        config.contexts.keys().cloned().collect()
    } else {
        args.names.clone()
    };
    let mut rows = Vec::new();
    if !args.no_headers && !name_only {
        rows.push(
            ["CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"]
                .map(String::from)
                .to_vec(),
        );
    }
    let mut missing = Vec::new();
    let mut out = String::new();
    for name in &names {
        let Some(context) = config.contexts.get(name) else {
            missing.push(format!("context {name} not found"));
            continue;
        };
        if name_only {
            out.push_str(name);
            out.push('\n');
            continue;
        }
        let marker = if *name == config.current_context {
            "*"
        } else {
            " "
        };
        rows.push(vec![
            marker.to_string(),
            name.clone(),
            context.cluster.clone(),
            context.user.clone(),
            context.namespace.clone().unwrap_or_default(),
        ]);
    }
    if !name_only {
        out = tabulate(&rows);
    }
    std::io::stdout().write_all(out.as_bytes())?;
    match missing.len() {
        0 => Ok(()),
        1 => bail!("{}", missing[0]),
        // Upstream prints several of them one per line with no `error: ` prefix, a shape the
        // shared error printer does not produce; so print them here and end the process.
        _ => {
            std::io::stdout().flush()?;
            eprintln!("{}", missing.join("\n"));
            std::process::exit(1)
        }
    }
}

pub fn list_names<'a>(names: impl Iterator<Item = &'a String>) -> anyhow::Result<()> {
    let mut out = String::from("NAME\n");
    for name in names {
        out.push_str(name);
        out.push('\n');
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

/// Which kind of entry a delete removes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Context,
    Cluster,
    User,
}

pub fn delete(session: &Session, kind: Kind, args: &NameArg) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref() else {
        bail!("Unexpected args: []");
    };
    let file = session.config_file();
    let mut config = session.loaded.config.clone();
    let (word, removed) = match kind {
        Kind::Context => ("context", config.contexts.remove(name).is_some()),
        Kind::Cluster => ("cluster", config.clusters.remove(name).is_some()),
        Kind::User => ("user", config.auth_infos.remove(name).is_some()),
    };
    if !removed {
        bail!("cannot delete {word} {name}, not in {file}");
    }
    if matches!(kind, Kind::Context) && config.current_context == name {
        eprintln!(
            "warning: this removed your active context, use \"kubectl config use-context\" to select a different one"
        );
    }
    modify_config(&session.paths, &session.loaded, &config)?;
    println!("deleted {word} {name} from {file}");
    Ok(())
}

pub fn rename(session: &Session, args: &RenameArgs) -> anyhow::Result<()> {
    let (Some(old), Some(new)) = (args.old.as_deref(), args.new.as_deref()) else {
        bail!("Unexpected args: []");
    };
    let file = session.config_file();
    let mut config = session.loaded.config.clone();
    let Some(context) = config.contexts.remove(old) else {
        bail!("cannot rename the context \"{old}\", it's not in {file}");
    };
    if config.contexts.contains_key(new) {
        bail!(
            "cannot rename the context \"{old}\", the context \"{new}\" already exists in {file}"
        );
    }
    config.contexts.insert(new.to_string(), context);
    if config.current_context == old {
        config.current_context = new.to_string();
    }
    // The renamed entry stays in the file that held the old name.
    let mut starting = session.loaded.clone();
    if let Some(origin) = starting.context_origin.get(old).cloned() {
        starting.context_origin.insert(new.to_string(), origin);
    }
    modify_config(&session.paths, &starting, &config)?;
    println!("Context \"{old}\" renamed to \"{new}\".");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::tabulate;

    #[test]
    fn pads_like_kubectl_tabwriter() {
        let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let cases = [
            (
                vec![row(&["CURRENT", "NAME", "NS"]), row(&["*", "a", ""])],
                "CURRENT   NAME   NS\n*         a      \n",
            ),
            (vec![row(&[" ", "ctx3", "u2", ""])], "      ctx3   u2    \n"),
        ];
        for (rows, want) in cases {
            assert_eq!(tabulate(&rows), want);
        }
    }
}
