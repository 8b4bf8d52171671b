//! Issue 10's end-to-end scenarios on a whole cluster (apiserver, controller manager, scheduler,
//! a kubelet on containerd) driven by the real kubectl: a Deployment rolls out and serves, a
//! Service gets endpoints, a Job completes, a static pod runs, a namespace is deleted with its
//! contents, a node is drained and uncordoned; on the embedded store and on etcd. Then two of
//! each control-plane daemon with leader election, surviving the loss of both leaders.

use e2e::apiserver::Backend;
use e2e::cluster::{Cluster, ControlPlane, lease_holder};
use e2e::containerd::BUSYBOX_136_IMAGE;
use e2e::kubelet::poll;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NODE: &str = "node-a";

/// A Deployment of `replicas` busybox httpds answering "hello from <pod>" on 8080. The grace
/// period is short because httpd, as PID 1, ignores SIGTERM.
fn web_deployment(replicas: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: httpd
        image: {BUSYBOX_136_IMAGE}
        command: ["sh", "-c", "echo hello from $(hostname) > /tmp/index.html && exec httpd -f -p 8080 -h /tmp"]
        ports:
        - containerPort: 8080
        readinessProbe:
          tcpSocket: {{port: 8080}}
          periodSeconds: 1
"#
    )
}

/// One plain HTTP/1.0 GET of `/` from `ip:port`: the body.
async fn http_get(ip: &str, port: u16) -> Result<String, String> {
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect((ip, port)).await?;
        stream.write_all(b"GET / HTTP/1.0\r\n\r\n").await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(5), fetch)
        .await
        .map_err(|_| format!("{ip}:{port} did not answer"))?
        .map_err(|e| format!("{ip}:{port}: {e}"))?;
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .ok_or_else(|| format!("not an HTTP answer: {answer:?}"))
}

fn web_pod_ips(c: &Cluster) -> Vec<String> {
    let out = c.kubectl.ok(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "--field-selector=status.phase=Running",
        "-o",
        "jsonpath={.items[*].status.podIP}",
    ]);
    let mut ips: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    ips.sort();
    ips
}

async fn deployment_serves(c: &Cluster) {
    let k = &c.kubectl;
    k.run_with_stdin(&["apply", "-f", "-"], &web_deployment(2));
    k.ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    let ips = web_pod_ips(c);
    assert_eq!(ips.len(), 2, "{ips:?}");
    for ip in &ips {
        let body = poll(&format!("httpd on {ip}"), &|| c.logs(), async || {
            http_get(ip, 8080).await
        })
        .await;
        assert!(body.starts_with("hello from web-"), "{body:?}");
    }
}

async fn service_gets_endpoints(c: &Cluster) {
    let k = &c.kubectl;
    k.ok(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--target-port=8080",
    ]);
    let want = web_pod_ips(c);
    poll("the Service's EndpointSlice", &|| c.logs(), async || {
        let out = k.ok(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
            "-o",
            "jsonpath={.items[*].endpoints[*].addresses[0]}",
        ]);
        let mut got: Vec<String> = out.split_whitespace().map(str::to_string).collect();
        got.sort();
        (got == want)
            .then_some(())
            .ok_or(format!("{got:?} != {want:?}"))
    })
    .await;
    let ip = k.ok(&["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"]);
    assert!(!ip.trim().is_empty(), "the Service has no cluster IP");
}

async fn job_completes(c: &Cluster) {
    let k = &c.kubectl;
    k.ok(&[
        "create",
        "job",
        "once",
        &format!("--image={BUSYBOX_136_IMAGE}"),
        "--",
        "sh",
        "-c",
        "echo done",
    ]);
    k.ok(&[
        "wait",
        "--for=condition=complete",
        "job/once",
        "--timeout=120s",
    ]);
    assert_eq!(k.ok(&["logs", "job/once"]).trim(), "done");
}

