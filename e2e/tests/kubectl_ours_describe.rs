//! Issue 9's comparison for `kubectl describe` and `kubectl events`: our kubectl and the
//! upstream one (/usr/bin/kubectl) run against the same secured apiserver, each in its own
//! namespace holding the same objects (statuses set through the status subresource, events
//! created through the API, so no kubelet runs), and must print the same thing.
//!
//! Describe output is compared byte for byte once identities are masked (namespace name,
//! uids, resource versions, creation times, allocated IPs, the service account volume's random
//! suffix); output holding ages (event tables, a node's pods) is compared line by line with
//! indentation kept, runs of spaces collapsed and ages masked, since an age may move a column.

#[path = "kubectl_ours_describe/issue9_kinds.rs"]
mod issue9_kinds;

use e2e::kubectl::Output;
use e2e::kubectl_compare::{Comparison, Fixture, normalize_identity, replace_word};

const NODE: &str = "describe-node-1";

const OBJECTS: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web, tier: front}
  annotations: {note: hello, long: \"a very long annotation value that goes on and on and on and on and on and on and on and on and on and on and on and on and on and on\"}
spec:
  nodeName: describe-node-1
  automountServiceAccountToken: false
  priority: 0
  initContainers:
  - name: init
    image: busybox
    command: [sh, -c, \"echo init\"]
  containers:
  - name: app
    image: nginx:1.27
    command: [sh, -c]
    args: [\"echo hi\\nsleep 10\"]
    ports: [{containerPort: 80, name: http}, {containerPort: 443, hostPort: 8443}]
    env:
    - {name: A, value: \"1\"}
    - name: B
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: C
      valueFrom: {secretKeyRef: {name: sec, key: password}}
    - name: D
      valueFrom: {configMapKeyRef: {name: cfg, key: a, optional: true}}
    - name: E
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    envFrom: [{configMapRef: {name: cfg}}, {secretRef: {name: sec}, prefix: S_}]
    resources: {limits: {cpu: 500m, memory: 128Mi}, requests: {cpu: 250m}}
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 3}
    readinessProbe: {exec: {command: [cat, /tmp/ok]}}
    startupProbe: {tcpSocket: {port: 80}}
    volumeMounts: [{name: data, mountPath: /data}, {name: cfg, mountPath: /etc/cfg, readOnly: true, subPath: x}]
  - name: side
    image: busybox
  volumes:
  - {name: data, emptyDir: {sizeLimit: 1Gi}}
  - {name: cfg, configMap: {name: cfg}}
  - {name: sec, secret: {secretName: sec, optional: true}}
  - {name: host, hostPath: {path: /var/log, type: Directory}}
  - {name: claim, persistentVolumeClaim: {claimName: data}}
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule}, {operator: Exists}]
  nodeSelector: {disk: ssd}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  labels: {app: web}
spec:
  containers:
  - name: only
    image: busybox
    resources: {limits: {cpu: \"1\", memory: 64Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}, annotations: {team: blue}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [front, back]}]}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec:
      serviceAccountName: robot
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
        env: [{name: X, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, name: http}, {port: 443, targetPort: https, name: tls, appProtocol: https}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {multi: \"x\\ny\\n\"}
binaryData: {bin: aGVsbG8=}
---
apiVersion: v1
kind: Secret
metadata: {name: sec, labels: {a: b}}
stringData: {password: hunter2, user: me}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot}
imagePullSecrets: [{name: sec}, {name: missing}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock, labels: {x: z}}
spec: {holderIdentity: me, leaseDurationSeconds: 15, renewTime: \"2026-01-02T03:04:05.000000Z\"}
";

const LIMITS: &str = "\
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec: {hard: {pods: \"10\", requests.cpu: \"4\"}, scopes: [NotTerminating]}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec: {limits: [{type: Container, default: {cpu: 500m}, defaultRequest: {cpu: 100m}, max: {cpu: \"2\"}}]}
";

const WORKLOADS: &str = "\
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  completions: 3
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: \"*/5 * * * *\"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ss}
spec:
  replicas: 2
  serviceName: ss
  selector: {matchLabels: {app: ss}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}
  template:
    metadata: {labels: {app: ss}}
    spec:
      containers: [{name: c, image: busybox}]
  volumeClaimTemplates:
  - metadata: {name: data, labels: {k: v}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-x, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.244.0.7]
  conditions: {ready: true}
  nodeName: describe-node-1
  targetRef: {kind: Pod, name: web-1}
- addresses: [10.244.0.8]
  conditions: {ready: false}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: robot, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules:
- {apiGroups: [\"\", apps], resources: [pods, deployments/scale], verbs: [get]}
- {apiGroups: [\"\"], resources: [pods], verbs: [list, get]}
- {apiGroups: [\"\"], resources: [secrets], resourceNames: [a, b], verbs: [get]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: slow
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
";

const JOB_STATUS: &str = r#"{"status":{"startTime":"2026-01-02T03:00:00Z","active":1,"ready":1,"succeeded":1,"completedIndexes":"0"}}"#;

const POD_STATUS: &str = r#"{"status":{"phase":"Running","hostIP":"10.9.0.5","podIP":"10.244.0.7","podIPs":[{"ip":"10.244.0.7"}],"startTime":"2026-01-02T03:00:00Z","conditions":[{"type":"Initialized","status":"True","lastTransitionTime":"2026-01-02T03:00:00Z"},{"type":"Ready","status":"False","lastTransitionTime":"2026-01-02T03:00:00Z"}],"initContainerStatuses":[{"name":"init","ready":false,"restartCount":0,"image":"busybox","imageID":"docker.io/library/busybox@sha256:1","containerID":"containerd://i1","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-01-02T03:00:01Z","finishedAt":"2026-01-02T03:00:02Z"}}}],"containerStatuses":[{"name":"app","ready":true,"restartCount":2,"image":"nginx:1.27","imageID":"docker.io/library/nginx@sha256:abc","containerID":"containerd://123","started":true,"state":{"running":{"startedAt":"2026-01-02T03:01:00Z"}},"lastState":{"terminated":{"exitCode":137,"signal":9,"reason":"OOMKilled","message":"killed","startedAt":"2026-01-02T03:00:10Z","finishedAt":"2026-01-02T03:00:50Z"}}},{"name":"side","ready":false,"restartCount":0,"image":"busybox","imageID":"","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off"}}}]}}"#;

const DEPLOY_STATUS: &str = r#"{"status":{"replicas":2,"updatedReplicas":2,"availableReplicas":1,"unavailableReplicas":1,"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable","message":"m"},{"type":"Progressing","status":"True","reason":"ReplicaSetUpdated","message":"p"}]}}"#;

const NODE_STATUS: &str = r#"{"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110","ephemeral-storage":"100Gi","example.com/gpu":"2"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110","ephemeral-storage":"100Gi","example.com/gpu":"2"},"addresses":[{"type":"InternalIP","address":"10.9.0.5"},{"type":"Hostname","address":"describe-node-1"}],"nodeInfo":{"machineID":"m","systemUUID":"s","bootID":"b","kernelVersion":"6.1","osImage":"Debian","operatingSystem":"linux","architecture":"amd64","containerRuntimeVersion":"containerd://1.6","kubeletVersion":"v1.33.0","kubeProxyVersion":""},"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-01-02T03:00:00Z","lastTransitionTime":"2026-01-02T02:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"}]}}"#;

/// Events about `kind/name` (uid `uid`) in `ns`, with fixed times so both runs age alike.
fn events_yaml(ns: &str, prefix: &str, kind: &str, name: &str, uid: &str) -> String {
    format!(
        "\
apiVersion: v1
kind: Event
metadata: {{name: {prefix}.a, namespace: {ns}}}
involvedObject: {{kind: {kind}, name: {name}, namespace: {ns}, uid: {uid}, apiVersion: v1, fieldPath: \"spec.containers{{app}}\"}}
reason: Pulled
message: \"Successfully pulled image  \"
type: Normal
source: {{component: kubelet, host: {NODE}}}
firstTimestamp: \"2026-01-02T03:30:00Z\"
lastTimestamp: \"2026-01-02T03:40:00Z\"
count: 3
---
apiVersion: v1
kind: Event
metadata: {{name: {prefix}.b, namespace: {ns}}}
involvedObject: {{kind: {kind}, name: {name}, namespace: {ns}, uid: {uid}}}
reason: Scheduled
message: \"Successfully assigned {name}\"
type: Normal
reportingComponent: default-scheduler
reportingInstance: sched-1
action: Binding
eventTime: \"2026-01-02T03:00:00.000000Z\"
---
apiVersion: v1
kind: Event
metadata: {{name: {prefix}.c, namespace: {ns}}}
involvedObject: {{kind: {kind}, name: {name}, namespace: {ns}, uid: {uid}}}
reason: BackOff
message: Back-off restarting
type: Warning
source: {{component: kubelet}}
firstTimestamp: \"2026-01-02T03:50:00Z\"
lastTimestamp: \"2026-01-02T03:50:00Z\"
count: 1
"
    )
}

/// Masks what differs between two equal objects in describe output: keys' values that are
/// creation times, uids and resource versions, and the service account volume's suffix.
fn mask_describe(text: &str) -> String {
    const KEYS: &[&str] = &[
        "CreationTimestamp:",
        "Creation Timestamp:",
        "UID:",
        "Resource Version:",
        "Created on:",
    ];
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        match KEYS.iter().find(|k| trimmed.starts_with(**k)) {
            Some(k) => {
                let indent = &line[..line.len() - trimmed.len()];
                out.push_str(&format!("{indent}{k} X\n"));
            }
            None => out.push_str(line),
        }
    }
    let mut masked = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("kube-api-access-") {
        let end = (i + "kube-api-access-".len() + 5).min(rest.len());
        masked.push_str(&rest[..i]);
        masked.push_str("kube-api-access-XXXXX");
        rest = &rest[end..];
    }
    masked.push_str(rest);
    mask_uuids(&masked)
}

/// UUIDs (a Job's `controller-uid` labels) become `UUID`.
fn mask_uuids(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let shape = |i: usize| -> bool {
        i + 36 <= chars.len()
            && chars[i..i + 36].iter().enumerate().all(|(j, c)| {
                if [8, 13, 18, 23].contains(&j) {
                    *c == '-'
                } else {
                    c.is_ascii_hexdigit() && !c.is_ascii_uppercase()
                }
            })
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if shape(i) {
            out.push_str("UUID");
            i += 36;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn is_age(token: &str) -> bool {
    let token = token.trim_start_matches('(').trim_end_matches(')');
    let mut digits = false;
    let mut units = 0;
    for c in token.chars() {
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

/// Lines with their indentation, inner runs of spaces collapsed and ages masked.
fn relaxed(text: &str) -> String {
    text.lines()
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            let cells: Vec<&str> = line
                .split_whitespace()
                .map(|t| if is_age(t) { "AGE" } else { t })
                .collect();
            format!("{}{}", " ".repeat(indent), cells.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Normalises one run's output; `ns` is its namespace (if the step ran in one).
fn normalize(text: &str, ns: Option<&str>) -> String {
    let text = match ns {
        Some(ns) => replace_word(text, ns, "NS"),
        None => text.to_owned(),
    };
    sort_secret_sizes(&mask_describe(&normalize_identity(&text)))
}

/// Upstream's Secret describer ranges over a Go map: its `key: N bytes` lines come in random
/// order (ours sorted), so each run of them is compared sorted.
fn sort_secret_sizes(text: &str) -> String {
    let is_size = |l: &str| {
        l.strip_suffix(" bytes")
            .and_then(|l| l.rsplit_once(char::is_whitespace))
            .is_some_and(|(key, n)| key.trim_end().ends_with(':') && n.parse::<u64>().is_ok())
    };
    let mut out: Vec<&str> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for line in text.split_inclusive('\n') {
        if is_size(line.trim_end_matches('\n')) {
            run.push(line);
            continue;
        }
        run.sort_unstable();
        out.append(&mut run);
        out.push(line);
    }
    run.sort_unstable();
    out.append(&mut run);
    out.concat()
}

/// Runs `args` with both kubectls (each in its namespace when `namespaced`) and asserts the
/// same exit status, stdout and stderr.
fn check(cmp: &Comparison, args: &[&str], namespaced: bool) -> (Output, Output) {
    let run = |kubectl: &e2e::kubectl::Kubectl, ns: &str| {
        let mut full: Vec<String> = Vec::new();
        if namespaced {
            full.extend(["-n".to_owned(), ns.to_owned()]);
        }
        full.extend(args.iter().map(|a| a.replace("{ns}", ns)));
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        kubectl.run(&refs)
    };
    let (up, ours) = std::thread::scope(|s| {
        let up = s.spawn(|| run(&cmp.upstream, &cmp.ns_upstream));
        let ours = run(&cmp.ours, &cmp.ns_ours);
        (up.join().expect("the upstream kubectl thread"), ours)
    });
    let what = format!("kubectl {}", args.join(" "));
    assert_eq!(
        up.success, ours.success,
        "{what}: exit status differs\nupstream:\n{}{}\nours:\n{}{}",
        up.stdout, up.stderr, ours.stdout, ours.stderr
    );
    let (ns_up, ns_ours) = if namespaced {
        (Some(cmp.ns_upstream.as_str()), Some(cmp.ns_ours.as_str()))
    } else {
        (None, None)
    };
    for (name, u, o) in [
        ("stdout", &up.stdout, &ours.stdout),
        ("stderr", &up.stderr, &ours.stderr),
    ] {
        let (u, o) = (normalize(u, ns_up), normalize(o, ns_ours));
        if u.split_whitespace().any(is_age) {
            assert_eq!(
                relaxed(&o),
                relaxed(&u),
                "{what}: {name} differs (left ours, right upstream)\nours:\n{o}\nupstream:\n{u}"
            );
        } else {
            assert_eq!(o, u, "{what}: {name} differs (left ours, right upstream)");
        }
    }
    (up, ours)
}

#[tokio::test(flavor = "multi_thread")]
async fn describe_and_events_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("describe").await;
    let dir = cluster.dir().to_path_buf();
    let kubectl = &cmp.upstream;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let objects = write("objects.yaml", OBJECTS);
    let limits = write("limits.yaml", LIMITS);
    let workloads = write("workloads.yaml", WORKLOADS);
    let node_status = NODE_STATUS.to_owned();
    kubectl.ok(&[
        "create",
        "-f",
        &write(
            "node.yaml",
            &format!(
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: {NODE}\n  labels: {{kubernetes.io/hostname: {NODE}, node-role.kubernetes.io/worker: \"\"}}\nspec:\n  podCIDR: 10.244.0.0/24\n  podCIDRs: [10.244.0.0/24]\n  taints: [{{key: dedicated, value: x, effect: NoSchedule}}, {{key: gpu, effect: NoExecute}}]\n"
            ),
        ),
    ]);
    kubectl.ok(&[
        "patch",
        "node",
        NODE,
        "--subresource=status",
        "--type=merge",
        "-p",
        &node_status,
    ]);
    let node_uid = kubectl.ok(&["get", "node", NODE, "-o", "jsonpath={.metadata.uid}"]);
    kubectl.ok(&[
        "create",
        "-f",
        &write(
            "node-events.yaml",
            &events_yaml("default", "node-ev", "Node", NODE, &node_uid).replace(
                &format!("uid: {node_uid}}}\nreason: BackOff"),
                &format!("uid: {NODE}}}\nreason: BackOff"),
            ),
        ),
    ]);
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        // Pods need their service account; no controller manager runs here to make it.
        let _ = kubectl.run(&["create", "serviceaccount", "default", "-n", ns]);
        kubectl.ok(&["create", "-f", &objects, "-n", ns]);
        kubectl.ok(&[
            "patch",
            "pod",
            "web-1",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            POD_STATUS,
        ]);
        kubectl.ok(&[
            "patch",
            "deploy",
            "web",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            DEPLOY_STATUS,
        ]);
        let pod_uid = kubectl.ok(&[
            "get",
            "pod",
            "web-1",
            "-n",
            ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ]);
        kubectl.ok(&[
            "create",
            "-f",
            &write(
                &format!("ev-{ns}.yaml"),
                &events_yaml(ns, "web-1", "Pod", "web-1", &pod_uid),
            ),
        ]);
        let deploy_uid = kubectl.ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ]);
        let rs = format!(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-abc\n  namespace: {ns}\n  labels: {{app: web, tier: front, pod-template-hash: abc}}\n  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: {deploy_uid}, controller: true}}]\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web, pod-template-hash: abc}}}}\n  template:\n    metadata: {{labels: {{app: web, tier: front, pod-template-hash: abc}}}}\n    spec:\n      serviceAccountName: robot\n      containers:\n      - name: nginx\n        image: nginx:1.27\n        ports: [{{containerPort: 80}}]\n        env: [{{name: X, valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}}}]\n"
        );
        kubectl.ok(&["create", "-f", &write(&format!("rs-{ns}.yaml"), &rs)]);
        kubectl.ok(&["create", "-f", &limits, "-n", ns]);
        kubectl.ok(&["create", "-f", &workloads, "-n", ns]);
        kubectl.ok(&[
            "patch",
            "job",
            "j",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            JOB_STATUS,
        ]);
    }

    // Pods: one in full, all of them, by prefix, by TYPE/NAME, by selector, without events.
    for args in [
        vec!["describe", "pod", "web-1"],
        vec!["describe", "pods"],
        vec!["describe", "pods", "web"],
        vec!["describe", "pod/web-2"],
        vec!["describe", "pods", "-l", "tier=front"],
        vec!["describe", "pod", "web-1", "--show-events=false"],
        vec!["describe", "pods", "--chunk-size=1"],
    ] {
        check(&cmp, &args, true);
    }
    // The other describers, and the generic one (Lease).
    for args in [
        vec!["describe", "deploy", "web"],
        vec!["describe", "rs"],
        vec!["describe", "svc", "web"],
        // One data key: kubectl 1.33 prints a config map's data in Go's random map order.
        vec!["describe", "cm", "cfg"],
        vec!["describe", "secret", "sec"],
        vec!["describe", "sa"],
        vec!["describe", "ns", "{ns}"],
        vec!["describe", "lease", "lock"],
        vec!["describe", "quota", "q"],
        vec!["describe", "limits", "lr"],
        vec!["describe", "-f", &objects],
        vec!["describe", "job", "j"],
        vec!["describe", "cronjobs"],
        vec!["describe", "ds", "ds"],
        vec!["describe", "sts", "ss"],
        vec!["describe", "pdb", "pdb"],
        vec!["describe", "endpointslices"],
        vec!["describe", "svc", "web"],
        vec!["describe", "rolebinding", "rb"],
        vec!["describe", "pvc", "data"],
        vec!["describe", "role", "r"],
    ] {
        check(&cmp, &args, true);
    }
    check(&cmp, &["describe", "node", NODE], false);
    kubectl.ok(&[
        "create",
        "-f",
        &write(
            "pv.yaml",
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: describe-pv, labels: {t: a}}\nspec:\n  capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce, ReadOnlyMany]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: slow\n  hostPath: {path: /tmp/pv1}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [a, b]}]\n",
        ),
    ]);
    check(&cmp, &["describe", "pv", "describe-pv"], false);
    for role in [
        "admin",
        "view",
        "system:node",
        "cluster-admin",
        "system:discovery",
    ] {
        check(&cmp, &["describe", "clusterrole", role], false);
    }
    // Error paths: not found (one and among others), unknown type, nothing named.
    for args in [
        vec!["describe", "pod", "nope"],
        vec!["describe", "pod/nope"],
        vec!["describe", "pods", "web-1", "nope"],
        vec!["describe", "widgets"],
        vec!["describe"],
        vec!["describe", "cm", "-l", "none=here"],
    ] {
        let (up, _) = check(&cmp, &args, true);
        if args.len() > 1 && args[1] != "cm" && args[1] != "pods" {
            assert!(!up.success, "{args:?} should fail upstream too");
        }
    }

    // kubectl events.
    for args in [
        vec!["events"],
        vec!["events", "-o", "json"],
        vec!["events", "-o", "json", "--show-managed-fields"],
        vec![
            "events",
            "-o",
            "jsonpath={.items[*].metadata.managedFields[*].manager}",
        ],
        vec!["events", "-o", "yaml"],
        vec!["events", "-o", "name"],
        vec!["events", "-o", "jsonpath={.items[*].reason}"],
        vec!["events", "--for", "pod/web-1"],
        vec!["events", "--types=Warning"],
        vec!["events", "--types", "normal", "--no-headers"],
        vec!["events", "--for", "deploy/web"],
        vec!["events", "--types=bogus"],
        vec!["events", "--for", "web-1"],
        vec!["events", "--for", "widgets/x"],
        vec!["events", "-o", "wide"],
    ] {
        check(&cmp, &args, true);
    }
    check(
        &cmp,
        &["events", "-n", "default", "--for", &format!("node/{NODE}")],
        false,
    );
    check(&cmp, &["events", "-n", "kube-public"], false);

    // events -w: the watch's initial events, then one created while it runs.
    let mut up = cmp
        .upstream
        .spawn(&["events", "-w", "-n", &cmp.ns_upstream]);
    let mut ours = cmp.ours.spawn(&["events", "-w", "-n", &cmp.ns_ours]);
    let timeout = std::time::Duration::from_secs(20);
    for bg in [&mut up, &mut ours] {
        bg.wait_for(timeout, "the initial events", |out| out.contains("BackOff"));
    }
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        let late = events_yaml(ns, "late", "Pod", "web-2", "u2")
            .split("---\n")
            .nth(2)
            .unwrap_or_default()
            .replace("reason: BackOff", "reason: Late");
        kubectl.ok(&["create", "-f", &write(&format!("late-{ns}.yaml"), &late)]);
    }
    let up_out = up.wait_for(timeout, "the new event", |out| out.contains("Late"));
    let our_out = ours.wait_for(timeout, "the new event", |out| out.contains("Late"));
    let (up_out, our_out) = (
        relaxed(&normalize(&up_out, Some(&cmp.ns_upstream))),
        relaxed(&normalize(&our_out, Some(&cmp.ns_ours))),
    );
    assert_eq!(
        our_out, up_out,
        "events -w differs (left ours, right upstream)"
    );
}
