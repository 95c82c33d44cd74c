//! A bounded shelf of freed buffers, the one mechanism behind the host buffer pool
//! (`backend/host.rs`) and each Vulkan device's buffer cache (`backend/vulkan/cache.rs`).
//!
//! A buffer is kept under the key a later request must match exactly (its length; for Vulkan
//! also its use) and handed back newest first. The shelf holds at most `limit` bytes: a newly
//! freed buffer displaces the ones kept longest, which the caller frees (outside its lock), so a
//! workload whose sizes change keeps the sizes it uses now.
//!
//! ```text
//! keep(A) keep(B) keep(C)    shelf: A B C (full)
//! keep(D)                    shelf: B C D, A handed back to be freed
//! take(C)                    shelf: B D
//! ```

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Freed buffers of type `V` by key `K`, at most `limit` bytes in all.
pub(crate) struct Shelf<K, V> {
    limit: usize,
    /// The buffers under each key, oldest first, with their sizes in bytes.
    free: HashMap<K, VecDeque<(usize, V)>>,
    /// The key of every buffer kept, oldest first.
    order: VecDeque<K>,
    bytes: usize,
}

impl<K: Copy + Eq + Hash, V> Shelf<K, V> {
    /// An empty shelf holding at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Shelf { limit, free: HashMap::new(), order: VecDeque::new(), bytes: 0 }
    }

    /// The newest buffer kept under `key`, if any.
    pub fn take(&mut self, key: K) -> Option<V> {
        let (size, v) = self.free.get_mut(&key)?.pop_back()?;
        if let Some(i) = self.order.iter().rposition(|k| *k == key) {
            self.order.remove(i);
        }
        self.bytes -= size;
        Some(v)
    }

    /// Keeps `v` (`size` bytes) under `key`, returning the buffers it displaced; or gives `v`
    /// back when it is larger than the whole shelf.
    pub fn keep(&mut self, key: K, size: usize, v: V) -> Result<Vec<V>, V> {
        if size > self.limit {
            return Err(v);
        }
        let mut displaced = vec![];
        while self.bytes + size > self.limit {
            let Some(k) = self.order.pop_front() else { break };
            if let Some((s, old)) = self.free.get_mut(&k).and_then(VecDeque::pop_front) {
                self.bytes -= s;
                displaced.push(old);
            }
        }
        self.bytes += size;
        self.free.entry(key).or_default().push_back((size, v));
        self.order.push_back(key);
        Ok(displaced)
    }

    /// Every buffer kept, removed from the shelf.
    pub fn drain(&mut self) -> Vec<V> {
        self.order.clear();
        self.bytes = 0;
        self.free.drain().flat_map(|(_, q)| q.into_iter().map(|(_, v)| v)).collect()
    }

    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_shelf_displaces_the_buffers_kept_longest() {
        let mut s = Shelf::new(1000);
        for (key, name) in [(400, "a"), (400, "b"), (200, "c")] {
            assert!(s.keep(key, key, name).unwrap().is_empty());
        }
        assert_eq!(s.keep(300, 300, "d").unwrap(), ["a"], "the oldest made room");
        assert_eq!(s.bytes(), 900);
        assert_eq!(s.take(200), Some("c"));
        assert_eq!(s.take(400), Some("b"));
        assert_eq!(s.take(400), None);
        assert_eq!(s.keep(2000, 2000, "big"), Err("big"), "larger than the whole shelf");
        assert_eq!(s.bytes(), 300);
    }

    #[test]
    fn take_hands_back_the_newest_and_drain_empties() {
        let mut s = Shelf::new(100);
        s.keep(1, 10, "old").unwrap();
        s.keep(1, 10, "new").unwrap();
        s.keep(2, 10, "other").unwrap();
        assert_eq!(s.take(1), Some("new"));
        let mut rest = s.drain();
        rest.sort();
        assert_eq!(rest, ["old", "other"]);
        assert_eq!((s.bytes(), s.take(1)), (0, None));
        assert!(s.keep(3, 100, "fits exactly").unwrap().is_empty());
    }
}
