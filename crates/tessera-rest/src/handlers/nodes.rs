//! `_nodes/stats` (with metric filters) and `_nodes` info, of the nodes a node filter names
//! (`_all`, `_local`, ids, names…: `tessera_node::node_filter`).

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_cluster::DiscoveryNode;
use tessera_common::{Error, Result};
use tessera_index::stats::ShardStats;
use tessera_index::IndexService;
use tessera_node::process_stats;
use tessera_node::Node;

use super::reports::{self, host_of, nodes_header};
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
/// over the copies this node holds of `indices`, as `_nodes/stats` and `_stats` report them.
pub(crate) fn indices_stats(indices: &[Arc<IndexService>]) -> Value {
    let shards: Vec<_> = indices.iter().flat_map(|index| index.shards()).collect();
    shards_stats(&shards)
}

/// [`indices_stats`] of some shard copies.
pub(crate) fn shards_stats(shards: &[Arc<tessera_index::shard::Shard>]) -> Value {
    let mut docs = 0u64;
    let mut deleted = 0u64;
    let mut store = 0u64;
    let mut segments = 0u64;
    let mut totals = [0u64; 23];
    {
        for shard in shards {
            let (d, del) = shard.doc_counts();
            docs += d;
            deleted += del;
            store += shard.store_size();
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
                &s.scroll_total,
                &s.scroll_time_nanos,
                &s.scroll_current,
                &s.point_in_time_total,
                &s.point_in_time_time_nanos,
                &s.point_in_time_current,
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
            "scroll_total": totals[17], "scroll_time_in_millis": millis(totals[18]), "scroll_current": totals[19],
            "point_in_time_total": totals[20], "point_in_time_time_in_millis": millis(totals[21]), "point_in_time_current": totals[22],
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
    // reader contexts waiting for a fetch phase, and the readers scrolls and PITs pinned
    stats["search"]["open_contexts"] = json!(node.shard_services.contexts.open_count());
    stats
}

/// This node's `_nodes/stats` entry (a node-local report: `reports::NODES_STATS`).
pub(crate) fn node_stats(node: &Node, metrics: &[&str], index_metrics: &[&str]) -> Value {
    let now = tessera_common::time::now_millis();
    let local = node.local_node();
    let host = host_of(&local.transport_address).to_string();
    let mut out = Map::new();
    out.insert("timestamp".into(), json!(now));
    out.insert("name".into(), json!(local.name));
    out.insert("transport_address".into(), json!(local.transport_address));
    out.insert("host".into(), json!(host));
    out.insert("ip".into(), json!(local.transport_address));
    out.insert("roles".into(), json!(local.roles));
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
    if wants("jvm") {
        out.insert("jvm".into(), super::jvm_stats::jvm_section(node, now));
    }
    if wants("indexing_pressure") {
        out.insert("indexing_pressure".into(), node.indexing_pressure.stats());
    }
    if wants("ingest") {
        out.insert("ingest".into(), node.ingest_stats());
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
    if wants("adaptive_selection") {
        out.insert("adaptive_selection".into(), adaptive_selection(node));
    }
    Value::Object(out)
}

/// What this node, as a coordinator, knows of each node it sends shard requests to; the rank
/// in milliseconds with one decimal, as OpenSearch shows it.
fn adaptive_selection(node: &Node) -> Value {
    let mut nodes = Map::new();
    for view in node.response_collector.views() {
        // a node not answered yet has no statistics: OpenSearch leaves it out
        let Some(rank) = view.rank_nanos else {
            continue;
        };
        nodes.insert(
            view.node_id,
            json!({
                "outgoing_searches": view.outgoing_searches,
                "avg_queue_size": view.avg_queue_size.round() as u64,
                "avg_service_time_ns": view.avg_service_time_nanos,
                "avg_response_time_ns": view.avg_response_time_nanos,
                "rank": format!("{:.1}", rank / 1e6),
            }),
        );
    }
    Value::Object(nodes)
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
    if !index_metrics.is_empty() && !metrics.iter().any(|m| *m == "indices" || *m == "_all") {
        return Err(Error::illegal_argument(format!(
            "request [{}] contains index metrics [{}] but indices stats not requested",
            request.path, index_metric_param
        )));
    }
    let params = json!({"metrics": metrics, "index_metrics": index_metrics});
    let targets = node.resolve_nodes(request.path_param("node_id"))?;
    let answers = node.fan_out_to(targets, reports::NODES_STATS, params).await;
    Ok(RestResponse::ok(nodes_response(&node, answers)))
}

/// The `_nodes` answer of fanned-out node reports: each node that answered under its id.
fn nodes_response(node: &Node, answers: Vec<(DiscoveryNode, Result<Value>)>) -> Value {
    let header = nodes_header(&answers);
    let mut nodes = Map::new();
    for (target, answer) in answers {
        if let Ok(answer) = answer {
            nodes.insert(target.id, answer);
        }
    }
    json!({
        "_nodes": header,
        "cluster_name": node.config.cluster_name,
        "nodes": Value::Object(nodes),
    })
}

/// This node's `_nodes` info entry (a node-local report: `reports::NODES_INFO`).
pub(crate) fn local_info(node: &Node) -> Value {
    let local = node.local_node();
    let host = host_of(&local.transport_address).to_string();
    json!({
        "name": local.name,
        "transport_address": local.transport_address,
        "host": host,
        "ip": host,
        "version": crate::handlers::root::COMPATIBLE_VERSION,
        "build_type": "tessera",
        "roles": local.roles,
        "attributes": {},
        "plugins": [],
        "modules": [],
        "os": {"available_processors": process_stats::cores(), "allocated_processors": process_stats::cores()},
        "http": {"publish_address": local.http_address, "max_content_length_in_bytes": node.config.max_content_length},
        "thread_pool": node.pools.all().iter().map(|p| (p.name().to_string(), json!({"type": "fixed", "size": p.size(), "queue_size": p.stats().queue_size}))).collect::<Map<String, Value>>(),
    })
}

/// The sections `_nodes` info may be asked for (`/_nodes/{node_id}/{metric}`).
const INFO_METRICS: &[&str] = &[
    "settings",
    "os",
    "process",
    "jvm",
    "thread_pool",
    "transport",
    "http",
    "plugins",
    "ingest",
    "aggregations",
    "indices",
    "search_pipelines",
];

/// What every info entry shows whichever sections were asked for.
const INFO_HEADER: &[&str] = &[
    "name",
    "transport_address",
    "host",
    "ip",
    "version",
    "build_type",
    "build_hash",
    "roles",
    "attributes",
];

/// The node filter and the sections of a `_nodes` info request. A lone path parameter
/// (`/_nodes/{x}`) holds sections when every name in it is one, else a node filter, as
/// OpenSearch reads it; unknown section names select nothing.
fn info_target(request: &RestRequest) -> (String, Option<Vec<String>>) {
    let split = |text: &str| -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let node_id = request.path_param("node_id");
    let sections = match request.path_params.get("metric") {
        Some(metric) => Some(split(metric)),
        None => {
            let names = split(node_id);
            if !names.is_empty() && names.iter().all(|n| INFO_METRICS.contains(&n.as_str())) {
                return ("_all".to_string(), Some(names));
            }
            None
        }
    };
    let sections = sections.filter(|s| !s.iter().any(|m| m == "_all"));
    (node_id.to_string(), sections)
}

/// `GET /_nodes`, `/_nodes/{node_id}`, `/_nodes/{node_id}/{metric}`,
/// `/_nodes/{node_id}/info/{metric}`: node info.
pub async fn info(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (filter, sections) = info_target(&request);
    let targets = node.resolve_nodes(&filter)?;
    let mut answers = node
        .fan_out_to(targets, reports::NODES_INFO, json!({}))
        .await;
    if let Some(sections) = sections {
        for (_, answer) in &mut answers {
            if let Ok(Value::Object(info)) = answer {
                info.retain(|key, _| {
                    INFO_HEADER.contains(&key.as_str()) || sections.iter().any(|s| s == key)
                });
            }
        }
    }
    Ok(RestResponse::ok(nodes_response(&node, answers)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(node_id: Option<&str>, metric: Option<&str>) -> RestRequest {
        let mut path_params = std::collections::BTreeMap::new();
        if let Some(node_id) = node_id {
            path_params.insert("node_id", node_id.to_string());
        }
        if let Some(metric) = metric {
            path_params.insert("metric", metric.to_string());
        }
        RestRequest {
            method: axum::http::Method::GET,
            path: "/_nodes".into(),
            path_params,
            params: Default::default(),
            body: Default::default(),
        }
    }

    #[test]
    fn a_lone_parameter_is_sections_only_when_every_name_is_one() {
        let strings = |names: &[&str]| Some(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(info_target(&request(None, None)), (String::new(), None));
        assert_eq!(
            info_target(&request(Some("jvm,os"), None)),
            ("_all".to_string(), strings(&["jvm", "os"]))
        );
        assert_eq!(
            info_target(&request(Some("_local"), None)),
            ("_local".to_string(), None)
        );
        assert_eq!(
            info_target(&request(Some("os,node-1"), None)),
            ("os,node-1".to_string(), None)
        );
        assert_eq!(
            info_target(&request(Some("_local"), Some("http"))),
            ("_local".to_string(), strings(&["http"]))
        );
        assert_eq!(
            info_target(&request(Some("_all"), Some("_all"))),
            ("_all".to_string(), None)
        );
    }
}
