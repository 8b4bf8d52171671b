//! `kubectl exec -f FILE` against upstream's on one apiserver (no node: the commands end at
//! the apiserver, which is where the object the file names is resolved): a pod that does not
//! exist, one with no node yet, a manifest naming two objects, a POD argument beside the file,
//! no command, and a manifest whose namespace is not the one of `-n`. Output and exit status
//! must be upstream's. The stream itself is `exec`'s, compared on a real node in
//! kubectl_ours_stream.

use e2e::kubectl_compare::Fixture;
use std::path::Path;

const POD: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: target
spec:
  containers:
  - name: main
    image: busybox
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: workload
spec:
  selector:
    matchLabels:
      app: workload
  template:
    metadata:
      labels:
        app: workload
    spec:
      containers:
      - name: main
        image: busybox
";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_filename_matches_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("execf").await;
    let dir = cluster.dir().to_path_buf();
    let pod = write(&dir, "pod.yaml", POD);
    let two = write(&dir, "two.yaml", &format!("{POD}---\n{DEPLOYMENT}"));
    let elsewhere = write(
        &dir,
        "elsewhere.yaml",
        &POD.replace("name: target\n", "name: target\n  namespace: kube-public\n"),
    );

    cmp.step(&["exec", "-f", &pod, "--", "date"]);
    cmp.step(&["exec", "-f", &pod]);
    cmp.step(&["exec", "target", "-f", &pod, "--", "date"]);
    cmp.step(&["exec", "-f", &two, "--", "date"]);
    cmp.step(&["exec", "-f", &elsewhere, "--", "date"]);
    // No controller manager makes the namespaces' default service accounts.
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        cmp.upstream
            .ok(&["create", "serviceaccount", "default", "-n", ns]);
        cmp.upstream.ok(&["create", "-f", &pod, "-n", ns]);
    }
    // The pod exists but has no node: the apiserver refuses the exec for both.
    cmp.step(&["exec", "-f", &pod, "--", "date"]);
    cmp.step(&["exec", "--filename", &pod, "-c", "main", "--", "date"]);
}
