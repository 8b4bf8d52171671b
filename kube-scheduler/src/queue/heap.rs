//! A binary heap whose entries can be found, updated and removed by key (the pod's uid), as
//! upstream's `backend/heap`: the queues need update/delete of any pod, not only the head.

use std::collections::HashMap;
use std::sync::Arc;

/// `less(a, b)`: whether `a` must come out before `b`.
pub type LessFn<T> = Arc<dyn Fn(&T, &T) -> bool + Send + Sync>;

pub struct Heap<T> {
    items: Vec<T>,
    index: HashMap<String, usize>,
    key: fn(&T) -> &str,
    less: LessFn<T>,
}

impl<T> Heap<T> {
    pub fn new(key: fn(&T) -> &str, less: LessFn<T>) -> Self {
        Self {
            items: Vec::new(),
            index: HashMap::new(),
            key,
            less,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    pub fn get(&self, key: &str) -> Option<&T> {
        self.index.get(key).map(|&i| &self.items[i])
    }

    pub fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Adds `item`, or replaces the entry with its key and restores the order.
    pub fn push(&mut self, item: T) {
        let key = (self.key)(&item).to_string();
        match self.index.get(&key) {
            Some(&i) => {
                self.items[i] = item;
                self.fix(i);
            }
            None => {
                let i = self.items.len();
                self.items.push(item);
                self.index.insert(key, i);
                self.up(i);
            }
        }
    }

    pub fn pop(&mut self) -> Option<T> {
        if self.items.is_empty() {
            return None;
        }
        self.remove_at(0)
    }

    pub fn remove(&mut self, key: &str) -> Option<T> {
        let i = *self.index.get(key)?;
        self.remove_at(i)
    }

    /// Removes every entry (in no particular order).
    pub fn drain(&mut self) -> Vec<T> {
        self.index.clear();
        std::mem::take(&mut self.items)
    }

    fn remove_at(&mut self, i: usize) -> Option<T> {
        let last = self.items.len().checked_sub(1)?;
        self.swap(i, last);
        let item = self.items.pop()?;
        self.index.remove((self.key)(&item));
        if i < self.items.len() {
            self.fix(i);
        }
        Some(item)
    }

    fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        self.items.swap(a, b);
        // Both keys are already indexed: only their positions change, no allocation.
        let key = self.key;
        for i in [a, b] {
            if let Some(slot) = self.index.get_mut(key(&self.items[i])) {
                *slot = i;
            }
        }
    }

    fn fix(&mut self, i: usize) {
        if !self.up(i) {
            self.down(i);
        }
    }

    /// Moves the entry at `i` towards the root; whether it moved.
    fn up(&mut self, mut i: usize) -> bool {
        let start = i;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !(self.less)(&self.items[i], &self.items[parent]) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
        i != start
    }

    fn down(&mut self, mut i: usize) {
        let n = self.items.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let mut best = l;
            let r = l + 1;
            if r < n && (self.less)(&self.items[r], &self.items[l]) {
                best = r;
            }
            if !(self.less)(&self.items[best], &self.items[i]) {
                break;
            }
            self.swap(i, best);
            i = best;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(x: &(String, i32)) -> &str {
        &x.0
    }

    fn heap() -> Heap<(String, i32)> {
        Heap::new(
            key,
            Arc::new(|a: &(String, i32), b: &(String, i32)| a.1 < b.1),
        )
    }

    #[test]
    fn pops_in_order_after_updates_and_removals() {
        let mut h = heap();
        for (k, v) in [("a", 5), ("b", 3), ("c", 8), ("d", 1), ("e", 7)] {
            h.push((k.into(), v));
        }
        h.push(("c".into(), 0));
        assert_eq!(h.remove("d").map(|x| x.1), Some(1));
        assert!(h.remove("zz").is_none());
        assert_eq!(h.len(), 4);
        let order: Vec<String> = std::iter::from_fn(|| h.pop()).map(|x| x.0).collect();
        assert_eq!(order, ["c", "b", "a", "e"]);
        assert!(h.is_empty());
    }

    #[test]
    fn matches_a_sorted_reference_under_random_operations() {
        // A fixed linear congruential sequence: reproducible without a seeded RNG.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut h = heap();
        let mut reference: HashMap<String, i32> = HashMap::new();
        for _ in 0..2000 {
            let k = format!("k{}", next(300));
            match next(4) {
                0 => {
                    assert_eq!(h.remove(&k).map(|e| e.1), reference.remove(&k));
                }
                1 => {
                    let popped = h.pop();
                    let min = reference.values().min().copied();
                    assert_eq!(popped.as_ref().map(|e| e.1), min);
                    if let Some((k, _)) = popped {
                        reference.remove(&k);
                    }
                }
                _ => {
                    let v = next(1000) as i32;
                    h.push((k.clone(), v));
                    reference.insert(k, v);
                }
            }
            assert_eq!(h.len(), reference.len());
        }
        let mut rest: Vec<i32> = reference.into_values().collect();
        rest.sort();
        let drained: Vec<i32> = std::iter::from_fn(|| h.pop()).map(|e| e.1).collect();
        assert_eq!(drained, rest);
    }
}
