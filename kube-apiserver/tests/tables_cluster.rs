//! Server-side tables for the networking, storage, policy, RBAC and coordination resources.

use jiff::Timestamp;
use kube_apiserver::tables::{TableOptions, to_table};
use serde_json::{Value, json};

fn now() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().expect("timestamp")
}

fn meta(name: &str) -> Value {
    json!({"name": name, "creationTimestamp": "2024-12-31T23:59:00Z"})
}

/// Column names and the single row's cells.
fn print(group: &str, resource: &str, obj: Value) -> (Vec<String>, Value) {
    let table = to_table(group, resource, &[obj], &TableOptions::at(now()));
    let columns = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    (columns, table["rows"][0]["cells"].clone())
}

#[test]
fn cluster_resources() {
    let cases: Vec<(&str, &str, Value, &[&str], Value)> = vec![
        (
            "coordination.k8s.io",
            "leases",
            json!({"metadata": meta("kube-scheduler"), "spec": {"holderIdentity": "node-1_abc"}}),
            &["Name", "Holder", "Age"],
            json!(["kube-scheduler", "node-1_abc", "60s"]),
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            json!({"metadata": {"name": "standard", "creationTimestamp": "2024-12-31T23:59:00Z",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
            &[
                "Name",
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age",
            ],
            json!([
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "60s"
            ]),
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"metadata": meta("system-node-critical"), "value": 2000001000}),
            &["Name", "Value", "Global-Default", "PreemptionPolicy", "Age"],
            json!([
                "system-node-critical",
                2000001000,
                false,
                "PreemptLowerPriority",
                "60s"
            ]),
        ),
        (
            "policy",
            "poddisruptionbudgets",
            json!({"metadata": meta("web"), "spec": {"maxUnavailable": "25%"},
                "status": {"disruptionsAllowed": 1}}),
            &[
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age",
            ],
            json!(["web", "N/A", "25%", 1, "60s"]),
        ),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            json!({"metadata": meta("web"), "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]},
                "status": {"currentReplicas": 3, "currentMetrics": [{"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}]}}),
            &[
                "Name",
                "Reference",
                "Targets",
                "MinPods",
                "MaxPods",
                "Replicas",
                "Age",
            ],
            json!(["web", "Deployment/web", "cpu: 45%/80%", "2", 10, 3, "60s"]),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            json!({"metadata": meta("admin"), "rules": []}),
            &["Name", "Created At"],
            json!(["admin", "2024-12-31T23:59:00Z"]),
        ),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            json!({"metadata": meta("rb"), "roleRef": {"kind": "Role", "name": "reader"},
                "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
                    {"kind": "User", "name": "bob"}]}),
            &["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"],
            json!(["rb", "Role/reader", "60s", "alice, bob", "devs", "ci/bot"]),
        ),
        (
            "networking.k8s.io",
            "ingresses",
            json!({"metadata": meta("web"), "spec": {"ingressClassName": "nginx",
                "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
            &["Name", "Class", "Hosts", "Address", "Ports", "Age"],
            json!([
                "web",
                "nginx",
                "a.example.com,b.example.com",
                "1.2.3.4",
                "80, 443",
                "60s"
            ]),
        ),
        (
            "networking.k8s.io",
            "networkpolicies",
            json!({"metadata": meta("deny"), "spec": {"podSelector": {}}}),
            &["Name", "Pod-Selector", "Age"],
            json!(["deny", "<none>", "60s"]),
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({"metadata": meta("web-abc"), "addressType": "IPv4",
                "ports": [{"port": 80}, {"name": "metrics"}],
                "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]},
                    {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]}),
            &["Name", "AddressType", "Ports", "Endpoints", "Age"],
            json!([
                "web-abc",
                "IPv4",
                "80,metrics",
                "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                "60s"
            ]),
        ),
        (
            "",
            "persistentvolumeclaims",
            json!({"metadata": meta("data"), "spec": {"volumeName": "pv-1", "storageClassName": "standard",
                "volumeMode": "Filesystem"},
                "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}),
            &[
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
            json!([
                "data",
                "Bound",
                "pv-1",
                "1Gi",
                "RWO",
                "standard",
                "<unset>",
                "60s",
                "Filesystem"
            ]),
        ),
        (
            "",
            "persistentvolumes",
            json!({"metadata": meta("pv-1"), "spec": {"capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard"},
                "status": {"phase": "Bound"}}),
            &[
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode",
            ],
            json!([
                "pv-1",
                "1Gi",
                "RWO,ROX",
                "Retain",
                "Bound",
                "default/data",
                "standard",
                "<unset>",
                "",
                "60s",
                "<unset>"
            ]),
        ),
        (
            "",
            "resourcequotas",
            json!({"metadata": meta("q"), "status": {
                "hard": {"requests.cpu": "2", "limits.memory": "4Gi", "pods": "10"},
                "used": {"requests.cpu": "500m", "limits.memory": "1Gi", "pods": "3"}}}),
            &["Name", "Age", "Request", "Limit"],
            json!([
                "q",
                "60s",
                "pods: 3/10, requests.cpu: 500m/2",
                "limits.memory: 1Gi/4Gi"
            ]),
        ),
        (
            "",
            "limitranges",
            json!({"metadata": meta("lr")}),
            &["Name", "Created At"],
            json!(["lr", "2024-12-31T23:59:00Z"]),
        ),
    ];
    for (group, resource, obj, columns, expected) in cases {
        let (got_columns, cells) = print(group, resource, obj);
        assert_eq!(got_columns, columns, "{resource}: columns");
        assert_eq!(cells, expected, "{resource}: cells");
    }
}
