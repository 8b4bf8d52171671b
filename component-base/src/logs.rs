//! Logging as upstream's component-base/logs: klog's `-v` verbosity levels and `--vmodule`,
//! text or JSON output on stderr, on top of `tracing`.
//!
//! Code logs verbose messages with [`vlog!`](crate::vlog); whether a level is on is decided by a
//! global threshold (and per-module overrides), so a disabled `vlog!` costs one atomic load.

use clap::{Args, ValueEnum};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

static VERBOSITY: AtomicU32 = AtomicU32::new(0);
static VMODULE: OnceLock<Vec<ModuleLevel>> = OnceLock::new();

/// Output format of the logs (`--logging-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The logging flags every component has (upstream's "Logs flags" section).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Logs flags")]
pub struct LogOptions {
    /// Number for the log level verbosity.
    #[arg(short = 'v', long = "v", value_name = "Level", default_value_t = 0)]
    pub verbosity: u32,

    /// Comma-separated list of pattern=N settings for file-filtered logging (only works for
    /// the text log format); a pattern is matched against the module path, `*` is a wildcard.
    #[arg(long, value_name = "pattern=N,...", value_parser = parse_vmodule, default_value = "", hide_default_value = true)]
    pub vmodule: VModule,

    /// Sets the log format.
    #[arg(long, value_enum, value_name = "format", default_value_t = LogFormat::Text)]
    pub logging_format: LogFormat,
}

/// Per-module verbosity overrides from `--vmodule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VModule(pub Vec<ModuleLevel>);

/// One `pattern=N` entry of `--vmodule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLevel {
    pub pattern: String,
    pub level: u32,
}

fn parse_vmodule(value: &str) -> Result<VModule, String> {
    let mut entries = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (pattern, level) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not in pattern=N format"))?;
        if pattern.is_empty() {
            return Err(format!("{item:?} has an empty pattern"));
        }
        let level = level
            .parse()
            .map_err(|_| format!("{item:?} does not end in a verbosity level"))?;
        entries.push(ModuleLevel {
            pattern: pattern.to_string(),
            level,
        });
    }
    Ok(VModule(entries))
}

/// Installs the global subscriber and verbosity. Later calls only update the verbosity, so
/// tests and embedded uses may call it more than once.
pub fn init(options: &LogOptions) {
    init_with_filter(options, "info")
}

/// As [`init`], with `default_filter` (tracing's directive syntax) deciding what third-party
/// crates may print when `RUST_LOG` is unset; a CLI passes a quieter one than a daemon.
pub fn init_with_filter(options: &LogOptions, default_filter: &str) {
    VERBOSITY.store(options.verbosity, Ordering::Relaxed);
    let _ = VMODULE.set(options.vmodule.0.clone());
    // RUST_LOG still works for third-party crates' own tracing output.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match options.logging_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Whether messages of verbosity `level` from `module` are logged (klog's `V(level).Enabled()`).
pub fn enabled(level: u32, module: &str) -> bool {
    if level <= VERBOSITY.load(Ordering::Relaxed) {
        return true;
    }
    VMODULE
        .get()
        .and_then(|entries| entries.iter().find(|e| glob_match(&e.pattern, module)))
        .is_some_and(|entry| level <= entry.level)
}

/// Current global verbosity (`--v`).
pub fn verbosity() -> u32 {
    VERBOSITY.load(Ordering::Relaxed)
}

/// Matches `pattern` against the whole module path or its last segment, `*` matching any run.
fn glob_match(pattern: &str, module: &str) -> bool {
    let last = module.rsplit("::").next().unwrap_or(module);
    wildcard(pattern.as_bytes(), module.as_bytes()) || wildcard(pattern.as_bytes(), last.as_bytes())
}

fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| wildcard(rest, &text[skip..])),
        Some((c, rest)) => text.first() == Some(c) && wildcard(rest, &text[1..]),
    }
}

/// Logs at info level when verbosity `level` is enabled for the calling module, as klog's
/// `klog.V(level).Info(...)`: `vlog!(4, "synced {}", key)`.
#[macro_export]
macro_rules! vlog {
    ($level:expr, $($arg:tt)+) => {
        if $crate::logs::enabled($level, module_path!()) {
            ::tracing::info!(v = $level, $($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmodule_parsing() {
        type Case = (&'static str, Result<Vec<(&'static str, u32)>, ()>);
        let cases: &[Case] = &[
            ("", Ok(vec![])),
            ("queue=4", Ok(vec![("queue", 4)])),
            ("queue=4, kube_*=2", Ok(vec![("queue", 4), ("kube_*", 2)])),
            ("queue", Err(())),
            ("=3", Err(())),
            ("queue=x", Err(())),
        ];
        for (input, want) in cases {
            let got = parse_vmodule(input).map(|v| {
                v.0.into_iter()
                    .map(|e| (e.pattern, e.level))
                    .collect::<Vec<_>>()
            });
            match want {
                Ok(entries) => {
                    let entries: Vec<_> =
                        entries.iter().map(|(p, l)| (p.to_string(), *l)).collect();
                    assert_eq!(got.as_ref().ok(), Some(&entries), "{input}");
                }
                Err(()) => assert!(got.is_err(), "{input} accepted"),
            }
        }
    }

    #[test]
    fn glob_matches_module_paths() {
        assert!(glob_match("queue", "kube_scheduler::queue"));
        assert!(glob_match("kube_*", "kube_scheduler::queue"));
        assert!(glob_match("*::queue", "kube_scheduler::queue"));
        assert!(!glob_match("cache", "kube_scheduler::queue"));
        assert!(!glob_match("que", "kube_scheduler::queue"));
    }
}
