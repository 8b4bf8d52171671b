fn main() -> std::process::ExitCode {
    component_base::cli::run_component::<kube_apiserver::app::options::Options, _, _>(
        kube_apiserver::app::server::run,
    )
}
