//! The k-NN search of one shard: per segment, the accepted documents (filter ∧ alive) and a
//! search over their vectors, through the segment's HNSW graph or exactly; the segments'
//! searches run on the shard's slices; then the shard's best k.
//!
//! As in Lucene, a `knn` query is *rewritten* before the weight of the request's query is built:
//! the shard runs the per-segment searches, keeps its top `k` (k is per shard, as in
//! OpenSearch) and the query becomes a fixed set of `(segment, doc, score)`
//! ([`crate::query::DocScoresQuery`]), so that a `bool`, `function_score` or aggregation sees
//! exactly the shard's k-NN hits.
//!
//! [`plan_segment`] is the one place where a segment's search is chosen (issue #18 item 4, as
//! OpenSearch's k-NN plugin): exact when the segment has no graph, when the accepted count c is
//! at most k, or, with a filter, when c × dim is at most 2,048,000 (a walk through a graph
//! mostly filtered out costs more than comparing the few accepted vectors); otherwise a graph
//! walk with ef = max(k, ef_search) that passes through rejected nodes but keeps only accepted
//! ones, with a visit budget of c and an exact fallback when the budget runs out or fewer than
//! k come back. Radial searches (`max_distance`, `min_score`) are exact: the graph has no radial
//! walk, and exact is the right answer.
//!
//! Slices (concurrent segment search): the segments are spread over the slices by their
//! estimated cost ([`segment_cost`]: a graph walk ≈ ef·M·log n distance computations, exact
//! ≈ c, each times dim), largest first, and the slices share the k-th best distance found so
//! far ([`SharedBound`]) to drop hits that cannot reach the shard's top k. Nothing a slice does
//! changes another's walk, so the shard's hits, sorted by (distance, segment, doc), are the
//! same for any slicing (a property test).

use std::sync::Arc;

use tantivy::index::SegmentReader;
use tantivy::query::Weight;
use tantivy::schema::Field;
use tantivy::BitSet;
use tantivy::{DocId, Searcher};

use crate::distance::Space;
use crate::hnsw::{exact_search, SearchRequest, SharedBound, VectorStore};
use crate::segment::{FieldVectors, ShardVectors};

/// OpenSearch's limit (`KNNConstants.MAX_DISTANCE_COMPUTATIONS`) under which a filtered segment
/// is searched exactly: accepted count × dimension.
pub const MAX_EXACT_DISTANCE_COMPUTATIONS: usize = 2_048_000;

/// What to return: the `k` closest, or everything within a distance (`max_distance`, or a
/// `min_score` turned into its distance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    TopK(usize),
    Within(f32),
}

/// One k-NN search, as the query asks for it (owned: slices run it on other threads).
#[derive(Clone, Debug)]
pub struct KnnSearch {
    pub field: Field,
    pub space: Space,
    pub vector: Arc<[f32]>,
    pub limit: Limit,
    /// `method_parameters.ef_search` or the index's `index.knn.algo_param.ef_search` (the
    /// graph's beam width; unused by exact search).
    pub ef_search: usize,
}

/// A hit of the shard: segment ordinal in the searcher, doc, distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShardHit {
    pub segment_ord: u32,
    pub doc: DocId,
    pub distance: f32,
}

/// How one segment is searched: decided in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentPlan {
    /// Every accepted vector is compared with the query.
    Exact,
    /// A walk through the segment's graph (with an exact fallback).
    Graph,
}

/// The plan for a segment's field (see the module docs): `accepted` is the count of accepted
/// documents (`None`: all of them), `filtered` whether the query has a filter.
pub fn plan_segment(
    vectors: &FieldVectors,
    accepted: Option<usize>,
    filtered: bool,
    limit: Limit,
) -> SegmentPlan {
    let Limit::TopK(k) = limit else {
        return SegmentPlan::Exact;
    };
    if !vectors.has_graph() {
        return SegmentPlan::Exact;
    }
    let count = accepted.unwrap_or(vectors.len() as usize);
    if count <= k {
        return SegmentPlan::Exact;
    }
    if filtered && count.saturating_mul(vectors.dim()) <= MAX_EXACT_DISTANCE_COMPUTATIONS {
        return SegmentPlan::Exact;
    }
    SegmentPlan::Graph
}

