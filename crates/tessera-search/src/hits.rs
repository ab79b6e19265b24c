//! Hits and query results, and the one reduce that merges them.
//!
//! A slice's result and a shard's result are the same [`QueryResult`]; reducing the slices of
//! a shard and reducing the shards of a request is the same [`reduce`] call, so the two levels
//! cannot drift apart, and one slice or eight give identical answers.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::collapse::{first_of_each_group, CollapseKey};
use crate::sort::{compare_keys, SortField, SortSpec, SortValue};

/// A matching document before fetch: where it is and how it sorts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardHit {
    /// Position of the shard in the request (the first tie-breaker).
    pub shard_index: u32,
    /// The segment, as tantivy numbers it (for the fetch phase).
    pub segment_ord: u32,
    /// The segment's place in index order (the second tie-breaker).
    pub segment_rank: u32,
    pub doc: u32,
    /// `NaN` when scores were not computed.
    pub score: f32,
    /// Sort values, one per sort field (empty when sorting by score only).
    pub sort: Vec<SortValue>,
    /// The hit's group under `collapse` (none without it): the reduce keeps the first hit
    /// of each group.
    pub collapse: Option<CollapseKey>,
}

/// How hits are ordered.
#[derive(Clone, Debug, PartialEq)]
pub enum HitSort {
    /// By score, descending (the default).
    Score,
    Fields {
        fields: Vec<SortField>,
        specs: Vec<SortSpec>,
    },
}

impl HitSort {
    /// `[]` and `["_score"]` sort by score; anything else by fields.
    pub fn new(fields: Vec<SortField>) -> HitSort {
        if fields.is_empty()
            || (fields.len() == 1
                && fields[0]
                    == (SortField::Score {
                        order: crate::sort::Order::Desc,
                    }))
        {
            return HitSort::Score;
        }
        let specs = fields.iter().map(SortSpec::for_field).collect();
        HitSort::Fields { fields, specs }
    }

    pub fn is_score(&self) -> bool {
        matches!(self, HitSort::Score)
    }

    pub fn fields(&self) -> &[SortField] {
        match self {
            HitSort::Score => &[],
            HitSort::Fields { fields, .. } => fields,
        }
    }

    /// Compares sort keys only (no tie-break): `Less` when `a` comes first.
    pub fn compare_key(&self, a: &ShardHit, b: &ShardHit) -> Ordering {
        match self {
            HitSort::Score => b.score.total_cmp(&a.score),
            HitSort::Fields { specs, .. } => compare_keys(specs, &a.sort, &b.sort),
        }
    }

    /// Full order: keys, then shard, then index order (segment rank, doc).
    pub fn compare(&self, a: &ShardHit, b: &ShardHit) -> Ordering {
        self.compare_key(a, b)
            .then(a.shard_index.cmp(&b.shard_index))
            .then(a.segment_rank.cmp(&b.segment_rank))
            .then(a.doc.cmp(&b.doc))
    }
}

/// What a slice, a shard or the whole request found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// The best hits, sorted, at most `k`.
    pub hits: Vec<ShardHit>,
    pub total: u64,
    /// True when `total` is a lower bound (counting stopped early).
    pub total_is_lower_bound: bool,
    pub max_score: Option<f32>,
    pub timed_out: bool,
    pub terminated_early: bool,
}

/// Merges results: the best `k` hits (under `collapse`, of different groups), summed totals,
/// combined flags.
pub fn reduce(results: Vec<QueryResult>, sort: &HitSort, k: usize) -> QueryResult {
    let mut merged = QueryResult::default();
    let mut hits = Vec::new();
    for result in results {
        merged.total += result.total;
        merged.total_is_lower_bound |= result.total_is_lower_bound;
        merged.timed_out |= result.timed_out;
        merged.terminated_early |= result.terminated_early;
        merged.max_score = match (merged.max_score, result.max_score) {
            (Some(a), Some(b)) => Some(if b > a { b } else { a }),
            (a, b) => a.or(b),
        };
        hits.extend(result.hits);
    }
    hits.sort_by(|a, b| sort.compare(a, b));
    first_of_each_group(&mut hits);
    hits.truncate(k);
    merged.hits = hits;
    merged
}

/// The best `k` hits seen so far, with the worst on top of a heap.
pub struct TopK<'a> {
    k: usize,
    sort: &'a HitSort,
    heap: Vec<ShardHit>,
}

