//! The k-NN plugin's own endpoints: `_plugins/_knn/stats` (the node's k-NN counters in
//! OpenSearch's shape) and `_plugins/_knn/warmup/{index}` (reads every segment's vectors into
//! the page cache, as OpenSearch loads its graphs).
//!
//! The figures are honest: requests counted by kind, graphs built and searched; cache figures,
//! which OpenSearch reports for its native graphs, are zero (Tessera's graphs are read in place
//! from the memory map). In a
//! cluster the answer holds this node only (the fan-out to every node comes with the cluster's
//! k-NN work).

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_knn::stats::STATS;
use tessera_node::Node;

use super::resolve_options;
use crate::request::RestRequest;
use crate::response::RestResponse;

/// Every stat OpenSearch 2.19 names, in its order, with this node's value.
fn node_stats() -> Vec<(&'static str, Value)> {
    let get = |c: &std::sync::atomic::AtomicU64| json!(STATS.get(c));
    vec![
        (
            "max_distance_query_with_filter_requests",
            get(&STATS.max_distance_query_with_filter_requests),
        ),
        ("graph_memory_usage_percentage", json!(0.0)),
        ("graph_query_requests", get(&STATS.graph_query_requests)),
        ("graph_memory_usage", json!(0)),
        ("cache_capacity_reached", json!(false)),
        ("load_success_count", json!(0)),
        ("training_memory_usage", json!(0)),
        ("indices_in_cache", json!({})),
        ("script_query_errors", json!(0)),
        ("hit_count", json!(0)),
        ("knn_query_requests", get(&STATS.knn_query_requests)),
        ("total_load_time", json!(0)),
        ("miss_count", json!(0)),
        (
            "min_score_query_requests",
            get(&STATS.min_score_query_requests),
        ),
        (
            "knn_query_with_filter_requests",
            get(&STATS.knn_query_with_filter_requests),
        ),
        ("training_memory_usage_percentage", json!(0.0)),
        (
            "max_distance_query_requests",
            get(&STATS.max_distance_query_requests),
        ),
        ("lucene_initialized", json!(true)),
        ("graph_index_requests", get(&STATS.graph_index_requests)),
        ("faiss_initialized", json!(false)),
        ("load_exception_count", json!(0)),
        ("training_errors", json!(0)),
        (
            "min_score_query_with_filter_requests",
            get(&STATS.min_score_query_with_filter_requests),
        ),
        ("eviction_count", json!(0)),
        ("nmslib_initialized", json!(false)),
        ("script_compilations", json!(0)),
        ("script_query_requests", json!(0)),
        (
            "graph_stats",
            json!({
                "merge": {"current": 0, "total": 0, "total_time_in_millis": 0, "current_docs": 0,
                          "total_docs": 0, "total_size_in_bytes": 0, "current_size_in_bytes": 0},
                "refresh": {"total": 0, "total_time_in_millis": 0}
            }),
        ),
        ("graph_query_errors", json!(0)),
        ("indexing_from_model_degraded", json!(false)),
        ("graph_index_errors", json!(0)),
        ("training_requests", json!(0)),
        ("script_compilation_errors", json!(0)),
    ]
}

/// The cluster-level stats, shown beside `nodes`.
const CLUSTER_STATS: &[&str] = &["circuit_breaker_triggered", "model_index_status"];

/// `GET /_plugins/_knn/stats`, `/_plugins/_knn/stats/{stat}`, `/_plugins/_knn/{node_id}/stats`,
/// `/_plugins/_knn/{node_id}/stats/{stat}`.
pub async fn stats(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let all = node_stats();
    let asked: Vec<String> = request
        .path_params
        .get("stat")
        .map(|s| {
            s.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let unknown: Vec<&str> = asked
        .iter()
        .map(String::as_str)
        .filter(|s| !CLUSTER_STATS.contains(s) && !all.iter().any(|(name, _)| name == s))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::illegal_argument(format!(
            "request [{}] contains unrecognized stat: [{}]",
            request.path,
            unknown.join(", ")
        )));
    }
    let wanted = |name: &str| asked.is_empty() || asked.iter().any(|a| a == name);
    let mut out = Map::new();
    out.insert(
        "_nodes".into(),
        json!({"total": 1, "successful": 1, "failed": 0}),
    );
    out.insert("cluster_name".into(), json!(node.config.cluster_name));
    if wanted("circuit_breaker_triggered") {
        out.insert("circuit_breaker_triggered".into(), json!(false));
    }
    if wanted("model_index_status") {
        out.insert("model_index_status".into(), Value::Null);
    }
    let mut mine = Map::new();
    for (name, value) in all {
        if wanted(name) {
            mine.insert(name.into(), value);
        }
    }
    let mut nodes = Map::new();
    nodes.insert(node.node_id.clone(), Value::Object(mine));
    out.insert("nodes".into(), Value::Object(nodes));
    Ok(RestResponse::ok(Value::Object(out)))
}

/// `GET /_plugins/_knn/warmup/{index}`: every segment's vectors of this node's copies read
/// once; `_shards` counts the copies warmed.
pub async fn warmup(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = request.path_param("index").to_string();
    let indices = node.resolve(&expression, &resolve_options(&request, false)?)?;
    STATS
        .warmup_requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (total, successful) = node
        .pools
        .management
        .run(move || {
            let (mut total, mut successful) = (0u64, 0u64);
            for index in &indices {
                let meta = index.metadata();
                total += meta.number_of_shards as u64;
                for shard in index.shards() {
                    let searcher = &shard.snapshot().searcher;
                    for reader in searcher.segment_readers() {
                        if let Ok(Some(vectors)) =
                            tessera_knn::segment::SegmentVectors::open(reader)
                        {
                            std::hint::black_box(vectors.touch());
                        }
                    }
                    successful += 1;
                }
            }
            Ok((total, successful))
        })
        .await?;
    Ok(RestResponse::ok(json!({
        "_shards": {"total": total, "successful": successful, "failed": total.saturating_sub(successful)}
    })))
}
