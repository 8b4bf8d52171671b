//! The non-aggregated default ClusterRoles: the super-user, discovery and public paths, and
//! the components' roles (scheduler, controller manager, kubelet, kube-proxy, kube-dns).

use api_types::k8s_openapi::api::rbac::v1::ClusterRole;

use super::{EVENT_WRITE, READ, named, role, rule, urls};

pub(super) fn cluster_roles() -> Vec<ClusterRole> {
    vec![
        role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        role(
            "system:discovery",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role(
            "system:public-info-viewer",
            &[],
            vec![urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        role(
            "system:service-account-issuer-discovery",
            &[],
            vec![urls(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
        role(
            "system:kube-controller-manager",
            &[],
            vec![
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
                rule(&["create"], &["coordination.k8s.io"], &["leases"]),
                named(
                    &["get", "update"],
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["kube-controller-manager"],
                ),
                rule(&["create"], &[""], &["secrets", "serviceaccounts"]),
                rule(&["delete"], &[""], &["secrets"]),
                rule(
                    &["get"],
                    &[""],
                    &["configmaps", "namespaces", "secrets", "serviceaccounts"],
                ),
                rule(&["update"], &[""], &["secrets", "serviceaccounts"]),
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                rule(&["list", "watch"], &["*"], &["*"]),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
            ],
        ),
        role(
            "system:kube-scheduler",
            &[],
            vec![
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
                rule(&["create"], &["coordination.k8s.io"], &["leases"]),
                named(
                    &["get", "update"],
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["kube-scheduler"],
                ),
                rule(READ, &[""], &["nodes"]),
                rule(&["delete", "get", "list", "watch"], &[""], &["pods"]),
                rule(&["create"], &[""], &["bindings", "pods/binding"]),
                rule(&["patch", "update"], &[""], &["pods/status"]),
                rule(READ, &[""], &["replicationcontrollers", "services"]),
                rule(READ, &["apps", "extensions"], &["replicasets"]),
                rule(READ, &["apps"], &["statefulsets"]),
                rule(READ, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    READ,
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                rule(READ, &["storage.k8s.io"], &["csinodes"]),
                rule(READ, &[""], &["namespaces"]),
                rule(READ, &["storage.k8s.io"], &["csidrivers"]),
                rule(READ, &["storage.k8s.io"], &["csistoragecapacities"]),
                // NodeVolumeLimits counts a node's VolumeAttachments (upstream's since 1.32).
                rule(READ, &["storage.k8s.io"], &["volumeattachments"]),
            ],
        ),
        role(
            "system:volume-scheduler",
            &[],
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(READ, &["storage.k8s.io"], &["storageclasses"]),
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
            ],
        ),
        role(
            "system:node",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews", "subjectaccessreviews"],
                ),
                rule(READ, &[""], &["services"]),
                rule(&["create", "get", "list", "watch"], &[""], &["nodes"]),
                rule(&["patch", "update"], &[""], &["nodes/status"]),
                rule(&["patch", "update"], &[""], &["nodes"]),
                rule(EVENT_WRITE, &[""], &["events"]),
                rule(READ, &[""], &["pods"]),
                rule(&["create", "delete"], &[""], &["pods"]),
                rule(&["patch", "update"], &[""], &["pods/status"]),
                rule(&["create"], &[""], &["pods/eviction"]),
                rule(READ, &[""], &["configmaps", "secrets"]),
                rule(
                    &["get"],
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                ),
                rule(&["get"], &[""], &["endpoints"]),
                rule(
                    &["create", "get", "list", "watch"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["create", "delete", "get", "patch", "update"],
                    &["coordination.k8s.io"],
                    &["leases"],
                ),
                rule(&["get"], &["storage.k8s.io"], &["volumeattachments"]),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
                rule(
                    &["get", "patch", "update"],
                    &[""],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &["storage.k8s.io"], &["csidrivers"]),
                rule(
                    &["create", "delete", "get", "patch", "update"],
                    &["storage.k8s.io"],
                    &["csinodes"],
                ),
                rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
            ],
        ),
        role(
            "system:node-proxier",
            &[],
            vec![
                rule(&["list", "watch"], &[""], &["endpoints", "services"]),
                rule(READ, &[""], &["nodes"]),
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
                rule(
                    &["list", "watch"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
            ],
        ),
        role(
            "system:node-bootstrapper",
            &[],
            vec![rule(
                &["create", "get", "list", "watch"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
            )],
        ),
        role(
            "system:kubelet-api-admin",
            &[],
            vec![
                rule(READ, &[""], &["nodes"]),
                rule(&["proxy"], &[""], &["nodes"]),
                rule(
                    &["*"],
                    &[""],
                    &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
                ),
            ],
        ),
        role(
            "system:kube-dns",
            &[],
            vec![rule(&["list", "watch"], &[""], &["endpoints", "services"])],
        ),
        role(
            "system:heapster",
            &[],
            vec![
                rule(READ, &[""], &["events", "namespaces", "nodes", "pods"]),
                rule(READ, &["extensions"], &["deployments"]),
            ],
        ),
        role(
            "system:kube-aggregator",
            &[],
            vec![rule(READ, &[""], &["endpoints", "services"])],
        ),
        role(
            "system:node-problem-detector",
            &[],
            vec![
                rule(&["get"], &[""], &["nodes"]),
                rule(&["patch"], &[""], &["nodes/status"]),
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
            ],
        ),
        role(
            "system:persistent-volume-provisioner",
            &[],
            vec![
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &["storage.k8s.io"], &["storageclasses"]),
                rule(&["watch"], &[""], &["events"]),
                rule(EVENT_WRITE, &["", "events.k8s.io"], &["events"]),
            ],
        ),
        role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            &[],
            vec![rule(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            &[],
            vec![rule(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        approver("kube-apiserver-client-approver", "kube-apiserver-client"),
        approver(
            "kube-apiserver-client-kubelet-approver",
            "kube-apiserver-client-kubelet",
        ),
        approver("kubelet-serving-approver", "kubelet-serving"),
        approver("legacy-unknown-approver", "legacy-unknown"),
    ]
}

/// `system:certificates.k8s.io:<role>`: approval of CSRs for one built-in signer, which an
/// approver needs on top of `certificatesigningrequests/approval`.
fn approver(role_name: &str, signer: &str) -> ClusterRole {
    role(
        &format!("system:certificates.k8s.io:{role_name}"),
        &[],
        vec![named(
            &["approve"],
            &["certificates.k8s.io"],
            &["signers"],
            &[&format!("kubernetes.io/{signer}")],
        )],
    )
}
