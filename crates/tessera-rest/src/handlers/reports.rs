//! The node-local reports behind the cluster-wide APIs (`_nodes`, `_nodes/stats`, `_cat/nodes`,
//! `_cat/segments`, `_cat/allocation`, `_stats`, `_recovery`, `_cat/recovery`,
//! `_cat/segment_replication`): [`install`] gives the node the hook
//! `Node::fan_out` runs on every node of the cluster (here directly, elsewhere through the
//! `cluster:monitor/nodes/report[n]` transport action), and the helpers here merge the answers.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};
use tessera_cluster::DiscoveryNode;
use tessera_common::params::json_strings;
use tessera_common::{Error, Result};
use tessera_index::IndexService;
use tessera_node::coordination::recovery_state::{RecoveryState, RecoveryType, Stage};
use tessera_node::process_stats;
use tessera_node::Node;

use super::resolve_options;
use crate::request::RestRequest;

/// `_nodes` info of this node.
pub const NODES_INFO: &str = "nodes/info";
/// `_nodes/stats` of this node; params `{"metrics": [...], "index_metrics": [...]}`.
pub const NODES_STATS: &str = "nodes/stats";
/// `_cat/nodes` figures of this node (memory, cpu, load, pid).
pub const CAT_NODES: &str = "cat/nodes";
/// This node's thread pools (`_cat/thread_pool`): name, active, queue, rejected, largest,
/// completed, size and queue size of each.
pub const THREAD_POOLS: &str = "cat/thread_pool";
/// The segments of the copies this node holds; params `{"index_uuids": [...]}`.
pub const SEGMENTS: &str = "indices/segments";
/// Each started copy this node holds of some indices, with its segments (a copy with none is
/// listed too); for `_segments`.
pub const COPY_SEGMENTS: &str = "indices/segments/copies";
/// The disk of this node and what its copies take; for `_cat/allocation`.
pub const DISK: &str = "fs/allocation";
/// `_stats` sections of the copies this node holds, by index uuid; params
/// `{"index_uuids": [...], "shards": bool}` (with `shards`, each copy's own sections too).
pub const INDEX_STATS: &str = "indices/stats";

/// The recoveries of the copies this node holds (`RecoveryState`s); params
/// `{"index_uuids": [...]}`.
pub const RECOVERY: &str = "indices/recovery";
/// How far this node's replicas are behind their primaries; params `{"index_uuids": [...]}`.
pub const SEGMENT_REPLICATION: &str = "indices/segment_replication";

/// Installs the reports on `node` (holding it weakly: the node holds the hook).
pub fn install(node: &Arc<Node>) {
    let weak: Weak<Node> = Arc::downgrade(node);
    node.set_report_hook(Arc::new(move |report: &str, params: Value| {
        let node = weak.upgrade();
        let report = report.to_string();
        Box::pin(async move {
            let node = node
                .ok_or_else(|| Error::new("node_closed_exception", 503, "the node is stopped"))?;
            run(node, &report, params).await
        })
    }));
}

fn uuids(params: &Value) -> Vec<String> {
    json_strings(&params["index_uuids"])
}

