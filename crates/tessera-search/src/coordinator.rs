//! The coordinator: scatter a search to the shards, gather and reduce, fetch, respond.
//!
//! Shard phases run on the `search` pool; the coordinator itself only awaits them, so the
//! async runtime never does CPU work. The reduce is the same function the shards use for their
//! slices. Failures of some shards give a partial answer with `_shards.failures`; failures of
//! all shards give `search_phase_execution_exception`, as in OpenSearch.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tessera_aggs::{InternalAggregations, RenderContext};
use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};

use crate::hits::{reduce, HitSort, ShardHit};
use crate::messages::{
    DfsPhase, QuerySearchResult, ReaderContextId, ReaderUse, SearchSource, ShardFetchRequest,
    ShardSearchRequest,
};
use crate::pinned::{PinnedSearch, PinnedShard};
use crate::reader_context::{PinKind, PitGroup};
use crate::request::{SearchRequest, TrackTotalHits};
use crate::shard::ShardSearcher;
use crate::sort::render_sort_value;
use tessera_query::dfs::DfsStats;

/// Response options from URL parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponseOptions {
    /// `rest_total_hits_as_int=true`: `hits.total` as a plain number.
    pub total_hits_as_int: bool,
    /// `typed_keys=true`: aggregation names prefixed with their result type (`sterms#tags`).
    pub typed_keys: bool,
}

