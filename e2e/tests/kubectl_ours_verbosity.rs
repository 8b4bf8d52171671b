//! `-v` as upstream's kubectl takes and uses it: a global flag accepted before, after or
//! between a command's arguments, and at `-v=6` one klog line per request
//! (`round_trippers.go] "Response" verb=... url=... status=... milliseconds=...`). Both kubectls
//! run the same commands on the same cluster, each in its own namespace; the request lines must
//! be the same once what differs between two runs (time, pid, file:line, milliseconds, the
//! namespace) is masked.

use e2e::kubectl::{Kubectl, Output};
use e2e::kubectl_compare::{Comparison, normalize_identity, replace_word};
use e2e::secure::SecureCluster;

/// The `"Response"` lines of a run's stderr, masked and sorted (requests a command sends at
/// once, such as discovery's, finish in any order).
fn responses(stderr: &str, ns: &str) -> Vec<String> {
    let mut lines: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("round_trippers.go:") && l.contains("] \"Response\""))
        .map(|l| {
            assert_klog_header(l);
            let body = &l[l.find("] ").expect("a klog header") + 2..];
            let body = replace_word(body, ns, "NS");
            let at = body
                .rfind(" milliseconds=")
                .expect("the milliseconds field");
            let millis = &body[at + " milliseconds=".len()..];
            assert!(
                millis.chars().all(|c| c.is_ascii_digit()) && !millis.is_empty(),
                "{l}"
            );
            format!("{} milliseconds=N", &body[..at])
        })
        .collect();
    lines.sort();
    lines
}

/// klog's header: `Immdd hh:mm:ss.uuuuuu <pid right-aligned in 7> file.go:line] `.
fn assert_klog_header(line: &str) {
    let b = line.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    let ok = b.len() > 31
        && b[0] == b'I'
        && digits(1..5)
        && b[5] == b' '
        && digits(6..8)
        && b[8] == b':'
        && digits(9..11)
        && b[11] == b':'
        && digits(12..14)
        && b[14] == b'.'
        && digits(15..21)
        && b[21] == b' '
        && line[22..29]
            .trim_start()
            .chars()
            .all(|c| c.is_ascii_digit())
        && b[29] == b' '
        && line[30..]
            .split_once("] ")
            .and_then(|(at, _)| at.split_once(".go:"))
            .is_some_and(|(_, n)| n.chars().all(|c| c.is_ascii_digit()));
    assert!(ok, "not a klog header: {line:?}");
}

/// Whether `line` starts a klog entry (any severity) rather than continuing one.
fn is_klog_line(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 5 && b"IWEF".contains(&b[0]) && b[1..5].iter().all(u8::is_ascii_digit)
}

/// Runs `args` (with `-n <ns>` first) with both kubectls.
fn both(cmp: &Comparison, args: &[&str]) -> (Output, Output) {
    let run = |k: &Kubectl, ns: &str| {
        let mut full = vec!["-n", ns];
        full.extend_from_slice(args);
        k.run(&full)
    };
    (
        run(&cmp.upstream, &cmp.ns_upstream),
        run(&cmp.ours, &cmp.ns_ours),
    )
}

/// The same exit status, stdout and request lines from both kubectls.
fn same_requests(cmp: &Comparison, args: &[&str]) -> Vec<String> {
    let (up, ours) = both(cmp, args);
    let what = format!("kubectl {}", args.join(" "));
    assert_eq!(
        up.success, ours.success,
        "{what}: exit status\nupstream: {}\nours: {}",
        up.stderr, ours.stderr
    );
    assert_eq!(
        normalize_identity(&replace_word(&ours.stdout, &cmp.ns_ours, "NS")),
        normalize_identity(&replace_word(&up.stdout, &cmp.ns_upstream, "NS")),
        "{what}: stdout (left ours)"
    );
    let (up_lines, our_lines) = (
        responses(&up.stderr, &cmp.ns_upstream),
        responses(&ours.stderr, &cmp.ns_ours),
    );
    assert_eq!(
        our_lines, up_lines,
        "{what}: request lines (left ours)\nours:\n{}",
        ours.stderr
    );
    our_lines
}

