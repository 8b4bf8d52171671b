//! `kubectl logs` flags as upstream validates them, and the `PodLogOptions` query they make.

/// The per-request options shared by every container's request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogQuery {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
}

impl LogQuery {
    /// The query string for one container.
    pub fn pairs(&self, container: &str) -> Vec<(String, String)> {
        let mut out = vec![("container".to_owned(), container.to_owned())];
        let mut flag = |k: &str, v: String| out.push((k.to_owned(), v));
        if self.follow {
            flag("follow", "true".into());
        }
        if self.previous {
            flag("previous", "true".into());
        }
        if self.timestamps {
            flag("timestamps", "true".into());
        }
        if let Some(s) = self.since_seconds {
            flag("sinceSeconds", s.to_string());
        }
        if let Some(t) = &self.since_time {
            flag("sinceTime", t.clone());
        }
        if let Some(t) = self.tail_lines {
            flag("tailLines", t.to_string());
        }
        if let Some(b) = self.limit_bytes {
            flag("limitBytes", b.to_string());
        }
        out
    }
}

/// Go's `time.ParseDuration` for what `--since` takes: a sequence of decimal numbers with
/// units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`; the result in seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let bad = || format!("time: invalid duration \"{text}\"");
    let (sign, mut rest) = match text.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0.0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration \"{text}\""))?;
        let value: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            unit => {
                return Err(format!(
                    "time: unknown unit \"{unit}\" in duration \"{text}\""
                ));
            }
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Ok(sign * total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let cases: &[(&str, Result<f64, &str>)] = &[
            ("1h", Ok(3600.0)),
            ("1h30m", Ok(5400.0)),
            ("1.5s", Ok(1.5)),
            ("300ms", Ok(0.3)),
            ("0", Ok(0.0)),
            ("-5s", Ok(-5.0)),
            ("5", Err("time: missing unit in duration \"5\"")),
            ("5x", Err("time: unknown unit \"x\" in duration \"5x\"")),
            ("", Err("time: invalid duration \"\"")),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), want.map_err(str::to_owned), "{text}");
        }
    }

    #[test]
    fn queries() {
        let q = LogQuery {
            follow: true,
            tail_lines: Some(2),
            since_seconds: Some(60),
            ..LogQuery::default()
        };
        let got: Vec<String> = q
            .pairs("main")
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            got,
            [
                "container=main",
                "follow=true",
                "sinceSeconds=60",
                "tailLines=2"
            ]
        );
    }
}
