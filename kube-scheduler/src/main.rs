fn main() -> std::process::ExitCode {
    component_base::cli::run_component::<kube_scheduler::app::options::Options, _, _>(
        kube_scheduler::app::server::run,
    )
}
