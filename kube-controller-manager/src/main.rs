fn main() -> std::process::ExitCode {
    component_base::cli::run_component::<kube_controller_manager::app::options::Options, _, _>(
        kube_controller_manager::app::server::run,
    )
}
