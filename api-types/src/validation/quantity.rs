//! Resource quantity parsing (`100m`, `1Gi`, `2e3`), enough to validate and compare them.

/// Upstream's message for a string that is not a quantity.
pub const QUANTITY_FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Parses a quantity into its value as `f64` (precise enough to compare requests with limits
/// and check signs), or `None` when it is not a valid quantity.
pub fn parse_quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let digits_end = s
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '+' || *c == '-'))))
        .map_or(s.len(), |(i, _)| i);
    let (number, suffix) = s.split_at(digits_end);
    let unsigned = number.trim_start_matches(['+', '-']);
    if unsigned.is_empty() || unsigned == "." || unsigned.matches('.').count() > 1 {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().ok()?;
            10f64.powi(e)
        }
        _ => return None,
    };
    Some(value * multiplier)
}

#[cfg(test)]
mod tests {
    use super::parse_quantity;

    #[test]
    fn parses_quantities() {
        let cases = [
            ("1", Some(1.0)),
            ("100m", Some(0.1)),
            ("1.5", Some(1.5)),
            ("1Ki", Some(1024.0)),
            ("1Gi", Some(1073741824.0)),
            ("2k", Some(2000.0)),
            ("1e3", Some(1000.0)),
            ("1E-3", Some(0.001)),
            ("-1", Some(-1.0)),
            ("+5M", Some(5e6)),
            ("", None),
            ("abc", None),
            ("1Z", None),
            ("1..2", None),
            ("Gi", None),
            ("1 Gi", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_quantity(input), want, "{input:?}");
        }
    }
}
