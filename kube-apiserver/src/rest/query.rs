//! Query parameters of resource requests (`metav1.ListOptions`, `DeleteOptions`, ...) decoded
//! with upstream's validation and messages.

use crate::http::request_info::parse_query;
use crate::http::status::ApiError;
use crate::registry::fields::supported;
use crate::registry::list::ListOptions;
use api_types::registry::ResourceInfo;
use api_types::{fields, labels};
use std::collections::BTreeMap;

/// The query of one request, by parameter name (the first value wins, as Go's url.Values.Get).
#[derive(Debug, Default, Clone)]
pub struct Query(BTreeMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        let mut map = BTreeMap::new();
        for (key, value) in parse_query(query.unwrap_or("")) {
            map.entry(key).or_insert(value);
        }
        Self(map)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1` or bare presence).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.0.get(key).map(String::as_str), Some("true" | "1" | ""))
    }

    fn integer(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "invalid value for {key}: {v:?} is not an integer"
                    ))
                })
            })
            .transpose()
    }

    /// The list options, with selectors parsed and field selectors checked against the fields
    /// the resource supports (400 as upstream otherwise).
    pub fn list_options(&self, info: &ResourceInfo) -> Result<ListOptions, ApiError> {
        let label_selector = self
            .get("labelSelector")
            .map(labels::Selector::parse)
            .transpose()
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let field_selector = match self.get("fieldSelector") {
            Some(raw) => {
                let parsed = fields::Selector::parse(raw)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                let supported = supported(info);
                let translated = parsed
                    .translate(&supported)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                Some(translated)
            }
            None => None,
        };
        let limit = self.integer("limit")?.unwrap_or(0).max(0) as usize;
        Ok(ListOptions {
            label_selector,
            field_selector,
            limit,
            continue_token: self.get("continue").map(String::from),
            resource_version: self.get("resourceVersion").map(String::from),
            resource_version_match: self.get("resourceVersionMatch").map(String::from),
        })
    }

    /// `timeoutSeconds` of a watch or list.
    pub fn timeout_seconds(&self) -> Result<Option<u64>, ApiError> {
        Ok(self.integer("timeoutSeconds")?.map(|s| s.max(0) as u64))
    }

    /// `dryRun=All`: the request is checked but nothing is stored. Unknown values are a 400.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::registry::by_group_version_resource;

    #[test]
    fn list_options_and_their_errors() {
        let pods = by_group_version_resource("", "v1", "pods").unwrap();
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=5&continue=abc",
        ));
        let opts = q.list_options(pods).unwrap();
        assert_eq!(opts.limit, 5);
        assert_eq!(opts.continue_token.as_deref(), Some("abc"));
        assert!(opts.label_selector.is_some() && opts.field_selector.is_some());

        let err = Query::parse(Some("fieldSelector=spec.bogus%3Dx"))
            .list_options(pods)
            .unwrap_err();
        assert_eq!(err.code().as_u16(), 400);
        assert!(
            err.message()
                .contains("field label not supported: spec.bogus"),
            "{}",
            err.message()
        );

        let err = Query::parse(Some("labelSelector=a%20in%20("))
            .list_options(pods)
            .unwrap_err();
        assert_eq!(err.code().as_u16(), 400);

        let err = Query::parse(Some("limit=ten"))
            .list_options(pods)
            .unwrap_err();
        assert_eq!(err.code().as_u16(), 400);
    }

    #[test]
    fn flags_and_dry_run() {
        let q = Query::parse(Some("watch=true&allowWatchBookmarks&dryRun=All"));
        assert!(q.flag("watch") && q.flag("allowWatchBookmarks") && !q.flag("pretty"));
        assert!(q.dry_run().unwrap());
        assert!(Query::parse(Some("dryRun=Some")).dry_run().is_err());
    }
}
