//! The shard search service: what the coordinator asks of a shard copy (can_match, query,
//! fetch, free a reader context), as a trait whose calls take and return the plain messages of
//! [`crate::messages`], so that a local shard and a remote one look the same.
//!
//! The query phase of a local shard is: compile the query against the shard's fields, build
//! the weight once, plan slices, collect each slice, reduce — the shape concurrent segment
//! search runs in parallel. Its calls run on the node's `search` pool; the reader a query ran
//! on waits for the fetch phase in the node's [`ReaderContexts`].

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use tantivy::query::{BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, Weight};
use tantivy::{DocSet, Searcher, TERMINATED};
use tessera_aggs::{needs_scores, AggContext, PreparedAggs};
use tessera_index::index_service::IndexMetadata;

use crate::collapse::CollapseField;
use crate::concurrent::{ConcurrencySettings, ConcurrentMode, SliceExecutor};
use crate::knn_slices::KnnSlices;
use crate::query_phase::{PhaseOutcome, QueryPhase};
use tessera_common::{Error, Result};
use tessera_index::shard::SEARCH_IDLE_AFTER_MILLIS;
use tessera_index::{IndexService, ShardSnapshot};
use tessera_query::ast::QueryAst;
use tessera_query::compile::{ColumnFilter, KnnContext};
use tessera_query::{compile, CompileContext};

use crate::fetch::{fetch_docs, FetchSpec, FetchedDoc};
use crate::hits::{HitSort, ShardHit};
use crate::messages::{
    DfsPhase, FetchedPage, QuerySearchResult, ReaderContextId, ReaderUse, ShardFetchRequest,
    ShardSearchRequest,
};
use crate::reader_context::{PinnedReader, ReaderContext, ReaderContexts};
use crate::request::SearchRequest;
use crate::rescore::{RescoredWeight, ShardRescorer};
use crate::scroll_slice::{shard_slice, IdSliceQuery, ShardSlice};
use crate::search_load::{SearchLoad, WorkMeter};
use crate::slice::plan_slices;
use crate::sort_keys::{sort_value_for, validate_sort};
use tessera_common::breaker::RequestBreaker;
use tessera_common::threadpool::ThreadPool;

/// A shard request as it runs here: the parsed search and the local handles the message
/// left out.
struct Prepared {
    search: Arc<SearchRequest>,
    shard_index: u32,
    now_millis: i64,
    deadline: Option<Instant>,
    total_shards: u32,
    fetch_page: Option<(u32, u32)>,
    cancelled: Arc<AtomicBool>,
    reader: Option<ReaderUse>,
    dfs: Option<DfsPhase>,
}

/// What `"profile": true` reports for one shard's query phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
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

/// The answer of a shard call: a future that owns everything it needs, so that a local shard
/// (a task on the `search` pool) and a remote one (a round trip) look the same.
pub type ShardFuture<T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'static>>;

/// What the coordinator can ask of a shard copy.
pub trait ShardSearcher: Send + Sync {
    fn index_name(&self) -> String;
    fn index_uuid(&self) -> String;
    fn shard_id(&self) -> u32;
    /// The node holding this copy (for failure reports).
    fn node_id(&self) -> String;
    /// False when the shard certainly has no match (so the query phase can skip it).
    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool>;
    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult>;
    /// Loads hits from the reader context a query left, and releases it.
    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>>;
    /// Releases a reader context nobody will fetch from (fire and forget).
    fn free_context(&self, id: ReaderContextId);
    /// Whether a small page is better fetched with the query from this copy: true for a copy
    /// behind a network, where the fetch phase's round trip costs more than loading the few
    /// hits of the shard's top that may not make the final page.
    fn fetch_with_query(&self) -> bool {
        false
    }
}

