//! Parses the command line and runs the chosen command.

use super::options::{Cli, Command};
use component_base::cli::{Parsed, parse_from};
use std::process::ExitCode;

/// kubectl's `main`: upstream's one-line `error: ...` and exit 1 for bad flags or a failed command.
pub fn main() -> ExitCode {
    let cli = match parse_from::<Cli, _, _>(std::env::args_os()) {
        Parsed::Run(cli) => cli,
        Parsed::Help(text) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Parsed::Error(line) => {
            eprintln!("error: {line}");
            return ExitCode::FAILURE;
        }
    };
    // A CLI's stderr is for the user: library chatter only at higher verbosity, as kubectl's.
    let filter = if cli.logs.verbosity >= 6 {
        "debug"
    } else {
        "error,kube_client=off"
    };
    component_base::logs::init_with_filter(&cli.logs, filter);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match &cli.command {
            Command::Version(args) => crate::cmd::version::run(&cli.global, args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
