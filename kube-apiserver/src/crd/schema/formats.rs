//! String formats the OpenAPI validator checks (kube-openapi's `strfmt` default registry).

use base64::Engine;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

static UUID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("uuid pattern")
});
static UUID3: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("uuid3 pattern")
});
static UUID4: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    )
    .expect("uuid4 pattern")
});
static UUID5: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    )
    .expect("uuid5 pattern")
});
static HOSTNAME: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
    )
    .expect("hostname pattern")
});
static DURATION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^((\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$",
    )
    .expect("duration pattern")
});
static MAC: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$",
    )
    .expect("mac pattern")
});
static HEXCOLOR: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").expect("hexcolor pattern")
});
static RGBCOLOR: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
    .expect("rgb pattern")
});
static SSN: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").expect("ssn pattern"));
static BSON_OBJECT_ID: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^[0-9a-fA-F]{24}$").expect("bson pattern"));

/// Whether `format` is one the validator knows (and so checks).
pub(crate) fn known(format: &str) -> bool {
    matches!(
        format,
        "uri"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "creditcard"
            | "ssn"
            | "hexcolor"
            | "rgbcolor"
            | "byte"
            | "password"
            | "date"
            | "date-time"
            | "datetime"
            | "duration"
            | "bsonobjectid"
    )
}

/// Whether `value` is a valid `format` string.
pub(crate) fn valid(format: &str, value: &str) -> bool {
    match format {
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "hostname" => {
            HOSTNAME.is_match(value)
                && value.len() <= 255
                && value.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => value.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => value.contains(':') && value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(value),
        "mac" => MAC.is_match(value),
        "byte" => is_base64(value),
        "password" => true,
        "date" => jiff::civil::Date::strptime("%Y-%m-%d", value).is_ok(),
        "date-time" | "datetime" => is_date_time(value),
        "duration" => DURATION.is_match(value),
        "email" => is_email(value),
        "uri" => is_request_uri(value),
        "hexcolor" => HEXCOLOR.is_match(value),
        "rgbcolor" => RGBCOLOR.is_match(value),
        "ssn" => SSN.is_match(value),
        "bsonobjectid" => BSON_OBJECT_ID.is_match(value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        _ => true,
    }
}

fn is_cidr(value: &str) -> bool {
    let Some((ip, bits)) = value.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

fn is_base64(value: &str) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .is_ok()
}

/// RFC 3339 with or without fractional seconds; also the zone-less and space-separated
/// layouts upstream's `ParseDateTime` accepts.
fn is_date_time(value: &str) -> bool {
    if value.parse::<jiff::Timestamp>().is_ok() {
        return true;
    }
    [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
    ]
    .iter()
    .any(|layout| jiff::civil::DateTime::strptime(layout, value).is_ok())
}

fn is_email(value: &str) -> bool {
    let addr = match (value.find('<'), value.rfind('>')) {
        (Some(start), Some(end)) if start < end => &value[start + 1..end],
        _ => value.trim(),
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !addr.chars().any(char::is_whitespace)
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

/// `govalidator.IsRequestURI`: an absolute URI or an absolute path.
fn is_request_uri(value: &str) -> bool {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return false;
    }
    if value.starts_with('/') {
        return true;
    }
    match value.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

fn digits(value: &str) -> Vec<u32> {
    value
        .chars()
        .filter(|c| *c != '-' && *c != ' ')
        .map(|c| c.to_digit(10).unwrap_or(99))
        .collect()
}

fn is_isbn10(value: &str) -> bool {
    let clean: Vec<char> = value.chars().filter(|c| *c != '-' && *c != ' ').collect();
    if clean.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in clean.iter().enumerate() {
        let d = match (i, c) {
            (9, 'X') => 10,
            (_, c) => match c.to_digit(10) {
                Some(d) => d,
                None => return false,
            },
        };
        sum += (10 - i as u32) * d;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let d = digits(value);
    if d.len() != 13 || d.iter().any(|x| *x > 9) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .enumerate()
        .map(|(i, x)| if i % 2 == 0 { *x } else { x * 3 })
        .sum();
    sum.is_multiple_of(10)
}

fn is_credit_card(value: &str) -> bool {
    let d = digits(value);
    if d.len() < 12 || d.len() > 19 || d.iter().any(|x| *x > 9) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, x)| {
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 { y - 9 } else { y }
            } else {
                *x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let cases = [
            ("uuid", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", true),
            ("uuid", "nope", false),
            ("date", "2024-02-29", true),
            ("date", "2024-13-01", false),
            ("date-time", "2024-02-29T10:00:00Z", true),
            ("date-time", "2024-02-29T10:00:00.123+02:00", true),
            ("date-time", "yesterday", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-", false),
            ("email", "a@b.io", true),
            ("email", "nope", false),
            ("duration", "3h", true),
            ("duration", "soon", false),
            ("uri", "https://x.io/a", true),
            ("uri", "x y", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("isbn10", "0306406152", true),
            ("isbn13", "9780306406157", true),
            ("creditcard", "4111111111111111", true),
            ("creditcard", "4111111111111112", false),
        ];
        for (format, value, want) in cases {
            assert!(known(format));
            assert_eq!(valid(format, value), want, "{format} {value}");
        }
        assert!(!known("int32"));
    }
}
