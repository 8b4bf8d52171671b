//! Indexer and lister behaviour: keys, namespace index, custom indices, updates and deletes.

use std::collections::BTreeMap;
use std::sync::Arc;

use client_go_rs::listers::{Indexer, IndexerError, Lister, NAMESPACE_INDEX};
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use kube::api::ObjectMeta;

fn pod(ns: &str, name: &str, node: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn node_name_index(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn names(mut objs: Vec<Arc<Pod>>) -> Vec<String> {
    let mut out: Vec<String> = objs
        .drain(..)
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    out.sort();
    out
}

#[test]
fn get_list_and_namespace_index() {
    let idx = Indexer::<Pod>::new();
    idx.insert(pod("a", "p1", "", &[]));
    idx.insert(pod("a", "p2", "", &[]));
    idx.insert(pod("b", "p1", "", &[]));

    assert_eq!(idx.len(), 3);
    assert!(idx.get("a", "p1").is_some());
    assert!(idx.get("b", "p2").is_none());
    assert!(idx.get_by_key("b/p1").is_some());
    assert_eq!(names(idx.list_namespace("a")), vec!["p1", "p2"]);
    assert_eq!(names(idx.list_namespace("b")), vec!["p1"]);
    assert!(idx.list_namespace("c").is_empty());
    // "" is NamespaceAll.
    assert_eq!(idx.list_namespace("").len(), 3);
    let mut keys = idx.list_keys();
    keys.sort();
    assert_eq!(keys, vec!["a/p1", "a/p2", "b/p1"]);
    assert_eq!(
        idx.index_keys(NAMESPACE_INDEX, "a").unwrap(),
        vec!["a/p1", "a/p2"]
    );
}

#[test]
fn reads_share_the_stored_object() {
    let idx = Indexer::<Pod>::new();
    let p = pod("a", "p1", "", &[]);
    idx.insert(p.clone());
    let got = idx.get("a", "p1").unwrap();
    assert!(Arc::ptr_eq(&p, &got), "a read must not copy the object");
}

#[test]
fn cluster_scoped_objects_have_bare_keys() {
    let idx = Indexer::<Node>::new();
    idx.insert(Arc::new(Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        ..Default::default()
    }));
    assert!(idx.get_by_key("n1").is_some());
    assert!(idx.get("", "n1").is_some());
    let lister = Lister::new(Arc::new(idx));
    assert!(lister.get("n1").is_some());
    assert!(lister.get("n2").is_none());
}

#[test]
fn custom_index_follows_updates_and_deletes() {
    let idx = Indexer::<Pod>::new();
    idx.add_indexer("nodeName", node_name_index).unwrap();
    idx.insert(pod("a", "p1", "n1", &[]));
    idx.insert(pod("a", "p2", "n1", &[]));
    idx.insert(pod("b", "p3", "n2", &[]));
    idx.insert(pod("b", "unscheduled", "", &[]));

    assert_eq!(
        names(idx.by_index("nodeName", "n1").unwrap()),
        vec!["p1", "p2"]
    );
    assert_eq!(names(idx.by_index("nodeName", "n2").unwrap()), vec!["p3"]);

    // Moving p2 to n2 must drop it from n1's entry.
    let old = idx.insert(pod("a", "p2", "n2", &[])).expect("replaced");
    assert_eq!(node_name_index(&old), vec!["n1"]);
    assert_eq!(names(idx.by_index("nodeName", "n1").unwrap()), vec!["p1"]);
    assert_eq!(
        names(idx.by_index("nodeName", "n2").unwrap()),
        vec!["p2", "p3"]
    );

    idx.delete("a/p1").expect("was stored");
    assert!(idx.by_index("nodeName", "n1").unwrap().is_empty());
    let mut values = idx.list_index_values("nodeName");
    values.sort();
    assert_eq!(values, vec!["n2"], "empty index entries are dropped");
    assert!(idx.delete("a/p1").is_none());
}

#[test]
fn index_added_late_covers_existing_objects() {
    let idx = Indexer::<Pod>::new();
    idx.insert(pod("a", "p1", "n1", &[]));
    idx.add_indexer("nodeName", node_name_index).unwrap();
    assert_eq!(names(idx.by_index("nodeName", "n1").unwrap()), vec!["p1"]);
}

#[test]
fn index_errors() {
    let idx = Indexer::<Pod>::new();
    assert_eq!(
        idx.by_index("nope", "x").unwrap_err(),
        IndexerError::NoSuchIndex("nope".into())
    );
    assert!(matches!(
        idx.add_indexer(NAMESPACE_INDEX, |_p: &Pod| vec![]),
        Err(IndexerError::Conflict(_))
    ));
    idx.add_indexer("nodeName", node_name_index).unwrap();
    assert!(matches!(
        idx.add_indexer("nodeName", node_name_index),
        Err(IndexerError::Conflict(_))
    ));
}

#[test]
fn multi_value_index() {
    let idx = Indexer::<Pod>::new();
    idx.add_indexer("labelKeys", |p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .map(|l| l.keys().cloned().collect())
            .unwrap_or_default()
    })
    .unwrap();
    idx.insert(pod("a", "p1", "", &[("app", "x"), ("tier", "web")]));
    idx.insert(pod("a", "p2", "", &[("app", "y")]));
    assert_eq!(
        names(idx.by_index("labelKeys", "app").unwrap()),
        vec!["p1", "p2"]
    );
    assert_eq!(
        names(idx.by_index("labelKeys", "tier").unwrap()),
        vec!["p1"]
    );
}

