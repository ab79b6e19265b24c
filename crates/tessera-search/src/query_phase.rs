//! The query phase of one shard request, shaped as "weight once → plan slices → collect each
//! slice → reduce": [`QueryPhase`] owns everything a slice needs (the snapshot, the shared
//! weight, the collection parameters, the prepared aggregations), so slices can run on any
//! thread; [`QueryPhase::execute`] runs them (one on the calling thread, the rest on the
//! `index_searcher` pool) and reduces them with the same functions the coordinator uses.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use tantivy::query::Weight;
use tessera_aggs::{InternalAggregations, PreparedAggs};
use tessera_common::breaker::RequestBreaker;
use tessera_common::Result;
use tessera_index::ShardSnapshot;
use tessera_query::compile::ColumnFilter;

use crate::collect::{collect_slice, CollectParams};
use crate::collect_plan::{estimate_part, AggShortcuts};
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
    /// The shard's index name.
    pub index: String,
    pub aggs: Option<Arc<PreparedAggs>>,
    pub cancelled: Arc<AtomicBool>,
    /// The request's circuit breaker: the slice's aggregation buckets are charged to it.
    pub breaker: Option<Arc<RequestBreaker>>,
    /// The query as a column filter, when only aggregations are collected (see `collect`).
    pub column_filter: Option<ColumnFilter>,
    /// The query matches every live document.
    pub matches_all: bool,
    /// `collapse`, resolved in this shard's mapping.
    pub collapse: Option<crate::collapse::CollapseField>,
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
            index: &self.index,
            post_filter: self.post_filter.as_deref(),
            column_filter: self.column_filter.as_ref(),
            matches_all: self.matches_all,
            collapse: self.collapse.as_ref(),
        }
    }

    /// The work estimate `auto` decides with: nothing when every segment's collection path
    /// (the plan the collector follows, see [`crate::collect_plan::estimate_part`]) is cheap;
    /// else tantivy's cost of driving the query over the segments that are not (about the
    /// documents visited).
    pub fn work(&self) -> Work {
        let params = self.params();
        let shortcuts = self.aggs.as_deref().map(AggShortcuts::of);
        let mut docs = 0u64;
        let mut cheap = true;
        for reader in self.snapshot.searcher.segment_readers() {
            if estimate_part(&params, shortcuts.as_ref(), reader).is_cheap() {
                continue;
            }
            cheap = false;
            docs += match self.weight.scorer(reader, 1.0) {
                Ok(scorer) => scorer.cost().min(reader.max_doc() as u64),
                Err(_) => reader.max_doc() as u64,
            };
        }
        if cheap {
            Work::Cheap
        } else {
            Work::Docs(docs)
        }
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
