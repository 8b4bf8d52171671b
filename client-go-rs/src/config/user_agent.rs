//! The default user agent, built as client-go's `DefaultKubernetesUserAgent`.

/// `command/version (os/arch) kubernetes/commit`, as client-go builds it.
///
/// `command` is reduced to its file name, `version` loses any `-suffix` (client-go keeps only the
/// semver core), an empty `commit` becomes `unknown` and a longer one is cut to 7 characters.
pub fn build_user_agent(
    command: &str,
    version: &str,
    os: &str,
    arch: &str,
    commit: &str,
) -> String {
    let command = command.rsplit(['/', '\\']).next().unwrap_or(command);
    let command = if command.is_empty() {
        "unknown"
    } else {
        command
    };
    let version = version.split('-').next().unwrap_or(version);
    let version = if version.is_empty() {
        "unknown"
    } else {
        version
    };
    let commit = match commit {
        "" => "unknown",
        c => c.get(..7).unwrap_or(c),
    };
    format!("{command}/{version} ({os}/{arch}) kubernetes/{commit}")
}

/// The user agent of `component` at `version`, with Go's names for this OS and architecture
/// (servers and audit logs compare them with what Go components send).
pub fn default_user_agent(component: &str, version: &str) -> String {
    build_user_agent(component, version, go_os(), go_arch(), "")
}

fn go_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    }
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        "arm" => "arm",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_client_go() {
        assert_eq!(
            build_user_agent(
                "/usr/local/bin/kube-controller-manager",
                "v1.33.0-alpha.1",
                "linux",
                "amd64",
                "abcdef0123456"
            ),
            "kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abcdef0"
        );
        assert_eq!(
            build_user_agent("kubectl", "", "linux", "arm64", ""),
            "kubectl/unknown (linux/arm64) kubernetes/unknown"
        );
    }

    #[test]
    fn default_uses_go_names() {
        let ua = default_user_agent("kube-scheduler", "v1.33.0");
        assert!(ua.starts_with("kube-scheduler/v1.33.0 ("), "{ua}");
        assert!(!ua.contains("x86_64") && !ua.contains("aarch64"), "{ua}");
        assert!(ua.ends_with(") kubernetes/unknown"), "{ua}");
    }
}
