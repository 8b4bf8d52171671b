//! `kubectl explain TYPE[.FIELD...]`: the documentation of a resource or field from the
//! server's OpenAPI v3 document of its group-version, in upstream's plaintext layout.

mod render;

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use clap::Args;
use render::Explainer;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Flags of `kubectl explain`.
#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// TYPE[.FIELD...]
    pub args: Vec<String>,
    /// When true, print the name of all the fields recursively.
    #[arg(long)]
    pub recursive: bool,
    /// Use given api-version (group/version) of the resource.
    #[arg(long, value_name = "string")]
    pub api_version: Option<String>,
    /// Format in which to render the schema. Valid values are: (plaintext, plaintext-openapiv2).
    #[arg(short = 'o', long, default_value = "plaintext", value_name = "string")]
    pub output: String,
}

pub async fn run(global: &GlobalOptions, args: &ExplainArgs) -> anyhow::Result<()> {
    let Some(request) = args.args.first() else {
        anyhow::bail!(
            "You must specify the type of resource to explain. Use \"kubectl api-resources\" for a complete list of supported resources."
        );
    };
    if args.args.len() > 1 {
        anyhow::bail!(
            "We accept only this format: explain RESOURCE\nSee 'kubectl explain -h' for help and examples"
        );
    }
    if args.output != "plaintext" {
        anyhow::bail!(
            "unsupported output format: {}; this kubectl renders only plaintext",
            args.output
        );
    }
    let mut parts = request.split('.');
    let resource_name = parts.next().unwrap_or("");
    let path: Vec<String> = parts.map(str::to_owned).collect();
    let factory = Factory::new(global).await?;
    let mapper = factory.discovery().mapper().await?;
    let resource = match &args.api_version {
        Some(gv) => {
            let (group, version) = gv.split_once('/').unwrap_or(("", gv.as_str()));
            mapper
                .resources()
                .iter()
                .find(|r| {
                    r.group == group
                        && r.version == version
                        && mapper
                            .resolve(resource_name)
                            .is_some_and(|x| x.name == r.name && x.group == r.group)
                })
                .cloned()
        }
        None => mapper.resolve(resource_name),
    }
    .unwrap_or_else(|| {
        exit_bare(&format!(
            "the server doesn't have a resource type \"{resource_name}\""
        ))
    });
    let gv_path = if resource.group.is_empty() {
        format!("api/{}", resource.version)
    } else {
        format!("apis/{}/{}", resource.group, resource.version)
    };
    let root = factory.get("/openapi/v3").await?;
    let url = root
        .pointer(&format!("/paths/{}", gv_path.replace('/', "~1")))
        .and_then(|p| p.get("serverRelativeURL"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("/openapi/v3/{gv_path}"));
    let doc = factory.get(&url).await?;
    let gvk = json!({"group": resource.group, "kind": resource.kind, "version": resource.version});
    let schemas = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object);
    let mut names: Vec<&String> = schemas.map(|m| m.keys().collect()).unwrap_or_default();
    names.sort();
    let schema = names.into_iter().find_map(|name| {
        let s = &schemas?[name];
        s.get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .filter(|kinds| kinds.contains(&gvk))
            .map(|_| s)
    });
    let Some(schema) = schema else {
        anyhow::bail!(
            "GVK {}/{}, Kind={} not found in OpenAPI schema",
            resource.group,
            resource.version,
            resource.kind
        );
    };
    let explainer = Explainer {
        doc: &doc,
        recursive: args.recursive,
    };
    let body = explainer.output(schema, &path, &BTreeSet::new());
    let mut out = String::new();
    if !resource.group.is_empty() {
        out += &format!("GROUP:      {}\n", resource.group);
    }
    out += &format!(
        "KIND:       {}\nVERSION:    {}\n\n",
        resource.kind, resource.version
    );
    // Upstream's template has printed the header by the time it finds the field missing.
    print!("{out}");
    if body.is_empty() {
        anyhow::bail!(
            "field \"{}\" does not exist",
            path.last().map(String::as_str).unwrap_or("")
        );
    }
    println!("{body}");
    Ok(())
}

/// Upstream prints a resource that does not resolve (a RESTMapper `NoResourceMatch`) bare,
/// without the `error: ` every other failure gets, and exits 1.
pub fn exit_bare(message: &str) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    eprintln!("{message}");
    std::process::exit(1)
}
