//! Our kubectl's streaming commands against upstream's on one real cluster (our apiserver,
//! containerd, our kubelet running busybox pods): `logs` (flags, several containers,
//! selectors, workloads), `exec` (output, stdin, exit codes, a TTY through `script`),
//! `attach`, `port-forward`, `cp` both ways and `proxy`, each run with both kubectls and the
//! results compared.

use e2e::containerd::BUSYBOX_IMAGE;
use e2e::kubectl::Output;
use e2e::kubectl_compare::{Comparison, Mode};
use e2e::node_fixture::Node;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hang guard for polls, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);
const NODE: &str = "stream-node";
const NS: &str = "stream";

struct Cluster {
    node: Node,
    cmp: Comparison,
    dir: PathBuf,
}

async fn cluster(dir: &Path) -> Cluster {
    let (node, cmp) = Node::with_kubectls(dir, NODE, NS).await;
    Cluster {
        node,
        cmp,
        dir: dir.to_path_buf(),
    }
}

impl Cluster {
    fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match check() {
                Ok(v) => return v,
                Err(last) if Instant::now() > deadline => panic!(
                    "timed out waiting for {what}: {last}\n----- kubelet log -----\n{}",
                    self.node.kubelet_log_tail(60)
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn apply(&self, name: &str, manifest: &str) {
        let path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&path, manifest).unwrap();
        self.cmp
            .upstream
            .ok(&["apply", "-n", NS, "-f", path.to_str().unwrap()]);
    }

    /// A busybox pod on the node; `containers` are `(name, script)`.
    fn pod(&self, name: &str, meta: &str, extra: &str, containers: &[(&str, &str)]) {
        let mut manifest = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{meta}spec:\n  nodeName: {NODE}\n  \
             terminationGracePeriodSeconds: 1\n{extra}  containers:\n"
        );
        for (c, script) in containers {
            manifest.push_str(&format!(
                "  - name: {c}\n    image: {BUSYBOX_IMAGE}\n    imagePullPolicy: Never\n    \
                 command: [\"sh\", \"-c\", {script:?}]\n"
            ));
        }
        self.apply(name, &manifest);
    }

    /// Waits until `jsonpath` of pod `name` satisfies `ok`.
    fn wait_pod(&self, name: &str, jsonpath: &str, ok: impl Fn(&str) -> bool) {
        self.wait(&format!("pod {name} {jsonpath}"), || {
            let out = self.cmp.upstream.run(&[
                "get",
                "pod",
                "-n",
                NS,
                name,
                "-o",
                &format!("jsonpath={jsonpath}"),
            ]);
            ok(out.stdout.trim())
                .then_some(())
                .ok_or(out.stdout + &out.stderr)
        });
    }

    /// Both kubectls with the same arguments in the shared namespace; outputs must match.
    fn same(&self, args: &[&str]) -> Output {
        self.same_with(args, Mode::Exact)
    }

    fn same_with(&self, args: &[&str], mode: Mode) -> Output {
        let mut full = vec!["-n", NS];
        full.extend_from_slice(args);
        self.cmp.shared(&full, mode).ours
    }

    /// As [`Cluster::same`] for output whose line order upstream leaves to chance (it keeps
    /// several containers' requests in a Go map): the sorted lines must match.
    fn same_lines(&self, args: &[&str]) {
        let mut full = vec!["-n", NS];
        full.extend_from_slice(args);
        let (up, ours) = (self.cmp.upstream.run(&full), self.cmp.ours.run(&full));
        let sorted = |s: &str| {
            let mut l: Vec<String> = s.lines().map(str::to_owned).collect();
            l.sort();
            l
        };
        assert_eq!(ours.success, up.success, "{args:?}: {ours:?} {up:?}");
        assert_eq!(
            sorted(&ours.stdout),
            sorted(&up.stdout),
            "{args:?} (left ours)"
        );
        assert_eq!(ours.stderr, up.stderr, "{args:?} (left ours)");
    }

    /// Runs `shell` (for exit codes, stdin and TTYs) with the kubectl of `which` ("upstream"
    /// or "ours") as `$KUBECTL`.
    fn raw(&self, which: &str, shell: &str) -> (i32, String, String) {
        let kubectl = match which {
            "upstream" => &self.cmp.upstream,
            _ => &self.cmp.ours,
        };
        // In the test's own directory: scripts write files (cp, big inputs) where they run.
        kubectl.shell(&self.dir, shell, None)
    }

