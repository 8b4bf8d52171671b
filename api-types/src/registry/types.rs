//! The record types of the registry: what discovery says about one served resource.

use std::fmt;

/// An API verb as discovery reports it (`APIResource.verbs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// `create`: POST to the collection (or to a subresource).
    Create,
    /// `delete`: DELETE of one object.
    Delete,
    /// `deletecollection`: DELETE of the collection.
    DeleteCollection,
    /// `get`: GET of one object.
    Get,
    /// `list`: GET of the collection.
    List,
    /// `patch`: PATCH of one object.
    Patch,
    /// `update`: PUT of one object.
    Update,
    /// `watch`: GET of the collection with `watch=true`.
    Watch,
}

impl Verb {
    /// Every verb, in the alphabetical order discovery uses.
    pub const ALL: [Verb; 8] = [
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];

    /// The lower-case name used in discovery and in RBAC rules.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Patch => "patch",
            Verb::Update => "update",
            Verb::Watch => "watch",
        }
    }

    /// Parses a discovery verb name; `None` for anything else (e.g. RBAC-only verbs such as
    /// `bind` or `escalate`, which discovery never reports).
    pub fn parse(s: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API group and version; the core group is the empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupVersion {
    /// API group, `""` for the core (legacy) group.
    pub group: &'static str,
    /// Version within the group, e.g. `v1`.
    pub version: &'static str,
}

impl GroupVersion {
    /// Builds a group-version.
    pub const fn new(group: &'static str, version: &'static str) -> Self {
        GroupVersion { group, version }
    }

    /// The `apiVersion` string: `"v1"` for core, `"apps/v1"` otherwise.
    pub fn api_version(&self) -> String {
        api_version(self.group, self.version)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

/// The `apiVersion` string of a group and version: `"v1"` for the core group, `"apps/v1"`
/// otherwise.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// A subresource of a served resource, e.g. `pods/status` or `deployments/scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subresource {
    /// The name after the parent resource, e.g. `status` (discovery lists it as `pods/status`).
    pub name: &'static str,
    /// The kind of object the subresource accepts or returns.
    pub kind: &'static str,
    /// Group and version of that kind when they differ from the parent's (discovery then sets
    /// `group`/`version` on the entry): `pods/eviction` is `policy/v1` Eviction, `*/scale` is
    /// `autoscaling/v1` Scale, `serviceaccounts/token` is `authentication.k8s.io/v1`.
    pub group_version: Option<GroupVersion>,
    /// Verbs the subresource supports.
    pub verbs: &'static [Verb],
}

impl Subresource {
    /// Whether the subresource supports `verb`.
    pub fn supports(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }
}

/// One served (group, version, resource) with everything discovery and kubectl need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, `""` for core.
    pub group: &'static str,
    /// Version within the group.
    pub version: &'static str,
    /// Kind of the objects, e.g. `Deployment`.
    pub kind: &'static str,
    /// Resource name as used in URLs, e.g. `deployments`.
    pub plural: &'static str,
    /// Singular name, e.g. `deployment`.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Verbs of the main resource, in discovery's (alphabetical) order.
    pub verbs: &'static [Verb],
    /// kubectl short names, e.g. `deploy`.
    pub short_names: &'static [&'static str],
    /// Categories, e.g. `all` or `api-extensions`.
    pub categories: &'static [&'static str],
    /// Subresources, in discovery's (alphabetical) order.
    pub subresources: &'static [Subresource],
    /// The group-version objects are encoded in when stored: usually the resource's own
    /// group-version (the table notes the exceptions and why); `None` for resources that are
    /// never persisted (reviews, `bindings`, `componentstatuses`).
    pub storage: Option<GroupVersion>,
}

impl ResourceInfo {
    /// The resource's group-version.
    pub const fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group, self.version)
    }

    /// The `apiVersion` string: `"v1"` or `"apps/v1"`.
    pub fn api_version(&self) -> String {
        api_version(self.group, self.version)
    }

    /// Whether the main resource supports `verb`.
    pub fn supports(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether the collection can be listed.
    pub fn is_listable(&self) -> bool {
        self.supports(Verb::List)
    }

    /// Whether the collection can be watched.
    pub fn is_watchable(&self) -> bool {
        self.supports(Verb::Watch)
    }

    /// The subresource called `name` (e.g. `"status"`), if served.
    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether this version is the preferred version of its group (what kubectl and
    /// `by_group_kind` pick). Autoscaling is the one group here with two versions: v2 is
    /// preferred, v1 is also served.
    pub fn is_preferred_version(&self) -> bool {
        super::group(self.group).is_some_and(|g| g.preferred_version() == Some(self.version))
    }
}

/// An API group as /api and /apis discovery present it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiGroup {
    /// Group name, `""` for the core group (served under /api, not /apis).
    pub name: &'static str,
    /// Served versions, most preferred first.
    pub versions: &'static [&'static str],
}

impl ApiGroup {
    /// The preferred version (the first one).
    pub fn preferred_version(&self) -> Option<&'static str> {
        self.versions.first().copied()
    }

    /// Whether this is the legacy core group served under `/api`.
    pub fn is_core(&self) -> bool {
        self.name.is_empty()
    }
}
