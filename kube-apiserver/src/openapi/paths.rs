//! The paths and operations of a group-version, named as upstream names them
//! (`listCoreV1NamespacedPod`, `patchAppsV1NamespacedDeploymentScale`, ...), built from the
//! registry's verbs, scopes and subresources.

use super::definitions::{Definitions, list_name, meta};
use super::operation::{
    Body, LIST_MEDIA, OBJECT_MEDIA, Operation, PATCH_MEDIA, PathItem, Payload, TEXT_MEDIA,
    WATCH_MEDIA,
};
use super::params::{self, Param};
use api_types::registry::{self, ResourceInfo, Subresource, Verb};

/// Subresources that stream or proxy (no object in or out); upstream documents them as
/// `connect` operations, which we do not describe.
const CONNECT_SUBRESOURCES: &[&str] = &["attach", "exec", "portforward", "proxy"];

const OK: &[(&str, &str)] = &[("200", "OK")];
const OK_CREATED: &[(&str, &str)] = &[("200", "OK"), ("201", "Created")];
const OK_CREATED_ACCEPTED: &[(&str, &str)] =
    &[("200", "OK"), ("201", "Created"), ("202", "Accepted")];
const OK_ACCEPTED: &[(&str, &str)] = &[("200", "OK"), ("202", "Accepted")];

/// Upstream's operation-id word for a group: `apps` -> `Apps`,
/// `rbac.authorization.k8s.io` -> `RbacAuthorization`, core -> `Core`, `my-app.example.com`
/// -> `MyAppExampleCom` (upstream's `ToValidOperationID`: anything but letters, digits and `_`
/// starts a capitalised word).
pub fn group_word(group: &str) -> String {
    if group.is_empty() {
        return "Core".to_owned();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(capitalize)
        .collect()
}

/// The operation tag: `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
pub fn tag(group: &str, version: &str) -> String {
    let word = group_word(group);
    let mut chars = word.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{lowered}_{version}")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The URL prefix of a group-version: `/api/v1`, `/apis/apps/v1`.
pub fn prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// What the operations of one resource are named and built from: a built-in resource's
/// registry entry or a custom resource's CRD.
#[derive(Debug, Clone, Copy)]
pub struct ResourceShape<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub plural: &'a str,
    pub namespaced: bool,
    pub verbs: &'a [Verb],
}

impl ResourceShape<'_> {
    fn supports(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }
}

impl<'a> From<&'a ResourceInfo> for ResourceShape<'a> {
    fn from(info: &'a ResourceInfo) -> Self {
        ResourceShape {
            group: info.group,
            version: info.version,
            kind: info.kind,
            plural: info.plural,
            namespaced: info.namespaced,
            verbs: info.verbs,
        }
    }
}

/// A subresource with an object in and out (`status`, `scale`, `eviction`, ...), or `log`.
#[derive(Debug, Clone, Copy)]
struct SubresourceShape<'a> {
    name: &'a str,
    /// The group, version and kind of the subresource's object.
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    verbs: &'a [Verb],
}

impl SubresourceShape<'_> {
    fn supports(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }
}

/// Everything needed to name and describe the operations of one resource.
struct ResourceOps<'a> {
    resource: ResourceShape<'a>,
    /// Definition of the kind.
    schema: String,
    /// `AppsV1`.
    gv_word: String,
    tag: String,
    prefix: String,
    /// The patch formats the resource's PATCH operations accept.
    patch_media: &'static [&'static str],
}

impl<'a> ResourceOps<'a> {
    fn new(resource: ResourceShape<'a>, schema: String) -> Self {
        let (group, version) = (resource.group, resource.version);
        ResourceOps {
            resource,
            schema,
            gv_word: format!("{}{}", group_word(group), capitalize(version)),
            tag: tag(group, version),
            prefix: prefix(group, version),
            patch_media: PATCH_MEDIA,
        }
    }

    fn gvk(&self) -> Option<(String, String, String)> {
        Some((
            self.resource.group.to_owned(),
            self.resource.version.to_owned(),
            self.resource.kind.to_owned(),
        ))
    }

