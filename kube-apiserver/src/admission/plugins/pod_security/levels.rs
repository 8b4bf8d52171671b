//! The Pod Security Standards levels and the policy a namespace's labels select, as upstream's
//! `pod-security-admission/api`.

use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;
use std::fmt;

pub const ENFORCE_LEVEL_LABEL: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT_LEVEL_LABEL: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN_LEVEL_LABEL: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// A Pod Security Standards profile, from the least to the most strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// A label value; None when it names no level.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `latest` or `v1.<minor>`. Every version is evaluated with the newest
/// checks we have; the version is kept for the messages, which name it as the label did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Version {
    #[default]
    Latest,
    V1(u32),
}

impl Version {
    /// A label value; None unless it is `latest` or `v1.<minor>` without leading zeros
    /// (upstream's `^v1\.([0-9]|[1-9][0-9]*)$`).
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::Latest);
        }
        let minor = s.strip_prefix("v1.")?;
        let digits_only = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits_only || (minor.len() > 1 && minor.starts_with('0')) {
            return None;
        }
        minor.parse().ok().map(Version::V1)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::V1(minor) => write!(f, "v1.{minor}"),
        }
    }
}

/// A level at a version, shown as upstream does: `restricted:latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED_LATEST: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

/// What a namespace enforces, audits and warns about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Default for Policy {
    /// Upstream's default configuration: everything privileged, so an unlabelled namespace
    /// allows any pod.
    fn default() -> Self {
        Policy {
            enforce: LevelVersion::PRIVILEGED_LATEST,
            audit: LevelVersion::PRIVILEGED_LATEST,
            warn: LevelVersion::PRIVILEGED_LATEST,
        }
    }
}

impl Policy {
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn]
            .iter()
            .all(|lv| lv.level == Level::Privileged)
    }
}

/// The policy a namespace's `metadata.labels` select over `defaults`, and the errors of the
/// labels that are malformed. A policy is always returned: a bad enforce level enforces
/// `restricted` (fail closed), a bad audit or warn level is `privileged` (those only report),
/// a bad version is `latest`.
pub fn policy_from_labels(labels: &Value, defaults: Policy) -> (Policy, ErrorList) {
    let mut policy = defaults;
    let mut errors = ErrorList::new();
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let path = FieldPath::new("metadata").child("labels");

    let level = |key: &str, target: &mut Level, fallback: Level, errors: &mut ErrorList| {
        if let Some(value) = label(key) {
            *target = Level::parse(value).unwrap_or_else(|| {
                errors.push(FieldError::invalid(
                    &path.key(key),
                    value,
                    "must be one of privileged, baseline, restricted",
                ));
                fallback
            });
        }
    };
    let version = |key: &str, target: &mut Version, errors: &mut ErrorList| {
        if let Some(value) = label(key) {
            *target = Version::parse(value).unwrap_or_else(|| {
                errors.push(FieldError::invalid(
                    &path.key(key),
                    value,
                    r#"must be "latest" or "v1.x""#,
                ));
                Version::Latest
            });
        }
    };
    // Upstream's order, which is the order of the errors in a refusal.
    level(
        ENFORCE_LEVEL_LABEL,
        &mut policy.enforce.level,
        Level::Restricted,
        &mut errors,
    );
    version(
        ENFORCE_VERSION_LABEL,
        &mut policy.enforce.version,
        &mut errors,
    );
    level(
        AUDIT_LEVEL_LABEL,
        &mut policy.audit.level,
        Level::Privileged,
        &mut errors,
    );
    version(AUDIT_VERSION_LABEL, &mut policy.audit.version, &mut errors);
    level(
        WARN_LEVEL_LABEL,
        &mut policy.warn.level,
        Level::Privileged,
        &mut errors,
    );
    version(WARN_VERSION_LABEL, &mut policy.warn.version, &mut errors);
    (policy, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unlabelled_namespaces_are_privileged() {
        let (policy, errors) = policy_from_labels(&Value::Null, Policy::default());
        assert!(errors.is_empty());
        assert!(policy.fully_privileged());
        let (policy, _) = policy_from_labels(&json!({"app": "x"}), Policy::default());
        assert!(policy.fully_privileged());
    }

    #[test]
    fn labels_select_levels_and_versions() {
        let labels = json!({
            ENFORCE_LEVEL_LABEL: "baseline",
            ENFORCE_VERSION_LABEL: "v1.25",
            WARN_LEVEL_LABEL: "restricted",
        });
        let (policy, errors) = policy_from_labels(&labels, Policy::default());
        assert!(errors.is_empty());
        assert_eq!(policy.enforce.to_string(), "baseline:v1.25");
        assert_eq!(policy.warn.to_string(), "restricted:latest");
        assert_eq!(policy.audit.to_string(), "privileged:latest");
        assert!(!policy.fully_privileged());
    }

    #[test]
    fn bad_labels_fail_closed_for_enforce_and_open_for_the_rest() {
        let labels = json!({
            ENFORCE_LEVEL_LABEL: "foo",
            ENFORCE_VERSION_LABEL: "v1.05",
            WARN_LEVEL_LABEL: "nope",
        });
        let (policy, errors) = policy_from_labels(&labels, Policy::default());
        assert_eq!(policy.enforce.level, Level::Restricted);
        assert_eq!(policy.enforce.version, Version::Latest);
        assert_eq!(policy.warn.level, Level::Privileged);
        assert_eq!(errors.len(), 3);
        let list = ErrorList::from(FieldError::invalid(
            &FieldPath::new("metadata")
                .child("labels")
                .key(ENFORCE_LEVEL_LABEL),
            "foo",
            "must be one of privileged, baseline, restricted",
        ));
        assert_eq!(
            list.to_string(),
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#
        );
        assert_eq!(
            errors.to_string(),
            r#"[metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v1.05": must be "latest" or "v1.x", metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "nope": must be one of privileged, baseline, restricted]"#
        );
    }

    #[test]
    fn version_syntax() {
        assert_eq!(Version::parse("latest"), Some(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Some(Version::V1(0)));
        assert_eq!(Version::parse("v1.33"), Some(Version::V1(33)));
        for bad in [
            "", "v1", "v1.", "v1.01", "v2.1", "1.25", "v1.2x", "Latest", "v1.-1",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }
}
