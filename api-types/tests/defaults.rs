//! Defaulting of built-in kinds through the JSON entry point, checked field by field against
//! upstream's defaults, and idempotence (defaulting twice = once).

use api_types::defaults::default_object;
use serde_json::{Value, json};

fn defaulted(group: &str, version: &str, kind: &str, obj: Value) -> Value {
    let mut once = obj;
    assert!(
        default_object(group, version, kind, &mut once).expect("defaults"),
        "{kind} is known"
    );
    let mut twice = once.clone();
    default_object(group, version, kind, &mut twice).expect("defaults again");
    assert_eq!(once, twice, "defaulting {kind} twice must equal once");
    once
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(v, |v, seg| match seg.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[seg],
        })
}

fn check(v: &Value, expectations: &[(&str, Value)]) {
    for (path, want) in expectations {
        assert_eq!(at(v, path), want, "at {path} in {v:#}");
    }
}

#[test]
fn pod_defaults() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "a", "image": "nginx",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 5},
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                    "lifecycle": {"preStop": {"httpGet": {"port": 8080}}}
                },
                {"name": "b", "image": "busybox:1.36", "imagePullPolicy": "Never"},
                {"name": "c", "image": "registry:5000/app@sha256:0123"}
            ],
            "initContainers": [{"name": "init", "image": "busybox:latest", "resources": {"limits": {"cpu": "100m"}}}],
            "volumes": [
                {"name": "v0"},
                {"name": "v1", "secret": {"secretName": "s"}},
                {"name": "v2", "configMap": {"name": "c", "defaultMode": 256}},
                {"name": "v3", "hostPath": {"path": "/tmp"}},
                {"name": "v4", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
            ]
        }
    });
    let got = defaulted("", "v1", "Pod", pod);
    check(
        &got,
        &[
            ("spec.restartPolicy", json!("Always")),
            ("spec.dnsPolicy", json!("ClusterFirst")),
            ("spec.terminationGracePeriodSeconds", json!(30)),
            ("spec.schedulerName", json!("default-scheduler")),
            ("spec.securityContext", json!({})),
            ("spec.enableServiceLinks", json!(true)),
            (
                "spec.containers.0.terminationMessagePath",
                json!("/dev/termination-log"),
            ),
            ("spec.containers.0.terminationMessagePolicy", json!("File")),
            ("spec.containers.0.imagePullPolicy", json!("Always")),
            ("spec.containers.0.ports.0.protocol", json!("TCP")),
            (
                "spec.containers.0.env.0.valueFrom.fieldRef.apiVersion",
                json!("v1"),
            ),
            (
                "spec.containers.0.livenessProbe",
                json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                       "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}),
            ),
            ("spec.containers.0.readinessProbe.periodSeconds", json!(5)),
            (
                "spec.containers.0.readinessProbe.failureThreshold",
                json!(3),
            ),
            (
                "spec.containers.0.lifecycle.preStop.httpGet.scheme",
                json!("HTTP"),
            ),
            // Only missing requests come from limits.
            (
                "spec.containers.0.resources.requests",
                json!({"cpu": "500m", "memory": "1Gi"}),
            ),
            ("spec.containers.1.imagePullPolicy", json!("Never")),
            ("spec.containers.1.resources", json!({})),
            ("spec.containers.2.imagePullPolicy", json!("IfNotPresent")),
            ("spec.initContainers.0.imagePullPolicy", json!("Always")),
            (
                "spec.initContainers.0.resources.requests",
                json!({"cpu": "100m"}),
            ),
            ("spec.volumes.0", json!({"name": "v0", "emptyDir": {}})),
            ("spec.volumes.1.secret.defaultMode", json!(420)),
            ("spec.volumes.2.configMap.defaultMode", json!(256)),
            ("spec.volumes.3.hostPath.type", json!("")),
            ("spec.volumes.4.projected.defaultMode", json!(420)),
            (
                "spec.volumes.4.projected.sources.0.serviceAccountToken.expirationSeconds",
                json!(3600),
            ),
        ],
    );
    assert!(
        got.get("status").is_none(),
        "defaulting adds no status to a pod"
    );
}

