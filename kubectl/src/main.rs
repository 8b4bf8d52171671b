fn main() -> std::process::ExitCode {
    kubectl::app::run::main()
}
