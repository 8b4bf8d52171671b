//! The builder (upstream's `resource.Builder`): turns arguments, `-f` manifests and selectors
//! into what a command acts on, resolved through discovery, and fetches or lists it with
//! paginated requests.

pub mod args;
pub mod files;

use crate::discovery::{ApiResource, RestMapper};
use crate::factory::Factory;
use args::ArgSpec;
use serde_json::Value;

/// The selection flags resource commands share.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub filenames: Vec<String>,
    pub recursive: bool,
    pub selector: Option<String>,
    pub field_selector: Option<String>,
    pub all_namespaces: bool,
    /// `--all`: every object of the types (no names needed).
    pub all: bool,
    /// Page size of list requests; 0 lists in one request.
    pub chunk_size: i64,
}

/// One thing to act on.
#[derive(Debug, Clone)]
pub struct Info {
    pub resource: ApiResource,
    /// The namespace of the request (`None`: cluster-scoped, or every namespace).
    pub namespace: Option<String>,
    /// `None` for a whole collection.
    pub name: Option<String>,
    /// The manifest, for objects from `-f`.
    pub object: Option<Value>,
    pub source: Option<String>,
}

/// The resolved selection.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub infos: Vec<Info>,
    /// More than one resource type is involved (names print as `kind/name`).
    pub multiple_types: bool,
    /// Exactly one object was named (json/yaml print it bare, not in a List).
    pub single: bool,
}

/// Resolves `args` and `-f` into infos; `the server doesn't have a resource type` after one
/// discovery refresh for unknown names.
pub async fn resolve(
    factory: &Factory,
    args: &[String],
    sel: &Selection,
) -> anyhow::Result<Resolved> {
    let spec = args::parse(args)?;
    if !sel.filenames.is_empty() && spec != ArgSpec::None {
        anyhow::bail!("Unexpected args: {args:?}\nSee 'kubectl get -h' for help and examples");
    }
    let discovery = factory.discovery();
    let mut mapper = discovery.mapper().await?;
    let namespace = |r: &ApiResource| -> Option<String> {
        (r.namespaced && !sel.all_namespaces).then(|| factory.namespace().to_owned())
    };
    let mut infos = Vec::new();
    let mut single = false;
    let mut multiple_types = false;
    match spec {
        ArgSpec::None => {
            if sel.filenames.is_empty() {
                anyhow::bail!(
                    "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'"
                );
            }
            let manifests = files::read_all(&sel.filenames, sel.recursive)?;
            for m in manifests {
                infos.push(manifest_info(factory, &discovery, &mut mapper, m).await?);
            }
            single = infos.len() == 1;
            let kinds: std::collections::BTreeSet<String> =
                infos.iter().map(|i| i.resource.group_resource()).collect();
            multiple_types = kinds.len() > 1;
        }
        ArgSpec::Types { types, names } => {
            let mut resources = Vec::new();
            for t in &types {
                let category = mapper.category(&t.to_lowercase());
                if !category.is_empty() && mapper.resolve(t).is_none() {
                    multiple_types = true;
                    resources.extend(category);
                    continue;
                }
                resources.push(lookup(&discovery, &mut mapper, t).await?);
            }
            multiple_types |= resources.len() > 1;
            if names.is_empty() {
                for r in resources {
                    infos.push(Info {
                        namespace: namespace(&r),
                        resource: r,
                        name: None,
                        object: None,
                        source: None,
                    });
                }
            } else {
                if sel.all_namespaces {
                    anyhow::bail!("a resource cannot be retrieved by name across all namespaces");
                }
                single = names.len() == 1 && resources.len() == 1;
                for r in &resources {
                    for n in &names {
                        infos.push(Info {
                            namespace: namespace(r),
                            resource: r.clone(),
                            name: Some(n.clone()),
                            object: None,
                            source: None,
                        });
                    }
                }
            }
        }
        ArgSpec::Pairs(pairs) => {
            if sel.all_namespaces {
                anyhow::bail!("a resource cannot be retrieved by name across all namespaces");
            }
            let mut kinds = std::collections::BTreeSet::new();
            for (t, n) in &pairs {
                let r = lookup(&discovery, &mut mapper, t).await?;
                kinds.insert(r.group_resource());
                infos.push(Info {
                    namespace: namespace(&r),
                    resource: r,
                    name: Some(n.clone()),
                    object: None,
                    source: None,
                });
            }
            single = pairs.len() == 1;
            multiple_types = kinds.len() > 1;
        }
    }
    Ok(Resolved {
        infos,
        multiple_types,
        single,
    })
}