/// What a node lends the shards it holds to run their requests.
pub struct ShardServices {
    /// Runs the slices of a query phase on the `index_searcher` pool.
    pub executor: Arc<SliceExecutor>,
    /// The `search` pool, where shard requests run.
    pub pool: ThreadPool,
    /// Reader contexts between the query and the fetch phase.
    pub contexts: Arc<ReaderContexts>,
    /// The service-time EWMA reported with each query result (adaptive replica selection).
    pub load: Arc<SearchLoad>,
    /// A circuit breaker for a request that arrived as a message (one parsed on this node
    /// carries its own).
    pub breaker: Option<BreakerFactory>,
}

/// Makes the request circuit breaker of one search.
pub type BreakerFactory = Arc<dyn Fn() -> Arc<RequestBreaker> + Send + Sync>;

/// A shard of an index on this node.
#[derive(Clone)]
pub struct LocalShard {
    index: Arc<IndexService>,
    shard_id: u32,
    node_id: Arc<str>,
    services: Arc<ShardServices>,
}

impl LocalShard {
    pub fn new(
        index: Arc<IndexService>,
        shard_id: u32,
        node_id: &str,
        services: Arc<ShardServices>,
    ) -> LocalShard {
        LocalShard {
            index,
            shard_id,
            node_id: Arc::from(node_id),
            services,
        }
    }

    /// Runs `f` on the `search` pool; the task is queued now (a request is sent when it is
    /// made) and skipped if the answer is dropped before it starts. With `here` (a request
    /// the transport received: see `ShardSearchRequest::run_on_receiving_thread`) it runs on
    /// this thread instead, at once, in an idle pool thread's place when the pool has one: a
    /// shard request over the wire otherwise costs two more thread wake-ups than a local one
    /// (the transport's thread to the pool and back), half of a cheap remote search's
    /// overhead as measured.
    fn on_pool<R, F>(&self, here: bool, f: F) -> ShardFuture<R>
    where
        R: Send + 'static,
        F: FnOnce(&LocalShard) -> Result<R> + Send + 'static,
    {
        let this = self.clone();
        let mut task = move || f(&this);
        let pool = &self.services.pool;
        if here {
            match pool.run_here_if_idle(task) {
                Ok(result) => return Box::pin(std::future::ready(result)),
                Err(handed_back) => task = handed_back,
            }
        }
        let handle = pool.submit(task);
        Box::pin(async move { handle?.await })
    }

    /// Checks that the message is for this copy and takes its search, parsed here when it
    /// came over the wire.
    fn prepare(&self, request: ShardSearchRequest) -> Result<Prepared> {
        let uuid = self.index.metadata().uuid.clone();
        if request.index_uuid != uuid || request.shard_id != self.shard_id {
            return Err(Error::new(
                "shard_not_found_exception",
                404,
                format!(
                    "no such shard [{}][{}] (this copy is [{uuid}][{}])",
                    request.index_uuid, request.shard_id, self.shard_id
                ),
            ));
        }
        let mut search = match request.parsed {
            Some(parsed) => parsed,
            None => {
                let mut search = request.source.parse()?;
                search.breaker = self.services.breaker.as_ref().map(|make| make());
                Arc::new(search)
            }
        };
        let alias_filter = request
            .alias_filter
            .as_deref()
            .map(parse_alias_filter)
            .transpose()?;
        if alias_filter.is_some() || request.index_boost != 1.0 {
            search = Arc::new(with_query_wrapped(
                &search,
                alias_filter,
                request.index_boost,
            ));
        }
        Ok(Prepared {
            search,
            shard_index: request.shard_index,
            now_millis: request.now_millis,
            deadline: request.deadline,
            total_shards: request.total_shards,
            fetch_page: request.fetch_page,
            cancelled: request.cancelled.unwrap_or_default(),
            dfs: request.dfs,
            reader: request.reader,
        })
    }

