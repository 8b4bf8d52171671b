//! The served API groups and their versions, in discovery order.

use super::types::ApiGroup;

/// Core first (served under /api), then the /apis order of an upstream kube-apiserver, which
/// follows its APIService group priorities: apiregistration, apps, events, ... flowcontrol.
/// kubectl breaks ties between groups (e.g. `events`) in this order, so it is part of the
/// behaviour, not cosmetics.
pub(super) static GROUPS: &[ApiGroup] = &[
    ApiGroup {
        name: "",
        versions: &["v1"],
    },
    ApiGroup {
        name: "apiregistration.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "apps",
        versions: &["v1"],
    },
    ApiGroup {
        name: "events.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "authentication.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "authorization.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "autoscaling",
        versions: &["v2", "v1"],
    },
    ApiGroup {
        name: "batch",
        versions: &["v1"],
    },
    ApiGroup {
        name: "certificates.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "networking.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "policy",
        versions: &["v1"],
    },
    ApiGroup {
        name: "rbac.authorization.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "storage.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "admissionregistration.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "apiextensions.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "scheduling.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "coordination.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "node.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "discovery.k8s.io",
        versions: &["v1"],
    },
    ApiGroup {
        name: "flowcontrol.apiserver.k8s.io",
        versions: &["v1"],
    },
];