async fn lookup(
    discovery: &crate::discovery::Discovery<'_>,
    mapper: &mut RestMapper,
    name: &str,
) -> anyhow::Result<ApiResource> {
    if let Some(r) = mapper.resolve(name) {
        return Ok(r);
    }
    // A miss may be a type created since the cache was written: refresh once, as upstream.
    *mapper = discovery.refreshed_mapper().await?;
    mapper
        .resolve(name)
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type \"{name}\""))
}

async fn manifest_info(
    factory: &Factory,
    discovery: &crate::discovery::Discovery<'_>,
    mapper: &mut RestMapper,
    m: files::Manifest,
) -> anyhow::Result<Info> {
    let object = m.object;
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        anyhow::bail!(
            "error validating \"{}\": error validating data: kind not set; if you choose to ignore these errors, turn validation off with --validate=false",
            m.source
        );
    }
    if api_version.is_empty() {
        anyhow::bail!(
            "error validating \"{}\": error validating data: apiVersion not set; if you choose to ignore these errors, turn validation off with --validate=false",
            m.source
        );
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let obj_ns = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let resource = match mapper.for_kind(api_version, kind) {
        Some(r) => r,
        None => {
            *mapper = discovery.refreshed_mapper().await?;
            mapper.for_kind(api_version, kind).ok_or_else(|| {
                anyhow::anyhow!(
                    "resource mapping not found for name: \"{}\" namespace: \"{}\" from \"{}\": no matches for kind \"{kind}\" in version \"{api_version}\"\nensure CRDs are installed first",
                    name.as_deref().unwrap_or(""),
                    obj_ns.unwrap_or(""),
                    m.source
                )
            })?
        }
    };
    let namespace = if resource.namespaced {
        match obj_ns {
            Some(ns) if factory.namespace_explicit() && ns != factory.namespace() => anyhow::bail!(
                "the namespace from the provided object \"{ns}\" does not match the namespace \"{}\". You must pass '--namespace={ns}' to perform this operation.",
                factory.namespace()
            ),
            Some(ns) => Some(ns.to_owned()),
            None => Some(factory.namespace().to_owned()),
        }
    } else {
        None
    };
    Ok(Info {
        resource,
        namespace,
        name,
        object: Some(object),
        source: Some(m.source),
    })
}

impl Info {
    /// The object's URL (the collection's when it has no name).
    pub fn path(&self) -> String {
        match &self.name {
            Some(n) => self.resource.object_path(self.namespace.as_deref(), n),
            None => self.resource.collection_path(self.namespace.as_deref()),
        }
    }
}

/// Lists `info`'s collection page by page (`limit`/`continue`), returning each page's
/// response (a list, or a Table with `accept`).
pub async fn list_pages(
    factory: &Factory,
    info: &Info,
    sel: &Selection,
    accept: Option<&str>,
    extra_query: &[(&str, &str)],
) -> anyhow::Result<Vec<Value>> {
    let mut pages = Vec::new();
    let mut continue_token: Option<String> = None;
    loop {
        let mut query: Vec<(String, String)> = Vec::new();
        if let Some(s) = sel.selector.as_deref().filter(|s| !s.is_empty()) {
            query.push(("labelSelector".into(), s.into()));
        }
        if let Some(s) = sel.field_selector.as_deref().filter(|s| !s.is_empty()) {
            query.push(("fieldSelector".into(), s.into()));
        }
        if sel.chunk_size > 0 {
            query.push(("limit".into(), sel.chunk_size.to_string()));
        }
        if let Some(token) = &continue_token {
            query.push(("continue".into(), token.clone()));
        }
        for (k, v) in extra_query {
            query.push(((*k).into(), (*v).into()));
        }
        let url = with_query(&info.path(), &query);
        let page = factory
            .request(http::Method::GET, &url, None, accept)
            .await?;
        continue_token = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        pages.push(page);
        if continue_token.is_none() {
            return Ok(pages);
        }
    }
}

/// The items of list pages, each with `apiVersion` and `kind` set as upstream's decoder does.
pub fn items_of(resource: &ApiResource, pages: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for page in pages {
        for item in page
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut item = item.clone();
            if let Some(obj) = item.as_object_mut() {
                obj.insert("apiVersion".into(), Value::String(resource.group_version()));
                obj.insert("kind".into(), Value::String(resource.kind.clone()));
            }
            out.push(item);
        }
    }
    out
}

/// `path?k=v&...` with values percent-encoded.
pub fn with_query(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let encoded: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{}", encoded.join("&"))
}

fn encode(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        let q = vec![
            ("labelSelector".to_owned(), "app in (a,b),x!=y".to_owned()),
            ("limit".to_owned(), "500".to_owned()),
        ];
        assert_eq!(
            with_query("/api/v1/pods", &q),
            "/api/v1/pods?labelSelector=app%20in%20%28a%2Cb%29%2Cx%21%3Dy&limit=500"
        );
        assert_eq!(with_query("/x", &[]), "/x");
    }
}
