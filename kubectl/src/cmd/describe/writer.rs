//! What every describer writes with: upstream's `PrefixWriter` (two spaces per level, into a
//! buffer aligned by the describe tabwriter at the end), the multi-line label, annotation,
//! taint and toleration blocks, and time as upstream shows it (RFC 1123 with a numeric zone,
//! `HumanDuration` ages).

use serde_json::{Map, Value};

/// A describer's output before alignment.
#[derive(Debug, Default)]
pub struct PrefixWriter {
    buf: String,
}

impl PrefixWriter {
    /// `text` after `level` indentation steps.
    pub fn write(&mut self, level: usize, text: &str) {
        for _ in 0..level {
            self.buf.push_str("  ");
        }
        self.buf.push_str(text);
    }

    /// Go's `WriteLine`: the text and a newline, no indentation.
    pub fn line(&mut self, text: &str) {
        self.buf.push_str(text);
        self.buf.push('\n');
    }

    /// The aligned text (upstream's `tabbedString`).
    pub fn finish(self) -> String {
        super::tabwriter::align(&self.buf)
    }
}

/// The string at `pointer`, or "".
pub fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The array at `pointer`, or empty.
pub fn arr<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The object at `pointer`, if any.
pub fn obj<'a>(v: &'a Value, pointer: &str) -> Option<&'a Map<String, Value>> {
    v.pointer(pointer).and_then(Value::as_object)
}

/// The integer at `pointer`, or 0 (Go's zero value).
pub fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The bool at `pointer`, or false.
pub fn boolean(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).and_then(Value::as_bool).unwrap_or(false)
}

