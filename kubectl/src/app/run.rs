//! Parses the command line and runs the chosen command.

use super::options::{Cli, Command};
use component_base::cli::{Parsed, parse_from};
use std::process::ExitCode;

/// kubectl's `main`: upstream's one-line `error: ...` and exit 1 for bad flags or a failed command.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = crate::cmd::completion::intercept(&args) {
        return code;
    }
    if let Some(code) = crate::cmd::plugin::dispatch(&args) {
        return code;
    }
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
    // From -v=6 kubectl logs its requests as upstream's (crate::klog); the Rust crates' own
    // tracing is for the levels beyond upstream's.
    let filter = if cli.logs.verbosity >= 10 {
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
            Command::Get(args) => crate::cmd::get::run(&cli.global, args).await,
            Command::ApiResources(args) => crate::cmd::api_resources::run(&cli.global, args).await,
            Command::Create(args) => crate::cmd::create::run(&cli.global, args).await,
            Command::Delete(args) => crate::cmd::delete::run(&cli.global, args).await,
            Command::Replace(args) => crate::cmd::replace::run(&cli.global, args).await,
            Command::Apply(args) => crate::cmd::apply::run(&cli.global, args).await,
            Command::Diff(args) => crate::cmd::diff::run(&cli.global, args).await,
            Command::Edit(args) => crate::cmd::edit::run(&cli.global, args).await,
            Command::Patch(args) => crate::cmd::patch::run(&cli.global, args).await,
            Command::Label(args) => {
                crate::cmd::label::run(&cli.global, args, crate::cmd::label::Field::Labels).await
            }
            Command::Annotate(args) => {
                crate::cmd::label::run(&cli.global, args, crate::cmd::label::Field::Annotations)
                    .await
            }
            Command::Scale(args) => crate::cmd::scale::run(&cli.global, args).await,
            Command::Config(args) => crate::cmd::config::run(&cli.global, args),
            Command::Plugin(args) => crate::cmd::plugin::run(args),
            Command::Auth(args) => crate::cmd::auth::run(&cli.global, args).await,
            Command::ClusterInfo(args) => crate::cmd::cluster_info::run(&cli.global, args).await,
            Command::Completion(args) => crate::cmd::completion::run(args),
            Command::Options(args) => crate::cmd::options::run(args),
            Command::Certificate(args) => crate::cmd::certificate::run(&cli.global, args).await,
            Command::ApiVersions(args) => crate::cmd::api_versions::run(&cli.global, args).await,
            Command::Describe(args) => crate::cmd::describe::run(&cli.global, args).await,
            Command::Events(args) => crate::cmd::events::run(&cli.global, args).await,
            Command::Cordon(args) => crate::cmd::cordon::run(&cli.global, args, true).await,
            Command::Uncordon(args) => crate::cmd::cordon::run(&cli.global, args, false).await,
            Command::Drain(args) => crate::cmd::drain::run(&cli.global, args).await,
            Command::Taint(args) => crate::cmd::taint::run(&cli.global, args).await,
            Command::Top(args) => crate::cmd::top::run(&cli.global, args).await,
            Command::Explain(args) => crate::cmd::explain::run(&cli.global, args).await,
            Command::Run(args) => crate::cmd::run::run(&cli.global, args).await,
            Command::Expose(args) => crate::cmd::expose::run(&cli.global, args).await,
            Command::Set(args) => crate::cmd::set::run(&cli.global, args).await,
            Command::Rollout(args) => crate::cmd::rollout::run(&cli.global, args).await,
            Command::Autoscale(args) => crate::cmd::autoscale::run(&cli.global, args).await,
            Command::Wait(args) => crate::cmd::wait::run(&cli.global, args).await,
            Command::Exec(args) => crate::cmd::exec::run(&cli.global, args).await,
            Command::Attach(args) => crate::cmd::attach::run(&cli.global, args).await,
            Command::Logs(args) => crate::cmd::logs::run(&cli.global, args).await,
            Command::PortForward(args) => crate::cmd::portforward::run(&cli.global, args).await,
            Command::Cp(args) => crate::cmd::cp::run(&cli.global, args).await,
            Command::Proxy(args) => crate::cmd::proxy::run(&cli.global, args).await,
            Command::Debug(args) => crate::cmd::debug::run(&cli.global, args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", crate::errors::render(&err));
            ExitCode::FAILURE
        }
    }
}
