//! What a request is about, read from its method, path and query, as upstream's
//! `RequestInfoFactory`: the verb, group, version, namespace, resource, subresource and name
//! that authorization, in-flight limits, metrics and the handlers all key on.

use api_types::fields;

/// The result of parsing a request URL, as upstream's `request.RequestInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// Whether this is a request for an API resource (under `/api` or `/apis`) rather than for a
    /// path such as `/healthz` or `/version`.
    pub is_resource_request: bool,
    /// The decoded URL path.
    pub path: String,
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, ...) for resource requests, the
    /// lower-cased HTTP method otherwise.
    pub verb: String,
    /// `api` or `apis`; empty for non-resource requests.
    pub api_prefix: String,
    /// The API group, empty for the core group.
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The namespace, empty for cluster-scoped requests and for requests across namespaces.
    pub namespace: String,
    /// The resource (plural), e.g. `pods`.
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The object's name, from the path or from a `metadata.name=` field selector on list/watch.
    pub name: String,
    /// The path segments from the resource on: `resource/name/subresource/...`.
    pub parts: Vec<String>,
    /// The field selector of a list or watch (everything when none was given); None when the
    /// request's selector is unknown (authorization reviews).
    pub field_selector: Option<fields::Selector>,
}

/// Why a request path cannot be understood (upstream answers these with 404).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestInfoError {
    /// `/api/v1/watch` or `/api/v1/proxy` with nothing after the special verb.
    #[error("unable to determine kind and namespace from url, {0}")]
    MissingResource(String),
}

/// Verbs that may appear as a path segment right after the version (`/api/v1/watch/pods`).
const SPECIAL_VERBS: &[&str] = &["proxy", "watch"];
/// Special verbs whose third path part is not a subresource but part of the proxied path.
const SPECIAL_VERBS_NO_SUBRESOURCES: &[&str] = &["proxy"];
/// Subresources of a namespace, which must not be taken for a resource inside it.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];
/// Verbs that only read; everything else counts against the mutating in-flight limit.
const READ_ONLY_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs that make a request long-running (exempt from in-flight limits and timeouts).
const LONG_RUNNING_VERBS: &[&str] = &["watch", "proxy"];
/// Subresources that make a request long-running.
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];
/// Subresources that upgrade the connection to a stream (RBAC's `connect` family).
const CONNECT_SUBRESOURCES: &[&str] = &["attach", "exec", "portforward", "proxy"];

impl RequestInfo {
    /// Parses a request as upstream's `RequestInfoFactory.NewRequestInfo` with the `api` and
    /// `apis` prefixes (`api` being the one without a group). `query` is the raw query string.
    pub fn parse(method: &str, path: &str, query: Option<&str>) -> Result<Self, RequestInfoError> {
        let decoded_path = percent_decode(path, false);
        let mut info = RequestInfo {
            path: decoded_path.clone(),
            verb: method.to_ascii_lowercase(),
            ..Default::default()
        };
        let segments = split_path(&decoded_path);
        if segments.len() < 3 {
            return Ok(info);
        }
        let prefix = segments[0].as_str();
        if prefix != "api" && prefix != "apis" {
            return Ok(info);
        }
        let mut rest: &[String] = &segments[1..];
        if prefix == "apis" {
            // A group needs group/version/resource after the prefix.
            if rest.len() < 3 {
                return Ok(info);
            }
            info.api_group = rest[0].clone();
            rest = &rest[1..];
        }
        info.api_prefix = prefix.to_string();
        info.is_resource_request = true;
        info.api_version = rest[0].clone();
        rest = &rest[1..];

        if SPECIAL_VERBS.contains(&rest[0].as_str()) {
            if rest.len() < 2 {
                let url = match query {
                    Some(q) => format!("{path}?{q}"),
                    None => path.to_string(),
                };
                return Err(RequestInfoError::MissingResource(url));
            }
            info.verb = rest[0].clone();
            rest = &rest[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string();
        }

        if rest[0] == "namespaces" && rest.len() > 1 {
            info.namespace = rest[1].clone();
            // `/namespaces/foo/pods` is pods in foo; `/namespaces/foo/status` is the
            // namespace's own subresource, so the parts stay relative to `namespaces`.
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2].as_str()) {
                rest = &rest[2..];
            }
        }
        info.parts = rest.to_vec();