async fn run(node: Arc<Node>, report: &str, params: Value) -> Result<Value> {
    let worker = node.clone();
    match report {
        NODES_INFO => Ok(super::nodes::local_info(&node)),
        NODES_STATS => {
            node.pools
                .management
                .run(move || {
                    let metrics = json_strings(&params["metrics"]);
                    let index_metrics = json_strings(&params["index_metrics"]);
                    let metrics: Vec<&str> = metrics.iter().map(String::as_str).collect();
                    let index_metrics: Vec<&str> =
                        index_metrics.iter().map(String::as_str).collect();
                    Ok(super::nodes::node_stats(&worker, &metrics, &index_metrics))
                })
                .await
        }
        CAT_NODES => {
            let (resident, _) = process_stats::process_memory();
            let (total, available) = process_stats::os_memory();
            let percent = |part: u64| (part * 100).checked_div(total).unwrap_or(0);
            let (_, os_cpu) = node.cpu.sample();
            let load = process_stats::load_average();
            Ok(json!({
                "heap_percent": percent(resident),
                "ram_percent": percent(total.saturating_sub(available)),
                "cpu": os_cpu,
                "load": load,
                "pid": std::process::id(),
            }))
        }
        THREAD_POOLS => Ok(Value::Array(
            node.pools
                .all()
                .iter()
                .map(|pool| {
                    let s = pool.stats();
                    json!({
                        "name": pool.name(), "active": s.active, "queue": s.queue,
                        "rejected": s.rejected, "largest": s.largest, "completed": s.completed,
                        "size": s.threads, "queue_size": s.queue_size,
                    })
                })
                .collect(),
        )),
        SEGMENTS => {
            let uuids = uuids(&params);
            node.pools
                .management
                .run(move || {
                    let mut rows = Vec::new();
                    for uuid in uuids {
                        let Some(index) = worker.index_by_uuid(&uuid) else {
                            continue;
                        };
                        for shard in index.shards() {
                            for segment in shard.segments()? {
                                rows.push(json!({
                                    "index_uuid": uuid,
                                    "shard": shard.shard_id,
                                    "primary": !shard.is_replica(),
                                    "segment": segment.name,
                                    "generation": segment.generation,
                                    "docs": segment.docs,
                                    "deleted": segment.deleted,
                                    "size": segment.size_in_bytes,
                                }));
                            }
                        }
                    }
                    Ok(Value::Array(rows))
                })
                .await
        }
        COPY_SEGMENTS => {
            let uuids = uuids(&params);
            node.pools
                .management
                .run(move || {
                    let mut copies = Vec::new();
                    for uuid in uuids {
                        let Some(index) = worker.index_by_uuid(&uuid) else {
                            continue;
                        };
                        for shard in index.shards() {
                            let segments: Vec<Value> = shard
                                .segments()?
                                .into_iter()
                                .map(|s| {
                                    json!({"name": s.name, "generation": s.generation, "docs": s.docs,
                                           "deleted": s.deleted, "size": s.size_in_bytes})
                                })
                                .collect();
                            copies.push(json!({
                                "index_uuid": uuid,
                                "shard": shard.shard_id,
                                "primary": !shard.is_replica(),
                                "segments": segments,
                            }));
                        }
                    }
                    Ok(Value::Array(copies))
                })
                .await
        }
        DISK => {
            node.pools
                .management
                .run(move || {
                    let indices: u64 = local_indices(&worker)
                        .iter()
                        .map(|index| index.store_size())
                        .sum();
                    let usage = tessera_node::disk::DiskUsage::of(&worker.config.data_path);
                    Ok(json!({
                        "indices": indices,
                        "total": usage.as_ref().map(|u| u.total),
                        "available": usage.as_ref().map(|u| u.available),
                    }))
                })
                .await
        }
        INDEX_STATS => {
            let uuids = uuids(&params);
            let per_shard = params["shards"].as_bool().unwrap_or(false);
            node.pools
                .management
                .run(move || {
                    let mut out = Map::new();
                    for uuid in uuids {
                        if let Some(index) = worker.index_by_uuid(&uuid) {
                            let copies = index.shards();
                            let primaries: Vec<_> =
                                copies.iter().filter(|s| !s.is_replica()).cloned().collect();
                            let mut stats = json!({
                                "primaries": super::nodes::shards_stats(&primaries),
                                "total": super::nodes::shards_stats(&copies),
                            });
                            if per_shard {
                                stats["shards"] = copy_stats(&worker.node_id, &copies);
                            }
                            out.insert(uuid, stats);
                        }
                    }
                    Ok(Value::Object(out))
                })
                .await
        }
        RECOVERY => {
            let uuids = uuids(&params);
            node.pools
                .management
                .run(move || Ok(Value::Array(recoveries(&worker, &uuids))))
                .await
        }
        SEGMENT_REPLICATION => {
            let uuids = uuids(&params);
            node.pools
                .management
                .run(move || Ok(Value::Array(replica_lags(&worker, &uuids))))
                .await
        }
        tessera_node::pinned_search::FREE_PINNED => {
            tessera_node::pinned_search::free_here(&node, &params)
        }
        tessera_node::pending_tasks::LIST => serde_json::to_value(node.pending_tasks_here())
            .map_err(|e| Error::internal("render the pending tasks", e)),
        tessera_node::pinned_search::LIST_PITS => Ok(tessera_node::pinned_search::pits_here(&node)),
        tessera_node::tasks::LIST
        | tessera_node::tasks::GET
        | tessera_node::tasks::CANCEL
        | tessera_node::tasks::RETHROTTLE => {
            tessera_node::tasks::run_report(&node, report, &params)
        }
        other => Err(Error::illegal_argument(format!(
            "unknown node report [{other}]"
        ))),
    }
}

