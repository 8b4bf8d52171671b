//! Per-cycle plugin state, as upstream's `framework.CycleState`: written in PreFilter/PreScore,
//! read by Filter/Score on every node (in parallel), cloned for preemption's dry runs.

use std::any::Any;

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

/// The state of one scheduling cycle, keyed by plugin-chosen names. A short list searched
/// linearly: a cycle holds a dozen entries, read on every node by every plugin, where hashing
/// each key would cost more than comparing a few.
#[derive(Default)]
pub struct CycleState {
    data: Vec<(&'static str, Box<dyn StateData>)>,
    /// Filter plugins (bit = position in the profile's Filter list) whose PreFilter returned
    /// Skip: not run this cycle. A mask, since it is read for every plugin on every node.
    pub skip_filter: u64,
    /// PreFilter plugins (bit = position in the PreFilter list) that returned Skip: their
    /// PreFilterExtensions have no state to update.
    pub skip_pre_filter: u64,
    /// Score plugins (bit = position in the Score list) whose PreScore returned Skip.
    pub skip_score: u64,
}

impl CycleState {
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.data
            .iter()
            .position(|(k, _)| std::ptr::eq(*k, key) || *k == key)
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        match self.position(key) {
            Some(i) => self.data[i].1 = Box::new(value),
            None => self.data.push((key, Box::new(value))),
        }
    }

    pub fn read<T: 'static>(&self, key: &str) -> Option<&T> {
        let data: &dyn StateData = &*self.data[self.position(key)?].1;
        data.as_any().downcast_ref()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &str) -> Option<&mut T> {
        let i = self.position(key)?;
        let data: &mut dyn StateData = &mut *self.data[i].1;
        data.as_any_mut().downcast_mut()
    }

    pub fn delete(&mut self, key: &str) {
        if let Some(i) = self.position(key) {
            self.data.swap_remove(i);
        }
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
            skip_filter: self.skip_filter,
            skip_pre_filter: self.skip_pre_filter,
            skip_score: self.skip_score,
        }
    }
}
