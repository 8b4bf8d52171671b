//! The generic store on the embedded backend: object-meta rules, optimistic concurrency,
//! namespaces' lifecycle, finalizers and graceful deletion, pagination.

use api_types::registry::by_group_version_resource;
use kube_apiserver::registry::list::ListOptions;
use kube_apiserver::registry::{DeleteOptions, DeleteOutcome, Part, RegistryError, ResourceStore};
use kube_apiserver::storage::backend::Backend;
use kube_apiserver::storage::embedded::EmbeddedBackend;
use serde_json::{Value, json};
use std::sync::Arc;

struct Fixture {
    _dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open(dir.path()).unwrap());
        Self { _dir: dir, backend }
    }

    fn store(&self, group: &str, version: &str, plural: &str) -> ResourceStore {
        let info = by_group_version_resource(group, version, plural).expect("known resource");
        ResourceStore::new(info, self.backend.clone())
    }

    async fn namespace(&self, name: &str) -> Value {
        self.store("", "v1", "namespaces")
            .create(
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .await
            .unwrap()
    }
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn rv(object: &Value) -> i64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn create_fills_metadata_and_rejects_duplicates() {
    // Missing and terminating namespaces are NamespaceLifecycle admission's to refuse
    // (admission::plugins::namespace_lifecycle), not the store's.
    let f = Fixture::new();
    let cms = f.store("", "v1", "configmaps");
    let ns = f.namespace("team").await;
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    let created = cms.create(Some("team"), configmap("a")).await.unwrap();
    assert_eq!(created["metadata"]["namespace"], "team");
    assert!(
        created["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    assert!(created["metadata"]["creationTimestamp"].as_str().is_some());
    assert!(rv(&created) > rv(&ns));

    let err = cms.create(Some("team"), configmap("a")).await.unwrap_err();
    assert!(
        matches!(err, RegistryError::AlreadyExists { .. }),
        "{err:?}"
    );

    let generated = cms
        .create(
            Some("team"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}),
        )
        .await
        .unwrap();
    assert!(
        generated["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("gen-")
    );

    let err = cms
        .create(Some("team"), configmap("Bad_Name"))
        .await
        .unwrap_err();
    let RegistryError::Invalid { errors, .. } = err else {
        panic!("{err:?}")
    };
    assert!(!errors.is_empty());

    let mut other_ns = configmap("b");
    other_ns["metadata"]["namespace"] = json!("elsewhere");
    assert!(matches!(
        cms.create(Some("team"), other_ns).await,
        Err(RegistryError::BadRequest(_))
    ));
}

#[tokio::test]
async fn updates_are_optimistic_and_skip_no_ops() {
    let f = Fixture::new();
    f.namespace("ns").await;
    let cms = f.store("", "v1", "configmaps");
    let created = cms.create(Some("ns"), configmap("a")).await.unwrap();

    let mut changed = created.clone();
    changed["data"]["k"] = json!("v2");
    let updated = cms
        .update(Some("ns"), "a", changed.clone(), Part::Main)
        .await
        .unwrap();
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);

    // The same body again carries a stale resourceVersion now.
    let err = cms
        .update(Some("ns"), "a", changed, Part::Main)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Conflict { .. }), "{err:?}");

    // Without a resourceVersion the write is unconditional.
    let mut blind = configmap("a");
    blind["data"]["k"] = json!("v3");
    let blind = cms
        .update(Some("ns"), "a", blind, Part::Main)
        .await
        .unwrap();
    assert_eq!(blind["data"]["k"], "v3");

    let same = cms
        .update(Some("ns"), "a", blind.clone(), Part::Main)
        .await
        .unwrap();
    assert_eq!(rv(&same), rv(&blind), "a no-op update must not write");

    let err = cms
        .update(Some("ns"), "missing", configmap("missing"), Part::Main)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }));
}

