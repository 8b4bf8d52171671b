//! Deprecated served kinds: upstream marks a kind's Go type with `APILifecycleDeprecated` (and
//! optionally `APILifecycleRemoved` and `APILifecycleReplacement`), and every request to that
//! group-version-kind then carries a `Warning: 299 - "<text>"` header. Here the same facts are a
//! table, so adding a deprecation is adding a row.

use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::http::status::go_quote;
use api_types::registry;
use http::{HeaderValue, Response, header};

/// One deprecated (group, version, kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deprecation {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// The release (major, minor) the kind was deprecated in.
    pub deprecated_in: (u32, u32),
    /// The release it stops being served in, when one is announced.
    pub removed_in: Option<(u32, u32)>,
    /// What to use instead: (group, version, kind).
    pub replacement: Option<(&'static str, &'static str, &'static str)>,
}

/// The deprecated kinds among those this server serves, as upstream v1.33 marks them.
pub const DEPRECATIONS: &[Deprecation] = &[
    Deprecation {
        group: "",
        version: "v1",
        kind: "ComponentStatus",
        deprecated_in: (1, 19),
        removed_in: None,
        replacement: None,
    },
    // KEP-4974: Endpoints gave way to EndpointSlices.
    Deprecation {
        group: "",
        version: "v1",
        kind: "Endpoints",
        deprecated_in: (1, 33),
        removed_in: None,
        replacement: Some(("discovery.k8s.io", "v1", "EndpointSlice")),
    },
];

/// The deprecation warning of the kind a resource request addresses, if it is deprecated.
pub fn for_request(request: &RequestInfo) -> Option<String> {
    if !request.is_resource_request {
        return None;
    }
    let info = registry::by_group_version_resource(
        &request.api_group,
        &request.api_version,
        &request.resource,
    )?;
    warning(info.group, info.version, info.kind)
}

/// Puts the deprecation warning of `request`'s kind before the response's other warnings, as
/// upstream records it before the request is served.
pub fn with_deprecation_warning(
    mut response: Response<Body>,
    request: &RequestInfo,
) -> Response<Body> {
    let Some(text) = for_request(request) else {
        return response;
    };
    let Ok(value) = HeaderValue::from_str(&format!("299 - {}", go_quote(&text))) else {
        return response;
    };
    let headers = response.headers_mut();
    let others: Vec<HeaderValue> = headers.get_all(header::WARNING).iter().cloned().collect();
    headers.remove(header::WARNING);
    headers.append(header::WARNING, value);
    for other in others {
        headers.append(header::WARNING, other);
    }
    response
}

/// The server's own release: a kind is reported only once it is deprecated at or before it.
const CURRENT_RELEASE: (u32, u32) = (1, 33);

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

impl Deprecation {
    /// Upstream's warning text, e.g. `v1 Endpoints is deprecated in v1.33+; use
    /// discovery.k8s.io/v1 EndpointSlice`.
    pub fn message(&self) -> String {
        let (major, minor) = self.deprecated_in;
        let mut text = format!(
            "{} {} is deprecated in v{major}.{minor}+",
            group_version(self.group, self.version),
            self.kind
        );
        if let Some((major, minor)) = self.removed_in {
            text.push_str(&format!(", unavailable in v{major}.{minor}+"));
        }
        if let Some((group, version, kind)) = self.replacement {
            text.push_str(&format!("; use {} {kind}", group_version(group, version)));
        }
        text
    }
}

/// The deprecation warning for requests to `group`/`version` `kind`, if it is deprecated.
pub fn warning(group: &str, version: &str, kind: &str) -> Option<String> {
    DEPRECATIONS
        .iter()
        .find(|d| d.group == group && d.version == version && d.kind == kind)
        .filter(|d| d.deprecated_in <= CURRENT_RELEASE)
        .map(Deprecation::message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_texts() {
        assert_eq!(
            warning("", "v1", "ComponentStatus").as_deref(),
            Some("v1 ComponentStatus is deprecated in v1.19+")
        );
        assert_eq!(
            warning("", "v1", "Endpoints").as_deref(),
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        );
        assert_eq!(warning("discovery.k8s.io", "v1", "EndpointSlice"), None);
        assert_eq!(warning("", "v1", "Pod"), None);
    }

    #[test]
    fn the_warning_comes_first() {
        let mut response = Response::new(crate::http::response::full(Vec::new()));
        response
            .headers_mut()
            .append(header::WARNING, HeaderValue::from_static("299 - \"other\""));
        let request = RequestInfo {
            is_resource_request: true,
            api_version: "v1".into(),
            resource: "endpoints".into(),
            ..Default::default()
        };
        let response = with_deprecation_warning(response, &request);
        let warnings: Vec<&str> = response
            .headers()
            .get_all(header::WARNING)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(
            warnings,
            [
                "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"",
                "299 - \"other\""
            ]
        );
        let pods = RequestInfo {
            resource: "pods".into(),
            ..request
        };
        assert_eq!(for_request(&pods), None);
    }

    #[test]
    fn removal_and_future_deprecations() {
        let d = Deprecation {
            group: "batch",
            version: "v1beta1",
            kind: "CronJob",
            deprecated_in: (1, 21),
            removed_in: Some((1, 25)),
            replacement: Some(("batch", "v1", "CronJob")),
        };
        assert_eq!(
            d.message(),
            "batch/v1beta1 CronJob is deprecated in v1.21+, unavailable in v1.25+; use batch/v1 CronJob"
        );
        // Every row of the table is already in effect in this release.
        assert!(
            DEPRECATIONS
                .iter()
                .all(|d| d.deprecated_in <= CURRENT_RELEASE)
        );
    }
}
