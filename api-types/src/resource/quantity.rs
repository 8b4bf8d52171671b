//! Exact arithmetic on `resource.Quantity` values for the plugins that compare and add
//! resource amounts (LimitRanger, ResourceQuota), with upstream's canonical printing, since
//! their messages and the quota usage they store quote quantities the way Go prints them.

use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// How a quantity prints, as upstream's `resource.Format`: the suffix family it was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// An amount in nano-units (upstream keeps nine decimal places and rounds anything finer
/// up), so sums and comparisons are exact.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

const NANO: i128 = 1_000_000_000;

/// Beyond this, amounts are out of any range upstream accepts (it caps at 2^63-1 units in
/// practice); refusing keeps the i128 arithmetic from overflowing.
const MAX_NANOS: i128 = 1 << 110;

impl Quantity {
    pub const ZERO: Quantity = Quantity {
        nanos: 0,
        format: Format::DecimalSi,
    };

    /// An integer count (object counts in quota usage).
    pub fn from_int(n: i64) -> Self {
        Quantity {
            nanos: n as i128 * NANO,
            format: Format::DecimalSi,
        }
    }

    /// Parses upstream's quantity grammar: `<sign><digits>[.<digits>]<suffix>` with a binary
    /// (`Ki`..`Ei`), decimal (`n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`) or exponent
    /// (`e3`, `E-2`) suffix.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return None;
        }
        let (format, base, exponent) = parse_suffix(suffix)?;
        // mantissa * 10^-(fraction digits) * base^exponent, in nanos.
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return None;
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let mut scale10 = 9 - fraction.len() as i32;
        let mut value = mantissa;
        if base == 2 {
            for _ in 0..exponent / 10 {
                value = value.checked_mul(1024)?;
                if value > MAX_NANOS {
                    return None;
                }
            }
        } else {
            scale10 += exponent;
        }
        let nanos = if scale10 >= 0 {
            let mut v = value;
            for _ in 0..scale10 {
                v = v.checked_mul(10)?;
                if v > MAX_NANOS {
                    return None;
                }
            }
            v
        } else {
            let divisor = 10i128.checked_pow((-scale10) as u32);
            match divisor {
                // Finer than a nano: upstream rounds away from zero.
                Some(d) => value / d + i128::from(value % d != 0),
                None => i128::from(value != 0),
            }
        };
        if nanos > MAX_NANOS {
            return None;
        }
        Some(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// A quantity as JSON carries it: a string, or a bare number (which upstream accepts).
    pub fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Self::parse(s),
            Value::Number(n) => Self::parse(&n.to_string()),
            _ => None,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The amount in thousandths, rounded up as upstream's `MilliValue`.
    pub fn milli_value(&self) -> i128 {
        let d = 1_000_000;
        self.nanos.div_euclid(d) + i128::from(self.nanos.rem_euclid(d) != 0)
    }

    /// The amount in whole units, rounded up as upstream's `Value`.
    pub fn value(&self) -> i128 {
        self.nanos.div_euclid(NANO) + i128::from(self.nanos.rem_euclid(NANO) != 0)
    }

    /// Upstream's `Add`: the sum keeps this quantity's format unless this one is zero.
    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos + other.nanos,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// Upstream's `Sub`, with the same format rule as [`Quantity::add`].
    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos - other.nanos,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The canonical string upstream prints and serializes.
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".into();
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        let mut format = self.format;
        if format == Format::BinarySi
            && (magnitude < 1024 * NANO as u128 || !magnitude.is_multiple_of(NANO as u128))
        {
            // Small or fractional binary amounts would need rounding in powers of 1024.
            format = Format::DecimalSi;
        }
        if format == Format::BinarySi {
            let mut units = magnitude / NANO as u128;
            let mut power = 0;
            while units.is_multiple_of(1024) && power < 6 {
                units /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{units}{suffix}");
        }
        let mut mantissa = magnitude;
        let mut exponent: i32 = -9;
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                mantissa *= 10;
                exponent -= 1;
            }
            2 => {
                mantissa *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = if format == Format::DecimalExponent {
            if exponent == 0 {
                String::new()
            } else {
                format!("e{exponent}")
            }
        } else {
            match exponent {
                -9 => "n".into(),
                -6 => "u".into(),
                -3 => "m".into(),
                0 => String::new(),
                3 => "k".into(),
                6 => "M".into(),
                9 => "G".into(),
                12 => "T".into(),
                15 => "P".into(),
                18 => "E".into(),
                e => format!("e{e}"),
            }
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// The format, the base and the exponent (a power of ten, or of two in steps of ten) a
/// suffix stands for.
fn parse_suffix(suffix: &str) -> Option<(Format, u32, i32)> {
    let decimal = |e| Some((Format::DecimalSi, 10, e));
    let binary = |e| Some((Format::BinarySi, 2, e));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let e: i32 = exponent.parse().ok()?;
            if !(-40..=40).contains(&e) {
                return None;
            }
            Some((Format::DecimalExponent, 10, e))
        }
    }
}

/// A `ResourceList` (resource name to quantity), sorted by name as upstream prints them.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The quantities of a JSON `ResourceList`; entries that do not parse are left out (the
/// registry's validation refuses them before they matter).
pub fn resource_list(value: &Value) -> ResourceList {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::from_json(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A `ResourceList` as JSON, with canonical strings.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.canonical())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s).expect(s).canonical()
    }

    #[test]
    fn canonical_forms_match_upstream() {
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("15000"), "15k");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1536Mi"), "1536Mi");
        assert_eq!(canon("0.5Gi"), "512Mi");
        assert_eq!(canon("512"), "512");
        assert_eq!(canon("100Ki"), "100Ki");
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("1E6"), "1e6");
        assert_eq!(canon("1.5e3"), "1500");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("0Mi"), "0");
        assert_eq!(canon("-2k"), "-2k");
        assert_eq!(canon("1.1n"), "2n");
        assert_eq!(canon("100u"), "100u");
        assert_eq!(canon("1E"), "1E");
        assert_eq!(canon(".5"), "500m");
    }

    #[test]
    fn rejects_what_upstream_rejects() {
        for bad in ["", "abc", "1.2.3", "1Kb", "1e", "m", "1 Gi", "."] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn arithmetic_and_comparison_are_exact() {
        let a = Quantity::parse("1Gi").unwrap();
        let b = Quantity::parse("1073741824").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.add(&b).canonical(), "2Gi");
        let zero = Quantity::ZERO;
        assert_eq!(zero.add(&a).canonical(), "1Gi");
        assert!(Quantity::parse("100m").unwrap() < Quantity::parse("0.2").unwrap());
        assert_eq!(Quantity::parse("1.5").unwrap().milli_value(), 1500);
        assert_eq!(Quantity::parse("1u").unwrap().milli_value(), 1);
        assert_eq!(
            Quantity::from_json(&serde_json::json!(2))
                .unwrap()
                .canonical(),
            "2"
        );
    }
}