#[test]
fn pod_keeps_explicit_values_and_host_network_ports() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {
            "restartPolicy": "Never", "dnsPolicy": "Default", "terminationGracePeriodSeconds": 0,
            "schedulerName": "mine", "enableServiceLinks": false, "hostNetwork": true,
            "containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 9090, "protocol": "UDP"}]}]
        }
    });
    let got = defaulted("", "v1", "Pod", pod);
    check(
        &got,
        &[
            ("spec.restartPolicy", json!("Never")),
            ("spec.dnsPolicy", json!("Default")),
            ("spec.terminationGracePeriodSeconds", json!(0)),
            ("spec.schedulerName", json!("mine")),
            ("spec.enableServiceLinks", json!(false)),
            ("spec.containers.0.ports.0.protocol", json!("UDP")),
            ("spec.containers.0.ports.0.hostPort", json!(9090)),
        ],
    );
}

#[test]
fn deployment_defaults() {
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "resources": {"limits": {"cpu": "1"}}}]}}
        }
    });
    let got = defaulted("apps", "v1", "Deployment", d);
    check(
        &got,
        &[
            ("spec.replicas", json!(1)),
            (
                "spec.strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            ),
            ("spec.revisionHistoryLimit", json!(10)),
            ("spec.progressDeadlineSeconds", json!(600)),
            ("spec.template.spec.restartPolicy", json!("Always")),
            (
                "spec.template.spec.containers.0.imagePullPolicy",
                json!("IfNotPresent"),
            ),
            // Templates are not pods: no requests from limits, no enableServiceLinks.
            (
                "spec.template.spec.containers.0.resources",
                json!({"limits": {"cpu": "1"}}),
            ),
            ("spec.template.spec.enableServiceLinks", Value::Null),
        ],
    );

    let recreate = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "selector": {},
                 "template": {"spec": {"containers": []}}}
    });
    let got = defaulted("apps", "v1", "Deployment", recreate);
    check(
        &got,
        &[
            ("spec.replicas", json!(0)),
            ("spec.strategy", json!({"type": "Recreate"})),
        ],
    );
}

#[test]
fn workload_defaults() {
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let rs = defaulted(
        "apps",
        "v1",
        "ReplicaSet",
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template}}),
    );
    check(
        &rs,
        &[
            ("spec.replicas", json!(1)),
            ("spec.template.spec.dnsPolicy", json!("ClusterFirst")),
        ],
    );

    let sts = defaulted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "s", "template": template,
                        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
    );
    check(
        &sts,
        &[
            ("spec.podManagementPolicy", json!("OrderedReady")),
            (
                "spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            ),
            ("spec.revisionHistoryLimit", json!(10)),
            ("spec.replicas", json!(1)),
            (
                "spec.persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            ),
            (
                "spec.volumeClaimTemplates.0.spec.volumeMode",
                json!("Filesystem"),
            ),
            ("spec.volumeClaimTemplates.0.status.phase", json!("Pending")),
        ],
    );

    let ds = defaulted(
        "apps",
        "v1",
        "DaemonSet",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template}}),
    );
    check(
        &ds,
        &[
            (
                "spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            ),
            ("spec.revisionHistoryLimit", json!(10)),
        ],
    );

    let rc = defaulted(
        "",
        "v1",
        "ReplicationController",
        json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"},
               "spec": {"template": template}}),
    );
    check(
        &rc,
        &[
            ("spec.replicas", json!(1)),
            ("spec.selector", json!({"app": "a"})),
            ("metadata.labels", json!({"app": "a"})),
        ],
    );
}

#[test]
fn batch_defaults() {
    let template = json!({"metadata": {"labels": {"job": "j"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
    let job = defaulted(
        "batch",
        "v1",
        "Job",
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template}}),
    );
    check(
        &job,
        &[
            ("spec.completions", json!(1)),
            ("spec.parallelism", json!(1)),
            ("spec.backoffLimit", json!(6)),
            ("spec.completionMode", json!("NonIndexed")),
            ("spec.suspend", json!(false)),
            ("spec.podReplacementPolicy", json!("TerminatingOrFailed")),
            ("spec.template.spec.restartPolicy", json!("Never")),
            ("metadata.labels", json!({"job": "j"})),
        ],
    );
    // Parallel job with a work queue: completions stays unset.
    let job = defaulted(
        "batch",
        "v1",
        "Job",
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
               "spec": {"parallelism": 3, "backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 4,
                        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                        "template": template}}),
    );
    check(
        &job,
        &[
            ("spec.completions", json!(4)),
            ("spec.parallelism", json!(3)),
            ("spec.backoffLimit", json!(i32::MAX)),
            ("spec.podReplacementPolicy", json!("Failed")),
            (
                "spec.podFailurePolicy.rules.0.onPodConditions.0.status",
                json!("True"),
            ),
        ],
    );

    let cj = defaulted(
        "batch",
        "v1",
        "CronJob",
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
               "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}}),
    );
    check(
        &cj,
        &[
            ("spec.concurrencyPolicy", json!("Allow")),
            ("spec.suspend", json!(false)),
            ("spec.successfulJobsHistoryLimit", json!(3)),
            ("spec.failedJobsHistoryLimit", json!(1)),
            (
                "spec.jobTemplate.spec.template.spec.dnsPolicy",
                json!("ClusterFirst"),
            ),
        ],
    );
}

