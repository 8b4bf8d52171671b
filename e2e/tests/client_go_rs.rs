//! Our client library against our apiserver, both real: the shared informer sees adds,
//! updates and deletes; leader election on real Leases hands over on release; the event
//! recorder writes events.k8s.io Events and aggregates repeats.

use client_go_rs::config::load_client_config;
use client_go_rs::events::{EventBroadcaster, EventType, KubeEventsV1Sink};
use client_go_rs::informers::{Deleted, EventHandlerFuncs, InformerOptions, SharedInformerFactory};
use client_go_rs::leaderelection::{
    KubeLeaseLock, LeaderCallbacks, LeaderElectionConfig, LeaderElector,
};
use e2e::apiserver::{ApiServer, Backend};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(20);

async fn client(server: &ApiServer, dir: &std::path::Path) -> kube::Client {
    let kubeconfig = dir.join("client.kubeconfig");
    e2e::kubectl::write_kubeconfig(&kubeconfig, &server.url(), &server.ca_file()).unwrap();
    load_client_config(Some(&kubeconfig), None, None)
        .await
        .unwrap()
        .build_client()
        .unwrap()
}

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), value.to_string())])),
        ..Default::default()
    }
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("no event in time")
        .expect("channel closed")
}

#[tokio::test(flavor = "multi_thread")]
async fn shared_informer_follows_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let client = client(&server, dir.path()).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("before", "1"))
        .await
        .unwrap();

    let factory = SharedInformerFactory::new(client.clone(), None);
    let informer =
        factory.informer_with::<ConfigMap>(InformerOptions::default().namespace("default"));
    assert!(Arc::ptr_eq(
        &informer,
        &factory.informer_with::<ConfigMap>(InformerOptions::default().namespace("default"))
    ));
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, String, String)>();
    let (add, update, delete) = (tx.clone(), tx.clone(), tx);
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |cm: &Arc<ConfigMap>, _| {
                let _ = add.send((
                    "add".into(),
                    cm.metadata.name.clone().unwrap_or_default(),
                    String::new(),
                ));
            })
            .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                let value = |cm: &ConfigMap| {
                    cm.data
                        .as_ref()
                        .and_then(|d| d.get("k").cloned())
                        .unwrap_or_default()
                };
                let _ = update.send(("update".into(), value(old), value(new)));
            })
            .on_delete(move |gone: &Deleted<ConfigMap>| {
                let name = match gone {
                    Deleted::Known(cm) => cm.metadata.name.clone(),
                    Deleted::FinalStateUnknown { obj, .. } => obj.metadata.name.clone(),
                };
                let _ = delete.send(("delete".into(), name.unwrap_or_default(), String::new()));
            }),
    );
    let shutdown = CancellationToken::new();
    factory.start(&shutdown);
    assert!(
        tokio::time::timeout(PATIENCE, factory.wait_for_cache_sync(&shutdown))
            .await
            .unwrap()
    );
    assert_eq!(
        next(&mut rx).await,
        ("add".into(), "before".into(), String::new())
    );

    api.create(&PostParams::default(), &configmap("live", "1"))
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx).await,
        ("add".into(), "live".into(), String::new())
    );
    let mut changed = api.get("live").await.unwrap();
    changed.data = Some(BTreeMap::from([("k".to_string(), "2".to_string())]));
    api.replace("live", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx).await,
        ("update".into(), "1".into(), "2".into())
    );
    let cached = informer
        .lister()
        .namespace("default")
        .get("live")
        .expect("in the lister");
    assert_eq!(cached.data.as_ref().unwrap()["k"], "2");
    api.delete("live", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        next(&mut rx).await,
        ("delete".into(), "live".into(), String::new())
    );
    shutdown.cancel();
    factory.shutdown().await;
}

fn candidate(
    client: &kube::Client,
    identity: &str,
) -> (LeaderElector, mpsc::UnboundedReceiver<&'static str>) {
    let mut config = LeaderElectionConfig::new(identity);
    config.lease_duration = Duration::from_secs(4);
    config.renew_deadline = Duration::from_secs(3);
    config.retry_period = Duration::from_millis(200);
    config.release_on_cancel = true;
    let lock = Arc::new(KubeLeaseLock::new(
        client.clone(),
        "kube-system",
        "e2e-lock",
    ));
    let (tx, rx) = mpsc::unbounded_channel();
    let stopped = tx.clone();
    let callbacks = LeaderCallbacks::new(move |_leading: CancellationToken| {
        let tx = tx.clone();
        async move {
            let _ = tx.send("started");
        }
    })
    .on_stopped_leading(move || {
        let _ = stopped.send("stopped");
    });
    (LeaderElector::new(config, lock, callbacks).unwrap(), rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn leader_election_hands_over_on_release() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let client = client(&server, dir.path()).await;

    let (a, mut a_events) = candidate(&client, "candidate-a");
    let a_status = a.status();
    let a_cancel = CancellationToken::new();
    let a_task = tokio::spawn(a.run(a_cancel.clone()));
    assert_eq!(next(&mut a_events).await, "started");

    let (b, mut b_events) = candidate(&client, "candidate-b");
    let b_status = b.status();
    let b_cancel = CancellationToken::new();
    let b_task = tokio::spawn(b.run(b_cancel.clone()));
    // b observes a's lease and waits; a keeps renewing through the real apiserver.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(a_status.is_leader() && !b_status.is_leader());
    assert!(b_events.try_recv().is_err(), "b led while a held the lease");

    a_cancel.cancel();
    a_task.await.unwrap();
    assert_eq!(next(&mut a_events).await, "stopped");
    assert_eq!(next(&mut b_events).await, "started");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let lease = leases.get("e2e-lock").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("candidate-b"));
    assert!(spec.lease_transitions.unwrap_or(0) >= 1);
    b_cancel.cancel();
    b_task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn event_recorder_writes_and_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let client = client(&server, dir.path()).await;
    let cm = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &configmap("subject", "1"))
        .await
        .unwrap();
    let regarding = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: cm.metadata.name.clone(),
        namespace: Some("default".into()),
        uid: cm.metadata.uid.clone(),
        ..Default::default()
    };
    let broadcaster = EventBroadcaster::new(Arc::new(KubeEventsV1Sink::new(client.clone())));
    let recorder = broadcaster.new_recorder("e2e-controller", "e2e-1");
    for _ in 0..3 {
        recorder.event(
            &regarding,
            EventType::Normal,
            "Synced",
            "synced the configmap",
        );
    }
    recorder.event(&regarding, EventType::Warning, "Failed", "something else");
    // The broadcaster drains once every recorder (sender) is gone.
    drop(recorder);
    tokio::time::timeout(PATIENCE, broadcaster.shutdown())
        .await
        .unwrap();

    let events: Api<Event> = Api::namespaced(client, "default");
    let list = events.list(&ListParams::default()).await.unwrap();
    let synced: Vec<&Event> = list
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Synced"))
        .collect();
    assert_eq!(synced.len(), 1, "repeats are one event");
    let event = synced[0];
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("subject")
    );
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("e2e-controller")
    );
    assert_eq!(event.series.as_ref().map(|s| s.count), Some(3));
    assert!(list.items.iter().any(|e| e.reason.as_deref() == Some("Failed") && e.type_.as_deref() == Some("Warning")));
}
