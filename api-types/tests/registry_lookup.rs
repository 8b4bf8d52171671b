//! kubectl-style name resolution and the exact lookups, table-driven.

use api_types::registry::{self, Verb};

#[test]
fn lookup_resolves_kubectl_names() {
    // (input, expected (group, version, plural))
    let cases: &[(&str, (&str, &str, &str))] = &[
        ("po", ("", "v1", "pods")),
        ("pods", ("", "v1", "pods")),
        ("pod", ("", "v1", "pods")),
        ("Pod", ("", "v1", "pods")),
        ("PODS", ("", "v1", "pods")),
        (" pods ", ("", "v1", "pods")),
        ("pods.", ("", "v1", "pods")),
        ("deploy", ("apps", "v1", "deployments")),
        ("deployments.apps", ("apps", "v1", "deployments")),
        ("deploy.apps", ("apps", "v1", "deployments")),
        ("Deployment.apps", ("apps", "v1", "deployments")),
        ("deployments.v1.apps", ("apps", "v1", "deployments")),
        ("hpa", ("autoscaling", "v2", "horizontalpodautoscalers")),
        (
            "horizontalpodautoscalers.autoscaling",
            ("autoscaling", "v2", "horizontalpodautoscalers"),
        ),
        (
            "hpa.v1.autoscaling",
            ("autoscaling", "v1", "horizontalpodautoscalers"),
        ),
        ("ev", ("", "v1", "events")),
        // `NAME.v1.` is how kubectl users pin the core group.
        ("po.v1.", ("", "v1", "pods")),
        ("events.v1.", ("", "v1", "events")),
        ("events", ("", "v1", "events")),
        ("events.events.k8s.io", ("events.k8s.io", "v1", "events")),
        ("ev.events.k8s.io", ("events.k8s.io", "v1", "events")),
        ("events.v1.events.k8s.io", ("events.k8s.io", "v1", "events")),
        ("svc", ("", "v1", "services")),
        ("ns", ("", "v1", "namespaces")),
        ("no", ("", "v1", "nodes")),
        ("cs", ("", "v1", "componentstatuses")),
        ("ep", ("", "v1", "endpoints")),
        ("endpoints", ("", "v1", "endpoints")),
        ("quota", ("", "v1", "resourcequotas")),
        ("limits", ("", "v1", "limitranges")),
        (
            "crd",
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        ),
        (
            "crds",
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        ),
        ("cj", ("batch", "v1", "cronjobs")),
        (
            "csr",
            ("certificates.k8s.io", "v1", "certificatesigningrequests"),
        ),
        ("netpol", ("networking.k8s.io", "v1", "networkpolicies")),
        ("ip", ("networking.k8s.io", "v1", "ipaddresses")),
        ("servicecidr", ("networking.k8s.io", "v1", "servicecidrs")),
        ("pc", ("scheduling.k8s.io", "v1", "priorityclasses")),
        ("sc", ("storage.k8s.io", "v1", "storageclasses")),
        ("pdb", ("policy", "v1", "poddisruptionbudgets")),
        (
            "apiservice",
            ("apiregistration.k8s.io", "v1", "apiservices"),
        ),
        (
            "APIService",
            ("apiregistration.k8s.io", "v1", "apiservices"),
        ),
        ("vap", ("", "", "")), // no such short name upstream
        (
            "leases.coordination.k8s.io",
            ("coordination.k8s.io", "v1", "leases"),
        ),
        (
            "tokenreviews",
            ("authentication.k8s.io", "v1", "tokenreviews"),
        ),
    ];
    for (input, (group, version, plural)) in cases {
        let got = registry::lookup(input).map(|r| (r.group, r.version, r.plural));
        let want = if plural.is_empty() {
            None
        } else {
            Some((*group, *version, *plural))
        };
        assert_eq!(got, want, "lookup({input:?})");
    }
}

