//! Assembling the documents: one OpenAPI 3.0 document per served group-version (and for the
//! `/api`, `/apis`, `/apis/<group>` discovery endpoints), the v3 root that indexes them, and the
//! Swagger 2.0 document of everything.

use super::definitions::{Definitions, meta};
use super::operation::{Flavor, PathItem};
use super::paths::{self, discovery_path, group_version_paths, group_word};
use api_types::registry;
use bytes::Bytes;
use component_base::version::GIT_VERSION;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// One encoded document and the digest clients cache it by.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// Hex digest of `bytes`.
    pub hash: String,
    /// The JSON document.
    pub bytes: Bytes,
}

impl Encoded {
    /// Encodes `value` and digests the bytes.
    pub fn new(value: &Value) -> Encoded {
        let bytes = Bytes::from(serde_json::to_vec(value).unwrap_or_default());
        Encoded {
            hash: digest(&bytes),
            bytes,
        }
    }
}

/// A stable hex digest (128-bit FNV-1a) of `bytes`: the same document gives the same hash
/// in every process, so clients' caches survive restarts.
pub fn digest(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let hash = bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME));
    format!("{hash:032X}")
}

/// Every v3 document, keyed by its path under `/openapi/v3/` (`api/v1`, `apis/apps/v1`,
/// `api`, `apis`, `apis/apps`), and the root that lists them.
pub struct V3Documents {
    pub documents: BTreeMap<String, Encoded>,
    pub root: Encoded,
}

/// The path items of every document, by key; shared by the v3 documents and the v2 one.
fn all_path_items(defs: &Definitions) -> BTreeMap<String, Vec<PathItem>> {
    let mut out = BTreeMap::new();
    out.insert(
        "api".to_owned(),
        vec![discovery_path(
            "/api/".to_owned(),
            "getCoreAPIVersions".to_owned(),
            "core",
            meta::API_VERSIONS,
        )],
    );
    out.insert(
        "apis".to_owned(),
        vec![discovery_path(
            "/apis/".to_owned(),
            "getAPIVersions".to_owned(),
            "apis",
            meta::API_GROUP_LIST,
        )],
    );
    for group in registry::groups() {
        if !group.is_core() {
            let word = group_word(group.name);
            let tag = paths::tag(group.name, "");
            out.insert(
                format!("apis/{}", group.name),
                vec![discovery_path(
                    format!("/apis/{}/", group.name),
                    format!("get{word}APIGroup"),
                    tag.trim_end_matches('_'),
                    meta::API_GROUP,
                )],
            );
        }
        for version in group.versions {
            let key = paths::prefix(group.name, version)
                .trim_start_matches('/')
                .to_owned();
            out.insert(key, group_version_paths(defs, group.name, version));
        }
    }
    out
}

fn info() -> Value {
    json!({"title": "Kubernetes", "version": GIT_VERSION})
}

/// The `paths` object of `items`.
pub fn render_paths(items: &[PathItem], flavor: Flavor) -> Map<String, Value> {
    items
        .iter()
        .map(|item| (item.path.clone(), item.render(flavor)))
        .collect()
}

/// The definitions the operations of `items` name.
pub fn referenced(items: &[PathItem]) -> Vec<String> {
    items
        .iter()
        .flat_map(PathItem::referenced_definitions)
        .collect()
}

/// Builds every v3 document and the root.
pub fn build_v3(defs: &Definitions) -> V3Documents {
    let mut documents = BTreeMap::new();
    for (key, items) in all_path_items(defs) {
        let roots = referenced(&items);
        let names = defs.closure(roots.iter().map(String::as_str));
        let doc = json!({
            "openapi": "3.0.0",
            "info": info(),
            "paths": render_paths(&items, Flavor::V3),
            "components": {
                "schemas": defs.render_v3(&names),
                "securitySchemes": {
                    "BearerToken": {
                        "description": "Bearer Token authentication",
                        "in": "header",
                        "name": "authorization",
                        "type": "apiKey",
                    },
                },
            },
        });
        documents.insert(key, Encoded::new(&doc));
    }
    let root = root_of(documents.iter());
    V3Documents { documents, root }
}

/// The v3 root listing `documents` (key under `/openapi/v3/` and document) with their hashes.
pub fn root_of<'a>(documents: impl Iterator<Item = (&'a String, &'a Encoded)>) -> Encoded {
    let index: Map<String, Value> = documents
        .map(|(key, doc)| {
            let url = format!("/openapi/v3/{key}?hash={}", doc.hash);
            (key.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    Encoded::new(&json!({"paths": index}))
}

/// Builds the Swagger 2.0 document of every path and definition.
pub fn build_v2(defs: &Definitions) -> Encoded {
    Encoded::new(&v2_value(defs))
}

/// The Swagger 2.0 document of every built-in path and definition, before encoding (the
/// custom resources' paths and definitions are merged into it).
pub fn v2_value(defs: &Definitions) -> Value {
    let mut paths = Map::new();
    let mut roots = BTreeSet::new();
    for items in all_path_items(defs).values() {
        paths.extend(render_paths(items, Flavor::V2));
        roots.extend(referenced(items));
    }
    // Every kind's definition, even one no path names, as upstream's v2 document has them.
    roots.extend(defs.schemas.keys().cloned());
    let names = defs.closure(roots.iter().map(String::as_str));
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": defs.render_v2(&names),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            },
        },
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_stable_and_discriminating() {
        assert_eq!(digest(b"abc"), digest(b"abc"));
        assert_ne!(digest(b"abc"), digest(b"abd"));
        assert_eq!(digest(b"").len(), 32);
    }
}
