//! `-o yaml` byte for byte as upstream writes it (sigs.k8s.io/yaml over go-yaml v2): keys
//! sorted, sequences not indented under their key, strings plain when go-yaml would read them
//! back as strings, single-quoted when plain is not allowed, double-quoted when they would
//! read back as another type (`"123"`, `"true"`, timestamps), literal blocks for multi-line
//! text, and go-yaml's folding of long plain and quoted scalars past column 80.

mod scalar;

use scalar::{analyze, is_break, is_printable, resolves_as_string};
use serde_json::Value;

const BEST_WIDTH: usize = 80;

/// The YAML document of `value` (no `---`), ending in a newline.
pub fn to_go_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, value, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, value, 0),
        scalar => {
            write_scalar(&mut out, scalar, 0, 0);
            out.push('\n');
        }
    }
    out
}

fn column(out: &str) -> usize {
    out.len() - out.rfind('\n').map_or(0, |i| i + 1)
}

fn write_map(out: &mut String, value: &Value, indent: usize) {
    let Value::Object(map) = value else { return };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| key_order(a.0, b.0));
    let mut first = true;
    for (key, child) in entries {
        if !first {
            out.push_str(&" ".repeat(indent));
        }
        first = false;
        write_key(out, key);
        out.push(':');
        write_child(out, child, indent, true);
    }
}

/// go-yaml's key order: letters after other characters, digit runs compared as numbers.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i128, 0i128);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .saturating_mul(10)
                .saturating_add(i128::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .saturating_mul(10)
                .saturating_add(i128::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

fn write_seq(out: &mut String, value: &Value, indent: usize) {
    let Value::Array(items) = value else { return };
    let mut first = true;
    for item in items {
        if !first {
            out.push_str(&" ".repeat(indent));
        }
        first = false;
        out.push('-');
        write_child(out, item, indent, false);
    }
}

/// Writes what follows `key:` or `-`.
fn write_child(out: &mut String, child: &Value, indent: usize, in_map: bool) {
    match child {
        Value::Object(m) if !m.is_empty() => {
            if in_map {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
            } else {
                out.push(' ');
            }
            write_map(out, child, indent + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            // go-yaml does not indent a sequence under a mapping key; nested in a
            // sequence it does.
            let inner = if in_map { indent } else { indent + 2 };
            out.push_str(&" ".repeat(inner));
            write_seq(out, child, inner);
        }
        scalar => {
            out.push(' ');
            write_scalar(out, scalar, indent + 2, indent);
            out.push('\n');
        }
    }
}

fn write_key(out: &mut String, key: &str) {
    let analysis = analyze(key);
    if key.is_empty() || !resolves_as_string(key) || key.contains('\n') {
        write_double_quoted(out, key, 0, false);
    } else if analysis.block_plain {
        out.push_str(key);
    } else if analysis.single_quoted {
        write_single_quoted(out, key, 0, false);
    } else {
        write_double_quoted(out, key, 0, false);
    }
}

/// `indent` is where folded continuation lines start; `parent` the indent of the enclosing
/// node (literal blocks are indented relative to it).
fn write_scalar(out: &mut String, value: &Value, indent: usize, parent: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&format_number(n)),
        Value::String(s) => write_string(out, s, indent, parent),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
    }
}

fn format_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    // Go's strconv.FormatFloat(f, 'g', -1, 64): exponent form from 1e21 up or below 1e-4.
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

fn write_string(out: &mut String, s: &str, indent: usize, parent: usize) {
    let analysis = analyze(s);
    if s.contains('\n') {
        if analysis.block {
            write_literal(out, s, parent + 2);
        } else {
            write_double_quoted(out, s, indent, true);
        }
        return;
    }
    if !resolves_as_string(s) {
        write_double_quoted(out, s, indent, true);
    } else if analysis.block_plain {
        write_plain(out, s, indent);
    } else if analysis.single_quoted {
        write_single_quoted(out, s, indent, true);
    } else {
        write_double_quoted(out, s, indent, true);
    }
}

fn write_plain(out: &mut String, s: &str, indent: usize) {
    let mut spaces = false;
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let next_space = chars.get(i + 1) == Some(&' ');
            if !spaces && column(out) > BEST_WIDTH && !next_space {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
            } else {
                out.push(c);
            }
            spaces = true;
        } else {
            out.push(c);
            spaces = false;
        }
    }
}

fn write_single_quoted(out: &mut String, s: &str, indent: usize, allow_breaks: bool) {
    out.push('\'');
    let chars: Vec<char> = s.chars().collect();
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            if allow_breaks
                && !spaces
                && column(out) > BEST_WIDTH
                && i != 0
                && i + 1 != chars.len()
                && chars.get(i + 1) != Some(&' ')
            {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
            } else {
                out.push(c);
            }
            spaces = true;
        } else {
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
            spaces = false;
        }
    }
    out.push('\'');
}

fn write_double_quoted(out: &mut String, s: &str, indent: usize, allow_breaks: bool) {
    out.push('"');
    let chars: Vec<char> = s.chars().collect();
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
            out.push('\\');
            match c {
                '\0' => out.push('0'),
                '\u{7}' => out.push('a'),
                '\u{8}' => out.push('b'),
                '\t' => out.push('t'),
                '\n' => out.push('n'),
                '\u{b}' => out.push('v'),
                '\u{c}' => out.push('f'),
                '\r' => out.push('r'),
                '\u{1b}' => out.push('e'),
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                '\u{85}' => out.push('N'),
                '\u{a0}' => out.push('_'),
                '\u{2028}' => out.push('L'),
                '\u{2029}' => out.push('P'),
                c if (c as u32) <= 0xff => out.push_str(&format!("x{:02X}", c as u32)),
                c if (c as u32) <= 0xffff => out.push_str(&format!("u{:04X}", c as u32)),
                c => out.push_str(&format!("U{:08X}", c as u32)),
            }
            spaces = false;
        } else if c == ' ' {
            if allow_breaks && !spaces && column(out) > BEST_WIDTH && i != 0 && i + 1 != chars.len()
            {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
                if chars.get(i + 1) == Some(&' ') {
                    out.push('\\');
                }
            } else {
                out.push(c);
            }
            spaces = true;
        } else {
            out.push(c);
            spaces = false;
        }
    }
    out.push('"');
}

/// A literal block (`|`, `|-`, `|+`, with an indentation indicator when the text starts with
/// a space or a break).
fn write_literal(out: &mut String, s: &str, indent: usize) {
    out.push('|');
    if s.starts_with(' ') || s.starts_with('\n') {
        out.push('2');
    }
    if !s.ends_with('\n') {
        out.push('-');
    } else if s.len() == 1 || s.ends_with("\n\n") {
        out.push('+');
    }
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
    }
}

#[cfg(test)]
mod tests;