    /// [`Cluster::raw`] with both kubectls; the results must match.
    fn same_raw(&self, shell: &str) -> (i32, String, String) {
        let up = self.raw("upstream", shell);
        let ours = self.raw("ours", shell);
        assert_eq!(ours, up, "{shell}: (left ours, right upstream)");
        ours
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn our_streaming_commands_match_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cluster(tmp.path()).await;
    let started = Instant::now();

    c.pod(
        "talker",
        "  labels: {app: talker}\n",
        "",
        &[("main", "echo one; echo two; echo three; exec sleep 3600")],
    );
    c.pod(
        "duo",
        "  labels: {app: duo}\n",
        "",
        &[
            ("a", "echo a1; echo a2; exec sleep 3600"),
            ("b", "echo b1; exec sleep 3600"),
        ],
    );
    c.pod(
        "annotated",
        "  annotations: {kubectl.kubernetes.io/default-container: b}\n",
        "",
        &[
            ("a", "echo from-a; exec sleep 3600"),
            ("b", "echo from-b; exec sleep 3600"),
        ],
    );
    c.pod(
        "done",
        "",
        "  restartPolicy: Never\n",
        &[("main", "echo finished; echo and-gone")],
    );
    c.pod(
        "web",
        "  labels: {app: web}\n",
        "",
        &[(
            "main",
            "mkdir -p /www && echo hello-through-port-forward > /www/index.html && exec httpd -f -p 8080 -h /www",
        )],
    );
    c.pod(
        "ticker",
        "",
        "",
        &[(
            "main",
            "echo start; while true; do if [ -f /tmp/go ]; then echo go; rm /tmp/go; fi; sleep 0.2; done",
        )],
    );
    c.apply(
        "svc",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  \
         ports:\n  - port: 80\n    targetPort: 8080\n",
    );
    // A Deployment object without a controller: only its selector matters to `logs deploy/`.
    c.apply(
        "deploy",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: talk\nspec:\n  selector:\n    \
         matchLabels: {app: talker}\n  template:\n    metadata:\n      labels: {app: talker}\n    \
         spec:\n      containers:\n      - name: main\n        image: x\n",
    );
    for pod in ["talker", "duo", "annotated", "web", "ticker"] {
        c.wait_pod(pod, "{.status.phase}", |p| p == "Running");
    }
    c.wait_pod("done", "{.status.phase}", |p| p == "Succeeded");
    c.wait("talker's three lines", || {
        let out = c.cmp.upstream.run(&["logs", "-n", NS, "talker"]);
        (out.stdout == "one\ntwo\nthree\n")
            .then_some(())
            .ok_or(out.stdout + &out.stderr)
    });
    c.wait("duo's lines", || {
        let out = c
            .cmp
            .upstream
            .run(&["logs", "-n", NS, "duo", "--all-containers"]);
        (out.stdout == "a1\na2\nb1\n")
            .then_some(())
            .ok_or(out.stdout + &out.stderr)
    });
    eprintln!("cluster and pods ready after {:?}", started.elapsed());

    // logs: flags, containers, selectors, workloads, errors.
    assert_eq!(c.same(&["logs", "talker"]).stdout, "one\ntwo\nthree\n");
    for args in [
        &["logs", "talker", "--tail=1"][..],
        &["logs", "talker", "--tail=2", "-c", "main"],
        &["logs", "talker", "main"],
        &["logs", "talker", "--timestamps"],
        &["logs", "talker", "--since=1h"],
        &["logs", "talker", "--since-time=2000-01-01T00:00:00Z"],
        &["logs", "talker", "--limit-bytes=5"],
        &["logs", "pod/talker"],
        &["logs", "deploy/talk"],
        &["logs", "svc/web"],
        &["logs", "duo"],
        &["logs", "duo", "-c", "b"],
        &["logs", "annotated"],
        &["logs", "-l", "app=talker", "--tail=2"],
        &["logs", "-f", "done"],
        &["logs", "nope"],
        &["logs", "talker", "-c", "nope"],
        &["logs", "talker", "--previous"],
        &[
            "logs",
            "talker",
            "--since=1h",
            "--since-time=2000-01-01T00:00:00Z",
        ],
        &["logs", "talker", "--tail=-2"],
        &["logs", "deploy/talk", "--all-pods"],
        &["logs", "talker", "--pod-running-timeout=zz"],
        &["logs", "talker", "--since=5"],
        &["logs", "talker", "--since-time=foo"],
        &["logs", "talker", "--since-time=2000-01-01T01:00:00+01:00"],
        &["logs", "duo", "-c", "a", "--all-containers"],
    ] {
        c.same(args);
    }
    c.same_with(&["logs"], Mode::LastStderrLine);
    for args in [
        &["logs", "duo", "--all-containers"][..],
        &["logs", "duo", "--all-containers", "--prefix"],
        &["logs", "-l", "app=duo", "--all-containers", "--prefix"],
        &[
            "logs",
            "-f",
            "duo",
            "--all-containers",
            "--max-log-requests=1",
        ],
    ] {
        c.same_lines(args);
    }

    // exec: output, stderr, exit code, stdin, defaulted container, errors.
    assert_eq!(
        c.same(&["exec", "talker", "--", "echo", "hi"]).stdout,
        "hi\n"
    );
    c.same(&["exec", "duo", "--", "sh", "-c", "echo out; echo err >&2"]);
    c.same(&["exec", "duo", "-c", "b", "--", "hostname"]);
    c.same(&["exec", "nope", "--", "true"]);
    c.same(&["exec", "deploy/talk", "--", "echo", "via-deployment"]);
    c.same(&["exec", "talker", "--pod-running-timeout=0s", "--", "true"]);
    c.same(&["attach", "talker", "--pod-running-timeout=0s"]);
    c.same(&["exec", "talker", "-c", "nope", "--", "true"]);
    // The runtime's error names its exec id, which differs between the two runs.
    let mask_id = |o: Output| {
        let mut words: Vec<String> = o.stderr.split('"').map(str::to_owned).collect();
        for w in &mut words {
            if w.len() == 64 && w.chars().all(|ch| ch.is_ascii_hexdigit()) {
                *w = "ID".to_owned();
            }
        }
        (o.success, o.stdout, words.join("\""))
    };
    let args = ["-n", NS, "exec", "talker", "--", "no-such-binary"];
    let (up, ours) = (
        mask_id(c.cmp.upstream.run(&args)),
        mask_id(c.cmp.ours.run(&args)),
    );
    assert_eq!(ours, up, "exec of a missing binary (left ours)");
    assert!(ours.2.contains("start exec \"ID\""), "{ours:?}");
    c.same(&["exec", "talker"]);
    c.same(&["exec", "done", "--", "true"]);
    let (code, _, err) = c.same_raw(&format!(
        "\"$KUBECTL\" -n {NS} exec talker -- sh -c 'echo partial; exit 7'"
    ));
    assert_eq!(
        (code, err.as_str()),
        (7, "command terminated with exit code 7\n")
    );
    let (code, out, _) = c.same_raw(&format!(
        "printf 'line1\\nline2\\n' | \"$KUBECTL\" -n {NS} exec -i talker -- sh -c 'cat; echo eof'"
    ));
    assert_eq!((code, out.as_str()), (0, "line1\nline2\neof\n"));
    c.same_raw(&format!(
        "head -c 300000 /dev/urandom | base64 > big.txt; \"$KUBECTL\" -n {NS} exec -i talker -- wc -c < big.txt"
    ));
    // -t without a terminal on stdin: upstream's note, then a plain session.
    c.same_raw(&format!(
        "\"$KUBECTL\" -n {NS} exec -i -t talker -- echo no-tty < /dev/null"
    ));
    // A real TTY through script(1): the remote side sees a terminal of our size (the pts
    // number is the container's next free one, so it is masked).
    let tty_script = format!(
        "script -qec 'stty cols 91 rows 17; \"$KUBECTL\" -n {NS} exec -it talker -- sh -c \"tty; stty size\"' /dev/null"
    );
    let mask = |(code, out, err): (i32, String, String)| {
        let out: String = out
            .split("/dev/pts/")
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part.to_owned()
                } else {
                    format!(
                        "/dev/pts/N{}",
                        part.trim_start_matches(|ch: char| ch.is_ascii_digit())
                    )
                }
            })
            .collect();
        (code, out, err)
    };
    let (up, ours) = (
        mask(c.raw("upstream", &tty_script)),
        mask(c.raw("ours", &tty_script)),
    );
    // The remote `stty size` sometimes fails in the container ("No child processes", with
    // either kubectl: containerd starts the process before it applies the first resize, and
    // busybox's stty, finding 0 rows, prints the errno sh's wait left); when it answers, the
    // size must be the local terminal's.
    // The exit codes are compared only when both runs' stty fared alike: the code may follow
    // stty's, and only one run losing that race is no difference between the kubectls.
    if up.1.contains("stty:") == ours.1.contains("stty:") {
        assert_eq!(ours.0, up.0, "exec -it exit codes (left ours)");
    }
    for out in [&up.1, &ours.1] {
        assert!(out.contains("/dev/pts/N\r\n"), "{out:?}");
        assert!(out.contains("17 91") || out.contains("stty:"), "{out:?}");
    }

    // attach and logs -f: lines the container writes after they started come through. The
    // ticker prints `go` whenever /tmp/go appears; it is touched until every stream saw one.
    let mut attached = Vec::new();
    let mut followed = Vec::new();
    for k in [&c.cmp.upstream, &c.cmp.ours] {
        attached.push(k.spawn(&["-n", NS, "attach", "ticker"]));
        followed.push(k.spawn(&["-n", NS, "logs", "-f", "ticker"]));
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        c.cmp
            .upstream
            .ok(&["-n", NS, "exec", "ticker", "--", "touch", "/tmp/go"]);
        let outs: Vec<String> = attached
            .iter()
            .chain(&followed)
            .map(|b| b.stdout())
            .collect();
        if outs.iter().all(|o| o.contains("go\n")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "attach/logs -f never saw a line: {outs:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for a in &attached {
        let out = a.stdout();
        assert!(out.lines().all(|l| l == "go"), "attach: {out:?}");
    }
    for f in &followed {
        let out = f.stdout();
        assert!(out.starts_with("start\ngo\n"), "logs -f: {out:?}");
    }
    drop(attached);
    drop(followed);
    c.same(&["attach", "done"]);
    c.same(&["attach", "talker", "-c", "nope"]);

    // port-forward: pod, service (its targetPort) and deployment, same body both ways.
    // Both kubectls listen on 127.0.0.1 and, where the host has it, on [::1].
    let listeners = 1 + usize::from(std::net::TcpListener::bind("[::1]:0").is_ok());
    for target in ["pod/web", "svc/web", "web"] {
        let remote = if target == "svc/web" { "80" } else { "8080" };
        let mut bodies = Vec::new();
        let mut lines = Vec::new();
        for k in [&c.cmp.upstream, &c.cmp.ours] {
            let port = e2e::free_port();
            let mut fwd = k.spawn(&[
                "-n",
                NS,
                "port-forward",
                target,
                &format!("{port}:{remote}"),
            ]);
            // One line per listener, written one at a time: all of them before comparing.
            let out = fwd.wait_for(PATIENCE, "the forwarding lines", |o| {
                o.lines()
                    .filter(|l| l.starts_with("Forwarding from"))
                    .count()
                    == listeners
            });
            lines.push(out.replace(&port.to_string(), "PORT"));
            bodies.push(http_body(http_get_loopback(port, "/index.html").await));
            bodies.push(http_body(http_get_loopback(port, "/index.html").await));
            let out = fwd.wait_for(PATIENCE, "the connection notes", |o| {
                o.matches("Handling connection").count() == 2
            });
            lines.push(out.replace(&port.to_string(), "PORT"));
        }
        assert_eq!(bodies[0], "hello-through-port-forward\n");
        assert!(bodies.iter().all(|b| *b == bodies[0]), "{bodies:?}");
        assert_eq!(lines[0], lines[2], "{target}: the first lines");
        assert_eq!(
            lines[1], lines[3],
            "{target}: the lines after two connections"
        );
    }
    // --address: only the addresses asked for.
    for k in [&c.cmp.upstream, &c.cmp.ours] {
        let port = e2e::free_port();
        let mut fwd = k.spawn(&[
            "-n",
            NS,
            "port-forward",
            "--address=127.0.0.1",
            "pod/web",
            &format!("{port}:8080"),
        ]);
        let out = fwd.wait_for(PATIENCE, "the forwarding line", |o| {
            o.contains("Forwarding")
        });
        assert_eq!(out, format!("Forwarding from 127.0.0.1:{port} -> 8080\n"));
        assert_eq!(
            http_body(http_get_loopback(port, "/index.html").await),
            "hello-through-port-forward\n"
        );
    }
    c.same(&["port-forward", "nope", "1234:80"]);
    c.same(&["port-forward", "web"]);

    // cp: a file and a directory in, then out again; the copies must be the same.
    let src = c.dir.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(src.join("sub/b.txt"), "beta\n").unwrap();
    for which in ["upstream", "ours"] {
        c.raw(which, &format!(
            "\"$KUBECTL\" -n {NS} cp {src}/a.txt talker:/tmp/{which}-a.txt && \"$KUBECTL\" -n {NS} cp {src} talker:/tmp/{which}-dir",
            src = src.display()
        ));
    }
    c.same(&[
        "exec",
        "talker",
        "--",
        "sh",
        "-c",
        "cat /tmp/upstream-a.txt; cat /tmp/ours-a.txt",
    ]);
    let listing = c.same(&[
        "exec", "talker", "--", "sh", "-c",
        "cd /tmp/upstream-dir && find . | sort && cat sub/b.txt && cd /tmp/ours-dir && find . | sort && cat sub/b.txt",
    ]);
    let (up_half, our_half) = listing.stdout.split_at(listing.stdout.len() / 2);
    assert_eq!(up_half, our_half, "the directory copied in");
    for which in ["upstream", "ours"] {
        let out = c.dir.join(format!("out-{which}"));
        let (code, _, err) = c.raw(which, &format!(
            "\"$KUBECTL\" -n {NS} cp talker:/tmp/upstream-dir {out} && \"$KUBECTL\" -n {NS} cp talker:/tmp/upstream-a.txt {out}/copied.txt",
            out = out.display()
        ));
        assert_eq!(code, 0, "{which}: {err}");
    }
    for rel in ["a.txt", "sub/b.txt", "copied.txt"] {
        let read = |which: &str| std::fs::read(c.dir.join(format!("out-{which}/{rel}"))).ok();
        assert_eq!(read("ours"), read("upstream"), "{rel}");
        assert!(read("ours").is_some(), "{rel}");
    }
    // Upstream does not wait for tar's status (whether its complaint shows is a race): a
    // missing source copies nothing and succeeds with both.
    for which in ["upstream", "ours"] {
        let (code, _, _) = c.raw(
            which,
            &format!("\"$KUBECTL\" -n {NS} cp talker:/nope nope-{which}"),
        );
        assert_eq!(code, 0, "{which}");
    }
    c.same(&["cp", "/nope", "talker:/tmp/x"]);
    c.same(&["cp", "a", "b"]);

    // proxy: /api through the local port, with both.
    let mut served = Vec::new();
    for k in [&c.cmp.upstream, &c.cmp.ours] {
        let port = e2e::free_port();
        let mut p = k.spawn(&["proxy", &format!("--port={port}")]);
        let line = p.wait_for(PATIENCE, "the serving line", |o| {
            o.contains("Starting to serve")
        });
        served.push(line.replace(&port.to_string(), "PORT"));
        let api = http_body(http_get_loopback(port, "/api").await);
        let pods =
            http_get_loopback(port, &format!("/api/v1/namespaces/{NS}/pods/talker/log")).await;
        served.push(api);
        served.push(http_body(pods));
    }
    assert_eq!(served[..3], served[3..], "proxy: (upstream, ours)");
    assert!(served[1].contains("\"APIVersions\""), "{}", served[1]);
    eprintln!("all steps done after {:?}", started.elapsed());
    drop(c);
}

fn http_body(response: String) -> String {
    response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or(response)
}

/// GET over plain HTTP/1.0 to 127.0.0.1:`port` (retried until the listener answers).
async fn http_get_loopback(port: u16, path: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let attempt = async {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
                .await?;
            let mut out = String::new();
            s.read_to_string(&mut out).await?;
            anyhow::Ok(out)
        };
        match tokio::time::timeout(Duration::from_secs(10), attempt).await {
            Ok(Ok(out)) if out.starts_with("HTTP/1.") => return out,
            other if Instant::now() > deadline => panic!("GET {path}: {other:?}"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
