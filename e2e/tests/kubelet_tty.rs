//! Attaching to a container started with `tty: true` through our kubelet (containerd behind
//! it), with upstream's kubectl and ours: without a terminal the runtime's refusal, with one
//! (script(1)) a session that ends when the container exits.

use e2e::containerd::BUSYBOX_IMAGE;
use e2e::kubectl_compare::Comparison;
use e2e::node_fixture::Node;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(60);
const NODE: &str = "tty-node";
const NS: &str = "tty";

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
                self.node.kubelet.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
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
    for (which, kubectl) in [("upstream", &c.cmp.upstream), ("ours", &c.cmp.ours)] {
        // Each kubectl gets its pod: the session with a terminal ends it.
        let name = format!("t-{which}");
        c.pod(&name, "read line; echo got $line; exit 3");
        // timeout(1) guards each run: a hang fails the test instead of blocking it.
        let raw = |script: &str| kubectl.shell(&c.dir, script, Some(60));
        let attach = format!("\"$KUBECTL\" -n {NS} attach");
        // Without -t (and with -i but no terminal) the kubelet asks the runtime for the
        // container's terminal, which has no separate stderr: refused, as upstream's kubelet
        // is. It used to ask for no terminal, and the runtime waited forever for stderr.
        let plain = raw(&format!("{attach} {name} < /dev/null"));
        let piped = raw(&format!("{attach} -i {name} < /dev/null"));
        // With a terminal (script(1)): the input reaches the container, its output comes
        // back, and the session ends when the container exits.
        let term = raw(&format!(
            "printf 'tok\\n' | script -qec '{attach} -it {name}' /dev/null"
        ));
        runs.push((which, plain, piped, term));
    }
    let kubelet_log = || c.node.kubelet_log_tail(40);
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
