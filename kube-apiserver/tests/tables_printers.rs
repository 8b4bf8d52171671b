//! Server-side tables: upstream's printer columns and cells for the built-in resources.

use jiff::Timestamp;
use kube_apiserver::tables::format::human_duration;
use kube_apiserver::tables::{IncludeObject, TableOptions, columns_for, to_table};
use serde_json::{Value, json};

/// The fixed "now" of every test.
fn now() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().expect("timestamp")
}

/// `now` minus some seconds, as the API writes timestamps.
fn ago(seconds: i64) -> String {
    Timestamp::from_second(now().as_second() - seconds)
        .expect("timestamp")
        .to_string()
}

fn meta(name: &str, age_seconds: i64) -> Value {
    json!({"name": name, "namespace": "default", "uid": format!("uid-{name}"),
        "resourceVersion": "7", "creationTimestamp": ago(age_seconds)})
}

/// The cells of the single row of a one-object table.
fn cells(group: &str, resource: &str, obj: Value) -> Vec<Value> {
    let table = to_table(group, resource, &[obj], &TableOptions::at(now()));
    table["rows"][0]["cells"].as_array().expect("cells").clone()
}

fn column_names(group: &str, resource: &str) -> Vec<(String, i32)> {
    columns_for(group, resource)
        .iter()
        .map(|c| (c.name.to_string(), c.priority))
        .collect()
}

fn names(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    list.iter().map(|(n, p)| (n.to_string(), *p)).collect()
}

