//! The shard search service: what the coordinator asks of a shard (can_match, query, fetch),
//! as a trait, so that local shards (now) and remote shards (later) look the same.
//!
//! The query phase of a local shard is: compile the query against the shard's fields, build
//! the weight once, plan slices, collect each slice, reduce — the shape concurrent segment
//! search runs in parallel.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use tantivy::query::{BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, Weight};
use tantivy::{DocSet, Searcher, TERMINATED};
use tessera_aggs::{needs_scores, AggContext, InternalAggregations, PreparedAggs};
use tessera_index::index_service::IndexMetadata;

use crate::concurrent::{ConcurrencySettings, ConcurrentMode, SliceExecutor};
use crate::query_phase::{PhaseOutcome, QueryPhase};
use tessera_common::{Error, Result};
use tessera_index::shard::SEARCH_IDLE_AFTER_MILLIS;
use tessera_index::{IndexService, ShardSnapshot};
use tessera_query::compile::ColumnFilter;
use tessera_query::{compile, CompileContext};

use crate::fetch::{fetch_docs, FetchSpec, FetchedDoc};
use crate::hits::{HitSort, QueryResult, ShardHit};
use crate::request::SearchRequest;
use crate::slice::plan_slices;
use crate::sort_keys::{sort_value_for, validate_sort};

/// One shard's part of a search.
#[derive(Clone)]
pub struct ShardRequest {
    pub search: Arc<SearchRequest>,
    /// Position of this shard in the request (hit tie-breaker).
    pub shard_index: u32,
    /// "now" for date math, the same on every shard.
    pub now_millis: i64,
    /// When the whole request must end.
    pub deadline: Option<Instant>,
    /// How many shards the request searches (terms aggregations size their shard lists by it).
    pub total_shards: u32,
    /// Set when the request was abandoned (the client went away): slices not yet started
    /// are skipped, running ones stop at their next deadline check.
    pub cancelled: Arc<AtomicBool>,
}

/// The point-in-time reader a query ran on, for the fetch phase.
#[derive(Clone)]
pub enum ReaderContext {
    /// The snapshot the query ran on, and its weight when hits must be explained.
    Local {
        snapshot: Arc<ShardSnapshot>,
        weight: Option<Arc<dyn tantivy::query::Weight>>,
    },
}

pub struct ShardQueryResult {
    pub result: QueryResult,
    /// The shard's aggregation results (slices reduced and trimmed), when requested.
    pub aggregations: Option<InternalAggregations>,
    pub context: ReaderContext,
    /// Which sort fields render missing values as numbers.
    pub numeric_sorts: Vec<bool>,
    /// Timings for `"profile": true`.
    pub profile: Option<ShardProfile>,
}

/// What `"profile": true` reports for one shard's query phase.
#[derive(Clone, Debug)]
pub struct ShardProfile {
    pub query_type: String,
    pub description: String,
    /// The whole query phase.
    pub query_nanos: u64,
    pub create_weight_nanos: u64,
    /// Each slice's collection time.
    pub slice_nanos: Vec<u64>,
    /// Reducing the slices (hits and aggregations).
    pub reduce_nanos: u64,
    /// Top-level aggregations: (name, type).
    pub aggregations: Vec<(String, String)>,
}

/// What the coordinator can ask of a shard.
pub trait ShardSearcher: Send + Sync {
    fn index_name(&self) -> String;
    fn index_uuid(&self) -> String;
    fn shard_id(&self) -> u32;
    /// The node holding this copy (for failure reports).
    fn node_id(&self) -> String;
    /// False when the shard certainly has no match (so the query phase can skip it).
    fn can_match(&self, request: &ShardRequest) -> Result<bool>;
    fn query(&self, request: &ShardRequest) -> Result<ShardQueryResult>;
    fn fetch(
        &self,
        context: &ReaderContext,
        docs: &[(u32, u32)],
        spec: &FetchSpec,
    ) -> Result<Vec<FetchedDoc>>;
}

/// A shard of an index on this node.
pub struct LocalShard {
    index: Arc<IndexService>,
    shard_id: u32,
    node_id: String,
    executor: Arc<SliceExecutor>,
}

impl LocalShard {
    pub fn new(
        index: Arc<IndexService>,
        shard_id: u32,
        node_id: &str,
        executor: Arc<SliceExecutor>,
    ) -> LocalShard {
        LocalShard {
            index,
            shard_id,
            node_id: node_id.to_string(),
            executor,
        }
    }