        let parts = &info.parts;
        if parts.len() >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.contains(&info.verb.as_str()) {
            info.subresource = parts[2].clone();
        }
        if parts.len() >= 2 {
            info.name = parts[1].clone();
        }
        if let Some(resource) = parts.first() {
            info.resource = resource.clone();
        }

        if info.name.is_empty() && info.verb == "get" {
            let opts = ListQuery::parse(query.unwrap_or(""));
            info.verb = if opts.watch { "watch" } else { "list" }.to_string();
            if let Some(name) = opts.field_selector_name
                && is_valid_path_segment_name(&name)
            {
                info.name = name;
            }
            info.field_selector = Some(opts.field_selector);
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        Ok(info)
    }

    /// Parses the method and URI of an HTTP request.
    pub fn from_request<B>(req: &http::Request<B>) -> Result<Self, RequestInfoError> {
        Self::parse(req.method().as_str(), req.uri().path(), req.uri().query())
    }

    /// Whether the request only reads (upstream's non-mutating verbs `get`, `list`, `watch`).
    pub fn is_read_only(&self) -> bool {
        READ_ONLY_VERBS.contains(&self.verb.as_str())
    }

    /// Whether the request may stay open indefinitely (watch, proxy, exec, attach, logs,
    /// port-forward), as upstream's `BasicLongRunningRequestCheck`: such requests are exempt
    /// from in-flight limits.
    pub fn is_long_running(&self) -> bool {
        self.is_resource_request
            && (LONG_RUNNING_VERBS.contains(&self.verb.as_str())
                || LONG_RUNNING_SUBRESOURCES.contains(&self.subresource.as_str()))
    }

    /// Whether the request opens a stream to a pod, service or node (`exec`, `attach`,
    /// `portforward`, `proxy` subresources), what the handlers serve as "connect". Upstream's
    /// verb for these stays `create` (POST) or `get` (GET), which is what RBAC checks.
    pub fn is_connect(&self) -> bool {
        self.is_resource_request && CONNECT_SUBRESOURCES.contains(&self.subresource.as_str())
    }

    /// The metrics `scope` label: `resource` for one object, `namespace` for a collection in
    /// a namespace, `cluster` for a cluster-wide collection, empty for non-resource requests.
    pub fn scope(&self) -> &'static str {
        if !self.is_resource_request {
            ""
        } else if !self.name.is_empty() {
            "resource"
        } else if !self.namespace.is_empty() {
            "namespace"
        } else {
            "cluster"
        }
    }
}

/// The list options request info needs: whether it is a watch and the name a field selector
/// pins. When any list option fails to parse, upstream ignores them all except a `watch`
/// that is not `false`/`0`.
struct ListQuery {
    watch: bool,
    field_selector_name: Option<String>,
    field_selector: fields::Selector,
}