/// The recoveries of this node's copies of `uuids`, as `RecoveryState` JSON. A member keeps
/// them as its copies open and recover; a single node has no copies to recover from, and
/// answers for its started primaries: `EMPTY_STORE` for an index created since it started,
/// else `EXISTING_STORE`, done when the node or the index started.
fn recoveries(node: &Node, uuids: &[String]) -> Vec<Value> {
    if let Some(coordination) = node.coordination() {
        // a failed recovery is tried again (or the copy goes elsewhere); a copy no longer
        // here has no recovery to show
        let held = |state: &RecoveryState| {
            node.index_by_uuid(&state.index_uuid)
                .is_some_and(|index| index.shard(state.shard).is_ok())
        };
        return coordination
            .recoveries()
            .of(uuids)
            .iter()
            .filter(|state| state.failure.is_none() && held(state))
            .filter_map(|state| serde_json::to_value(state).ok())
            .collect();
    }
    let target = node.local_node();
    let mut states = Vec::new();
    for uuid in uuids {
        let Some(index) = node.index_by_uuid(uuid) else {
            continue;
        };
        let metadata = index.metadata();
        let created = metadata.creation_date;
        let (kind, at) = match &metadata.restore {
            _ if created < node.started_millis => {
                (RecoveryType::ExistingStore, node.started_millis)
            }
            Some(_) => (RecoveryType::Snapshot, created),
            None => (RecoveryType::EmptyStore, created),
        };
        for shard in index.shards().iter().filter(|s| !s.is_replica()) {
            let mut state =
                RecoveryState::new(&index, shard.shard_id, kind, None, target.clone(), at);
            if kind == RecoveryType::Snapshot {
                state.snapshot = metadata.restore.clone();
                state.snapshot_copied();
            }
            state.stage = Stage::Done;
            state.stop_millis = Some(at);
            states.extend(serde_json::to_value(&state).ok());
        }
    }
    states
}

/// How far this node's replicas of `uuids` are behind the newest checkpoint their primaries
/// published to them (see `ReplicaLag::behind`); none on a single node.
fn replica_lags(node: &Node, uuids: &[String]) -> Vec<Value> {
    let Some(coordination) = node.coordination() else {
        return Vec::new();
    };
    let now = tessera_common::time::now_millis();
    let mut rows = Vec::new();
    for uuid in uuids {
        let Some(index) = node.index_by_uuid(uuid) else {
            continue;
        };
        for replica in index.shards().iter().filter(|s| s.is_replica()) {
            let lag = coordination.recoveries().lag(uuid, replica.shard_id);
            let held = replica.replica_checkpoint();
            let behind = lag.behind(held.as_ref(), |c| replica.missing_files(c), now);
            rows.push(json!({
                "index_uuid": uuid,
                "shard": replica.shard_id,
                "behind": behind,
            }));
        }
    }
    rows
}

