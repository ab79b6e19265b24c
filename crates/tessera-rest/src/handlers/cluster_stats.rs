//! `GET /_cluster/stats`: the cluster in figures, in OpenSearch's shape: its indices (counts of
//! indices, shards and documents, store size, segments, mapped field types) from every copy's
//! counts and the index metadata, and its nodes (roles, processors, memory, process, heap,
//! disk) from each node's `_nodes/stats` report and disk report. Tessera has no query cache,
//! fielddata, completion suggester or plugins: those figures are zero or empty.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::Result;
use tessera_node::Node;

use super::reports;
use crate::request::RestRequest;
use crate::response::RestResponse;

/// min, max and average of some counts (`{}` fields when there are none).
fn spread(values: &[u64]) -> Value {
    if values.is_empty() {
        return json!({"min": 0, "max": 0, "avg": 0.0});
    }
    let sum: u64 = values.iter().sum();
    json!({
        "min": values.iter().min(),
        "max": values.iter().max(),
        "avg": sum as f64 / values.len() as f64,
    })
}

/// [`spread`] of ratios.
fn spread_ratios(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"min": 0.0, "max": 0.0, "avg": 0.0});
    }
    json!({
        "min": values.iter().cloned().fold(f64::INFINITY, f64::min),
        "max": values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        "avg": values.iter().sum::<f64>() / values.len() as f64,
    })
}

/// Each field type of a mapping's `properties`, recursively, with how many fields have it.
fn field_types(properties: &Value, out: &mut BTreeMap<String, u64>) {
    for field in properties.as_object().into_iter().flatten().map(|(_, f)| f) {
        let kind = field["type"].as_str().unwrap_or("object");
        *out.entry(kind.to_string()).or_default() += 1;
        field_types(&field["properties"], out);
        for sub in field["fields"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(_, f)| f)
        {
            if let Some(kind) = sub["type"].as_str() {
                *out.entry(kind.to_string()).or_default() += 1;
            }
        }
    }
}

fn sum(values: impl Iterator<Item = u64>) -> u64 {
    values.sum()
}

