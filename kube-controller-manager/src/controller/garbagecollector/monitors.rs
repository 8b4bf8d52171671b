//! One informer per deletable resource, feeding the graph. The set follows discovery: resources
//! that appear get a monitor, resources that vanish lose theirs.

use super::collector::Shared;
use super::discovery::Resource;
use super::graph::{Identity, Observed};
use client_go_rs::informers::{
    EventHandlerFuncs, HandlerRegistration, InformerOptions, SharedInformer, SharedInformerFactory,
};
use kube::api::DynamicObject;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

struct Monitor {
    informer: Arc<SharedInformer<DynamicObject>>,
    registration: HandlerRegistration,
}

/// The running monitors, by `apiVersion/plural`.
#[derive(Default)]
pub struct Monitors {
    active: HashMap<String, Monitor>,
}

/// What a sync changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Monitors {
    /// Brings the monitors in line with `wanted`. With `keep_missing` (discovery was partial)
    /// nothing is removed. Informers added here still need `factory.start`.
    pub fn sync(
        &mut self,
        factory: &SharedInformerFactory,
        wanted: &[Resource],
        keep_missing: bool,
        shared: &Arc<Shared>,
    ) -> Changes {
        let mut changes = Changes::default();
        let wanted_keys: HashSet<String> = wanted.iter().map(Resource::key).collect();
        for r in wanted {
            let key = r.key();
            if self.active.contains_key(&key) {
                continue;
            }
            let informer = factory.dynamic_informer(&r.resource, InformerOptions::default());
            let registration = informer.add_event_handler(handler(r.clone(), shared.clone()));
            self.active.insert(
                key.clone(),
                Monitor {
                    informer,
                    registration,
                },
            );
            changes.added.push(key);
        }
        if !keep_missing {
            let gone: Vec<String> = self
                .active
                .keys()
                .filter(|k| !wanted_keys.contains(*k))
                .cloned()
                .collect();
            for key in gone {
                if let Some(m) = self.active.remove(&key) {
                    // The shared factory cannot stop one informer; without our handler it
                    // no longer feeds the graph.
                    m.informer.remove_event_handler(m.registration);
                    changes.removed.push(key);
                }
            }
        }
        changes.added.sort();
        changes.removed.sort();
        changes
    }

    /// Waits until every monitor has listed once; false on shutdown.
    pub async fn wait_for_sync(&self, shutdown: &tokio_util::sync::CancellationToken) -> bool {
        let informers: Vec<_> = self.active.values().map(|m| m.informer.clone()).collect();
        for informer in informers {
            if !informer.wait_for_cache_sync(shutdown).await {
                return false;
            }
        }
        true
    }

    pub fn len(&self) -> usize {
        self.active.len()
    }
}

/// Whether objects of this resource define served resources (CRDs, aggregated APIs).
fn defines_apis(r: &Resource) -> bool {
    matches!(
        (r.resource.group.as_str(), r.resource.plural.as_str()),
        ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("apiregistration.k8s.io", "apiservices")
    )
}

fn handler(resource: Resource, shared: Arc<Shared>) -> EventHandlerFuncs<DynamicObject> {
    let pokes = defines_apis(&resource);
    let (r_add, r_update, r_delete) = (resource.clone(), resource.clone(), resource);
    let (s_add, s_update, s_delete) = (shared.clone(), shared.clone(), shared);
    EventHandlerFuncs::new()
        .on_add(move |obj, _| {
            if let Some(o) = observed(&r_add, obj) {
                s_add.observe(None, &o);
            }
            if pokes {
                s_add.api_changed.notify_one();
            }
        })
        .on_update(move |old, new| {
            let old = observed(&r_update, old);
            if let Some(new) = observed(&r_update, new) {
                s_update.observe(old.as_ref(), &new);
            }
            if pokes {
                s_update.api_changed.notify_one();
            }
        })
        .on_delete(move |deleted| {
            if let Some(o) = observed(&r_delete, deleted.object()) {
                s_delete.observe_delete(&o.identity);
            }
            if pokes {
                s_delete.api_changed.notify_one();
            }
        })
}

