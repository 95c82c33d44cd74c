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

/// A shelf's bound when its environment variable is unset or not a number: 2 GiB.
pub(crate) const DEFAULT_LIMIT: usize = 2 << 30;

impl<K: Copy + Eq + Hash, V> Shelf<K, V> {
    /// An empty shelf holding at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Shelf { limit, free: HashMap::new(), order: VecDeque::new(), bytes: 0 }
    }

    /// An empty shelf bounded by the environment variable `var` (bytes; `0` keeps nothing), or by
    /// [`DEFAULT_LIMIT`] where it is unset or not a number (which is warned about once).
    pub fn from_env(var: &str) -> Self {
        let limit = crate::knob::var(var, "a byte count (0 turns the cache off)", |_: &usize| true);
        Shelf::new(limit.unwrap_or(DEFAULT_LIMIT))
    }

    /// The newest buffer kept under `key`, if any.
    pub fn take(&mut self, key: K) -> Option<V> {
        let (size, v) = self.pop(key, true)?;
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
            if let Some((s, old)) = self.pop(k, false) {
                self.bytes -= s;
                displaced.push(old);
            }
        }
        self.bytes += size;
        self.free.entry(key).or_default().push_back((size, v));
        self.order.push_back(key);
        Ok(displaced)
    }

    /// The newest (or oldest) buffer under `key`, removed; a key left with none is forgotten, so
    /// the map holds only the sizes kept now.
    fn pop(&mut self, key: K, newest: bool) -> Option<(usize, V)> {
        let queue = self.free.get_mut(&key)?;
        let got = if newest { queue.pop_back() } else { queue.pop_front() };
        if queue.is_empty() {
            self.free.remove(&key);
        }
        got
    }

    /// Every buffer kept, removed from the shelf.
    pub fn drain(&mut self) -> Vec<V> {
        self.order.clear();
        self.bytes = 0;
        self.free.drain().flat_map(|(_, q)| q.into_iter().map(|(_, v)| v)).collect()
    }

    /// How many buffers are kept under `key`.
    #[cfg(test)]
    pub fn count(&self, key: K) -> usize {
        self.free.get(&key).map_or(0, VecDeque::len)
    }

    /// The most bytes the shelf keeps.
    pub fn limit(&self) -> usize {
        self.limit
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
        assert_eq!(s.free.keys().collect::<Vec<_>>(), [&300], "emptied sizes are forgotten");
    }

    #[test]
    fn the_bound_comes_from_the_environment_or_the_default() {
        let var = "COLLECTIVES_TEST_SHELF_BOUND_ONLY_HERE";
        let limit = |v: Option<&str>| {
            // SAFETY: no other code reads or writes this variable, which only this test names.
            unsafe {
                match v {
                    Some(v) => std::env::set_var(var, v),
                    None => std::env::remove_var(var),
                }
            }
            Shelf::<u8, ()>::from_env(var).limit
        };
        assert_eq!(limit(None), DEFAULT_LIMIT);
        assert_eq!(limit(Some(" 1234 ")), 1234);
        assert_eq!(limit(Some("0")), 0);
        assert_eq!(limit(Some("two gigs")), DEFAULT_LIMIT, "not a number");
        limit(None);
    }

    proptest::proptest! {
        /// Any run of keeps and takes does what a plain list does: take hands back the newest
        /// buffer of its key, keep displaces the oldest buffers of all until the new one fits.
        #[test]
        fn keeps_and_takes_match_a_plain_list(ops in proptest::collection::vec((0u8..4, 1usize..40, proptest::bool::ANY), 1..200)) {
            let mut s = Shelf::new(100);
            let mut model: Vec<(u8, usize, u32)> = vec![]; // (key, size, id), oldest first
            for (id, &(key, size, is_keep)) in ops.iter().enumerate() {
                let id = id as u32;
                if is_keep {
                    let mut gone = vec![];
                    while model.iter().map(|m| m.1).sum::<usize>() + size > 100 && !model.is_empty() {
                        gone.push(model.remove(0).2);
                    }
                    model.push((key, size, id));
                    proptest::prop_assert_eq!(s.keep(key, size, id), Ok(gone));
                } else {
                    let want = model.iter().rposition(|m| m.0 == key).map(|i| model.remove(i).2);
                    proptest::prop_assert_eq!(s.take(key), want);
                }
                proptest::prop_assert_eq!(s.bytes(), model.iter().map(|m| m.1).sum::<usize>());
            }
        }
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