    /// How many slices this request gets: the index's concurrent search settings over the
    /// cluster's, and for `auto` the work and the node's load (see [`crate::concurrent`]).
    fn slice_count(
        &self,
        phase: &QueryPhase,
        meta: &IndexMetadata,
        search: &SearchRequest,
    ) -> usize {
        let settings = &meta.settings;
        let index_level = ConcurrencySettings::from_values(
            settings.get_str("index.search.concurrent_segment_search.mode"),
            settings
                .get_str("index.search.concurrent_segment_search.enabled")
                .map(|v| v == "true"),
            settings
                .get_str("index.search.concurrent.max_slice_count")
                .and_then(|v| v.parse().ok()),
        );
        match ConcurrencySettings::resolve(index_level, search.concurrency) {
            (ConcurrentMode::None, _) => 1,
            // 0 = Lucene's heuristic, in `plan_slices`
            (ConcurrentMode::All, cap) => cap,
            (ConcurrentMode::Auto, cap) => self.executor.auto_slices(phase.work(), cap),
        }
    }

    /// The shard's current reader, refreshed first if the shard was search-idle with writes
    /// waiting (the scheduler skips refreshes of shards nobody searches, as OpenSearch does).
    fn snapshot(&self) -> Result<Arc<ShardSnapshot>> {
        let meta = self.index.metadata();
        let shard = self.index.shard(self.shard_id)?;
        shard.table_for(&meta.mapping, meta.mapping_version)?;
        let previous = shard.mark_searched();
        let idle = (tessera_common::time::now_millis() as u64).saturating_sub(previous)
            >= SEARCH_IDLE_AFTER_MILLIS;
        let scheduled = meta.refresh_interval_millis().is_some()
            && !meta.settings.contains("index.refresh_interval");
        if idle && scheduled && shard.has_pending_refresh() {
            shard.refresh()?;
        }
        Ok(shard.snapshot())
    }
}

/// The score of the first live match of a constant-score query (every match scores the same),
/// for aggregations that show scores (top_hits).
fn first_score(query: &dyn Query, searcher: &Searcher) -> Result<Option<f32>> {
    let weight = query
        .weight(EnableScoring::enabled_from_searcher(searcher))
        .map_err(|e| Error::internal("create a scoring weight", e))?;
    for reader in searcher.segment_readers() {
        let mut scorer = weight
            .scorer(reader, 1.0)
            .map_err(|e| Error::internal("create a scorer", e))?;
        let alive = reader.alive_bitset();
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                return Ok(Some(scorer.score()));
            }
            doc = scorer.advance();
        }
    }
    Ok(None)
}

/// Plans slices over the snapshot's segments taken in index order, so that each slice walks its
/// parts oldest first.
pub fn plan_shard_slices(
    snapshot: &ShardSnapshot,
    max_slice_count: usize,
) -> Vec<crate::slice::Slice> {
    let readers = snapshot.searcher.segment_readers();
    let order = &snapshot.segments_in_order;
    let max_docs: Vec<u32> = order
        .iter()
        .map(|&ord| readers[ord as usize].max_doc())
        .collect();
    let mut slices = plan_slices(&max_docs, max_slice_count);
    for slice in &mut slices {
        for part in &mut slice.parts {
            part.segment_ord = order[part.segment_ord as usize];
        }
    }
    slices
}

/// Converts `search_after` values into a key to compare hits with.
fn search_after_key(
    snapshot: &ShardSnapshot,
    sort: &HitSort,
    request: &SearchRequest,
) -> Result<Option<ShardHit>> {
    let Some(values) = &request.search_after else {
        return Ok(None);
    };
    let mut key = ShardHit {
        shard_index: u32::MAX,
        segment_ord: u32::MAX,
        segment_rank: u32::MAX,
        doc: u32::MAX,
        score: f32::NAN,
        sort: Vec::new(),
    };
    match sort {
        HitSort::Score => {
            let score = values.first().and_then(|v| v.as_f64()).ok_or_else(|| {
                Error::illegal_argument("search_after value must be a number for _score")
            })?;
            key.score = score as f32;
        }
        HitSort::Fields { fields, .. } => {
            for (field, value) in fields.iter().zip(values) {
                key.sort
                    .push(sort_value_for(&snapshot.table, field, value)?);
            }
        }
    }
    Ok(Some(key))
}

