fn main() -> std::process::ExitCode {
    component_base::cli::run_component::<kubelet::app::options::Options, _, _>(
        kubelet::app::server::run,
    )
}