/// The estimated cost of a segment's search, in vector-element operations (distance
/// computations × dimension): a graph walk ≈ ef·M·log₂ n computations, exact ≈ the accepted
/// count. What slices are balanced by and what `auto` decides on.
pub fn segment_cost(
    vectors: &FieldVectors,
    plan: SegmentPlan,
    accepted: Option<usize>,
    search: &KnnSearch,
) -> tantivy::Result<u64> {
    let dim = vectors.dim() as u64;
    let count = accepted.unwrap_or(vectors.len() as usize) as u64;
    Ok(match (plan, search.limit) {
        (SegmentPlan::Graph, Limit::TopK(k)) => {
            let m = vectors.graph()?.map_or(16, |g| g.m()) as f64;
            let ef = search.ef_search.max(k) as f64;
            let log_n = (vectors.len().max(2) as f64).log2();
            ((ef * m * log_n) as u64).min(count) * dim
        }
        _ => count * dim,
    })
}

/// The accepted documents of a segment: the filter's matches that are alive, as a bitset, and
/// their count. `None` when every document is accepted (no filter, no deletes).
pub fn accepted_docs(
    reader: &SegmentReader,
    filter: Option<&dyn Weight>,
) -> tantivy::Result<Option<(BitSet, usize)>> {
    let alive = reader.alive_bitset();
    let Some(filter) = filter else {
        if alive.is_none() {
            return Ok(None);
        }
        let mut set = BitSet::with_max_value(reader.max_doc());
        let mut count = 0;
        for doc in reader.doc_ids_alive() {
            set.insert(doc);
            count += 1;
        }
        return Ok(Some((set, count)));
    };
    let mut set = BitSet::with_max_value(reader.max_doc());
    let mut count = 0;
    filter.for_each_no_score(reader, &mut |docs| {
        for &doc in docs {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                set.insert(doc);
                count += 1;
            }
        }
    })?;
    Ok(Some((set, count)))
}

/// Searches one segment's vectors: `(doc, distance)` best first, at most `k` for a top-k search.
pub fn search_segment(
    vectors: &FieldVectors,
    search: &KnnSearch,
    accepted: Option<&(BitSet, usize)>,
    filtered: bool,
    bound: &SharedBound,
) -> tantivy::Result<Vec<(DocId, f32)>> {
    if accepted.is_some_and(|(_, count)| *count == 0) {
        return Ok(Vec::new());
    }
    let accept = |ord: u32| accepted.is_none_or(|(set, _)| set.contains(vectors.doc(ord)));
    let filter: Option<&dyn Fn(u32) -> bool> = match accepted {
        Some(_) => Some(&accept),
        None => None,
    };
    let exact = |k: usize| exact_search(search.space, vectors, &search.vector, k, filter);
    let plan = plan_segment(vectors, accepted.map(|a| a.1), filtered, search.limit);
    let hits = match (plan, search.limit) {
        (SegmentPlan::Graph, Limit::TopK(k)) => {
            let graph = vectors.graph()?;
            match graph {
                Some(graph) => {
                    let mut request = SearchRequest::new(&search.vector, k, search.ef_search);
                    request.filter = filter;
                    request.visit_budget = accepted.map(|(_, count)| *count);
                    let outcome = graph.search(vectors, &request);
                    crate::stats::STATS.graph_searched();
                    if outcome.budget_exhausted || outcome.hits.len() < k {
                        exact(k)
                    } else {
                        outcome.hits
                    }
                }
                None => exact(k),
            }
        }
        (_, Limit::TopK(k)) => exact(k),
        (_, Limit::Within(max)) => {
            let mut hits: Vec<(u32, f32)> = (0..vectors.len())
                .filter(|&ord| accept(ord))
                .filter_map(|ord| {
                    let d = search.space.distance(&search.vector, vectors.vector(ord));
                    (d <= max).then_some((ord, d))
                })
                .collect();
            hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            hits
        }
    };
    if let (Limit::TopK(k), Some(last)) = (search.limit, hits.last()) {
        if hits.len() == k {
            bound.offer(last.1);
        }
    }
    // k hits at most this far exist: a farther one cannot reach the shard's top k (ties can)
    let cut = match search.limit {
        Limit::TopK(_) => bound.get(),
        Limit::Within(_) => f32::INFINITY,
    };
    Ok(hits
        .into_iter()
        .take_while(|&(_, d)| d <= cut)
        .map(|(ord, d)| (vectors.doc(ord), d))
        .collect())
}