    fn scope_word(&self) -> &'static str {
        if self.resource.namespaced {
            "Namespaced"
        } else {
            ""
        }
    }

    /// `{verb}{GroupVersion}{Namespaced}{Kind}{suffix}`.
    fn id(&self, verb: &str, suffix: &str) -> String {
        format!(
            "{verb}{}{}{}{suffix}",
            self.gv_word,
            self.scope_word(),
            self.resource.kind
        )
    }

    /// The collection path, with `namespaces/{namespace}/` for namespaced resources.
    fn collection(&self, watch: bool) -> String {
        let watch = if watch { "/watch" } else { "" };
        let scope = if self.resource.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        format!("{}{watch}{scope}/{}", self.prefix, self.resource.plural)
    }

    fn scope_params(&self) -> Vec<Param> {
        if self.resource.namespaced {
            vec![params::namespace()]
        } else {
            Vec::new()
        }
    }

    fn op(&self, method: &'static str, id: String, description: String) -> Operation {
        Operation {
            method,
            id,
            description,
            action: None,
            gvk: self.gvk(),
            tag: self.tag.clone(),
            params: Vec::new(),
            body: None,
            codes: OK,
            payload: Payload::Schema(self.schema.clone()),
            produces: OBJECT_MEDIA,
        }
    }

    fn list(&self, id: String) -> Operation {
        let kind = self.resource.kind;
        Operation {
            action: Some("list"),
            params: params::list(),
            payload: Payload::Schema(list_name(&self.schema)),
            produces: LIST_MEDIA,
            ..self.op("get", id, format!("list or watch objects of kind {kind}"))
        }
    }

    fn watch(&self, id: String, list: bool) -> Operation {
        let kind = self.resource.kind;
        let (action, description) = if list {
            (
                "watchlist",
                format!(
                    "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
                ),
            )
        } else {
            (
                "watch",
                format!(
                    "watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtering to a single item with the 'fieldSelector' parameter."
                ),
            )
        };
        Operation {
            action: Some(action),
            params: params::list(),
            payload: Payload::Schema(meta::WATCH_EVENT.to_owned()),
            produces: WATCH_MEDIA,
            ..self.op("get", id, description)
        }
    }

    fn collection_item(&self) -> Option<PathItem> {
        let r = &self.resource;
        let kind = r.kind;
        let mut ops = Vec::new();
        if r.supports(Verb::List) {
            ops.push(self.list(self.id("list", "")));
        }
        if r.supports(Verb::Create) {
            ops.push(Operation {
                action: Some("post"),
                params: params::write(),
                body: Some(Body::Object(self.schema.clone())),
                codes: OK_CREATED_ACCEPTED,
                ..self.op("post", self.id("create", ""), format!("create a {kind}"))
            });
        }
        if r.supports(Verb::DeleteCollection) {
            let id = format!(
                "delete{}Collection{}{kind}",
                self.gv_word,
                self.scope_word()
            );
            ops.push(Operation {
                action: Some("deletecollection"),
                params: params::delete_collection(),
                body: Some(Body::DeleteOptions),
                payload: Payload::Schema(meta::STATUS.to_owned()),
                ..self.op("delete", id, format!("delete collection of {kind}"))
            });
        }
        if ops.is_empty() {
            return None;
        }
        let mut path_params = self.scope_params();
        path_params.push(params::pretty());
        Some(PathItem {
            path: self.collection(false),
            params: path_params,
            operations: ops,
        })
    }

    fn object_item(&self) -> Option<PathItem> {
        let r = &self.resource;
        let kind = r.kind;
        let mut ops = Vec::new();
        if r.supports(Verb::Get) {
            ops.push(Operation {
                action: Some("get"),
                ..self.op(
                    "get",
                    self.id("read", ""),
                    format!("read the specified {kind}"),
                )
            });
        }
        if r.supports(Verb::Update) {
            ops.push(Operation {
                action: Some("put"),
                params: params::write(),
                body: Some(Body::Object(self.schema.clone())),
                codes: OK_CREATED,
                ..self.op(
                    "put",
                    self.id("replace", ""),
                    format!("replace the specified {kind}"),
                )
            });
        }
        if r.supports(Verb::Patch) {
            ops.push(Operation {
                action: Some("patch"),
                params: params::patch(),
                body: Some(Body::Patch(self.patch_media)),
                codes: OK_CREATED,
                ..self.op(
                    "patch",
                    self.id("patch", ""),
                    format!("partially update the specified {kind}"),
                )
            });
        }
        if r.supports(Verb::Delete) {
            ops.push(Operation {
                action: Some("delete"),
                params: params::delete(),
                body: Some(Body::DeleteOptions),
                codes: OK_ACCEPTED,
                payload: Payload::Schema(meta::STATUS.to_owned()),
                ..self.op("delete", self.id("delete", ""), format!("delete a {kind}"))
            });
        }
        if ops.is_empty() {
            return None;
        }
        let mut path_params = vec![params::name(kind)];
        path_params.extend(self.scope_params());
        path_params.push(params::pretty());
        Some(PathItem {
            path: format!("{}/{{name}}", self.collection(false)),
            params: path_params,
            operations: ops,
        })
    }

    /// `/watch/...` paths and, for namespaced resources, the all-namespaces list and watch.
    fn watch_and_cluster_items(&self) -> Vec<PathItem> {
        let r = &self.resource;
        let mut items = Vec::new();
        if r.supports(Verb::Watch) {
            items.push(PathItem {
                path: self.collection(true),
                params: self.scope_params(),
                operations: vec![self.watch(self.id("watch", "List"), true)],
            });
            let mut object_params = vec![params::name(r.kind)];
            object_params.extend(self.scope_params());
            items.push(PathItem {
                path: format!("{}/{{name}}", self.collection(true)),
                params: object_params,
                operations: vec![self.watch(self.id("watch", ""), false)],
            });
        }
        items.extend(self.all_namespaces_list());
        if r.namespaced && r.supports(Verb::Watch) {
            let id = format!("watch{}{}ListForAllNamespaces", self.gv_word, r.kind);
            items.push(PathItem {
                path: format!("{}/watch/{}", self.prefix, r.plural),
                params: Vec::new(),
                operations: vec![self.watch(id, true)],
            });
        }
        items
    }

    /// For namespaced resources, the list across namespaces.
    fn all_namespaces_list(&self) -> Option<PathItem> {
        let r = &self.resource;
        if !(r.namespaced && r.supports(Verb::List)) {
            return None;
        }
        let id = format!("list{}{}ForAllNamespaces", self.gv_word, r.kind);
        Some(PathItem {
            path: format!("{}/{}", self.prefix, r.plural),
            params: vec![params::pretty()],
            operations: vec![self.list(id)],
        })
    }

    /// The path of a built-in subresource; connect subresources and subresources whose kind
    /// has no schema have none.
    fn builtin_subresource_item(&self, sub: &Subresource, defs: &Definitions) -> Option<PathItem> {
        if CONNECT_SUBRESOURCES.contains(&sub.name) {
            return None;
        }
        let (group, version) = sub
            .group_version
            .map_or((self.resource.group, self.resource.version), |gv| {
                (gv.group, gv.version)
            });
        let schema = if sub.name == "log" {
            String::new()
        } else {
            defs.name_of(group, version, sub.kind)?
        };
        let shape = SubresourceShape {
            name: sub.name,
            group,
            version,
            kind: sub.kind,
            verbs: sub.verbs,
        };
        self.subresource_item(&shape, schema)
    }

    /// The path of a subresource whose object is the definition `schema` (unused for `log`).
    fn subresource_item(&self, sub: &SubresourceShape, schema: String) -> Option<PathItem> {
        let r = &self.resource;
        let suffix = capitalize(sub.name);
        let name = sub.name;
        let kind = r.kind;
        let mut ops = Vec::new();
        if sub.name == "log" {
            ops.push(Operation {
                action: Some("get"),
                params: params::pod_log(),
                payload: Payload::Text,
                produces: TEXT_MEDIA,
                ..self.op(
                    "get",
                    self.id("read", &suffix),
                    format!("read log of the specified {kind}"),
                )
            });
        } else {
            let sub_op = |method, id: String, description: String| Operation {
                gvk: Some((
                    sub.group.to_owned(),
                    sub.version.to_owned(),
                    sub.kind.to_owned(),
                )),
                payload: Payload::Schema(schema.clone()),
                ..self.op(method, id, description)
            };
            if sub.supports(Verb::Get) {
                ops.push(Operation {
                    action: Some("get"),
                    ..sub_op(
                        "get",
                        self.id("read", &suffix),
                        format!("read {name} of the specified {kind}"),
                    )
                });
            }
            if sub.supports(Verb::Create) {
                ops.push(Operation {
                    action: Some("post"),
                    params: params::write(),
                    body: Some(Body::Object(schema.clone())),
                    codes: OK_CREATED_ACCEPTED,
                    ..sub_op(
                        "post",
                        self.id("create", &suffix),
                        format!("create {name} of a {kind}"),
                    )
                });
            }
            if sub.supports(Verb::Update) {
                ops.push(Operation {
                    action: Some("put"),
                    params: params::write(),
                    body: Some(Body::Object(schema.clone())),
                    codes: OK_CREATED,
                    ..sub_op(
                        "put",
                        self.id("replace", &suffix),
                        format!("replace {name} of the specified {kind}"),
                    )
                });
            }
            if sub.supports(Verb::Patch) {
                ops.push(Operation {
                    action: Some("patch"),
                    params: params::patch(),
                    body: Some(Body::Patch(self.patch_media)),
                    codes: OK_CREATED,
                    ..sub_op(
                        "patch",
                        self.id("patch", &suffix),
                        format!("partially update {name} of the specified {kind}"),
                    )
                });
            }
        }
        if ops.is_empty() {
            return None;
        }
        let mut path_params = vec![params::name(if sub.name == "log" {
            kind
        } else {
            sub.kind
        })];
        path_params.extend(self.scope_params());
        path_params.push(params::pretty());
        Some(PathItem {
            path: format!("{}/{{name}}/{}", self.collection(false), sub.name),
            params: path_params,
            operations: ops,
        })
    }
}