async fn static_pod_runs(c: &Cluster) {
    let manifest = format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: static-sleeper
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: {BUSYBOX_136_IMAGE}
    command: ["sleep", "3600"]
"#
    );
    let dir = c.kubelets[0].static_pod_dir();
    std::fs::write(dir.join("static-sleeper.yaml"), manifest).expect("static pod manifest");
    let mirror = format!("static-sleeper-{NODE}");
    poll(
        "the static pod's mirror pod Running",
        &|| c.logs(),
        async || {
            let out = c
                .kubectl
                .run(&["get", "pod", &mirror, "-o", "jsonpath={.status.phase}"]);
            (out.stdout == "Running").then_some(()).ok_or(out.stderr)
        },
    )
    .await;
}

async fn namespace_deleted_with_contents(c: &Cluster) {
    let k = &c.kubectl;
    k.ok(&["create", "namespace", "doomed"]);
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "doomed",
        "--from-literal=a=b",
    ]);
    let pod = format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  namespace: doomed
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: {BUSYBOX_136_IMAGE}
    command: ["sleep", "3600"]
"#
    );
    let out = k.run_with_stdin(&["apply", "-f", "-"], &pod);
    assert!(out.success, "{}", out.stderr);
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/sleeper",
        "-n",
        "doomed",
        "--timeout=120s",
    ]);
    // `delete namespace` waits until the namespace, and so everything in it, is gone.
    k.ok(&["delete", "namespace", "doomed", "--timeout=120s"]);
    let gone = k.run(&["get", "namespace", "doomed"]);
    assert!(
        !gone.success && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
}

async fn node_drained_and_uncordoned(c: &Cluster) {
    let k = &c.kubectl;
    k.ok(&[
        "drain",
        NODE,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=120s",
    ]);
    assert_eq!(
        k.ok(&["get", "node", NODE, "-o", "jsonpath={.spec.unschedulable}"]),
        "true"
    );
    // The Deployment replaced its evicted pods; with the only node cordoned they wait.
    poll(
        "the web pods evicted and pending",
        &|| c.logs(),
        async || {
            let out = k.ok(&[
                "get",
                "pods",
                "-l",
                "app=web",
                "-o",
                "jsonpath={range .items[*]}{.status.phase}{\" \"}{end}",
            ]);
            let phases: Vec<&str> = out.split_whitespace().collect();
            (phases.len() == 2 && phases.iter().all(|p| *p == "Pending"))
                .then_some(())
                .ok_or(out.clone())
        },
    )
    .await;
    // Drain leaves mirror pods alone.
    k.ok(&["get", "pod", &format!("static-sleeper-{NODE}")]);
    k.ok(&["uncordon", NODE]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
}

async fn scenarios(backend: Backend) {
    let c = Cluster::start(backend, ControlPlane::Single, &[NODE])
        .await
        .expect("cluster");
    deployment_serves(&c).await;
    service_gets_endpoints(&c).await;
    job_completes(&c).await;
    static_pod_runs(&c).await;
    namespace_deleted_with_contents(&c).await;
    node_drained_and_uncordoned(&c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_the_embedded_store() {
    scenarios(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_etcd() {
    scenarios(Backend::Etcd).await;
}

/// kill -9 both leaders: the standbys take their leases over and the cluster keeps working (a
/// scale-up needs the controller manager for the pods and the scheduler to place them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_survives_the_loss_of_its_leaders() {
    let mut c = Cluster::start(Backend::Embedded, ControlPlane::WithStandbys, &[NODE])
        .await
        .expect("cluster");
    c.kubectl
        .run_with_stdin(&["apply", "-f", "-"], &web_deployment(1));
    c.kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    let mut old = Vec::new();
    for lease in ["kube-scheduler", "kube-controller-manager"] {
        old.push(lease_holder(&c.client, lease).await.expect("lease"));
    }
    c.scheduler.kill();
    c.controller_manager.kill();
    c.kubectl.ok(&["scale", "deployment/web", "--replicas=3"]);
    c.kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert_eq!(web_pod_ips(&c).len(), 3);
    for (lease, before) in ["kube-scheduler", "kube-controller-manager"]
        .into_iter()
        .zip(old)
    {
        let now = lease_holder(&c.client, lease).await.expect("lease");
        assert!(
            now.is_some() && now != before,
            "{lease}: holder {before:?} before the kill, {now:?} after"
        );
    }
}
