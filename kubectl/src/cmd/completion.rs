//! `kubectl completion bash|zsh|fish` and the `__complete` protocol the scripts call (cobra's:
//! one `candidate<TAB>description` per line, then `:<directive>`), completing commands, flags,
//! kubeconfig names and resource names from the server.

use crate::app::options::Cli;
use crate::kubeconfig::{Loaded, PathOptions};
use clap::{Args, CommandFactory};
use std::ffi::OsString;
use std::process::ExitCode;

/// Flags of `kubectl completion`.
#[derive(Debug, Clone, Args)]
pub struct CompletionArgs {
    pub shell: Option<String>,
}

/// Cobra's directives: 4 = do not fall back to file names.
const NO_FILE_COMP: u32 = 4;

/// Prints the script for a shell.
pub fn run(args: &CompletionArgs) -> anyhow::Result<()> {
    let script = match args.shell.as_deref() {
        None => anyhow::bail!(
            "error: Shell not specified.\nSee 'kubectl completion -h' for help and examples"
        ),
        Some("bash") => BASH,
        Some("zsh") => ZSH,
        Some("fish") => FISH,
        Some(other) => anyhow::bail!(
            "error: Unsupported shell type \"{other}\".\nSee 'kubectl completion -h' for help and examples"
        ),
    };
    std::io::Write::write_all(&mut std::io::stdout(), script.as_bytes())?;
    Ok(())
}

