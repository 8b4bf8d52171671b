//! Our kubectl against the upstream one (/usr/bin/kubectl) on the same cluster: each step runs
//! with both, each in its own namespace (`<name>-up`, `<name>-ours`) so both start from the
//! same state, and the two results must be the same once the namespace name and what must
//! differ between two objects (uid, resourceVersion, timestamps, AGE) are normalised. After a
//! step, the objects of both namespaces can be compared the same way.

use crate::apiserver::ApiServer;
use crate::kubectl::{Kubectl, Output};
use crate::secure::SecureCluster;
use std::path::Path;

/// How to compare the outputs of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Byte for byte (after the namespace and object identity are normalised).
    Exact,
    /// Tables: runs of spaces collapsed and AGE values masked (their width moves columns).
    Table,
    /// Only the last line of stderr (upstream logs retries with timestamps before it).
    LastStderrLine,
}

/// One step's results.
#[derive(Debug)]
pub struct Outcome {
    pub upstream: Output,
    pub ours: Output,
}

/// What every comparison suite starts from: a secured apiserver in its own temp dir (kept
/// alive by `cluster`) and the two kubectls for it.
pub struct Fixture {
    pub cluster: SecureCluster,
    pub cmp: Comparison,
}

impl Fixture {
    /// Starts the cluster and creates the namespaces `<name>-up` and `<name>-ours`.
    pub async fn start(name: &str) -> Self {
        Self::start_with(name, &[]).await
    }

    /// [`Fixture::start`] with extra apiserver flags.
    pub async fn start_with(name: &str, apiserver_flags: &[&str]) -> Self {
        let cluster = SecureCluster::start(apiserver_flags).await;
        let cmp = Comparison::for_apiserver(cluster.dir(), &cluster.server, name);
        Fixture { cluster, cmp }
    }
}

/// The two kubectls and their namespaces.
pub struct Comparison {
    pub upstream: Kubectl,
    pub ours: Kubectl,
    pub ns_upstream: String,
    pub ns_ours: String,
}

impl Comparison {
    /// Both kubectls against `server` (trusting `ca_file`, token `e2e`); creates the two
    /// namespaces.
    pub fn new(dir: &Path, server: &str, ca_file: &Path, name: &str) -> Self {
        let upstream = Kubectl::upstream(&dir.join("kubectl-upstream"), server, ca_file);
        let ours = Kubectl::new(
            &crate::bin("kubectl"),
            &dir.join("kubectl-ours"),
            server,
            ca_file,
        );
        let cmp = Comparison {
            upstream,
            ours,
            ns_upstream: format!("{name}-up"),
            ns_ours: format!("{name}-ours"),
        };
        for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
            cmp.upstream.ok(&["create", "namespace", ns]);
        }
        cmp
    }

    /// [`Comparison::new`] for a test's own apiserver, the kubectls' files in `dir`.
    pub fn for_apiserver(dir: &Path, server: &ApiServer, name: &str) -> Self {
        Self::new(dir, &server.url(), &server.ca_file(), name)
    }

    /// Runs `args` in each namespace and asserts the same exit status, stdout and stderr.
    pub fn step(&self, args: &[&str]) -> Outcome {
        self.step_with(args, "", Mode::Exact)
    }

    /// [`Comparison::step`] comparing tables.
    pub fn step_table(&self, args: &[&str]) -> Outcome {
        self.step_with(args, "", Mode::Table)
    }

    /// A step with `stdin` and a comparison mode. `{ns}` in an argument becomes the run's
    /// namespace.
    pub fn step_with(&self, args: &[&str], stdin: &str, mode: Mode) -> Outcome {
        let run = |kubectl: &Kubectl, ns: &str| {
            let mut full: Vec<String> = vec!["-n".into(), ns.into()];
            full.extend(args.iter().map(|a| a.replace("{ns}", ns)));
            let refs: Vec<&str> = full.iter().map(String::as_str).collect();
            kubectl.run_with_stdin(&refs, stdin)
        };
        // The two namespaces are independent, so both kubectls run at once.
        let (upstream, ours) = std::thread::scope(|s| {
            let up = s.spawn(|| run(&self.upstream, &self.ns_upstream));
            let ours = run(&self.ours, &self.ns_ours);
            (up.join().expect("the upstream kubectl thread"), ours)
        });
        let outcome = Outcome { upstream, ours };
        self.check(args, &outcome, mode, true);
        outcome
    }

    /// Runs `args` unchanged (no namespace) with both and compares: for read-only commands
    /// over shared state (`-A`, cluster-scoped types, error paths).
    pub fn shared(&self, args: &[&str], mode: Mode) -> Outcome {
        let outcome = Outcome {
            upstream: self.upstream.run(args),
            ours: self.ours.run(args),
        };
        self.check(args, &outcome, mode, false);
        outcome
    }

    fn check(&self, args: &[&str], outcome: &Outcome, mode: Mode, namespaced: bool) {
        let norm = |text: &str, ns: &str| {
            let text = if namespaced {
                replace_word(text, ns, "NS")
            } else {
                text.to_owned()
            };
            match mode {
                Mode::Table => normalize_table(&normalize_identity(&text)),
                _ => normalize_identity(&text),
            }
        };
        let (up, ours) = (&outcome.upstream, &outcome.ours);
        let what = format!("kubectl {}", args.join(" "));
        assert_eq!(
            up.success, ours.success,
            "{what}: exit status differs\nupstream stdout:\n{}\nupstream stderr:\n{}\nours stdout:\n{}\nours stderr:\n{}",
            up.stdout, up.stderr, ours.stdout, ours.stderr
        );
        let (up_out, our_out) = (
            norm(&up.stdout, &self.ns_upstream),
            norm(&ours.stdout, &self.ns_ours),
        );
        assert_eq!(
            our_out, up_out,
            "{what}: stdout differs (left ours, right upstream)"
        );
        let (up_err, our_err) = (
            norm(&up.stderr, &self.ns_upstream),
            norm(&ours.stderr, &self.ns_ours),
        );
        if mode == Mode::LastStderrLine {
            let last = |s: &str| s.lines().last().unwrap_or("").to_owned();
            assert_eq!(
                last(&our_err),
                last(&up_err),
                "{what}: last stderr line differs"
            );
        } else {
            assert_eq!(
                our_err, up_err,
                "{what}: stderr differs (left ours, right upstream)"
            );
        }
    }

    /// Asserts both namespaces hold the same objects of `types` (e.g. `configmaps,deploy`).
    pub fn assert_same_state(&self, types: &str) {
        let dump = |ns: &str| {
            let out = self.upstream.ok(&["get", types, "-n", ns, "-o", "yaml"]);
            normalize_identity(&replace_word(&out, ns, "NS"))
        };
        let (ours, upstream) = std::thread::scope(|s| {
            let ours = s.spawn(|| dump(&self.ns_ours));
            let upstream = dump(&self.ns_upstream);
            (ours.join().expect("the state dump thread"), upstream)
        });
        assert_eq!(
            ours, upstream,
            "the cluster state after our kubectl (left) differs from upstream's (right) for {types}"
        );
    }
}

