//! What a kubelet API request asks to do, in the apiserver's authorization terms: a verb on
//! the node object's subresource (upstream's kubelet auth attributes, with the fine-grained
//! `pods`/`healthz`/`configz` subresources tried before `proxy`, as KubeletFineGrainedAuthz,
//! on by default since 1.33).

use http::Method;

/// One authorization question: `verb` on `nodes/<subresource>` named `name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    pub verb: String,
    pub name: String,
    pub subresource: String,
}

/// The verb a request's method maps to; unknown methods keep their lower-cased name, as
/// upstream passes them through.
pub fn verb(method: &Method) -> String {
    match *method {
        Method::POST => "create".into(),
        Method::GET | Method::HEAD => "get".into(),
        Method::PUT => "update".into(),
        Method::PATCH => "patch".into(),
        Method::DELETE => "delete".into(),
        ref other => other.as_str().to_lowercase(),
    }
}

/// Whether `path` is `prefix` itself or below it.
fn is_subpath(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The subresources to check for `path`, in order: any one allowing the request suffices.
pub fn subresources(path: &str) -> Vec<&'static str> {
    let fine: &[(&str, &str)] = &[
        ("/pods", "pods"),
        ("/runningpods", "pods"),
        ("/healthz", "healthz"),
        ("/configz", "configz"),
    ];
    let coarse: &[(&str, &str)] = &[
        ("/stats", "stats"),
        ("/metrics", "metrics"),
        ("/logs", "log"),
        ("/spec", "spec"),
        ("/checkpoint", "checkpoint"),
    ];
    if let Some((_, sub)) = coarse.iter().find(|(p, _)| is_subpath(path, p)) {
        return vec![sub];
    }
    if let Some((_, sub)) = fine.iter().find(|(p, _)| is_subpath(path, p)) {
        return vec![sub, "proxy"];
    }
    vec!["proxy"]
}

/// The authorization questions for a request to `path` with `method` on node `node_name`.
pub fn for_request(method: &Method, path: &str, node_name: &str) -> Vec<Attributes> {
    let verb = verb(method);
    subresources(path)
        .into_iter()
        .map(|sub| Attributes {
            verb: verb.clone(),
            name: node_name.to_string(),
            subresource: sub.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_upstream_subresources() {
        let cases: &[(&str, &[&str])] = &[
            ("/stats/summary", &["stats"]),
            ("/stats", &["stats"]),
            ("/statsx", &["proxy"]),
            ("/metrics", &["metrics"]),
            ("/metrics/resource", &["metrics"]),
            ("/metrics/cadvisor", &["metrics"]),
            ("/logs/", &["log"]),
            ("/spec/", &["spec"]),
            ("/checkpoint/ns/p/c", &["checkpoint"]),
            ("/pods", &["pods", "proxy"]),
            ("/pods/", &["pods", "proxy"]),
            ("/runningpods/", &["pods", "proxy"]),
            ("/healthz", &["healthz", "proxy"]),
            ("/healthz/syncloop", &["healthz", "proxy"]),
            ("/configz", &["configz", "proxy"]),
            ("/containerLogs/ns/p/c", &["proxy"]),
            ("/exec/ns/p/c", &["proxy"]),
            ("/portForward/ns/p", &["proxy"]),
            ("/run/ns/p/c", &["proxy"]),
            ("/", &["proxy"]),
        ];
        for (path, want) in cases {
            assert_eq!(subresources(path), *want, "{path}");
        }
    }

    #[test]
    fn methods_map_to_verbs() {
        let cases = [
            (Method::GET, "get"),
            (Method::HEAD, "get"),
            (Method::POST, "create"),
            (Method::PUT, "update"),
            (Method::PATCH, "patch"),
            (Method::DELETE, "delete"),
            (Method::OPTIONS, "options"),
        ];
        for (method, want) in cases {
            assert_eq!(verb(&method), want, "{method}");
        }
    }

    #[test]
    fn attributes_name_the_node() {
        let attrs = for_request(&Method::POST, "/exec/ns/p/c", "n1");
        assert_eq!(
            attrs,
            vec![Attributes {
                verb: "create".into(),
                name: "n1".into(),
                subresource: "proxy".into()
            }]
        );
    }
}
