//! Image references (docker's normalization rules) and the pull-policy default.

pub const DEFAULT_DOMAIN: &str = "docker.io";
pub const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub domain: String,
    /// The repository path inside the registry (`library/busybox`).
    pub path: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageRef {
    /// `docker.io/library/busybox`: what credentials are matched against.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }
}

fn valid_path_component(c: &str) -> bool {
    // [a-z0-9]+ joined by '.', '_', '__' or runs of '-'.
    let bytes = c.as_bytes();
    if bytes.is_empty()
        || !bytes[0].is_ascii_alphanumeric()
        || !bytes[bytes.len() - 1].is_ascii_alphanumeric()
    {
        return false;
    }
    let mut sep = String::new();
    for &b in bytes {
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            if !(sep.is_empty()
                || sep == "."
                || sep == "_"
                || sep == "__"
                || sep.bytes().all(|s| s == b'-'))
            {
                return false;
            }
            sep.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            sep.push(b as char);
        } else {
            return false;
        }
    }
    true
}

fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    !algo.is_empty()
        && algo.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'+' | b'.' | b'_' | b'-')
        })
        && hex.len() >= 32
        && hex.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Parses an image as docker normalizes it: `busybox` is `docker.io/library/busybox`.
pub fn parse_image(image: &str) -> Result<ImageRef, String> {
    if image.is_empty() {
        return Err("image name is empty".into());
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => {
            if !valid_digest(d) {
                return Err(format!("invalid digest {d:?}"));
            }
            (r, Some(d.to_string()))
        }
        None => (image, None),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (
            &rest[..last_slash + i],
            Some(rest[last_slash + i + 1..].to_string()),
        ),
        None => (rest, None),
    };
    if let Some(t) = &tag
        && !valid_tag(t)
    {
        return Err(format!("invalid tag {t:?}"));
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_string(), rest.to_string())
        }
        Some(_) => (DEFAULT_DOMAIN.to_string(), name.to_string()),
        None => (DEFAULT_DOMAIN.to_string(), format!("library/{name}")),
    };
    let domain = if domain == LEGACY_DEFAULT_DOMAIN {
        DEFAULT_DOMAIN.to_string()
    } else {
        domain
    };
    if path.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("repository name must be lowercase".into());
    }
    if path.is_empty() || !path.split('/').all(valid_path_component) {
        return Err(format!("invalid reference format: {image:?}"));
    }
    Ok(ImageRef {
        domain,
        path,
        tag,
        digest,
    })
}

/// Upstream's `applyDefaultImageTag`: an image with neither tag nor digest means `:latest`.
pub fn with_default_tag(image: &str) -> Result<String, String> {
    let r = parse_image(image)?;
    Ok(if r.tag.is_none() && r.digest.is_none() {
        format!("{image}:latest")
    } else {
        image.to_string()
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// The container's policy, defaulted as the apiserver does when empty: `Always` for `:latest`
/// or an untagged image, `IfNotPresent` otherwise.
pub fn pull_policy(policy: Option<&str>, image: &str) -> PullPolicy {
    match policy {
        Some("Always") => PullPolicy::Always,
        Some("IfNotPresent") => PullPolicy::IfNotPresent,
        Some("Never") => PullPolicy::Never,
        _ => match parse_image(image) {
            Ok(r) if r.tag.as_deref() == Some("latest") => PullPolicy::Always,
            Ok(r) if r.tag.is_none() && r.digest.is_none() => PullPolicy::Always,
            _ => PullPolicy::IfNotPresent,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_normalize_as_docker() {
        let ok = |domain: &str, path: &str, tag: Option<&str>, digest: Option<&str>| {
            Ok(ImageRef {
                domain: domain.into(),
                path: path.into(),
                tag: tag.map(Into::into),
                digest: digest.map(Into::into),
            })
        };
        let d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let cases = [
            ("busybox", ok("docker.io", "library/busybox", None, None)),
            (
                "busybox:1.36",
                ok("docker.io", "library/busybox", Some("1.36"), None),
            ),
            (
                "docker.io/library/busybox:latest",
                ok("docker.io", "library/busybox", Some("latest"), None),
            ),
            (
                "index.docker.io/foo/bar",
                ok("docker.io", "foo/bar", None, None),
            ),
            ("foo/bar:v1", ok("docker.io", "foo/bar", Some("v1"), None)),
            (
                "registry.k8s.io/pause:3.10",
                ok("registry.k8s.io", "pause", Some("3.10"), None),
            ),
            (
                "localhost:5000/a/b:t",
                ok("localhost:5000", "a/b", Some("t"), None),
            ),
            ("localhost/a", ok("localhost", "a", None, None)),
            (
                &format!("busybox@{d}"),
                ok("docker.io", "library/busybox", None, Some(d)),
            ),
            (
                &format!("r.io/x:1@{d}"),
                ok("r.io", "x", Some("1"), Some(d)),
            ),
        ];
        for (image, want) in cases {
            assert_eq!(parse_image(image), want, "{image}");
        }
        for bad in [
            "",
            "BusyBox",
            "busybox:",
            "busybox:-x",
            "a//b",
            "busybox@sha256:12",
            "x y",
            "-a/b",
        ] {
            assert!(parse_image(bad).is_err(), "{bad} should be invalid");
        }
    }

    #[test]
    fn default_tag_and_pull_policy() {
        assert_eq!(with_default_tag("busybox").unwrap(), "busybox:latest");
        assert_eq!(with_default_tag("busybox:1.36").unwrap(), "busybox:1.36");
        let cases = [
            (None, "busybox", PullPolicy::Always),
            (None, "busybox:latest", PullPolicy::Always),
            (None, "busybox:1.36", PullPolicy::IfNotPresent),
            (Some(""), "r.io/x:1", PullPolicy::IfNotPresent),
            (Some("Never"), "busybox", PullPolicy::Never),
            (Some("IfNotPresent"), "busybox", PullPolicy::IfNotPresent),
            (Some("Always"), "busybox:1", PullPolicy::Always),
        ];
        for (policy, image, want) in cases {
            assert_eq!(pull_policy(policy, image), want, "{policy:?} {image}");
        }
    }
}
