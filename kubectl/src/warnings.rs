//! Server warnings: the `Warning` response headers (RFC 7234 5.5, `299 - "text"`), parsed as
//! apimachinery's `net.ParseWarningHeaders` does and printed to stderr as kubectl's default
//! `rest.WarningWriter` does: only code 299 with a text, each text once per invocation,
//! `Warning:` in bold yellow when stderr is a colour terminal.

use std::collections::HashSet;
use std::io::Write as _;
use std::sync::Mutex;

/// One parsed warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningHeader {
    pub code: u16,
    pub agent: String,
    pub text: String,
}

/// Every warning of the `Warning` header values; a malformed value ends that value's parsing
/// (the warnings before it are kept), as upstream's `ParseWarningHeaders`.
pub fn parse_headers<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<WarningHeader> {
    let mut out = Vec::new();
    for value in values {
        let mut rest = value.to_owned();
        while !rest.is_empty() {
            match parse_header(&rest) {
                Ok((warning, remainder)) => {
                    out.push(warning);
                    rest = remainder;
                }
                Err(_) => break,
            }
        }
    }
    out
}

/// One warning off the front of `header`, and what follows it (after a separating comma).
pub fn parse_header(header: &str) -> Result<(WarningHeader, String), &'static str> {
    let header = header.trim();
    let mut parts = header.splitn(3, ' ');
    let (Some(code), Some(agent), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("invalid warning header: fewer than 3 segments");
    };
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid warning header: code segment is not 3 digits between 100-299");
    }
    let code: u16 = code.parse().unwrap_or_default();
    if agent.is_empty() {
        return Err("invalid warning header: empty agent segment");
    }
    if agent.chars().any(char::is_control) {
        return Err("invalid warning header: invalid agent");
    }
    if rest.is_empty() {
        return Err("invalid warning header: empty text segment");
    }
    let (text, date_and_rest) = parse_quoted(rest)?;
    // RFC 2616 warnings were RFC 2047-encoded; upstream decodes them when it can.
    let text = decode_words(&text).unwrap_or(text);
    if text.chars().any(char::is_control) {
        return Err("invalid warning header: invalid text");
    }
    let mut remainder = String::new();
    if let Some(quoted) = date_and_rest.strip_prefix('"') {
        // The optional warn-date: quoted, nothing escaped inside.
        let Some(end) = quoted.find('"') else {
            return Err("invalid warning header: unterminated date segment");
        };
        remainder = quoted[end + 1..].trim().to_owned();
    } else if !date_and_rest.is_empty() {
        remainder = date_and_rest;
    }
    if !remainder.is_empty() {
        match remainder.strip_prefix(',') {
            Some(after) => remainder = after.trim().to_owned(),
            None => return Err("invalid warning header: unexpected token after warn-date"),
        }
    }
    let warning = WarningHeader {
        code,
        agent: agent.to_owned(),
        text,
    };
    Ok((warning, remainder))
}

/// A backslash-escaped quoted string off the front of `s`, and the trimmed rest.
fn parse_quoted(s: &str) -> Result<(String, String), &'static str> {
    let Some(body) = s.strip_prefix('"') else {
        return Err("invalid quoted string: missing initial quote");
    };
    let mut text = String::new();
    let mut escaping = false;
    for (i, c) in body.char_indices() {
        match c {
            '"' if !escaping => return Ok((text, body[i + 1..].trim().to_owned())),
            '\\' if !escaping => escaping = true,
            _ => {
                text.push(c);
                escaping = false;
            }
        }
    }
    Err("invalid quoted string: missing closing quote")
}

/// Go's `mime.WordDecoder.DecodeHeader` with its built-in charsets (UTF-8, ISO-8859-1,
/// US-ASCII): each `=?charset?B|Q?text?=` decoded, the space between two encoded words
/// dropped, a malformed word left as it is; `None` when a charset is unknown or the result is
/// not UTF-8 (upstream then keeps the text undecoded).
fn decode_words(header: &str) -> Option<String> {
    let first = header.find("=?")?;
    let mut out: Vec<u8> = header.as_bytes()[..first].to_vec();
    let mut rest = &header[first..];
    let mut between_words = false;
    while let Some(start) = rest.find("=?") {
        let Some((word, end)) = encoded_word(&rest[start..]) else {
            break;
        };
        let Some((charset, content)) = word else {
            // A malformed word is text: keep `=?` and look further.
            between_words = false;
            out.extend_from_slice(&rest.as_bytes()[..start + 2]);
            rest = &rest[start + 2..];
            continue;
        };
        let gap = &rest[..start];
        if start > 0 && (!between_words || gap.chars().any(|c| !" \t\r\n".contains(c))) {
            out.extend_from_slice(gap.as_bytes());
        }
        match charset.to_ascii_lowercase().as_str() {
            "utf-8" => out.extend_from_slice(&content),
            "iso-8859-1" => {
                let text: String = content.iter().map(|&b| char::from(b)).collect();
                out.extend_from_slice(text.as_bytes());
            }
            "us-ascii" => {
                for &b in &content {
                    if b.is_ascii() {
                        out.push(b);
                    } else {
                        out.extend_from_slice("\u{fffd}".as_bytes());
                    }
                }
            }
            _ => return None,
        }
        rest = &rest[start + end..];
        between_words = true;
    }
    out.extend_from_slice(rest.as_bytes());
    String::from_utf8(out).ok()
}

/// The encoded word at the start of `s` (which starts with `=?`) and its length: `None` when
/// no word can be delimited (decoding stops), `Some((None, _))` when its text does not decode.
type Word<'a> = (Option<(&'a str, Vec<u8>)>, usize);

