//! The query options of `pods/log`, `pods/exec`, `pods/attach` and `pods/portforward`, read
//! and validated as upstream, and the kubelet query each becomes.

use crate::http::request_info::parse_query;
use crate::http::status::ApiError;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;

/// Go's `strconv.ParseBool`, which upstream's query decoding uses.
fn parse_bool(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "{name}: strconv.ParseBool: parsing {value:?}: invalid syntax"
        ))),
    }
}

fn parse_int(name: &str, value: &str) -> Result<i64, ApiError> {
    value.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "{name}: strconv.ParseInt: parsing {value:?}: invalid syntax"
        ))
    })
}

/// A parameter's first value, as Go's `url.Values.Get` reads it.
fn first<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `PodLogOptions` from the query.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub container: String,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    /// Decodes and validates (`ValidatePodLogOptions`: 422 on kind `PodLogOptions`).
    pub fn parse(raw_query: Option<&str>, pod: &str) -> Result<Self, ApiError> {
        let query = parse_query(raw_query.unwrap_or_default());
        let flag = |name: &str| {
            first(&query, name)
                .map(|v| parse_bool(name, v))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        let int = |name: &str| first(&query, name).map(|v| parse_int(name, v)).transpose();
        let since_time = match first(&query, "sinceTime") {
            Some(v) => Some(
                v.parse::<jiff::Timestamp>()
                    .map_err(|_| {
                        ApiError::bad_request(format!(
                            "sinceTime: parsing time {v:?} as RFC3339: cannot parse"
                        ))
                    })?
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string(),
            ),
            None => None,
        };
        let options = LogOptions {
            container: first(&query, "container").unwrap_or_default().to_string(),
            follow: flag("follow")?,
            previous: flag("previous")?,
            timestamps: flag("timestamps")?,
            since_seconds: int("sinceSeconds")?,
            since_time,
            tail_lines: int("tailLines")?,
            limit_bytes: int("limitBytes")?,
            insecure_skip_tls_verify_backend: flag("insecureSkipTLSVerifyBackend")?,
        };
        let mut errors = ErrorList::new();
        if let Some(n) = options.tail_lines
            && n < 0
        {
            errors.push(FieldError::invalid(
                &FieldPath::new("tailLines"),
                n,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = options.limit_bytes
            && n < 1
        {
            errors.push(FieldError::invalid(
                &FieldPath::new("limitBytes"),
                n,
                "must be greater than 0",
            ));
        }
        match (options.since_seconds, &options.since_time) {
            (Some(_), Some(_)) => errors.push(FieldError::forbidden(
                &FieldPath::root(),
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => errors.push(FieldError::invalid(
                &FieldPath::new("sinceSeconds"),
                n,
                "must be greater than 0",
            )),
            _ => {}
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid("", "PodLogOptions", pod, &errors));
        }
        Ok(options)
    }

    /// The kubelet's `containerLogs` query (Go's `url.Values.Encode`: keys sorted).
    pub fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, String)> = Vec::new();
        if self.follow {
            params.push(("follow", "true".into()));
        }
        if let Some(n) = self.limit_bytes {
            params.push(("limitBytes", n.to_string()));
        }
        if self.previous {
            params.push(("previous", "true".into()));
        }
        if let Some(n) = self.since_seconds {
            params.push(("sinceSeconds", n.to_string()));
        }
        if let Some(t) = &self.since_time {
            params.push(("sinceTime", t.clone()));
        }
        if let Some(n) = self.tail_lines {
            params.push(("tailLines", n.to_string()));
        }
        if self.timestamps {
            params.push(("timestamps", "true".into()));
        }
        encode(&params)
    }
}

/// Which streaming subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    Exec,
    Attach,
    PortForward,
}

/// `PodExecOptions`, `PodAttachOptions` or `PodPortForwardOptions` from the query.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub container: String,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub command: Vec<String>,
    pub ports: Vec<u16>,
}

impl StreamOptions {
    /// Decodes the options; exec and attach need a stream, exec a command (the kubelet
    /// refuses both with these messages; refusing them here spares the round trip).
    pub fn parse(raw_query: Option<&str>, kind: StreamKind) -> Result<Self, ApiError> {
        let query = parse_query(raw_query.unwrap_or_default());
        let flag = |name: &str| {
            first(&query, name)
                .map(|v| parse_bool(name, v))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        let mut options = StreamOptions {
            container: first(&query, "container").unwrap_or_default().to_string(),
            ..Default::default()
        };
        match kind {
            StreamKind::PortForward => {
                for (k, v) in &query {
                    if k != "ports" {
                        continue;
                    }
                    for port in v.split(',').filter(|p| !p.is_empty()) {
                        let n = parse_int("ports", port)?;
                        match u16::try_from(n).ok().filter(|p| *p > 0) {
                            Some(p) => options.ports.push(p),
                            None => {
                                return Err(ApiError::bad_request(format!(
                                    "ports: invalid port {n}: must be between 1 and 65535"
                                )));
                            }
                        }
                    }
                }
            }
            StreamKind::Exec | StreamKind::Attach => {
                options.stdin = flag("stdin")?;
                options.stdout = flag("stdout")?;
                options.stderr = flag("stderr")?;
                options.tty = flag("tty")?;
                if kind == StreamKind::Exec {
                    options.command = query
                        .iter()
                        .filter(|(k, _)| k == "command")
                        .map(|(_, v)| v.clone())
                        .collect();
                }
                if !(options.stdin || options.stdout || options.stderr) {
                    return Err(ApiError::bad_request(
                        "you must specify at least 1 of stdin, stdout, stderr",
                    ));
                }
                if kind == StreamKind::Exec && options.command.is_empty() {
                    return Err(ApiError::bad_request(
                        "you must specify at least one command for the container",
                    ));
                }
            }
        }
        Ok(options)
    }

    /// The kubelet's query: upstream's `streamParams` renames the streams to `input`,
    /// `output` and `error` and passes ports as one `port` list.
    pub fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, String)> = self
            .command
            .iter()
            .map(|c| ("command", c.clone()))
            .collect();
        if self.stderr {
            params.push(("error", "1".into()));
        }
        if self.stdin {
            params.push(("input", "1".into()));
        }
        if self.stdout {
            params.push(("output", "1".into()));
        }
        if !self.ports.is_empty() {
            let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
            params.push(("port", ports.join(",")));
        }
        if self.tty {
            params.push(("tty", "1".into()));
        }
        encode(&params)
    }
}