#[tokio::test]
async fn generation_and_status_subresource() {
    let f = Fixture::new();
    f.namespace("ns").await;
    let deployments = f.store("apps", "v1", "deployments");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}},
        "status": {"replicas": 5}});
    let created = deployments.create(Some("ns"), deployment).await.unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"]["replicas"], 1, "defaulted");
    assert_eq!(
        created["status"],
        json!({}),
        "status is not settable on create"
    );

    let mut relabeled = created.clone();
    relabeled["metadata"]["labels"] = json!({"tier": "front"});
    let relabeled = deployments
        .update(Some("ns"), "web", relabeled, Part::Main)
        .await
        .unwrap();
    assert_eq!(relabeled["metadata"]["generation"], 1);

    let mut scaled = relabeled.clone();
    scaled["spec"]["replicas"] = json!(3);
    scaled["status"] = json!({"replicas": 99});
    let scaled = deployments
        .update(Some("ns"), "web", scaled, Part::Main)
        .await
        .unwrap();
    assert_eq!(scaled["metadata"]["generation"], 2);
    assert_eq!(scaled["status"], json!({}), "main resource ignores status");

    let mut status = scaled.clone();
    status["status"] = json!({"replicas": 3, "observedGeneration": 2});
    status["spec"]["replicas"] = json!(10);
    let status = deployments
        .update(Some("ns"), "web", status, Part::Status)
        .await
        .unwrap();
    assert_eq!(status["status"]["replicas"], 3);
    assert_eq!(status["spec"]["replicas"], 3, "status ignores spec");
    assert_eq!(status["metadata"]["generation"], 2);
}

#[tokio::test]
async fn finalizers_orphaning_and_graceful_pods() {
    let f = Fixture::new();
    f.namespace("ns").await;
    let cms = f.store("", "v1", "configmaps");
    let mut held = configmap("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    cms.create(Some("ns"), held).await.unwrap();
    let DeleteOutcome::Pending(pending) = cms
        .delete(Some("ns"), "held", &DeleteOptions::default())
        .await
        .unwrap()
    else {
        panic!("a finalizer must hold the delete")
    };
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
    let mut released = pending.clone();
    released["metadata"]["finalizers"] = json!([]);
    cms.update(Some("ns"), "held", released, Part::Main)
        .await
        .unwrap();
    assert!(matches!(
        cms.get(Some("ns"), "held").await,
        Err(RegistryError::NotFound { .. })
    ));

    cms.create(Some("ns"), configmap("orphan-me"))
        .await
        .unwrap();
    let orphan = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    };
    let DeleteOutcome::Pending(object) =
        cms.delete(Some("ns"), "orphan-me", &orphan).await.unwrap()
    else {
        panic!("orphan propagation must add the orphan finalizer")
    };
    assert_eq!(object["metadata"]["finalizers"], json!(["orphan"]));

    let uid_mismatch = DeleteOptions {
        precondition_uid: Some("nope".into()),
        ..Default::default()
    };
    cms.create(Some("ns"), configmap("guarded")).await.unwrap();
    assert!(matches!(
        cms.delete(Some("ns"), "guarded", &uid_mismatch).await,
        Err(RegistryError::Conflict { .. })
    ));
    assert!(matches!(
        cms.delete(Some("ns"), "guarded", &DeleteOptions::default())
            .await,
        Ok(DeleteOutcome::Deleted(_))
    ));

    // gracePeriodSeconds means nothing to a kind without graceful deletion.
    cms.create(Some("ns"), configmap("graceless"))
        .await
        .unwrap();
    let grace = DeleteOptions {
        grace_period_seconds: Some(5),
        ..Default::default()
    };
    assert!(matches!(
        cms.delete(Some("ns"), "graceless", &grace).await,
        Ok(DeleteOutcome::Deleted(_))
    ));

    let pods = f.store("", "v1", "pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox:1.36"}]}});
    pods.create(Some("ns"), pod).await.unwrap();
    let DeleteOutcome::Pending(terminating) = pods
        .delete(Some("ns"), "p", &DeleteOptions::default())
        .await
        .unwrap()
    else {
        panic!("a scheduled pod is deleted gracefully")
    };
    assert_eq!(terminating["metadata"]["deletionGracePeriodSeconds"], 30);
    let unscheduled = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "u"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    pods.create(Some("ns"), unscheduled).await.unwrap();
    assert!(
        matches!(
            pods.delete(Some("ns"), "u", &grace).await,
            Ok(DeleteOutcome::Deleted(_))
        ),
        "a pod on no node has nothing to stop: it goes at once whatever grace was asked"
    );
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        pods.delete(Some("ns"), "p", &now).await,
        Ok(DeleteOutcome::Deleted(_))
    ));
}

