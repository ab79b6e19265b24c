//! The query phase of one shard request, shaped as "weight once → plan slices → collect each
//! slice → reduce": [`QueryPhase`] owns everything a slice needs (the snapshot, the shared
//! weight, the collection parameters, the prepared aggregations), so slices can run on any
//! thread; [`QueryPhase::execute`] runs them (one on the calling thread, the rest on the
//! `index_searcher` pool) and reduces them with the same functions the coordinator uses.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use tantivy::columnar::{Cardinality, ColumnIndex};
use tantivy::query::Weight;
use tessera_aggs::{InternalAggregations, PreparedAggs};
use tessera_common::breaker::RequestBreaker;
use tessera_common::Result;
use tessera_index::ShardSnapshot;
use tessera_query::compile::ColumnFilter;

use crate::collect::{collect_slice, CollectParams};
use crate::concurrent::{cancelled_error, SliceExecutor, Work};
use crate::hits::{reduce, HitSort, QueryResult, ShardHit};
use crate::slice::Slice;

/// Everything a slice needs, owned so slices can run on pool threads.
pub struct QueryPhase {
    pub snapshot: Arc<ShardSnapshot>,
    pub weight: Arc<dyn Weight>,
    pub post_filter: Option<Arc<dyn Weight>>,
    pub sort: HitSort,
    pub k: usize,
    pub total_hits_threshold: u64,
    pub terminate_after: Option<u64>,
    pub deadline: Option<Instant>,
    pub min_score: Option<f32>,
    pub search_after: Option<ShardHit>,
    pub constant_score: bool,
    pub scoring: bool,
    pub shard_index: u32,
    pub aggs: Option<Arc<PreparedAggs>>,
    pub cancelled: Arc<AtomicBool>,
    /// The request's circuit breaker: the slice's aggregation buckets are charged to it.
    pub breaker: Option<Arc<RequestBreaker>>,
    /// The query as a column filter, when only aggregations are collected (see `collect`).
    pub column_filter: Option<ColumnFilter>,
    /// The query matches every live document.
    pub matches_all: bool,
}

/// What one slice produced, and how long it took.
pub struct SliceOutcome {
    pub hits: QueryResult,
    pub aggs: Option<InternalAggregations>,
    pub nanos: u64,
}

/// The reduced result of all slices, with the timings `profile` reports.
pub struct PhaseOutcome {
    pub hits: QueryResult,
    /// The slices' aggregation results, not yet reduced (the shard's `PreparedAggs` does it).
    pub slice_aggs: Vec<InternalAggregations>,
    pub slice_nanos: Vec<u64>,
    pub reduce_nanos: u64,
}

