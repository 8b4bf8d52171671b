//! A size-bounded map, so per-object state cannot grow without limit.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Upstream's LRU size for the event caches.
pub(crate) const MAX_CACHE_ENTRIES: usize = 4096;

/// A map holding at most `capacity` entries, evicting the oldest-inserted key first (a
/// simpler policy than upstream's LRU; with 4096 entries the difference only matters for
/// processes that report on thousands of objects at once).
pub(crate) struct BoundedMap<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Eq + Hash + Clone, V> BoundedMap<K, V> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// The entry for `key`, inserting `make()` (and evicting if full) when absent.
    pub(crate) fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        if !self.map.contains_key(&key) {
            while self.map.len() >= self.capacity {
                match self.order.pop_front() {
                    Some(old) => {
                        self.map.remove(&old);
                    }
                    None => break,
                }
            }
            self.order.push_back(key.clone());
        }
        self.map.entry(key).or_insert_with(make)
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_oldest_when_full() {
        let mut m = BoundedMap::new(2);
        *m.get_or_insert_with("a", || 1) += 10;
        m.get_or_insert_with("b", || 2);
        m.get_or_insert_with("c", || 3);
        assert_eq!(m.len(), 2);
        assert!(m.get(&"a").is_none());
        assert_eq!(m.get(&"b"), Some(&2));
        assert_eq!(*m.get_or_insert_with("c", || 99), 3);
    }
}