pub async fn cluster_stats(node: Arc<Node>, _request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve("_all", &Default::default())?;
    let counts = node.shard_counts(indices.clone()).await?;

    // per index: (shards, primaries) started
    let mut per_index: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for ((uuid, _, _), c) in &counts {
        let entry = per_index.entry(uuid.clone()).or_default();
        entry.0 += 1;
        entry.1 += c.primary as u64;
    }
    let shards: Vec<u64> = per_index.values().map(|(s, _)| *s).collect();
    let primaries: Vec<u64> = per_index.values().map(|(_, p)| *p).collect();
    let replication: Vec<f64> = per_index
        .values()
        .map(|(s, p)| {
            if *p == 0 {
                0.0
            } else {
                (s - p) as f64 / *p as f64
            }
        })
        .collect();
    let total_shards = sum(shards.iter().copied());
    let total_primaries = sum(primaries.iter().copied());
    let shards_json = if per_index.is_empty() {
        json!({})
    } else {
        json!({
            "total": total_shards,
            "primaries": total_primaries,
            "replication": if total_primaries == 0 { 0.0 } else { (total_shards - total_primaries) as f64 / total_primaries as f64 },
            "index": {"shards": spread(&shards), "primaries": spread(&primaries), "replication": spread_ratios(&replication)},
        })
    };
    let primaries_only = || counts.values().filter(|c| c.primary);
    let mut types: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for index in &indices {
        let mut fields = BTreeMap::new();
        field_types(
            &index.metadata().mapping.to_json()["properties"],
            &mut fields,
        );
        for (kind, count) in fields {
            let entry = types.entry(kind).or_default();
            entry.0 += count;
            entry.1 += 1;
        }
    }
    let field_types: Vec<Value> = types
        .into_iter()
        .map(|(name, (count, index_count))| json!({"name": name, "count": count, "index_count": index_count}))
        .collect();

    let stats = node
        .fan_out(
            reports::NODES_STATS,
            json!({"metrics": ["os", "process", "jvm", "indices"], "index_metrics": ["segments"]}),
        )
        .await;
    let disks = node.fan_out(reports::DISK, json!({})).await;
    let answered: Vec<&Value> = stats.iter().filter_map(|(_, a)| a.as_ref().ok()).collect();
    let nodes: Vec<_> = stats.iter().map(|(target, _)| target).collect();
    let with_role = |role: &str| {
        nodes
            .iter()
            .filter(|n| n.roles.iter().any(|r| r == role))
            .count()
    };
    let number = |v: &Value, path: &[&str]| -> u64 {
        path.iter().fold(v, |v, key| &v[*key]).as_u64().unwrap_or(0)
    };
    let segments = sum(answered
        .iter()
        .map(|n| number(n, &["indices", "segments", "count"])));
    let cores = tessera_node::process_stats::cores() as u64;
    let mem_total = answered
        .iter()
        .map(|n| number(n, &["os", "mem", "total_in_bytes"]))
        .sum::<u64>();
    let mem_free = answered
        .iter()
        .map(|n| number(n, &["os", "mem", "free_in_bytes"]))
        .sum::<u64>();
    let percent = |part: u64| (part * 100).checked_div(mem_total).unwrap_or(0);
    let fds: Vec<u64> = answered
        .iter()
        .map(|n| number(n, &["process", "open_file_descriptors"]))
        .collect();
    let (disk_total, disk_available) =
        disks
            .iter()
            .filter_map(|(_, a)| a.as_ref().ok())
            .fold((0u64, 0u64), |(t, a), d| {
                (
                    t + d["total"].as_u64().unwrap_or(0),
                    a + d["available"].as_u64().unwrap_or(0),
                )
            });
    let state = node.cluster_state();
    let health = node.health(None);
    let body = json!({
        "_nodes": {"total": nodes.len(), "successful": answered.len(), "failed": nodes.len() - answered.len()},
        "cluster_name": state.cluster_name,
        "cluster_uuid": state.cluster_uuid,
        "timestamp": tessera_common::time::now_millis(),
        "status": health.status.as_str(),
        "indices": {
            "count": indices.len(),
            "shards": shards_json,
            "docs": {"count": sum(primaries_only().map(|c| c.docs)), "deleted": sum(primaries_only().map(|c| c.deleted))},
            "store": {"size_in_bytes": sum(counts.values().map(|c| c.store_bytes)), "reserved_in_bytes": 0},
            "fielddata": {"memory_size_in_bytes": 0, "evictions": 0},
            "query_cache": {"memory_size_in_bytes": 0, "total_count": 0, "hit_count": 0, "miss_count": 0, "cache_size": 0, "cache_count": 0, "evictions": 0},
            "completion": {"size_in_bytes": 0},
            "segments": {"count": segments, "memory_in_bytes": 0, "index_writer_memory_in_bytes": 0, "version_map_memory_in_bytes": 0, "fixed_bit_set_memory_in_bytes": 0, "file_sizes": {}},
            "mappings": {"field_types": field_types},
        },
        "nodes": {
            "count": {
                "total": nodes.len(),
                "cluster_manager": with_role("cluster_manager"),
                "master": with_role("cluster_manager"),
                "data": with_role("data"),
                "ingest": with_role("ingest"),
                "remote_cluster_client": with_role("remote_cluster_client"),
                "coordinating_only": nodes.iter().filter(|n| n.roles.is_empty()).count(),
                "search": with_role("search"),
            },
            "versions": [super::root::COMPATIBLE_VERSION],
            "os": {
                "available_processors": cores * nodes.len() as u64,
                "allocated_processors": cores * nodes.len() as u64,
                "names": [{"name": std::env::consts::OS, "count": nodes.len()}],
                "mem": {
                    "total_in_bytes": mem_total,
                    "free_in_bytes": mem_free,
                    "used_in_bytes": mem_total.saturating_sub(mem_free),
                    "free_percent": percent(mem_free),
                    "used_percent": percent(mem_total.saturating_sub(mem_free)),
                },
            },
            "process": {
                "cpu": {"percent": sum(answered.iter().map(|n| number(n, &["process", "cpu", "percent"])))},
                "open_file_descriptors": spread(&fds),
            },
            "jvm": {
                "max_uptime_in_millis": answered.iter().map(|n| number(n, &["jvm", "uptime_in_millis"])).max().unwrap_or(0),
                "mem": {
                    "heap_used_in_bytes": sum(answered.iter().map(|n| number(n, &["jvm", "mem", "heap_used_in_bytes"]))),
                    "heap_max_in_bytes": sum(answered.iter().map(|n| number(n, &["jvm", "mem", "heap_max_in_bytes"]))),
                },
                "threads": sum(answered.iter().map(|n| number(n, &["jvm", "threads", "count"]))),
            },
            "fs": {"total_in_bytes": disk_total, "free_in_bytes": disk_available, "available_in_bytes": disk_available, "cache_reserved_in_bytes": 0},
            "plugins": [],
            "network_types": {"transport_types": {"grpc": nodes.len()}, "http_types": {"hyper": nodes.len()}},
            "discovery_types": {(if node.coordination().is_some() { "etcd" } else { "single-node" }): nodes.len()},
            "packaging_types": [{"type": "tessera", "count": nodes.len()}],
        },
    });
    Ok(RestResponse::ok(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_types_count_nested_and_multi_fields() {
        let mut out = BTreeMap::new();
        field_types(
            &json!({
                "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                "user": {"properties": {"name": {"type": "keyword"}, "age": {"type": "long"}}}
            }),
            &mut out,
        );
        assert_eq!(out["keyword"], 2);
        assert_eq!(out["object"], 1);
        assert_eq!(out["text"], 1);
        assert_eq!(spread(&[1, 3]), json!({"min": 1, "max": 3, "avg": 2.0}));
    }
}