/// A cluster with configmap `a` in each kubectl's namespace (`name`-up, `name`-ours), both
/// discovery caches warm: discovery's cold requests differ in their query (upstream adds
/// `?timeout=32s`), so the lines logged after this are the commands' own requests.
async fn warm_cluster(name: &str) -> (SecureCluster, Comparison) {
    let cluster = SecureCluster::start(&[]).await;
    let cmp = Comparison::new(
        cluster.dir(),
        &cluster.server.url(),
        &cluster.server.ca_file(),
        name,
    );
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream
            .ok(&["create", "configmap", "a", "--from-literal=k=v", "-n", ns]);
    }
    let (up, ours) = both(&cmp, &["get", "configmaps", "-o", "name"]);
    assert!(up.success && ours.success, "{}{}", up.stderr, ours.stderr);
    (cluster, cmp)
}

#[tokio::test(flavor = "multi_thread")]
async fn v_anywhere_logs_the_same_requests() {
    let (cluster, cmp) = warm_cluster("verbosity").await;
    let dir = cluster.dir().to_path_buf();

    let get = ["get", "configmap", "a", "-o", "name"];
    let mut seen = Vec::new();
    // Every position but between `-o` and its value.
    for at in (0..=get.len()).filter(|at| *at != 4) {
        for flag in [&["-v=6"][..], &["-v", "6"], &["--v=6"]] {
            let mut args: Vec<&str> = get.to_vec();
            for (i, f) in flag.iter().enumerate() {
                args.insert(at + i, f);
            }
            let lines = same_requests(&cmp, &args);
            assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
            seen.push(lines);
        }
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    assert!(
        seen[0][0].starts_with("\"Response\" verb=\"GET\" url=\"https://127.0.0.1:")
            && seen[0][0]
                .ends_with("/api/v1/namespaces/NS/configmaps/a\" status=\"200 OK\" milliseconds=N"),
        "{:?}",
        seen[0]
    );

    // Lists, gets and deletes: the same requests as upstream's, in the same words.
    std::fs::write(
        dir.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v\n",
    )
    .unwrap();
    let manifest = dir.join("cm.yaml").display().to_string();
    // Created by upstream's kubectl: our `create -f` and `apply` still differ in their
    // requests (upstream reads the OpenAPI v3 document first).
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream.ok(&["create", "-f", &manifest, "-n", ns]);
    }
    // A pod (no node runs it): `logs` streams its body outside the JSON requests.
    std::fs::write(
        dir.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
    )
    .unwrap();
    let pod = dir.join("pod.yaml").display().to_string();
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        // No controller manager makes the namespace's default service account.
        cmp.upstream
            .ok(&["create", "serviceaccount", "default", "-n", ns]);
        cmp.upstream.ok(&["create", "-f", &pod, "-n", ns]);
        cmp.upstream
            .ok(&["create", "deployment", "web", "--image=busybox", "-n", ns]);
    }
    for args in [
        &["logs", "p", "-v=6"][..],
        &["create", "configmap", "gen", "--from-literal=x=y", "-v=6"],
        &["label", "configmap", "gen", "x=y", "-v=6"],
        &[
            "annotate",
            "configmap",
            "gen",
            "x=y",
            "--dry-run=server",
            "-v=6",
        ],
        &["scale", "deployment", "web", "--replicas=2", "-v=6"],
        &[
            "scale",
            "deployment",
            "web",
            "--replicas=3",
            "--current-replicas=2",
            "-v=6",
        ],
        &["get", "configmap", "nope", "-n", "nosuch-ns", "-v=6"],
        &["get", "configmaps", "-o", "name", "-v=6"],
        &["get", "configmaps", "a", "-o", "yaml", "-v=6"],
        &["delete", "-f", &manifest, "-v=6"],
        &["delete", "configmap", "a", "-v", "6"],
        &["get", "-v=6", "all", "-o", "name"],
    ] {
        let lines = same_requests(&cmp, args);
        assert!(!lines.is_empty(), "{args:?}");
    }

    // The config file line, then nothing at -v=0.
    let (up, ours) = both(&cmp, &["get", "configmaps", "-o", "name", "-v=6"]);
    let loaded = |o: &Output, k: &Kubectl| {
        let path = k.dir().join("kubeconfig").display().to_string();
        o.stderr
            .lines()
            .filter(|l| l.contains("loader.go:"))
            .map(|l| {
                assert_klog_header(l);
                l[l.find("] ").unwrap() + 2..].replace(&path, "KUBECONFIG")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        loaded(&ours, &cmp.ours),
        loaded(&up, &cmp.upstream),
        "{}",
        ours.stderr
    );
    assert_eq!(
        loaded(&ours, &cmp.ours),
        ["Config loaded from file:  KUBECONFIG"]
    );
    let (up, ours) = both(&cmp, &["get", "configmaps", "-o", "name"]);
    assert_eq!((up.stderr.as_str(), ours.stderr.as_str()), ("", ""));
}

#[tokio::test(flavor = "multi_thread")]
async fn higher_levels_add_headers_and_bodies() {
    let (_cluster, cmp) = warm_cluster("levels").await;
    // The shape of each level's lines, as upstream's: which messages, which keys, which header
    // names (the values differ: user agent, audit ids, dates).
    let shape = |stderr: &str| -> Vec<String> {
        // The request log's lines (and their continuation lines) only: upstream's printers
        // log their own fallbacks at these levels too.
        let mut in_request_log = false;
        stderr
            .lines()
            .filter(|l| {
                if is_klog_line(l) {
                    in_request_log = l.contains(" round_trippers.go:") || l.contains(" helper.go:");
                }
                in_request_log
            })
            .map(|l| {
                // The keys of `key=value` pairs; upstream's -v=9 adds per-phase timings
                // (`dialMilliseconds=`...) that ours does not measure.
                let keys = |text: &str| {
                    text.split(' ')
                        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                        .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphabetic()))
                        .filter(|k| *k == "milliseconds" || !k.ends_with("Milliseconds"))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                let trimmed = l.trim();
                if is_klog_line(l) {
                    assert_klog_header(l);
                    let body = &l[l.find("] ").unwrap() + 2..];
                    let msg_end = body[1..].find('"').map_or(body.len(), |i| i + 2);
                    format!("{} {}", &body[..msg_end], keys(&body[msg_end..]))
                } else if let Some(rest) = trimmed.strip_prefix('>') {
                    format!("> {}", keys(rest))
                } else if trimmed.starts_with("curl ") {
                    // Upstream's curl line ranges over a Go map: its header order varies.
                    "curl".to_owned()
                } else if let Some((name, _)) = trimmed.split_once(": ") {
                    format!("header {name}")
                } else {
                    l.trim().to_owned()
                }
            })
            .collect()
    };
    for level in ["7", "8", "9"] {
        let (up, ours) = both(&cmp, &["get", "configmap", "a", "-o", "name", "-v", level]);
        assert!(up.success && ours.success, "{}{}", up.stderr, ours.stderr);
        let (up_shape, our_shape) = (shape(&up.stderr), shape(&ours.stderr));
        // Upstream's -v=9 adds a dial trace on a fresh connection; ours has no such hook.
        let up_shape: Vec<String> = up_shape
            .into_iter()
            .filter(|l| !l.contains("HTTP Trace"))
            .collect();
        assert_eq!(
            our_shape, up_shape,
            "-v={level} (left ours)\nours:\n{}\nupstream:\n{}",
            ours.stderr, up.stderr
        );
        assert!(
            ours.stderr.contains("Authorization: Bearer <masked>"),
            "{}",
            ours.stderr
        );
        assert!(!ours.stderr.contains(" e2e\n"), "the token leaked");
    }
}
