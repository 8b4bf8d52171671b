//! Scalar analysis for the YAML printer: libyaml's emitter checks (which styles a text may
//! take) and go-yaml v2's resolver (which plain texts would read back as something other than
//! a string).

/// The styles a text may take in block context.
#[derive(Debug, Default)]
pub struct Analysis {
    pub block_plain: bool,
    pub single_quoted: bool,
    pub block: bool,
}

/// libyaml's printable set; anything else forces double quotes with escapes.
pub fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}')
        && c != '\u{feff}'
}

/// Line breaks as YAML counts them.
pub fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `yaml_emitter_analyze_scalar`, the parts block context needs.
pub fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            block_plain: false,
            single_quoted: true,
            block: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let mut special = false;
    let mut line_breaks = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_ws = true;
    let blank = |i: usize| {
        chars
            .get(i)
            .is_none_or(|c| *c == ' ' || *c == '\t' || is_break(*c))
    };
    let mut followed_by_ws = blank(1);
    for (i, &c) in chars.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == chars.len();
        if first {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                block_indicators = true;
            }
            if (c == '?' || c == ':' || c == '-') && followed_by_ws {
                block_indicators = true;
            }
        } else {
            if c == ':' && followed_by_ws {
                block_indicators = true;
            }
            if c == '#' && preceded_by_ws {
                block_indicators = true;
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            leading_break |= first;
            trailing_break |= last;
            space_break |= previous_space;
            previous_break = true;
            previous_space = false;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = blank(i);
        followed_by_ws = blank(i + 2);
    }
    let mut a = Analysis {
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || special {
        a = Analysis::default();
    }
    if line_breaks || block_indicators {
        a.block_plain = false;
    }
    a
}

/// go-yaml v2's `resolve`: would this text, written plain, be read back as a string?
pub fn resolves_as_string(s: &str) -> bool {
    const OTHER: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N",
        "no", "No", "NO", "off", "Off", "OFF", "true", "True", "TRUE", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if OTHER.contains(&s) {
        return false;
    }
    let Some(first) = s.chars().next() else {
        return false;
    };
    if first == '.' {
        return s.parse::<f64>().is_err();
    }
    if !(first.is_ascii_digit() || first == '+' || first == '-') {
        return true;
    }
    let plain = s.replace('_', "");
    if parse_go_int(&plain) || is_yaml_float(&plain) || is_base60_float(s) {
        return false;
    }
    if let Some(bin) = plain
        .strip_prefix("0b")
        .or_else(|| plain.strip_prefix("-0b"))
        && !bin.is_empty()
        && bin.chars().all(|c| c == '0' || c == '1')
    {
        return false;
    }
    !(first.is_ascii_digit() && is_timestamp(s))
}

/// Go's `strconv.ParseInt(s, 0, 64)` / `ParseUint` acceptance (sign, 0x/0o/0b/0 prefixes).
fn parse_go_int(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d.to_owned(), 16)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (d.to_owned(), 8)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d.to_owned(), 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (lower[1..].to_owned(), 8)
    } else {
        (lower, 10)
    };
    !digits.is_empty() && u128::from_str_radix(&digits, radix).is_ok_and(|v| v <= u64::MAX as u128)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn is_base60_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (s, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    if frac.is_some_and(|f| !f.chars().all(|c| c.is_ascii_digit() || c == '_')) {
        return false;
    }
    let mut parts = s.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| c.is_ascii_digit())
        && head.chars().all(|c| c.is_ascii_digit() || c == '_');
    let rest: Vec<&str> = parts.collect();
    head_ok
        && !rest.is_empty()
        && rest.iter().all(|p| {
            let b = p.as_bytes();
            match b.len() {
                1 => b[0].is_ascii_digit(),
                2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
                _ => false,
            }
        })
}

/// go-yaml's timestamp formats: `2006-1-2`, with `T`/`t`/space and a time, optional zone.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let fields: Vec<&str> = date.split('-').collect();
    let num = |t: &str, max: usize| {
        !t.is_empty() && t.len() <= max && t.chars().all(|c| c.is_ascii_digit())
    };
    if fields.len() != 3 || !num(fields[1], 2) || !num(fields[2], 2) {
        return false;
    }
    let Some(time) = time else { return true };
    let (clock, _zone) = match time.find(['Z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => (time, ""),
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    parts.len() == 3 && parts.iter().all(|p| num(p, 2)) && frac.is_none_or(|f| num(f, 9))
}
