//! The CRI container log format (`<RFC3339Nano> <stdout|stderr> <P|F>[:tags] <text>`) read
//! back as `kubectl logs` shows it: partial lines joined, `timestamps` prefixes, `sinceTime`,
//! `tailLines` and `limitBytes`, as upstream's kuberuntime log reader.

use anyhow::{Context, bail};
use jiff::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    Stdout,
    Stderr,
}

/// One record of a CRI log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMessage {
    pub timestamp: Timestamp,
    pub stream: LogStream,
    /// The text with its newline for a full (`F`) record, without one for a partial (`P`).
    pub log: Vec<u8>,
}

/// Parses one line of a CRI log file (without its trailing newline).
pub fn parse_cri_line(line: &[u8]) -> anyhow::Result<LogMessage> {
    let mut fields = line.splitn(4, |b| *b == b' ');
    let timestamp = fields.next().context("empty log line")?;
    let timestamp: Timestamp = std::str::from_utf8(timestamp)
        .ok()
        .and_then(|t| t.parse().ok())
        .with_context(|| {
            format!(
                "unexpected timestamp format {:?}",
                String::from_utf8_lossy(timestamp)
            )
        })?;
    let stream = match fields.next() {
        Some(b"stdout") => LogStream::Stdout,
        Some(b"stderr") => LogStream::Stderr,
        other => bail!(
            "unexpected stream type {:?}",
            String::from_utf8_lossy(other.unwrap_or_default())
        ),
    };
    let tags = fields.next().context("missing log tag")?;
    let partial = tags.split(|b| *b == b':').next() == Some(b"P");
    let mut log = fields.next().unwrap_or_default().to_vec();
    if !partial {
        log.push(b'\n');
    }
    Ok(LogMessage {
        timestamp,
        stream,
        log,
    })
}

/// Upstream's `timeFormatOut`: RFC 3339 with nanoseconds always nine digits wide.
pub fn format_timestamp(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string()
}

/// Writes messages as `kubectl logs` shows them, honouring `sinceTime`, `timestamps` and
/// `limitBytes`; tracks line starts across partial records.
#[derive(Debug)]
pub struct LogWriter {
    since: Option<Timestamp>,
    timestamps: bool,
    remain: Option<u64>,
    at_line_start: bool,
}

impl LogWriter {
    pub fn new(since: Option<Timestamp>, timestamps: bool, limit_bytes: Option<u64>) -> Self {
        Self {
            since,
            timestamps,
            remain: limit_bytes,
            at_line_start: true,
        }
    }

    /// Appends `msg` to `out`; false once `limitBytes` is used up (stop reading).
    pub fn write(&mut self, msg: &LogMessage, out: &mut Vec<u8>) -> bool {
        let line_start = self.at_line_start;
        self.at_line_start = msg.log.ends_with(b"\n");
        if self.since.is_some_and(|since| msg.timestamp < since) {
            return true;
        }
        let mut line = Vec::with_capacity(msg.log.len() + 32);
        if self.timestamps && line_start {
            line.extend_from_slice(format_timestamp(msg.timestamp).as_bytes());
            line.push(b' ');
        }
        line.extend_from_slice(&msg.log);
        match &mut self.remain {
            None => {
                out.extend_from_slice(&line);
                true
            }
            Some(remain) => {
                let n = line
                    .len()
                    .min(usize::try_from(*remain).unwrap_or(usize::MAX));
                out.extend_from_slice(&line[..n]);
                *remain -= n as u64;
                *remain > 0
            }
        }
    }

    /// Whether the byte limit is used up.
    pub fn done(&self) -> bool {
        self.remain == Some(0)
    }
}