/// A scalar as Go's `%v` prints it (an int-or-string, a quantity, a number).
pub fn scalar(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// `printLabelsMultilineWithIndent`: `Title:\tk=v` then one `\tk=v` line per further key.
pub fn labels_multiline(
    w: &mut PrefixWriter,
    initial_indent: &str,
    title: &str,
    labels: Option<&Map<String, Value>>,
) {
    w.write(0, &format!("{initial_indent}{title}:\t"));
    let mut keys: Vec<&String> = labels.map(|l| l.keys().collect()).unwrap_or_default();
    if keys.is_empty() {
        w.line("<none>");
        return;
    }
    keys.sort();
    let labels = labels.expect("non-empty labels");
    for (i, key) in keys.iter().enumerate() {
        if i != 0 {
            w.write(0, initial_indent);
            w.write(0, "\t");
        }
        w.write(0, &format!("{key}={}\n", scalar(labels.get(*key))));
    }
}

const MAX_ANNOTATION_LEN: usize = 140;

/// `printAnnotationsMultiline`: sorted, the last-applied annotation skipped, long or
/// multi-line values folded under their key.
pub fn annotations_multiline(
    w: &mut PrefixWriter,
    title: &str,
    annotations: Option<&Map<String, Value>>,
) {
    w.write(0, &format!("{title}:\t"));
    let mut keys: Vec<&String> = annotations
        .map(|a| {
            a.keys()
                .filter(|k| *k != "kubectl.kubernetes.io/last-applied-configuration")
                .collect()
        })
        .unwrap_or_default();
    let Some(annotations) = annotations.filter(|_| !keys.is_empty()) else {
        w.line("<none>");
        return;
    };
    keys.sort();
    for (i, key) in keys.iter().enumerate() {
        if i != 0 {
            w.write(0, "\t");
        }
        let full = scalar(annotations.get(*key));
        let value = full.strip_suffix('\n').unwrap_or(&full);
        if value.len() + key.len() + 2 > MAX_ANNOTATION_LEN || value.contains('\n') {
            w.write(0, &format!("{key}:\n"));
            for part in value.split('\n') {
                w.write(
                    0,
                    &format!("\t  {}\n", shorten(part, MAX_ANNOTATION_LEN - 2)),
                );
            }
        } else {
            w.write(0, &format!("{key}: {value}\n"));
        }
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.len() > max {
        // Go slices bytes; stay on a char boundary so odd input cannot panic.
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s.to_owned()
    }
}

/// `printTolerationsMultilineWithIndent`, sorted by key.
pub fn tolerations_multiline(w: &mut PrefixWriter, indent: &str, title: &str, list: &[Value]) {
    w.write(0, &format!("{indent}{title}:\t"));
    if list.is_empty() {
        w.line("<none>");
        return;
    }
    let mut sorted: Vec<&Value> = list.iter().collect();
    sorted.sort_by(|a, b| s(a, "/key").cmp(s(b, "/key")));
    for (i, t) in sorted.iter().enumerate() {
        if i != 0 {
            w.write(0, indent);
            w.write(0, "\t");
        }
        let (key, value, effect) = (s(t, "/key"), s(t, "/value"), s(t, "/effect"));
        let mut text = key.to_owned();
        if !value.is_empty() {
            text.push_str(&format!("={value}"));
        }
        if !effect.is_empty() {
            text.push_str(&format!(":{effect}"));
        }
        if s(t, "/operator") == "Exists" && value.is_empty() {
            text.push_str(if key.is_empty() && effect.is_empty() {
                "op=Exists"
            } else {
                " op=Exists"
            });
        }
        if let Some(secs) = t.get("tolerationSeconds").and_then(Value::as_i64) {
            text.push_str(&format!(" for {secs}s"));
        }
        w.write(0, &format!("{text}\n"));
    }
}

/// `printTaintsMultilineWithIndent`, sorted by effect then key.
pub fn taints_multiline(w: &mut PrefixWriter, title: &str, list: &[Value]) {
    w.write(0, &format!("{title}:\t"));
    if list.is_empty() {
        w.line("<none>");
        return;
    }
    let mut sorted: Vec<&Value> = list.iter().collect();
    let key = |t: &Value| format!("{},{}", s(t, "/effect"), s(t, "/key"));
    sorted.sort_by_key(|a| key(a));
    for (i, t) in sorted.iter().enumerate() {
        if i != 0 {
            w.write(0, "\t");
        }
        let value = s(t, "/value");
        let mut text = s(t, "/key").to_owned();
        if !value.is_empty() {
            text.push_str(&format!("={value}"));
        }
        text.push_str(&format!(":{}\n", s(t, "/effect")));
        w.write(0, &text);
    }
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp.
pub fn parse_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.chars().take_while(char::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Go's `time.RFC1123Z` in UTC (`Mon, 02 Jan 2006 15:04:05 +0000`); an unset time is Go's
/// zero time, as upstream prints it.
pub fn rfc1123z(text: &str) -> String {
    let Some(t) = parse_time(text) else {
        return "Mon, 01 Jan 0001 00:00:00 +0000".to_owned();
    };
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = t.div_euclid(86400);
    let secs = t.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} +0000",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

pub use api_types::duration::human_duration;

/// Seconds since the Unix epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
pub fn since(text: &str) -> String {
    match parse_time(text) {
        Some(t) => human_duration(now() - t),
        None => "<unknown>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        for (input, want) in [
            ("2026-11-22T07:53:35Z", "Sun, 22 Nov 2026 07:53:35 +0000"),
            (
                "2024-02-29T23:59:59.123456Z",
                "Thu, 29 Feb 2024 23:59:59 +0000",
            ),
            (
                "1970-01-01T02:00:00+02:00",
                "Thu, 01 Jan 1970 00:00:00 +0000",
            ),
            ("", "Mon, 01 Jan 0001 00:00:00 +0000"),
        ] {
            assert_eq!(rfc1123z(input), want, "{input}");
        }
    }

    #[test]
    fn tolerations_and_labels() {
        let mut w = PrefixWriter::default();
        let tolerations: Vec<Value> = serde_json::from_str(
            r#"[{"key":"z","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},
                {"operator":"Exists"},{"key":"a","value":"v","effect":"NoSchedule"}]"#,
        )
        .unwrap();
        tolerations_multiline(&mut w, "", "Tolerations", &tolerations);
        labels_multiline(&mut w, "", "Labels", None);
        assert_eq!(
            w.finish(),
            "Tolerations:  op=Exists\n              a=v:NoSchedule\n              z:NoExecute op=Exists for 300s\nLabels:       <none>\n"
        );
    }
}
