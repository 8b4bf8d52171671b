//! Upstream's "kube-aware" version order, which picks a CRD group's preferred version and orders
//! its versions in discovery: GA before beta before alpha, higher numbers first within each
//! level, then any other version names alphabetically.

use std::cmp::Ordering;

/// (level: 2 GA, 1 beta, 0 alpha; major; minor) of a Kubernetes-like version name.
fn parse(version: &str) -> Option<(u8, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return None;
    }
    let major: u64 = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    if rest.is_empty() {
        return Some((2, major, 0));
    }
    let (level, minor) = if let Some(m) = rest.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = rest.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) || minor.starts_with('0') {
        return None;
    }
    Some((level, major, minor.parse().ok()?))
}

/// Orders `a` before `b` when `a` is preferred.
pub fn kube_aware_cmp(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_example_order() {
        let mut versions = vec![
            "foo1",
            "v1alpha1",
            "v11alpha2",
            "v12alpha1",
            "v1beta1",
            "v10beta3",
            "v3beta1",
            "v1",
            "v2",
            "v10",
            "foo10",
            "v1beta2",
        ];
        versions.sort_by(|a, b| kube_aware_cmp(a, b));
        assert_eq!(
            versions,
            [
                "v10",
                "v2",
                "v1",
                "v10beta3",
                "v3beta1",
                "v1beta2",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}