/// `a=b&c=d`, each value escaped as Go's `url.QueryEscape` does.
pub fn encode(params: &[(&str, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", query_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Upstream's container choice for logs and streams: the only container when none is named;
/// with several, `a container name must be specified for pod <name>, choose one of: [a b]`
/// (init containers listed after `or one of the init containers:`); a named container must
/// exist among the pod's containers, init containers or ephemeral containers. 400 each.
pub fn choose_container(pod: &Value, wanted: &str, name: &str) -> Result<String, ApiError> {
    let names = |field: &str| -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(String::from))
            .collect()
    };
    let containers = names("containers");
    if wanted.is_empty() {
        return match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => {
                let mut message = format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    containers.join(" ")
                );
                let init = names("initContainers");
                if !init.is_empty() {
                    message.push_str(&format!(
                        " or one of the init containers: [{}]",
                        init.join(" ")
                    ));
                }
                Err(ApiError::bad_request(message))
            }
        };
    }
    let known = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .any(|field| names(field).iter().any(|n| n == wanted));
    if known {
        Ok(wanted.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "container {wanted} is not valid for pod {name}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn log_options_reach_the_kubelet_query() {
        let o = LogOptions::parse(
            Some("container=c&follow=true&tailLines=3&timestamps=1&limitBytes=10"),
            "p",
        )
        .unwrap();
        assert_eq!(o.container, "c");
        assert_eq!(
            o.kubelet_query(),
            "follow=true&limitBytes=10&tailLines=3&timestamps=true"
        );
        let o = LogOptions::parse(Some("sinceTime=2024-01-02T03:04:05.5Z"), "p").unwrap();
        assert_eq!(o.kubelet_query(), "sinceTime=2024-01-02T03%3A04%3A05Z");
    }

    #[test]
    fn log_options_are_validated_as_upstream() {
        let err = LogOptions::parse(Some("tailLines=-1&limitBytes=0"), "p").unwrap_err();
        assert_eq!(err.code().as_u16(), 422);
        assert_eq!(
            err.message(),
            "PodLogOptions \"p\" is invalid: [tailLines: Invalid value: -1: must be greater \
             than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        let err = LogOptions::parse(Some("sinceSeconds=5&sinceTime=2024-01-02T03:04:05Z"), "p")
            .unwrap_err();
        assert!(
            err.message().contains("at most one of"),
            "{}",
            err.message()
        );
        let err = LogOptions::parse(Some("follow=yes"), "p").unwrap_err();
        assert_eq!(err.code().as_u16(), 400);
    }

    #[test]
    fn stream_options_need_streams_and_a_command() {
        let err = StreamOptions::parse(Some("command=ls"), StreamKind::Exec).unwrap_err();
        assert_eq!(
            err.message(),
            "you must specify at least 1 of stdin, stdout, stderr"
        );
        let err = StreamOptions::parse(Some("stdout=true"), StreamKind::Exec).unwrap_err();
        assert_eq!(err.code().as_u16(), 400);
        let o = StreamOptions::parse(
            Some("command=sh&command=-c&command=echo+hi&stdout=true&stdin=true&tty=true"),
            StreamKind::Exec,
        )
        .unwrap();
        assert_eq!(
            o.kubelet_query(),
            "command=sh&command=-c&command=echo+hi&input=1&output=1&tty=1"
        );
        let o = StreamOptions::parse(Some("stdout=1"), StreamKind::Attach).unwrap();
        assert_eq!(o.kubelet_query(), "output=1");
        let o = StreamOptions::parse(Some("ports=80&ports=8080"), StreamKind::PortForward).unwrap();
        assert_eq!(o.kubelet_query(), "port=80%2C8080");
    }

    #[test]
    fn container_choice_matches_upstream() {
        let pod = json!({"spec": {"initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            choose_container(&pod, "", "p").unwrap_err().message(),
            "a container name must be specified for pod p, choose one of: [a b] or one of \
             the init containers: [i]"
        );
        assert_eq!(choose_container(&pod, "i", "p").unwrap(), "i");
        let err = choose_container(&pod, "z", "p").unwrap_err();
        assert_eq!(err.message(), "container z is not valid for pod p");
        assert_eq!(err.code().as_u16(), 400);
        let single = json!({"spec": {"containers": [{"name": "only"}]}});
        assert_eq!(choose_container(&single, "", "p").unwrap(), "only");
    }
}
