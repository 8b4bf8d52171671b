//! Plugin construction: each in-tree plugin registers a factory by name; a profile's resolved
//! plugin list picks the factories and hands each its args.

use super::interface::Plugin;
use super::parallelize::Parallelizer;
use super::pod_info::PodInfo;
use client_go_rs::events::EventRecorder;
use client_go_rs::informers::SharedInformerFactory;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// The queue's record of pods nominated to nodes by preemption (upstream's `PodNominator`):
/// Filter counts higher-priority nominated pods, and preemption reads and clears nominations.
pub trait PodNominator: Send + Sync {
    /// Whether any pod is nominated at all; when none is, Filter skips the per-node lookup.
    fn has_nominated_pods(&self) -> bool {
        true
    }
    fn nominated_pods_for_node(&self, node_name: &str) -> Vec<Arc<PodInfo>>;
    fn add_nominated_pod(&self, pod: &Arc<PodInfo>, node_name: &str);
    fn delete_nominated_pod(&self, pod: &PodInfo);
}

/// What plugins may use when they are built: the API client, the shared informers (register
/// listers at construction; the factory starts after every profile is built), the parallel
/// pool, and the event recorder.
#[derive(Clone)]
pub struct PluginContext {
    pub client: kube::Client,
    pub informers: Arc<SharedInformerFactory>,
    pub parallelizer: Parallelizer,
    pub recorder: Option<EventRecorder>,
    /// Set once the queue exists (it is built after the profiles).
    pub nominator: Arc<OnceLock<Arc<dyn PodNominator>>>,
}

impl PluginContext {
    pub fn nominator(&self) -> Option<&Arc<dyn PodNominator>> {
        self.nominator.get()
    }
}

/// Builds a plugin from its args (`None`: the plugin's defaults).
pub type PluginFactory =
    fn(args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String>;

/// Plugin names to factories.
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<(&'static str, PluginFactory)>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, name: &'static str, factory: PluginFactory) {
        self.entries.retain(|(n, _)| *n != name);
        self.entries.push((name, factory));
    }

    pub fn get(&self, name: &str) -> Option<PluginFactory> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(n, _)| *n)
    }
}
