//! The namespace, resourcequota and clusterrole-aggregation controllers for real: an
//! apiserver and a kube-controller-manager running
//! `namespace,garbagecollector,resourcequota,clusterrole-aggregation`. Namespaces are deleted
//! with the real kubectl; nothing here relies on the garbage collector.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_finished, wait_for};
use e2e::kcm_fixture::KcmCluster;
use e2e::scheduler::{create, create_namespace, get, merge_patch};
use serde_json::{Value, json};

/// The kcm fixture, with this suite's namespace helpers.
struct Cluster(KcmCluster);

impl std::ops::Deref for Cluster {
    type Target = KcmCluster;

    fn deref(&self) -> &KcmCluster {
        &self.0
    }
}

async fn cluster() -> Cluster {
    cluster_with(&[]).await
}

async fn cluster_with(apiserver_flags: &[&str]) -> Cluster {
    Cluster(
        KcmCluster::start_with(apiserver_flags, &[], |_| {
            vec![
                "--controllers=namespace,garbagecollector,resourcequota,clusterrole-aggregation"
                    .into(),
            ]
        })
        .await,
    )
}

impl Cluster {
    /// Deletes `ns` with the real kubectl without waiting (the test polls).
    fn delete_namespace(&self, ns: &str) {
        self.kubectl
            .ok(&["delete", "namespace", ns, "--wait=false"]);
    }

    async fn wait_namespace_gone(&self, ns: &str) {
        let path = format!("/api/v1/namespaces/{ns}");
        wait_for(&format!("namespace {ns} to be gone"), || async {
            match get(&self.api, &path).await {
                None => Ok(()),
                Some(n) => Err(n.to_string()),
            }
        })
        .await;
    }
}

/// A namespaced CRD `widgets.example.com`, established.
async fn install_widget_crd(api: &ApiServer) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    });
    create(
        api,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    wait_for("widgets served", || async {
        let (status, body) = api
            .get("/apis/example.com/v1/widgets")
            .await
            .map_err(|e| e.to_string())?;
        if status == 200 {
            Ok(())
        } else {
            Err(format!("{status} {body}"))
        }
    })
    .await;
}