fn encoded_word(s: &str) -> Option<Word<'_>> {
    let bytes = s.as_bytes();
    let mut cur = 2;
    let charset_len = s[cur..].find('?')?;
    let charset = &s[cur..cur + charset_len];
    cur += charset_len + 1;
    if bytes.len() < cur + "Q??=".len() {
        return None;
    }
    let encoding = bytes[cur];
    cur += 1;
    if bytes[cur] != b'?' {
        return None;
    }
    cur += 1;
    let text_len = s[cur..].find("?=")?;
    let text = &s[cur..cur + text_len];
    let end = cur + text_len + 2;
    let content = match encoding {
        b'B' | b'b' => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(text).ok()
        }
        b'Q' | b'q' => q_decode(text),
        _ => None,
    };
    Some((content.map(|c| (charset, c)), end))
}

fn q_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = s.get(i + 1..i + 3).filter(|_| i + 2 < bytes.len())?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c @ (b' '..=b'~' | b'\n' | b'\r' | b'\t') => out.push(c),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Prints the warnings of a response's headers to stderr, each text once per process.
pub fn handle(headers: &http::HeaderMap) {
    let values = headers
        .get_all(http::header::WARNING)
        .iter()
        // Go keeps any UTF-8 in a header value, where `to_str` would refuse non-ASCII.
        .filter_map(|v| std::str::from_utf8(v.as_bytes()).ok());
    let warnings = parse_headers(values);
    if warnings.is_empty() {
        return;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashSet::new);
    let mut out = String::new();
    for w in warnings {
        if w.code != 299 || w.text.is_empty() || !seen.insert(w.text.clone()) {
            continue;
        }
        out.push_str(prefix());
        out.push(' ');
        out.push_str(&w.text);
        out.push('\n');
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
}

/// Upstream colours the prefix when stderr is a terminal that is not `TERM=dumb`.
fn prefix() -> &'static str {
    use std::io::IsTerminal as _;
    let tty = std::io::stderr().is_terminal();
    if tty && std::env::var("TERM").is_ok_and(|t| t != "dumb") {
        "\u{1b}[33;1mWarning:\u{1b}[0m"
    } else {
        "Warning:"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(code: u16, agent: &str, text: &str) -> WarningHeader {
        WarningHeader {
            code,
            agent: agent.into(),
            text: text.into(),
        }
    }

    #[test]
    fn parses_like_apimachinery() {
        let cases: &[(&str, Vec<WarningHeader>)] = &[
            (
                r#"299 - "v1 ComponentStatus is deprecated in v1.19+""#,
                vec![w(299, "-", "v1 ComponentStatus is deprecated in v1.19+")],
            ),
            (r#"  299 - "lead space"  "#, vec![w(299, "-", "lead space")]),
            (
                r#"299 agent "with \"quotes\" and \\ slash""#,
                vec![w(299, "agent", r#"with "quotes" and \ slash"#)],
            ),
            (
                r#"299 - "a" "Sat, 25 Aug 2012 23:34:45 GMT", 299 - "b""#,
                vec![w(299, "-", "a"), w(299, "-", "b")],
            ),
            (
                r#"299 - "a", 199 x "b""#,
                vec![w(299, "-", "a"), w(199, "x", "b")],
            ),
            (
                r#"299 - "", 299 - "b""#,
                vec![w(299, "-", ""), w(299, "-", "b")],
            ),
            // The warnings before a malformed one are kept.
            (r#"299 - "a", bogus"#, vec![w(299, "-", "a")]),
            (r#"299 - "a" junk"#, vec![]),
            (r#"299 - "unterminated"#, vec![]),
            (r#"299 - "a" "no end date"#, vec![]),
            (r#"2999 - "a""#, vec![]),
            (r#"29a - "a""#, vec![]),
            (r#"299 -"#, vec![]),
            (r#"299 - unquoted"#, vec![]),
            ("299 - \"ctl\u{7}char\"", vec![]),
            ("", vec![]),
        ];
        for (header, want) in cases {
            assert_eq!(&parse_headers([*header]), want, "{header:?}");
        }
    }

    #[test]
    fn rfc2047_text_is_decoded_as_go_mime() {
        for (text, want) in [
            ("=?UTF-8?B?SGVsbG8gd29ybGQ=?=", "Hello world"),
            ("=?utf-8?q?caf=C3=A9_au_lait?=", "café au lait"),
            ("=?ISO-8859-1?Q?a=E9b?=", "aéb"),
            ("=?US-ASCII?Q?a=E9b?=", "a\u{fffd}b"),
            ("x =?UTF-8?Q?a?= =?UTF-8?Q?b?= y", "x ab y"),
            ("=?UTF-8?Q?a?= - =?UTF-8?Q?b?=", "a - b"),
            (
                "=?UTF-8?B?not base64!?= tail",
                "=?UTF-8?B?not base64!?= tail",
            ),
            ("=?UTF-8?X?abc?=", "=?UTF-8?X?abc?="),
            ("plain =? text", "plain =? text"),
            ("=?KOI8-R?Q?abc?=", "=?KOI8-R?Q?abc?="),
            ("=?UTF-8?Q?abc=?=", "=?UTF-8?Q?abc=?="),
        ] {
            let header = format!("299 - \"{text}\"");
            let got = parse_headers([header.as_str()]);
            assert_eq!(got, vec![w(299, "-", want)], "{text:?}");
        }
        // A decoded control character makes the warning invalid.
        assert_eq!(parse_headers([r#"299 - "=?UTF-8?Q?a=07b?=""#]), vec![]);
    }

    #[test]
    fn several_header_values() {
        let got = parse_headers([r#"299 - "one""#, "garbage", r#"299 - "two""#]);
        assert_eq!(got, vec![w(299, "-", "one"), w(299, "-", "two")]);
    }
}