#[test]
fn lookup_rejects_unknown_and_malformed_names() {
    for input in [
        "",
        "   ",
        "foo",
        "podz",
        "pods/status",
        "status",
        "scale",
        ".apps",
        "deployments.",
        "deployments.nosuchgroup",
        "deployments.v2.apps",
        "pods.apps",
        "deployments.v1",
        "events.k8s.io",
        "resourceclaims",
        "volumeattributesclasses",
        "deviceclasses.resource.k8s.io",
        "....",
    ] {
        assert_eq!(
            registry::lookup(input).map(|r| (r.group, r.plural)),
            None,
            "lookup({input:?})"
        );
    }
}

#[test]
fn exact_lookups() {
    let pods = registry::by_group_version_resource("", "v1", "pods").expect("pods");
    assert_eq!(pods.kind, "Pod");
    // Request paths are exact: no case folding, no short names.
    assert!(registry::by_group_version_resource("", "v1", "Pods").is_none());
    assert!(registry::by_group_version_resource("", "v1", "po").is_none());
    assert!(registry::by_group_version_resource("apps", "v1beta1", "deployments").is_none());

    let hpa = registry::by_group_kind("autoscaling", "HorizontalPodAutoscaler").expect("hpa");
    assert_eq!(hpa.version, "v2");
    let hpa_v1 = registry::by_group_version_kind("autoscaling", "v1", "HorizontalPodAutoscaler")
        .expect("hpa v1");
    assert!(!hpa_v1.is_preferred_version());
    assert_eq!(hpa_v1.storage.map(|s| s.version), Some("v2"));

    assert_eq!(
        registry::by_group_kind("events.k8s.io", "Event").map(|r| r.group),
        Some("events.k8s.io")
    );
    assert!(registry::by_group_kind("apps", "Pod").is_none());
    assert!(registry::by_group_kind("nosuch", "Pod").is_none());
    assert_eq!(
        registry::by_group_resource("apps", "deployments").map(|r| r.kind),
        Some("Deployment")
    );
}

#[test]
fn groups_are_listed_in_discovery_order_with_preferred_version_first() {
    let groups = registry::groups();
    assert!(groups[0].is_core());
    assert_eq!(groups[0].versions, ["v1"]);
    let names: Vec<&str> = groups.iter().map(|g| g.name).collect();
    assert_eq!(names.len(), 20);
    assert_eq!(
        &names[1..4],
        ["apiregistration.k8s.io", "apps", "events.k8s.io"]
    );
    assert!(
        !names.contains(&"resource.k8s.io"),
        "beta-only group served"
    );
    let autoscaling = registry::group("autoscaling").expect("autoscaling");
    assert_eq!(autoscaling.versions, ["v2", "v1"]);
    assert_eq!(autoscaling.preferred_version(), Some("v2"));
    assert_eq!(
        registry::resources_in("autoscaling", "v1")
            .map(|r| r.plural)
            .collect::<Vec<_>>(),
        ["horizontalpodautoscalers"]
    );
    assert_eq!(registry::resources_in("apps", "v1").count(), 5);
}