impl ResponseOptions {
    /// `hits.total`: `{"value", "relation"}` (`gte` for a lower bound), or the plain number
    /// with `rest_total_hits_as_int`.
    pub fn render_total(self, value: u64, gte: bool) -> Value {
        if self.total_hits_as_int {
            json!(value)
        } else {
            json!({"value": value, "relation": if gte { "gte" } else { "eq" }})
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct ShardsSummary {
    pub total: usize,
    pub successful: usize,
    pub skipped: usize,
    pub failed: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Value>,
}

#[derive(Debug, Serialize)]
pub struct Hit {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _shard: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _node: Option<String>,
    pub _index: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _seq_no: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _primary_term: Option<u64>,
    pub _score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _routing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _source: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highlight: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<Vec<Value>>,
    /// A collapsed hit's `inner_hits`, by name (set by the search service's expand step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner_hits: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched_queries: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _explanation: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct HitsSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Value>,
    pub max_score: Option<f32>,
    pub hits: Vec<Hit>,
}

/// A `_search` response, serialised in OpenSearch's shape.
#[derive(Debug, Serialize)]
pub struct SearchResponse {
    /// Set by the search service for a scroll (see [`crate::pinned`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub _scroll_id: Option<String>,
    /// Set by the search service for a search of a point in time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pit_id: Option<String>,
    pub took: u64,
    pub timed_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminated_early: Option<bool>,
    pub _shards: ShardsSummary,
    pub hits: HitsSection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregations: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggest: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Value>,
    /// The readers a search on pinned readers ran on, and where its page ended.
    #[serde(skip)]
    pub pinned: Option<PinnedSearch>,
}

impl SearchResponse {
    /// The answer to a search over no shard (no index matched, or `routing` selected none).
    pub fn empty(search: &SearchRequest, options: ResponseOptions) -> Result<SearchResponse> {
        let total = match search.track_total_hits {
            TrackTotalHits::Disabled => None,
            _ => Some(options.render_total(0, false)),
        };
        let aggregations = match &search.aggs {
            None => None,
            Some(requests) => {
                let mut out = InternalAggregations::empty(requests).render(
                    requests,
                    &mut RenderContext::new(search.max_buckets).with_typed_keys(options.typed_keys),
                )?;
                tessera_aggs::pipeline::apply(
                    &mut out,
                    requests,
                    &search.agg_pipelines,
                    options.typed_keys,
                )?;
                Some(out)
            }
        };
        Ok(SearchResponse {
            _scroll_id: None,
            pit_id: None,
            took: 0,
            timed_out: false,
            terminated_early: None,
            _shards: ShardsSummary::default(),
            hits: HitsSection {
                total,
                max_score: Some(0.0),
                hits: Vec::new(),
            },
            aggregations,
            suggest: None,
            profile: None,
            pinned: None,
        })
    }
}

fn finite(score: f32) -> Option<f32> {
    score.is_finite().then_some(score)
}

/// The `search_phase_execution_exception` for failed shards, grouped by index and error as
/// OpenSearch groups them (`reason` is "all shards failed" or "Partial shards failure").
fn phase_failure(failures: &[(Arc<dyn ShardSearcher>, Error)], phase: &str, reason: &str) -> Error {
    let status = failures.first().map(|(_, e)| e.status()).unwrap_or(500);
    let mut grouped: Vec<(String, Error, u32, String)> = Vec::new();
    for (shard, error) in failures {
        let index = shard.index_name();
        if !grouped.iter().any(|(i, e, _, _)| *i == index && e == error) {
            grouped.push((index, error.clone(), shard.shard_id(), shard.node_id()));
        }
    }
    let failed_shards: Vec<Value> = grouped
        .iter()
        .map(|(index, error, shard, node)| json!({"shard": shard, "index": index, "node": node_json(node), "reason": error.to_json()}))
        .collect();
    // each group's root cause, as OpenSearch's `guessRootCauses`: the deepest OpenSearch
    // exception of its chain (a missing stored script under the shard's query_shard_exception);
    // two indices failing alike list it twice, as OpenSearch does
    let roots: Vec<Error> = grouped
        .iter()
        .map(|(_, error, _, _)| shard_root(error).clone())
        .collect();
    let mut outer = Error::new("search_phase_execution_exception", status, reason)
        .with_meta("phase", phase)
        .with_meta("grouped", true)
        .with_meta("failed_shards", Value::Array(failed_shards))
        .with_root_causes(roots);
    if let Some((_, first, _, _)) = grouped.into_iter().next() {
        outer = outer.caused_by(first);
    }
    outer
}

/// A script's failure in the final reduce (a `scripted_metric`'s reduce script, a
/// `bucket_script`): OpenSearch reports it as a failure of the phase after the query phase,
/// with no shard to blame.
fn reduce_failure(error: Error) -> Error {
    if error.kind() != "script_exception" {
        return error;
    }
    Error::new("search_phase_execution_exception", error.status(), "")
        .with_meta("phase", "fetch")
        .with_meta("grouped", true)
        .with_meta("failed_shards", Value::Array(Vec::new()))
        .with_root_causes(Vec::new())
        .caused_by(error)
}

/// A shard failure's root cause: the deepest OpenSearch exception of its chain, except that a
/// `parse_exception` under a shard's error is Lucene's query parser (`Failed to parse query`),
/// a Java exception, which OpenSearch does not unwrap to.
fn shard_root(error: &Error) -> &Error {
    let root = error.root();
    if root.kind() == "parse_exception" && !std::ptr::eq(root, error) {
        return error;
    }
    root
}

fn failure_json(shard: &Arc<dyn ShardSearcher>, error: &Error) -> Value {
    json!({"shard": shard.shard_id(), "index": shard.index_name(), "node": node_json(&shard.node_id()), "reason": error.to_json()})
}

/// A failure's node: `null` for a shard no node holds (OpenSearch's answer for an unassigned
/// shard).
fn node_json(node_id: &str) -> Value {
    if node_id.is_empty() {
        Value::Null
    } else {
        Value::from(node_id)
    }
}

/// One shard of a search: its copies, in the order to try them. The query goes to the first
/// copy; a failure that another copy may not share (see
/// [`Error::is_retryable_on_another_copy`]) moves on to the next — replica choice is the order
/// of this list, failover is walking it.
#[derive(Clone)]
pub struct ShardGroup {
    pub copies: Vec<Arc<dyn ShardSearcher>>,
    /// The filter of the aliases the shard's index was reached through (JSON), which every
    /// copy applies on top of the query (OpenSearch's alias filter).
    pub alias_filter: Option<String>,
    /// What `indices_boost` multiplies the scores of the shard's documents by.
    pub index_boost: f32,
}

impl ShardGroup {
    /// A shard with one copy.
    pub fn single(copy: Arc<dyn ShardSearcher>) -> ShardGroup {
        ShardGroup::of(vec![copy])
    }

    /// A shard with these copies, read whole.
    pub fn of(copies: Vec<Arc<dyn ShardSearcher>>) -> ShardGroup {
        ShardGroup {
            copies,
            alias_filter: None,
            index_boost: 1.0,
        }
    }

    /// The copy named in reports when the shard is skipped or fails.
    fn first(&self) -> &Arc<dyn ShardSearcher> {
        &self.copies[0]
    }
}

/// A search ready to run: the source that travels to the shards, the request parsed from it,
/// and the readers it runs on.
#[derive(Clone)]
pub struct Search {
    pub source: Arc<SearchSource>,
    pub request: Arc<SearchRequest>,
    pub readers: Readers,
}

/// Which readers a search's shards run on (see [`crate::reader_context`]).
#[derive(Clone, Debug, Default)]
pub enum Readers {
    /// Each shard's current reader.
    #[default]
    Current,
    /// Pin each shard's current reader (a new scroll or PIT) and run on it.
    Pin {
        kind: PinKind,
        keep_alive: Duration,
        max_open: usize,
        pit: Option<PitGroup>,
    },
    /// The readers a scroll or PIT pinned, one per shard group, in the groups' order; for a
    /// scroll, the position its last page reached.
    Pinned {
        ids: Vec<ReaderContextId>,
        keep_alive: Option<Duration>,
        after: Option<ShardHit>,
    },
}

impl Readers {
    fn for_shard(&self, shard_index: usize) -> Option<ReaderUse> {
        match self {
            Readers::Current => None,
            Readers::Pin {
                kind,
                keep_alive,
                max_open,
                pit,
            } => Some(ReaderUse::Pin {
                kind: *kind,
                keep_alive_millis: keep_alive.as_millis() as u64,
                max_open: *max_open,
                pit: pit.clone(),
            }),
            Readers::Pinned {
                ids,
                keep_alive,
                after,
            } => Some(ReaderUse::Pinned {
                id: ids[shard_index],
                keep_alive_millis: keep_alive.map(|k| k.as_millis() as u64),
                after: after.clone(),
            }),
        }
    }
}

impl Search {
    /// Parses `source` once, on the coordinator; shards on this node reuse the parse.
    pub fn parse(source: SearchSource) -> Result<Search> {
        let request = source.parse()?;
        Ok(Search::new(source, request))
    }

    /// A search whose request was parsed (and perhaps completed) by the caller.
    pub fn new(source: SearchSource, request: SearchRequest) -> Search {
        Search {
            source: Arc::new(source),
            request: Arc::new(request),
            readers: Readers::Current,
        }
    }
}

/// A shard's answer to the query phase, and the copy that gave it (the fetch goes there).
struct Answered {
    shard_index: usize,
    copy: Arc<dyn ShardSearcher>,
    result: QuerySearchResult,
}

/// Reader contexts opened by the query phase and not yet handed to a fetch: freed when the
/// search ends, whichever way it ends.
#[derive(Default)]
struct OpenContexts(BTreeMap<usize, (Arc<dyn ShardSearcher>, ReaderContextId)>);

impl OpenContexts {
    fn take(&mut self, shard_index: usize) -> Option<(Arc<dyn ShardSearcher>, ReaderContextId)> {
        self.0.remove(&shard_index)
    }
}

impl Drop for OpenContexts {
    fn drop(&mut self) {
        for (copy, id) in self.0.values() {
            copy.free_context(*id);
        }
    }
}

/// What every phase shares: the search and its per-shard request template.
struct Phases<'a> {
    search: &'a Search,
    groups: &'a [ShardGroup],
    now_millis: i64,
    deadline: Option<Instant>,
    cancel: Arc<AtomicBool>,
    /// The shards' summed term statistics, once `dfs_query_then_fetch`'s first round ran.
    dfs: Option<DfsStats>,
}

impl Phases<'_> {
    fn shard_request(
        &self,
        shard_index: usize,
        copy: &Arc<dyn ShardSearcher>,
        fetch_page: Option<(u32, u32)>,
    ) -> ShardSearchRequest {
        ShardSearchRequest {
            source: self.search.source.clone(),
            index_uuid: copy.index_uuid(),
            shard_id: copy.shard_id(),
            shard_index: shard_index as u32,
            total_shards: self.groups.len() as u32,
            now_millis: self.now_millis,
            deadline: self.deadline,
            fetch_page,
            parsed: Some(self.search.request.clone()),
            cancelled: Some(self.cancel.clone()),
            coordinator: None,
            run_on_receiving_thread: false,
            reader: self.search.readers.for_shard(shard_index),
            alias_filter: self.groups[shard_index].alias_filter.clone(),
            index_boost: self.groups[shard_index].index_boost,
            dfs: self.dfs.clone().map(DfsPhase::Apply),
        }
    }

    /// `dfs_query_then_fetch`'s first round: the term statistics of the shards in `active`
    /// (each asked of its first copy that answers, on its current reader), summed. A shard
    /// that cannot answer adds nothing; its query phase reports its failure.
    async fn dfs(&self, active: &[usize]) -> DfsStats {
        let calls = active
            .iter()
            .map(|&shard_index| {
                let copies = self.groups[shard_index].copies.clone();
                let requests: Vec<ShardSearchRequest> = copies
                    .iter()
                    .map(|copy| ShardSearchRequest {
                        fetch_page: None,
                        reader: None,
                        dfs: Some(DfsPhase::Collect),
                        ..self.shard_request(shard_index, copy, None)
                    })
                    .collect();
                Box::pin(async move {
                    for (copy, request) in copies.into_iter().zip(requests) {
                        if let Ok(QuerySearchResult {
                            dfs: Some(stats), ..
                        }) = copy.query(request).await
                        {
                            return Some(stats);
                        }
                    }
                    None
                }) as Pin<Box<dyn Future<Output = _> + Send>>
            })
            .collect();
        let mut total = DfsStats::default();
        for stats in join_all(calls).await.into_iter().flatten() {
            total.merge(&stats);
        }
        total
    }

    /// can_match: as OpenSearch, only with more shards than `pre_filter_shard_size` and a
    /// query that may match nothing somewhere. The shard indexes to query.
    async fn can_match(&self) -> Vec<usize> {
        let request = &self.search.request;
        let all: Vec<usize> = (0..self.groups.len()).collect();
        let visits_all_docs = request
            .aggs
            .iter()
            .flatten()
            .any(|a| matches!(a.kind, tessera_aggs::AggKind::Global));
        // a scroll or PIT reads its pinned readers, which can_match does not look at
        let pinned = !matches!(self.search.readers, Readers::Current);
        if all.len() <= request.pre_filter_shard_size
            || !crate::can_match::may_skip(&request.query)
            || visits_all_docs
            || pinned
            || request.suggest.is_some()
        {
            return all;
        }
        let probes = all
            .iter()
            .map(|&i| {
                let copy = self.groups[i].first();
                copy.can_match(self.shard_request(i, copy, None))
            })
            .collect();
        let matches = join_all(probes).await;
        let keep: Vec<usize> = all
            .iter()
            .zip(&matches)
            .filter(|(_, m)| *m.as_ref().unwrap_or(&true))
            .map(|(i, _)| *i)
            .collect();
        if keep.is_empty() {
            vec![0]
        } else {
            keep
        }
    }

    /// The query phase over the shards in `active`, each on its first copy that answers.
    async fn query(
        &self,
        active: &[usize],
    ) -> (Vec<Answered>, Vec<(Arc<dyn ShardSearcher>, Error)>) {
        let request = &self.search.request;
        let k = request.from + request.size;
        // with a single shard its page is the final one, so it is fetched with the query; a
        // copy behind a network fetches its own top k with the query when k is small (the
        // final page takes its hits from there), sparing the fetch phase's round trip
        let single_page =
            (active.len() == 1 && request.size > 0).then(|| (request.from as u32, k as u32));
        let fetch_page = |copy: &Arc<dyn ShardSearcher>| {
            single_page.or_else(|| {
                (request.size > 0 && k <= FETCH_WITH_QUERY_MAX && copy.fetch_with_query())
                    .then_some((0, k as u32))
            })
        };
        let calls = active
            .iter()
            .map(|&shard_index| {
                let copies = self.groups[shard_index].copies.clone();
                let requests: Vec<ShardSearchRequest> = copies
                    .iter()
                    .map(|copy| self.shard_request(shard_index, copy, fetch_page(copy)))
                    .collect();
                Box::pin(async move {
                    let mut last = None;
                    for (copy, request) in copies.into_iter().zip(requests) {
                        match copy.query(request).await {
                            Ok(result) => {
                                return Ok(Answered {
                                    shard_index,
                                    copy,
                                    result,
                                })
                            }
                            Err(error) => {
                                let retry = error.is_retryable_on_another_copy();
                                last = Some((copy, error));
                                if !retry {
                                    break;
                                }
                            }
                        }
                    }
                    Err(last.expect("a shard group has at least one copy"))
                }) as Pin<Box<dyn Future<Output = _> + Send>>
            })
            .collect();
        let mut answered = Vec::new();
        let mut failures = Vec::new();
        for outcome in join_all(calls).await {
            match outcome {
                Ok(a) => answered.push(a),
                Err(failure) => failures.push(failure),
            }
        }
        (answered, failures)
    }
}

/// The largest `from + size` a remote copy fetches with its query (`fetch_with_query`).
const FETCH_WITH_QUERY_MAX: usize = 50;

/// Runs a search over `groups` (one per shard, in the order that breaks ties): the named
/// phases can_match, query, reduce, fetch, then the response.
pub async fn search(
    pool: &ThreadPool,
    groups: Vec<ShardGroup>,
    search: Search,
    options: ResponseOptions,
) -> Result<SearchResponse> {
    let started = Instant::now();
    let request = search.request.clone();
    // dropped with this future: a client that goes away cancels slices not yet started and
    // stops running ones at their next deadline check
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let mut phases = Phases {
        search: &search,
        groups: &groups,
        now_millis: tessera_common::time::now_millis(),
        deadline: request.timeout.map(|t| started + t),
        cancel: cancel.0.clone(),
        dfs: None,
    };
    let total_shards = groups.len();

    let active = phases.can_match().await;
    let skipped = total_shards - active.len();
    // a scroll's later pages score as its first did: only a new search gathers statistics
    if request.dfs && !matches!(search.readers, Readers::Pinned { .. }) {
        phases.dfs = Some(phases.dfs(&active).await);
    }

    let (answered, failures) = phases.query(&active).await;
    let mut contexts = OpenContexts::default();
    let mut pinned_readers = BTreeMap::new();
    for a in &answered {
        if let Some(id) = a.result.context_id {
            contexts.0.insert(a.shard_index, (a.copy.clone(), id));
        }
        if let Some(id) = a.result.pinned {
            let filter = groups[a.shard_index].alias_filter.clone();
            pinned_readers.insert(a.shard_index, pinned_shard(&a.copy, id, filter));
        }
    }
    if answered.is_empty() {
        if failures.is_empty() {
            return Err(Error::illegal_state("no shard answered the search"));
        }
        return Err(phase_failure(&failures, "query", "all shards failed"));
    }
    if !failures.is_empty() && !request.allow_partial_search_results {
        return Err(phase_failure(&failures, "query", "Partial shards failure"));
    }

    // reduce
    let sort = HitSort::new(request.sort.clone());
    let k = request.from + request.size;
    let sort_formats = answered[0].result.sort_formats.clone();
    let mut copies: BTreeMap<usize, Arc<dyn ShardSearcher>> = BTreeMap::new();
    let mut prefetched: BTreeMap<(usize, u32, u32), crate::fetch::FetchedDoc> = BTreeMap::new();
    let mut shard_aggs = Vec::new();
    let mut shard_suggests = Vec::new();
    let mut shard_results = Vec::with_capacity(answered.len());
    let mut profiles = Vec::new();
    for a in answered {
        let r = a.result;
        shard_results.push(r.result);
        shard_aggs.extend(r.aggregations);
        shard_suggests.extend(r.suggest);
        if let Some(profile) = r.profile {
            profiles.push(crate::profile::render_shard(a.copy.as_ref(), &profile));
        }
        for ((segment, doc), fetched) in r.fetched.into_iter().flatten() {
            prefetched.insert((a.shard_index, segment, doc), fetched);
        }
        copies.insert(a.shard_index, a.copy);
    }
    let reduced = reduce(shard_results, &sort, k);
    let aggregations = match &request.aggs {
        None => None,
        Some(_) => {
            let request = request.clone();
            let typed_keys = options.typed_keys;
            Some(
                pool.run(move || {
                    let requests = request.aggs.as_deref().unwrap_or_default();
                    let merged = InternalAggregations::reduce(shard_aggs, requests)?;
                    let mut ctx =
                        RenderContext::new(request.max_buckets).with_typed_keys(typed_keys);
                    let mut out = merged.render(requests, &mut ctx).map_err(reduce_failure)?;
                    // pipelines read the final buckets, so they run only here, after the
                    // last reduce
                    tessera_aggs::pipeline::apply(
                        &mut out,
                        requests,
                        &request.agg_pipelines,
                        typed_keys,
                    )
                    .map_err(reduce_failure)?;
                    Ok(out)
                })
                .await?,
            )
        }
    };
    let suggest = request
        .suggest
        .as_ref()
        .map(|suggest| crate::suggest::reduce(suggest, shard_suggests, options.typed_keys))
        .transpose()?;
    let page: Vec<_> = reduced.hits.iter().skip(request.from).cloned().collect();

    // fetch phase: only the final page's hits not fetched with their shard's query (a single
    // shard's page, or a remote copy's own top k), from the copies that answered the query
    let mut by_shard: BTreeMap<usize, Vec<(u32, u32)>> = BTreeMap::new();
    for hit in &page {
        let key = (hit.shard_index as usize, hit.segment_ord, hit.doc);
        if !prefetched.contains_key(&key) {
            by_shard
                .entry(hit.shard_index as usize)
                .or_default()
                .push((hit.segment_ord, hit.doc));
        }
    }
    let mut fetches = Vec::new();
    let mut fetch_shards = Vec::new();
    for (shard_index, docs) in by_shard {
        let (copy, context_id) = contexts
            .take(shard_index)
            .ok_or_else(|| Error::illegal_state("a shard with hits to fetch kept no reader"))?;
        fetch_shards.push((shard_index, docs.clone()));
        fetches.push(copy.fetch(ShardFetchRequest { context_id, docs }));
    }
    // the shards none of whose hits made the page are done with their readers
    drop(contexts);
    for ((shard_index, docs), fetched) in fetch_shards.into_iter().zip(join_all(fetches).await) {
        for (doc, fetched) in docs.into_iter().zip(fetched?) {
            prefetched.insert((shard_index, doc.0, doc.1), fetched);
        }
    }
    let sort_fields = sort.fields().to_vec();
    let mut hits = Vec::with_capacity(page.len());
    for hit in &page {
        let shard_index = hit.shard_index as usize;
        let doc = prefetched
            .remove(&(shard_index, hit.segment_ord, hit.doc))
            .ok_or_else(|| {
                Error::illegal_state("the fetch phase returned fewer documents than asked")
            })?;
        let shard = &copies[&shard_index];
        let rendered_sort = (!request.sorts_by_score_only()).then(|| {
            sort_fields
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    if field.is_score() {
                        // a score is a float: rendered as Java prints it
                        return crate::source_fields::float_value(hit.score);
                    }
                    let value = hit
                        .sort
                        .get(i)
                        .cloned()
                        .unwrap_or(crate::sort::SortValue::Missing);
                    let format = sort_formats.get(i).copied().unwrap_or_default();
                    render_sort_value(&value, field, format)
                })
                .collect()
        });
        let explained = doc.explanation.is_some();
        hits.push(Hit {
            _shard: explained.then(|| format!("[{}][{}]", shard.index_name(), shard.shard_id())),
            _node: explained.then(|| shard.node_id()),
            _explanation: doc.explanation,
            highlight: doc.highlight,
            _index: shard.index_name(),
            _id: doc.id,
            _version: doc.version,
            _seq_no: doc.seq_no,
            _primary_term: doc.primary_term,
            _score: finite(hit.score),
            _routing: doc.routing,
            _source: doc.source,
            fields: (!doc.fields.is_empty()).then_some(doc.fields),
            sort: rendered_sort,
            inner_hits: doc.inner_hits,
            matched_queries: doc.matched_queries,
        });
    }

    let total = match request.track_total_hits {
        TrackTotalHits::Disabled => None,
        limit => {
            let threshold = limit.threshold();
            let (value, gte) = if reduced.total > threshold {
                (threshold, true)
            } else {
                (reduced.total, reduced.total_is_lower_bound)
            };
            Some(options.render_total(value, gte))
        }
    };
    // OpenSearch reports max_score only for the default (score) order or with track_scores
    let tracks_max = request.sorts_by_score_only() || request.track_scores;
    let max_score = if request.size == 0 || !tracks_max {
        None
    } else {
        reduced.max_score.and_then(finite)
    };
    let pinned = match &search.readers {
        Readers::Current => None,
        Readers::Pin { .. } => Some(pinned_search(pinned_readers, page.last(), None, true)),
        Readers::Pinned { after, .. } => Some(pinned_search(
            pinned_readers,
            page.last(),
            after.as_ref(),
            false,
        )),
    };
    let failed = failures.len();
    Ok(SearchResponse {
        _scroll_id: None,
        pit_id: None,
        took: started.elapsed().as_millis() as u64,
        timed_out: reduced.timed_out,
        terminated_early: request.terminate_after.map(|_| reduced.terminated_early),
        _shards: ShardsSummary {
            total: total_shards,
            successful: total_shards - failed,
            skipped,
            failed,
            failures: failures.iter().map(|(s, e)| failure_json(s, e)).collect(),
        },
        hits: HitsSection {
            total,
            max_score,
            hits,
        },
        aggregations,
        suggest,
        profile: request.profile.then(|| json!({ "shards": profiles })),
        pinned,
    })
}

