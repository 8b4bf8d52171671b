//! Version information reported by `--version`, `kubectl version` and `/version`.

use clap::{Args, ValueEnum};
use k8s_openapi::apimachinery::pkg::version::Info;

/// The Kubernetes release whose API and behaviour this build implements.
pub const GIT_VERSION: &str = "v1.33.0";
pub const MAJOR: &str = "1";
pub const MINOR: &str = "33";

/// The version record served at `/version`. The commit and build date come from the
/// `KUBE_GIT_COMMIT` / `KUBE_BUILD_DATE` variables at build time (the release script sets them).
pub fn info() -> Info {
    Info {
        major: MAJOR.into(),
        minor: MINOR.into(),
        git_version: GIT_VERSION.into(),
        git_commit: option_env!("KUBE_GIT_COMMIT").unwrap_or("").into(),
        git_tree_state: option_env!("KUBE_GIT_TREE_STATE").unwrap_or("").into(),
        build_date: option_env!("KUBE_BUILD_DATE")
            .unwrap_or("1970-01-01T00:00:00Z")
            .into(),
        // Upstream reports the Go toolchain here; ours is Rust.
        go_version: concat!("rust", env!("CARGO_PKG_RUST_VERSION")).into(),
        compiler: "rustc".into(),
        platform: platform(),
        emulation_major: Some(MAJOR.into()),
        emulation_minor: Some(MINOR.into()),
        min_compatibility_major: Some(MAJOR.into()),
        min_compatibility_minor: Some("32".into()),
    }
}

/// `os/arch` in Go's spelling (`linux/amd64`), which clients parse.
pub fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    format!("{}/{}", std::env::consts::OS, arch)
}

/// How `--version` was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VersionRequest {
    /// Print `Kubernetes vX.Y.Z`.
    True,
    /// Do not print (the default).
    False,
    /// Print the whole version record.
    Raw,
}

/// `-h, --help` and `--version`, in the "Global flags" section as upstream lists them. A
/// command using it sets `disable_help_flag = true` and `disable_version_flag = true`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global flags")]
pub struct GlobalFlags {
    /// help for this command
    #[arg(short = 'h', long, action = clap::ArgAction::HelpShort)]
    pub help: Option<bool>,

    #[command(flatten)]
    pub version: VersionFlag,
}

/// The `--version` flag of the daemons (upstream's `--version, --version=raw`).
#[derive(Debug, Clone, Args)]
pub struct VersionFlag {
    /// --version, --version=raw prints version information and quits.
    #[arg(
        long,
        value_enum,
        value_name = "version[=true]",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        default_value = "false",
        hide_default_value = true,
        hide_possible_values = true
    )]
    pub version: VersionRequest,
}

impl VersionFlag {
    /// The text `--version` asks for, if it asks for any.
    pub fn text(&self) -> Option<String> {
        match self.version {
            VersionRequest::False => None,
            VersionRequest::True => Some(format!("Kubernetes {GIT_VERSION}")),
            VersionRequest::Raw => Some(serde_json::to_string_pretty(&info()).unwrap_or_default()),
        }
    }

    /// Prints the version and exits 0 when `--version` was given; returns otherwise.
    pub fn print_and_exit_if_requested(&self) {
        if let Some(text) = self.text() {
            println!("{text}");
            std::process::exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        version: VersionFlag,
    }

    #[test]
    fn version_flag_forms() {
        let text = |args: &[&str]| Cmd::try_parse_from(args).map(|c| c.version.text());
        assert_eq!(text(&["x"]).unwrap(), None);
        assert_eq!(
            text(&["x", "--version"]).unwrap().as_deref(),
            Some("Kubernetes v1.33.0")
        );
        assert_eq!(
            text(&["x", "--version=true"]).unwrap().as_deref(),
            Some("Kubernetes v1.33.0")
        );
        assert_eq!(text(&["x", "--version=false"]).unwrap(), None);
        let raw = text(&["x", "--version=raw"]).unwrap().unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(parsed["gitVersion"], "v1.33.0");
        assert_eq!(parsed["minor"], "33");
        assert!(text(&["x", "--version=maybe"]).is_err());
    }
}
