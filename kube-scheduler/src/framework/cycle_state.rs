//! Per-cycle plugin state, as upstream's `framework.CycleState`: written in PreFilter/PreScore,
//! read by Filter/Score on every node (in parallel), cloned for preemption's dry runs.

use std::any::Any;
use std::collections::HashMap;

/// Data a plugin keeps for one scheduling cycle; cloned when preemption simulates removals.
pub trait StateData: Any + Send + Sync {
    fn clone_data(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Send + Sync + Clone> StateData for T {
    fn clone_data(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The state of one scheduling cycle, keyed by plugin-chosen names.
#[derive(Default)]
pub struct CycleState {
    data: HashMap<&'static str, Box<dyn StateData>>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run this cycle.
    pub skip_filter_plugins: std::collections::HashSet<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run this cycle.
    pub skip_score_plugins: std::collections::HashSet<&'static str>,
}

impl CycleState {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        self.data.insert(key, Box::new(value));
    }

    pub fn read<T: 'static>(&self, key: &str) -> Option<&T> {
        let data: &dyn StateData = &**self.data.get(key)?;
        data.as_any().downcast_ref()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &str) -> Option<&mut T> {
        let data: &mut dyn StateData = &mut **self.data.get_mut(key)?;
        data.as_any_mut().downcast_mut()
    }

    pub fn delete(&mut self, key: &str) {
        self.data.remove(key);
    }
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        Self {
            data: self
                .data
                .iter()
                .map(|(k, v)| (*k, (**v).clone_data()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_score_plugins: self.skip_score_plugins.clone(),
        }
    }
}
