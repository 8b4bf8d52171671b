//! Cron schedules as upstream's CronJob controller reads them (robfig/cron's standard parser):
//! five fields (minute, hour, day of month, month, day of week) with `*`, `?`, ranges, steps,
//! lists and month/weekday names, the `@yearly` .. `@hourly` descriptors, and a `TZ=` or
//! `CRON_TZ=` prefix naming the time zone. Written here rather than taken from a crate so
//! its day-of-month/day-of-week rule and descriptors are exactly robfig's.

use anyhow::{Context, bail};
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

#[derive(Debug, Clone)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// The field was `*` or `?`: then the day matches on the other day field alone (robfig's
    /// rule: both restricted means either may match).
    dom_star: bool,
    dow_star: bool,
    pub tz: TimeZone,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Schedule {
    /// Parses `spec`; `default_tz` is used when the spec names none.
    pub fn parse(spec: &str, default_tz: TimeZone) -> anyhow::Result<Self> {
        let spec = spec.trim();
        let (tz, rest) = match spec
            .strip_prefix("CRON_TZ=")
            .or_else(|| spec.strip_prefix("TZ="))
        {
            Some(rest) => {
                let (name, rest) = rest
                    .split_once(char::is_whitespace)
                    .context("time zone prefix without a schedule")?;
                let tz =
                    TimeZone::get(name).with_context(|| format!("provided bad location {name}"))?;
                (tz, rest.trim())
            }
            None => (default_tz, spec),
        };
        let expanded = match rest {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => bail!("unrecognized descriptor: {other}"),
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            bail!(
                "expected exactly 5 fields, found {}: {expanded}",
                fields.len()
            );
        }
        let dom_star = matches!(fields[2], "*" | "?");
        let dow_star = matches!(fields[4], "*" | "?");
        let mut days_of_week = field(fields[4], 0, 7, &WEEKDAYS, 0)?;
        // 7 is Sunday as well.
        if days_of_week & (1 << 7) != 0 {
            days_of_week |= 1;
        }
        Ok(Self {
            minutes: field(fields[0], 0, 59, &[], 0)?,
            hours: field(fields[1], 0, 23, &[], 0)?,
            days_of_month: field(fields[2], 1, 31, &[], 1)?,
            months: field(fields[3], 1, 12, &MONTHS, 1)?,
            days_of_week,
            dom_star,
            dow_star,
            tz,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first activation strictly after `after`; None when there is none within five
    /// years (e.g. `0 0 30 2 *`).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        let local = after.to_zoned(self.tz.clone()).datetime();
        // Start at the next whole minute.
        let mut t = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = t.year() + 5;
        while t.year() <= limit {
            if self.months & (1 << t.month()) == 0 {
                let first = Date::new(t.year(), t.month(), 1).ok()?;
                t = first
                    .checked_add(1.month())
                    .ok()?
                    .to_datetime(Time::midnight());
                continue;
            }
            if !self.day_matches(t.date()) {
                t = t.date().tomorrow().ok()?.to_datetime(Time::midnight());
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = DateTime::from_parts(t.date(), Time::new(t.hour(), 0, 0, 0).ok()?)
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if self.minutes & (1 << t.minute()) == 0 {
                t = t.checked_add(1.minute()).ok()?;
                continue;
            }
            let ts = self.tz.to_timestamp(t).ok()?;
            if ts > after {
                return Some(ts);
            }
            // A wall time repeated or skipped by a DST change: move on.
            t = t.checked_add(1.minute()).ok()?;
        }
        None
    }
}

/// Parses one field into a bit set; `names` (if any) are accepted for values from `name_base`.
fn field(text: &str, min: u32, max: u32, names: &[&str], name_base: u32) -> anyhow::Result<u64> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .with_context(|| format!("failed to parse step {s:?} in {text:?}"))?;
                if step == 0 {
                    bail!("step of range should be a positive number: {part}");
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (start, end) = if range == "*" || range == "?" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, names, name_base)?, value(b, names, name_base)?)
        } else {
            let v = value(range, names, name_base)?;
            // `a/n` runs from a to the end of the range, as robfig.
            (v, if step.is_some() { max } else { v })
        };
        if start < min || end > max {
            bail!("value out of range ({min} - {max}): {part}");
        }
        if start > end {
            bail!("beginning of range ({start}) beyond end of range ({end}): {part}");
        }
        let step = step.unwrap_or(1);
        let mut v = start;
        while v <= end {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok(bits)
}

fn value(text: &str, names: &[&str], name_base: u32) -> anyhow::Result<u32> {
    let lower = text.to_ascii_lowercase();
    if let Some(pos) = names.iter().position(|n| *n == lower) {
        return Ok(pos as u32 + name_base);
    }
    text.parse()
        .with_context(|| format!("failed to parse int from {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn next_activation() {
        let cases = [
            ("* * * * *", "2026-01-01T10:00:30Z", "2026-01-01T10:01:00Z"),
            ("* * * * *", "2026-01-01T10:00:00Z", "2026-01-01T10:01:00Z"),
            (
                "*/15 * * * *",
                "2026-01-01T10:01:00Z",
                "2026-01-01T10:15:00Z",
            ),
            (
                "5/20 * * * *",
                "2026-01-01T10:30:00Z",
                "2026-01-01T10:45:00Z",
            ),
            (
                "0 9-17/4 * * *",
                "2026-01-01T10:00:00Z",
                "2026-01-01T13:00:00Z",
            ),
            (
                "30 2 * * mon-fri",
                "2026-01-02T03:00:00Z",
                "2026-01-05T02:30:00Z",
            ),
            (
                "0 0 1 jan,JUL *",
                "2026-02-01T00:00:00Z",
                "2026-07-01T00:00:00Z",
            ),
            ("@hourly", "2026-01-01T10:59:59Z", "2026-01-01T11:00:00Z"),
            ("@daily", "2026-01-01T10:00:00Z", "2026-01-02T00:00:00Z"),
            ("@weekly", "2026-01-01T10:00:00Z", "2026-01-04T00:00:00Z"),
            ("@monthly", "2026-01-31T10:00:00Z", "2026-02-01T00:00:00Z"),
            ("@yearly", "2026-01-01T10:00:00Z", "2027-01-01T00:00:00Z"),
            ("0 0 * * 7", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"),
            // Both day fields restricted: either matches (the 13th, or a Friday).
            ("0 0 13 * 5", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"),
            ("0 0 13 * ?", "2026-01-01T00:00:00Z", "2026-01-13T00:00:00Z"),
            ("0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
            (
                "TZ=Etc/GMT-2 0 12 * * *",
                "2026-01-01T00:00:00Z",
                "2026-01-01T10:00:00Z",
            ),
            (
                "CRON_TZ=Etc/GMT+1 0 12 * * *",
                "2026-01-01T00:00:00Z",
                "2026-01-01T13:00:00Z",
            ),
        ];
        for (spec, after, want) in cases {
            let s = Schedule::parse(spec, TimeZone::UTC).expect(spec);
            assert_eq!(s.next(ts(after)), Some(ts(want)), "{spec} after {after}");
        }
    }

    #[test]
    fn never() {
        let s = Schedule::parse("0 0 30 2 *", TimeZone::UTC).expect("parse");
        assert_eq!(s.next(ts("2026-01-01T00:00:00Z")), None);
    }

    #[test]
    fn rejects_bad_specs() {
        for spec in [
            "",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "*/0 * * * *",
            "5-1 * * * *",
            "a * * * *",
            "@every 5m",
            "TZ=Nowhere/Atlantis * * * * *",
        ] {
            assert!(
                Schedule::parse(spec, TimeZone::UTC).is_err(),
                "{spec} should be rejected"
            );
        }
    }

    #[test]
    fn dst_gap_is_skipped_forward() {
        let Ok(tz) = TimeZone::get("America/New_York") else {
            return;
        };
        // 2:30 does not exist on 2026-03-08 in New York; the next one is on the 9th.
        let s = Schedule::parse("30 2 * * *", tz).expect("parse");
        let next = s.next(ts("2026-03-08T06:00:00Z")).expect("next");
        assert!(next >= ts("2026-03-08T07:00:00Z"), "{next}");
    }
}
