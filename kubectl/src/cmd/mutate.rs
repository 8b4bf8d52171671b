//! What the commands that change objects share: `--dry-run`, the `kind/name verb` lines or
//! `-o` output of the result, and upstream's wrapping of errors with the manifest's name.

use crate::discovery::ApiResource;
use crate::errors::ApiError;
use crate::printers::{self, OutputFormat};
use serde_json::Value;

/// `--dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// Parses upstream's values (`none`, `client`, `server`; the deprecated bare flag means
    /// client).
    pub fn parse(value: Option<&str>) -> anyhow::Result<DryRun> {
        match value {
            None | Some("none") | Some("false") => Ok(DryRun::None),
            Some("client") | Some("true") | Some("") => Ok(DryRun::Client),
            Some("server") => Ok(DryRun::Server),
            Some(other) => anyhow::bail!(
                "Invalid dry-run value ({other}). Must be \"none\", \"server\", or \"client\"."
            ),
        }
    }

    /// The suffix of the result line.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }

    /// Query parameters the request carries.
    pub fn query(self) -> Vec<(String, String)> {
        match self {
            DryRun::Server => vec![("dryRun".into(), "All".into())],
            _ => Vec::new(),
        }
    }
}

/// Prints the results of changes: `-o` output, or `kind/name <verb><dry run suffix>` lines.
#[derive(Debug, Default)]
pub struct Reporter {
    format: Option<OutputFormat>,
    printed: usize,
    show_managed_fields: bool,
    typed: bool,
    struct_order: bool,
}

impl Reporter {
    pub fn new(format: Option<OutputFormat>) -> Self {
        Reporter {
            format,
            printed: 0,
            show_managed_fields: false,
            typed: false,
            struct_order: false,
        }
    }

    /// The command's upstream holds its objects as Go structs (generators, `run`, `expose`,
    /// `set`, `rollout`, `autoscale`), not as maps: see [`printers::go_struct`].
    pub fn typed(mut self) -> Self {
        self.typed = true;
        self.struct_order = true;
        self
    }

    /// Upstream decodes its objects into Go structs but prints them as maps again (`taint
    /// --dry-run=client`): Go's zero values, sorted keys.
    pub fn typed_as_map(mut self) -> Self {
        self.typed = true;
        self
    }

    /// `--show-managed-fields`: json and yaml keep `metadata.managedFields`.
    pub fn show_managed_fields(mut self, show: bool) -> Self {
        self.show_managed_fields = show;
        self
    }

    pub fn report(
        &mut self,
        resource: &ApiResource,
        object: &Value,
        verb: &str,
        dry_run: DryRun,
    ) -> anyhow::Result<()> {
        match &self.format {
            Some(format) if !format.is_table() => {
                let mut object = object.clone();
                if self.typed {
                    // Upstream's printer sets the kind of a typed object (list items have none).
                    if let Some(map) = object.as_object_mut() {
                        map.entry("kind")
                            .or_insert_with(|| Value::String(resource.kind.clone()));
                        map.entry("apiVersion")
                            .or_insert_with(|| Value::String(resource.group_version()));
                    }
                    object = printers::go_struct::as_typed(&object);
                }
                // Only upstream's json and yaml printers drop managedFields (templates see them).
                if !self.show_managed_fields
                    && matches!(format, OutputFormat::Json | OutputFormat::Yaml)
                {
                    printers::strip_managed_fields(&mut object);
                }
                // Upstream's YAML printer separates the documents it prints.
                if matches!(format, OutputFormat::Yaml) && self.printed > 0 {
                    println!("---");
                }
                let text = match format {
                    OutputFormat::Json if self.struct_order => {
                        printers::go_struct::to_go_json(&object)
                    }
                    _ => printers::print_objects(format, &[(resource.clone(), object)], true)?,
                };
                print!("{text}");
            }
            _ => println!(
                "{} {verb}{}",
                printers::name_line(resource, object),
                dry_run.suffix()
            ),
        }
        self.printed += 1;
        Ok(())
    }
}

/// `-o` of a mutating command (only json, yaml, name and the templates change anything).
pub fn output_format(output: Option<&str>) -> anyhow::Result<Option<OutputFormat>> {
    output
        .filter(|o| !o.is_empty())
        .map(|o| OutputFormat::parse(Some(o)))
        .transpose()
}

/// Upstream's `AddSourceToErr`: a server error about a manifest names the file.
pub fn with_source(err: anyhow::Error, verb: &str, source: Option<&str>) -> anyhow::Error {
    match (err.downcast_ref::<ApiError>(), source) {
        (Some(api), Some(source)) => ApiError {
            message: format!("error when {verb} \"{source}\": {}", api.message),
            ..api.clone()
        }
        .into(),
        _ => err,
    }
}

/// The name of an object (empty when it has none).
pub fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_values() {
        for (v, want) in [
            (None, Some(DryRun::None)),
            (Some("client"), Some(DryRun::Client)),
            (Some("server"), Some(DryRun::Server)),
            (Some("none"), Some(DryRun::None)),
            (Some("bogus"), None),
        ] {
            assert_eq!(DryRun::parse(v).ok(), want, "{v:?}");
        }
        let err = with_source(
            ApiError {
                code: 409,
                reason: "AlreadyExists".into(),
                message: "configmaps \"a\" already exists".into(),
                invalid: None,
            }
            .into(),
            "creating",
            Some("f.yaml"),
        );
        assert_eq!(
            crate::errors::render(&err),
            "Error from server (AlreadyExists): error when creating \"f.yaml\": configmaps \"a\" already exists"
        );
    }
}
