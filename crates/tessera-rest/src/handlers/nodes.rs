//! `_nodes/stats` (with metric filters) and `_nodes` info.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_index::stats::ShardStats;
use tessera_index::IndexService;
use tessera_node::process_stats;
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

const METRICS: &[&str] = &[
    "indices",
    "os",
    "process",
    "jvm",
    "thread_pool",
    "fs",
    "transport",
    "http",
    "breaker",
    "script",
    "discovery",
    "ingest",
    "adaptive_selection",
    "script_cache",
    "indexing_pressure",
    "shard_indexing_pressure",
    "search_backpressure",
    "cluster_manager_throttling",
    "weighted_routing",
    "file_cache",
    "task_cancellation",
    "search_pipeline",
    "resource_usage_stats",
    "segment_replication_backpressure",
    "repositories",
    "admission_control",
    "caches",
    "remote_store",
];

fn millis(nanos: u64) -> u64 {
    nanos / 1_000_000
}

/// The `indices` statistics (docs, store, indexing, search, refresh, merges, segments) summed
/// over `indices`, as `_nodes/stats` and `_stats` report them.
pub(crate) fn indices_stats(indices: &[Arc<IndexService>]) -> Value {
    let mut docs = 0u64;
    let mut deleted = 0u64;
    let mut store = 0u64;
    let mut segments = 0u64;
    let mut totals = [0u64; 17];
    for index in indices {
        let (d, del) = index.doc_counts();
        docs += d;
        deleted += del;
        store += index.store_size();
        for shard in index.shards() {
            segments += shard.snapshot().searcher.segment_readers().len() as u64;
            let s: &ShardStats = &shard.stats;
            let values = [
                &s.index_total,
                &s.index_time_nanos,
                &s.delete_total,
                &s.delete_time_nanos,
                &s.query_total,
                &s.query_time_nanos,
                &s.query_current,
                &s.fetch_total,
                &s.fetch_time_nanos,
                &s.refresh_total,
                &s.refresh_time_nanos,
                &s.merge_total,
                &s.merge_time_nanos,
                &s.concurrent_query_total,
                &s.concurrent_query_time_nanos,
                &s.concurrent_query_current,
                &s.concurrent_slice_total,
            ];
            for (total, value) in totals.iter_mut().zip(values) {
                *total += ShardStats::get(value);
            }
        }
    }
    json!({
        "docs": {"count": docs, "deleted": deleted},
        "store": {"size_in_bytes": store, "reserved_in_bytes": 0},
        "indexing": {
            "index_total": totals[0], "index_time_in_millis": millis(totals[1]), "index_current": 0, "index_failed": 0,
            "delete_total": totals[2], "delete_time_in_millis": millis(totals[3]), "delete_current": 0,
            "noop_update_total": 0, "is_throttled": false, "throttle_time_in_millis": 0
        },
        "search": {
            "open_contexts": 0,
            "query_total": totals[4], "query_time_in_millis": millis(totals[5]), "query_current": totals[6],
            "concurrent_query_total": totals[13],
            "concurrent_query_time_in_millis": millis(totals[14]),
            "concurrent_query_current": totals[15],
            "concurrent_avg_slice_count": if totals[13] == 0 { 0.0 } else { totals[16] as f64 / totals[13] as f64 },
            "fetch_total": totals[7], "fetch_time_in_millis": millis(totals[8]), "fetch_current": 0,
            "scroll_total": 0, "scroll_time_in_millis": 0, "scroll_current": 0,
            "suggest_total": 0, "suggest_time_in_millis": 0, "suggest_current": 0
        },
        "refresh": {"total": totals[9], "total_time_in_millis": millis(totals[10]), "external_total": totals[9], "external_total_time_in_millis": millis(totals[10]), "listeners": 0},
        "merges": {"current": 0, "total": totals[11], "total_time_in_millis": millis(totals[12])},
        "segments": {"count": segments},
    })
}

fn indices_section(node: &Node) -> Value {
    let indices: Vec<Arc<IndexService>> = node
        .index_names()
        .iter()
        .filter_map(|name| node.index(name))
        .collect();
    let mut stats = indices_stats(&indices);
    // reader contexts waiting for a fetch phase (or a scroll, once there are scrolls)
    stats["search"]["open_contexts"] = json!(node.shard_services.contexts.open_count());
    stats
}

