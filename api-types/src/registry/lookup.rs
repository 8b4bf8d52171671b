//! Finding resources: exact lookups for the apiserver and kubectl-style name resolution.

use super::groups::GROUPS;
use super::table::RESOURCES;
use super::types::{ApiGroup, ResourceInfo};

/// Every served (group, version, resource), in discovery order: core first, then groups in
/// /apis order, versions most preferred first, resources sorted by name.
pub fn all() -> &'static [ResourceInfo] {
    RESOURCES
}

/// Every served group with its versions, most preferred first, in discovery order. The first
/// entry is the core group (`""`, served under /api); the rest are what /apis lists.
pub fn groups() -> &'static [ApiGroup] {
    GROUPS
}

/// The served group called `name` (`""` for core).
pub fn group(name: &str) -> Option<&'static ApiGroup> {
    GROUPS.iter().find(|g| g.name == name)
}

/// The resources served in one group-version, in discovery order (what
/// `/apis/<group>/<version>` lists, without subresources).
pub fn resources_in<'a>(
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'static ResourceInfo> + 'a {
    RESOURCES
        .iter()
        .filter(move |r| r.group == group && r.version == version)
}

/// The resource served at `group`/`version`/`plural`, matched exactly as in a request path.
pub fn by_group_version_resource(
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'static ResourceInfo> {
    resources_in(group, version).find(|r| r.plural == plural)
}

/// The resource serving `kind` in `group`/`version`.
pub fn by_group_version_kind(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<&'static ResourceInfo> {
    resources_in(group, version).find(|r| r.kind == kind)
}

/// The resource serving `kind` in `group`, in the group's preferred version.
pub fn by_group_kind(group: &str, kind: &str) -> Option<&'static ResourceInfo> {
    let version = self::group(group)?.preferred_version()?;
    by_group_version_kind(group, version, kind)
}

/// The resource `plural` of `group`, in the group's preferred version.
pub fn by_group_resource(group: &str, plural: &str) -> Option<&'static ResourceInfo> {
    let version = self::group(group)?.preferred_version()?;
    by_group_version_resource(group, version, plural)
}

/// Resolves a name as kubectl does for `kubectl get NAME`: a plural, singular, short name or
/// kind (case-insensitive), optionally qualified as `NAME.GROUP` (`deployments.apps`,
/// `events.events.k8s.io`) or `NAME.VERSION.GROUP` (`horizontalpodautoscalers.v1.autoscaling`).
///
/// Without a version the group's preferred version is used. When several groups serve the
/// name (`events`, `ev`) the first group in discovery order wins, so core comes first. Short
/// names are tried before other names, as kubectl expands shortcuts before matching.
/// Subresources (`pods/status`) and unknown names give `None`.
pub fn lookup(name: &str) -> Option<&'static ResourceInfo> {
    let name = name.trim();
    if name.is_empty() || name.contains('/') {
        return None;
    }
    // As kubectl: a fully qualified resource.version.group wins if it names something,
    // otherwise the first dot separates the resource from the group.
    let mut parts = name.splitn(3, '.');
    if let (Some(res), Some(ver), Some(grp)) = (parts.next(), parts.next(), parts.next())
        && let Some(found) = find(res, Some(grp), Some(ver))
    {
        return Some(found);
    }
    match name.split_once('.') {
        Some((res, grp)) => find(res, Some(grp), None),
        None => find(name, None, None),
    }
}

/// Searches the group-versions selected by `group` and `version` (preferred versions when
/// `version` is `None`), in discovery order.
fn find(name: &str, group: Option<&str>, version: Option<&str>) -> Option<&'static ResourceInfo> {
    if name.is_empty() {
        return None;
    }
    let candidates = || {
        GROUPS
            .iter()
            .filter(move |g| group.is_none_or(|want| g.name.eq_ignore_ascii_case(want)))
            .filter_map(move |g| {
                let v = match version {
                    Some(want) => g
                        .versions
                        .iter()
                        .copied()
                        .find(|v| v.eq_ignore_ascii_case(want)),
                    None => g.preferred_version(),
                }?;
                Some((g.name, v))
            })
            .flat_map(|(g, v)| resources_in(g, v))
    };
    candidates()
        .find(|r| r.short_names.iter().any(|s| s.eq_ignore_ascii_case(name)))
        .or_else(|| {
            candidates().find(|r| {
                r.plural.eq_ignore_ascii_case(name)
                    || r.singular.eq_ignore_ascii_case(name)
                    || r.kind.eq_ignore_ascii_case(name)
            })
        })
}