#[test]
fn service_defaults() {
    let cases = [
        (
            json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}),
            vec![
                ("spec.type", json!("ClusterIP")),
                ("spec.sessionAffinity", json!("None")),
                ("spec.ports.0.protocol", json!("TCP")),
                ("spec.ports.0.targetPort", json!(80)),
                ("spec.ports.1.protocol", json!("UDP")),
                ("spec.ports.1.targetPort", json!("dns")),
                ("spec.internalTrafficPolicy", json!("Cluster")),
                ("spec.ipFamilyPolicy", json!("SingleStack")),
                ("spec.externalTrafficPolicy", Value::Null),
            ],
        ),
        (
            json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 0}]}),
            vec![
                ("spec.externalTrafficPolicy", json!("Cluster")),
                ("spec.ports.0.targetPort", json!(80)),
                ("spec.allocateLoadBalancerNodePorts", Value::Null),
            ],
        ),
        (
            json!({"type": "LoadBalancer", "sessionAffinity": "ClientIP"}),
            vec![
                ("spec.externalTrafficPolicy", json!("Cluster")),
                ("spec.allocateLoadBalancerNodePorts", json!(true)),
                (
                    "spec.sessionAffinityConfig",
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                ),
            ],
        ),
        (
            json!({"type": "ExternalName", "externalName": "example.com"}),
            vec![
                ("spec.internalTrafficPolicy", Value::Null),
                ("spec.ipFamilyPolicy", Value::Null),
            ],
        ),
        (
            json!({"clusterIP": "None"}),
            vec![("spec.ipFamilyPolicy", Value::Null)],
        ),
        (
            json!({"sessionAffinity": "None", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
            vec![("spec.sessionAffinityConfig", Value::Null)],
        ),
    ];
    for (spec, expectations) in cases {
        let svc =
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec});
        let got = defaulted("", "v1", "Service", svc);
        check(&got, &expectations);
    }
}

#[test]
fn other_core_defaults() {
    let ns = defaulted(
        "",
        "v1",
        "Namespace",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    );
    check(
        &ns,
        &[
            ("spec.finalizers", json!(["kubernetes"])),
            (
                "metadata.labels",
                json!({"kubernetes.io/metadata.name": "team"}),
            ),
            ("status.phase", json!("Active")),
        ],
    );
    let secret = defaulted(
        "",
        "v1",
        "Secret",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    );
    check(&secret, &[("type", json!("Opaque"))]);
    let tls = defaulted(
        "",
        "v1",
        "Secret",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls"}),
    );
    check(&tls, &[("type", json!("kubernetes.io/tls"))]);
    let pvc = defaulted(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}}),
    );
    check(
        &pvc,
        &[
            ("spec.volumeMode", json!("Filesystem")),
            ("status.phase", json!("Pending")),
        ],
    );
    let pv = defaulted(
        "",
        "v1",
        "PersistentVolume",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"}, "spec": {"hostPath": {"path": "/x"}}}),
    );
    check(
        &pv,
        &[
            ("spec.persistentVolumeReclaimPolicy", json!("Retain")),
            ("spec.volumeMode", json!("Filesystem")),
            ("status.phase", json!("Pending")),
        ],
    );
    let node = defaulted(
        "",
        "v1",
        "Node",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}}),
    );
    check(&node, &[("status.allocatable", json!({"cpu": "4"}))]);
    let ep = defaulted(
        "",
        "v1",
        "Endpoints",
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 80}]}]}),
    );
    check(&ep, &[("subsets.0.ports.0.protocol", json!("TCP"))]);
}

#[test]
fn unknown_kinds_untouched_and_bad_json_rejected() {
    let original = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"x": 1}});
    let mut obj = original.clone();
    assert!(!default_object("example.com", "v1", "Widget", &mut obj).expect("no error"));
    assert_eq!(obj, original);
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
    assert!(!default_object("", "v1", "ConfigMap", &mut cm).expect("no error"));

    let mut bad = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": "nope"}});
    let err = default_object("", "v1", "Pod", &mut bad).expect_err("containers must be a list");
    assert!(err.to_string().starts_with("decoding Pod: "), "{err}");
}
