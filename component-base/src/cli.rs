//! Command-line parsing with upstream's error shape: a bad flag is one line on stderr and exit 1.

use clap::Parser;
use clap::error::ErrorKind;
use std::ffi::OsString;

/// Exit status of a command that was given bad flags (upstream's cobra returns 1).
pub const EXIT_BAD_FLAGS: i32 = 1;

/// What parsing the command line produced.
#[derive(Debug)]
pub enum Parsed<T> {
    /// Flags were valid: run.
    Run(T),
    /// `--help` or similar was asked for: print this text and exit 0.
    Help(String),
    /// The flags were wrong: print this single line and exit [`EXIT_BAD_FLAGS`].
    Error(String),
}

/// Parses `args` into `T`, turning clap's multi-line diagnostics into upstream's one-line error.
pub fn parse_from<T, I, A>(args: I) -> Parsed<T>
where
    T: Parser,
    I: IntoIterator<Item = A>,
    A: Into<OsString> + Clone,
{
    let mut cmd = T::command();
    match cmd.try_get_matches_from_mut(args) {
        Ok(mut matches) => match T::from_arg_matches_mut(&mut matches) {
            Ok(parsed) => Parsed::Run(parsed),
            Err(err) => Parsed::Error(one_line(&err)),
        },
        Err(err) => match err.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Parsed::Help(err.render().to_string())
            }
            _ => Parsed::Error(one_line(&err)),
        },
    }
}

/// Parses the process's arguments; prints help or the error and exits when there is nothing to run.
pub fn parse_or_exit<T: Parser>() -> T {
    match parse_from::<T, _, _>(std::env::args_os()) {
        Parsed::Run(parsed) => parsed,
        Parsed::Help(text) => {
            print!("{text}");
            std::process::exit(0)
        }
        Parsed::Error(line) => exit_with_error(&line),
    }
}

/// Prints `Error: <message>` on one line and exits with [`EXIT_BAD_FLAGS`].
pub fn exit_with_error(message: &str) -> ! {
    eprintln!("Error: {message}");
    std::process::exit(EXIT_BAD_FLAGS)
}

/// What a daemon's options give the shared [`run_component`]: the three phases of upstream's
/// commands (options parsed by clap, a validated and completed config, the run).
///
/// The config phase is `Config::try_from(options)`: validate the flags (and the files they name)
/// and fill in what is derived.
pub trait ComponentOptions: Parser {
    /// The validated, completed configuration the run phase takes.
    type Config: TryFrom<Self, Error = anyhow::Error>;
    fn common(&self) -> &CommonFlags;
}

/// The flags every daemon lists last: the "Logs flags" and "Global flags" sections.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonFlags {
    #[command(flatten)]
    pub logs: crate::logs::LogOptions,
    #[command(flatten)]
    pub global: crate::version::GlobalFlags,
}

/// The whole `main` of a daemon: parse flags, answer `--help`/`--version`, set up logging,
/// complete the config (a one-line error and exit 1 if it is invalid), then run it on a
/// multi-threaded tokio runtime; a run error is reported and exits 1.
pub fn run_component<O, F, Fut>(run: F) -> std::process::ExitCode
where
    O: ComponentOptions,
    F: FnOnce(O::Config) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let options: O = parse_or_exit();
    options
        .common()
        .global
        .version
        .print_and_exit_if_requested();
    crate::logs::init(&options.common().logs);
    // Metrics recorded before the recorder exists are lost, so install it before anything runs.
    crate::metrics::handle();
    let config = match O::Config::try_from(options) {
        Ok(config) => config,
        Err(err) => exit_with_error(&format!("{err:#}")),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => exit_with_error(&format!("starting the async runtime: {err}")),
    };
    match runtime.block_on(run(config)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("Error: {err:#}");
            std::process::ExitCode::from(EXIT_BAD_FLAGS as u8)
        }
    }
}

/// The first meaningful line of a clap error, without its `error: ` prefix and usage hints.
fn one_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("invalid arguments");
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::LogOptions;

    #[derive(Parser, Debug)]
    #[command(name = "demo")]
    struct Demo {
        #[command(flatten)]
        logs: LogOptions,
        #[arg(long, default_value_t = 10)]
        port: u16,
    }

    #[test]
    fn errors_are_one_line() {
        for args in [
            vec!["demo", "--v=abc"],
            vec!["demo", "--unknown-flag"],
            vec!["demo", "--port=70000"],
            vec!["demo", "--logging-format=xml"],
        ] {
            match parse_from::<Demo, _, _>(args.clone()) {
                Parsed::Error(line) => {
                    assert!(!line.contains('\n'), "{args:?}: {line}");
                    assert!(!line.is_empty());
                }
                other => panic!("{args:?} parsed: {other:?}"),
            }
        }
    }

    #[test]
    fn error_names_the_flag_and_value() {
        let Parsed::Error(line) = parse_from::<Demo, _, _>(["demo", "--v=abc"]) else {
            panic!("--v=abc accepted")
        };
        assert!(line.contains("abc") && line.contains("--v"), "{line}");
    }

    #[test]
    fn help_is_not_an_error() {
        assert!(matches!(
            parse_from::<Demo, _, _>(["demo", "--help"]),
            Parsed::Help(text) if text.contains("--port")
        ));
    }

    #[test]
    fn valid_flags_run() {
        let Parsed::Run(demo) = parse_from::<Demo, _, _>(["demo", "-v", "4", "--port", "8"]) else {
            panic!("valid flags rejected")
        };
        assert_eq!((demo.logs.verbosity, demo.port), (4, 8));
    }
}