/// The indices this node has open (in a cluster, every index of the state: its figures count
/// only the copies held here).
/// `_stats?level=shards`: each copy's sections with its routing, by shard id (a node holds at
/// most one copy of a shard).
fn copy_stats(node_id: &str, copies: &[Arc<tessera_index::shard::Shard>]) -> Value {
    let mut by_shard = Map::new();
    for copy in copies {
        let mut stats = Map::new();
        stats.insert(
            "routing".to_string(),
            json!({
                "state": "STARTED",
                "primary": !copy.is_replica(),
                "node": node_id,
                "relocating_node": null
            }),
        );
        if let Value::Object(sections) = super::nodes::shards_stats(std::slice::from_ref(copy)) {
            stats.extend(sections);
        }
        by_shard.insert(copy.shard_id.to_string(), json!([stats]));
    }
    Value::Object(by_shard)
}

pub fn local_indices(node: &Node) -> Vec<Arc<IndexService>> {
    node.index_names()
        .iter()
        .filter_map(|name| node.index(name))
        .collect()
}

/// The `_nodes` header of fanned-out answers: `total`, `successful`, `failed`, and
/// `failures` (OpenSearch's `failed_node_exception` per node) when some failed.
pub fn nodes_header(answers: &[(DiscoveryNode, Result<Value>)]) -> Value {
    let failures: Vec<Value> = answers
        .iter()
        .filter_map(|(target, answer)| answer.as_ref().err().map(|e| (target, e)))
        .map(|(target, e)| {
            json!({
                "type": "failed_node_exception",
                "reason": format!("Failed node [{}]", target.id),
                "node_id": target.id,
                "caused_by": {"type": e.kind(), "reason": e.reason()},
            })
        })
        .collect();
    let mut header = json!({
        "total": answers.len(),
        "successful": answers.len() - failures.len(),
        "failed": failures.len(),
    });
    if !failures.is_empty() {
        header["failures"] = Value::Array(failures);
    }
    header
}

/// The host of a `host:port` address.
pub fn host_of(address: &str) -> &str {
    address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']')
}

/// The port of a `host:port` address.
pub fn port_of(address: &str) -> Option<u64> {
    address.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

/// Adds `from` into `into`: numbers summed, objects merged key by key, anything else kept
/// from `into` (the first node's).
pub fn add_json(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            // an average over queries: weighted by each side's queries, not summed
            let average = |o: &Map<String, Value>| {
                let queries = o.get("concurrent_query_total")?.as_f64()?;
                Some((
                    o.get("concurrent_avg_slice_count")?.as_f64()? * queries,
                    queries,
                ))
            };
            let weighted = average(a).zip(average(b)).map(|((sa, qa), (sb, qb))| {
                if qa + qb == 0.0 {
                    0.0
                } else {
                    (sa + sb) / (qa + qb)
                }
            });
            for (key, value) in b {
                match a.get_mut(key) {
                    Some(existing) => add_json(existing, value),
                    None => {
                        a.insert(key.clone(), value.clone());
                    }
                }
            }
            if let Some(weighted) = weighted {
                a.insert("concurrent_avg_slice_count".into(), json!(weighted));
            }
        }
        (into @ Value::Number(_), Value::Number(b)) => {
            let sum = match (into.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => json!(x + y),
                _ => json!(into.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            };
            *into = sum;
        }
        _ => {}
    }
}