#[tokio::test]
async fn pagination_reads_one_snapshot() {
    let f = Fixture::new();
    f.namespace("ns").await;
    let cms = f.store("", "v1", "configmaps");
    for i in 0..25 {
        let mut cm = configmap(&format!("cm-{i:02}"));
        if i % 5 == 0 {
            cm["metadata"]["labels"] = json!({"every": "fifth"});
        }
        cms.create(Some("ns"), cm).await.unwrap();
    }
    let mut options = ListOptions {
        limit: 10,
        ..Default::default()
    };
    let first = cms.list(Some("ns"), &options).await.unwrap();
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.remaining, Some(15));
    // Writes between pages do not show up in the continued list.
    cms.create(Some("ns"), configmap("cm-00a")).await.unwrap();
    cms.delete(Some("ns"), "cm-20", &DeleteOptions::default())
        .await
        .unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    options.continue_token = first.continue_token.clone();
    loop {
        let page = cms.list(Some("ns"), &options).await.unwrap();
        assert_eq!(page.resource_version, first.resource_version);
        names.extend(
            page.items
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string()),
        );
        match page.continue_token {
            Some(token) => options.continue_token = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(names, expected);

    let selected = ListOptions {
        label_selector: Some(api_types::labels::Selector::parse("every=fifth").unwrap()),
        limit: 2,
        ..Default::default()
    };
    let page = cms.list(Some("ns"), &selected).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.continue_token.is_some());
    assert_eq!(page.remaining, None, "no count under a selector");

    let all = cms.list(None, &ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 25, "25 created, one added, one deleted");
}

#[tokio::test]
async fn dry_runs_check_everything_and_write_nothing() {
    let f = Fixture::new();
    f.namespace("ns").await;
    let cms = f.store("", "v1", "configmaps");
    let dry = cms.dry_run();
    let before = f.backend.current_revision().await.unwrap();

    let created = dry.create(Some("ns"), configmap("a")).await.unwrap();
    assert_eq!(created["metadata"]["name"], "a");
    assert!(matches!(
        cms.get(Some("ns"), "a").await,
        Err(RegistryError::NotFound { .. })
    ));
    // Validation still answers.
    assert!(matches!(
        dry.create(Some("ns"), configmap("Bad_Name")).await,
        Err(RegistryError::Invalid { .. })
    ));
    assert_eq!(
        f.backend.current_revision().await.unwrap(),
        before,
        "dry runs wrote"
    );

    let stored = cms.create(Some("ns"), configmap("a")).await.unwrap();
    let after_create = f.backend.current_revision().await.unwrap();
    assert!(matches!(
        dry.create(Some("ns"), configmap("a")).await,
        Err(RegistryError::AlreadyExists { .. })
    ));
    let mut changed = stored.clone();
    changed["data"]["k"] = json!("dry");
    let answer = dry
        .update(Some("ns"), "a", changed, Part::Main)
        .await
        .unwrap();
    assert_eq!(answer["data"]["k"], "dry");
    assert!(matches!(
        dry.delete(Some("ns"), "a", &DeleteOptions::default()).await,
        Ok(DeleteOutcome::Deleted(_))
    ));
    assert_eq!(cms.get(Some("ns"), "a").await.unwrap()["data"]["k"], "v");
    assert_eq!(
        f.backend.current_revision().await.unwrap(),
        after_create,
        "dry runs wrote"
    );
}
