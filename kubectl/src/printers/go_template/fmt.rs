//! Go's fmt for the values a template handles: `%v` printing (maps as `map[k:v]` with sorted
//! keys, slices as `[a b]`, floats as `%g`), `Sprintf` with flags, widths, precisions and its
//! error forms (`%!d(string=x)`, `%!d(MISSING)`, `%!(EXTRA ...)`), `Sprint` and `Sprintln`.

use super::value::{Val, sorted_keys};

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// `fmt.Sprint(v)` of one value.
pub fn sprint_value(v: &Val) -> String {
    let mut out = String::new();
    print_arg(&mut out, v, 'v', Flags::default());
    out
}

/// `fmt.Sprint(args...)`: a space between operands when neither is a string.
pub fn sprint(args: &[Val]) -> String {
    let mut out = String::new();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let is_string = matches!(a, Val::Str(_));
        if i > 0 && !is_string && !prev_string {
            out.push(' ');
        }
        out.push_str(&sprint_value(a));
        prev_string = is_string;
    }
    out
}

/// `fmt.Sprintln(args...)`.
pub fn sprintln(args: &[Val]) -> String {
    let parts: Vec<String> = args.iter().map(sprint_value).collect();
    parts.join(" ") + "\n"
}

/// `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[Val]) -> String {
    let mut out = String::new();
    let chars: Vec<char> = format.chars().collect();
    let mut next_arg = 0;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let mut f = Flags::default();
        while i < chars.len() {
            match chars[i] {
                '+' => f.plus = true,
                '-' => f.minus = true,
                '#' => f.sharp = true,
                ' ' => f.space = true,
                '0' => f.zero = true,
                _ => break,
            }
            i += 1;
        }
        let number = |i: &mut usize| {
            let start = *i;
            while *i < chars.len() && chars[*i].is_ascii_digit() {
                *i += 1;
            }
            (start < *i).then(|| {
                chars[start..*i]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .unwrap_or(0)
            })
        };
        f.width = number(&mut i);
        if i < chars.len() && chars[i] == '.' {
            i += 1;
            f.prec = Some(number(&mut i).unwrap_or(0));
        }
        let Some(&verb) = chars.get(i) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(next_arg) {
            Some(arg) => print_arg(&mut out, arg, verb, f),
            None => out.push_str(&format!("%!{verb}(MISSING)")),
        }
        next_arg += 1;
    }
    if next_arg < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next_arg..]
            .iter()
            .map(|a| match a {
                Val::Invalid | Val::Nil => "<nil>".to_string(),
                a => format!("{}={}", a.type_name(), sprint_value(a)),
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

fn pad(out: &mut String, s: &str, f: Flags) {
    let len = s.chars().count();
    let fill = f.width.unwrap_or(0).saturating_sub(len);
    if f.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else {
        let c = if f.zero { '0' } else { ' ' };
        out.extend(std::iter::repeat_n(c, fill));
        out.push_str(s);
    }
}

fn bad_verb(out: &mut String, v: &Val, verb: char, f: Flags) {
    out.push_str(&format!("%!{verb}("));
    if v.is_nil() {
        out.push_str("<nil>");
    } else {
        out.push_str(v.type_name());
        out.push('=');
        print_arg(out, v, 'v', f);
    }
    out.push(')');
}

fn print_arg(out: &mut String, v: &Val, verb: char, f: Flags) {
    if verb == 'T' {
        return pad(out, v.type_name(), f);
    }
    match v {
        Val::Invalid | Val::Nil => match verb {
            'v' => pad(out, "<nil>", f),
            _ => bad_verb(out, v, verb, f),
        },
        Val::Bool(b) => match verb {
            't' | 'v' => pad(out, if *b { "true" } else { "false" }, f),
            _ => bad_verb(out, v, verb, f),
        },
        Val::Int(i) | Val::Int64(i) => fmt_int(out, v, *i, verb, f),
        Val::Float(x) => match verb {
            'v' | 'g' | 'G' | 'e' | 'E' | 'f' | 'F' => fmt_float(out, *x, verb, f),
            _ => bad_verb(out, v, verb, f),
        },
        Val::Str(s) => match verb {
            'v' | 's' => {
                let s: String = match f.prec {
                    Some(p) => s.chars().take(p).collect(),
                    None => s.to_string(),
                };
                pad(out, &s, f)
            }
            'q' => pad(out, &quote(s), f),
            'x' | 'X' => {
                let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
                pad(out, &if verb == 'X' { hex.to_uppercase() } else { hex }, f)
            }
            _ => bad_verb(out, v, verb, f),
        },
        Val::List(items) => {
            out.push('[');
            for (i, e) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_elem(out, &Val::from_json(e), verb, f);
            }
            out.push(']');
        }
        Val::Map(m) => {
            out.push_str("map[");
            for (i, k) in sorted_keys(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_arg(out, &Val::Str(k.as_str().into()), verb, f);
                out.push(':');
                print_elem(out, &Val::from_json(&m[k]), verb, f);
            }
            out.push(']');
        }
    }
}

/// An element of a map or slice: an `interface{}`, so nil prints `<nil>` whatever the verb.
fn print_elem(out: &mut String, v: &Val, verb: char, f: Flags) {
    if v.is_nil() {
        pad(out, "<nil>", f)
    } else {
        print_arg(out, v, verb, f)
    }
}

fn fmt_int(out: &mut String, v: &Val, i: i64, verb: char, f: Flags) {
    let digits = match verb {
        'v' | 'd' => i.unsigned_abs().to_string(),
        'b' => format!("{:b}", i.unsigned_abs()),
        'o' | 'O' => format!("{:o}", i.unsigned_abs()),
        'x' => format!("{:x}", i.unsigned_abs()),
        'X' => format!("{:X}", i.unsigned_abs()),
        'c' => return pad(out, &char_of(i).to_string(), f),
        'U' => return pad(out, &format!("U+{i:04X}"), f),
        'q' => {
            return pad(
                out,
                &format!("'{}'", quote_body(&char_of(i).to_string(), '\'')),
                f,
            );
        }
        _ => return bad_verb(out, v, verb, f),
    };
    let mut digits = digits;
    let sign = if i < 0 {
        "-"
    } else if f.plus {
        "+"
    } else if f.space {
        " "
    } else {
        ""
    };
    let prefix = match verb {
        'x' if f.sharp => "0x",
        'X' if f.sharp => "0X",
        'o' if f.sharp => "0",
        'O' => "0o",
        _ => "",
    };
    let min_digits = match (f.prec, f.width) {
        (Some(p), _) => p,
        (None, Some(w)) if f.zero && !f.minus => w.saturating_sub(sign.len() + prefix.len()),
        _ => 0,
    };
    if f.prec == Some(0) && i == 0 {
        digits.clear();
    }
    while digits.len() < min_digits {
        digits.insert(0, '0');
    }
    let f = Flags { zero: false, ..f };
    pad(out, &format!("{sign}{prefix}{digits}"), f)
}

fn char_of(i: i64) -> char {
    u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

fn fmt_float(out: &mut String, x: f64, verb: char, f: Flags) {
    let body = match verb {
        'v' | 'g' => format_g(x.abs(), f.prec, false),
        'G' => format_g(x.abs(), f.prec, true),
        'e' | 'E' => {
            let s = format_e(x.abs(), f.prec.unwrap_or(6));
            if verb == 'E' { s.to_uppercase() } else { s }
        }
        _ => format!("{:.*}", f.prec.unwrap_or(6), x.abs()),
    };
    let body = if x.is_infinite() {
        "Inf".to_string()
    } else if x.is_nan() {
        "NaN".to_string()
    } else {
        body
    };
    let sign = if x.is_sign_negative() && !x.is_nan() {
        "-"
    } else if f.plus {
        "+"
    } else if f.space {
        " "
    } else {
        ""
    };
    if f.zero && !f.minus && x.is_finite() {
        let width = f.width.unwrap_or(0);
        let zeros = width.saturating_sub(sign.len() + body.len());
        let s = format!("{sign}{}{body}", "0".repeat(zeros));
        return out.push_str(&s);
    }
    pad(out, &format!("{sign}{body}"), Flags { zero: false, ..f })
}

/// strconv's `%e` with `prec` digits after the point: at least two exponent digits.
fn format_e(x: f64, prec: usize) -> String {
    go_exponent(&format!("{x:.prec$e}"))
}

fn go_exponent(rust: &str) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// strconv's `%g`: shortest digits (or `prec` significant ones), `%e` form when the exponent
/// is below -4 or at least the precision (6 for the shortest form).
fn format_g(x: f64, prec: Option<usize>, upper: bool) -> String {
    let sci = match prec {
        None => format!("{x:e}"),
        Some(p) => {
            let p = p.max(1);
            let s = format!("{x:.*e}", p - 1);
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            let m = if m.contains('.') {
                m.trim_end_matches('0').trim_end_matches('.')
            } else {
                m
            };
            format!("{m}e{e}")
        }
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let nd = mantissa.chars().filter(char::is_ascii_digit).count() as i32;
    let mut eprec = prec.map_or(6, |p| p.max(1) as i32);
    if prec.is_some() && eprec > nd && nd > exp {
        eprec = nd;
    }
    if prec.is_none() {
        eprec = 6;
    }
    let s = if exp < -4 || exp >= eprec {
        go_exponent(&sci)
    } else {
        format!("{x:.*}", (nd - exp - 1).max(0) as usize)
    };
    if upper { s.to_uppercase() } else { s }
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    format!("\"{}\"", quote_body(s, '"'))
}

fn quote_body(s: &str, delim: char) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            c if c == delim || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
