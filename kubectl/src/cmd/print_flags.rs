//! Upstream's genericclioptions `PrintFlags`, the printing flags every command that prints
//! the objects it changed shares (create, apply, label, set, rollout, ...), declared once so
//! `--template` and friends cannot drift apart between commands.

use super::mutate::Reporter;
use crate::printers::OutputFormat;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct PrintFlags {
    /// Output format. One of: (json, yaml, name, go-template, go-template-file, template,
    /// templatefile, jsonpath, jsonpath-as-json, jsonpath-file).
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
    /// Template string or path to template file to use when -o=go-template,
    /// -o=go-template-file. The template format is golang templates
    /// [http://golang.org/pkg/text/template/#pkg-overview].
    #[arg(long, value_name = "string")]
    pub template: Option<String>,
    /// If true, ignore any errors in templates when a field or map key is missing in the
    /// template. Only applies to golang and jsonpath output formats.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_name = "bool")]
    pub allow_missing_template_keys: bool,
    /// If true, keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long)]
    pub show_managed_fields: bool,
}

impl Default for PrintFlags {
    fn default() -> Self {
        PrintFlags {
            output: None,
            template: None,
            allow_missing_template_keys: true,
            show_managed_fields: false,
        }
    }
}

impl PrintFlags {
    /// The format asked for; `None` when neither `-o` nor `--template` was given (upstream
    /// then prints its `kind/name verb` line). `--template` alone means go-template.
    pub fn format(&self) -> anyhow::Result<Option<OutputFormat>> {
        let given = |o: &Option<String>| o.as_deref().is_some_and(|o| !o.is_empty());
        if !given(&self.output) && !given(&self.template) {
            return Ok(None);
        }
        OutputFormat::parse_with_template(
            self.output.as_deref(),
            self.template.as_deref(),
            self.allow_missing_template_keys,
        )
        .map(Some)
    }

    /// A reporter printing in the format asked for.
    pub fn reporter(&self) -> anyhow::Result<Reporter> {
        Ok(self.reporter_for(self.format()?))
    }

    /// A reporter printing in `format` (one `format()` made), keeping managed fields if asked.
    pub fn reporter_for(&self, format: Option<OutputFormat>) -> Reporter {
        Reporter::new(format).show_managed_fields(self.show_managed_fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        print: PrintFlags,
    }

    #[test]
    fn template_alone_means_go_template() {
        let parse = |args: &[&str]| {
            let mut all = vec!["x"];
            all.extend_from_slice(args);
            Cmd::parse_from(all).print.format().unwrap()
        };
        assert!(parse(&[]).is_none());
        assert!(matches!(
            parse(&["--template={{.a}}"]),
            Some(OutputFormat::GoTemplate(_))
        ));
        assert!(matches!(
            parse(&["-o", "jsonpath", "--template={.a}"]),
            Some(OutputFormat::JsonPath(_))
        ));
        assert!(matches!(parse(&["-o", "json"]), Some(OutputFormat::Json)));
        let flags = Cmd::parse_from(["x", "--allow-missing-template-keys=false"]).print;
        assert!(!flags.allow_missing_template_keys);
        assert!(Cmd::parse_from(["x"]).print.allow_missing_template_keys);
    }
}