/// One slice's share of a shard's k-NN search, run on another thread.
pub type SliceTask = Box<dyn FnOnce() -> tantivy::Result<Vec<ShardHit>> + Send>;

/// Runs a shard's slices: the search side's concurrent segment search (mode, slice count,
/// thread pool), seen from here.
pub trait SliceRunner {
    /// How many slices a search of this total cost (vector-element operations, see
    /// [`segment_cost`]) gets; 1 runs on the calling thread.
    fn slice_count(&self, total_cost: u64) -> usize;
    /// Runs the tasks (the first may run on the calling thread); results in task order.
    fn run(&self, tasks: Vec<SliceTask>) -> tantivy::Result<Vec<Vec<ShardHit>>>;
}

/// A segment to search: its ordinal, accepted docs and estimated cost.
struct SegmentWork {
    segment_ord: u32,
    accepted: Option<(BitSet, usize)>,
    cost: u64,
}

/// Spreads segments over `slices` by cost (largest first, each to the least loaded slice);
/// each slice searches its segments largest first.
fn assign(mut work: Vec<SegmentWork>, slices: usize) -> Vec<Vec<SegmentWork>> {
    work.sort_by(|a, b| b.cost.cmp(&a.cost).then(a.segment_ord.cmp(&b.segment_ord)));
    let slices = slices.clamp(1, work.len().max(1));
    let mut groups: Vec<(u64, Vec<SegmentWork>)> = (0..slices).map(|_| (0, Vec::new())).collect();
    for item in work {
        let lightest = (0..groups.len())
            .min_by_key(|&i| (groups[i].0, i))
            .expect("at least one slice");
        groups[lightest].0 += item.cost;
        groups[lightest].1.push(item);
    }
    groups
        .into_iter()
        .map(|(_, group)| group)
        .filter(|group| !group.is_empty())
        .collect()
}

/// Searches one slice's segments.
fn search_slice(
    vectors: &ShardVectors,
    search: &KnnSearch,
    work: &[SegmentWork],
    filtered: bool,
    bound: &SharedBound,
) -> tantivy::Result<Vec<ShardHit>> {
    let mut hits = Vec::new();
    for item in work {
        let Some(segment) = vectors.segment(item.segment_ord) else {
            continue;
        };
        let Some(vectors) = segment.field(search.field) else {
            continue;
        };
        crate::stats::STATS.segment_searched();
        for (doc, distance) in
            search_segment(&vectors, search, item.accepted.as_ref(), filtered, bound)?
        {
            hits.push(ShardHit {
                segment_ord: item.segment_ord,
                doc,
                distance,
            });
        }
    }
    Ok(hits)
}