    /// The reader a query runs on, and the pinned reader's id when it is one: the shard's
    /// current reader, that reader pinned now (a new scroll or PIT), or a reader pinned
    /// before (its keep-alive renewed). A pinned reader of another copy is as missing as one
    /// that expired.
    fn reader(&self, request: &Prepared) -> Result<(Arc<ShardSnapshot>, Option<ReaderContextId>)> {
        let contexts = &self.services.contexts;
        match &request.reader {
            None => Ok((self.snapshot()?, None)),
            Some(ReaderUse::Pin {
                kind,
                keep_alive_millis,
                max_open,
                pit,
            }) => {
                let snapshot = self.snapshot()?;
                let meta = self.index.metadata();
                let mut reader = PinnedReader::new(
                    &meta.name,
                    &meta.uuid,
                    self.shard_id,
                    snapshot.clone(),
                    *kind,
                );
                reader.pit = pit.clone().map(|group| (group, request.shard_index));
                reader.stats = Some(self.index.shard(self.shard_id)?.stats.clone());
                let keep_alive = Duration::from_millis(*keep_alive_millis);
                let id = contexts.pin(reader, keep_alive, *max_open)?;
                Ok((snapshot, Some(id)))
            }
            Some(ReaderUse::Pinned {
                id,
                keep_alive_millis,
                ..
            }) => {
                let reader = contexts.pinned(*id, keep_alive_millis.map(Duration::from_millis))?;
                if reader.index_uuid != self.index.metadata().uuid
                    || reader.shard_id != self.shard_id
                {
                    return Err(Error::search_context_missing(id.id));
                }
                Ok((reader.snapshot.clone(), Some(*id)))
            }
        }
    }

    /// How many slices this request gets: the index's concurrent search settings over the
    /// cluster's, and for `auto` the work and the node's load (see [`crate::concurrent`]). A
    /// sampler aggregation keeps the best documents of the whole shard: its requests run on one
    /// slice, as OpenSearch runs them without concurrent segment search.
    fn slice_count(
        &self,
        phase: &QueryPhase,
        meta: &IndexMetadata,
        search: &SearchRequest,
    ) -> usize {
        if search
            .aggs
            .as_deref()
            .is_some_and(tessera_aggs::needs_single_slice)
        {
            return 1;
        }
        match Self::concurrency(meta, search) {
            (ConcurrentMode::None, _) => 1,
            // 0 = Lucene's heuristic, in `plan_slices`
            (ConcurrentMode::All, cap) => cap,
            (ConcurrentMode::Auto, cap) => self.services.executor.auto_slices(phase.work(), cap),
        }
    }

