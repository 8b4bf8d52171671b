//! `kubectl edit`: the objects as YAML in `$KUBE_EDITOR` / `$EDITOR` / `vi`, then a patch of
//! what changed (strategic for built-in kinds, JSON merge for custom resources). A save the
//! server refuses as invalid re-opens the file with the reasons in its header.

mod file;

use super::apply::{LAST_APPLIED, go_json, three_way_patch_for};
use super::mutate;
use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::errors::ApiError;
use crate::factory::Factory;
use crate::printers::{self, OutputFormat};
use crate::resource::{self, Info, Selection, files};
use clap::Args;
use file::Reason;
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;

/// Flags of `kubectl edit`.
#[derive(Debug, Clone, Args)]
pub struct EditArgs {
    /// TYPE NAME | TYPE/NAME
    pub args: Vec<String>,
    /// Filename, directory, or URL to files to use to edit the resource
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Output the patch if the resource is edited.
    #[arg(long)]
    pub output_patch: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-edit", value_name = "string")]
    pub field_manager: String,
}

/// Ends the process with status 1 after the messages already printed (upstream's `ErrExit`).
fn exit_silently() -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(1);
}

/// What is edited: the objects, or their last-applied annotations (`apply edit-last-applied`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Objects,
    LastApplied,
}

pub async fn run(global: &GlobalOptions, args: &EditArgs) -> anyhow::Result<()> {
    run_mode(global, args, Mode::Objects).await
}

pub async fn run_mode(global: &GlobalOptions, args: &EditArgs, mode: Mode) -> anyhow::Result<()> {
    let format = args.print.format()?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut originals: Vec<(Info, Value)> = Vec::new();
    for info in resolved.infos {
        if info.name.is_none() {
            let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
            for item in resource::items_of(&info.resource, &pages) {
                let mut one = info.clone();
                one.name = Some(mutate::name_of(&item).to_owned());
                originals.push((one, item));
            }
            continue;
        }
        let object = factory.get(&info.path()).await?;
        originals.push((info, object));
    }
    if originals.is_empty() {
        return Ok(());
    }
    for (_, object) in &mut originals {
        printers::strip_managed_fields(object);
    }
    if mode == Mode::LastApplied {
        originals = last_applied_configurations(originals)?;
    }
    let original_text = render(&originals);

    let mut reasons: Vec<Reason> = Vec::new();
    let mut edited = String::new();
    let mut contains_error = false;
    let mut previous_file: Option<PathBuf> = None;
    loop {
        let mut buffer = file::header(&reasons, mode == Mode::LastApplied);
        if contains_error {
            buffer.push_str(&file::manual_strip(&edited));
        } else {
            buffer.push_str(&original_text);
        }
        let edited_before = std::mem::take(&mut edited);
        let (text, path) = match file::launch(&buffer) {
            Ok(done) => done,
            Err(err) => {
                file::preserved(previous_file.as_deref());
                return Err(err);
            }
        };
        edited = text;
        if contains_error && file::content(&edited_before) == file::content(&edited) {
            file::preserved(Some(&path));
            anyhow::bail!("Edit cancelled, no valid changes were saved.");
        }
        if let Some(old) = previous_file.take() {
            let _ = std::fs::remove_file(old);
        }
        if file::content(&original_text) == file::content(&edited) {
            let _ = std::fs::remove_file(&path);
            eprintln!("Edit cancelled, no changes made.");
            return Ok(());
        }
        if !file::has_lines(&edited) {
            let _ = std::fs::remove_file(&path);
            eprintln!("Edit cancelled, saved file was empty.");
            return Ok(());
        }
        previous_file = Some(path.clone());
        reasons.clear();
        let updated = match files::parse("edited file", &file::manual_strip(&edited)) {
            Ok(updated) => updated,
            Err(err) => {
                contains_error = true;
                let message = format!("{err}");
                let message = message
                    .strip_prefix("error parsing edited file: ")
                    .unwrap_or(&message)
                    .to_owned();
                reasons.push(Reason {
                    head: format!("The edited file had a syntax error: {message}"),
                    other: Vec::new(),
                });
                continue;
            }
        };
        let mut outcome = Outcome::default();
        for manifest in updated {
            let edited_object = manifest.object;
            let Some((info, original)) = originals.iter().find(|(i, o)| {
                mutate::name_of(o) == mutate::name_of(&edited_object)
                    && o.get("kind") == edited_object.get("kind")
                    && i.name.is_some()
            }) else {
                file::preserved(Some(&path));
                anyhow::bail!("At least one of apiVersion, kind and name was changed");
            };
            patch_one(
                &factory,
                args,
                mode,
                format.as_ref(),
                info,
                original,
                &edited_object,
                &mut outcome,
            )
            .await
            .inspect_err(|_| file::preserved(Some(&path)))?;
        }
        if outcome.retryable > 0 {
            eprintln!(
                "You can run `kubectl replace -f {}` to try this update again.",
                path.display()
            );
            exit_silently();
        }
        if outcome.not_found > 0 {
            eprintln!(
                "The edits you made on deleted resources have been saved to {:?}",
                path.display().to_string()
            );
            exit_silently();
        }
        if outcome.invalid.is_empty() {
            let _ = std::fs::remove_file(&path);
            return Ok(());
        }
        reasons = outcome.invalid;
        contains_error = true;
    }
}

