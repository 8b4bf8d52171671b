//! The JSON forms of apimachinery's value types, as their Go `MarshalJSON` writes them.

/// `metav1.Time`: RFC 3339 in UTC with whole seconds (upstream's protobuf decoding drops the
/// nanoseconds too, so JSON and protobuf clients store the same value).
pub fn time(seconds: i64) -> Result<String, String> {
    let ts = jiff::Timestamp::from_second(seconds)
        .map_err(|e| format!("time {seconds}s is out of range: {e}"))?;
    Ok(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// `metav1.MicroTime`: RFC 3339 in UTC with exactly six fractional digits.
pub fn micro_time(seconds: i64, nanos: i32) -> Result<String, String> {
    let nanos = i64::from(nanos);
    // Go normalises out-of-range nanoseconds into the seconds (`time.Unix`).
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(|| "time out of range".to_string())?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    Ok(format!(
        "{}.{:06}Z",
        time(seconds)?.trim_end_matches('Z'),
        nanos / 1000
    ))
}

/// `metav1.Duration`: Go's `time.Duration.String()` (`1h0m0s`, `1.5s`, `300ms`, `0s`).
pub fn duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        if u == 0 {
            return "0s".into();
        }
        let (unit, precision) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        out.push_str(&fraction(u, precision));
        out.push_str(unit);
    } else {
        let whole = u / 1_000_000_000;
        let (h, m, s) = (whole / 3600, (whole / 60) % 60, whole % 60);
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if whole >= 60 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&fraction(s * 1_000_000_000 + u % 1_000_000_000, 9));
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^precision` with the fraction's trailing zeros (and a bare dot) dropped.
fn fraction(v: u64, precision: u32) -> String {
    let scale = 10u64.pow(precision);
    let (int, frac) = (v / scale, v % scale);
    if frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:0width$}", width = precision as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time(0).as_deref(), Ok("1970-01-01T00:00:00Z"));
        assert_eq!(time(1_700_000_000).as_deref(), Ok("2023-11-14T22:13:20Z"));
        assert_eq!(
            micro_time(1_700_000_000, 123_456_789).as_deref(),
            Ok("2023-11-14T22:13:20.123456Z")
        );
        assert_eq!(
            micro_time(1_700_000_000, 0).as_deref(),
            Ok("2023-11-14T22:13:20.000000Z")
        );
        assert!(time(i64::MAX).is_err());
    }

    #[test]
    fn durations_print_as_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-90_000_000_000, "-1m30s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(duration(nanos), want, "{nanos}");
        }
    }
}