#[test]
fn human_durations_match_upstream() {
    let cases = [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (599, "9m59s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (8 * 3600 + 59, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (51 * 3600, "2d3h"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (730 * 86400, "2y"),
        (740 * 86400, "2y10d"),
        (8 * 365 * 86400, "8y"),
    ];
    for (seconds, expected) in cases {
        assert_eq!(human_duration(seconds), expected, "{seconds}s");
    }
}

fn pod(status: Value) -> Value {
    json!({"metadata": meta("p", 300),
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        "status": status})
}

fn running(name: &str, restarts: i64) -> Value {
    json!({"name": name, "ready": true, "restartCount": restarts,
        "state": {"running": {"startedAt": ago(100)}}})
}

#[test]
fn pod_status_column() {
    let cases: Vec<(&str, Value, &str, &str, &str)> = vec![
        // (case, pod, READY, STATUS, RESTARTS)
        (
            "pending",
            pod(json!({"phase": "Pending"})),
            "0/1",
            "Pending",
            "0",
        ),
        (
            "container creating",
            pod(
                json!({"phase": "Pending", "containerStatuses": [{"name": "app", "ready": false,
                "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
            ),
            "0/1",
            "ContainerCreating",
            "0",
        ),
        (
            "running",
            pod(json!({"phase": "Running", "containerStatuses": [running("app", 0)]})),
            "1/1",
            "Running",
            "0",
        ),
        (
            "completed",
            pod(
                json!({"phase": "Succeeded", "containerStatuses": [{"name": "app", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
            ),
            "0/1",
            "Completed",
            "0",
        ),
        (
            "error",
            pod(
                json!({"phase": "Failed", "containerStatuses": [{"name": "app", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
            ),
            "0/1",
            "Error",
            "0",
        ),
        (
            "exit code without reason",
            pod(
                json!({"phase": "Failed", "containerStatuses": [{"name": "app",
                "state": {"terminated": {"exitCode": 137}}}]}),
            ),
            "0/1",
            "ExitCode:137",
            "0",
        ),
        (
            "crash loop with restarts",
            pod(
                json!({"phase": "Running", "containerStatuses": [{"name": "app", "ready": false,
                "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}]}),
            ),
            "0/1",
            "CrashLoopBackOff",
            "5 (30s ago)",
        ),
        (
            "terminating",
            {
                let mut p =
                    pod(json!({"phase": "Running", "containerStatuses": [running("app", 0)]}));
                p["metadata"]["deletionTimestamp"] = json!(ago(1));
                p
            },
            "1/1",
            "Terminating",
            "0",
        ),
        (
            "node lost while deleting",
            {
                let mut p = pod(json!({"phase": "Running", "reason": "NodeLost"}));
                p["metadata"]["deletionTimestamp"] = json!(ago(1));
                p
            },
            "0/1",
            "Unknown",
            "0",
        ),
        (
            "scheduling gated",
            pod(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})),
            "0/1",
            "SchedulingGated",
            "0",
        ),
        (
            "evicted",
            pod(json!({"phase": "Failed", "reason": "Evicted"})),
            "0/1",
            "Evicted",
            "0",
        ),
        (
            "completed container next to a running one, pod not ready",
            json!({"metadata": meta("p", 300),
                "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
                "status": {"phase": "Running", "containerStatuses": [running("a", 0),
                    {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}),
            "1/2",
            "NotReady",
            "0",
        ),
    ];
    for (name, pod, ready, status, restarts) in cases {
        let row = cells("", "pods", pod);
        assert_eq!(row[1], json!(ready), "{name}: READY");
        assert_eq!(row[2], json!(status), "{name}: STATUS");
        assert_eq!(row[3], json!(restarts), "{name}: RESTARTS");
        assert_eq!(row[4], json!("5m"), "{name}: AGE");
    }
}

fn init_pod(init_statuses: Value) -> Value {
    json!({"metadata": meta("p", 60),
        "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "app"}]},
        "status": {"phase": "Pending", "initContainerStatuses": init_statuses,
            "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "PodInitializing"}}}]}})
}

#[test]
fn pod_init_status() {
    let done =
        json!({"name": "i1", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
    let cases = vec![
        (
            "second init container running",
            init_pod(json!([done, {"name": "i2", "state": {"running": {}}}])),
            "Init:1/2",
        ),
        (
            "first init container waiting to start",
            init_pod(
                json!([{"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}},
                {"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}}]),
            ),
            "Init:0/2",
        ),
        (
            "init container crash looping",
            init_pod(json!([done, {"name": "i2", "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])),
            "Init:CrashLoopBackOff",
        ),
        (
            "init container failed without a reason",
            init_pod(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}])),
            "Init:ExitCode:2",
        ),
        (
            "init container killed by a signal",
            init_pod(
                json!([{"name": "i1", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]),
            ),
            "Init:Signal:9",
        ),
        (
            "init container failed with a reason",
            init_pod(
                json!([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]),
            ),
            "Init:Error",
        ),
    ];
    for (name, pod, status) in cases {
        assert_eq!(cells("", "pods", pod)[2], json!(status), "{name}");
    }
}

#[test]
fn sidecar_containers_count_towards_ready_and_restarts() {
    let pod = json!({"metadata": meta("p", 60),
        "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
            "containers": [{"name": "app"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true,
                "restartCount": 2, "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(200)}}}],
            "containerStatuses": [running("app", 1)]}});
    let row = cells("", "pods", pod);
    assert_eq!(row[1], json!("2/2"));
    assert_eq!(row[2], json!("Running"));
    assert_eq!(row[3], json!("3 (3m20s ago)"));
}

#[test]
fn pod_wide_columns_and_row_conditions() {
    let pod = json!({"metadata": meta("web-1", 90),
        "spec": {"nodeName": "n1", "containers": [{"name": "app"}],
            "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
            "nominatedNodeName": "n2",
            "conditions": [{"type": "example.com/lb", "status": "True"},
                {"type": "example.com/dns", "status": "False"}],
            "containerStatuses": [running("app", 0)]}});
    let table = to_table("", "pods", &[pod], &TableOptions::at(now()));
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "web-1", "1/1", "Running", "0", "90s", "10.0.0.5", "n1", "n2", "1/2"
        ])
    );
    assert!(table["rows"][0].get("conditions").is_none());

    let bare = cells("", "pods", pod_with_phase("Pending"));
    assert_eq!(
        bare[5..],
        [
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    let done = to_table(
        "",
        "pods",
        &[pod_with_phase("Succeeded")],
        &TableOptions::at(now()),
    );
    assert_eq!(
        done["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."}])
    );
}

fn pod_with_phase(phase: &str) -> Value {
    pod(json!({"phase": phase}))
}

#[test]
fn pod_columns() {
    assert_eq!(
        column_names("", "pods"),
        names(&[
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ])
    );
    let table = to_table("", "pods", &[], &TableOptions::at(now()));
    let first = &table["columnDefinitions"][0];
    assert_eq!(first["name"], "Name");
    assert_eq!(first["type"], "string");
    assert_eq!(first["format"], "name");
    assert_eq!(first["priority"], 0);
    assert!(first["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(table["rows"], json!([]));
}

#[test]
fn deployments() {
    let d = json!({"metadata": meta("web", 2 * 86400 + 3 * 3600),
        "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]},
                    {"key": "canary", "operator": "DoesNotExist"}]},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"},
                {"name": "log", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    assert_eq!(
        cells("apps", "deployments", d),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("2d3h"),
            json!("web,log"),
            json!("nginx:1.26,busybox"),
            json!("app=web,!canary,tier in (back,front)")
        ]
    );
    assert_eq!(
        column_names("apps", "deployments"),
        names(&[
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ])
    );
    // A fresh deployment without status shows zeros.
    let fresh = json!({"metadata": meta("new", 1), "spec": {"replicas": 1,
        "template": {"spec": {"containers": []}}}});
    let row = cells("apps", "deployments", fresh);
    assert_eq!(row[1..4], [json!("0/1"), json!(0), json!(0)]);
    assert_eq!(row[7], json!("<none>"));
}

#[test]
fn other_workloads() {
    let template = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
    let rs = json!({"metadata": meta("rs", 60), "spec": {"replicas": 2, "template": template,
        "selector": {"matchLabels": {"a": "b"}}}, "status": {"replicas": 2, "readyReplicas": 1}});
    assert_eq!(
        cells("apps", "replicasets", rs),
        vec![
            json!("rs"),
            json!(2),
            json!(2),
            json!(1),
            json!("60s"),
            json!("c"),
            json!("i"),
            json!("a=b")
        ]
    );

    let sts = json!({"metadata": meta("db", 60), "spec": {"replicas": 3, "template": template},
        "status": {"readyReplicas": 3}});
    assert_eq!(
        cells("apps", "statefulsets", sts),
        vec![
            json!("db"),
            json!("3/3"),
            json!("60s"),
            json!("c"),
            json!("i")
        ]
    );

    let ds = json!({"metadata": meta("agent", 60), "spec": {"template": {"spec": {
            "nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "c", "image": "i"}]}},
            "selector": {"matchLabels": {"app": "agent"}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
            "updatedNumberScheduled": 3, "numberAvailable": 2}});
    assert_eq!(
        cells("apps", "daemonsets", ds),
        vec![
            json!("agent"),
            json!(3),
            json!(3),
            json!(2),
            json!(3),
            json!(2),
            json!("kubernetes.io/os=linux"),
            json!("60s"),
            json!("c"),
            json!("i"),
            json!("app=agent")
        ]
    );

    let rc = json!({"metadata": meta("rc", 60), "spec": {"replicas": 1, "selector": {"app": "x"},
        "template": template}, "status": {"replicas": 1, "readyReplicas": 1}});
    assert_eq!(cells("", "replicationcontrollers", rc)[7], json!("app=x"));
}

#[test]
fn jobs_and_cronjobs() {
    let template = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
    let cases = vec![
        (
            "running with completions",
            json!({"metadata": meta("j", 600), "spec": {"completions": 3, "template": template},
                "status": {"succeeded": 1, "startTime": ago(125)}}),
            ("Running", "1/3", "2m5s"),
        ),
        (
            "complete",
            json!({"metadata": meta("j", 600), "spec": {"completions": 1, "template": template},
                "status": {"succeeded": 1, "startTime": ago(500), "completionTime": ago(440),
                    "conditions": [{"type": "Complete", "status": "True"}]}}),
            ("Complete", "1/1", "60s"),
        ),
        (
            "parallel work queue",
            json!({"metadata": meta("j", 600), "spec": {"parallelism": 4, "template": template},
                "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}),
            ("Suspended", "0/1 of 4", ""),
        ),
        (
            "failed",
            json!({"metadata": meta("j", 600), "spec": {"template": template},
                "status": {"conditions": [{"type": "Failed", "status": "True"}]}}),
            ("Failed", "0/1", ""),
        ),
    ];
    for (name, job, (status, completions, duration)) in cases {
        let row = cells("batch", "jobs", job);
        assert_eq!(
            row[1..4],
            [json!(status), json!(completions), json!(duration)],
            "{name}"
        );
        assert_eq!(row[4], json!("10m"), "{name}");
    }

    let cj = json!({"metadata": meta("nightly", 86400),
        "spec": {"schedule": "0 3 * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": template}}},
        "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(3600)}});
    assert_eq!(
        cells("batch", "cronjobs", cj),
        vec![
            json!("nightly"),
            json!("0 3 * * *"),
            json!("<none>"),
            json!("False"),
            json!(1),
            json!("60m"),
            json!("24h"),
            json!("c"),
            json!("i"),
            json!("<none>")
        ]
    );
}

#[test]
fn services() {
    let svc = |spec: Value, status: Value| json!({"metadata": meta("s", 10), "spec": spec, "status": status});
    let cases = vec![
        (
            "cluster ip",
            svc(
                json!({"type": "ClusterIP", "clusterIPs": ["10.96.0.10"], "selector": {"app": "dns"},
                "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}),
                json!({}),
            ),
            vec![
                "s",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "53/UDP,53/TCP",
                "10s",
                "app=dns",
            ],
        ),
        (
            "headless",
            svc(
                json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}),
                json!({}),
            ),
            vec![
                "s",
                "ClusterIP",
                "None",
                "<none>",
                "<none>",
                "10s",
                "<none>",
            ],
        ),
        (
            "node port with external ips",
            svc(
                json!({"type": "NodePort", "clusterIPs": ["10.96.0.2"], "externalIPs": ["1.2.3.4"],
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
                json!({}),
            ),
            vec![
                "s",
                "NodePort",
                "10.96.0.2",
                "1.2.3.4",
                "80:30080/TCP",
                "10s",
                "<none>",
            ],
        ),
        (
            "load balancer pending",
            svc(
                json!({"type": "LoadBalancer", "clusterIPs": ["10.96.0.3"],
                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
                json!({}),
            ),
            vec![
                "s",
                "LoadBalancer",
                "10.96.0.3",
                "<pending>",
                "443:31443/TCP",
                "10s",
                "<none>",
            ],
        ),
        (
            "load balancer provisioned",
            svc(
                json!({"type": "LoadBalancer", "clusterIPs": ["10.96.0.3"], "externalIPs": ["9.9.9.9"],
                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
                json!({"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}]}}),
            ),
            vec![
                "s",
                "LoadBalancer",
                "10.96.0.3",
                "5.6.7.8,lb.example.com,9.9.9.9",
                "443:31443/TCP",
                "10s",
                "<none>",
            ],
        ),
        (
            "external name",
            svc(
                json!({"type": "ExternalName", "externalName": "db.example.com"}),
                json!({}),
            ),
            vec![
                "s",
                "ExternalName",
                "<none>",
                "db.example.com",
                "<none>",
                "10s",
                "<none>",
            ],
        ),
    ];
    for (name, svc, expected) in cases {
        assert_eq!(cells("", "services", svc), expected, "{name}");
    }
    assert_eq!(
        column_names("", "services"),
        names(&[
            ("Name", 0),
            ("Type", 0),
            ("Cluster-IP", 0),
            ("External-IP", 0),
            ("Port(s)", 0),
            ("Age", 0),
            ("Selector", 1)
        ])
    );
}

#[test]
fn nodes() {
    let node = |labels: Value, unschedulable: bool, conditions: Value| {
        json!({"metadata": {"name": "n1", "creationTimestamp": ago(10 * 86400), "labels": labels},
            "spec": {"unschedulable": unschedulable},
            "status": {"conditions": conditions,
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian GNU/Linux 12 (bookworm)",
                    "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.6.20"}}})
    };
    let ready =
        json!([{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]);
    let row = cells(
        "",
        "nodes",
        node(
            json!({"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "",
            "kubernetes.io/role": "master"}),
            true,
            ready.clone(),
        ),
    );
    assert_eq!(
        row,
        vec![
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,etcd,master"),
            json!("10d"),
            json!("v1.33.0"),
            json!("10.0.0.1"),
            json!("<none>"),
            json!("Debian GNU/Linux 12 (bookworm)"),
            json!("6.1.0"),
            json!("containerd://1.6.20")
        ]
    );
    let not_ready = cells(
        "",
        "nodes",
        node(
            json!({}),
            false,
            json!([{"type": "Ready", "status": "Unknown"}]),
        ),
    );
    assert_eq!(not_ready[1..3], [json!("NotReady"), json!("<none>")]);
    let unknown = cells("", "nodes", node(json!({}), false, json!([])));
    assert_eq!(unknown[1], json!("Unknown"));
    assert_eq!(
        column_names("", "nodes"),
        names(&[
            ("Name", 0),
            ("Status", 0),
            ("Roles", 0),
            ("Age", 0),
            ("Version", 0),
            ("Internal-IP", 1),
            ("External-IP", 1),
            ("OS-Image", 1),
            ("Kernel-Version", 1),
            ("Container-Runtime", 1)
        ])
    );
}

#[test]
fn namespaces_configmaps_secrets_serviceaccounts() {
    let ns = json!({"metadata": meta("kube-system", 3600), "status": {"phase": "Active"}});
    assert_eq!(
        cells("", "namespaces", ns),
        vec![json!("kube-system"), json!("Active"), json!("60m")]
    );

    let cm = json!({"metadata": meta("cfg", 5), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(
        cells("", "configmaps", cm),
        vec![json!("cfg"), json!(3), json!("5s")]
    );
    let empty = json!({"metadata": meta("empty", 5)});
    assert_eq!(cells("", "configmaps", empty)[1], json!(0));

    let secret = json!({"metadata": meta("tls", 5), "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""}});
    assert_eq!(
        cells("", "secrets", secret),
        vec![
            json!("tls"),
            json!("kubernetes.io/tls"),
            json!(2),
            json!("5s")
        ]
    );

    let sa = json!({"metadata": meta("default", 5), "secrets": [{"name": "tok"}]});
    assert_eq!(
        cells("", "serviceaccounts", sa),
        vec![json!("default"), json!(1), json!("5s")]
    );
}

#[test]
fn events_and_endpoints() {
    let ev = json!({"metadata": meta("p.17a", 100), "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container\n",
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{app}"},
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": ago(100), "lastTimestamp": ago(10), "count": 7});
    assert_eq!(
        cells("", "events", ev),
        vec![
            json!("10s"),
            json!("Warning"),
            json!("BackOff"),
            json!("pod/p"),
            json!("spec.containers{app}"),
            json!("kubelet, n1"),
            json!("Back-off restarting failed container"),
            json!("100s"),
            json!(7),
            json!("p.17a")
        ]
    );
    let series = json!({"metadata": meta("e2", 100), "type": "Normal", "reason": "Pulled",
        "eventTime": "2024-12-31T23:58:00.000000Z", "reportingController": "kubelet",
        "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled",
        "series": {"count": 4, "lastObservedTime": "2024-12-31T23:59:30.000000Z"}});
    let row = cells("events.k8s.io", "events", series);
    assert_eq!(row[0], json!("30s"));
    assert_eq!(
        row[5..9],
        [json!("kubelet"), json!("pulled"), json!("2m"), json!(4)]
    );

    let ep = json!({"metadata": meta("svc", 10), "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
    assert_eq!(
        cells("", "endpoints", ep)[1],
        json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...")
    );
    let none = json!({"metadata": meta("svc", 10)});
    assert_eq!(cells("", "endpoints", none)[1], json!("<none>"));
}

#[test]
fn default_table_for_unknown_resources_and_crds() {
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "creationTimestamp": "2024-12-01T10:00:00Z"}});
    for (group, resource) in [
        ("example.com", "widgets"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        let table = to_table(
            group,
            resource,
            std::slice::from_ref(&widget),
            &TableOptions::at(now()),
        );
        let columns: Vec<(&str, &str)> = table["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .filter_map(|c| Some((c["name"].as_str()?, c["type"].as_str()?)))
            .collect();
        assert_eq!(
            columns,
            [("Name", "string"), ("Created At", "date")],
            "{resource}"
        );
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["w", "2024-12-01T10:00:00Z"]),
            "{resource}"
        );
    }
}

#[test]
fn include_object_modes_and_list_metadata() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg", 5), "data": {"k": "v"}});
    let mut opts = TableOptions::at(now());
    opts.resource_version = Some("42".to_string());
    opts.continue_token = Some("tok".to_string());

    let table = to_table("", "configmaps", std::slice::from_ref(&cm), &opts);
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        table["metadata"],
        json!({"resourceVersion": "42", "continue": "tok"})
    );
    assert_eq!(
        table["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm["metadata"]})
    );

    opts.include_object = IncludeObject::Object;
    let table = to_table("", "configmaps", std::slice::from_ref(&cm), &opts);
    assert_eq!(table["rows"][0]["object"], cm);

    opts.include_object = IncludeObject::None;
    let table = to_table("", "configmaps", std::slice::from_ref(&cm), &opts);
    assert!(table["rows"][0].get("object").is_none());
    assert_eq!(table["rows"][0]["cells"], json!(["cfg", 1, "5s"]));

    assert_eq!(IncludeObject::parse(""), Some(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse("Object"), Some(IncludeObject::Object));
    assert_eq!(IncludeObject::parse("None"), Some(IncludeObject::None));
    assert_eq!(IncludeObject::parse("All"), None);
}

#[test]
fn rows_follow_object_order_and_missing_timestamps_are_unknown() {
    let a = json!({"metadata": {"name": "a"}});
    let b = json!({"metadata": meta("b", 1)});
    let table = to_table("", "namespaces", &[a, b], &TableOptions::at(now()));
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["cells"], json!(["a", "", "<unknown>"]));
    assert_eq!(rows[1]["cells"][0], json!("b"));
}