impl QueryPhase {
    fn params(&self) -> CollectParams<'_> {
        CollectParams {
            sort: &self.sort,
            k: self.k,
            total_hits_threshold: self.total_hits_threshold,
            terminate_after: self.terminate_after,
            deadline: self.deadline,
            cancelled: Some(&self.cancelled),
            breaker: self.breaker.as_deref(),
            min_score: self.min_score,
            search_after: self.search_after.as_ref(),
            constant_score: self.constant_score,
            scoring: self.scoring,
            shard_index: self.shard_index,
            post_filter: self.post_filter.as_deref(),
            column_filter: self.column_filter.as_ref(),
            matches_all: self.matches_all,
        }
    }

    /// Whether collection stops early or counts in bulk (see `collect`): then slicing never
    /// pays, however many documents match.
    fn is_cheap(&self) -> bool {
        let plain = self.min_score.is_none() && !self.scoring && self.post_filter.is_none();
        if let Some(aggs) = &self.aggs {
            // aggregations counted from sorted columns or a terms dictionary visit no documents
            return match (&self.column_filter, aggs.sorted_fields()) {
                (Some(ColumnFilter::All), Some(_)) => true,
                (Some(ColumnFilter::Range { field, .. }), Some(fields)) => {
                    fields.iter().all(|f| f == field)
                }
                (Some(ColumnFilter::All), None) => aggs
                    .dictionary_field()
                    .is_some_and(|field| self.every_segment_counts_from_dictionary(&field)),
                _ => false,
            };
        }
        // a match-all sorted by a numeric column takes its top from the sorted copies
        if self.sorts_from_candidates() {
            return true;
        }
        let counts_in_bulk = self.k == 0 && plain;
        let first_hits = self.constant_score
            && self.sort.is_score()
            && self.min_score.is_none()
            && self.search_after.is_none()
            && self.terminate_after.is_none()
            && self.post_filter.is_none();
        counts_in_bulk || first_hits
    }

    /// Whether every segment is single-valued in `field` and has no deletions, so that
    /// `collect` counts it from the terms dictionary.
    fn every_segment_counts_from_dictionary(&self, field: &str) -> bool {
        self.snapshot
            .searcher
            .segment_readers()
            .iter()
            .all(|reader| {
                reader.num_deleted_docs() == 0
                    && match reader.fast_fields().str(field) {
                        Ok(Some(column)) => {
                            column.ords().get_cardinality() != Cardinality::Multivalued
                        }
                        Ok(None) => true,
                        Err(_) => false,
                    }
            })
    }

    /// Whether the hits are a `match_all` sorted by a numeric column that every document of
    /// every segment has, whose top `collect` takes from the segments' sorted copies.
    fn sorts_from_candidates(&self) -> bool {
        let params = self.params();
        let Some(field) = params.candidate_sort_field() else {
            return false;
        };
        self.snapshot
            .searcher
            .segment_readers()
            .iter()
            .all(|reader| {
                let fast = reader.fast_fields();
                let full = |index: &ColumnIndex| matches!(index, ColumnIndex::Full);
                match (fast.column_opt::<i64>(field), fast.column_opt::<f64>(field)) {
                    (Ok(Some(column)), _) => full(&column.index),
                    (_, Ok(Some(column))) => full(&column.index),
                    _ => false,
                }
            })
    }

    /// The work estimate `auto` decides with: tantivy's cost of driving the query over each
    /// segment (about the documents visited).
    pub fn work(&self) -> Work {
        if self.is_cheap() {
            return Work::Cheap;
        }
        let mut docs = 0u64;
        for reader in self.snapshot.searcher.segment_readers() {
            docs += match self.weight.scorer(reader, 1.0) {
                Ok(scorer) => scorer.cost().min(reader.max_doc() as u64),
                Err(_) => reader.max_doc() as u64,
            };
        }
        Work::Docs(docs)
    }

    /// Collects one slice, unless the request was cancelled or timed out before it started.
    pub fn run_slice(&self, slice: &Slice) -> Result<SliceOutcome> {
        let started = Instant::now();
        let mut aggregator = self
            .aggs
            .as_ref()
            .map(|a| a.slice_aggregator())
            .transpose()?;
        if self.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(cancelled_error());
        }
        // the aggregators charge their buckets to the request's breaker through this thread
        let _breaker = tessera_common::breaker::enter(self.breaker.clone());
        let hits = if self.deadline.is_some_and(|d| Instant::now() >= d) {
            QueryResult {
                timed_out: true,
                ..QueryResult::default()
            }
        } else {
            collect_slice(
                &self.snapshot,
                self.weight.as_ref(),
                slice,
                &self.params(),
                aggregator.as_mut(),
            )?
        };
        // a trip after the slice's last check (a short slice) fails it all the same
        if let Some(error) = self.breaker.as_deref().and_then(RequestBreaker::tripped) {
            return Err(error.clone());
        }
        let aggs = aggregator.map(|a| a.build()).transpose()?;
        Ok(SliceOutcome {
            hits,
            aggs,
            nanos: started.elapsed().as_nanos() as u64,
        })
    }

    /// Runs the slices (sequentially on this thread when there is one) and reduces their hits.
    pub fn execute(
        self: &Arc<Self>,
        slices: Vec<Slice>,
        executor: &SliceExecutor,
    ) -> Result<PhaseOutcome> {
        let outcomes = if slices.len() == 1 {
            vec![self.run_slice(&slices[0])?]
        } else {
            let tasks: Vec<_> = slices
                .into_iter()
                .map(|slice| {
                    let phase = self.clone();
                    move || phase.run_slice(&slice)
                })
                .collect();
            executor.run(tasks, &self.cancelled)?
        };
        let started = Instant::now();
        let mut hits = Vec::with_capacity(outcomes.len());
        let mut slice_aggs = Vec::new();
        let mut slice_nanos = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            hits.push(outcome.hits);
            slice_aggs.extend(outcome.aggs);
            slice_nanos.push(outcome.nanos);
        }
        let hits = reduce(hits, &self.sort, self.k);
        Ok(PhaseOutcome {
            hits,
            slice_aggs,
            slice_nanos,
            reduce_nanos: started.elapsed().as_nanos() as u64,
        })
    }
}