/// The indices the request names (all of them without `{index}`), as (uuid, name), and each
/// node's answer to `report` for them.
pub(crate) async fn ask(
    node: &Arc<Node>,
    request: &RestRequest,
    report: &str,
) -> Result<(Vec<(String, String)>, Vec<(DiscoveryNode, Value)>)> {
    let expression = request
        .path_params
        .get("index")
        .map(String::as_str)
        .unwrap_or("_all");
    let indices = node.resolve(expression, &resolve_options(request, true)?)?;
    let names: Vec<(String, String)> = indices
        .iter()
        .map(|index| {
            let meta = index.metadata();
            (meta.uuid.clone(), meta.name.clone())
        })
        .collect();
    let uuids: Vec<&String> = names.iter().map(|(uuid, _)| uuid).collect();
    let answers = node
        .fan_out(report, json!({ "index_uuids": uuids }))
        .await
        .into_iter()
        .filter_map(|(target, answer)| match answer {
            Ok(value) => Some((target, value)),
            Err(e) => {
                eprintln!("node [{}] did not send its {report}: {e}", target.id);
                None
            }
        })
        .collect();
    Ok((names, answers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_add_up_and_the_rest_stays() {
        let mut a = json!({"docs": {"count": 2, "deleted": 0}, "x": false, "avg": 1.5});
        add_json(
            &mut a,
            &json!({"docs": {"count": 3, "deleted": 1}, "x": true, "avg": 0.5, "new": 1}),
        );
        assert_eq!(
            a,
            json!({"docs": {"count": 5, "deleted": 1}, "x": false, "avg": 2.0, "new": 1})
        );
    }

    #[test]
    fn average_slice_counts_are_weighted_by_queries() {
        let mut a = json!({"concurrent_query_total": 1, "concurrent_avg_slice_count": 4.0});
        add_json(
            &mut a,
            &json!({"concurrent_query_total": 3, "concurrent_avg_slice_count": 2.0}),
        );
        assert_eq!(
            a,
            json!({"concurrent_query_total": 4, "concurrent_avg_slice_count": 2.5})
        );
        let mut none = json!({"concurrent_query_total": 0, "concurrent_avg_slice_count": 0.0});
        let other = none.clone();
        add_json(&mut none, &other);
        assert_eq!(none["concurrent_avg_slice_count"], 0.0);
    }

    #[test]
    fn a_single_node_reports_its_primaries_as_opened_from_their_store() {
        use tessera_common::settings::Settings;
        use tessera_mapping::Mapping;
        use tessera_node::NodeConfig;

        let dir = tempfile::tempdir().unwrap();
        let config = || NodeConfig {
            data_path: dir.path().join("data"),
            cluster_setting_defaults: tessera_node::disk::one_free_byte(),
            ..NodeConfig::default()
        };
        let node = Node::start(config()).unwrap();
        let settings = Settings::from_json(&json!({"index.number_of_shards": 2})).unwrap();
        let index = node
            .create_index("fresh", settings, Mapping::default())
            .unwrap();
        let uuid = index.metadata().uuid.clone();
        let states = recoveries(&node, std::slice::from_ref(&uuid));
        assert_eq!(states.len(), 2, "{states:?}");
        for (shard, state) in states.iter().enumerate() {
            assert_eq!(state["shard"], shard as u64);
            assert_eq!(state["kind"], "EMPTY_STORE");
            assert_eq!(state["stage"], "DONE");
            assert_eq!(state["primary"], true);
            assert_eq!(state["source"], Value::Null);
            assert_eq!(state["target"]["id"], node.node_id.as_str());
        }
        assert!(replica_lags(&node, std::slice::from_ref(&uuid)).is_empty());
        node.shutdown();
        drop(node);

        // started again: the shards come from the store
        let node = Node::start(config()).unwrap();
        node.wait_for_shards();
        let states = recoveries(&node, &[uuid]);
        assert_eq!(states.len(), 2, "{states:?}");
        assert!(
            states.iter().all(|s| s["kind"] == "EXISTING_STORE"),
            "{states:?}"
        );
        node.shutdown();
    }

    #[test]
    fn the_header_counts_failed_nodes() {
        let node = |id: &str| DiscoveryNode {
            id: id.into(),
            name: id.into(),
            ephemeral_id: String::new(),
            transport_address: "127.0.0.1:9300".into(),
            http_address: "127.0.0.1:9200".into(),
            roles: vec![],
        };
        let answers = vec![
            (node("a"), Ok(json!({}))),
            (node("b"), Err(Error::illegal_state("gone"))),
        ];
        let header = nodes_header(&answers);
        assert_eq!(header["total"], 2);
        assert_eq!(header["successful"], 1);
        assert_eq!(header["failed"], 1);
        assert_eq!(header["failures"][0]["node_id"], "b");
        assert_eq!(header["failures"][0]["type"], "failed_node_exception");
        assert_eq!(host_of("[::1]:9300"), "::1");
        assert_eq!(port_of("127.0.0.1:9300"), Some(9300));
    }
}