/// (collection path under the namespace, object) for `i`-th object of each kind.
fn objects(i: usize) -> Vec<(&'static str, Value)> {
    let meta = json!({"name": format!("o{i}")});
    let pod_spec = json!({"containers": [{"name": "c", "image": "busybox"}],
                          "restartPolicy": "Never"});
    vec![
        (
            "api/v1/configmaps",
            json!({"metadata": meta, "data": {"k": "v"}}),
        ),
        (
            "api/v1/secrets",
            json!({"metadata": meta, "stringData": {"k": "v"}}),
        ),
        (
            "api/v1/services",
            json!({"metadata": meta, "spec": {"ports": [{"port": 80}]}}),
        ),
        ("api/v1/pods", json!({"metadata": meta, "spec": pod_spec})),
        ("api/v1/serviceaccounts", json!({"metadata": meta})),
        (
            "api/v1/persistentvolumeclaims",
            json!({"metadata": meta, "spec": {"accessModes": ["ReadWriteOnce"],
                   "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            "api/v1/limitranges",
            json!({"metadata": meta, "spec": {"limits": [{"type": "Container",
                   "max": {"cpu": "4"}}]}}),
        ),
        (
            "apis/rbac.authorization.k8s.io/v1/roles",
            json!({"metadata": meta, "rules": [{"apiGroups": [""], "resources": ["pods"],
                   "verbs": ["get"]}]}),
        ),
        (
            "apis/rbac.authorization.k8s.io/v1/rolebindings",
            json!({"metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                   "kind": "Role", "name": format!("o{i}")},
                   "subjects": [{"kind": "ServiceAccount", "name": "default"}]}),
        ),
        (
            "apis/batch/v1/jobs",
            json!({"metadata": meta, "spec": {"template": {"spec": pod_spec}}}),
        ),
        (
            "apis/example.com/v1/widgets",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta,
                   "spec": {"size": i}}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_deletes_a_namespace_full_of_objects_of_eleven_kinds() {
    let c = cluster().await;
    install_widget_crd(&c.api).await;
    let ns = "full";
    create_namespace(&c.api, ns).await;
    let mut created = 0;
    for i in 0..5 {
        for (collection, object) in objects(i) {
            let (group_path, resource) = collection.rsplit_once('/').expect("path");
            let path = format!("/{group_path}/namespaces/{ns}/{resource}");
            create(&c.api, &path, &object).await;
            created += 1;
        }
    }
    assert_eq!(created, 55);
    // StorageObjectInUseProtection gave each claim `kubernetes.io/pvc-protection`, which the
    // pvc-protection controller (not running here) would lift once no pod uses the claim.
    for i in 0..5 {
        let claim = merge_patch(
            &c.api,
            &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims/o{i}"),
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
        assert!(claim["metadata"]["finalizers"].is_null(), "{claim}");
    }
    let started = std::time::Instant::now();
    c.delete_namespace(ns);
    let terminating = get(&c.api, &format!("/api/v1/namespaces/{ns}")).await;
    if let Some(n) = terminating {
        assert!(!n["metadata"]["deletionTimestamp"].is_null(), "{n}");
    }
    c.wait_namespace_gone(ns).await;
    eprintln!(
        "namespace with {created} objects deleted in {:?}",
        started.elapsed()
    );
    // Everything went with it, the custom resources included.
    for (collection, _) in objects(0) {
        let (group_path, resource) = collection.rsplit_once('/').expect("path");
        let left = list(&c.api, &format!("/{group_path}/namespaces/{ns}/{resource}")).await;
        assert!(left.is_empty(), "{collection}: {left:?}");
    }
}

fn condition(ns: &Value, kind: &str) -> Option<Value> {
    ns["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finalizer_holds_the_namespace_until_it_is_removed() {
    let c = cluster().await;
    let ns = "held";
    create_namespace(&c.api, ns).await;
    let cm_path = format!("/api/v1/namespaces/{ns}/configmaps");
    create(
        &c.api,
        &cm_path,
        &json!({"metadata": {"name": "hold", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    create(&c.api, &cm_path, &json!({"metadata": {"name": "free"}})).await;
    c.delete_namespace(ns);
    let ns_path = format!("/api/v1/namespaces/{ns}");
    let held = wait_for(
        "NamespaceFinalizersRemaining naming the finalizer",
        || async {
            let n = get(&c.api, &ns_path).await.ok_or("namespace gone")?;
            match condition(&n, "NamespaceFinalizersRemaining") {
                Some(cond) if cond["status"] == "True" => Ok(n),
                _ => Err(n["status"].to_string()),
            }
        },
    )
    .await;
    assert_eq!(held["status"]["phase"], "Terminating", "{held}");
    let finalizers = condition(&held, "NamespaceFinalizersRemaining").expect("condition");
    assert_eq!(finalizers["reason"], "SomeFinalizersRemain");
    assert_eq!(
        finalizers["message"],
        "Some content in the namespace has finalizers remaining: \
         example.com/hold in 1 resource instances"
    );
    let remaining = condition(&held, "NamespaceContentRemaining").expect("condition");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    let failure = condition(&held, "NamespaceDeletionContentFailure").expect("condition");
    assert_eq!(
        (&failure["status"], &failure["reason"]),
        (&json!("False"), &json!("ContentDeleted"))
    );
    // The free configmap went; the held one waits for its finalizer.
    let left: Vec<String> = list(&c.api, &cm_path)
        .await
        .iter()
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(left, ["hold"]);
    merge_patch(
        &c.api,
        &format!("{cm_path}/hold"),
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    c.wait_namespace_gone(ns).await;
}

fn used(quota: &Value) -> Value {
    quota["status"]["used"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_quota_usage_follows_pods_configmaps_cpu_and_custom_resources() {
    let c = cluster().await;
    let ns = "quota";
    create_namespace(&c.api, ns).await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let configmaps = format!("/api/v1/namespaces/{ns}/configmaps");
    let pod = |name: &str, cpu: &str| {
        json!({"metadata": {"name": name}, "spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}})
    };
    // Objects that exist before the quota: only the controller can count them.
    let first = create(&c.api, &pods, &pod("a", "100m")).await;
    create(&c.api, &pods, &pod("b", "250m")).await;
    for i in 0..3 {
        create(
            &c.api,
            &configmaps,
            &json!({"metadata": {"name": format!("cm{i}")}}),
        )
        .await;
    }
    let quota_path = format!("/api/v1/namespaces/{ns}/resourcequotas/q");
    create(
        &c.api,
        &format!("/api/v1/namespaces/{ns}/resourcequotas"),
        &json!({"metadata": {"name": "q"}, "spec": {"hard":
            {"pods": "10", "configmaps": "10", "requests.cpu": "2"}}}),
    )
    .await;
    let wait_used = |want: Value| {
        let api = &c.api;
        let quota_path = quota_path.clone();
        async move {
            wait_for(&format!("quota used {want}"), || async {
                let q = get(api, &quota_path).await.ok_or("quota gone")?;
                if used(&q) == want && q["status"]["hard"] == q["spec"]["hard"] {
                    Ok(q)
                } else {
                    Err(q["status"].to_string())
                }
            })
            .await
        }
    };
    wait_used(json!({"pods": "2", "configmaps": "3", "requests.cpu": "350m"})).await;

    create(&c.api, &pods, &pod("c", "1")).await;
    wait_used(json!({"pods": "3", "configmaps": "3", "requests.cpu": "1350m"})).await;

    // A finished pod no longer counts; a deleted configmap neither.
    mark_pod_finished(&c.api, &first, 0).await;
    let (status, body) = c
        .api
        .request("DELETE", &format!("{configmaps}/cm0"), None, Vec::new())
        .await
        .expect("delete");
    assert_eq!(status, 200, "{body}");
    wait_used(json!({"pods": "2", "configmaps": "2", "requests.cpu": "1250m"})).await;

    // A new hard limit is mirrored into status.hard and counted at once.
    create(
        &c.api,
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "s"}}),
    )
    .await;
    merge_patch(
        &c.api,
        &quota_path,
        &json!({"spec": {"hard": {"count/secrets": "5"}}}),
    )
    .await;
    wait_used(
        json!({"pods": "2", "configmaps": "2", "requests.cpu": "1250m",
                     "count/secrets": "1"}),
    )
    .await;

    // A custom resource is counted through a watch started when a quota first asks for it.
    install_widget_crd(&c.api).await;
    let widgets = format!("/apis/example.com/v1/namespaces/{ns}/widgets");
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": name}})
    };
    create(&c.api, &widgets, &widget("w1")).await;
    merge_patch(
        &c.api,
        &quota_path,
        &json!({"spec": {"hard": {"count/widgets.example.com": "3"}}}),
    )
    .await;
    wait_used(
        json!({"pods": "2", "configmaps": "2", "requests.cpu": "1250m",
                     "count/secrets": "1", "count/widgets.example.com": "1"}),
    )
    .await;
    let (status, body) = c
        .api
        .request("DELETE", &format!("{widgets}/w1"), None, Vec::new())
        .await
        .expect("delete");
    assert_eq!(status, 200, "{body}");
    wait_used(
        json!({"pods": "2", "configmaps": "2", "requests.cpu": "1250m",
                     "count/secrets": "1", "count/widgets.example.com": "0"}),
    )
    .await;
}

fn rules(role: &Value) -> Value {
    match &role["rules"] {
        Value::Null => json!([]),
        r => r.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_cluster_role_picks_up_rules_of_roles_created_later() {
    // With RBAC the apiserver stores its bootstrap policy, aggregated roles included;
    // AlwaysAllow after it lets the unauthenticated test client through.
    let c = cluster_with(&["--authorization-mode=RBAC,AlwaysAllow"]).await;
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    create(
        &c.api,
        roles,
        &json!({"metadata": {"name": "e2e-aggregate"},
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"e2e.example.com/aggregate": "true"}}]},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["delete"]}]}),
    )
    .await;
    let parent = format!("{roles}/e2e-aggregate");
    let wait_rules = |want: Value| {
        let api = &c.api;
        let parent = parent.clone();
        async move {
            wait_for(&format!("aggregated rules {want}"), || async {
                let role = get(api, &parent).await.ok_or("role gone")?;
                if rules(&role) == want {
                    Ok(())
                } else {
                    Err(role.to_string())
                }
            })
            .await
        }
    };
    // The bootstrap `admin`, `edit` and `view` are stored without rules: the controller fills
    // them, `view`'s rules reaching `admin` through `edit`.
    wait_for("admin to aggregate view through edit", || async {
        let admin = get(&c.api, &format!("{roles}/admin"))
            .await
            .ok_or("no admin")?;
        let view = get(&c.api, &format!("{roles}/view"))
            .await
            .ok_or("no view")?;
        let (admin_rules, view_rules) = (rules(&admin), rules(&view));
        let lsar = json!({"apiGroups": ["authorization.k8s.io"],
                          "resources": ["localsubjectaccessreviews"], "verbs": ["create"]});
        let has = |list: &Value, r: &Value| list.as_array().is_some_and(|l| l.contains(r));
        let view_in_admin = view_rules
            .as_array()
            .is_some_and(|v| !v.is_empty() && v.iter().all(|r| has(&admin_rules, r)));
        if has(&admin_rules, &lsar) && view_in_admin {
            Ok(())
        } else {
            Err(format!("admin {admin_rules} view {view_rules}"))
        }
    })
    .await;
    // Nothing selected yet: the stray rule is replaced by the (empty) union.
    wait_rules(json!([])).await;
    let get_pods = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
    let list_secrets = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]});
    create(
        &c.api,
        roles,
        &json!({"metadata": {"name": "e2e-child", "labels": {"e2e.example.com/aggregate": "true"}},
                "rules": [get_pods]}),
    )
    .await;
    create(
        &c.api,
        roles,
        &json!({"metadata": {"name": "e2e-other"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}),
    )
    .await;
    wait_rules(json!([get_pods])).await;
    merge_patch(
        &c.api,
        &format!("{roles}/e2e-child"),
        &json!({"rules": [get_pods, list_secrets]}),
    )
    .await;
    wait_rules(json!([get_pods, list_secrets])).await;
    // Labelling the other role brings its rules in; deleting the child takes its rules out.
    merge_patch(
        &c.api,
        &format!("{roles}/e2e-other"),
        &json!({"metadata": {"labels": {"e2e.example.com/aggregate": "true"}}}),
    )
    .await;
    let (status, body) = c
        .api
        .request("DELETE", &format!("{roles}/e2e-child"), None, Vec::new())
        .await
        .expect("delete");
    assert_eq!(status, 200, "{body}");
    wait_rules(json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}])).await;
}