impl ListQuery {
    fn parse(query: &str) -> Self {
        let params = parse_query(query);
        let first = |key: &str| {
            params
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let parsed = (|| -> Option<ListQuery> {
            let watch = match first("watch") {
                Some(v) => parse_go_bool(v)?,
                None => false,
            };
            if let Some(v) = first("allowWatchBookmarks") {
                parse_go_bool(v)?;
            }
            for int_key in ["limit", "timeoutSeconds"] {
                if let Some(v) = first(int_key) {
                    v.parse::<i64>().ok()?;
                }
            }
            if let Some(v) = first("labelSelector") {
                api_types::labels::Selector::parse(v).ok()?;
            }
            let field_selector = match first("fieldSelector") {
                Some(v) => fields::Selector::parse(v).ok()?,
                None => fields::Selector::everything(),
            };
            let field_selector_name = field_selector
                .requires_exact_match("metadata.name")
                .map(str::to_string);
            Some(ListQuery {
                watch,
                field_selector_name,
                field_selector,
            })
        })();
        parsed.unwrap_or_else(|| ListQuery {
            watch: first("watch")
                .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0")),
            field_selector_name: None,
            field_selector: fields::Selector::everything(),
        })
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Upstream's `path.IsValidPathSegmentName`: a name usable as one URL path segment.
fn is_valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// Splits a path on `/` after trimming slashes at both ends; the root path has no segments.
fn split_path(path: &str) -> Vec<String> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split('/').map(str::to_string).collect()
}

/// Decodes a query string into key/value pairs in order (`+` is a space, `%XX` a byte).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as a space when `plus_is_space`); invalid escapes are kept
/// as written and invalid UTF-8 is replaced, so decoding never fails.
pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus_is_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (method, url, verb, prefix, group, version, namespace, resource, subresource, name, parts)
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    );

