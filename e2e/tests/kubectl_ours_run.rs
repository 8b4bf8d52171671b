//! Our kubectl against upstream's on one real cluster (our apiserver, scheduler and kubelet,
//! containerd running busybox): `run -i/-t/--rm/--attach` (stdin, exit codes, the deletion,
//! refused flag combinations), `get --show-managed-fields`, and `-f URL` served by a local
//! HTTP server in the test. Each case runs with both kubectls, each in its own namespace, and
//! exit codes, stdout and stderr must be the same.

use e2e::containerd::BUSYBOX_IMAGE;
use e2e::kubectl::Kubectl;
use e2e::kubectl_compare::{Comparison, Mode, normalize_identity, replace_word};
use e2e::node_fixture::Node;
use e2e::scheduler::Scheduler;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A hang guard for a kubectl run, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);
const TOKENS: &str = "e2e,e2e-admin,1000,\"system:masters\"\n";

struct Cluster {
    // Dropped in this order: scheduler, then the node (kubelet, containerd, apiserver).
    _scheduler: Scheduler,
    _node: Node,
    cmp: Comparison,
}

async fn cluster(dir: &Path) -> Cluster {
    let node = Node::start(dir, "run-node", TOKENS).await;
    let scheduler = Scheduler::start(&dir.join("scheduler"), &node.api, None, &[])
        .await
        .expect("starting the scheduler");
    let cmp = Comparison::for_apiserver(dir, &node.api, "run");
    // No node lifecycle controller runs to lift the not-ready taint admission put on the new
    // node: the test lifts it once the kubelet reports Ready, so the scheduler places pods.
    let deadline = Instant::now() + PATIENCE;
    let ready = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    while cmp
        .upstream
        .run(&["get", "node", "run-node", "-o", ready])
        .stdout
        != "True"
    {
        assert!(
            Instant::now() < deadline,
            "node run-node never became Ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    cmp.upstream
        .run(&["taint", "node", "run-node", "node.kubernetes.io/not-ready-"]);
    Cluster {
        _scheduler: scheduler,
        _node: node,
        cmp,
    }
}

/// One kubectl run: its exit code (None when killed by a signal), stdout and stderr.
#[derive(Debug, PartialEq)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(binary: &Path, kubectl: &Kubectl, args: &[String], stdin: &str) -> Ran {
    let dir = kubectl.dir();
    let mut child = Command::new(binary)
        .arg(format!("--cache-dir={}", dir.join("cache").display()))
        .args(args)
        .env("KUBECONFIG", dir.join("kubeconfig"))
        .env("HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting kubectl");
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(stdin.as_bytes());
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "kubectl {args:?} hung\nstdout:\n{}\nstderr:\n{}",
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    Ran {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

impl Cluster {
    /// Runs `args` (`{ns}` replaced) with both kubectls at once, each in its namespace, and
    /// asserts the same exit code and output once the namespace is normalised.
    fn same(&self, args: &[&str], stdin: &str) -> Ran {
        let go = |binary: &Path, kubectl: &Kubectl, ns: &str| {
            let mut full = vec!["-n".to_owned(), ns.to_owned()];
            full.extend(args.iter().map(|a| a.replace("{ns}", ns)));
            let mut ran = run(binary, kubectl, &full, stdin);
            ran.stdout = normalize_identity(&replace_word(&ran.stdout, ns, "NS"));
            ran.stderr = normalize_identity(&replace_word(&ran.stderr, ns, "NS"));
            ran
        };
        let (up, ours) = std::thread::scope(|s| {
            let up = s.spawn(|| {
                go(
                    Path::new("/usr/bin/kubectl"),
                    &self.cmp.upstream,
                    &self.cmp.ns_upstream,
                )
            });
            let ours = go(&e2e::bin("kubectl"), &self.cmp.ours, &self.cmp.ns_ours);
            (up.join().unwrap(), ours)
        });
        assert_eq!(
            ours, up,
            "kubectl {args:?}: ours (left) differs from upstream (right)"
        );
        ours
    }

    /// Asserts pod `name` is gone or being deleted in both namespaces (asked with upstream's
    /// kubectl, in one read: the kubelet may finish the deletion at any moment).
    fn pod_gone_in_both(&self, name: &str) {
        for ns in [&self.cmp.ns_upstream, &self.cmp.ns_ours] {
            let out = self.cmp.upstream.run(&[
                "get",
                "pod",
                name,
                "-n",
                ns,
                "--ignore-not-found",
                "-o",
                "jsonpath={.metadata.name}/{.metadata.deletionTimestamp}",
            ]);
            assert!(out.success, "{out:?}");
            // --rm deletes in the background: the pod may still be terminating.
            assert!(
                out.stdout.is_empty() || !out.stdout.ends_with('/'),
                "pod {ns}/{name} still there and not deleted: {out:?}"
            );
        }
    }
}

/// The `run` flags every case shares: the preloaded busybox image, never pulled.
fn run_args<'a>(name: &'a str, flags: &[&'a str], command: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        name,
        "--image",
        BUSYBOX_IMAGE,
        "--image-pull-policy=Never",
    ];
    args.extend_from_slice(flags);
    if !command.is_empty() {
        args.push("--");
        args.extend_from_slice(command);
    }
    args
}

#[tokio::test(flavor = "multi_thread")]
async fn run_attach_rm_managed_fields_and_urls_match_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cluster(tmp.path()).await;

    // stdin piped through the attached container, then --rm deletes the pod.
    let ran = c.same(
        &run_args("cat", &["-i", "--rm", "--restart=Never"], &["cat"]),
        "hi\nthere\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stdout.contains("hi\nthere\n"), "{ran:?}");
    c.pod_gone_in_both("cat");

    // The container's exit code becomes kubectl's (restartPolicy Never).
    let ran = c.same(
        &run_args(
            "three",
            &["-i", "--rm", "--restart=Never"],
            &["sh", "-c", "read x; echo got $x; exit 3"],
        ),
        "go\n",
    );
    assert_eq!(ran.code, Some(3), "{ran:?}");
    c.pod_gone_in_both("three");

    // -q: neither the prompt lines nor the deletion message.
    let ran = c.same(
        &run_args("quiet", &["-i", "-q", "--rm", "--restart=Never"], &["cat"]),
        "q\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");

    // Always: no wait for an exit code once the session ends; --rm still deletes.
    let ran = c.same(
        &run_args("always", &["-i", "--rm", "--restart=Always"], &["cat"]),
        "a\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");
    c.pod_gone_in_both("always");

    // No --restart with -i: the pod is created with Always, and nothing is waited for after
    // the session.
    let ran = c.same(
        &run_args(
            "dflt",
            &["-i", "--rm", "--pod-running-timeout=20s"],
            &["cat"],
        ),
        "d\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");

    // OnFailure: waited for until it succeeded.
    let ran = c.same(
        &run_args("onfail", &["-i", "--rm", "--restart=OnFailure"], &["cat"]),
        "o\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");

    // --expose: the service is printed when created and deleted after the pod.
    let ran = c.same(
        &run_args(
            "exposed",
            &["-i", "--rm", "--restart=Never", "--port=80", "--expose"],
            &["cat"],
        ),
        "e\n",
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(
        ran.stdout.starts_with("service/exposed created\n")
            && ran
                .stdout
                .ends_with("pod \"exposed\" deleted\nservice \"exposed\" deleted\n"),
        "{ran:?}"
    );

    // Refused combinations (and `-i --attach=false`, which creates without attaching).

    for (name, flags) in [
        ("e1", &["--rm"][..]),
        ("e2", &["-t"][..]),
        ("e3", &["-i", "--dry-run=client"][..]),
        ("e4", &["--restart=Sometimes"][..]),
        ("e5", &["-i", "--pod-running-timeout=0s"][..]),
        (
            "e6",
            &["-i", "--attach=false", "--dry-run=client", "-o", "yaml"][..],
        ),
    ] {
        c.same(&run_args(name, flags, &["true"]), "");
    }

    run_tty(&c);
    managed_fields(&c);
    urls(&c, tmp.path());
}

/// Single-quoted for sh.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `run -it` with a terminal (script(1)) for both kubectls: the input reaches the container,
/// its output, exit code and the deletion come back alike.
fn run_tty(c: &Cluster) {
    let args = run_args(
        "tty",
        &["-it", "--rm", "--restart=Never"],
        &["sh", "-c", "read x; echo got $x; exit 3"],
    );
    let go = |binary: &Path, kubectl: &Kubectl, ns: &str| {
        let dir = kubectl.dir();
        let cache = format!("--cache-dir={}", dir.join("cache").display());
        let mut line = [binary.to_str().unwrap(), &cache, "-n", ns]
            .map(quote)
            .join(" ");
        for a in &args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        // timeout(1) is the hang guard.
        let shell = format!(
            "printf 'tok\\n' | timeout 120 script -qec {} /dev/null",
            quote(&line)
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&shell)
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .env("HOME", dir)
            .output()
            .expect("running script");
        // The local terminal echoes the input only when it comes before kubectl made the
        // terminal raw (a race): lines that are only the input are left out.
        let stdout: String = String::from_utf8_lossy(&out.stdout)
            .split_inclusive('\n')
            .filter(|l| l.trim_end() != "tok")
            .collect();
        Ran {
            code: out.status.code(),
            stdout: normalize_identity(&replace_word(&stdout, ns, "NS")),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let up = go(
        Path::new("/usr/bin/kubectl"),
        &c.cmp.upstream,
        &c.cmp.ns_upstream,
    );
    let ours = go(&e2e::bin("kubectl"), &c.cmp.ours, &c.cmp.ns_ours);
    assert_eq!(
        ours, up,
        "run -it: ours (left) differs from upstream (right)"
    );
    assert_eq!(ours.code, Some(3), "{ours:?}");
    assert!(ours.stdout.contains("got tok\r\n"), "{ours:?}");
    c.pod_gone_in_both("tty");
}

fn managed_fields(c: &Cluster) {
    c.cmp
        .step(&["create", "configmap", "mf", "--from-literal=a=b"]);
    for output in ["json", "yaml"] {
        c.cmp.step(&["get", "configmap", "mf", "-o", output]);
        c.cmp.step(&[
            "get",
            "configmap",
            "mf",
            "-o",
            output,
            "--show-managed-fields",
        ]);
    }
    let out = c.cmp.step(&[
        "get",
        "configmap",
        "mf",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    assert!(out.ours.stdout.contains("managedFields"));
    c.cmp
        .step_with(&["get", "configmaps", "-o", "yaml"], "", Mode::Exact);
    // A watch prints its first object as get does, managedFields dropped unless asked for.
    for show in [false, true] {
        let printed = |kubectl: &Kubectl, ns: &str| {
            let mut args = vec!["get", "configmap", "mf", "-n", ns, "-w", "-o", "json"];
            if show {
                args.push("--show-managed-fields");
            }
            let mut watch = kubectl.spawn(&args);
            // The object is complete once its top-level closing brace is out.
            let out = watch.wait_for(PATIENCE, "the watched object", |o| o.contains("\n}\n"));
            normalize_identity(&replace_word(&out, ns, "NS"))
        };
        let up = printed(&c.cmp.upstream, &c.cmp.ns_upstream);
        let ours = printed(&c.cmp.ours, &c.cmp.ns_ours);
        assert_eq!(ours, up, "get -w -o json, --show-managed-fields={show}");
        assert_eq!(ours.contains("managedFields"), show, "{ours}");
    }
}

const MANIFEST: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-url\ndata:\n  k: v\n";

/// A plain HTTP server on a free port: `/cm.yaml` is [`MANIFEST`], `/broken` a 500, anything
/// else a 404. Runs until the test process ends.
fn serve() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("");
                let (status, body) = match path {
                    "/cm.yaml" => ("200 OK", MANIFEST),
                    "/broken" => ("500 Internal Server Error", "boom\n"),
                    _ => ("404 Not Found", "no\n"),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

fn urls(c: &Cluster, _dir: &Path) {
    let base = format!("http://127.0.0.1:{}", serve());
    let cm = format!("{base}/cm.yaml");
    let missing = format!("{base}/missing.yaml");
    let broken = format!("{base}/broken");
    c.cmp.step(&["create", "-f", &cm]);
    c.cmp.step(&["get", "-f", &cm, "-o", "name"]);
    c.cmp.step(&["apply", "-f", &cm]);
    c.cmp
        .step(&["get", "configmap", "from-url", "-o", "jsonpath={.data}"]);
    c.cmp.step(&["delete", "-f", &cm]);
    c.cmp.step(&["create", "-f", &missing]);
    c.cmp.step(&["apply", "-f", &broken]);
}
