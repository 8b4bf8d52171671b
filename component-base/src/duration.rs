//! Durations in Go's flag syntax (`15s`, `1m30s`, `300ms`, `1.5h`), as upstream's flags take them.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration parsed from and printed in Go's `time.Duration` syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct GoDuration(pub Duration);

impl From<GoDuration> for Duration {
    fn from(d: GoDuration) -> Self {
        d.0
    }
}

const UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("μs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
];

impl FromStr for GoDuration {
    type Err = String;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("time: invalid duration {input:?}");
        if input == "0" {
            return Ok(Self(Duration::ZERO));
        }
        let rest = input.strip_prefix('+').unwrap_or(input);
        if rest.starts_with('-') {
            return Err(format!("negative duration {input:?} is not allowed"));
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total_ns = 0f64;
        let mut rest = rest;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| format!("time: missing unit in duration {input:?}"))?;
            let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
            rest = &rest[number_len..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let unit = &rest[..unit_len];
            let scale = UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, scale)| *scale)
                .ok_or_else(|| format!("time: unknown unit {unit:?} in duration {input:?}"))?;
            total_ns += number * scale;
            rest = &rest[unit_len..];
        }
        if !total_ns.is_finite() || total_ns > u64::MAX as f64 {
            return Err(invalid());
        }
        Ok(Self(Duration::from_nanos(total_ns.round() as u64)))
    }
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String()`: `0s`, `300ms`, `1.5s`, `2m0s`, `1h0m0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos == 0 {
            return write!(f, "0s");
        }
        if nanos < 1_000_000_000 {
            let (value, unit) = if nanos < 1_000 {
                (nanos as f64, "ns")
            } else if nanos < 1_000_000 {
                (nanos as f64 / 1e3, "µs")
            } else {
                (nanos as f64 / 1e6, "ms")
            };
            return write!(f, "{value}{unit}");
        }
        let hours = nanos / 3_600_000_000_000;
        let minutes = (nanos / 60_000_000_000) % 60;
        let seconds = (nanos % 60_000_000_000) as f64 / 1e9;
        if hours > 0 {
            write!(f, "{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            write!(f, "{minutes}m{seconds}s")
        } else {
            write!(f, "{seconds}s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_syntax() {
        let ms = Duration::from_millis;
        let cases = [
            ("0", ms(0)),
            ("15s", ms(15_000)),
            ("1m30s", ms(90_000)),
            ("300ms", ms(300)),
            ("1.5h", ms(5_400_000)),
            ("2h45m", ms(9_900_000)),
            ("+5s", ms(5_000)),
            ("1us", Duration::from_micros(1)),
            ("1µs", Duration::from_micros(1)),
            ("10ns", Duration::from_nanos(10)),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<GoDuration>(), Ok(GoDuration(want)), "{input}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        for input in ["", "15", "s", "1x", "-5s", "1..5s", "abc", "5 s"] {
            assert!(input.parse::<GoDuration>().is_err(), "{input:?} accepted");
        }
        assert_eq!(
            "15".parse::<GoDuration>().unwrap_err(),
            "time: missing unit in duration \"15\""
        );
    }

    #[test]
    fn prints_like_go() {
        let cases = [
            ("0", "0s"),
            ("15s", "15s"),
            ("1.5s", "1.5s"),
            ("300ms", "300ms"),
            ("2m", "2m0s"),
            ("1h", "1h0m0s"),
            ("1h2m3s", "1h2m3s"),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<GoDuration>().unwrap().to_string(), want);
        }
    }
}
