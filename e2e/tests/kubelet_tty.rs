//! Attaching to a container started with `tty: true` through our kubelet (containerd behind
//! it), with upstream's kubectl and ours: without a terminal the runtime's refusal, with one
//! (script(1)) a session that ends when the container exits.

use e2e::apiserver::ApiServer;
use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubectl_compare::Comparison;
use e2e::kubelet::{Kubelet, start_apiserver};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(60);
const NODE: &str = "tty-node";
const NS: &str = "tty";
const TOKENS: &str = "e2e,e2e-admin,1000,\"system:masters\"\n";

struct Cluster {
    kubelet: Kubelet,
    _containerd: Containerd,
    _api: ApiServer,
    cmp: Comparison,
    dir: PathBuf,
}

async fn cluster(dir: &Path) -> Cluster {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let token_flag = format!("--token-auth-file={}", tokens.display());
    let (api, _pki) = start_apiserver(dir, &["--authorization-mode=Node,RBAC", &token_flag])
        .await
        .expect("starting the apiserver");
    let containerd = Containerd::start(&dir.join("containerd")).expect("starting containerd");
    let kubelet = Kubelet::start(
        &dir.join("kubelet"),
        &api,
        &containerd,
        NODE,
        serde_json::Value::Null,
        &[],
    )
    .await
    .expect("starting the kubelet");
    let cmp = Comparison::new(dir, &api.url(), &api.ca_file(), "tty");
    cmp.upstream.ok(&["create", "namespace", NS]);
    Cluster {
        kubelet,
        _containerd: containerd,
        _api: api,
        cmp,
        dir: dir.to_path_buf(),
    }
}

impl Cluster {
    fn pod(&self, name: &str, script: &str) {
        let manifest = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {NODE}\n  \
             terminationGracePeriodSeconds: 1\n  restartPolicy: Never\n  containers:\n  \
             - name: c\n    image: {BUSYBOX_IMAGE}\n    imagePullPolicy: Never\n    tty: true\n    stdin: true\n    \
             command: [\"sh\", \"-c\", {script:?}]\n"
        );
        let path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&path, manifest).unwrap();
        self.cmp
            .upstream
            .ok(&["apply", "-n", NS, "-f", path.to_str().unwrap()]);
        let deadline = Instant::now() + PATIENCE;
        loop {
            let out = self.cmp.upstream.run(&[
                "get",
                "pod",
                "-n",
                NS,
                name,
                "-o",
                "jsonpath={.status.phase}",
            ]);
            if out.stdout == "Running" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "pod {name} never ran: {out:?}\n{}",
                self.kubelet.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `kubectl` of `which` under `shell`, killed by timeout(1) after `limit` (a hang guard).
    fn raw(&self, which: &str, limit: u32, shell: &str) -> (i32, String, String) {
        let kubeconfig = self.dir.join(format!("kubectl-{which}/kubeconfig"));
        let binary = match which {
            "upstream" => PathBuf::from(e2e::kubectl::UPSTREAM_KUBECTL),
            _ => e2e::bin("kubectl"),
        };
        let out = Command::new("timeout")
            .arg(limit.to_string())
            .arg("sh")
            .arg("-c")
            .arg(shell)
            .current_dir(&self.dir)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECTL", &binary)
            .env("HOME", self.dir.join(format!("kubectl-{which}")))
            .output()
            .expect("running sh");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// The output without the lines that are only `tok`, the test's input: the local terminal
/// echoes it only if it arrives before kubectl has made the terminal raw, which is a race.
fn without_echo(out: &str) -> String {
    out.split_inclusive('\n')
        .filter(|l| l.trim_end() != "tok")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_to_a_tty_container_ends_as_upstreams() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cluster(tmp.path()).await;
    let mut runs = Vec::new();
    for which in ["upstream", "ours"] {
        // Each kubectl gets its pod: the session with a terminal ends it.
        let name = format!("t-{which}");
        c.pod(&name, "read line; echo got $line; exit 3");
        let kubectl = format!("\"$KUBECTL\" -n {NS} attach");
        // Without -t (and with -i but no terminal) the kubelet asks the runtime for the
        // container's terminal, which has no separate stderr: refused, as upstream's kubelet
        // is. It used to ask for no terminal, and the runtime waited forever for stderr.
        let plain = c.raw(which, 60, &format!("{kubectl} {name} < /dev/null"));
        let piped = c.raw(which, 60, &format!("{kubectl} -i {name} < /dev/null"));
        // With a terminal (script(1)): the input reaches the container, its output comes
        // back, and the session ends when the container exits.
        let term = c.raw(
            which,
            60,
            &format!("printf 'tok\\n' | script -qec '{kubectl} -it {name}' /dev/null"),
        );
        runs.push((which, plain, piped, term));
    }
    let kubelet_log = || tail(&c.kubelet.logs(), 40);
    for (which, plain, piped, term) in &runs {
        for (code, out, err) in [plain, piped] {
            assert_eq!(
                (*code, out.as_str()),
                (1, ""),
                "{which}: {err}\n{}",
                kubelet_log()
            );
        }
        assert_eq!(term.0, 0, "{which}: {term:?}\n{}", kubelet_log());
        assert!(term.1.ends_with("tok\r\ngot tok\r\n"), "{which}: {term:?}");
    }
    let (up, ours) = (&runs[0], &runs[1]);
    // The refusal (`rpc error: ...`) reads as an empty Status to upstream's client, whose
    // decoder takes YAML: `Error from server: ` and nothing more, which ours repeats.
    assert_eq!(ours.1, up.1, "attach without -i (left ours)");
    assert_eq!(ours.2, up.2, "attach -i without a terminal (left ours)");
    assert_eq!(
        without_echo(&ours.3.1),
        without_echo(&up.3.1),
        "attach -it (left ours)"
    );
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
