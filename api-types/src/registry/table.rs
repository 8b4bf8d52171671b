//! The table of built-in resources a default v1.33 kube-apiserver serves (GA groups only).
//!
//! Facts come from upstream's REST storage providers (`pkg/registry/*/rest`), the
//! `ShortNames()`/`Categories()` of each storage, the discovery documents upstream keeps in
//! `api/discovery/`, and `kubectl api-resources -o wide` of v1.33/1.34 clusters.
//! Entries are grouped as /api and /apis list them (core first, then the /apis group order),
//! and sorted by resource name inside a group-version, as discovery sorts them.
//!
//! To add a beta group (e.g. `resource.k8s.io/v1beta2`), add its rows here and its group or
//! version to `groups.rs`; the consistency tests in this module catch a row whose group-version
//! is not declared there.

use super::types::{GroupVersion, ResourceInfo, Subresource, Verb};

const ALL_VERBS: &[Verb] = &Verb::ALL;
/// Namespaces: upstream's namespace REST does not expose DeleteCollection.
const NO_DELETECOLLECTION: &[Verb] = &[
    Verb::Create,
    Verb::Delete,
    Verb::Get,
    Verb::List,
    Verb::Patch,
    Verb::Update,
    Verb::Watch,
];
const CREATE: &[Verb] = &[Verb::Create];
const GET: &[Verb] = &[Verb::Get];
const GET_LIST: &[Verb] = &[Verb::Get, Verb::List];
const UPDATE: &[Verb] = &[Verb::Update];
const GET_PATCH_UPDATE: &[Verb] = &[Verb::Get, Verb::Patch, Verb::Update];
/// Streaming connect subresources (exec, attach, portforward) accept GET and POST.
const CREATE_GET: &[Verb] = &[Verb::Create, Verb::Get];
/// Proxy subresources accept every HTTP method; discovery reports these five.
const PROXY: &[Verb] = &[
    Verb::Create,
    Verb::Delete,
    Verb::Get,
    Verb::Patch,
    Verb::Update,
];

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

const AUTOSCALING_V1: GroupVersion = GroupVersion::new("autoscaling", "v1");

/// A resource with the full verb set, no short names, categories or subresources, stored in
/// its own group-version.
const fn res(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version,
        kind,
        plural,
        singular,
        namespaced,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: Some(GroupVersion::new(group, version)),
    }
}

const fn core(plural: &'static str, singular: &'static str, kind: &'static str) -> ResourceInfo {
    res("", "v1", plural, singular, kind, true)
}

impl ResourceInfo {
    const fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }
    const fn verbs(mut self, verbs: &'static [Verb]) -> Self {
        self.verbs = verbs;
        self
    }
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }
    const fn categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }
    const fn subs(mut self, subresources: &'static [Subresource]) -> Self {
        self.subresources = subresources;
        self
    }
    const fn stored_as(mut self, group: &'static str, version: &'static str) -> Self {
        self.storage = Some(GroupVersion::new(group, version));
        self
    }
    /// Resources that are never persisted (reviews, bindings, component statuses): discovery
    /// gives them no storageVersionHash.
    const fn not_stored(mut self) -> Self {
        self.storage = None;
        self
    }
}

const fn sub(name: &'static str, kind: &'static str, verbs: &'static [Verb]) -> Subresource {
    Subresource {
        name,
        kind,
        group_version: None,
        verbs,
    }
}

const fn status(kind: &'static str) -> Subresource {
    sub("status", kind, GET_PATCH_UPDATE)
}

/// `*/scale` always speaks `autoscaling/v1` Scale, whatever the parent's group.
const fn scale() -> Subresource {
    Subresource {
        name: "scale",
        kind: "Scale",
        group_version: Some(AUTOSCALING_V1),
        verbs: GET_PATCH_UPDATE,
    }
}

const HPA_SUBS: &[Subresource] = &[status("HorizontalPodAutoscaler")];

