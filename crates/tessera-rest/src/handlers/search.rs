//! `_search` and `_count`: the body and URL parameters become one search request, which the
//! coordinator runs over the resolved indices' shards.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_aggs::{InternalAggregations, RenderContext};
use tessera_common::{Error, Result};
use tessera_index::IndexService;
use tessera_node::Node;
use tessera_query::ast::{Operator, QueryAst, QueryStringQuery};
use tessera_search::coordinator::{HitsSection, ShardsSummary};
use tessera_search::request::{
    parse_track_total_hits, DocValueField, StoredFields, TrackTotalHits,
};
use tessera_search::sort::parse_sort;
use tessera_search::{ResponseOptions, SearchRequest, SearchResponse, ShardSearcher};

use super::documents::url_source_spec;
use super::resolve_options;
use crate::request::{with_position, RestRequest};
use crate::response::RestResponse;

fn index_expression(request: &RestRequest) -> &str {
    request
        .path_params
        .get("index")
        .map(String::as_str)
        .unwrap_or("_all")
}

/// `q=` as a `query_string` query, with `df`, `default_operator`, `analyzer`, `lenient`…
fn url_query(request: &RestRequest) -> Result<Option<QueryAst>> {
    let Some(q) = request.param("q") else {
        return Ok(None);
    };
    let mut query = QueryStringQuery::new(q);
    if let Some(df) = request.param("df") {
        query.default_field = Some(df.to_string());
    }
    if let Some(op) = request.param("default_operator") {
        query.default_operator = match op.to_ascii_uppercase().as_str() {
            "AND" => Operator::And,
            "OR" => Operator::Or,
            other => {
                return Err(Error::illegal_argument(format!(
                    "No enum constant org.opensearch.index.query.Operator.{other}"
                )))
            }
        };
    }
    if let Some(analyzer) = request.param("analyzer") {
        query.analyzer = Some(analyzer.to_string());
    }
    if request.param("lenient").is_some() {
        query.lenient = Some(request.param_bool("lenient", false)?);
    }
    query.analyze_wildcard = request.param_bool("analyze_wildcard", false)?;
    Ok(Some(QueryAst::QueryString(query)))
}

/// `sort=field:desc,other` as in the URL form.
fn url_sort(text: &str) -> Result<Value> {
    let items: Vec<Value> = text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.rsplit_once(':') {
            Some((field, order)) => json!({ field: order }),
            None => json!(item),
        })
        .collect();
    Ok(Value::Array(items))
}

/// Applies URL parameters on top of the body, as OpenSearch does (the URL wins).
fn apply_url_params(request: &RestRequest, search: &mut SearchRequest) -> Result<()> {
    if let Some(query) = url_query(request)? {
        search.query = query;
    }
    let non_negative = |name: &str| -> Result<Option<usize>> {
        match request.param_i64(name)? {
            Some(n) if n < 0 => Err(Error::illegal_argument(format!(
                "[{name}] parameter cannot be negative, found [{n}]"
            ))),
            Some(n) => Ok(Some(n as usize)),
            None => Ok(None),
        }
    };
    if let Some(from) = non_negative("from")? {
        search.from = from;
    }
    if let Some(size) = non_negative("size")? {
        search.size = size;
    }
    if let Some(sort) = request.param("sort") {
        search.sort = parse_sort(&url_sort(sort)?)?;
    }
    if let Some(spec) = url_source_spec(request)? {
        search.source = spec;
    }
    if let Some(stored) = request.param("stored_fields") {
        search.stored_fields =
            StoredFields::from_names(&stored.split(',').map(str::trim).collect::<Vec<_>>())?;
    }
    if let Some(fields) = request.param("docvalue_fields") {
        search.docvalue_fields = fields
            .split(',')
            .map(|f| DocValueField {
                field: f.trim().to_string(),
                format: None,
            })
            .collect();
    }
    if let Some(track) = request.param("track_total_hits") {
        search.track_total_hits = parse_track_total_hits(&match track {
            "" | "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => Value::String(other.to_string()),
        })?;
    }
    if request.param("track_scores").is_some() {
        search.track_scores = request.param_bool("track_scores", false)?;
    }
    if let Some(timeout) = request.param_time("timeout")? {
        search.timeout = Some(timeout);
    }
    if let Some(n) = request.param_i64("terminate_after")? {
        search.terminate_after = (n > 0).then_some(n as u64);
    }
    if request.param("version").is_some() {
        search.version = request.param_bool("version", false)?;
    }
    if request.param("seq_no_primary_term").is_some() {
        search.seq_no_primary_term = request.param_bool("seq_no_primary_term", false)?;
    }
    if let Some(size) = request.param_i64("pre_filter_shard_size")? {
        search.pre_filter_shard_size = size.max(1) as usize;
    }
    search.allow_partial_search_results =
        request.param_bool("allow_partial_search_results", true)?;
    if request.param("explain").is_some() {
        search.explain = request.param_bool("explain", false)?;
    }
    if request.param("scroll").is_some() {
        return Err(Error::not_supported("[scroll]"));
    }
    match request.param("search_type") {
        None | Some("query_then_fetch") => {}
        Some("dfs_query_then_fetch") => {
            return Err(Error::not_supported("[search_type=dfs_query_then_fetch]"))
        }
        Some(other) => {
            return Err(Error::illegal_argument(format!(
                "No search type for [{other}]"
            )))
        }
    }
    Ok(())
}

