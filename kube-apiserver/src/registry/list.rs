//! Listing: label and field selection, `limit`/`continue` pagination over one consistent
//! snapshot, and the `resourceVersion` / `resourceVersionMatch` semantics of upstream's lists.

use super::error::RegistryError;
use super::fields::field_set;
use super::keys;
use super::store::ResourceStore;
use crate::storage::backend::{Revision, StorageError};
use crate::storage::codec;
use api_types::{fields, labels};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Backend page size while filtering: large enough that selective lists need few round trips.
const FETCH_PAGE: usize = 500;

/// Upstream's message when a continue token's snapshot has been compacted away.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Options of a list (`metav1.ListOptions` less the watch ones).
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub label_selector: Option<labels::Selector>,
    pub field_selector: Option<fields::Selector>,
    /// Most items to return; 0 for all.
    pub limit: usize,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    pub items: Vec<Value>,
    /// The snapshot the page is consistent with (the list's `metadata.resourceVersion`).
    pub resource_version: Revision,
    /// Where the next page starts, when there is one.
    pub continue_token: Option<String>,
    /// Items after this page, when it can be known without filtering (no selectors).
    pub remaining: Option<i64>,
}

/// What a continue token holds: the snapshot revision and the next key, relative to the
/// resource's prefix so a token cannot reach outside it.
#[derive(Debug, Serialize, Deserialize)]
struct ContinueToken {
    v: String,
    rv: Revision,
    start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

fn encode_continue(rv: Revision, start: &str) -> String {
    let token = ContinueToken {
        v: TOKEN_VERSION.into(),
        rv,
        start: start.into(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode_continue(token: &str) -> Result<ContinueToken, RegistryError> {
    let bad = || RegistryError::BadRequest(format!("continue key is not valid: {token}"));
    let bytes = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let token: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if token.v != TOKEN_VERSION || token.rv <= 0 || token.start.contains("..") {
        return Err(bad());
    }
    Ok(token)
}

/// The revision a list reads at (None = now) and whether it came from a continue token.
fn read_revision(options: &ListOptions) -> Result<Option<Revision>, RegistryError> {
    let rv = options
        .resource_version
        .as_deref()
        .filter(|rv| !rv.is_empty());
    match (
        rv,
        options
            .resource_version_match
            .as_deref()
            .filter(|m| !m.is_empty()),
    ) {
        (None, Some(_)) => Err(RegistryError::BadRequest(
            "resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
        )),
        (Some(rv), Some("Exact")) => {
            let revision = parse_rv(rv)?;
            if revision == 0 {
                return Err(RegistryError::BadRequest(
                    "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"".into(),
                ));
            }
            Ok(Some(revision))
        }
        (Some(rv), Some("NotOlderThan") | None) => parse_rv(rv).map(|_| None),
        (_, Some(other)) => Err(RegistryError::BadRequest(format!(
            "unsupported resourceVersionMatch {other:?}: supported values: \"Exact\", \"NotOlderThan\""
        ))),
        (None, None) => Ok(None),
    }
}

fn parse_rv(rv: &str) -> Result<Revision, RegistryError> {
    rv.parse::<Revision>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| RegistryError::BadRequest(format!("invalid resource version: {rv:?}")))
}

impl ResourceStore {
    /// Lists the objects of `namespace` (all namespaces when `None`) matching the selectors.
    pub async fn list(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage, RegistryError> {
        let info = self.info();
        let prefix = keys::namespace_prefix(info, namespace);
        let (mut revision, mut start) = match &options.continue_token {
            Some(token) => {
                if options
                    .resource_version
                    .as_deref()
                    .is_some_and(|rv| !rv.is_empty())
                {
                    return Err(RegistryError::BadRequest(
                        "specifying resource version is not allowed when using continue".into(),
                    ));
                }
                let token = decode_continue(token)?;
                (Some(token.rv), Some(format!("{prefix}{}", token.start)))
            }
            None => (read_revision(options)?, None),
        };
        let expired_message = |requested: Revision, compacted: Revision| {
            if options.continue_token.is_some() {
                CONTINUE_EXPIRED.to_string()
            } else {
                format!("too old resource version: {requested} ({compacted})")
            }
        };
        let selective = options
            .label_selector
            .as_ref()
            .is_some_and(|s| !s.is_empty())
            || options
                .field_selector
                .as_ref()
                .is_some_and(|s| !s.is_empty());
        let mut items = Vec::new();
        loop {
            let fetch = if options.limit > 0 && !selective {
                options.limit + 1
            } else {
                FETCH_PAGE
            };
            let page = self
                .backend()
                .list(&prefix, start.as_deref(), fetch, revision)
                .await
                .map_err(|err| match err {
                    StorageError::Compacted {
                        requested,
                        compacted,
                    } => RegistryError::Gone(expired_message(requested, compacted)),
                    other => other.into(),
                })?;
            // Every further page reads the same snapshot.
            revision = Some(page.revision);
            let count = page.kvs.len();
            for (index, kv) in page.kvs.iter().enumerate() {
                let object = codec::decode(kv)?;
                if !self.selected(&object, options) {
                    continue;
                }
                if options.limit > 0 && items.len() == options.limit {
                    // One more match exists: the next page starts here.
                    let relative = kv.key.strip_prefix(&prefix).unwrap_or(&kv.key);
                    let remaining = (!selective).then(|| (count - index) as i64 + page.remaining);
                    return Ok(ListPage {
                        items,
                        resource_version: page.revision,
                        continue_token: Some(encode_continue(page.revision, relative)),
                        remaining,
                    });
                }
                items.push(object);
            }
            match (page.more, page.kvs.last()) {
                (true, Some(last)) => start = Some(format!("{}\0", last.key)),
                _ => {
                    return Ok(ListPage {
                        items,
                        resource_version: page.revision,
                        continue_token: None,
                        remaining: None,
                    });
                }
            }
        }
    }

    /// Whether `object` passes the list's label and field selectors.
    pub fn selected(&self, object: &Value, options: &ListOptions) -> bool {
        if let Some(selector) = options.label_selector.as_ref().filter(|s| !s.is_empty()) {
            let labels: BTreeMap<String, String> = object["metadata"]["labels"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            if !selector.matches(&labels) {
                return false;
            }
        }
        if let Some(selector) = options.field_selector.as_ref().filter(|s| !s.is_empty()) {
            return selector.matches(&field_set(self.info(), object));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = encode_continue(42, "default/web-3");
        let decoded = decode_continue(&token).unwrap();
        assert_eq!((decoded.rv, decoded.start.as_str()), (42, "default/web-3"));
        for bad in [
            "",
            "!!!",
            "e30",
            &URL_SAFE_NO_PAD.encode(br#"{"v":"x","rv":1,"start":""}"#),
        ] {
            assert!(decode_continue(bad).is_err(), "{bad:?} accepted");
        }
        let escape =
            URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#);
        assert!(decode_continue(&escape).is_err());
    }

    #[test]
    fn resource_version_semantics() {
        let opts = |rv: Option<&str>, m: Option<&str>| ListOptions {
            resource_version: rv.map(String::from),
            resource_version_match: m.map(String::from),
            ..Default::default()
        };
        assert_eq!(read_revision(&opts(None, None)).unwrap(), None);
        assert_eq!(read_revision(&opts(Some("0"), None)).unwrap(), None);
        assert_eq!(
            read_revision(&opts(Some("12"), Some("Exact"))).unwrap(),
            Some(12)
        );
        assert_eq!(
            read_revision(&opts(Some("12"), Some("NotOlderThan"))).unwrap(),
            None
        );
        assert!(read_revision(&opts(None, Some("Exact"))).is_err());
        assert!(read_revision(&opts(Some("abc"), None)).is_err());
        assert!(read_revision(&opts(Some("0"), Some("Exact"))).is_err());
        assert!(read_revision(&opts(Some("5"), Some("Sometime"))).is_err());
    }
}