/// The offset in `data` where its last `n` lines start (0 when it has fewer). A line is a
/// logical one: partial records count with the full record ending them.
pub fn tail_offset(data: &[u8], n: u64) -> usize {
    if n == 0 {
        return data.len();
    }
    let mut starts = Vec::new();
    let mut line_start = true;
    let mut offset = 0;
    for raw in data.split_inclusive(|b| *b == b'\n') {
        if line_start {
            starts.push(offset);
        }
        let trimmed = raw.strip_suffix(b"\n").unwrap_or(raw);
        // Unparseable lines are skipped when shown; here they end a line like a full one.
        line_start = parse_cri_line(trimmed).map_or(true, |m| m.log.ends_with(b"\n"));
        offset += raw.len();
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    starts.len().checked_sub(n).map_or(0, |i| starts[i])
}

/// Feeds complete lines of `data` (from `offset`) to `writer`; returns the offset after the
/// last complete line consumed and whether the writer wants more.
pub fn render(data: &[u8], writer: &mut LogWriter, out: &mut Vec<u8>) -> (usize, bool) {
    let mut consumed = 0;
    while let Some(nl) = data[consumed..].iter().position(|b| *b == b'\n') {
        let line = &data[consumed..consumed + nl];
        consumed += nl + 1;
        match parse_cri_line(line) {
            Ok(msg) => {
                if !writer.write(&msg, out) {
                    return (consumed, false);
                }
            }
            // Upstream skips lines it cannot parse, logging them.
            Err(err) => tracing::debug!(error = %err, "skipping a malformed log line"),
        }
    }
    (consumed, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "2024-01-01T00:00:01.000000001Z stdout F one\n\
2024-01-01T00:00:02Z stderr F two\n\
2024-01-01T00:00:03.5Z stdout P thr\n\
2024-01-01T00:00:03.6Z stdout P e\n\
2024-01-01T00:00:03.7Z stdout F e\n\
2024-01-01T00:00:04Z stdout F four\n";

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn lines_parse_and_bad_ones_fail() {
        type Case<'a> = (&'a str, Option<(&'a str, LogStream, &'a str)>);
        let cases: &[Case] = &[
            (
                "2024-01-01T00:00:01.5Z stdout F hello world",
                Some(("2024-01-01T00:00:01.5Z", LogStream::Stdout, "hello world\n")),
            ),
            (
                "2024-01-01T00:00:01Z stderr P par",
                Some(("2024-01-01T00:00:01Z", LogStream::Stderr, "par")),
            ),
            (
                "2024-01-01T00:00:01Z stdout F:x ",
                Some(("2024-01-01T00:00:01Z", LogStream::Stdout, "\n")),
            ),
            (
                "2024-01-01T00:00:01Z stdout F",
                Some(("2024-01-01T00:00:01Z", LogStream::Stdout, "\n")),
            ),
            ("garbage stdout F x", None),
            ("2024-01-01T00:00:01Z console F x", None),
            ("2024-01-01T00:00:01Z stdout", None),
            ("", None),
        ];
        for (line, want) in cases {
            let got = parse_cri_line(line.as_bytes()).ok();
            let want = want.map(|(t, s, l)| LogMessage {
                timestamp: ts(t),
                stream: s,
                log: l.as_bytes().to_vec(),
            });
            assert_eq!(got, want, "{line}");
        }
    }

    fn show(
        data: &str,
        since: Option<&str>,
        timestamps: bool,
        limit: Option<u64>,
        tail: Option<u64>,
    ) -> String {
        let data = data.as_bytes();
        let start = tail.map(|n| tail_offset(data, n)).unwrap_or(0);
        let mut writer = LogWriter::new(since.map(ts), timestamps, limit);
        let mut out = Vec::new();
        render(&data[start..], &mut writer, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn options_shape_the_output() {
        // (name, since, timestamps, limitBytes, tailLines, output)
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            bool,
            Option<u64>,
            Option<u64>,
            &'a str,
        );
        let cases: &[Case] = &[
            ("all", None, false, None, None, "one\ntwo\nthree\nfour\n"),
            ("tail 1", None, false, None, Some(1), "four\n"),
            (
                "tail 2 joins partial lines",
                None,
                false,
                None,
                Some(2),
                "three\nfour\n",
            ),
            ("tail 0", None, false, None, Some(0), ""),
            (
                "tail more",
                None,
                false,
                None,
                Some(100),
                "one\ntwo\nthree\nfour\n",
            ),
            (
                "since",
                Some("2024-01-01T00:00:02Z"),
                false,
                None,
                None,
                "two\nthree\nfour\n",
            ),
            (
                "since after",
                Some("2025-01-01T00:00:00Z"),
                false,
                None,
                None,
                "",
            ),
            ("limit", None, false, Some(6), None, "one\ntw"),
            ("limit exact", None, false, Some(4), None, "one\n"),
            (
                "timestamps",
                None,
                true,
                None,
                Some(2),
                // The joined line carries the timestamp of its first part.
                "2024-01-01T00:00:03.500000000Z three\n2024-01-01T00:00:04.000000000Z four\n",
            ),
            (
                "timestamps all",
                Some("2024-01-01T00:00:03Z"),
                true,
                None,
                None,
                "2024-01-01T00:00:03.500000000Z three\n2024-01-01T00:00:04.000000000Z four\n",
            ),
        ];
        for (name, since, timestamps, limit, tail, want) in cases {
            assert_eq!(
                show(LOG, *since, *timestamps, *limit, *tail),
                *want,
                "{name}"
            );
        }
    }

    #[test]
    fn tail_counts_an_unterminated_last_line() {
        let t = "2024-01-01T00:00:01Z stdout";
        let data = format!("{t} F a\n{t} F b\n{t} P c");
        let d = data.as_bytes();
        assert_eq!(tail_offset(d, 1), 2 * (t.len() + 5));
        assert_eq!(tail_offset(d, 2), t.len() + 5);
        assert_eq!(tail_offset(d, 3), 0);
        assert_eq!(tail_offset(d, 9), 0);
        assert_eq!(tail_offset(b"", 3), 0);
    }

    #[test]
    fn incomplete_lines_wait() {
        let mut writer = LogWriter::new(None, false, None);
        let mut out = Vec::new();
        let data = b"2024-01-01T00:00:01Z stdout F a\n2024-01-01T00:00:01Z std";
        let (consumed, more) = render(data, &mut writer, &mut out);
        assert_eq!((consumed, more), (32, true));
        assert_eq!(out, b"a\n");
        assert!(!writer.done());
    }
}