/// The shard's hits: every segment searched (on the runner's slices when one is given and the
/// work is worth it), then the best `k` overall (ties: segment order, then doc), or all hits
/// within the distance. `vectors` are the searcher's ([`ShardVectors::open`]).
pub fn search_shard(
    searcher: &Searcher,
    vectors: &Arc<ShardVectors>,
    search: &KnnSearch,
    filter: Option<&dyn Weight>,
    runner: Option<&dyn SliceRunner>,
) -> tantivy::Result<Vec<ShardHit>> {
    let filtered = filter.is_some();
    let mut work = Vec::new();
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let Some(segment) = vectors.segment(segment_ord as u32) else {
            continue;
        };
        let Some(vectors) = segment.field(search.field) else {
            continue;
        };
        if vectors.is_empty() {
            continue;
        }
        let accepted = accepted_docs(reader, filter)?;
        let count = accepted.as_ref().map(|a| a.1);
        if count == Some(0) {
            continue;
        }
        let plan = plan_segment(&vectors, count, filtered, search.limit);
        let cost = segment_cost(&vectors, plan, count, search)?;
        work.push(SegmentWork {
            segment_ord: segment_ord as u32,
            accepted,
            cost,
        });
    }
    let total: u64 = work.iter().map(|w| w.cost).sum();
    let slices = match runner {
        Some(runner) if work.len() > 1 => runner.slice_count(total),
        _ => 1,
    };
    let bound = Arc::new(SharedBound::new());
    let groups = assign(work, slices);
    let mut hits = match runner {
        Some(runner) if groups.len() > 1 => {
            let search = Arc::new(search.clone());
            let tasks: Vec<SliceTask> = groups
                .into_iter()
                .map(|group| {
                    let vectors = vectors.clone();
                    let search = search.clone();
                    let bound = bound.clone();
                    Box::new(move || search_slice(&vectors, &search, &group, filtered, &bound))
                        as SliceTask
                })
                .collect();
            runner.run(tasks)?.concat()
        }
        _ => {
            let mut hits = Vec::new();
            for group in &groups {
                hits.extend(search_slice(vectors, search, group, filtered, &bound)?);
            }
            hits
        }
    };
    hits.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.segment_ord.cmp(&b.segment_ord))
            .then(a.doc.cmp(&b.doc))
    });
    if let Limit::TopK(k) = search.limit {
        hits.truncate(k);
    }
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::segment::SegmentVectors;

    use serde_json::json;
    use tantivy::query::{EnableScoring, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    use super::*;
    use crate::segment::{encode_vector, KnnPlugin, KNN_VECTOR_TYPE};

    fn shard_vectors(searcher: &Searcher) -> Arc<ShardVectors> {
        Arc::new(ShardVectors::open(searcher).unwrap())
    }

    struct Flat(Vec<Vec<f32>>);
    impl VectorStore for Flat {
        fn dim(&self) -> usize {
            self.0[0].len()
        }
        fn len(&self) -> u32 {
            self.0.len() as u32
        }
        fn vector(&self, ord: u32) -> &[f32] {
            &self.0[ord as usize]
        }
    }

    #[test]
    fn exact_search_keeps_the_best_k_with_a_filter() {
        let store = Flat((0..10).map(|i| vec![i as f32]).collect());
        let hits = exact_search(Space::L2, &store, &[3.2], 3, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3, 4, 2]);
        let even = |ord: u32| ord.is_multiple_of(2);
        let hits = exact_search(Space::L2, &store, &[3.2], 2, Some(&even));
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![4, 2]);
        assert!(exact_search(Space::L2, &store, &[0.0], 0, None).is_empty());
    }

    #[test]
    fn shared_bound_only_goes_down() {
        let bound = SharedBound::new();
        assert_eq!(bound.get(), f32::INFINITY);
        bound.offer(3.0);
        bound.offer(5.0);
        assert_eq!(bound.get(), 3.0);
    }

    #[test]
    fn shard_search_takes_the_best_k_over_segments_with_filter_and_deletes() {
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING);
        let tag = builder.add_text_field("tag", STRING);
        let v = builder.add_custom_field("v", KNN_VECTOR_TYPE, json!({"dimension": 1}));
        let index = Index::builder()
            .schema(builder.build())
            .register_plugin(Arc::new(KnnPlugin::default()))
            .create_in_ram()
            .unwrap();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (i, x) in [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0].iter().enumerate() {
            let mut doc = TantivyDocument::new();
            doc.add_text(id, i.to_string());
            doc.add_text(tag, if i % 2 == 0 { "even" } else { "odd" });
            doc.add_custom(v, &encode_vector(&[*x]));
            writer.add_document(doc).unwrap();
            if i == 2 {
                writer.commit().unwrap();
            }
        }
        writer.delete_term(Term::from_field_text(id, "3"));
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let search = KnnSearch {
            field: v,
            space: Space::L2,
            vector: Arc::from(vec![3.1f32]),
            limit: Limit::TopK(3),
            ef_search: 100,
        };
        let hits = search_shard(&searcher, &shard_vectors(&searcher), &search, None, None).unwrap();
        let distances: Vec<f32> = hits.iter().map(|h| h.distance.sqrt().round()).collect();
        assert_eq!(hits.len(), 3);
        // 3 is deleted: 4 (0.9), 2 (1.1), 5 (1.9)
        assert!((hits[0].distance - 0.81).abs() < 1e-4, "{hits:?}");
        assert_eq!(distances, vec![1.0, 1.0, 2.0]);
        let filter = TermQuery::new(Term::from_field_text(tag, "odd"), IndexRecordOption::Basic)
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        let hits = search_shard(
            &searcher,
            &shard_vectors(&searcher),
            &search,
            Some(filter.as_ref()),
            None,
        )
        .unwrap();
        // odd and alive: 5 and 1
        let xs: Vec<f32> = hits.iter().map(|h| 3.1 + h.distance.sqrt()).collect();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!((xs[0] - 5.0).abs() < 1e-4 && (3.1 - hits[1].distance.sqrt() - 1.0).abs() < 1e-4);
        let within = KnnSearch {
            limit: Limit::Within(1.0),
            ..search.clone()
        };
        assert_eq!(
            search_shard(&searcher, &shard_vectors(&searcher), &within, None, None)
                .unwrap()
                .len(),
            1
        );
    }

    /// Runs every slice on a thread of its own, with a fixed slice count.
    struct Threads(usize);

    impl SliceRunner for Threads {
        fn slice_count(&self, _total_cost: u64) -> usize {
            self.0
        }

        fn run(&self, tasks: Vec<SliceTask>) -> tantivy::Result<Vec<Vec<ShardHit>>> {
            let handles: Vec<_> = tasks.into_iter().map(std::thread::spawn).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        }
    }

    /// Five segments of 400 clustered 8-d vectors, each with its graph (m 8), some deletes.
    fn graph_shard() -> (Index, Field, Field) {
        let mut builder = Schema::builder();
        let tag = builder.add_text_field("tag", STRING);
        let v = builder.add_custom_field(
            "v",
            KNN_VECTOR_TYPE,
            crate::segment_graph::field_params(8, Space::L2, 8, 40),
        );
        let index = Index::builder()
            .schema(builder.build())
            .register_plugin(Arc::new(KnnPlugin::with_threshold(0)))
            .create_in_ram()
            .unwrap();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let data = crate::hnsw::test_data::clustered(2000, 8, 12, 5);
        for (i, vector) in data.chunks_exact(8).enumerate() {
            let mut doc = TantivyDocument::new();
            doc.add_text(tag, format!("t{}", i % 7));
            doc.add_custom(v, &encode_vector(vector));
            writer.add_document(doc).unwrap();
            if i % 400 == 399 {
                writer.commit().unwrap();
            }
        }
        writer.delete_term(Term::from_field_text(tag, "t3"));
        writer.commit().unwrap();
        (index, tag, v)
    }

    #[test]
    fn segments_with_a_graph_are_walked_and_find_the_exact_neighbours_mostly() {
        let (index, _, v) = graph_shard();
        let searcher = index.reader().unwrap().searcher();
        let segment = SegmentVectors::open(&searcher.segment_readers()[0])
            .unwrap()
            .unwrap();
        let vectors = segment.field(v).unwrap();
        assert!(vectors.has_graph());
        assert_eq!(
            plan_segment(&vectors, None, false, Limit::TopK(10)),
            SegmentPlan::Graph
        );
        assert_eq!(
            plan_segment(&vectors, Some(10), false, Limit::TopK(10)),
            SegmentPlan::Exact
        );
        // a filter small enough to compare every accepted vector
        assert_eq!(
            plan_segment(&vectors, Some(300), true, Limit::TopK(10)),
            SegmentPlan::Exact
        );
        assert_eq!(
            plan_segment(&vectors, None, false, Limit::Within(1.0)),
            SegmentPlan::Exact
        );
        let queries = crate::hnsw::test_data::clustered(20, 8, 12, 77);
        let mut found = 0;
        for query in queries.chunks_exact(8) {
            let search = KnnSearch {
                field: v,
                space: Space::L2,
                vector: Arc::from(query),
                limit: Limit::TopK(10),
                ef_search: 64,
            };
            let approximate =
                search_shard(&searcher, &shard_vectors(&searcher), &search, None, None).unwrap();
            // exact: every segment compared in full
            let mut exact = Vec::new();
            for (ord, reader) in searcher.segment_readers().iter().enumerate() {
                let segment = SegmentVectors::open(reader).unwrap().unwrap();
                let vectors = segment.field(v).unwrap();
                let alive = |o: u32| {
                    reader
                        .alive_bitset()
                        .is_none_or(|a| a.is_alive(vectors.doc(o)))
                };
                for (o, d) in exact_search(Space::L2, &vectors, query, 10, Some(&alive)) {
                    exact.push((d, ord as u32, vectors.doc(o)));
                }
            }
            exact.sort_by(|a, b| a.0.total_cmp(&b.0));
            exact.truncate(10);
            found += exact
                .iter()
                .filter(|e| {
                    approximate
                        .iter()
                        .any(|h| (h.segment_ord, h.doc) == (e.1, e.2))
                })
                .count();
        }
        assert!(
            found as f64 / 200.0 > 0.95,
            "recall {}",
            found as f64 / 200.0
        );
    }

    #[test]
    fn any_slice_count_gives_the_same_hits_as_one() {
        let (index, tag, v) = graph_shard();
        let searcher = index.reader().unwrap().searcher();
        let filter = TermQuery::new(Term::from_field_text(tag, "t1"), IndexRecordOption::Basic)
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        let queries = crate::hnsw::test_data::clustered(40, 8, 12, 99);
        for (i, query) in queries.chunks_exact(8).enumerate() {
            let limit = match i % 4 {
                0 => Limit::TopK(1),
                1 => Limit::TopK(10),
                2 => Limit::TopK(50),
                _ => Limit::Within(0.5),
            };
            let search = KnnSearch {
                field: v,
                space: Space::L2,
                vector: Arc::from(query),
                limit,
                ef_search: 16 + i,
            };
            for filter in [None, Some(filter.as_ref())] {
                let one = search_shard(&searcher, &shard_vectors(&searcher), &search, filter, None)
                    .unwrap();
                if matches!(limit, Limit::TopK(_)) {
                    assert!(!one.is_empty());
                }
                for slices in 1..=6 {
                    let sliced = search_shard(
                        &searcher,
                        &shard_vectors(&searcher),
                        &search,
                        filter,
                        Some(&Threads(slices)),
                    )
                    .unwrap();
                    assert_eq!(
                        sliced,
                        one,
                        "query {i}, {slices} slices, filter {}",
                        filter.is_some()
                    );
                }
            }
        }
    }

    #[test]
    fn slices_are_balanced_by_cost() {
        let work = |costs: &[u64]| {
            costs
                .iter()
                .enumerate()
                .map(|(i, &cost)| SegmentWork {
                    segment_ord: i as u32,
                    accepted: None,
                    cost,
                })
                .collect::<Vec<_>>()
        };
        let groups = assign(work(&[10, 60, 30, 30]), 2);
        let totals: Vec<u64> = groups
            .iter()
            .map(|g| g.iter().map(|w| w.cost).sum())
            .collect();
        assert_eq!(totals, vec![70, 60]);
        assert_eq!(assign(work(&[5, 5]), 8).len(), 2);
        assert_eq!(assign(Vec::new(), 3).len(), 0);
    }
}