/// Replaces occurrences of `word` not inside a longer name.
pub fn replace_word(text: &str, word: &str, with: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().last();
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        // `<ns>-child` still names the namespace; `x-<ns>` and `<ns>x` do not.
        let continues = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if before.is_some_and(is_word) || after.is_some_and(continues) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Masks the fields two equal objects cannot share: uid, resourceVersion, timestamps, and
/// allocated addresses (a Service's cluster IP).
pub fn normalize_identity(text: &str) -> String {
    mask_ipv4(&mask_keys(text))
}

/// IPv4 addresses become `IP`.
fn mask_ipv4(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_token = i == 0 || !(chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '.');
        if starts_token && chars[i].is_ascii_digit() {
            let mut j = i;
            let mut dots = 0;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                dots += usize::from(chars[j] == '.');
                j += 1;
            }
            let token: String = chars[i..j].iter().collect();
            let ends_token = j == chars.len() || !chars[j].is_ascii_alphanumeric();
            if dots == 3 && ends_token && token.parse::<std::net::Ipv4Addr>().is_ok() {
                out.push_str("IP");
            } else {
                out.push_str(&token);
            }
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn mask_keys(text: &str) -> String {
    const KEYS: &[&str] = &[
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "time",
    ];
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start().trim_start_matches("- ");
        let key = trimmed.trim_start_matches('"');
        let masked = KEYS.iter().find_map(|k| {
            let rest = key.strip_prefix(k)?;
            let rest = rest.strip_prefix('"').unwrap_or(rest);
            rest.starts_with(':').then_some(k)
        });
        match masked {
            Some(k) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                let comma = if line.trim_end().ends_with(',') {
                    ","
                } else {
                    ""
                };
                out.push_str(&format!("{indent}{k}: X{comma}\n"));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Collapses runs of spaces and masks AGE-like cells (`5s`, `3m2s`, `4d`).
pub fn normalize_table(text: &str) -> String {
    text.lines()
        .map(|line| {
            line.split_whitespace()
                .map(|cell| if is_age(cell) { "AGE" } else { cell })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_age(cell: &str) -> bool {
    let mut digits = false;
    let mut units = 0;
    for c in cell.chars() {
        if c.is_ascii_digit() {
            digits = true;
        } else if "smhdy".contains(c) && digits {
            digits = false;
            units += 1;
        } else {
            return false;
        }
    }
    units > 0 && !digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        assert_eq!(
            replace_word("ns-up x-ns-up ns-upx ns-up-a \"ns-up\"", "ns-up", "NS"),
            "NS x-ns-up ns-upx NS-a \"NS\""
        );
        assert_eq!(
            normalize_identity("  uid: abc\n    \"resourceVersion\": \"12\",\n  name: a\n"),
            "  uid: X\n    resourceVersion: X,\n  name: a\n"
        );
        assert_eq!(
            normalize_table("NAME   AGE\na      5m3s\nb      12s"),
            "NAME AGE\na AGE\nb AGE"
        );
        assert_eq!(
            mask_ipv4("clusterIP: 10.0.0.61\nv1.33.0 127.0.0.1:1"),
            "clusterIP: IP\nv1.33.0 IP:1"
        );
        assert!(!is_age("s5"));
        assert!(!is_age("web"));
    }
}
