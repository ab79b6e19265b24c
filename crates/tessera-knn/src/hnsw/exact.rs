//! Exact k-NN: every accepted vector's distance, the k smallest kept in a max-heap.
//!
//! The answer for segments too small to need a graph, the fallback when a filter accepts so few
//! documents that a graph walk would visit more than it is worth, and the tests' ground truth.

use std::collections::BinaryHeap;

use super::scratch::Scored;
use super::{with_vectors, VectorStore, Vectors};
use crate::distance::Space;

/// Exact search over the accepted ordinals (the fallback and the path for small segments):
/// (ordinal, distance), best first, ties by ordinal.
pub fn exact_search(
    space: Space,
    store: &dyn VectorStore,
    query: &[f32],
    k: usize,
    filter: Option<&dyn Fn(u32) -> bool>,
) -> Vec<(u32, f32)> {
    assert_eq!(
        query.len(),
        store.dim(),
        "a query of dimension {} against vectors of dimension {}",
        query.len(),
        store.dim()
    );
    if k == 0 {
        return Vec::new();
    }
    with_vectors!(store, |vectors| top_k(
        space,
        &vectors,
        store.len(),
        query,
        k,
        filter
    ))
}

fn top_k<V: Vectors>(
    space: Space,
    vectors: &V,
    len: u32,
    query: &[f32],
    k: usize,
    filter: Option<&dyn Fn(u32) -> bool>,
) -> Vec<(u32, f32)> {
    let kernel = space.kernel();
    let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
    for node in 0..len {
        if !filter.is_none_or(|accept| accept(node)) {
            continue;
        }
        let scored = Scored {
            distance: kernel(query, vectors.get(node)),
            node,
        };
        if best.len() < k {
            best.push(scored);
        } else if best.peek().is_some_and(|worst| scored < *worst) {
            best.pop();
            best.push(scored);
        }
    }
    best.into_sorted_vec()
        .into_iter()
        .map(|s| (s.node, s.distance))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hnsw::test_data::clustered;
    use crate::hnsw::SliceStore;

    #[test]
    fn exact_search_matches_a_full_sort() {
        let data = clustered(500, 12, 4, 3);
        let store = SliceStore::new(&data, 12);
        let query = &data[12 * 7..12 * 8];
        for space in Space::ALL {
            let mut all: Vec<(u32, f32)> = (0..500)
                .map(|i| (i, space.distance(query, store.vector(i))))
                .collect();
            all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            all.truncate(10);
            assert_eq!(
                exact_search(space, &store, query, 10, None),
                all,
                "{space:?}"
            );
        }
    }

    #[test]
    fn exact_search_keeps_only_accepted_ordinals_and_copes_with_few() {
        let data = clustered(100, 4, 2, 9);
        let store = SliceStore::new(&data, 4);
        let odd = |ord: u32| ord % 2 == 1;
        let hits = exact_search(Space::L2, &store, &data[..4], 80, Some(&odd));
        assert_eq!(hits.len(), 50);
        assert!(hits.iter().all(|&(ord, _)| ord % 2 == 1));
        assert!(hits.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(exact_search(Space::L2, &store, &data[..4], 0, None).is_empty());
    }
}