/// What the graph needs of an object; the coordinates come from the monitor, since list items
/// may carry no apiVersion or kind.
pub fn observed(resource: &Resource, obj: &DynamicObject) -> Option<Observed> {
    let m = &obj.metadata;
    let uid = m.uid.clone().filter(|u| !u.is_empty())?;
    Some(Observed {
        identity: Identity {
            api_version: resource.resource.api_version.clone(),
            kind: resource.resource.kind.clone(),
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid,
        },
        owners: m.owner_references.clone().unwrap_or_default(),
        deleting: m.deletion_timestamp.is_some(),
        finalizers: m.finalizers.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use client_go_rs::events::{EventBroadcaster, InMemoryEventSink};
    use client_go_rs::workqueue::RateLimitingQueue;
    use kube::core::ApiResource;

    fn offline_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("static url"));
        kube::Client::try_from(config).expect("client")
    }

    fn resource(group: &str, version: &str, kind: &str, plural: &str) -> Resource {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Resource {
            resource: ApiResource {
                group: group.into(),
                version: version.into(),
                api_version,
                kind: kind.into(),
                plural: plural.into(),
            },
            namespaced: true,
        }
    }

    fn shared(client: kube::Client) -> Arc<Shared> {
        let broadcaster = EventBroadcaster::new(Arc::new(InMemoryEventSink::new()));
        Arc::new(Shared {
            graph: Default::default(),
            mapper: Default::default(),
            client,
            delete_queue: RateLimitingQueue::default_controller("test_delete"),
            orphan_queue: RateLimitingQueue::default_controller("test_orphan"),
            recorder: broadcaster.new_recorder("test", ""),
            api_changed: Default::default(),
        })
    }

    #[tokio::test]
    async fn monitors_follow_discovery() {
        let client = offline_client();
        let factory = SharedInformerFactory::new(client.clone(), None);
        let shared = shared(client);
        let cms = resource("", "v1", "ConfigMap", "configmaps");
        let widgets = resource("gc.example.com", "v1", "Widget", "widgets");
        let mut m = Monitors::default();
        let both = [cms.clone(), widgets.clone()];
        let steps: Vec<(&str, &[Resource], bool, Changes)> = vec![
            (
                "first discovery",
                &both,
                false,
                Changes {
                    added: vec!["gc.example.com/v1/widgets".into(), "v1/configmaps".into()],
                    removed: vec![],
                },
            ),
            ("nothing changed", &both, false, Changes::default()),
            (
                "partial discovery keeps monitors",
                std::slice::from_ref(&cms),
                true,
                Changes::default(),
            ),
            (
                "resource gone",
                std::slice::from_ref(&cms),
                false,
                Changes {
                    added: vec![],
                    removed: vec!["gc.example.com/v1/widgets".into()],
                },
            ),
        ];
        for (name, wanted, partial, want) in steps {
            assert_eq!(m.sync(&factory, wanted, partial, &shared), want, "{name}");
        }
        assert_eq!(m.len(), 1);
        let handlers = |r: &Resource| {
            factory
                .dynamic_informer(&r.resource, InformerOptions::default())
                .handler_count()
        };
        assert_eq!(handlers(&cms), 1);
        assert_eq!(
            handlers(&widgets),
            0,
            "a removed monitor no longer feeds the graph"
        );
    }

    #[test]
    fn coordinates_come_from_the_monitor() {
        let widgets = resource("gc.example.com", "v1", "Widget", "widgets");
        let mut obj = DynamicObject::new("w", &widgets.resource).within("ns");
        obj.types = None;
        assert!(observed(&widgets, &obj).is_none(), "no uid, no node");
        obj.metadata.uid = Some("u1".into());
        obj.metadata.finalizers = Some(vec!["orphan".into()]);
        let o = observed(&widgets, &obj).expect("observed");
        assert_eq!(
            o.identity,
            Identity {
                api_version: "gc.example.com/v1".into(),
                kind: "Widget".into(),
                namespace: "ns".into(),
                name: "w".into(),
                uid: "u1".into(),
            }
        );
        assert!(!o.deleting);
        assert_eq!(o.finalizers, vec!["orphan".to_string()]);
    }
}
