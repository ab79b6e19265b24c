//! The coordinator: scatter a search to the shards, gather and reduce, fetch, respond.
//!
//! Shard phases run on the `search` pool; the coordinator itself only awaits them, so the
//! async runtime never does CPU work. The reduce is the same function the shards use for their
//! slices. Failures of some shards give a partial answer with `_shards.failures`; failures of
//! all shards give `search_phase_execution_exception`, as in OpenSearch.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tessera_aggs::{InternalAggregations, RenderContext};
use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};

use crate::fetch::FetchSpec;
use crate::hits::{reduce, HitSort};
use crate::request::{SearchRequest, TrackTotalHits};
use crate::shard::{ShardQueryResult, ShardRequest, ShardSearcher};
use crate::sort::render_sort_value;

/// The `(segment, doc)` of a shard's hits `from..k` (its sorted best `k`): with a single shard,
/// the final page.
fn page_docs(hits: &[crate::hits::ShardHit], from: usize, k: usize) -> Vec<(u32, u32)> {
    hits.iter()
        .take(k)
        .skip(from)
        .map(|h| (h.segment_ord, h.doc))
        .collect()
}

/// Response options from URL parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponseOptions {
    /// `rest_total_hits_as_int=true`: `hits.total` as a plain number.
    pub total_hits_as_int: bool,
}

#[derive(Debug, Serialize)]
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
    pub took: u64,
    pub timed_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminated_early: Option<bool>,
    pub _shards: ShardsSummary,
    pub hits: HitsSection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregations: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Value>,
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
        .map(|(index, error, shard, node)| json!({"shard": shard, "index": index, "node": node, "reason": error.to_json()}))
        .collect();
    let mut roots: Vec<Error> = Vec::new();
    for (_, error, _, _) in &grouped {
        if !roots.contains(error) {
            roots.push(error.clone());
        }
    }
    let mut outer = Error::new("search_phase_execution_exception", status, reason)
        .with_meta("phase", phase)
        .with_meta("grouped", true)
        .with_meta("failed_shards", Value::Array(failed_shards))
        .with_root_causes(roots.clone());
    if let Some(first) = roots.into_iter().next() {
        outer = outer.caused_by(first);
    }
    outer
}

fn failure_json(shard: &Arc<dyn ShardSearcher>, error: &Error) -> Value {
    json!({"shard": shard.shard_id(), "index": shard.index_name(), "node": shard.node_id(), "reason": error.to_json()})
}

