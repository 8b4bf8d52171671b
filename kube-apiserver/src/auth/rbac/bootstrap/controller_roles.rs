//! The `system:controller:<name>` ClusterRoles of kube-controller-manager's controllers, each
//! bound to the service account `kube-system/<name>` the controller manager runs that
//! controller as (with `--use-service-account-credentials`).

use api_types::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};

use super::{EVENT_WRITE, READ, binding, named, role, rule, subject};

/// The prefix of every controller role and binding name.
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

/// Every controller posts events through both event APIs.
fn events() -> PolicyRule {
    rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"])
}

fn controller(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    role(&format!("{CONTROLLER_ROLE_PREFIX}{name}"), &[], rules)
}

/// What the garbage collector and namespace deletion may touch in any group.
const ANY: &[&str] = &["*"];

pub(super) fn cluster_roles() -> Vec<ClusterRole> {
    let crud_no_patch = &["create", "delete", "get", "list", "update", "watch"];
    let controller_revisions = rule(
        &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        &["apps"],
        &["controllerrevisions"],
    );
    vec![
        controller(
            "attachdetach-controller",
            vec![
                rule(
                    &["list", "watch"],
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                rule(READ, &[""], &["nodes"]),
                rule(&["patch", "update"], &[""], &["nodes/status"]),
                rule(&["list", "watch"], &[""], &["pods"]),
                events(),
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &["storage.k8s.io"],
                    &["volumeattachments"],
                ),
                rule(READ, &["storage.k8s.io"], &["csidrivers"]),
                rule(READ, &["storage.k8s.io"], &["csinodes"]),
            ],
        ),
        controller(
            "certificate-controller",
            vec![
                rule(
                    &["delete", "get", "list", "watch"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["update"],
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/approval",
                        "certificatesigningrequests/status",
                    ],
                ),
                named(
                    &["approve"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &["kubernetes.io/kube-apiserver-client-kubelet"],
                ),
                named(
                    &["sign"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &[
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ],
                ),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                events(),
            ],
        ),
        controller(
            "clusterrole-aggregation-controller",
            vec![rule(
                &["escalate", "get", "list", "patch", "update", "watch"],
                &["rbac.authorization.k8s.io"],
                &["clusterroles"],
            )],
        ),
        controller(
            "cronjob-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &["batch"],
                    &["cronjobs"],
                ),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &["batch"],
                    &["jobs"],
                ),
                rule(&["update"], &["batch"], &["cronjobs/status"]),
                rule(&["update"], &["batch"], &["cronjobs/finalizers"]),
                rule(&["delete", "list", "watch"], &[""], &["pods"]),
                events(),
            ],
        ),
        controller(
            "daemon-set-controller",
            vec![
                rule(READ, &["apps", "extensions"], &["daemonsets"]),
                rule(&["update"], &["apps", "extensions"], &["daemonsets/status"]),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["daemonsets/finalizers"],
                ),
                rule(&["list", "watch"], &[""], &["nodes"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[""],
                    &["pods"],
                ),
                rule(&["create"], &[""], &["pods/binding"]),
                controller_revisions.clone(),
                events(),
            ],
        ),
        controller(
            "deployment-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &["apps", "extensions"],
                    &["deployments"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["deployments/status"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["deployments/finalizers"],
                ),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &["apps", "extensions"],
                    &["replicasets"],
                ),
                rule(&["get", "list", "update", "watch"], &[""], &["pods"]),
                events(),
            ],
        ),
        controller(
            "disruption-controller",
            vec![
                rule(READ, &["apps", "extensions"], &["deployments"]),
                rule(READ, &["apps", "extensions"], &["replicasets"]),
                rule(READ, &[""], &["replicationcontrollers"]),
                rule(READ, &["policy"], &["poddisruptionbudgets"]),
                rule(READ, &["apps"], &["statefulsets"]),
                rule(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], &[""], &["pods/status"]),
                rule(&["get"], ANY, &["*/scale"]),
                events(),
            ],
        ),
        controller(
            "endpoint-controller",
            vec![
                rule(READ, &[""], &["pods", "services"]),
                rule(crud_no_patch, &[""], &["endpoints"]),
                rule(&["create"], &[""], &["endpoints/restricted"]),
                events(),
            ],
        ),
        controller(
            "endpointslice-controller",
            vec![
                rule(READ, &[""], &["nodes", "pods", "services"]),
                rule(&["update"], &[""], &["services/finalizers"]),
                rule(crud_no_patch, &["discovery.k8s.io"], &["endpointslices"]),
                events(),
            ],
        ),
        controller(
            "endpointslicemirroring-controller",
            vec![
                rule(READ, &[""], &["endpoints", "services"]),
                rule(&["update"], &[""], &["services/finalizers"]),
                rule(&["update"], &[""], &["endpoints/finalizers"]),
                rule(crud_no_patch, &["discovery.k8s.io"], &["endpointslices"]),
                events(),
            ],
        ),
        controller(
            "ephemeral-volume-controller",
            vec![
                rule(READ, &[""], &["pods"]),
                rule(&["update"], &[""], &["pods/finalizers"]),
                rule(
                    &["create", "get", "list", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                events(),
            ],
        ),
        controller(
            "expand-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(
                    &["patch", "update"],
                    &[""],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &[""], &["persistentvolumeclaims"]),
                events(),
            ],
        ),
        controller(
            "generic-garbage-collector",
            vec![
                rule(
                    &["delete", "get", "list", "patch", "update", "watch"],
                    ANY,
                    ANY,
                ),
                events(),
            ],
        ),
        controller(
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(
                    &["update"],
                    &["autoscaling"],
                    &["horizontalpodautoscalers/status"],
                ),
                rule(&["get", "update"], ANY, &["*/scale"]),
                rule(&["list", "watch"], &[""], &["pods"]),
                rule(&["list", "watch"], &["metrics.k8s.io"], &["pods"]),
                rule(READ, &["custom.metrics.k8s.io"], ANY),
                rule(READ, &["external.metrics.k8s.io"], ANY),
                events(),
            ],
        ),
        controller(
            "job-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &["batch"],
                    &["jobs"],
                ),
                rule(&["update"], &["batch"], &["jobs/status"]),
                rule(&["update"], &["batch"], &["jobs/finalizers"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        controller(
            "legacy-service-account-token-cleaner",
            vec![
                named(
                    &["get"],
                    &[""],
                    &["configmaps"],
                    &["kube-apiserver-legacy-service-account-token-tracking"],
                ),
                rule(&["delete", "patch"], &[""], &["secrets"]),
            ],
        ),
        controller(
            "namespace-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], &[""], &["namespaces"]),
                rule(
                    &["update"],
                    &[""],
                    &["namespaces/finalize", "namespaces/status"],
                ),
                rule(
                    &["delete", "deletecollection", "get", "list", "watch"],
                    ANY,
                    ANY,
                ),
            ],
        ),
        controller(
            "node-controller",
            vec![
                rule(
                    &["delete", "get", "list", "patch", "update", "watch"],
                    &[""],
                    &["nodes"],
                ),
                rule(&["patch", "update"], &[""], &["nodes/status"]),
                rule(&["patch", "update"], &[""], &["pods/status"]),
                rule(&["delete", "get", "list", "watch"], &[""], &["pods"]),
                events(),
            ],
        ),
        controller(
            "persistent-volume-binder",
            vec![
                rule(crud_no_patch, &[""], &["persistentvolumes"]),
                rule(&["update"], &[""], &["persistentvolumes/status"]),
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[""], &["persistentvolumeclaims/status"]),
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[""],
                    &["pods"],
                ),
                rule(READ, &["storage.k8s.io"], &["storageclasses"]),
                rule(&["list", "watch"], &[""], &["nodes"]),
                events(),
                rule(&["watch"], &[""], &["events"]),
            ],
        ),
        controller(
            "pod-garbage-collector",
            vec![
                rule(&["delete", "list", "watch"], &[""], &["pods"]),
                rule(READ, &[""], &["nodes"]),
                rule(&["patch"], &[""], &["pods/status"]),
            ],
        ),
        controller(
            "pv-protection-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                events(),
            ],
        ),
        controller(
            "pvc-protection-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[""], &["persistentvolumeclaims/status"]),
                rule(READ, &[""], &["pods"]),
                events(),
            ],
        ),
        controller(
            "replicaset-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &["apps", "extensions"],
                    &["replicasets"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/status"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/finalizers"],
                ),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        controller(
            "replication-controller",
            vec![
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["replicationcontrollers"],
                ),
                rule(&["update"], &[""], &["replicationcontrollers/status"]),
                rule(&["update"], &[""], &["replicationcontrollers/finalizers"]),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        controller(
            "resourcequota-controller",
            vec![
                rule(&["list", "watch"], ANY, ANY),
                rule(&["update"], &[""], &["resourcequotas/status"]),
                events(),
            ],
        ),
        controller(
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[""], &["configmaps"]),
                events(),
            ],
        ),
        controller(
            "route-controller",
            vec![
                rule(&["list", "watch"], &[""], &["nodes"]),
                rule(&["patch"], &[""], &["nodes/status"]),
                events(),
            ],
        ),
        controller(
            "service-account-controller",
            vec![rule(&["create"], &[""], &["serviceaccounts"]), events()],
        ),
        controller(
            "service-cidrs-controller",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &["networking.k8s.io"],
                    &["servicecidrs"],
                ),
                rule(
                    &["patch", "update"],
                    &["networking.k8s.io"],
                    &["servicecidrs/finalizers"],
                ),
                rule(
                    &["patch", "update"],
                    &["networking.k8s.io"],
                    &["servicecidrs/status"],
                ),
                rule(READ, &["networking.k8s.io"], &["ipaddresses"]),
                events(),
            ],
        ),
        controller(
            "service-controller",
            vec![
                rule(READ, &[""], &["services"]),
                rule(&["patch", "update"], &[""], &["services/status"]),
                rule(&["list", "watch"], &[""], &["nodes"]),
                events(),
            ],
        ),
        controller(
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], &[""], &["pods"]),
                rule(READ, &["apps"], &["statefulsets"]),
                rule(&["update"], &["apps"], &["statefulsets/status"]),
                rule(&["update"], &["apps"], &["statefulsets/finalizers"]),
                rule(
                    &["create", "delete", "get", "patch", "update"],
                    &[""],
                    &["pods"],
                ),
                controller_revisions,
                rule(
                    &["create", "get", "list", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["delete", "update"], &[""], &["persistentvolumeclaims"]),
                rule(&["update"], &[""], &["pods/finalizers"]),
                events(),
            ],
        ),
        controller(
            "ttl-after-finished-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], &["batch"], &["jobs"]),
                events(),
            ],
        ),
        controller(
            "ttl-controller",
            vec![
                rule(&["list", "patch", "update", "watch"], &[""], &["nodes"]),
                events(),
            ],
        ),
        controller(
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(
                    READ,
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies"],
                ),
                rule(
                    &["get", "patch", "update"],
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies/status"],
                ),
                events(),
            ],
        ),
    ]
}

/// One binding per controller role, to the controller's service account in kube-system.
pub(super) fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    cluster_roles()
        .iter()
        .filter_map(|r| r.metadata.name.as_deref())
        .map(|name| {
            let sa = name.trim_start_matches(CONTROLLER_ROLE_PREFIX);
            binding(
                name,
                vec![subject("ServiceAccount", sa, Some("kube-system"))],
            )
        })
        .collect()
}
