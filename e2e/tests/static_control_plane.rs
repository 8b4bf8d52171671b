//! The control plane booted kubeadm-style: only a kubelet is started by hand, with the three
//! manifests of `docs/static-pods` in its static pod directory; it runs kube-apiserver,
//! kube-controller-manager and kube-scheduler as static pods from the images
//! `hack/images/control-plane.sh` builds (here from the debug binaries the tests use), registers
//! with the apiserver it started, and the real kubectl then sees a Ready node, the three mirror
//! pods Running and Ready, both leader-election leases held, and a Deployment scheduled and
//! running.
//!
//! The PKI and kubeconfigs are made by the openssl and kubectl commands of docs/operations.md.
//! The manifests are the documented ones with two rewrites so that tests run in parallel and the
//! host's /etc stays untouched: hostPath paths move under the test's temp dir, and the secure
//! ports (6443, 10257, 10259) become free ones (`--secure-port` and the probes' port).

use e2e::containerd::{BUSYBOX_136_IMAGE, Containerd};
use e2e::kubectl::Kubectl;
use e2e::kubelet::{Kubelet, issue_for_server, poll};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const NODE: &str = "cp-node";
const COMPONENTS: [&str; 3] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];
/// The documented secure port of each component (kubeadm's).
const DOC_PORTS: [u16; 3] = [6443, 10257, 10259];

/// The kubeadm file layout under `<root>/etc/kubernetes`, made by running the openssl and kubectl
/// commands docs/operations.md gives ("Making the PKI and kubeconfigs with openssl") with the
/// address, port, node name and directory of this test: the cluster CA, the apiserver's serving
/// and kubelet-client pairs, the service-account keys, and kubeconfigs with their certificates
/// embedded (the files are mounted into the containers, where only the mounted paths exist).
fn run_documented_pki_commands(root: &Path, api_port: u16) -> anyhow::Result<()> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md"),
    )?;
    let section = doc
        .split_once("## Making the PKI")
        .ok_or_else(|| anyhow::anyhow!("no PKI section in docs/operations.md"))?
        .1;
    let script = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .ok_or_else(|| anyhow::anyhow!("no sh block in the PKI section"))?
        .0;
    let k8s = root.join("etc/kubernetes");
    let script = script
        .replace("/etc/kubernetes", &k8s.display().to_string())
        .replace(
            "ADVERTISE_ADDRESS=192.0.2.10",
            "ADVERTISE_ADDRESS=127.0.0.1",
        )
        .replace(":6443", &format!(":{api_port}"))
        .replace("NODE=$(hostname)", &format!("NODE={NODE}"));
    let out = Command::new("bash")
        .args(["-c", &script])
        .env("HOME", root)
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "the documented PKI commands failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The documented manifest of `component` with its host paths under `root` and its secure port
/// `doc_port` replaced by `port` (in `--secure-port`, added when absent, and in the probes).
fn rewrite_manifest(text: &str, root: &Path, doc_port: u16, port: u16) -> anyhow::Result<String> {
    let mut pod: Value = serde_yaml::from_str(text)?;
    let spec = pod
        .get_mut("spec")
        .ok_or_else(|| anyhow::anyhow!("no spec"))?;
    for volume in spec["volumes"].as_array_mut().into_iter().flatten() {
        if let Some(path) = volume.pointer_mut("/hostPath/path") {
            let host = path.as_str().unwrap_or_default().trim_start_matches('/');
            *path = json!(root.join(host));
        }
    }
    for container in spec["containers"].as_array_mut().into_iter().flatten() {
        let command = container["command"]
            .as_array_mut()
            .ok_or_else(|| anyhow::anyhow!("a container without command"))?;
        command.retain(|a| !a.as_str().unwrap_or_default().starts_with("--secure-port="));
        command.push(json!(format!("--secure-port={port}")));
        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            if let Some(p) = container.pointer_mut(&format!("/{probe}/httpGet/port"))
                && p.as_u64() == Some(u64::from(doc_port))
            {
                *p = json!(port);
            }
        }
    }
    Ok(serde_yaml::to_string(&pod)?)
}

/// Builds (cached) the three images from the binaries these tests run and imports them.
fn import_control_plane_images(containerd: &Containerd) -> anyhow::Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/images/control-plane.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--bin-dir")
        .arg(e2e::bin_dir())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    for c in COMPONENTS {
        containerd.import_image(&dir.join(format!("{c}.tar")))?;
    }
    Ok(())
}

/// The pod's condition `kind` status, as kubectl's JSON gives it.
fn condition(obj: &Value, kind: &str) -> Option<String> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

fn json_of(kubectl: &Kubectl, args: &[&str]) -> Result<Value, String> {
    let out = kubectl.run(args);
    if !out.success {
        return Err(out.stderr);
    }
    serde_json::from_str(&out.stdout).map_err(|e| format!("{e}: {}", out.stdout))
}