/// Runs a search over `targets` (one copy per shard, in the order that breaks ties).
pub async fn search(
    pool: &ThreadPool,
    targets: Vec<Arc<dyn ShardSearcher>>,
    request: SearchRequest,
    options: ResponseOptions,
) -> Result<SearchResponse> {
    let started = Instant::now();
    let now_millis = tessera_common::time::now_millis();
    let request = Arc::new(request);
    let deadline = request.timeout.map(|t| started + t);
    let total_shards = targets.len();
    // dropped with this future: a client that goes away cancels slices not yet started and
    // stops running ones at their next deadline check
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let shard_request = |shard_index: usize| ShardRequest {
        search: request.clone(),
        shard_index: shard_index as u32,
        now_millis,
        deadline,
        total_shards: total_shards as u32,
        cancelled: cancel.0.clone(),
    };

    // can_match: as OpenSearch, only with more shards than `pre_filter_shard_size` and a query
    // that may match nothing somewhere
    let mut active: Vec<(usize, Arc<dyn ShardSearcher>)> =
        targets.iter().cloned().enumerate().collect();
    let visits_all_docs = request
        .aggs
        .iter()
        .flatten()
        .any(|a| matches!(a.kind, tessera_aggs::AggKind::Global));
    if active.len() > request.pre_filter_shard_size
        && crate::can_match::may_skip(&request.query)
        && !visits_all_docs
    {
        let probes = active.clone();
        let requests: Vec<ShardRequest> = (0..probes.len()).map(shard_request).collect();
        let matches = pool
            .run(move || {
                Ok(probes
                    .iter()
                    .zip(&requests)
                    .map(|((_, s), r)| s.can_match(r).unwrap_or(true))
                    .collect::<Vec<bool>>())
            })
            .await?;
        let keep: Vec<(usize, Arc<dyn ShardSearcher>)> = active
            .iter()
            .zip(&matches)
            .filter(|(_, m)| **m)
            .map(|(t, _)| t.clone())
            .collect();
        active = if keep.is_empty() {
            active.into_iter().take(1).collect()
        } else {
            keep
        };
    }
    let skipped = total_shards - active.len();

    let spec = Arc::new(FetchSpec {
        source: request.source.clone(),
        stored_fields: request.stored_fields,
        docvalue_fields: request.docvalue_fields.clone(),
        fields: request.fields.clone(),
        version: request.version,
        seq_no_primary_term: request.seq_no_primary_term,
        explain: request.explain,
        highlight: request.highlight.clone(),
        query: request.highlight.as_ref().map(|_| request.query.clone()),
    });
    let k = request.from + request.size;

    // query phase; with a single shard its page is the final one, so the same task fetches it
    // right away (OpenSearch's single-shard "query and fetch"), sparing a round on the pool
    let single = active.len() == 1 && request.size > 0;
    let mut pending = Vec::with_capacity(active.len());
    for (shard_index, shard) in &active {
        let shard = shard.clone();
        let req = shard_request(*shard_index);
        let spec = spec.clone();
        let from = request.from;
        pending.push(pool.submit(move || {
            let result = shard.query(&req)?;
            let prefetched = single.then(|| {
                let docs = page_docs(&result.result.hits, from, k);
                let fetched = shard.fetch(&result.context, &docs, &spec);
                (docs, fetched)
            });
            Ok((result, prefetched))
        }));
    }
    let mut results: Vec<(usize, Arc<dyn ShardSearcher>, ShardQueryResult)> = Vec::new();
    let mut prefetched = None;
    let mut failures: Vec<(Arc<dyn ShardSearcher>, Error)> = Vec::new();
    for ((shard_index, shard), handle) in active.iter().zip(pending) {
        let outcome = match handle {
            Ok(handle) => handle.await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok((result, fetched)) => {
                results.push((*shard_index, shard.clone(), result));
                prefetched = fetched.map(|f| (*shard_index, f));
            }
            Err(error) => failures.push((shard.clone(), error)),
        }
    }
    if results.is_empty() {
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
    let numeric_sorts = results[0].2.numeric_sorts.clone();
    let contexts: BTreeMap<usize, (Arc<dyn ShardSearcher>, crate::shard::ReaderContext)> = results
        .iter()
        .map(|(i, shard, r)| (*i, (shard.clone(), r.context.clone())))
        .collect();
    let mut shard_aggs = Vec::new();
    let mut shard_results = Vec::with_capacity(results.len());
    let mut profiles = Vec::new();
    for (_, shard, r) in results {
        shard_results.extend([r.result]);
        shard_aggs.extend(r.aggregations);
        if let Some(profile) = r.profile {
            profiles.push(crate::profile::render_shard(shard.as_ref(), &profile));
        }
    }
    let reduced = reduce(shard_results, &sort, k);
    let aggregations = match &request.aggs {
        None => None,
        Some(_) => {
            let request = request.clone();
            Some(
                pool.run(move || {
                    let requests = request.aggs.as_deref().unwrap_or_default();
                    let merged = InternalAggregations::reduce(shard_aggs, requests)?;
                    merged.render(requests, &mut RenderContext::new(request.max_buckets))
                })
                .await?,
            )
        }
    };
    let page: Vec<_> = reduced.hits.iter().skip(request.from).cloned().collect();

    // fetch phase: only the final page
    let mut by_shard: BTreeMap<usize, Vec<(u32, u32)>> = BTreeMap::new();
    for hit in &page {
        by_shard
            .entry(hit.shard_index as usize)
            .or_default()
            .push((hit.segment_ord, hit.doc));
    }
    let mut fetched: BTreeMap<usize, std::vec::IntoIter<crate::fetch::FetchedDoc>> =
        BTreeMap::new();
    // a single shard's page, already fetched with its query (when it is that page; a failed
    // early fetch is done again here, to fail in this phase)
    if let Some((shard_index, (docs, Ok(early)))) = prefetched {
        if by_shard.get(&shard_index) == Some(&docs) {
            by_shard.remove(&shard_index);
            fetched.insert(shard_index, early.into_iter());
        }
    }
    let mut fetches = Vec::new();
    for (shard_index, docs) in &by_shard {
        let (shard, context) = contexts[shard_index].clone();
        let docs = docs.clone();
        let spec = spec.clone();
        fetches.push((
            *shard_index,
            pool.submit(move || shard.fetch(&context, &docs, &spec))?,
        ));
    }
    for (shard_index, handle) in fetches {
        fetched.insert(shard_index, handle.await?.into_iter());
    }
    let sort_fields = sort.fields().to_vec();
    let mut hits = Vec::with_capacity(page.len());
    for hit in &page {
        let doc = fetched
            .get_mut(&(hit.shard_index as usize))
            .and_then(|docs| docs.next())
            .ok_or_else(|| {
                Error::illegal_state("the fetch phase returned fewer documents than asked")
            })?;
        let (shard, _) = &contexts[&(hit.shard_index as usize)];
        let rendered_sort = (!request.sort.is_empty()).then(|| {
            sort_fields
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    let value = if field.is_score() {
                        crate::sort::SortValue::F64(hit.score as f64)
                    } else {
                        hit.sort
                            .get(i)
                            .cloned()
                            .unwrap_or(crate::sort::SortValue::Missing)
                    };
                    render_sort_value(&value, field, numeric_sorts.get(i).copied().unwrap_or(true))
                })
                .collect()
        });
        let rendered_sort = match (&sort, rendered_sort) {
            (HitSort::Score, Some(_)) => Some(vec![json!(hit.score)]),
            (_, s) => s,
        };
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
            Some(if options.total_hits_as_int {
                json!(value)
            } else {
                json!({"value": value, "relation": if gte { "gte" } else { "eq" }})
            })
        }
    };
    // OpenSearch reports max_score only for the default (score) order or with track_scores
    let tracks_max = request.sort.is_empty() || request.track_scores;
    let max_score = if request.size == 0 || !tracks_max {
        None
    } else {
        reduced.max_score.and_then(finite)
    };
    let failed = failures.len();
    Ok(SearchResponse {
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
        profile: request.profile.then(|| json!({ "shards": profiles })),
    })
}

/// Sets the flag when the search future is dropped (finished, or abandoned by its client).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `_count`: the number of matches (exact) and the shard summary.
pub async fn count(
    pool: &ThreadPool,
    targets: Vec<Arc<dyn ShardSearcher>>,
    query: tessera_query::QueryAst,
    min_score: Option<f32>,
    terminate_after: Option<u64>,
) -> Result<(u64, ShardsSummary, Option<bool>)> {
    let request = SearchRequest {
        query,
        size: 0,
        track_total_hits: TrackTotalHits::Exact,
        min_score,
        terminate_after,
        ..SearchRequest::default()
    };
    let response = search(
        pool,
        targets,
        request,
        ResponseOptions {
            total_hits_as_int: true,
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