fn node_stats(node: &Node, metrics: &[&str], index_metrics: &[&str]) -> Value {
    let now = tessera_common::time::now_millis();
    let mut out = Map::new();
    out.insert("timestamp".into(), json!(now));
    out.insert("name".into(), json!(node.config.name));
    let address = format!("{}:{}", node.config.host, node.config.port + 100);
    out.insert("transport_address".into(), json!(address));
    out.insert("host".into(), json!(node.config.host));
    out.insert("ip".into(), json!(address));
    out.insert(
        "roles".into(),
        json!(["cluster_manager", "data", "ingest", "remote_cluster_client"]),
    );
    out.insert("attributes".into(), json!({}));
    let wants = |m: &str| metrics.is_empty() || metrics.contains(&m) || metrics.contains(&"_all");
    if wants("indices") {
        let mut indices = indices_section(node);
        if !index_metrics.is_empty() && !index_metrics.contains(&"_all") {
            if let Value::Object(map) = &mut indices {
                map.retain(|k, _| index_metrics.contains(&k.as_str()));
            }
        }
        out.insert("indices".into(), indices);
    }
    let (process_cpu, os_cpu) = node.cpu.sample();
    if wants("os") {
        let (total, available) = process_stats::os_memory();
        let used = total.saturating_sub(available);
        let load = process_stats::load_average();
        out.insert("os".into(), json!({
            "timestamp": now,
            "cpu": {"percent": os_cpu, "load_average": {"1m": load[0], "5m": load[1], "15m": load[2]}},
            "mem": {
                "total_in_bytes": total, "free_in_bytes": available, "used_in_bytes": used,
                "free_percent": (available * 100).checked_div(total).unwrap_or(0),
                "used_percent": (used * 100).checked_div(total).unwrap_or(0)
            }
        }));
    }
    if wants("process") {
        let (resident, virtual_size) = process_stats::process_memory();
        out.insert("process".into(), json!({
            "timestamp": now,
            "open_file_descriptors": process_stats::open_file_descriptors(),
            "cpu": {"percent": process_cpu, "total_in_millis": process_stats::process_cpu_millis()},
            "mem": {"total_virtual_in_bytes": virtual_size, "resident_in_bytes": resident}
        }));
    }
    if wants("indexing_pressure") {
        out.insert("indexing_pressure".into(), node.indexing_pressure.stats());
    }
    if wants("thread_pool") {
        let mut pools = Map::new();
        for pool in node.pools.all() {
            let s = pool.stats();
            pools.insert(
                pool.name().to_string(),
                json!({
                    "threads": s.threads, "queue": s.queue, "active": s.active,
                    "rejected": s.rejected, "largest": s.largest, "completed": s.completed
                }),
            );
        }
        out.insert("thread_pool".into(), Value::Object(pools));
    }
    if wants("breaker") {
        out.insert("breakers".into(), node.breaker_stats());
    }
    Value::Object(out)
}

/// `GET /_nodes/stats[/{metric}[/{index_metric}]]`.
pub async fn stats(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let metric_param = request
        .path_params
        .get("metric")
        .cloned()
        .unwrap_or_default();
    let metrics: Vec<&str> = metric_param.split(',').filter(|m| !m.is_empty()).collect();
    let unknown: Vec<&&str> = metrics
        .iter()
        .filter(|m| !METRICS.contains(m) && **m != "_all")
        .collect();
    if let Some(first) = unknown.first() {
        return Err(Error::illegal_argument(format!(
            "request [{}] contains unrecognized metric: [{first}]",
            request.path
        )));
    }
    let index_metric_param = request
        .path_params
        .get("index_metric")
        .cloned()
        .unwrap_or_default();
    let index_metrics: Vec<&str> = index_metric_param
        .split(',')
        .filter(|m| !m.is_empty())
        .collect();
    let worker = node.clone();
    let metrics_owned: Vec<String> = metrics.iter().map(|s| s.to_string()).collect();
    let index_owned: Vec<String> = index_metrics.iter().map(|s| s.to_string()).collect();
    let stats = node
        .pools
        .management
        .run(move || {
            let metrics: Vec<&str> = metrics_owned.iter().map(String::as_str).collect();
            let index_metrics: Vec<&str> = index_owned.iter().map(String::as_str).collect();
            Ok(node_stats(&worker, &metrics, &index_metrics))
        })
        .await?;
    let mut nodes = Map::new();
    nodes.insert(node.node_id.clone(), stats);
    Ok(RestResponse::ok(json!({
        "_nodes": {"total": 1, "successful": 1, "failed": 0},
        "cluster_name": node.config.cluster_name,
        "nodes": Value::Object(nodes),
    })))
}

/// `GET /_nodes`: node info.
pub async fn info(node: Arc<Node>, _request: RestRequest) -> Result<RestResponse> {
    let mut nodes = Map::new();
    nodes.insert(node.node_id.clone(), json!({
        "name": node.config.name,
        "transport_address": format!("{}:{}", node.config.host, node.config.port + 100),
        "host": node.config.host,
        "ip": node.config.host,
        "version": crate::handlers::root::COMPATIBLE_VERSION,
        "build_type": "tessera",
        "roles": ["cluster_manager", "data", "ingest", "remote_cluster_client"],
        "os": {"available_processors": process_stats::cores(), "allocated_processors": process_stats::cores()},
        "http": {"publish_address": format!("{}:{}", node.config.host, node.config.port), "max_content_length_in_bytes": node.config.max_content_length},
        "thread_pool": node.pools.all().iter().map(|p| (p.name().to_string(), json!({"type": "fixed", "size": p.size(), "queue_size": p.stats().queue_size}))).collect::<Map<String, Value>>(),
    }));
    Ok(RestResponse::ok(json!({
        "_nodes": {"total": 1, "successful": 1, "failed": 0},
        "cluster_name": node.config.cluster_name,
        "nodes": Value::Object(nodes),
    })))
}