/// Every path of `group`/`version`: the discovery GET of the group-version and the
/// operations of each of its resources. Resources without a schema are skipped (a test keeps
/// that set empty).
pub fn group_version_paths(defs: &Definitions, group: &str, version: &str) -> Vec<PathItem> {
    let gv_word = format!("{}{}", group_word(group), capitalize(version));
    let tag = tag(group, version);
    let prefix = prefix(group, version);
    let mut items = vec![PathItem {
        path: format!("{prefix}/"),
        params: Vec::new(),
        operations: vec![Operation {
            method: "get",
            id: format!("get{gv_word}APIResources"),
            description: "get available resources".to_owned(),
            action: None,
            gvk: None,
            tag: tag.clone(),
            params: Vec::new(),
            body: None,
            codes: OK,
            payload: Payload::Schema(meta::API_RESOURCE_LIST.to_owned()),
            produces: OBJECT_MEDIA,
        }],
    }];
    for resource in registry::resources_in(group, version) {
        let Some(schema) = defs.name_of(group, version, resource.kind) else {
            continue;
        };
        let ops = ResourceOps::new(resource.into(), schema);
        items.extend(ops.collection_item());
        items.extend(ops.object_item());
        items.extend(ops.watch_and_cluster_items());
        for sub in resource.subresources {
            items.extend(ops.builtin_subresource_item(sub, defs));
        }
    }
    items
}