#[test]
fn subresources_match_upstream_discovery() {
    // (group, resource, subresource, kind, group/version when not the parent's, verbs)
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, Option<&'a str>, &'a str);
    let cases: &[Case<'_>] = &[
        ("", "pods", "status", "Pod", None, "get,patch,update"),
        ("", "pods", "binding", "Binding", None, "create"),
        (
            "",
            "pods",
            "eviction",
            "Eviction",
            Some("policy/v1"),
            "create",
        ),
        ("", "pods", "log", "Pod", None, "get"),
        ("", "pods", "exec", "PodExecOptions", None, "create,get"),
        ("", "pods", "attach", "PodAttachOptions", None, "create,get"),
        (
            "",
            "pods",
            "portforward",
            "PodPortForwardOptions",
            None,
            "create,get",
        ),
        (
            "",
            "pods",
            "proxy",
            "PodProxyOptions",
            None,
            "create,delete,get,patch,update",
        ),
        (
            "",
            "pods",
            "ephemeralcontainers",
            "Pod",
            None,
            "get,patch,update",
        ),
        ("", "pods", "resize", "Pod", None, "get,patch,update"),
        (
            "",
            "nodes",
            "proxy",
            "NodeProxyOptions",
            None,
            "create,delete,get,patch,update",
        ),
        (
            "",
            "services",
            "proxy",
            "ServiceProxyOptions",
            None,
            "create,delete,get,patch,update",
        ),
        ("", "namespaces", "finalize", "Namespace", None, "update"),
        (
            "",
            "serviceaccounts",
            "token",
            "TokenRequest",
            Some("authentication.k8s.io/v1"),
            "create",
        ),
        (
            "",
            "replicationcontrollers",
            "scale",
            "Scale",
            Some("autoscaling/v1"),
            "get,patch,update",
        ),
        (
            "apps",
            "deployments",
            "scale",
            "Scale",
            Some("autoscaling/v1"),
            "get,patch,update",
        ),
        (
            "apps",
            "statefulsets",
            "status",
            "StatefulSet",
            None,
            "get,patch,update",
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "approval",
            "CertificateSigningRequest",
            None,
            "get,patch,update",
        ),
        (
            "networking.k8s.io",
            "servicecidrs",
            "status",
            "ServiceCIDR",
            None,
            "get,patch,update",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            "status",
            "ValidatingAdmissionPolicy",
            None,
            "get,patch,update",
        ),
    ];
    for (group, resource, name, kind, gv, verbs) in cases {
        let parent = registry::by_group_resource(group, resource).expect("parent");
        let sub = parent
            .subresource(name)
            .unwrap_or_else(|| panic!("{resource}/{name} missing"));
        let sub_verbs: Vec<&str> = sub.verbs.iter().map(|v| v.as_str()).collect();
        assert_eq!(sub.kind, *kind, "{resource}/{name}");
        assert_eq!(
            sub.group_version.map(|g| g.to_string()).as_deref(),
            *gv,
            "{resource}/{name}"
        );
        assert_eq!(sub_verbs.join(","), *verbs, "{resource}/{name}");
    }
    // No status where upstream has none.
    for (group, resource) in [
        ("", "configmaps"),
        ("", "events"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ipaddresses"),
        ("rbac.authorization.k8s.io", "roles"),
    ] {
        let r = registry::by_group_resource(group, resource).expect("resource");
        assert!(r.subresources.is_empty(), "{resource} has subresources");
    }
    assert!(
        registry::lookup("pods")
            .expect("pods")
            .subresource("checkpoint")
            .is_none()
    );
}

#[test]
fn verbs_decide_list_and_watch() {
    let cs = registry::lookup("componentstatuses").expect("cs");
    assert!(cs.is_listable() && !cs.is_watchable());
    let tr = registry::lookup("tokenreviews").expect("tokenreviews");
    assert!(!tr.is_listable() && tr.supports(Verb::Create));
    assert_eq!(tr.storage, None);
    let ns = registry::lookup("ns").expect("ns");
    assert!(ns.is_watchable() && !ns.supports(Verb::DeleteCollection));
}

#[test]
fn storage_versions() {
    let storage = |name: &str| {
        registry::lookup(name)
            .and_then(|r| r.storage)
            .map(|gv| gv.to_string())
    };
    assert_eq!(storage("pods").as_deref(), Some("v1"));
    assert_eq!(storage("deployments").as_deref(), Some("apps/v1"));
    assert_eq!(storage("hpa").as_deref(), Some("autoscaling/v2"));
    assert_eq!(storage("events.events.k8s.io").as_deref(), Some("v1"));
    assert_eq!(
        storage("servicecidrs").as_deref(),
        Some("networking.k8s.io/v1beta1")
    );
    assert_eq!(
        storage("ipaddresses").as_deref(),
        Some("networking.k8s.io/v1beta1")
    );
    assert_eq!(storage("bindings"), None);
}
