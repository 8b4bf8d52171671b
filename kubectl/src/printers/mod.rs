//! Output formats (`-o`): the server's Table for people, and json, yaml, name, jsonpath and
//! custom-columns exactly as upstream's printers write them.

pub mod custom_columns;
pub mod go_struct;
pub mod go_template;
pub mod json;
pub mod jsonpath;
pub mod table;
pub mod tabwriter;
pub mod yaml;

use crate::discovery::ApiResource;
use serde_json::{Value, json};

/// What `-o` asked for.
#[derive(Debug, Clone)]
pub enum OutputFormat {
    /// The default: server-side columns (`wide` adds the priority ones).
    Table {
        wide: bool,
    },
    Json,
    Yaml,
    Name,
    JsonPath(jsonpath::Template),
    CustomColumns(custom_columns::Columns),
    GoTemplate(go_template::GoTemplate),
}

impl OutputFormat {
    /// Parses `-o`; an unknown format is upstream's error.
    pub fn parse(output: Option<&str>) -> anyhow::Result<OutputFormat> {
        OutputFormat::parse_with_template(output, None, true)
    }

    /// Parses `-o` with `--template` (which makes the default format go-template) and
    /// `--allow-missing-template-keys`.
    pub fn parse_with_template(
        output: Option<&str>,
        template_flag: Option<&str>,
        allow_missing_keys: bool,
    ) -> anyhow::Result<OutputFormat> {
        let flag = template_flag.filter(|t| !t.is_empty());
        let output = output
            .filter(|o| !o.is_empty())
            .or(flag.map(|_| "go-template"));
        let Some(output) = output else {
            return Ok(OutputFormat::Table { wide: false });
        };
        if let Some(parsed) = go_template::from_flags(output, flag, allow_missing_keys) {
            return Ok(OutputFormat::GoTemplate(parsed?));
        }
        let with_flag;
        let output = match flag {
            Some(t) if !output.contains('=') => {
                with_flag = format!("{output}={t}");
                with_flag.as_str()
            }
            _ => output,
        };
        let (name, arg) = match output.split_once('=') {
            Some((n, a)) => (n, Some(a)),
            None => (output, None),
        };
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map_err(|err| anyhow::anyhow!("error reading template {path}, {err}"))
        };
        Ok(match (name, arg) {
            ("wide", None) => OutputFormat::Table { wide: true },
            ("json", None) => OutputFormat::Json,
            ("yaml", None) => OutputFormat::Yaml,
            ("name", None) => OutputFormat::Name,
            ("jsonpath", Some(t)) => OutputFormat::JsonPath(template(t)?),
            ("jsonpath-as-json", Some(t)) => {
                OutputFormat::JsonPath(template(t)?.with_json_output())
            }
            ("jsonpath-file", Some(p)) => OutputFormat::JsonPath(template(&read(p)?)?),
            ("custom-columns", Some(spec)) => {
                OutputFormat::CustomColumns(custom_columns::Columns::parse_inline(spec)?)
            }
            ("custom-columns-file", Some(p)) => {
                OutputFormat::CustomColumns(custom_columns::Columns::parse_file(&read(p)?)?)
            }
            ("jsonpath" | "jsonpath-file" | "custom-columns" | "custom-columns-file", None) => {
                anyhow::bail!("{name} template format specified but no template given")
            }
            _ => anyhow::bail!(
                "unable to match a printer suitable for the output format \"{output}\", allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml"
            ),
        })
    }

    pub fn is_table(&self) -> bool {
        matches!(self, OutputFormat::Table { .. })
    }
}

fn template(text: &str) -> anyhow::Result<jsonpath::Template> {
    jsonpath::Template::parse(text)
        .map_err(|err| anyhow::anyhow!("error parsing jsonpath {text}, {err}"))
}

/// `pod/x`, `deployment.apps/web`.
pub fn name_line(resource: &ApiResource, object: &Value) -> String {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{}/{name}", resource.kind_prefix())
}

/// A kind/name prefix for objects whose resource is unknown (a manifest kubectl just sent).
pub fn name_line_of(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match api_version.split_once('/') {
        Some((group, _)) => format!("{kind}.{group}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Drops `metadata.managedFields`, as upstream prints objects unless `--show-managed-fields`.
pub fn strip_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

/// The `List` upstream wraps several objects in.
pub fn list_of(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
}

/// Prints `objects` in a non-table format. `single` is true when the user named exactly one
/// object, which upstream prints bare instead of in a List.
pub fn print_objects(
    format: &OutputFormat,
    objects: &[(ApiResource, Value)],
    single: bool,
) -> anyhow::Result<String> {
    let doc = || {
        if single && objects.len() == 1 {
            objects[0].1.clone()
        } else {
            list_of(objects.iter().map(|(_, o)| o.clone()).collect())
        }
    };
    Ok(match format {
        OutputFormat::Json => json::to_go_json(&doc()),
        OutputFormat::Yaml => yaml::to_go_yaml(&doc()),
        OutputFormat::Name => objects
            .iter()
            .map(|(r, o)| format!("{}\n", name_line(r, o)))
            .collect(),
        OutputFormat::JsonPath(t) => t
            .render(&doc())
            .map_err(|err| anyhow::anyhow!("error executing jsonpath: {err}"))?,
        OutputFormat::CustomColumns(columns) => {
            let items: Vec<&Value> = objects.iter().map(|(_, o)| o).collect();
            columns.render(&items)?
        }
        OutputFormat::GoTemplate(t) => render_go_template(t, &doc())?,
        OutputFormat::Table { .. } => anyhow::bail!("a table needs the server's Table"),
    })
}

/// Runs a go-template; on failure writes what upstream writes to stdout (the output so far
/// and its debugging notes) before returning the error.
pub fn render_go_template(
    template: &go_template::GoTemplate,
    object: &Value,
) -> anyhow::Result<String> {
    template.render(object).or_else(|failure| {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(failure.stdout.as_bytes())?;
        stdout.flush()?;
        anyhow::bail!("{}", failure.message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        for (o, ok) in [
            (None, true),
            (Some("wide"), true),
            (Some("json"), true),
            (Some("yaml"), true),
            (Some("name"), true),
            (Some("jsonpath={.a}"), true),
            (Some("custom-columns=N:.metadata.name"), true),
            (Some("jsonpath"), false),
            (Some("xml"), false),
            (Some("go-template={{.a}}"), true),
            (Some("template={{.a}}"), true),
            (Some("go-template"), false),
            (Some("go-template={{.a"), false),
        ] {
            assert_eq!(OutputFormat::parse(o).is_ok(), ok, "{o:?}");
        }
        assert_eq!(
            name_line_of(
                &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}})
            ),
            "deployment.apps/w"
        );
    }
}