/// Each object's last-applied configuration in its place; those without one are left out.
fn last_applied_configurations(objects: Vec<(Info, Value)>) -> anyhow::Result<Vec<(Info, Value)>> {
    let mut out = Vec::new();
    for (info, object) in objects {
        let text = object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_APPLIED))
            .and_then(Value::as_str);
        if let Some(text) = text {
            out.push((info, serde_json::from_str(text)?));
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "no last-applied-configuration annotation found on resources, to create the annotation, use command `kubectl apply set-last-applied --create-annotation`"
        );
    }
    Ok(out)
}

/// The objects as the editor shows them: one bare, several in a `List`.
fn render(objects: &[(Info, Value)]) -> String {
    if let [(_, only)] = objects {
        return printers::yaml::to_go_yaml(only);
    }
    let items: Vec<Value> = objects.iter().map(|(_, o)| o.clone()).collect();
    printers::yaml::to_go_yaml(&serde_json::json!({
        "apiVersion": "v1", "items": items, "kind": "List", "metadata": {}
    }))
}

#[derive(Default)]
struct Outcome {
    invalid: Vec<Reason>,
    not_found: usize,
    retryable: usize,
}

#[allow(clippy::too_many_arguments)]
async fn patch_one(
    factory: &Factory,
    args: &EditArgs,
    mode: Mode,
    format: Option<&OutputFormat>,
    info: &Info,
    original: &Value,
    edited: &Value,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
    if original == edited {
        print_result(format, &info.resource, edited, "skipped")?;
        return Ok(());
    }
    for key in ["apiVersion", "kind"] {
        if original.get(key) != edited.get(key) {
            anyhow::bail!("At least one of apiVersion, kind and name was changed");
        }
    }
    if original.pointer("/metadata/managedFields") != edited.pointer("/metadata/managedFields") {
        anyhow::bail!("At least one of apiVersion, kind and name was changed");
    }
    let (patch, content_type) = match mode {
        // Two-way: the three-way patch with the original as both the last state and live.
        Mode::Objects => three_way_patch_for(&info.resource, original, edited, original)?,
        Mode::LastApplied => (
            serde_json::json!({"metadata": {"annotations": {LAST_APPLIED: go_json(edited)}}}),
            "application/merge-patch+json",
        ),
    };
    if args.output_patch {
        println!("Patch: {}", serde_json::to_string(&patch)?);
    }
    let query = vec![
        ("fieldManager".to_owned(), args.field_manager.clone()),
        ("fieldValidation".to_owned(), "Strict".to_owned()),
    ];
    let url = resource::with_query(&info.path(), &query);
    let result = factory
        .request(
            http::Method::PATCH,
            &url,
            Some((serde_json::to_vec(&patch)?, content_type)),
            None,
        )
        .await;
    let resource_string = if info.resource.group.is_empty() {
        info.resource.name.clone()
    } else {
        format!("{}.{}", info.resource.name, info.resource.group)
    };
    let name = info.name.as_deref().unwrap_or("");
    match result {
        Ok(patched) => print_result(format, &info.resource, &patched, "edited"),
        Err(err) => {
            let Some(api) = err.downcast_ref::<ApiError>() else {
                return Err(err);
            };
            if api.reason == "Invalid" || api.code == 422 {
                eprintln!("error: {resource_string} \"{name}\" is invalid");
                outcome.invalid.push(Reason {
                    head: format!("{resource_string} \"{name}\" was not valid"),
                    other: causes(&api.message),
                });
            } else if api.is_not_found() {
                eprintln!("error: {resource_string} \"{name}\" could not be found on the server");
                outcome.not_found += 1;
            } else {
                eprintln!(
                    "error: {resource_string} \"{name}\" could not be patched: {}",
                    api.message
                );
                outcome.retryable += 1;
            }
            Ok(())
        }
    }
}

/// The causes of an Invalid status, read back from its message (`Kind "name" is invalid:
/// field: detail` or `...: [a, b]`), as upstream lists `field: message` for each.
fn causes(message: &str) -> Vec<String> {
    let Some((_, list)) = message.split_once(" is invalid: ") else {
        return Vec::new();
    };
    match list.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
        Some(inner) => inner.split(", ").map(str::to_owned).collect(),
        None => vec![list.to_owned()],
    }
}

fn print_result(
    format: Option<&OutputFormat>,
    resource: &ApiResource,
    object: &Value,
    verb: &str,
) -> anyhow::Result<()> {
    let mut reporter = mutate::Reporter::new(format.cloned());
    reporter.report(resource, object, verb, mutate::DryRun::None)
}

#[cfg(test)]
mod tests {
    use super::causes;

    #[test]
    fn causes_from_messages() {
        let cases = [
            (
                "ConfigMap \"cfg\" is invalid: metadata.labels: Invalid value: \"x!\": bad",
                vec!["metadata.labels: Invalid value: \"x!\": bad"],
            ),
            (
                "Pod \"p\" is invalid: [spec.a: Required value, spec.b: Invalid value: 1]",
                vec!["spec.a: Required value", "spec.b: Invalid value: 1"],
            ),
            ("something else", vec![]),
        ];
        for (message, want) in cases {
            assert_eq!(causes(message), want, "{message}");
        }
    }
}