const BASH: &str = r#"# bash completion for kubectl; load with: source <(kubectl completion bash)
__kubectl_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local words=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
    local out directive line
    out=$("${COMP_WORDS[0]}" __complete "${words[@]}" "$cur" 2>/dev/null)
    directive=${out##*:}
    out=${out%:*}
    COMPREPLY=()
    while IFS= read -r line; do
        [ -n "$line" ] && COMPREPLY+=("${line%%$'\t'*}")
    done <<< "$out"
    if (( directive & 1 )); then COMPREPLY=(); return; fi
    if (( directive & 2 )); then compopt -o nospace 2>/dev/null; fi
    if (( ! (directive & 4) )) && [ ${#COMPREPLY[@]} -eq 0 ]; then
        compopt -o default 2>/dev/null
    fi
}
complete -o bashdefault -F __kubectl_complete kubectl
"#;

const ZSH: &str = r#"#compdef kubectl
# zsh completion for kubectl; load with: source <(kubectl completion zsh)
_kubectl() {
    local -a candidates
    local out directive line
    out=$("${words[1]}" __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)
    directive=${out##*:}
    out=${out%:*}
    for line in "${(@f)out}"; do
        [[ -n "$line" ]] && candidates+=("${line/$'\t'/:}")
    done
    if (( directive & 1 )); then return 1; fi
    if (( ${#candidates} == 0 )) && (( ! (directive & 4) )); then _files; return; fi
    _describe 'kubectl' candidates
}
if [ "$funcstack[1]" = "_kubectl" ]; then _kubectl "$@"; else compdef _kubectl kubectl; fi
"#;

const FISH: &str = r#"# fish completion for kubectl; load with: kubectl completion fish | source
function __kubectl_complete
    set -l args (commandline -opc)
    set -e args[1]
    set -l out (kubectl __complete $args (commandline -ct) 2>/dev/null)
    for line in $out
        if not string match -q -- ':*' $line
            echo $line
        end
    end
end
complete -c kubectl -f -a '(__kubectl_complete)'
"#;

/// Handles `kubectl __complete ...` (and `__completeNoDesc`); `None` for any other command line.
pub fn intercept(args: &[OsString]) -> Option<ExitCode> {
    let mode = args.get(1)?.to_str()?;
    let descriptions = match mode {
        "__complete" => true,
        "__completeNoDesc" => false,
        _ => return None,
    };
    let words: Vec<String> = args[2..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (to_complete, before) = match words.split_last() {
        Some((last, before)) => (last.clone(), before.to_vec()),
        None => (String::new(), Vec::new()),
    };
    let candidates = candidates(&before, &to_complete);
    let mut out = String::new();
    for (name, about) in candidates {
        out.push_str(&name);
        if descriptions && !about.is_empty() {
            out.push('\t');
            out.push_str(&about);
        }
        out.push('\n');
    }
    println!("{out}:{NO_FILE_COMP}");
    eprintln!("Completion ended with directive: ShellCompDirectiveNoFileComp");
    Some(ExitCode::SUCCESS)
}

fn about(command: &clap::Command) -> String {
    command
        .get_about()
        .map(|a| a.to_string())
        .unwrap_or_default()
}

/// The command the words lead to and the positional words given to it.
fn walk(root: &clap::Command, before: &[String]) -> (clap::Command, Vec<String>) {
    let mut command = root.clone();
    let mut positionals = Vec::new();
    let mut skip_value = false;
    for word in before {
        if skip_value {
            skip_value = false;
            continue;
        }
        if let Some(flag) = word.strip_prefix('-') {
            let name = flag.trim_start_matches('-');
            let takes_value = !name.contains('=')
                && command.get_arguments().any(|a| {
                    (a.get_long() == Some(name)
                        || (name.len() == 1 && a.get_short() == name.chars().next()))
                        && a.get_action().takes_values()
                        && a.get_num_args().is_some_and(|n| n.min_values() > 0)
                });
            skip_value = takes_value;
            continue;
        }
        match command.find_subcommand(word).cloned() {
            Some(sub) if positionals.is_empty() => command = sub,
            _ => positionals.push(word.clone()),
        }
    }
    (command, positionals)
}

fn candidates(before: &[String], to_complete: &str) -> Vec<(String, String)> {
    let mut root = Cli::command();
    root.build();
    let (command, positionals) = walk(&root, before);
    let matching = |items: Vec<(String, String)>| {
        items
            .into_iter()
            .filter(|(name, _)| name.starts_with(to_complete))
            .collect::<Vec<_>>()
    };
    if to_complete.starts_with('-') {
        let mut flags: Vec<(String, String)> = command
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                let first = help.split(". ").next().unwrap_or_default().to_string();
                a.get_long().map(|l| (format!("--{l}"), first))
            })
            .collect();
        flags.sort();
        return matching(flags);
    }
    if command.has_subcommands() && positionals.is_empty() {
        let mut subs: Vec<(String, String)> = command
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| (s.get_name().to_string(), about(s)))
            .collect();
        subs.sort();
        return matching(subs);
    }
    if RESOURCE_COMMANDS.contains(&command.get_name()) && positionals.len() <= 1 {
        return matching(server_names(before, &positionals));
    }
    matching(kubeconfig_names(before, command.get_name(), &positionals))
}

/// Commands whose first argument is a resource type and the next ones names of that type.
const RESOURCE_COMMANDS: &[&str] = &[
    "get", "describe", "delete", "edit", "label", "annotate", "scale", "patch",
];

/// Resource types, or names of objects of the given type, asked from the server with the
/// command line's own flags (context, namespace, ...); nothing when the server cannot answer.
fn server_names(before: &[String], positionals: &[String]) -> Vec<(String, String)> {
    let argv = std::iter::once("kubectl".to_string()).chain(before.iter().cloned());
    let Ok(cli) = <Cli as clap::Parser>::try_parse_from(argv) else {
        return Vec::new();
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let found = runtime.block_on(async {
        let factory = crate::factory::Factory::new(&cli.global).await?;
        let mapper = factory.discovery().mapper().await?;
        let Some(kind) = positionals.first() else {
            // As `api-resources -o name --verbs=list`: by group (core first), then name.
            let mut listable: Vec<(String, String)> = mapper
                .resources()
                .iter()
                .filter(|r| r.preferred && r.has_verb("list"))
                .map(|r| {
                    let name = match r.group.as_str() {
                        "" => r.name.clone(),
                        group => format!("{}.{group}", r.name),
                    };
                    (r.group.clone(), name)
                })
                .collect();
            listable.sort();
            listable.dedup();
            return anyhow::Ok(listable.into_iter().map(|(_, name)| name).collect());
        };
        let Some(resource) = mapper.resolve(kind) else {
            return Ok(Vec::new());
        };
        let list = factory
            .get(&resource.collection_path(Some(factory.namespace())))
            .await?;
        let names = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item["metadata"]["name"].as_str().map(String::from))
            .collect();
        Ok(names)
    });
    found
        .unwrap_or_default()
        .into_iter()
        .map(|n| (n, String::new()))
        .collect()
}

/// Context, cluster and user names for the `config` subcommands that take one.
fn kubeconfig_names(
    before: &[String],
    command: &str,
    positionals: &[String],
) -> Vec<(String, String)> {
    if !positionals.is_empty() {
        return Vec::new();
    }
    let explicit = before
        .iter()
        .find_map(|w| w.strip_prefix("--kubeconfig="))
        .map(std::path::Path::new);
    let Ok(loaded) = Loaded::load(&PathOptions::from_env(explicit)) else {
        return Vec::new();
    };
    let config = loaded.config;
    let names: Vec<String> = match command {
        "use-context" | "delete-context" | "rename-context" | "set-context" | "get-contexts" => {
            config.contexts.keys().cloned().collect()
        }
        "delete-cluster" | "set-cluster" => config.clusters.keys().cloned().collect(),
        "delete-user" | "set-credentials" => config.auth_infos.keys().cloned().collect(),
        _ => Vec::new(),
    };
    names.into_iter().map(|n| (n, String::new())).collect()
}
