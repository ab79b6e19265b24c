//! The k-NN search of one shard: per segment, the accepted documents (filter ∧ alive) and a
//! search over their vectors; then the shard's best k.
//!
//! As in Lucene, a `knn` query is *rewritten* before the weight of the request's query is built:
//! the shard runs the per-segment searches, keeps its top `k` (k is per shard, as in
//! OpenSearch) and the query becomes a fixed set of `(segment, doc, score)`
//! ([`crate::query::DocScoresQuery`]), so that a `bool`, `function_score` or aggregation sees
//! exactly the shard's k-NN hits. [`search_segment`] is the one place where a segment's search
//! is chosen (graph or exact); today every segment is searched exactly.

use tantivy::index::SegmentReader;
use tantivy::query::Weight;
use tantivy::schema::Field;
use tantivy::BitSet;
use tantivy::{DocId, Searcher};

use crate::distance::Space;
use crate::hnsw::{exact_search, SharedBound, VectorStore};
use crate::segment::{FieldVectors, SegmentVectors};

/// What to return: the `k` closest, or everything within a distance (`max_distance`, or a
/// `min_score` turned into its distance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    TopK(usize),
    Within(f32),
}

/// One k-NN search, as the query asks for it.
#[derive(Clone, Debug)]
pub struct KnnSearch<'a> {
    pub field: Field,
    pub space: Space,
    pub vector: &'a [f32],
    pub limit: Limit,
    /// `method_parameters.ef_search` or the index's `index.knn.algo_param.ef_search` (for the
    /// graph: unused by exact search).
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
}

/// The plan for a segment's field: exact search until the graph is wired in (then: the graph
/// when the segment has one and the accepted count is large enough to need it).
pub fn plan_segment(
    vectors: &FieldVectors,
    _accepted: Option<usize>,
    _limit: Limit,
) -> SegmentPlan {
    let _ = vectors.graph;
    SegmentPlan::Exact
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
    bound: &SharedBound,
) -> Vec<(DocId, f32)> {
    if accepted.is_some_and(|(_, count)| *count == 0) {
        return Vec::new();
    }
    let accept = |ord: u32| accepted.is_none_or(|(set, _)| set.contains(vectors.doc(ord)));
    let hits = match plan_segment(vectors, accepted.map(|a| a.1), search.limit) {
        SegmentPlan::Exact => match search.limit {
            Limit::TopK(k) => {
                let filter: Option<&dyn Fn(u32) -> bool> = match accepted {
                    Some(_) => Some(&accept),
                    None => None,
                };
                exact_search(search.space, vectors, search.vector, k, filter)
            }
            Limit::Within(max) => {
                let mut hits: Vec<(u32, f32)> = (0..vectors.len())
                    .filter(|&ord| accept(ord))
                    .filter_map(|ord| {
                        let d = search.space.distance(search.vector, vectors.vector(ord));
                        (d <= max).then_some((ord, d))
                    })
                    .collect();
                hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                hits
            }
        },
    };
    if let (Limit::TopK(k), Some(last)) = (search.limit, hits.last()) {
        if hits.len() == k {
            bound.offer(last.1);
        }
    }
    hits.into_iter()
        .map(|(ord, d)| (vectors.doc(ord), d))
        .collect()
}

/// The shard's hits: every segment searched, then the best `k` overall (ties: segment order,
/// then doc), or all hits within the distance.
pub fn search_shard(
    searcher: &Searcher,
    search: &KnnSearch,
    filter: Option<&dyn Weight>,
) -> tantivy::Result<Vec<ShardHit>> {
    let bound = SharedBound::new();
    let mut hits = Vec::new();
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let Some(segment) = SegmentVectors::open(reader)? else {
            continue;
        };
        let Some(vectors) = segment.field(search.field) else {
            continue;
        };
        if vectors.len() == 0 {
            continue;
        }
        let accepted = accepted_docs(reader, filter)?;
        crate::stats::STATS.segment_searched();
        for (doc, distance) in search_segment(&vectors, search, accepted.as_ref(), &bound) {
            hits.push(ShardHit {
                segment_ord: segment_ord as u32,
                doc,
                distance,
            });
        }
    }
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

    use serde_json::json;
    use tantivy::query::{EnableScoring, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, STRING};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    use super::*;
    use crate::segment::{encode_vector, KnnPlugin, KNN_VECTOR_TYPE};

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
            .register_plugin(Arc::new(KnnPlugin))
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
            vector: &[3.1],
            limit: Limit::TopK(3),
            ef_search: 100,
        };
        let hits = search_shard(&searcher, &search, None).unwrap();
        let distances: Vec<f32> = hits.iter().map(|h| h.distance.sqrt().round()).collect();
        assert_eq!(hits.len(), 3);
        // 3 is deleted: 4 (0.9), 2 (1.1), 5 (1.9)
        assert!((hits[0].distance - 0.81).abs() < 1e-4, "{hits:?}");
        assert_eq!(distances, vec![1.0, 1.0, 2.0]);
        let filter = TermQuery::new(Term::from_field_text(tag, "odd"), IndexRecordOption::Basic)
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .unwrap();
        let hits = search_shard(&searcher, &search, Some(filter.as_ref())).unwrap();
        // odd and alive: 5 and 1
        let xs: Vec<f32> = hits.iter().map(|h| 3.1 + h.distance.sqrt()).collect();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!((xs[0] - 5.0).abs() < 1e-4 && (3.1 - hits[1].distance.sqrt() - 1.0).abs() < 1e-4);
        let within = KnnSearch {
            limit: Limit::Within(1.0),
            ..search
        };
        assert_eq!(search_shard(&searcher, &within, None).unwrap().len(), 1);
    }
}
