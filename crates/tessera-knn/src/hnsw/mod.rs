//! Search over a segment's vectors: the store trait, exact search and the bound shared by
//! slices. (Placeholder of the graph module: replaced wholesale by the HNSW implementation.)

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::distance::Space;

/// Dense vectors addressed by ordinal `0..len`.
#[allow(clippy::len_without_is_empty)]
pub trait VectorStore: Sync {
    fn dim(&self) -> usize;
    fn len(&self) -> u32;
    fn vector(&self, ord: u32) -> &[f32];
}

/// The `k` closest vectors to `query` among those `filter` accepts, best first, as
/// `(ordinal, distance)`; ties by ordinal.
pub fn exact_search(
    space: Space,
    store: &dyn VectorStore,
    query: &[f32],
    k: usize,
    filter: Option<&dyn Fn(u32) -> bool>,
) -> Vec<(u32, f32)> {
    #[derive(PartialEq)]
    struct Entry(f32, u32);
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
        }
    }
    if k == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(k + 1);
    for ord in 0..store.len() {
        if filter.is_some_and(|accept| !accept(ord)) {
            continue;
        }
        let distance = space.distance(query, store.vector(ord));
        if heap.len() < k {
            heap.push(Entry(distance, ord));
        } else if heap
            .peek()
            .is_some_and(|worst| Entry(distance, ord) < *worst)
        {
            heap.pop();
            heap.push(Entry(distance, ord));
        }
    }
    heap.into_sorted_vec()
        .into_iter()
        .map(|Entry(d, o)| (o, d))
        .collect()
}

/// The best k-th distance found so far across slices: segments searched later skip what
/// cannot beat it. An `f32` in an `AtomicU32`, only ever lowered.
pub struct SharedBound(AtomicU32);

impl SharedBound {
    pub fn new() -> SharedBound {
        SharedBound(AtomicU32::new(f32::INFINITY.to_bits()))
    }

    pub fn get(&self) -> f32 {
        f32::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// Lowers the bound to `d` if `d` is smaller.
    pub fn offer(&self, d: f32) {
        let mut current = self.0.load(Ordering::Relaxed);
        while d < f32::from_bits(current) {
            match self.0.compare_exchange_weak(
                current,
                d.to_bits(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }
}

impl Default for SharedBound {
    fn default() -> Self {
        SharedBound::new()
    }
}