/// The patch formats a custom resource accepts: no strategic merge patch (kubectl's apply
/// looks for it here to decide between a strategic and a JSON merge patch).
pub const CUSTOM_PATCH_MEDIA: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// Verbs of the `status` subresource of a custom resource.
const STATUS_VERBS: &[Verb] = &[Verb::Get, Verb::Patch, Verb::Update];

/// The optional subresources of a custom resource version.
#[derive(Debug, Clone, Default)]
pub struct CustomSubresources {
    /// `subresources.status` is set.
    pub status: bool,
    /// The definition of `autoscaling/v1` Scale when `subresources.scale` is set.
    pub scale: Option<String>,
}

/// The paths of one custom resource version, laid out as upstream's CRD OpenAPI builder does:
/// the collection (and, when namespaced, the list across namespaces), the object, and the
/// `status`/`scale` subresources when enabled; no `/watch/` paths (watches are list calls
/// with `watch=true`). `schema` is the definition of the kind.
pub fn custom_resource_paths(
    shape: ResourceShape<'_>,
    schema: String,
    subresources: &CustomSubresources,
) -> Vec<PathItem> {
    let mut ops = ResourceOps::new(shape, schema.clone());
    ops.patch_media = CUSTOM_PATCH_MEDIA;
    let mut items = Vec::new();
    items.extend(ops.all_namespaces_list());
    items.extend(ops.collection_item());
    items.extend(ops.object_item());
    if subresources.status {
        let status = SubresourceShape {
            name: "status",
            group: shape.group,
            version: shape.version,
            kind: shape.kind,
            verbs: STATUS_VERBS,
        };
        items.extend(ops.subresource_item(&status, schema));
    }
    if let Some(scale) = &subresources.scale {
        let sub = SubresourceShape {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            verbs: STATUS_VERBS,
        };
        items.extend(ops.subresource_item(&sub, scale.clone()));
    }
    items
}

/// A discovery path outside any group-version: `/api/`, `/apis/`, `/apis/<group>/`.
pub fn discovery_path(path: String, id: String, tag: &str, schema: &str) -> PathItem {
    PathItem {
        path,
        params: Vec::new(),
        operations: vec![Operation {
            method: "get",
            id,
            description: "get available API versions".to_owned(),
            action: None,
            gvk: None,
            tag: tag.to_owned(),
            params: Vec::new(),
            body: None,
            codes: OK,
            payload: Payload::Schema(schema.to_owned()),
            produces: OBJECT_MEDIA,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_words_and_tags_follow_upstream() {
        assert_eq!(group_word(""), "Core");
        assert_eq!(group_word("apps"), "Apps");
        assert_eq!(group_word("rbac.authorization.k8s.io"), "RbacAuthorization");
        assert_eq!(
            group_word("flowcontrol.apiserver.k8s.io"),
            "FlowcontrolApiserver"
        );
        assert_eq!(
            tag("rbac.authorization.k8s.io", "v1"),
            "rbacAuthorization_v1"
        );
        assert_eq!(tag("", "v1"), "core_v1");
    }
}