#[test]
fn replace_rebuilds_items_and_indices() {
    let idx = Indexer::<Pod>::new();
    idx.add_indexer("nodeName", node_name_index).unwrap();
    idx.insert(pod("a", "old", "n1", &[]));
    idx.replace(vec![
        pod("a", "new1", "n2", &[]),
        pod("b", "new2", "n2", &[]),
    ]);
    assert!(idx.get("a", "old").is_none());
    assert!(idx.by_index("nodeName", "n1").unwrap().is_empty());
    assert_eq!(
        names(idx.by_index("nodeName", "n2").unwrap()),
        vec!["new1", "new2"]
    );
    assert_eq!(names(idx.list_namespace("b")), vec!["new2"]);
}

#[test]
fn lister_filters_by_predicate() {
    let idx = Arc::new(Indexer::<Pod>::new());
    idx.insert(pod("a", "p1", "", &[("app", "web")]));
    idx.insert(pod("a", "p2", "", &[("app", "db")]));
    idx.insert(pod("b", "p3", "", &[("app", "web")]));
    let lister = Lister::new(idx);
    let is_web = |p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app"))
            .is_some_and(|v| v == "web")
    };
    assert_eq!(names(lister.list_matching(is_web)), vec!["p1", "p3"]);
    assert_eq!(
        names(lister.namespace("a").list_matching(is_web)),
        vec!["p1"]
    );
    assert_eq!(names(lister.namespace("a").list()), vec!["p1", "p2"]);
    assert!(lister.namespace("b").get("p3").is_some());
    assert!(lister.namespace("b").get("p1").is_none());
    assert_eq!(lister.list().len(), 3);
}

#[test]
fn lister_filters_by_label_selector() {
    use api_types::labels::Selector;
    let idx = Arc::new(Indexer::<Pod>::new());
    idx.insert(pod("a", "p1", "", &[("app", "web"), ("tier", "front")]));
    idx.insert(pod("a", "p2", "", &[("app", "db")]));
    idx.insert(pod("b", "p3", "", &[("app", "web")]));
    idx.insert(pod("b", "p4", "", &[]));
    let lister = Lister::new(idx);
    let web = Selector::parse("app=web").expect("valid selector");
    assert_eq!(names(lister.list_selected(&web)), vec!["p1", "p3"]);
    assert_eq!(names(lister.namespace("b").list_selected(&web)), vec!["p3"]);
    let not_web = Selector::parse("app!=web").expect("valid selector");
    assert_eq!(names(lister.list_selected(&not_web)), vec!["p2", "p4"]);
    let everything = Selector::parse("").expect("empty selector");
    assert_eq!(lister.list_selected(&everything).len(), 4);
}
