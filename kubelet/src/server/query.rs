//! The query parameters of `containerLogs` (a `PodLogOptions`) and of the streaming endpoints
//! (`command`, `input`, `output`, `error`, `tty`, `port`), parsed and validated as upstream's
//! kubelet does.

use super::http::query_pairs;
use jiff::Timestamp;
use std::time::Duration;

/// `PodLogOptions` as the kubelet receives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<Timestamp>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
}

/// apimachinery's query bool: absent or `0`/`f`/`false` (any case) is false, anything else
/// (even an empty value) true.
fn query_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("f") || value.eq_ignore_ascii_case("false"))
}

fn int(name: &str, value: &str) -> Result<i64, String> {
    value
        .parse()
        .map_err(|_| format!("{name}: Invalid value: {value:?}: must be an integer"))
}

impl LogQuery {
    /// Parses and validates; the error is the 400's message.
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        let mut q = LogQuery::default();
        let mut seen = std::collections::HashSet::new();
        for (key, value) in query_pairs(query) {
            // The first value of a repeated parameter wins, as Go's url.Values.Get.
            if !seen.insert(key.clone()) {
                continue;
            }
            match key.as_str() {
                "follow" => q.follow = query_bool(&value),
                "previous" => q.previous = query_bool(&value),
                "timestamps" => q.timestamps = query_bool(&value),
                "sinceSeconds" => q.since_seconds = Some(int(&key, &value)?),
                "tailLines" => q.tail_lines = Some(int(&key, &value)?),
                "limitBytes" => q.limit_bytes = Some(int(&key, &value)?),
                "sinceTime" => {
                    let t = value.parse::<Timestamp>().map_err(|_| {
                        format!("sinceTime: Invalid value: {value:?}: must be an RFC3339 time")
                    })?;
                    q.since_time = Some(t);
                }
                _ => {}
            }
        }
        let mut errs = Vec::new();
        if let Some(n) = q.tail_lines.filter(|n| *n < 0) {
            errs.push(format!(
                "tailLines: Invalid value: {n}: must be greater than or equal to 0"
            ));
        }
        if let Some(n) = q.limit_bytes.filter(|n| *n < 1) {
            errs.push(format!(
                "limitBytes: Invalid value: {n}: must be greater than 0"
            ));
        }
        if q.since_seconds.is_some() && q.since_time.is_some() {
            errs.push("at most one of `sinceTime` or `sinceSeconds` may be specified".into());
        }
        if let Some(n) = q.since_seconds.filter(|n| *n < 1) {
            errs.push(format!(
                "sinceSeconds: Invalid value: {n}: must be greater than 0"
            ));
        }
        match errs.len() {
            0 => Ok(q),
            1 => Err(errs.remove(0)),
            _ => Err(format!("[{}]", errs.join(", "))),
        }
    }

    /// The earliest record to show, from `sinceTime` or `sinceSeconds` before `now`.
    pub fn since(&self, now: Timestamp) -> Option<Timestamp> {
        if let Some(t) = self.since_time {
            return Some(t);
        }
        let secs = u64::try_from(self.since_seconds?).ok()?;
        now.checked_sub(Duration::from_secs(secs)).ok()
    }
}

/// The streams and command of an exec or attach, and the ports of a port-forward.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamQuery {
    pub command: Vec<String>,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub ports: Vec<i32>,
}

impl StreamQuery {
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        let mut q = StreamQuery::default();
        for (key, value) in query_pairs(query) {
            match key.as_str() {
                "command" => q.command.push(value),
                "input" => q.stdin = value == "1",
                "output" => q.stdout = value == "1",
                "error" => q.stderr = value == "1",
                "tty" => q.tty = value == "1",
                "port" => {
                    for port in value.split(',').filter(|p| !p.is_empty()) {
                        let p: i32 = port
                            .trim()
                            .parse()
                            .ok()
                            .filter(|p| (1..=65535).contains(p))
                            .ok_or_else(|| format!("invalid port {port:?}"))?;
                        q.ports.push(p);
                    }
                }
                _ => {}
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_queries_parse_and_validate() {
        let t: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        let cases: &[(&str, Result<LogQuery, &str>)] = &[
            ("", Ok(LogQuery::default())),
            (
                "follow=true&previous=1&timestamps",
                Ok(LogQuery {
                    follow: true,
                    previous: true,
                    timestamps: true,
                    ..Default::default()
                }),
            ),
            (
                "follow=false&previous=0&timestamps=F",
                Ok(LogQuery::default()),
            ),
            (
                "tailLines=5&limitBytes=10&sinceSeconds=3",
                Ok(LogQuery {
                    tail_lines: Some(5),
                    limit_bytes: Some(10),
                    since_seconds: Some(3),
                    ..Default::default()
                }),
            ),
            (
                "sinceTime=2024-05-01T10%3A00%3A00Z",
                Ok(LogQuery {
                    since_time: Some(t),
                    ..Default::default()
                }),
            ),
            (
                "tailLines=-1",
                Err("tailLines: Invalid value: -1: must be greater than or equal to 0"),
            ),
            (
                "limitBytes=0",
                Err("limitBytes: Invalid value: 0: must be greater than 0"),
            ),
            (
                "sinceSeconds=0",
                Err("sinceSeconds: Invalid value: 0: must be greater than 0"),
            ),
            (
                "sinceSeconds=1&sinceTime=2024-05-01T10:00:00Z",
                Err("at most one of `sinceTime` or `sinceSeconds` may be specified"),
            ),
            (
                "tailLines=x",
                Err("tailLines: Invalid value: \"x\": must be an integer"),
            ),
            (
                "sinceTime=yesterday",
                Err("sinceTime: Invalid value: \"yesterday\": must be an RFC3339 time"),
            ),
        ];
        for (query, want) in cases {
            let got = LogQuery::parse(Some(query));
            assert_eq!(got, want.clone().map_err(str::to_string), "{query}");
        }
    }

    #[test]
    fn since_comes_from_either_field() {
        let now: Timestamp = "2024-05-01T10:00:10Z".parse().unwrap();
        let q = LogQuery::parse(Some("sinceSeconds=10")).unwrap();
        assert_eq!(q.since(now), Some("2024-05-01T10:00:00Z".parse().unwrap()));
        assert_eq!(LogQuery::default().since(now), None);
    }

    #[test]
    fn stream_queries_parse() {
        let cases: &[(&str, Result<StreamQuery, ()>)] = &[
            (
                "command=sh&command=-c&command=echo+hi&input=1&output=1&error=1&tty=1",
                Ok(StreamQuery {
                    command: vec!["sh".into(), "-c".into(), "echo hi".into()],
                    stdin: true,
                    stdout: true,
                    stderr: true,
                    tty: true,
                    ports: vec![],
                }),
            ),
            (
                "output=true&port=80,8080",
                Ok(StreamQuery {
                    ports: vec![80, 8080],
                    ..Default::default()
                }),
            ),
            ("port=0", Err(())),
            ("port=x", Err(())),
        ];
        for (query, want) in cases {
            let got = StreamQuery::parse(Some(query)).map_err(|_| ());
            assert_eq!(got, *want, "{query}");
        }
    }
}
