//! The benchmarks' command lines: the usage text is the definition, `[--name N]` a flag with a
//! value and `[--name]` a switch, so the usage shown on an error cannot drift from what parses.

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::str::FromStr;

/// The flags given on a benchmark's command line.
#[derive(Debug, Default)]
pub struct Flags {
    values: HashMap<String, String>,
    switches: HashSet<String>,
}

impl Flags {
    /// Parses the process's arguments against `usage` (e.g.
    /// `bench-x [--pods N] [--header]`).
    pub fn from_env(usage: &str) -> anyhow::Result<Flags> {
        Self::parse(usage, std::env::args().skip(1))
    }

    /// Parses `args`; an unknown flag is an error that shows `usage`, a later value of a flag
    /// replaces an earlier one.
    pub fn parse(usage: &str, args: impl IntoIterator<Item = String>) -> anyhow::Result<Flags> {
        let (takes_value, switches) = defined(usage);
        let mut flags = Flags::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if takes_value.contains(flag.as_str()) {
                let value = args
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?;
                flags.values.insert(flag, value);
            } else if switches.contains(flag.as_str()) {
                flags.switches.insert(flag);
            } else {
                anyhow::bail!("unknown flag {flag}; usage: {usage}");
            }
        }
        Ok(flags)
    }

    /// The value of `flag`, or `default` when it was not given.
    pub fn value<T>(&self, flag: &str, default: T) -> anyhow::Result<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.values.get(flag) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|err| anyhow::anyhow!("{flag} {text}: {err}")),
        }
    }

    /// Whether the switch `flag` was given.
    pub fn switch(&self, flag: &str) -> bool {
        self.switches.contains(flag)
    }
}

/// The flags `usage` names: (those taking a value, switches).
fn defined(usage: &str) -> (HashSet<&str>, HashSet<&str>) {
    let mut takes_value = HashSet::new();
    let mut switches = HashSet::new();
    for group in usage.split('[').skip(1) {
        let inner = group.split(']').next().unwrap_or_default();
        let mut words = inner.split_whitespace();
        let Some(name) = words.next() else { continue };
        if words.next().is_some() {
            takes_value.insert(name);
        } else {
            switches.insert(name);
        }
    }
    (takes_value, switches)
}

#[cfg(test)]
mod tests {
    use super::*;

    const USAGE: &str = "bench-x [--pods N] [--interval-ms X] [--header]";

    fn parse(args: &[&str]) -> anyhow::Result<Flags> {
        Flags::parse(USAGE, args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn values_switches_and_defaults() {
        let cases: &[(&[&str], usize, u64, bool)] = &[
            (&[], 50, 0, false),
            (&["--pods", "7"], 7, 0, false),
            (&["--header", "--interval-ms", "200"], 50, 200, true),
            (&["--pods", "1", "--pods", "2"], 2, 0, false),
        ];
        for (args, pods, interval, header) in cases {
            let flags = parse(args).unwrap();
            assert_eq!(flags.value("--pods", 50usize).unwrap(), *pods, "{args:?}");
            assert_eq!(
                flags.value("--interval-ms", 0u64).unwrap(),
                *interval,
                "{args:?}"
            );
            assert_eq!(flags.switch("--header"), *header, "{args:?}");
        }
    }

    #[test]
    fn errors() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--nodes", "3"],
                "unknown flag --nodes; usage: bench-x [--pods N] [--interval-ms X] [--header]",
            ),
            (&["--pods"], "--pods needs a value"),
            (&["--header", "x"], "unknown flag x; usage: bench-x"),
        ];
        for (args, want) in cases {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with(want), "{args:?}: {err}");
        }
        let flags = parse(&["--pods", "many"]).unwrap();
        let err = flags.value("--pods", 0usize).unwrap_err().to_string();
        assert_eq!(err, "--pods many: invalid digit found in string");
    }
}
