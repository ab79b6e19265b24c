//! Walking a graph toward a query: greedy descent through the upper layers, then hnswlib's
//! ef-bounded best-first search on a layer (used at level 0 by queries and at every level by
//! inserts), with a filter and a visit budget for queries.
//!
//! The walk is generic over the graph ([`Layers`]: the builder's memory or a file read in place)
//! and the vectors ([`Vectors`]: a flat slice or the store's trait object), so the hot loop has
//! no virtual call but the distance kernel's, picked once per process.

use std::cmp::Reverse;

use super::format::HnswGraph;
use super::scratch::{with_scratch, Scored, Scratch};
use super::{with_vectors, Layers, VectorStore, Vectors};
use crate::distance::Kernel;

/// One k-NN search of one graph.
#[derive(Clone, Copy)]
pub struct SearchRequest<'q> {
    pub query: &'q [f32],
    pub k: usize,
    /// The breadth of the layer-0 search; the effective ef is max(k, ef).
    pub ef: usize,
    /// Accepted ordinals; others may be walked through but never returned.
    pub filter: Option<&'q dyn Fn(u32) -> bool>,
    /// Stop (and report exhausted) after this many distance computations.
    pub visit_budget: Option<usize>,
}

impl<'q> SearchRequest<'q> {
    /// A plain search: no filter, no budget.
    pub fn new(query: &'q [f32], k: usize, ef: usize) -> Self {
        SearchRequest {
            query,
            k,
            ef,
            filter: None,
            visit_budget: None,
        }
    }
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchOutcome {
    /// (ordinal, distance), best first; at most k, all accepted by the filter.
    pub hits: Vec<(u32, f32)>,
    /// Distance computations made.
    pub visited: usize,
    /// The visit budget ran out before the search ended: the hits may miss better ones.
    pub budget_exhausted: bool,
}

/// The limits of one layer walk.
pub(crate) struct Walk<'a> {
    pub(crate) ef: usize,
    pub(crate) filter: Option<&'a dyn Fn(u32) -> bool>,
    /// Distance computations allowed in all (`usize::MAX`: no budget).
    pub(crate) budget: usize,
}

impl Walk<'_> {
    /// An insert's walk: everything accepted, nothing else limits it.
    pub(crate) fn construction(ef: usize) -> Walk<'static> {
        Walk {
            ef,
            filter: None,
            budget: usize::MAX,
        }
    }
}