    fn parse_url(method: &str, url: &str) -> Result<RequestInfo, RequestInfoError> {
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (url, None),
        };
        RequestInfo::parse(method, path, query)
    }

    #[test]
    fn resource_requests_as_upstream() {
        // Mostly upstream's own TestGetAPIRequestInfo table.
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
            ("GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", &["namespaces", "other"]),
            ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // special verbs
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo", "subpath", "not", "a", "subresource"]),
            ("GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/watch/namespaces/other/pods/foo", "watch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            // subresources
            ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", &["pods", "foo", "status"]),
            ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", &["pods", "foo", "proxy", "subpath"]),
            ("PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", &["namespaces", "other", "finalize"]),
            ("PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", &["namespaces", "other", "status"]),
            ("POST", "/api/v1/namespaces/other/pods/foo/exec", "create", "api", "", "v1", "other", "pods", "exec", "foo", &["pods", "foo", "exec"]),
            ("GET", "/api/v1/namespaces/other/pods/foo/log", "get", "api", "", "v1", "other", "pods", "log", "foo", &["pods", "foo", "log"]),
            // verbs from methods
            ("POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("PUT", "/api/v1/namespaces/other/pods/foo", "update", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("OPTIONS", "/api/v1/namespaces/other/pods", "", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // groups
            ("GET", "/apis/extensions/v1beta1/namespaces/other/pods", "list", "apis", "extensions", "v1beta1", "other", "pods", "", "", &["pods"]),
            ("GET", "/apis/apps/v1/deployments", "list", "apis", "apps", "v1", "", "deployments", "", "", &["deployments"]),
            ("PUT", "/apis/apps/v1/namespaces/ns/deployments/web/scale", "update", "apis", "apps", "v1", "ns", "deployments", "scale", "web", &["deployments", "web", "scale"]),
            ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "get", "apis", "rbac.authorization.k8s.io", "v1", "", "clusterroles", "", "admin", &["clusterroles", "admin"]),
            // field selectors on list and watch name the object
            ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo", "list", "api", "", "v1", "other", "pods", "", "foo", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods?watch=1&fieldSelector=metadata.name=foo", "watch", "api", "", "v1", "other", "pods", "", "foo", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name!%3Dfoo", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3D..", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // a bad list option drops the selector but keeps a watch
            ("GET", "/api/v1/pods?watch=yes&limit=x&fieldSelector=metadata.name%3Dfoo", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/pods?watch=0&limit=x", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            // percent-encoded path segments are decoded
            ("GET", "/api/v1/namespaces/other/configmaps/a%3Ab", "get", "api", "", "v1", "other", "configmaps", "", "a:b", &["configmaps", "a:b"]),
        ];
        for &(method, url, verb, prefix, group, version, ns, resource, sub, name, parts) in cases {
            let info = parse_url(method, url).unwrap_or_else(|e| panic!("{method} {url}: {e}"));
            assert!(info.is_resource_request, "{method} {url}");
            assert_eq!(info.verb, verb, "verb of {method} {url}");
            assert_eq!(info.api_prefix, prefix, "prefix of {method} {url}");
            assert_eq!(info.api_group, group, "group of {method} {url}");
            assert_eq!(info.api_version, version, "version of {method} {url}");
            assert_eq!(info.namespace, ns, "namespace of {method} {url}");
            assert_eq!(info.resource, resource, "resource of {method} {url}");
            assert_eq!(info.subresource, sub, "subresource of {method} {url}");
            assert_eq!(info.name, name, "name of {method} {url}");
            assert_eq!(info.parts, parts, "parts of {method} {url}");
        }
    }

    #[test]
    fn non_resource_requests() {
        let cases = [
            ("GET", "/", "get"),
            ("GET", "/healthz", "get"),
            ("GET", "/version", "get"),
            ("GET", "/api", "get"),
            ("GET", "/api/v1", "get"),
            ("GET", "/apis", "get"),
            ("GET", "/apis/apps", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("POST", "/openapi/v2/x", "post"),
            ("GET", "/other/v1/pods", "get"),
        ];
        for (method, path, verb) in cases {
            let info = RequestInfo::parse(method, path, None).expect(path);
            assert!(!info.is_resource_request, "{path}");
            assert_eq!(info.verb, verb, "{path}");
            assert_eq!(info.path, path);
            assert_eq!(info.scope(), "");
        }
    }

    #[test]
    fn special_verb_without_resource_is_an_error() {
        for path in ["/api/v1/watch", "/api/v1/proxy", "/apis/apps/v1/watch"] {
            let err = RequestInfo::parse("GET", path, None).expect_err(path);
            assert_eq!(
                err.to_string(),
                format!("unable to determine kind and namespace from url, {path}")
            );
        }
    }

    #[test]
    fn classification() {
        let long_running = [
            ("GET", "/api/v1/pods?watch=true", true),
            ("GET", "/api/v1/watch/pods", true),
            ("GET", "/api/v1/namespaces/a/pods/b/log", true),
            ("POST", "/api/v1/namespaces/a/pods/b/exec", true),
            ("POST", "/api/v1/namespaces/a/pods/b/portforward", true),
            ("GET", "/api/v1/namespaces/a/pods", false),
            ("GET", "/healthz", false),
        ];
        for (method, url, want) in long_running {
            assert_eq!(
                parse_url(method, url).expect(url).is_long_running(),
                want,
                "{url}"
            );
        }
        let read_only = [
            ("GET", true),
            ("POST", false),
            ("PUT", false),
            ("DELETE", false),
        ];
        for (method, want) in read_only {
            let info = parse_url(method, "/api/v1/namespaces/a/pods").expect("parse");
            assert_eq!(info.is_read_only(), want, "{method}");
        }
        let exec = parse_url("POST", "/api/v1/namespaces/a/pods/b/exec").expect("parse");
        assert!(exec.is_connect());
        assert!(
            !parse_url("GET", "/api/v1/namespaces/a/pods/b/log")
                .expect("parse")
                .is_connect()
        );
        let scopes = [
            ("/api/v1/namespaces/a/pods/b", "resource"),
            ("/api/v1/namespaces/a/pods", "namespace"),
            ("/api/v1/pods", "cluster"),
            ("/api/v1/nodes/n", "resource"),
        ];
        for (url, want) in scopes {
            assert_eq!(parse_url("GET", url).expect(url).scope(), want, "{url}");
        }
    }

    #[test]
    fn query_decoding() {
        assert_eq!(
            parse_query("a=1&b=x%3Dy+z&c&=v"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x=y z".into()),
                ("c".into(), "".into()),
                ("".into(), "v".into())
            ]
        );
        assert_eq!(percent_decode("%zz%4", false), "%zz%4");
        assert_eq!(percent_decode("a+b%2Fc", false), "a+b/c");
    }
}