/// What the test made outside its temp dir, and mounts inside it.
fn leftovers(tmp: &Path, cgroup_root: &str, bridge: &str, api_port: u16) -> Vec<String> {
    let mut found = Vec::new();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let prefix = tmp.display().to_string();
    found.extend(
        mounts
            .lines()
            .filter(|l| l.contains(&prefix))
            .map(|l| format!("mount {l}")),
    );
    let cgroup = Path::new("/sys/fs/cgroup/memory").join(cgroup_root.trim_start_matches('/'));
    if cgroup.exists() {
        found.push(format!("cgroup {}", cgroup.display()));
    }
    if Path::new("/sys/class/net").join(bridge).exists() {
        found.push(format!("bridge {bridge}"));
    }
    let flag = format!("--secure-port={api_port}");
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if args.contains(&flag) {
            found.push(format!("process {}: {args}", entry.file_name().display()));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_boots_from_static_pods_and_serves_kubectl() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ports: Vec<u16> = COMPONENTS.iter().map(|_| e2e::free_port()).collect();
    let api_url = format!("https://127.0.0.1:{}", ports[0]);
    run_documented_pki_commands(&root, ports[0]).expect("the documented PKI");
    let pki_dir = root.join("etc/kubernetes/pki");

    let ctrd_dir = root.join("containerd");
    let containerd = tokio::task::spawn_blocking(move || {
        let c = Containerd::start(&ctrd_dir)?;
        import_control_plane_images(&c)?;
        anyhow::Ok(c)
    })
    .await
    .unwrap()
    .expect("containerd with the control-plane images");

    // The kubelet's kubeconfig names an apiserver nobody has started: the kubelet starts it.
    let kubelet_dir = root.join("kubelet");
    let certs = issue_for_server(
        &kubelet_dir.join("pki"),
        &pki_dir.join("ca.crt"),
        &pki_dir.join("ca.key"),
        &api_url,
        &pki_dir.join("ca.crt"),
        NODE,
    )
    .expect("kubelet certificates");
    let kubelet =
        Kubelet::start_with_certs(&kubelet_dir, certs, &containerd, NODE, Value::Null, &[])
            .await
            .expect("kubelet");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_err(),
        "something already serves the apiserver's port"
    );
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/static-pods");
    for (i, c) in COMPONENTS.iter().enumerate() {
        let text = std::fs::read_to_string(docs.join(format!("{c}.yaml"))).unwrap();
        let manifest = rewrite_manifest(&text, &root, DOC_PORTS[i], ports[i]).unwrap();
        std::fs::write(kubelet.static_pod_dir().join(format!("{c}.yaml")), manifest).unwrap();
    }

    let kubectl = Kubectl::upstream_with_kubeconfig(
        &root.join("kubectl"),
        &root.join("etc/kubernetes/admin.conf"),
    );
    let logs = || kubelet.logs();
    poll("the apiserver to answer /readyz", &logs, async || {
        let out = kubectl.run(&["get", "--raw", "/readyz"]);
        if out.success { Ok(()) } else { Err(out.stderr) }
    })
    .await;
    poll("the node to be Ready", &logs, async || {
        let node = json_of(&kubectl, &["get", "node", NODE, "-o", "json"])?;
        match condition(&node, "Ready").as_deref() {
            Some("True") => Ok(()),
            other => Err(format!("Ready={other:?}")),
        }
    })
    .await;
    poll(
        "the mirror pods to be Running and Ready",
        &logs,
        async || {
            let list = json_of(
                &kubectl,
                &["get", "pods", "-n", "kube-system", "-o", "json"],
            )?;
            let states: BTreeMap<String, (String, Option<String>)> = list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    let name = p["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let phase = p["status"]["phase"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    (name, (phase, condition(p, "Ready")))
                })
                .collect();
            for c in COMPONENTS {
                let name = format!("{c}-{NODE}");
                match states.get(&name) {
                    Some((phase, Some(ready))) if phase == "Running" && ready == "True" => {}
                    other => return Err(format!("{name}: {other:?} (all: {states:?})")),
                }
            }
            Ok(())
        },
    )
    .await;
    // What the liveness probes of the manifests ask: an anonymous HTTPS GET on the secure
    // port (the kubelet does not verify the self-signed serving certificates).
    for (i, path) in [(0, "/livez"), (1, "/healthz"), (2, "/healthz")] {
        let url = format!("https://127.0.0.1:{}{path}", ports[i]);
        poll(&format!("{} {path}", COMPONENTS[i]), &logs, async || {
            let out = Command::new("curl")
                .args(["-ksS", "--max-time", "5", &url])
                .output()
                .map_err(|e| e.to_string())?;
            let body = String::from_utf8_lossy(&out.stdout);
            if out.status.success() && body.trim() == "ok" {
                Ok(())
            } else {
                Err(format!("{body}{}", String::from_utf8_lossy(&out.stderr)))
            }
        })
        .await;
    }
    for lease in ["kube-scheduler", "kube-controller-manager"] {
        poll(
            &format!("the {lease} lease to be held"),
            &logs,
            async || {
                let l = json_of(
                    &kubectl,
                    &["get", "lease", "-n", "kube-system", lease, "-o", "json"],
                )?;
                match l["spec"]["holderIdentity"].as_str() {
                    Some(holder) if !holder.is_empty() => Ok(()),
                    _ => Err(format!("{l}")),
                }
            },
        )
        .await;
    }

    // The controller manager makes the ReplicaSet and pods, the scheduler binds them to the node.
    kubectl.ok(&[
        "create",
        "deployment",
        "web",
        &format!("--image={BUSYBOX_136_IMAGE}"),
        "--replicas=2",
        "--",
        "sleep",
        "3600",
    ]);
    poll(
        "the Deployment's pods to run on the node",
        &logs,
        async || {
            let rs = json_of(&kubectl, &["get", "rs", "-l", "app=web", "-o", "json"])?;
            let rs_count = rs["items"].as_array().map_or(0, Vec::len);
            if rs_count != 1 {
                return Err(format!("{rs_count} ReplicaSets"));
            }
            let pods = json_of(&kubectl, &["get", "pods", "-l", "app=web", "-o", "json"])?;
            let items = pods["items"].as_array().cloned().unwrap_or_default();
            let running = items
                .iter()
                .filter(|p| p["spec"]["nodeName"] == NODE && p["status"]["phase"] == "Running")
                .count();
            if running == 2 {
                Ok(())
            } else {
                Err(format!(
                    "{running} of {} pods Running on {NODE}",
                    items.len()
                ))
            }
        },
    )
    .await;

    println!("{}", kubectl.ok(&["get", "pods", "-A", "-o", "wide"]));
    let (cgroup_root, bridge) = (kubelet.cgroup_root().to_string(), containerd.bridge());
    drop(kubectl);
    drop(kubelet);
    drop(containerd);
    let left = leftovers(&root, &cgroup_root, &bridge, ports[0]);
    assert!(left.is_empty(), "left behind: {left:#?}");
}