/// The number of slices a query phase ran (0 when it failed).
fn phase_slices(outcome: &Result<PhaseOutcome>) -> u64 {
    outcome.as_ref().map_or(0, |o| o.slice_nanos.len() as u64)
}

impl ShardSearcher for LocalShard {
    fn index_name(&self) -> String {
        self.index.metadata().name.clone()
    }

    fn index_uuid(&self) -> String {
        self.index.metadata().uuid.clone()
    }

    fn shard_id(&self) -> u32 {
        self.shard_id
    }

    fn node_id(&self) -> String {
        self.node_id.clone()
    }

    fn can_match(&self, request: &ShardRequest) -> Result<bool> {
        let snapshot = self.snapshot()?;
        if snapshot.searcher.num_docs() == 0 {
            return Ok(false);
        }
        let meta = self.index.metadata();
        Ok(crate::can_match::can_match(
            &snapshot,
            &meta.name,
            &request.search.query,
            request.now_millis,
        ))
    }

    fn query(&self, request: &ShardRequest) -> Result<ShardQueryResult> {
        let started = Instant::now();
        let meta = self.index.metadata();
        let search = &request.search;
        search.check_window(meta.max_result_window())?;
        let snapshot = self.snapshot()?;
        let table = &snapshot.table;
        validate_sort(table, &meta.name, &search.sort)?;
        crate::fetch::validate_docvalue_fields(table, &search.docvalue_fields)?;
        let default_fields = meta.default_fields();
        let max_terms_count = meta
            .setting("index.max_terms_count")
            .parse()
            .unwrap_or(tessera_query::compile::DEFAULT_MAX_TERMS_COUNT);
        let ctx = CompileContext {
            table,
            index: &meta.name,
            default_fields: &default_fields,
            now_millis: request.now_millis,
            max_terms_count,
            clauses: Default::default(),
        };
        let mut query = compile(&search.query, &ctx)?;
        // with aggregations, the post_filter only limits hits: it gets a weight of its own
        let mut separate_post_filter = None;
        if let Some(post_filter) = &search.post_filter {
            ctx.clauses.reset();
            let filter: Box<dyn Query> =
                Box::new(ConstScoreQuery::new(compile(post_filter, &ctx)?, 0.0));
            if search.aggs.is_some() {
                separate_post_filter = Some(filter);
            } else {
                query = Box::new(BooleanQuery::new(vec![
                    (Occur::Must, query),
                    (Occur::Must, filter),
                ]));
            }
        }
        let sort = HitSort::new(search.sort.clone());
        let k = search.from + search.size;
        let scoring =
            (k > 0 && search.needs_scores()) || search.track_scores || search.min_score.is_some();
        let searcher = &snapshot.searcher;
        let enable = if scoring {
            EnableScoring::enabled_from_searcher(searcher)
        } else {
            EnableScoring::disabled_from_searcher(searcher)
        };
        let weight_started = Instant::now();
        let weight: Arc<dyn Weight> = Arc::from(
            query
                .weight(enable)
                .map_err(|e| Error::internal("create the query weight", e))?,
        );
        let create_weight_nanos = weight_started.elapsed().as_nanos() as u64;
        let post_filter = separate_post_filter
            .map(|q| q.weight(EnableScoring::disabled_from_searcher(searcher)))
            .transpose()
            .map_err(|e| Error::internal("create the post_filter weight", e))?
            .map(Arc::from);
        let search_after = search_after_key(&snapshot, &sort, search)?;
        let deadline = match (search.timeout, request.deadline) {
            (Some(timeout), Some(d)) => Some((started + timeout).min(d)),
            (Some(timeout), None) => Some(started + timeout),
            (None, d) => d,
        };
        let prepared = match &search.aggs {
            Some(aggs) => Some(Arc::new(PreparedAggs::prepare(
                aggs,
                &AggContext {
                    table,
                    index: &meta.name,
                    default_fields: &default_fields,
                    now_millis: request.now_millis,
                    max_terms_count,
                    searcher,
                    shard_index: request.shard_index,
                    max_inner_result_window: meta
                        .setting("index.max_inner_result_window")
                        .parse()
                        .unwrap_or(100),
                    constant_score: if needs_scores(aggs) && search.query.is_constant_score() {
                        first_score(query.as_ref(), searcher)?
                    } else {
                        None
                    },
                },
            )?)),
            None => None,
        };
        let matches_all = matches!(
            tessera_query::compile::column_filter(&search.query, &ctx),
            Ok(Some(ColumnFilter::All))
        );
        // only aggregations collected, from a query this simple: they may count from columns
        let column_filter = if prepared.is_some()
            && k == 0
            && !scoring
            && search.post_filter.is_none()
            && search.min_score.is_none()
            && search.terminate_after.is_none()
        {
            tessera_query::compile::column_filter(&search.query, &ctx)?
        } else {
            None
        };
        let phase = Arc::new(QueryPhase {
            snapshot: snapshot.clone(),
            weight: weight.clone(),
            post_filter,
            sort,
            k,
            total_hits_threshold: search.track_total_hits.threshold(),
            terminate_after: search.terminate_after,
            deadline,
            min_score: search.min_score,
            search_after,
            constant_score: search.query.is_constant_score() && search.post_filter.is_none(),
            scoring,
            shard_index: request.shard_index,
            aggs: prepared.clone(),
            cancelled: request.cancelled.clone(),
            breaker: search.breaker.clone(),
            column_filter,
            matches_all,
        });
        let slice_count = self.slice_count(&phase, &meta, search);
        let slices = plan_shard_slices(&snapshot, slice_count);
        let concurrent = slices.len() > 1;
        let shard = self.index.shard(self.shard_id)?;
        let stats = &shard.stats;
        if concurrent {
            stats.concurrent_started();
        }
        let outcome = phase.execute(slices, &self.executor);
        if concurrent {
            stats.record_concurrent_query(started.elapsed(), phase_slices(&outcome));
        }
        let outcome = outcome?;
        let reduce_started = Instant::now();
        let aggregations = prepared
            .map(|p| p.shard_result(outcome.slice_aggs, request.total_shards as usize))
            .transpose()?;
        let reduce_nanos = outcome.reduce_nanos + reduce_started.elapsed().as_nanos() as u64;
        let numeric_sorts = search
            .sort
            .iter()
            .map(|f| crate::sort_keys::is_numeric_sort(table, f))
            .collect();
        stats.record_query(started.elapsed());
        let profile = search.profile.then(|| ShardProfile {
            query_type: search.query.type_name().to_string(),
            description: format!("{:?}", search.query),
            query_nanos: started.elapsed().as_nanos() as u64,
            create_weight_nanos,
            slice_nanos: outcome.slice_nanos,
            reduce_nanos,
            aggregations: search
                .aggs
                .iter()
                .flatten()
                .map(|a| (a.name.clone(), a.kind.type_name().to_string()))
                .collect(),
        });
        Ok(ShardQueryResult {
            result: outcome.hits,
            aggregations,
            context: ReaderContext::Local {
                snapshot: snapshot.clone(),
                weight: search.explain.then_some(weight),
            },
            numeric_sorts,
            profile,
        })
    }

    fn fetch(
        &self,
        context: &ReaderContext,
        docs: &[(u32, u32)],
        spec: &FetchSpec,
    ) -> Result<Vec<FetchedDoc>> {
        let started = Instant::now();
        let ReaderContext::Local { snapshot, weight } = context;
        let highlight_terms = match (&spec.highlight, &spec.query) {
            (Some(_), Some(query)) => {
                let meta = self.index.metadata();
                let default_fields = meta.default_fields();
                let ctx = CompileContext {
                    table: &snapshot.table,
                    index: &meta.name,
                    default_fields: &default_fields,
                    now_millis: tessera_common::time::now_millis(),
                    max_terms_count: meta
                        .setting("index.max_terms_count")
                        .parse()
                        .unwrap_or(tessera_query::compile::DEFAULT_MAX_TERMS_COUNT),
                    clauses: Default::default(),
                };
                tessera_query::highlight_terms::highlight_terms(query, &ctx)?
            }
            _ => Vec::new(),
        };
        let fetched = fetch_docs(snapshot, docs, spec, weight.as_deref(), &highlight_terms)?;
        if let Ok(shard) = self.index.shard(self.shard_id) {
            shard.stats.record_fetch(started.elapsed());
        }
        Ok(fetched)
    }
}