/// The shard copies to search, restricted by `routing` when given.
fn targets(
    node: &Node,
    indices: &[Arc<IndexService>],
    routing: Option<&str>,
) -> Vec<Arc<dyn ShardSearcher>> {
    let all = node.shard_targets(indices);
    let Some(routing) = routing else { return all };
    let values: Vec<&str> = routing
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    all.into_iter()
        .filter(|target| {
            let Some(index) = indices
                .iter()
                .find(|i| i.metadata().name == target.index_name())
            else {
                return true;
            };
            values
                .iter()
                .any(|r| index.shard_for("", Some(r)) == target.shard_id())
        })
        .collect()
}

fn empty_response(search: &SearchRequest, as_int: bool) -> Result<SearchResponse> {
    let total = match search.track_total_hits {
        TrackTotalHits::Disabled => None,
        _ if as_int => Some(json!(0)),
        _ => Some(json!({"value": 0, "relation": "eq"})),
    };
    let aggregations = match &search.aggs {
        None => None,
        Some(requests) => Some(
            InternalAggregations::empty(requests)
                .render(requests, &mut RenderContext::new(search.max_buckets))?,
        ),
    };
    Ok(SearchResponse {
        took: 0,
        timed_out: false,
        terminated_early: None,
        _shards: ShardsSummary {
            total: 0,
            successful: 0,
            skipped: 0,
            failed: 0,
            failures: Vec::new(),
        },
        hits: HitsSection {
            total,
            max_score: Some(0.0),
            hits: Vec::new(),
        },
        aggregations,
        profile: None,
    })
}

/// `GET|POST /_search`, `/{index}/_search`.
pub async fn search(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let mut search = match request.json_body()? {
        Some(body) => SearchRequest::parse(&body).map_err(|e| with_position(e, &request.body))?,
        None => SearchRequest::default(),
    };
    apply_url_params(&request, &mut search)?;
    search.max_buckets = node.cluster_settings.get_usize("search.max_buckets");
    search.breaker = Some(node.request_breaker());
    search.concurrency = node.concurrency_settings();
    let as_int = request.param_bool("rest_total_hits_as_int", false)?;
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    if indices.is_empty() {
        return RestResponse::serialized(200, &empty_response(&search, as_int)?);
    }
    let targets = targets(&node, &indices, request.param("routing"));
    if targets.is_empty() {
        // `?routing=` with no value routes to no shard: OpenSearch answers an empty result
        return RestResponse::serialized(200, &empty_response(&search, as_int)?);
    }
    let response = tessera_search::search(
        &node.pools.search,
        targets,
        search,
        ResponseOptions {
            total_hits_as_int: as_int,
        },
    )
    .await?;
    RestResponse::serialized(200, &response)
}

/// `GET|POST /_count`, `/{index}/_count`.
pub async fn count(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let mut query = QueryAst::match_all();
    if let Some(body) = request.json_body()? {
        let Value::Object(map) = &body else {
            return Err(Error::parsing("request body must be an object"));
        };
        for (key, value) in map {
            match key.as_str() {
                "query" => {
                    query = tessera_query::parse_query(value)
                        .map_err(|e| with_position(e, &request.body))?
                }
                other => {
                    return Err(with_position(
                        Error::parsing(format!("request does not support [{other}]")),
                        &request.body,
                    ))
                }
            }
        }
    }
    if let Some(q) = url_query(&request)? {
        query = q;
    }
    let min_score = request
        .param("min_score")
        .map(|m| m.parse::<f32>())
        .transpose()
        .map_err(|_| Error::illegal_argument("[min_score] must be a number"))?;
    let terminate_after = request
        .param_i64("terminate_after")?
        .filter(|n| *n > 0)
        .map(|n| n as u64);
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    if indices.is_empty() {
        return Ok(RestResponse::ok(
            json!({"count": 0, "_shards": {"total": 0, "successful": 0, "skipped": 0, "failed": 0}}),
        ));
    }
    let targets = targets(&node, &indices, request.param("routing"));
    if targets.is_empty() {
        return Ok(RestResponse::ok(
            json!({"count": 0, "_shards": {"total": 0, "successful": 0, "skipped": 0, "failed": 0}}),
        ));
    }
    let (count, shards, terminated) = tessera_search::count(
        &node.pools.search,
        targets,
        query,
        min_score,
        terminate_after,
    )
    .await?;
    let mut body = json!({ "count": count, "_shards": shards });
    if let Some(terminated) = terminated {
        body["terminated_early"] = json!(terminated);
    }
    Ok(RestResponse::ok(body))
}