/// Greedy descent from `current` on each level from `top` down to `stop + 1`: moves to the
/// closest neighbour while one is closer. Returns where it stopped and whether the budget ran out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn greedy<L: Layers + ?Sized, V: Vectors>(
    layers: &L,
    vectors: &V,
    kernel: Kernel,
    query: &[f32],
    mut current: Scored,
    top: usize,
    stop: usize,
    n: u32,
    count: &mut usize,
    budget: usize,
) -> (Scored, bool) {
    for level in (stop + 1..=top).rev() {
        loop {
            let mut changed = false;
            for &neighbor in layers.neighbors(current.node, level) {
                if neighbor >= n {
                    continue;
                }
                if *count >= budget {
                    return (current, true);
                }
                let distance = kernel(query, vectors.get(neighbor));
                *count += 1;
                if distance < current.distance {
                    current = Scored {
                        distance,
                        node: neighbor,
                    };
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
    (current, false)
}

/// hnswlib's `searchBaseLayerST`: best-first from `entry` on `level`, keeping the `ef` closest
/// accepted nodes in `scratch.results`. Rejected nodes are expanded like the others (the walk
/// goes through them) but never kept. Returns whether the budget ran out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_layer<L: Layers + ?Sized, V: Vectors>(
    layers: &L,
    vectors: &V,
    kernel: Kernel,
    query: &[f32],
    entry: Scored,
    level: usize,
    walk: &Walk<'_>,
    n: u32,
    scratch: &mut Scratch,
    count: &mut usize,
) -> bool {
    scratch.reset(n as usize);
    let Scratch {
        visited,
        candidates,
        results,
        pending,
    } = scratch;
    let accept = |node: u32| walk.filter.is_none_or(|filter| filter(node));
    let ef = walk.ef.max(1);
    visited.insert(entry.node);
    if accept(entry.node) {
        results.push(entry);
    }
    candidates.push(Reverse(entry));
    let mut lower = results.peek().map_or(f32::INFINITY, |top| top.distance);
    while let Some(Reverse(current)) = candidates.pop() {
        // Without a filter every candidate is also a result until the results are full, so this
        // is hnswlib's `distance > lowerBound` either way.
        if current.distance > lower && results.len() >= ef {
            break;
        }
        // The next candidate's list is likely wanted next: start loading it now (hnswlib keeps
        // lists beside vectors, so there it is already warm).
        if level == 0 {
            if let Some(Reverse(next)) = candidates.peek() {
                layers.prefetch_links(next.node);
            }
        }
        pending.clear();
        for &neighbor in layers.neighbors(current.node, level) {
            if neighbor < n && visited.insert(neighbor) {
                pending.push(neighbor);
            }
        }
        if let Some(&first) = pending.first() {
            vectors.prefetch(first);
        }
        for i in 0..pending.len() {
            if *count >= walk.budget {
                return true;
            }
            let neighbor = pending[i];
            if let Some(&next) = pending.get(i + 1) {
                vectors.prefetch(next);
            }
            let distance = kernel(query, vectors.get(neighbor));
            *count += 1;
            if results.len() < ef || distance < lower {
                let scored = Scored {
                    distance,
                    node: neighbor,
                };
                candidates.push(Reverse(scored));
                if accept(neighbor) {
                    results.push(scored);
                    if results.len() > ef {
                        results.pop();
                    }
                }
                if let Some(top) = results.peek() {
                    lower = top.distance;
                }
            }
        }
    }
    false
}

impl HnswGraph<'_> {
    /// The k nearest accepted ordinals to the query (approximately: recall grows with ef).
    ///
    /// Panics when the store does not hold this graph's vectors (fewer of them, or another
    /// dimension than the query's): that is a caller's bug, not a data error.
    pub fn search(&self, store: &dyn VectorStore, req: &SearchRequest<'_>) -> SearchOutcome {
        assert!(
            store.len() >= self.len() && req.query.len() == store.dim(),
            "a graph of {} vectors searched with a store of {} vectors of dimension {} and a query of dimension {}",
            self.len(),
            store.len(),
            store.dim(),
            req.query.len()
        );
        with_vectors!(store, |vectors| self.search_with(&vectors, req))
    }

    fn search_with<V: Vectors>(&self, vectors: &V, req: &SearchRequest<'_>) -> SearchOutcome {
        let n = self.len();
        if n == 0 || req.k == 0 {
            return SearchOutcome::default();
        }
        let kernel = self.space().kernel();
        let budget = req.visit_budget.unwrap_or(usize::MAX);
        if budget == 0 {
            return SearchOutcome {
                budget_exhausted: true,
                ..SearchOutcome::default()
            };
        }
        let entry = self.entry();
        let mut count = 1;
        let start = Scored {
            distance: kernel(req.query, vectors.get(entry)),
            node: entry,
        };
        let (start, mut exhausted) = greedy(
            self,
            vectors,
            kernel,
            req.query,
            start,
            self.max_level(),
            0,
            n,
            &mut count,
            budget,
        );
        let walk = Walk {
            ef: req.ef.max(req.k),
            filter: req.filter,
            budget,
        };
        let mut hits = with_scratch(|scratch| {
            if !exhausted {
                exhausted = search_layer(
                    self, vectors, kernel, req.query, start, 0, &walk, n, scratch, &mut count,
                );
            } else {
                scratch.results.clear();
                if req.filter.is_none_or(|filter| filter(start.node)) {
                    scratch.results.push(start);
                }
            }
            scratch.results.drain().collect::<Vec<Scored>>()
        });
        hits.sort_unstable();
        hits.truncate(req.k);
        SearchOutcome {
            hits: hits.into_iter().map(|s| (s.node, s.distance)).collect(),
            visited: count,
            budget_exhausted: exhausted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::Space;
    use crate::hnsw::test_data::{clustered, recall, Rng};
    use crate::hnsw::{build_graph, HnswParams, SliceStore};

    const DIM: usize = 16;

    fn setup(space: Space, n: usize) -> (Vec<f32>, Vec<u8>, Vec<f32>) {
        let data = clustered(n, DIM, 20, 7);
        let bytes = build_graph(space, &SliceStore::new(&data, DIM), &HnswParams::default());
        let queries = clustered(50, DIM, 20, 8);
        (data, bytes, queries)
    }

    fn normalized(mut data: Vec<f32>) -> Vec<f32> {
        for vector in data.chunks_exact_mut(DIM) {
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        data
    }

    #[test]
    fn recall_at_10_is_at_least_095_in_every_space() {
        for space in Space::ALL {
            let mut data = clustered(2000, DIM, 20, 7);
            let mut queries = clustered(50, DIM, 20, 8);
            if space == Space::InnerProduct {
                // Inner product is meant for normalized embeddings; see the test below.
                data = normalized(data);
                queries = normalized(queries);
            }
            let store = SliceStore::new(&data, DIM);
            let bytes = build_graph(space, &store, &HnswParams::default());
            let graph = HnswGraph::open(&bytes).unwrap();
            let recall = recall(&graph, &store, &queries, 10, 64, None);
            assert!(recall >= 0.95, "{space:?}: recall {recall}");
        }
    }

    #[test]
    fn inner_product_on_unnormalized_vectors_needs_a_wider_search() {
        // Not a metric: vectors of large norm are everyone's nearest, and the graph's greedy
        // steps do worse (hnswlib alike); a larger ef makes up for it.
        let (data, bytes, queries) = setup(Space::InnerProduct, 2000);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, DIM);
        let narrow = recall(&graph, &store, &queries, 10, 64, None);
        let wide = recall(&graph, &store, &queries, 10, 300, None);
        assert!(
            narrow >= 0.85 && wide >= 0.95 && wide >= narrow,
            "{narrow} {wide}"
        );
    }

    #[test]
    fn hits_carry_exact_distances_best_first() {
        let (data, bytes, queries) = setup(Space::L2, 1000);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, DIM);
        let query = &queries[..DIM];
        let outcome = graph.search(&store, &SearchRequest::new(query, 10, 40));
        assert_eq!(outcome.hits.len(), 10);
        assert!(!outcome.budget_exhausted);
        assert!(outcome.visited > 10);
        for pair in outcome.hits.windows(2) {
            assert!(pair[0].1 <= pair[1].1);
        }
        for &(ord, distance) in &outcome.hits {
            assert_eq!(distance, Space::L2.distance(query, store.vector(ord)));
        }
        // ef below k is raised to k; k above n returns everything.
        let outcome = graph.search(&store, &SearchRequest::new(query, 10, 1));
        assert_eq!(outcome.hits.len(), 10);
        let small = &data[..5 * DIM];
        let small_bytes = build_graph(
            Space::L2,
            &SliceStore::new(small, DIM),
            &HnswParams::default(),
        );
        let small_graph = HnswGraph::open(&small_bytes).unwrap();
        let outcome = small_graph.search(
            &SliceStore::new(small, DIM),
            &SearchRequest::new(query, 10, 10),
        );
        assert_eq!(outcome.hits.len(), 5);
        assert!(graph
            .search(&store, &SearchRequest::new(query, 0, 10))
            .hits
            .is_empty());
    }

    #[test]
    fn a_store_without_a_flat_slice_gives_the_same_answers() {
        struct DynOnly<'a>(SliceStore<'a>);
        impl VectorStore for DynOnly<'_> {
            fn dim(&self) -> usize {
                self.0.dim()
            }
            fn len(&self) -> u32 {
                self.0.len()
            }
            fn vector(&self, ord: u32) -> &[f32] {
                self.0.vector(ord)
            }
        }
        let (data, bytes, queries) = setup(Space::L1, 800);
        let graph = HnswGraph::open(&bytes).unwrap();
        let flat = SliceStore::new(&data, DIM);
        for query in queries.chunks_exact(DIM).take(10) {
            let request = SearchRequest::new(query, 5, 30);
            assert_eq!(
                graph.search(&flat, &request),
                graph.search(&DynOnly(flat), &request)
            );
        }
    }

    #[test]
    fn threads_searching_one_graph_at_once_get_the_sequential_answers() {
        let (data, bytes, queries) = setup(Space::CosineSimil, 1500);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, DIM);
        let search = |query: &[f32]| graph.search(&store, &SearchRequest::new(query, 10, 40));
        let sequential: Vec<SearchOutcome> = queries.chunks_exact(DIM).map(search).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| queries.chunks_exact(DIM).map(search).collect::<Vec<_>>()))
                .collect();
            for handle in handles {
                assert_eq!(handle.join().unwrap(), sequential);
            }
        });
    }

    #[test]
    fn a_filter_keeps_only_accepted_ordinals_and_recall_holds_at_10_percent() {
        let (data, bytes, queries) = setup(Space::L2, 3000);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, DIM);
        let mut rng = Rng::new(11);
        let accepted: Vec<bool> = (0..3000)
            .map(|_| rng.next_u64().is_multiple_of(10))
            .collect();
        let filter = |ord: u32| accepted[ord as usize];
        for query in queries.chunks_exact(DIM) {
            let mut request = SearchRequest::new(query, 10, 100);
            request.filter = Some(&filter);
            let outcome = graph.search(&store, &request);
            assert_eq!(outcome.hits.len(), 10);
            assert!(outcome.hits.iter().all(|&(ord, _)| filter(ord)));
        }
        let recall = recall(&graph, &store, &queries, 10, 100, Some(&filter));
        assert!(recall >= 0.95, "recall {recall} at 10% selectivity");
    }

    #[test]
    fn the_visit_budget_is_respected_and_reported() {
        let (data, bytes, queries) = setup(Space::InnerProduct, 2000);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, DIM);
        let query = &queries[..DIM];
        for budget in [0, 1, 5, 50, 200] {
            let mut request = SearchRequest::new(query, 10, 200);
            request.visit_budget = Some(budget);
            let outcome = graph.search(&store, &request);
            assert!(outcome.visited <= budget, "{} > {budget}", outcome.visited);
            assert!(outcome.budget_exhausted);
            assert!(outcome.hits.len() <= 10);
        }
        let unlimited = graph.search(&store, &SearchRequest::new(query, 10, 200));
        let mut request = SearchRequest::new(query, 10, 200);
        request.visit_budget = Some(unlimited.visited);
        let exact_budget = graph.search(&store, &request);
        assert!(!exact_budget.budget_exhausted);
        assert_eq!(exact_budget.hits, unlimited.hits);
    }
}
