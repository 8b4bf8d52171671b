//! `kubectl set`: image, env, resources, selector, serviceaccount and subject. Each reads the
//! objects, changes a copy, and sends the difference as a patch (nothing when nothing changed),
//! printing upstream's `deployment.apps/web image updated` lines or `-o` output.

pub mod env;
pub mod image;
pub mod objects;
pub mod resources;
pub mod selector;
pub mod subject;

use super::mutate::DryRun;
use crate::app::options::GlobalOptions;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::resource::Selection;
use clap::{Args, Subcommand};
use objects::{Target, merge_diff, send_patch};
use serde_json::{Value, json};

/// Flags of `kubectl set`.
#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    #[command(subcommand)]
    pub command: SetCommand,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum SetCommand {
    /// Update the image of a pod template
    Image(image::ImageArgs),
    /// Update environment variables on a pod template
    Env(env::EnvArgs),
    /// Update resource requests/limits on objects with pod templates
    Resources(resources::ResourcesArgs),
    /// Set the selector on a resource
    Selector(selector::SelectorArgs),
    /// Update the service account of a resource
    #[command(name = "serviceaccount", visible_alias = "sa")]
    ServiceAccount(selector::ServiceAccountArgs),
    /// Update the user, group, or service account in a role binding or cluster role binding
    Subject(subject::SubjectArgs),
}

/// The flags every `set` subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Filename, directory, or URL to files identifying the resource to get from a server.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Select all resources, in the namespace of the specified resource types
    #[arg(long)]
    pub all: bool,
    /// If true, set will NOT contact api-server but run locally.
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-set", value_name = "string")]
    pub field_manager: String,
}

impl CommonArgs {
    pub fn selection(&self) -> Selection {
        Selection {
            filenames: self.filenames.clone(),
            recursive: self.recursive,
            selector: self.selector.clone(),
            all: self.all,
            chunk_size: 500,
            ..Default::default()
        }
    }
}

pub async fn run(global: &GlobalOptions, args: &SetArgs) -> anyhow::Result<()> {
    match &args.command {
        SetCommand::Image(a) => image::run(global, a).await,
        SetCommand::Env(a) => env::run(global, a).await,
        SetCommand::Resources(a) => resources::run(global, a).await,
        SetCommand::Selector(a) => selector::run(global, a).await,
        SetCommand::ServiceAccount(a) => selector::run_service_account(global, a).await,
        SetCommand::Subject(a) => subject::run(global, a).await,
    }
}

/// How one `set` command reports.
pub struct Change {
    /// `image updated`.
    pub verb: &'static str,
    /// Upstream patches and prints even when nothing changed (selector, serviceaccount).
    pub print_unchanged: bool,
}

/// A change of one object: `Err` stops that object (the error already worded as upstream's),
/// `Ok` carries errors that are reported while the rest of the change is still sent.
pub type Outcome = anyhow::Result<Vec<anyhow::Error>>;

/// Reads the objects, applies `change` to a copy of each, patches the difference and reports.
pub async fn apply_changes<F>(
    global: &GlobalOptions,
    resources: &[String],
    common: &CommonArgs,
    change: Change,
    mut mutate: F,
) -> anyhow::Result<()>
where
    F: FnMut(&Target, &mut Value) -> Outcome,
{
    let dry_run = DryRun::parse(common.dry_run.as_deref())?;
    let mut reporter = common.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    let targets = objects::targets(&factory, resources, &common.selection(), common.local).await?;
    let mut errors = Vec::new();
    for target in &targets {
        let mut changed = target.object.clone();
        match mutate(target, &mut changed) {
            Ok(soft) => errors.extend(soft),
            Err(err) => {
                errors.push(err);
                continue;
            }
        }
        let patch = merge_diff(&target.object, &changed);
        if patch.is_none() && !change.print_unchanged {
            continue;
        }
        if common.local || dry_run == DryRun::Client {
            reporter.report(&target.info.resource, &changed, change.verb, dry_run)?;
            continue;
        }
        let patch = patch.unwrap_or_else(|| json!({}));
        match send_patch(
            &factory,
            &target.info,
            &patch,
            dry_run,
            &common.field_manager,
        )
        .await
        {
            Ok(object) => reporter.report(&target.info.resource, &object, change.verb, dry_run)?,
            Err(err) => errors.push(err),
        }
    }
    finish(errors)
}

/// One error as it is, several one per line (upstream's aggregate).
pub fn finish(mut errors: Vec<anyhow::Error>) -> anyhow::Result<()> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// The containers (and init containers) of a pod spec whose names match `selector` (`*` and
/// shell-style globs as upstream's `-c`).
pub fn containers_matching<'a>(
    spec: &'a mut serde_json::Map<String, Value>,
    selector: &str,
    with_init: bool,
) -> Vec<&'a mut serde_json::Map<String, Value>> {
    let mut out = Vec::new();
    // Both lists are borrowed mutably at once, so they are walked through the map's values.
    let keys: Vec<&str> = if with_init {
        vec!["initContainers", "containers"]
    } else {
        vec!["containers"]
    };
    for (key, list) in spec.iter_mut() {
        if !keys.contains(&key.as_str()) {
            continue;
        }
        for c in list.as_array_mut().into_iter().flatten() {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            if glob_match(selector, name)
                && let Some(map) = c.as_object_mut()
            {
                out.push(map);
            }
        }
    }
    out
}

/// Shell-style `*` and `?` matching, as Go's `path.Match` for container names.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn rec(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => rec(&p[1..], n) || (!n.is_empty() && rec(p, &n[1..])),
            (Some('?'), Some(_)) => rec(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => rec(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    rec(&p, &n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (p, n, want) in [
            ("*", "nginx", true),
            ("ng*", "nginx", true),
            ("nginx", "nginx", true),
            ("nginx", "nginx2", false),
            ("n?inx", "nginx", true),
            ("a*b", "acb", true),
            ("a*b", "acbc", false),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} {n}");
        }
    }

    #[test]
    fn container_selection() {
        let mut spec = serde_json::json!({
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}]
        });
        let spec = spec.as_object_mut().unwrap();
        assert_eq!(containers_matching(spec, "*", true).len(), 3);
        assert_eq!(containers_matching(spec, "*", false).len(), 2);
        assert_eq!(containers_matching(spec, "b", true).len(), 1);
    }
}