    /// The request's concurrent search mode and `max_slice_count`: the index's settings over
    /// the cluster's.
    fn concurrency(meta: &IndexMetadata, search: &SearchRequest) -> (ConcurrentMode, usize) {
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
        ConcurrencySettings::resolve(index_level, search.concurrency)
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

/// A non-scoring weight for each name of `named`, in the order hits list the names they match
/// (a name given twice keeps its last query, as OpenSearch's map of names does).
fn named_weights(
    named: &[crate::named_queries::NamedQuery],
    snapshot: &ShardSnapshot,
    ctx: &CompileContext,
) -> Result<Vec<(String, Box<dyn Weight>)>> {
    let names: Vec<&str> = named.iter().map(|n| n.name.as_str()).collect();
    let mut out = Vec::new();
    for name in crate::named_queries::java_hash_map_order(&names) {
        let Some(last) = named.iter().rev().find(|n| n.name == name) else {
            continue;
        };
        ctx.clauses.reset();
        let weight = compile(&last.query, ctx)?
            .weight(EnableScoring::disabled_from_searcher(&snapshot.searcher))
            .map_err(|e| Error::internal("create a named query's weight", e))?;
        out.push((name, weight));
    }
    Ok(out)
}

/// Whether `query` (a query object of the DSL) matches a document of `snapshot`: the
/// phrase suggester's `collate` check.
fn query_matches(
    snapshot: &ShardSnapshot,
    meta: &IndexMetadata,
    now_millis: i64,
    query: &serde_json::Value,
) -> Result<bool> {
    let query = tessera_query::parse_query(query)?;
    let default_fields = meta.default_fields();
    // the collate check only counts: no score, no shard salt needed
    let ctx = shard_context(snapshot, meta, &default_fields, now_millis, 0);
    let mut query = compile(&query, &ctx)?;
    if let Some(markers) = snapshot.table.meta.nested {
        query = Box::new(tessera_query::nested::RootDocsQuery::new(query, markers));
    }
    let count = snapshot
        .searcher
        .search(&query, &tantivy::collector::Count)
        .map_err(|e| Error::internal("run the collate query", e))?;
    Ok(count > 0)
}

/// The compile context of a shard's snapshot: its fields, its index's settings (default
/// fields, `max_terms_count`, k-NN `ef_search`) and mapping; no deadline, no slices.
fn shard_context<'a>(
    snapshot: &'a ShardSnapshot,
    meta: &'a IndexMetadata,
    default_fields: &'a [String],
    now_millis: i64,
    shard_id: u32,
) -> CompileContext<'a> {
    CompileContext {
        searcher: Some(&snapshot.searcher),
        table: &snapshot.table,
        index: &meta.name,
        default_fields,
        now_millis,
        max_terms_count: meta
            .setting("index.max_terms_count")
            .parse()
            .unwrap_or(tessera_query::compile::DEFAULT_MAX_TERMS_COUNT),
        clauses: Default::default(),
        knn: KnnContext {
            ef_search: knn_ef_search(meta),
            slices: None,
            vectors: Some(&snapshot.knn_vectors),
        },
        nested_scope: Default::default(),
        deadline: None,
        failures: None,
        mapping: Some(&meta.mapping),
        legacy_bm25: true,
        shard_id,
    }
}

/// `index.knn.algo_param.ef_search` (validated when set).
fn knn_ef_search(meta: &IndexMetadata) -> usize {
    meta.setting("index.knn.algo_param.ef_search")
        .parse()
        .unwrap_or(tessera_query::compile::DEFAULT_EF_SEARCH)
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

/// `query` limited to what one slice of a sliced scroll or PIT reads on this shard (the
/// slice adds nothing to scores).
fn slice_query(
    query: Box<dyn Query>,
    slice: ShardSlice,
    table: &tessera_mapping::FieldTable,
) -> Box<dyn Query> {
    match slice {
        ShardSlice::All => query,
        ShardSlice::Nothing => Box::new(tantivy::query::EmptyQuery),
        ShardSlice::Ids { part, parts } => {
            let slice = IdSliceQuery {
                id_field: table.meta.id,
                part,
                parts,
            };
            Box::new(BooleanQuery::new(vec![
                (Occur::Must, query),
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(Box::new(slice), 0.0)),
                ),
            ]))
        }
    }
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
        collapse: None,
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

/// An alias filter as the shard request carries it (JSON).
fn parse_alias_filter(filter: &str) -> Result<QueryAst> {
    let filter: serde_json::Value =
        serde_json::from_str(filter).map_err(|e| Error::internal("read an alias filter", e))?;
    tessera_query::dsl::parse_query(&filter)
}

/// `search` with its query limited to what an alias filter matches (the filter scores
/// nothing, so scores stay those of the query) and its scores multiplied by `boost`
/// (`indices_boost`), as OpenSearch wraps the query of a shard reached through a filtered
/// alias or a boosted index.
fn with_query_wrapped(
    search: &SearchRequest,
    alias_filter: Option<QueryAst>,
    boost: f32,
) -> SearchRequest {
    let mut wrapped = search.clone();
    wrapped.query = QueryAst::Bool(tessera_query::ast::BoolQuery {
        must: vec![search.query.clone()],
        should: Vec::new(),
        filter: alias_filter.into_iter().collect(),
        must_not: Vec::new(),
        minimum_should_match: None,
        boost,
    });
    wrapped
}