#[test]
fn manifests_are_rewritten_to_the_temp_dir_and_ports() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/static-pods");
    let root = Path::new("/tmp/x");
    for (i, c) in COMPONENTS.iter().enumerate() {
        let text = std::fs::read_to_string(docs.join(format!("{c}.yaml"))).unwrap();
        let pod: Value =
            serde_yaml::from_str(&rewrite_manifest(&text, root, DOC_PORTS[i], 4000).unwrap())
                .unwrap();
        for v in pod["spec"]["volumes"].as_array().unwrap() {
            let path = v["hostPath"]["path"].as_str().unwrap();
            assert!(path.starts_with("/tmp/x/"), "{c}: {path}");
        }
        let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let ports: Vec<_> = command
            .iter()
            .filter(|a| a.starts_with("--secure-port"))
            .collect();
        assert_eq!(ports, [&"--secure-port=4000"], "{c}");
        let probe = &pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"];
        assert_eq!(probe, &json!(4000), "{c}");
    }
}

/// The `--flag` names of a command line (`--name=value` or `--name value`).
fn flag_names<'a>(args: impl Iterator<Item = &'a str>) -> Vec<String> {
    args.filter_map(|a| a.strip_prefix("--"))
        .map(|a| a.split('=').next().unwrap_or_default().to_string())
        .collect()
}

/// Every flag the documented units and manifests pass is one the binary has (its `--help`).
#[test]
fn documented_flags_exist() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut checked = 0;
    for component in COMPONENTS.iter().copied().chain(["kubelet"]) {
        let help = Command::new(e2e::bin(component))
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout).to_string();
        let unit = std::fs::read_to_string(docs.join(format!("systemd/{component}.service")))
            .unwrap()
            .replace("\\\n", " ");
        let exec = unit
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .unwrap_or_else(|| panic!("{component}.service has no ExecStart"));
        let mut flags = flag_names(exec.split_whitespace());
        if component != "kubelet" {
            let text = std::fs::read_to_string(docs.join(format!("static-pods/{component}.yaml")))
                .unwrap();
            let pod: Value = serde_yaml::from_str(&text).unwrap();
            let command = pod["spec"]["containers"][0]["command"].as_array().unwrap();
            flags.extend(flag_names(command.iter().filter_map(Value::as_str)));
        }
        for flag in flags {
            assert!(
                help.contains(&format!("--{flag} ")) || help.contains(&format!("--{flag}\n")),
                "{component} has no --{flag}"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} flags found");
}
