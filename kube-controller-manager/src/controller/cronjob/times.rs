//! Which scheduled time a CronJob is due for, as upstream's `mostRecentScheduleTime`.

use super::schedule::Schedule;
use jiff::{SignedDuration, Timestamp};

/// Past this many missed start times upstream warns (`TooManyMissedTimes`).
pub const TOO_MANY_MISSED: usize = 100;
/// Walking more activations than this is not worth it: the most recent is approximated by
/// the last one reached (a `* * * * *` CronJob would need ten years of downtime).
const WALK_LIMIT: usize = 5_000_000;

#[derive(Debug, PartialEq, Eq)]
pub struct Due {
    /// The latest activation at or before now that has not been started yet.
    pub most_recent: Option<Timestamp>,
    /// How many activations were missed since the earliest time considered.
    pub missed: usize,
}

/// The activations of `schedule` in `(earliest, now]`: the last of them and how many.
/// `earliest` is the last schedule time (or the creation time), moved up to `now -
/// startingDeadlineSeconds` when that is later.
pub fn due(
    schedule: &Schedule,
    last_scheduled: Option<Timestamp>,
    created: Timestamp,
    starting_deadline_seconds: Option<i64>,
    now: Timestamp,
) -> Due {
    let mut earliest = last_scheduled.unwrap_or(created);
    if let Some(sds) = starting_deadline_seconds {
        let deadline = now - SignedDuration::from_secs(sds);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let mut most_recent = None;
    let mut missed = 0;
    let mut t = earliest;
    while missed < WALK_LIMIT {
        match schedule.next(t) {
            Some(next) if next <= now => {
                most_recent = Some(next);
                missed += 1;
                t = next;
            }
            _ => break,
        }
    }
    Due {
        most_recent,
        missed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::tz::TimeZone;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("ts")
    }

    #[test]
    fn due_times() {
        let every_minute = Schedule::parse("* * * * *", TimeZone::UTC).expect("parse");
        let hourly = Schedule::parse("@hourly", TimeZone::UTC).expect("parse");
        let created = ts("2026-01-01T10:00:30Z");
        let cases = [
            // (schedule, last, sds, now, most recent, missed)
            (&every_minute, None, None, "2026-01-01T10:00:59Z", None, 0),
            (
                &every_minute,
                None,
                None,
                "2026-01-01T10:01:00Z",
                Some("2026-01-01T10:01:00Z"),
                1,
            ),
            (
                &every_minute,
                None,
                None,
                "2026-01-01T10:05:10Z",
                Some("2026-01-01T10:05:00Z"),
                5,
            ),
            (
                &every_minute,
                Some("2026-01-01T10:05:00Z"),
                None,
                "2026-01-01T10:05:10Z",
                None,
                0,
            ),
            // The starting deadline bounds how far back missed times are looked for.
            (
                &every_minute,
                None,
                Some(90),
                "2026-01-01T12:00:10Z",
                Some("2026-01-01T12:00:00Z"),
                2,
            ),
            (
                &every_minute,
                None,
                None,
                "2026-01-01T12:00:10Z",
                Some("2026-01-01T12:00:00Z"),
                120,
            ),
            (&hourly, None, None, "2026-01-01T10:59:00Z", None, 0),
        ];
        for (i, (schedule, last, sds, now, want, missed)) in cases.into_iter().enumerate() {
            let got = due(schedule, last.map(ts), created, sds, ts(now));
            assert_eq!(
                got,
                Due {
                    most_recent: want.map(ts),
                    missed
                },
                "case {i}"
            );
        }
    }
}