fn pinned_shard(
    copy: &Arc<dyn ShardSearcher>,
    context: ReaderContextId,
    alias_filter: Option<String>,
) -> PinnedShard {
    PinnedShard {
        node_id: copy.node_id(),
        index: copy.index_name(),
        index_uuid: copy.index_uuid(),
        shard_id: copy.shard_id(),
        context,
        alias_filter,
    }
}

/// What a search on pinned readers leaves for the next request. A new scroll or PIT keeps
/// the readers of the shards that answered, renumbered in order (the page's last hit is on
/// one of them: its shard is renumbered alike, which keeps the order between hits). A search
/// on readers pinned before keeps the numbering it was given: the position is the page's
/// last hit, else the one the page started from.
fn pinned_search(
    readers: BTreeMap<usize, PinnedShard>,
    last: Option<&ShardHit>,
    previous: Option<&ShardHit>,
    renumber: bool,
) -> PinnedSearch {
    let mut last = last.or(previous).cloned();
    if renumber {
        if let Some(hit) = &mut last {
            hit.shard_index = readers.range(..hit.shard_index as usize).count() as u32;
        }
    }
    PinnedSearch {
        shards: readers.into_values().collect(),
        last,
    }
}

/// Sets the flag when the search future is dropped (finished, or abandoned by its client).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `_count`: the number of matches (exact) and the shard summary. `search` is a search with
/// `size: 0` and exact totals (see [`count_source`]).
pub async fn count(
    pool: &ThreadPool,
    groups: Vec<ShardGroup>,
    counted: Search,
) -> Result<(u64, ShardsSummary, Option<bool>)> {
    let response = search(
        pool,
        groups,
        counted,
        ResponseOptions {
            total_hits_as_int: true,
            typed_keys: false,
        },
    )
    .await?;
    let total = response
        .hits
        .total
        .as_ref()
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok((total, response._shards, response.terminated_early))
}

/// The search a `_count` runs: its query (a body's `query`, or none) counted exactly, with
/// `min_score` and `terminate_after`; URL parameters such as `q` apply as for a search.
pub fn count_source(
    query: Option<&Value>,
    params: BTreeMap<String, String>,
    min_score: Option<f32>,
    terminate_after: Option<u64>,
) -> SearchSource {
    let mut body = json!({"size": 0, "track_total_hits": true});
    if let Some(query) = query {
        body["query"] = query.clone();
    }
    if let Some(min_score) = min_score {
        body["min_score"] = json!(min_score);
    }
    if let Some(n) = terminate_after {
        body["terminate_after"] = json!(n);
    }
    SearchSource {
        body: Some(body.to_string()),
        params,
        ..SearchSource::default()
    }
}

/// Polls every future at once and gives their outputs in order: the scatter of a phase.
async fn join_all<T>(futures: Vec<Pin<Box<dyn Future<Output = T> + Send>>>) -> Vec<T> {
    let mut pending: Vec<Option<Pin<Box<dyn Future<Output = T> + Send>>>> =
        futures.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (slot, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
