//! `-o go-template=...` (and `template`, `go-template-file`, `templatefile`, `--template`):
//! upstream's `GoTemplatePrinter`, Go's text/template with kubectl's `exists` and
//! `base64decode`, run over the object as Go's JSON decoding sees it.
//!
//! Written here rather than taken from the `gtmpl` crate: that one ranges over maps in hash
//! order (Go sorts the keys), runs a range's else branch after every loop, prints maps in
//! Rust's debug form, has no `missingkey=error` and none of Go's error positions, and byte
//! for byte output is what kubectl's users script against.

mod encoding;
mod exec;
mod fmt;

/// Go's `strconv.Quote`, which klog's values use too.
pub use fmt::quote;
mod funcs;
mod lex;
mod node;
mod parse;
mod value;

#[cfg(test)]
mod tests;

use serde_json::Value;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct GoTemplate {
    raw: String,
    templates: parse::Templates,
    /// Whether a `{{template}}` call may recurse, up to Go's depth of 100000.
    calls: bool,
    /// `--allow-missing-template-keys` (true by default): a missing key prints `<no value>`
    /// instead of failing (Go's `missingkey=default` against `missingkey=error`).
    allow_missing_keys: bool,
}

/// The stack of a run whose templates call templates: room for Go's `maxExecDepth` calls
/// (reserved address space; only what the calls touch is ever mapped).
const DEEP_STACK: usize = 4 << 30;

/// A failed execution: what upstream writes to stdout (the output so far and its debugging
/// notes) and its error.
#[derive(Debug)]
pub struct Failure {
    pub stdout: String,
    pub message: String,
}

impl GoTemplate {
    /// Parses `text` as upstream names the template (`output`); the error is Go's
    /// (`template: output:1: function "x" not defined`).
    pub fn parse(text: &str) -> Result<GoTemplate, String> {
        let defined = |name: &str| funcs::NAMES.contains(&name);
        let templates = parse::parse(text, &defined)
            .map_err(|e| format!("template: output:{}: {}", e.line, e.msg))?;
        Ok(GoTemplate {
            raw: text.to_owned(),
            calls: templates.values().any(|t| node::calls_template(t)),
            templates,
            allow_missing_keys: true,
        })
    }

    pub fn allow_missing_keys(mut self, allow: bool) -> GoTemplate {
        self.allow_missing_keys = allow;
        self
    }

    /// Runs the template over `object`.
    pub fn render(&self, object: &Value) -> Result<String, Failure> {
        let run = || exec::execute(&self.templates, &self.raw, object, !self.allow_missing_keys);
        // Go's calls nest 100000 deep before failing, deeper than a main thread's stack.
        let result = if self.calls {
            std::thread::scope(|s| {
                match std::thread::Builder::new()
                    .stack_size(DEEP_STACK)
                    .spawn_scoped(s, run)
                {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(_) => run(),
                }
            })
        } else {
            run()
        };
        result.map_err(
            |(partial, err)| {
                let stdout = format!(
                    "{partial}Error executing template: {err}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{}\n\traw data was:\n\t\t{}\n\tobject given to template engine was:\n\t\t{}\n\n",
                    self.raw,
                    value::go_json_compact(object),
                    fmt::sprint_value(&value::Val::from_json(object)),
                );
                Failure {
                    stdout,
                    message: format!(
                        "error executing template {}: {err}",
                        fmt::quote(&self.raw)
                    ),
                }
            },
        )
    }
}

/// Upstream's `GoTemplatePrintFlags`: the format names it answers to and how it finds the
/// template (after `=`, or in `--template`); `None` when `format` is not one of its own.
pub fn from_flags(
    format: &str,
    template_flag: Option<&str>,
    allow_missing_keys: bool,
) -> Option<anyhow::Result<GoTemplate>> {
    const FORMATS: [&str; 4] = [
        "go-template",
        "go-template-file",
        "template",
        "templatefile",
    ];
    let template_flag = template_flag.filter(|t| !t.is_empty());
    let (name, text) = match template_flag {
        Some(t) => (format, t),
        None => match format.split_once('=') {
            Some((n, t)) if FORMATS.contains(&n) => (n, t),
            _ => (format, ""),
        },
    };
    if !FORMATS.contains(&name) {
        return None;
    }
    Some(build(name, text, allow_missing_keys))
}

fn build(name: &str, text: &str, allow_missing_keys: bool) -> anyhow::Result<GoTemplate> {
    anyhow::ensure!(
        !text.is_empty(),
        "template format specified but no template given"
    );
    let text = if name.ends_with("file") {
        std::fs::read_to_string(text).map_err(|err| {
            anyhow::anyhow!(
                "error reading --template {text}, open {text}: {}",
                go_io_error(&err)
            )
        })?
    } else {
        text.to_owned()
    };
    let template = GoTemplate::parse(&text)
        .map_err(|err| anyhow::anyhow!("error parsing template {text}, {err}"))?;
    Ok(template.allow_missing_keys(allow_missing_keys))
}

/// An OS error as Go's `syscall.Errno` words it.
fn go_io_error(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        _ => {
            let text = err.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            let mut chars = text.chars();
            chars
                .next()
                .map_or(String::new(), |c| c.to_lowercase().chain(chars).collect())
        }
    }
}