/// Every served (group, version, resource).
pub(super) static RESOURCES: &[ResourceInfo] = &[
    // ---- core, /api/v1 ----
    core("bindings", "binding", "Binding")
        .verbs(CREATE)
        .not_stored(),
    core("componentstatuses", "componentstatus", "ComponentStatus")
        .cluster_scoped()
        .verbs(GET_LIST)
        .short(&["cs"])
        .not_stored(),
    core("configmaps", "configmap", "ConfigMap").short(&["cm"]),
    core("endpoints", "endpoints", "Endpoints").short(&["ep"]),
    core("events", "event", "Event").short(&["ev"]),
    core("limitranges", "limitrange", "LimitRange").short(&["limits"]),
    core("namespaces", "namespace", "Namespace")
        .cluster_scoped()
        .verbs(NO_DELETECOLLECTION)
        .short(&["ns"])
        .subs(&[sub("finalize", "Namespace", UPDATE), status("Namespace")]),
    core("nodes", "node", "Node")
        .cluster_scoped()
        .short(&["no"])
        .subs(&[sub("proxy", "NodeProxyOptions", PROXY), status("Node")]),
    core(
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
    )
    .short(&["pvc"])
    .subs(&[status("PersistentVolumeClaim")]),
    core("persistentvolumes", "persistentvolume", "PersistentVolume")
        .cluster_scoped()
        .short(&["pv"])
        .subs(&[status("PersistentVolume")]),
    core("pods", "pod", "Pod")
        .short(&["po"])
        .categories(ALL)
        .subs(&[
            sub("attach", "PodAttachOptions", CREATE_GET),
            sub("binding", "Binding", CREATE),
            sub("ephemeralcontainers", "Pod", GET_PATCH_UPDATE),
            Subresource {
                name: "eviction",
                kind: "Eviction",
                group_version: Some(GroupVersion::new("policy", "v1")),
                verbs: CREATE,
            },
            sub("exec", "PodExecOptions", CREATE_GET),
            sub("log", "Pod", GET),
            sub("portforward", "PodPortForwardOptions", CREATE_GET),
            sub("proxy", "PodProxyOptions", PROXY),
            // InPlacePodVerticalScaling is beta and on by default in 1.33, which registers it.
            sub("resize", "Pod", GET_PATCH_UPDATE),
            status("Pod"),
        ]),
    core("podtemplates", "podtemplate", "PodTemplate"),
    core(
        "replicationcontrollers",
        "replicationcontroller",
        "ReplicationController",
    )
    .short(&["rc"])
    .categories(ALL)
    .subs(&[scale(), status("ReplicationController")]),
    core("resourcequotas", "resourcequota", "ResourceQuota")
        .short(&["quota"])
        .subs(&[status("ResourceQuota")]),
    core("secrets", "secret", "Secret"),
    core("serviceaccounts", "serviceaccount", "ServiceAccount")
        .short(&["sa"])
        .subs(&[Subresource {
            name: "token",
            kind: "TokenRequest",
            group_version: Some(GroupVersion::new("authentication.k8s.io", "v1")),
            verbs: CREATE,
        }]),
    core("services", "service", "Service")
        .short(&["svc"])
        .categories(ALL)
        .subs(&[
            sub("proxy", "ServiceProxyOptions", PROXY),
            status("Service"),
        ]),
    // ---- apiregistration.k8s.io/v1 (served by the aggregator) ----
    res(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "apiservice",
        "APIService",
        false,
    )
    .categories(API_EXTENSIONS)
    .subs(&[status("APIService")]),
    // ---- apps/v1 ----
    res(
        "apps",
        "v1",
        "controllerrevisions",
        "controllerrevision",
        "ControllerRevision",
        true,
    ),
    res("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true)
        .short(&["ds"])
        .categories(ALL)
        .subs(&[status("DaemonSet")]),
    res(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
    )
    .short(&["deploy"])
    .categories(ALL)
    .subs(&[scale(), status("Deployment")]),
    res(
        "apps",
        "v1",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        true,
    )
    .short(&["rs"])
    .categories(ALL)
    .subs(&[scale(), status("ReplicaSet")]),
    res(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        true,
    )
    .short(&["sts"])
    .categories(ALL)
    .subs(&[scale(), status("StatefulSet")]),
    // ---- events.k8s.io/v1 ----
    // Cohabits with core events (same etcd keys), and the storage factory lists core first,
    // so these objects are stored as core v1 Events.
    res("events.k8s.io", "v1", "events", "event", "Event", true)
        .short(&["ev"])
        .stored_as("", "v1"),
    // ---- authentication.k8s.io/v1 ----
    res(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "selfsubjectreview",
        "SelfSubjectReview",
        false,
    )
    .verbs(CREATE)
    .not_stored(),
    res(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "tokenreview",
        "TokenReview",
        false,
    )
    .verbs(CREATE)
    .not_stored(),
    // ---- authorization.k8s.io/v1 ----
    res(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
        "LocalSubjectAccessReview",
        true,
    )
    .verbs(CREATE)
    .not_stored(),
    res(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        "SelfSubjectAccessReview",
        false,
    )
    .verbs(CREATE)
    .not_stored(),
    res(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        "SelfSubjectRulesReview",
        false,
    )
    .verbs(CREATE)
    .not_stored(),
    res(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "subjectaccessreview",
        "SubjectAccessReview",
        false,
    )
    .verbs(CREATE)
    .not_stored(),
    // ---- autoscaling/v2 (preferred) and autoscaling/v1 ----
    res(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .categories(ALL)
    .subs(HPA_SUBS),
    // Both versions share one storage; v2 is the group's most preferred version, so it is the
    // encoding.
    res(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .categories(ALL)
    .subs(HPA_SUBS)
    .stored_as("autoscaling", "v2"),
    // ---- batch/v1 ----
    res("batch", "v1", "cronjobs", "cronjob", "CronJob", true)
        .short(&["cj"])
        .categories(ALL)
        .subs(&[status("CronJob")]),
    res("batch", "v1", "jobs", "job", "Job", true)
        .categories(ALL)
        .subs(&[status("Job")]),
    // ---- certificates.k8s.io/v1 ----
    res(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "certificatesigningrequest",
        "CertificateSigningRequest",
        false,
    )
    .short(&["csr"])
    .subs(&[
        sub("approval", "CertificateSigningRequest", GET_PATCH_UPDATE),
        status("CertificateSigningRequest"),
    ]),
    // ---- networking.k8s.io/v1 ----
    res(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "ingressclass",
        "IngressClass",
        false,
    ),
    res(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "ingress",
        "Ingress",
        true,
    )
    .short(&["ing"])
    .subs(&[status("Ingress")]),
    // v1 of IPAddress and ServiceCIDR was introduced in 1.33. The storage version is the
    // newest one a 1.32 apiserver (the minimum compatibility version) can read, so 1.33
    // still writes v1beta1.
    res(
        "networking.k8s.io",
        "v1",
        "ipaddresses",
        "ipaddress",
        "IPAddress",
        false,
    )
    .short(&["ip"])
    .stored_as("networking.k8s.io", "v1beta1"),
    res(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "networkpolicy",
        "NetworkPolicy",
        true,
    )
    .short(&["netpol"]),
    res(
        "networking.k8s.io",
        "v1",
        "servicecidrs",
        "servicecidr",
        "ServiceCIDR",
        false,
    )
    .subs(&[status("ServiceCIDR")])
    .stored_as("networking.k8s.io", "v1beta1"),
    // ---- policy/v1 ----
    res(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
    )
    .short(&["pdb"])
    .subs(&[status("PodDisruptionBudget")]),
    // ---- rbac.authorization.k8s.io/v1 ----
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        false,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "clusterrole",
        "ClusterRole",
        false,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "rolebinding",
        "RoleBinding",
        true,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "role",
        "Role",
        true,
    ),
    // ---- storage.k8s.io/v1 ----
    res(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "csidriver",
        "CSIDriver",
        false,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "csinode",
        "CSINode",
        false,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "csistoragecapacity",
        "CSIStorageCapacity",
        true,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "storageclass",
        "StorageClass",
        false,
    )
    .short(&["sc"]),
    res(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "volumeattachment",
        "VolumeAttachment",
        false,
    )
    .subs(&[status("VolumeAttachment")]),
    // ---- admissionregistration.k8s.io/v1 ----
    res(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        false,
    )
    .categories(API_EXTENSIONS),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
        "ValidatingAdmissionPolicy",
        false,
    )
    .categories(API_EXTENSIONS)
    .subs(&[status("ValidatingAdmissionPolicy")]),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
        "ValidatingAdmissionPolicyBinding",
        false,
    )
    .categories(API_EXTENSIONS),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        false,
    )
    .categories(API_EXTENSIONS),
    // ---- apiextensions.k8s.io/v1 ----
    res(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
    )
    .short(&["crd", "crds"])
    .categories(API_EXTENSIONS)
    .subs(&[status("CustomResourceDefinition")]),
    // ---- scheduling.k8s.io/v1 ----
    res(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        false,
    )
    .short(&["pc"]),
    // ---- coordination.k8s.io/v1 ----
    res(
        "coordination.k8s.io",
        "v1",
        "leases",
        "lease",
        "Lease",
        true,
    ),
    // ---- node.k8s.io/v1 ----
    res(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "runtimeclass",
        "RuntimeClass",
        false,
    ),
    // ---- discovery.k8s.io/v1 ----
    res(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        true,
    ),
    // ---- flowcontrol.apiserver.k8s.io/v1 ----
    res(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "flowschema",
        "FlowSchema",
        false,
    )
    .subs(&[status("FlowSchema")]),
    res(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "prioritylevelconfiguration",
        "PriorityLevelConfiguration",
        false,
    )
    .subs(&[status("PriorityLevelConfiguration")]),
];