/// The number of slices a query phase ran (0 when it failed).
fn phase_slices(outcome: &Result<PhaseOutcome>) -> u64 {
    outcome.as_ref().map_or(0, |o| o.slice_nanos.len() as u64)
}

/// The phases as they run on this node's `search` pool.
impl LocalShard {
    fn can_match_here(&self, request: &Prepared) -> Result<bool> {
        // every shard's terms count in suggestions (an empty shard answers their entries)
        if request.search.suggest.is_some() {
            return Ok(true);
        }
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

    fn query_here(&self, request: &Prepared) -> Result<QuerySearchResult> {
        let meta = self.index.metadata();
        request.search.check_window(meta.max_result_window())?;
        let (snapshot, pinned) = self.reader(request)?;
        let outcome = self.query_on(request, &snapshot);
        // a scroll or PIT that could not run its first query keeps no reader
        if let (Err(_), Some(ReaderUse::Pin { .. }), Some(id)) = (&outcome, &request.reader, pinned)
        {
            self.services.contexts.free(id);
        }
        let mut result = outcome?;
        result.pinned = pinned;
        Ok(result)
    }

    /// The query phase on `snapshot`.
    fn query_on(
        &self,
        request: &Prepared,
        snapshot: &Arc<ShardSnapshot>,
    ) -> Result<QuerySearchResult> {
        let started = Instant::now();
        let meta = self.index.metadata();
        let search = &request.search;
        let table = &snapshot.table;
        let suggest = search
            .suggest
            .as_ref()
            .map(|suggest| {
                suggest.run_on_shard(&crate::suggest::ShardInputs {
                    searcher: &snapshot.searcher,
                    table,
                    index: &meta.name,
                    source: &search.source,
                    exists: Some(&|query: &serde_json::Value| {
                        query_matches(snapshot, &meta, request.now_millis, query)
                    }),
                })
            })
            .transpose()?;
        if search.suggest_only() {
            return Ok(QuerySearchResult {
                suggest,
                ..QuerySearchResult::default()
            });
        }
        validate_sort(table, &meta.name, &search.sort)?;
        crate::nested_inner_hits::collect(&search.query)?;
        crate::fetch::validate_docvalue_fields(table, &search.docvalue_fields)?;
        crate::source_fields::validate_fields(table, &search.fields)?;
        let default_fields = meta.default_fields();
        let (mode, cap) = Self::concurrency(&meta, search);
        let knn_slices = KnnSlices {
            executor: self.services.executor.clone(),
            mode,
            cap,
            cancelled: request.cancelled.clone(),
        };
        let base = shard_context(
            snapshot,
            &meta,
            &default_fields,
            request.now_millis,
            self.shard_id,
        );
        let ctx = CompileContext {
            knn: KnnContext {
                slices: Some(&knn_slices),
                ..base.knn
            },
            deadline: request.deadline,
            failures: Some(Default::default()),
            ..base
        };
        let mut query = compile(&search.query, &ctx)?;
        // what this shard reads of one slice of a sliced scroll or PIT
        let slice = search
            .slice
            .map(|spec| shard_slice(spec, request.shard_index, request.total_shards))
            .unwrap_or(ShardSlice::All);
        query = slice_query(query, slice, table);
        // an index with nested fields: only root documents are hits, counted, aggregated
        if let Some(markers) = table.meta.nested {
            query = Box::new(tessera_query::nested::RootDocsQuery::new(query, markers));
        }
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
        let max_rescore_window = meta
            .setting("index.max_rescore_window")
            .parse()
            .unwrap_or(10_000);
        crate::rescore::check(&search.rescore, &sort, max_rescore_window)?;
        crate::collapse::check_request(
            search.collapse.as_ref(),
            !search.rescore.is_empty(),
            search.search_after.is_some(),
        )?;
        let collapse = search
            .collapse
            .as_ref()
            .map(|spec| CollapseField::resolve(table, spec))
            .transpose()?;
        let k = crate::rescore::hits_to_collect(&search.rescore, search.from + search.size);
        // top_hits under a scored query ranks each bucket's hits by score
        let aggs_score =
            search.aggs.as_deref().is_some_and(needs_scores) && !search.query.is_constant_score();
        let scoring = (k > 0 && search.needs_scores())
            || search.track_scores
            || search.min_score.is_some()
            || aggs_score;
        let searcher = &snapshot.searcher;
        // dfs_query_then_fetch: the first round only reads the statistics the scoring needs
        if let Some(DfsPhase::Collect) = &request.dfs {
            let recorder = tessera_query::dfs::Recorder::new(searcher);
            if scoring {
                query
                    .weight(EnableScoring::enabled_from_statistics_provider(
                        &recorder, searcher,
                    ))
                    .map_err(|e| Error::internal("create the query weight", e))?;
            }
            // as OpenSearch's DFS phase, the rescore queries' statistics too
            self.rescorers(search, &ctx, searcher, Some(&recorder))?;
            let stats = recorder
                .into_stats()
                .map_err(|e| Error::internal("read the term statistics", e))?;
            return Ok(QuerySearchResult {
                dfs: Some(stats),
                ..QuerySearchResult::default()
            });
        }
        let global = match &request.dfs {
            Some(DfsPhase::Apply(stats)) => Some(tessera_query::dfs::Global::new(stats, searcher)),
            _ => None,
        };
        let enable = match (&global, scoring) {
            (Some(global), true) => {
                EnableScoring::enabled_from_statistics_provider(global, searcher)
            }
            (None, true) => EnableScoring::enabled_from_searcher(searcher),
            (_, false) => EnableScoring::disabled_from_searcher(searcher),
        };
        let weight_started = Instant::now();
        let weight: Arc<dyn Weight> = Arc::from(
            query
                .weight(enable)
                .map_err(|e| Error::internal("create the query weight", e))?,
        );
        let create_weight_nanos = weight_started.elapsed().as_nanos() as u64;
        let rescorers = self.rescorers(
            search,
            &ctx,
            searcher,
            global
                .as_ref()
                .map(|g| g as &dyn tantivy::query::Bm25StatisticsProvider),
        )?;
        let post_filter = separate_post_filter
            .map(|q| q.weight(EnableScoring::disabled_from_searcher(searcher)))
            .transpose()
            .map_err(|e| Error::internal("create the post_filter weight", e))?
            .map(Arc::from);
        let search_after = match &request.reader {
            Some(ReaderUse::Pinned {
                after: Some(position),
                ..
            }) => Some(position.clone()),
            _ => search_after_key(snapshot, &sort, search)?,
        };
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
                    max_terms_count: ctx.max_terms_count,
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
                    script_failures: Default::default(),
                },
            )?)),
            None => None,
        };
        // whether aggregations may then count without visiting documents is the collection
        // plan's decision (`collect_plan`), per segment part
        // a slice of a sliced scroll is a query of its own: the query's column shortcuts
        // (which count every match of the query) do not apply
        // nor do they when child documents must be told from root ones (nested fields)
        let filter = match slice != ShardSlice::All || table.meta.nested.is_some() {
            true => Ok(None),
            false => tessera_query::compile::column_filter(&search.query, &ctx),
        };
        // without aggregations a post_filter is part of the compiled query: the query alone
        // no longer matches every document
        let matches_all =
            matches!(filter, Ok(Some(ColumnFilter::All))) && search.post_filter.is_none();
        let column_filter = match &prepared {
            Some(_) => filter?,
            None => None,
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
            index: meta.name.clone(),
            aggs: prepared.clone(),
            cancelled: request.cancelled.clone(),
            breaker: search.breaker.clone(),
            column_filter,
            matches_all,
            collapse,
        });
        let slice_count = self.slice_count(&phase, &meta, search);
        let slices = plan_shard_slices(snapshot, slice_count);
        let concurrent = slices.len() > 1;
        let shard = self.index.shard(self.shard_id)?;
        let stats = &shard.stats;
        if concurrent {
            stats.concurrent_started();
        }
        let outcome = phase.execute(slices, &self.services.executor);
        if concurrent {
            stats.record_concurrent_query(started.elapsed(), phase_slices(&outcome));
        }
        let mut outcome = outcome?;
        if let Some(rescorers) = &rescorers {
            let hits = &mut outcome.hits;
            crate::rescore::rescore(&mut hits.hits, searcher, rescorers, &phase.sort)?;
            hits.max_score = hits.hits.first().map(|hit| hit.score).or(hits.max_score);
        }
        // a query that failed on a document while collecting (a `script` query) fails the shard
        if let Some(failure) = ctx.failures.as_ref().and_then(|f| f.take()) {
            return Err(failure);
        }
        let reduce_started = Instant::now();
        let aggregations = prepared
            .map(|p| p.shard_result(outcome.slice_aggs, request.total_shards as usize))
            .transpose()?;
        let reduce_nanos = outcome.reduce_nanos + reduce_started.elapsed().as_nanos() as u64;
        let sort_formats = search
            .sort
            .iter()
            .map(|f| crate::sort_keys::sort_format(table, f))
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
        let weight = search.explain.then(|| match rescorers {
            Some(rescorers) => Arc::new(RescoredWeight {
                first: weight,
                rescorers,
            }) as Arc<dyn Weight>,
            None => weight,
        });
        let (context_id, fetched) =
            self.keep_for_fetch(request, &outcome.hits.hits, snapshot, weight)?;
        Ok(QuerySearchResult {
            result: outcome.hits,
            aggregations,
            sort_formats,
            profile,
            context_id,
            fetched,
            load: None,
            pinned: None,
            suggest,
            dfs: None,
        })
    }

    /// The request's rescorers with their queries' weights on this shard (none without
    /// `rescore`).
    /// `statistics`: the term statistics to score with (`dfs_query_then_fetch`'s), else the
    /// shard's own.
    fn rescorers(
        &self,
        search: &SearchRequest,
        ctx: &CompileContext,
        searcher: &Searcher,
        statistics: Option<&dyn tantivy::query::Bm25StatisticsProvider>,
    ) -> Result<Option<Arc<Vec<ShardRescorer>>>> {
        if search.rescore.is_empty() {
            return Ok(None);
        }
        let rescorers = search
            .rescore
            .iter()
            .map(|spec| {
                ctx.clauses.reset();
                let enable = match statistics {
                    Some(provider) => {
                        EnableScoring::enabled_from_statistics_provider(provider, searcher)
                    }
                    None => EnableScoring::enabled_from_searcher(searcher),
                };
                let weight = compile(&spec.rescore_query, ctx)?
                    .weight(enable)
                    .map_err(|e| Error::internal("create the rescore query's weight", e))?;
                Ok(ShardRescorer {
                    spec: spec.clone(),
                    weight,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Arc::new(rescorers)))
    }

    /// After the query: fetches the page now when the request asked for it (a single-shard
    /// search), else keeps the reader for the fetch phase when there is anything to fetch.
    fn keep_for_fetch(
        &self,
        request: &Prepared,
        hits: &[ShardHit],
        snapshot: &Arc<ShardSnapshot>,
        weight: Option<Arc<dyn Weight>>,
    ) -> Result<(Option<ReaderContextId>, Option<FetchedPage>)> {
        let search = &request.search;
        if let Some((from, k)) = request.fetch_page {
            let docs: Vec<(u32, u32)> = hits
                .iter()
                .take(k as usize)
                .skip(from as usize)
                .map(|h| (h.segment_ord, h.doc))
                .collect();
            // a failed early fetch is not an answer: the reader is kept and the coordinator's
            // fetch phase tries again, failing in its own phase
            if let Ok(fetched) = self.load(snapshot, weight.as_deref(), search, &docs) {
                return Ok((None, Some(docs.into_iter().zip(fetched).collect())));
            }
        }
        if hits.is_empty() || search.size == 0 {
            return Ok((None, None));
        }
        let id = self.services.contexts.register(ReaderContext {
            index_uuid: self.index.metadata().uuid.clone(),
            shard_id: self.shard_id,
            snapshot: snapshot.clone(),
            weight,
            request: search.clone(),
        });
        Ok((Some(id), None))
    }

    fn fetch_here(&self, request: &ShardFetchRequest) -> Result<Vec<FetchedDoc>> {
        let context = self.services.contexts.take(request.context_id)?;
        if context.index_uuid != self.index.metadata().uuid || context.shard_id != self.shard_id {
            return Err(Error::search_context_missing(request.context_id.id));
        }
        self.load(
            &context.snapshot,
            context.weight.as_deref(),
            &context.request,
            &request.docs,
        )
    }

    /// Loads `docs` from `snapshot` as the request asks (source, fields, highlights).
    fn load(
        &self,
        snapshot: &ShardSnapshot,
        weight: Option<&dyn Weight>,
        search: &SearchRequest,
        docs: &[(u32, u32)],
    ) -> Result<Vec<FetchedDoc>> {
        let started = Instant::now();
        let spec = FetchSpec::of(search);
        let meta = self.index.metadata();
        let default_fields = meta.default_fields();
        let ctx = shard_context(
            snapshot,
            &meta,
            &default_fields,
            tessera_common::time::now_millis(),
            self.shard_id,
        );
        let highlight_terms = match (&spec.highlight, &spec.query) {
            (Some(_), Some(query)) => tessera_query::highlight_terms::highlight_terms(query, &ctx)?,
            _ => Vec::new(),
        };
        let named = named_weights(&search.named_queries, snapshot, &ctx)?;
        let mut fetched = fetch_docs(snapshot, docs, &spec, weight, &highlight_terms, &named)?;
        if !spec.nested_inner_hits.is_empty() {
            for (doc, &(segment_ord, doc_id)) in fetched.iter_mut().zip(docs) {
                ctx.clauses.reset();
                doc.inner_hits = Some(crate::nested_inner_hits::inner_hits(
                    snapshot,
                    &ctx,
                    &meta.name,
                    tantivy::DocAddress::new(segment_ord, doc_id),
                    &spec.nested_inner_hits,
                )?);
            }
        }
        ctx.clauses.reset();
        crate::percolate_slots::add_slots(snapshot, &ctx, &search.query, docs, &mut fetched)?;
        if let Ok(shard) = self.index.shard(self.shard_id) {
            shard.stats.record_fetch(started.elapsed());
        }
        Ok(fetched)
    }
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
        self.node_id.to_string()
    }

    fn can_match(&self, request: ShardSearchRequest) -> ShardFuture<bool> {
        let here = request.run_on_receiving_thread;
        self.on_pool(here, move |shard| {
            shard.can_match_here(&shard.prepare(request)?)
        })
    }

    fn query(&self, request: ShardSearchRequest) -> ShardFuture<QuerySearchResult> {
        let in_pool = self.services.load.enter();
        let here = request.run_on_receiving_thread;
        self.on_pool(here, move |shard| {
            let meter = WorkMeter::start();
            let coordinator = request.coordinator.clone();
            let mut result = shard.query_here(&shard.prepare(request)?)?;
            let load = &shard.services.load;
            result.load = Some(load.record(meter, coordinator.as_deref()));
            drop(in_pool);
            Ok(result)
        })
    }

    fn fetch(&self, request: ShardFetchRequest) -> ShardFuture<Vec<FetchedDoc>> {
        self.on_pool(false, move |shard| shard.fetch_here(&request))
    }

    fn free_context(&self, id: ReaderContextId) {
        self.services.contexts.free(id);
    }
}
