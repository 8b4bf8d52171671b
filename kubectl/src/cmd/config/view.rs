//! `kubectl config view`: the merged (or minified, flattened) config with secrets shortened.

use super::Session;
use crate::kubeconfig::Loaded;
use crate::kubeconfig::model::Config;
use crate::printers::yaml;
use anyhow::{Context as _, bail};
use clap::Args;
use serde::Serialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Flags of `kubectl config view`.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Remove all information not used by current-context from the output
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub minify: Option<bool>,
    /// Flatten the resulting kubeconfig file into self-contained output (useful for creating portable kubeconfig files)
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub flatten: Option<bool>,
    /// Display raw byte data and sensitive data
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub raw: Option<bool>,
    /// Merge the full hierarchy of kubeconfig files
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub merge: Option<bool>,
    /// Without `-o`, yaml (upstream's default output here).
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
}

pub fn run(session: &Session, args: &ViewArgs) -> anyhow::Result<()> {
    if args.merge == Some(false) && session.paths.explicit.is_none() {
        bail!("if merge==false a precise file must be specified");
    }
    let mut config = session.loaded.config.clone();
    if args.minify == Some(true) {
        minify(&mut config)?;
    }
    if args.flatten == Some(true) {
        flatten(&session.loaded, &mut config)?;
    } else if args.raw != Some(true) {
        shorten(&mut config);
    }
    let file = config.to_file();
    let template = args.print.template.as_deref().filter(|t| !t.is_empty());
    let output = (args.print.output.as_deref())
        .or(template.map(|_| "go-template"))
        .unwrap_or("yaml");
    let text = match output {
        "yaml" | "" => yaml::to_go_yaml(&serde_json::to_value(&file)?),
        "json" => go_json(&file)? + "\n",
        other if other.starts_with("jsonpath=") => {
            let template = crate::printers::jsonpath::Template::parse(&other["jsonpath=".len()..])
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            template
                .render(&serde_json::to_value(&file)?)
                .map_err(|err| anyhow::anyhow!("{err}"))?
        }
        other if other.starts_with("go-template") || other.starts_with("template") => {
            let format = crate::printers::OutputFormat::parse_with_template(
                Some(other),
                args.print.template.as_deref(),
                args.print.allow_missing_template_keys,
            )?;
            let crate::printers::OutputFormat::GoTemplate(template) = format else {
                bail!("unable to match a printer suitable for the output format \"{other}\"")
            };
            crate::printers::render_go_template(&template, &serde_json::to_value(&file)?)?
        }
        other => bail!(
            "unable to match a printer suitable for the output format \"{other}\", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"
        ),
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// JSON as kubectl prints it: four-space indentation.
pub fn go_json(value: &impl Serialize) -> anyhow::Result<String> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    String::from_utf8(out).context("encoding JSON")
}

fn minify(config: &mut Config) -> anyhow::Result<()> {
    let current = config.current_context.clone();
    if current.is_empty() {
        bail!("current-context must exist in order to minify");
    }
    let Some(context) = config.contexts.get(&current).cloned() else {
        bail!("cannot locate context {current}");
    };
    config.contexts.retain(|name, _| *name == current);
    if !context.cluster.is_empty() && !config.clusters.contains_key(&context.cluster) {
        bail!("cannot locate cluster {}", context.cluster);
    }
    config.clusters.retain(|name, _| *name == context.cluster);
    if !context.user.is_empty() && !config.auth_infos.contains_key(&context.user) {
        bail!("cannot locate user {}", context.user);
    }
    config.auth_infos.retain(|name, _| *name == context.user);
    Ok(())
}

const OMITTED: &str = "DATA+OMITTED";
const REDACTED: &str = "REDACTED";

fn shorten(config: &mut Config) {
    let set = |field: &mut Option<String>, to: &str| {
        if field.as_deref().is_some_and(|v| !v.is_empty()) {
            *field = Some(to.to_string());
        }
    };
    for cluster in config.clusters.values_mut() {
        set(&mut cluster.certificate_authority_data, OMITTED);
    }
    for user in config.auth_infos.values_mut() {
        set(&mut user.client_certificate_data, OMITTED);
        set(&mut user.client_key_data, OMITTED);
        set(&mut user.token, REDACTED);
        set(&mut user.password, REDACTED);
    }
}

/// Reads a file named in a kubeconfig (relative to the file that named it) as base64.
fn embed(dir: &Path, path: &str) -> anyhow::Result<String> {
    let full: PathBuf = crate::kubeconfig::load::absolute(&dir.join(path));
    match std::fs::read(&full) {
        Ok(bytes) => Ok(crate::kubeconfig::model::base64_encode(&bytes)),
        Err(err) => bail!("open {}: {}", full.display(), go_io_error(&err)),
    }
}

/// The wording of Go's errors for the common cases, so messages match upstream's.
pub fn go_io_error(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => err.to_string(),
    }
}

fn flatten(loaded: &Loaded, config: &mut Config) -> anyhow::Result<()> {
    // Users before clusters, as upstream: it decides which missing file is reported.
    for (name, user) in config.auth_infos.iter_mut() {
        let dir = Loaded::base_dir(loaded.auth_info_origin.get(name));
        if let Some(path) = user.client_certificate.take().filter(|p| !p.is_empty()) {
            user.client_certificate_data = Some(embed(&dir, &path)?);
        }
        if let Some(path) = user.client_key.take().filter(|p| !p.is_empty()) {
            user.client_key_data = Some(embed(&dir, &path)?);
        }
    }
    for (name, cluster) in config.clusters.iter_mut() {
        let dir = Loaded::base_dir(loaded.cluster_origin.get(name));
        if let Some(path) = cluster
            .certificate_authority
            .take()
            .filter(|p| !p.is_empty())
        {
            cluster.certificate_authority_data = Some(embed(&dir, &path)?);
        }
    }
    Ok(())
}
