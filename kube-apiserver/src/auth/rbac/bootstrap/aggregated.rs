//! `admin`, `edit` and `view` and the `system:aggregate-to-*` roles they aggregate.
//! `view` aggregates into `edit`, and `edit` into `admin`, through their own labels.

use api_types::k8s_openapi::api::rbac::v1::ClusterRole;

use super::{
    AGGREGATE_TO_ADMIN, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW, READ, READ_WRITE, WRITE,
    aggregated_role, role, rule,
};

pub(super) fn cluster_roles() -> Vec<ClusterRole> {
    vec![
        aggregated_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated_role("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated_role("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(
                    READ_WRITE,
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                ),
            ],
        ),
        role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            vec![
                rule(
                    READ,
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], &[""], &["serviceaccounts"]),
                rule(
                    WRITE,
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                ),
                rule(&["create"], &[""], &["pods/eviction"]),
                rule(
                    WRITE,
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                ),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
                rule(
                    WRITE,
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                ),
                rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(WRITE, &["batch"], &["cronjobs", "jobs"]),
                rule(
                    WRITE,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                ),
                rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    WRITE,
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                ),
                rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
            ],
        ),
        role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            vec![
                rule(
                    READ,
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                ),
                rule(
                    READ,
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                ),
                rule(READ, &[""], &["namespaces"]),
                rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                ),
                rule(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    READ,
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                ),
                rule(
                    READ,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                ),
                rule(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    READ,
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                ),
            ],
        ),
    ]
}