impl<'a> TopK<'a> {
    pub fn new(k: usize, sort: &'a HitSort) -> TopK<'a> {
        TopK {
            k,
            sort,
            heap: Vec::with_capacity(k.min(1024)),
        }
    }

    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The worst hit kept, when full.
    pub fn worst(&self) -> Option<&ShardHit> {
        if self.is_full() {
            self.heap.first()
        } else {
            None
        }
    }

    /// True when `hit` would be kept.
    pub fn accepts(&self, hit: &ShardHit) -> bool {
        match self.worst() {
            Some(worst) => self.sort.compare(hit, worst) == Ordering::Less,
            None => self.k > 0,
        }
    }

    pub fn push(&mut self, hit: ShardHit) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(hit);
            self.sift_up(self.heap.len() - 1);
        } else if self.sort.compare(&hit, &self.heap[0]) == Ordering::Less {
            self.heap[0] = hit;
            self.sift_down(0);
        }
    }

    fn worse(&self, a: usize, b: usize) -> bool {
        self.sort.compare(&self.heap[a], &self.heap[b]) == Ordering::Greater
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.worse(i, parent) {
                self.heap.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut worst = i;
            if left < self.heap.len() && self.worse(left, worst) {
                worst = left;
            }
            if right < self.heap.len() && self.worse(right, worst) {
                worst = right;
            }
            if worst == i {
                break;
            }
            self.heap.swap(i, worst);
            i = worst;
        }
    }

    /// The kept hits, best first.
    pub fn into_sorted(self) -> Vec<ShardHit> {
        let sort = self.sort;
        let mut hits = self.heap;
        hits.sort_by(|a, b| sort.compare(a, b));
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::{Missing, Order};

    fn hit(shard: u32, doc: u32, score: f32) -> ShardHit {
        ShardHit {
            shard_index: shard,
            segment_ord: 0,
            segment_rank: 0,
            doc,
            score,
            sort: vec![],
            collapse: None,
        }
    }

    #[test]
    fn topk_keeps_the_best_by_score_with_doc_tiebreak() {
        let sort = HitSort::Score;
        let mut top = TopK::new(3, &sort);
        for (doc, score) in [(0, 1.0), (1, 3.0), (2, 2.0), (3, 3.0), (4, 0.5), (5, 2.0)] {
            top.push(hit(0, doc, score));
        }
        let docs: Vec<u32> = top.into_sorted().iter().map(|h| h.doc).collect();
        assert_eq!(docs, [1, 3, 2]);
    }

    #[test]
    fn reduce_is_independent_of_grouping() {
        let sort = HitSort::new(vec![SortField::Field {
            field: "n".into(),
            order: Order::Desc,
            missing: Missing::Last,
            mode: None,
            unmapped_type: None,
            format: None,
            nested: None,
        }]);
        for collapsed in [false, true] {
            let hits: Vec<ShardHit> = (0..20u32)
                .map(|i| ShardHit {
                    shard_index: i % 3,
                    segment_ord: i % 2,
                    segment_rank: i % 2,
                    doc: i,
                    score: 1.0,
                    sort: vec![if i % 5 == 0 {
                        SortValue::Missing
                    } else {
                        SortValue::I64((i * 7 % 11) as i64)
                    }],
                    collapse: collapsed.then_some(CollapseKey::I64((i % 4) as i64)),
                })
                .collect();
            let as_result = |hs: &[ShardHit]| QueryResult {
                hits: hs.to_vec(),
                total: hs.len() as u64,
                ..Default::default()
            };
            let whole = reduce(vec![as_result(&hits)], &sort, 5);
            for split in 1..hits.len() {
                let parts = vec![as_result(&hits[..split]), as_result(&hits[split..])];
                let grouped = reduce(parts, &sort, 5);
                assert_eq!(grouped, whole, "split at {split}");
            }
            assert_eq!(whole.total, 20);
            assert!(whole.hits.iter().all(|h| h.sort[0] != SortValue::Missing));
            // collapsed, the four groups each show once
            assert_eq!(whole.hits.len(), if collapsed { 4 } else { 5 });
        }
    }

    #[test]
    fn reduce_combines_flags_and_max_score() {
        let a = QueryResult {
            max_score: Some(1.0),
            total: 3,
            ..Default::default()
        };
        let b = QueryResult {
            max_score: Some(2.5),
            total: 4,
            total_is_lower_bound: true,
            timed_out: true,
            ..Default::default()
        };
        let r = reduce(vec![a, b, QueryResult::default()], &HitSort::Score, 10);
        assert_eq!(r.max_score, Some(2.5));
        assert_eq!(r.total, 7);
        assert!(r.total_is_lower_bound && r.timed_out && !r.terminated_early);
    }
}
