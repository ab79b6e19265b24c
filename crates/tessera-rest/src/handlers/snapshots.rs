//! Snapshot APIs (`/_snapshot/...`, `_cat/snapshots`, `_cat/repositories`) over
//! `tessera_node::snapshots`: repositories, create, get, status, restore, delete, rendered in
//! OpenSearch 2.19's shapes.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_index::snapshot_files::ShardSnapshotStats;
use tessera_node::snapshots::create::{CreateRequest, Created};
use tessera_node::snapshots::restore::{RestoreRequest, Restored};
use tessera_node::snapshots::store::{self, SnapshotInfo};
use tessera_node::snapshots::{self, repository, InProgress};
use tessera_node::Node;

use crate::cat_table::{col, render, Cell, Column};
use crate::handlers::cat::clock;
use crate::request::RestRequest;
use crate::response::RestResponse;

/// OpenSearch's id of the version Tessera reports (2.19.0).
const VERSION_ID: u64 = 136_407_827;

fn acknowledged() -> RestResponse {
    RestResponse::ok(json!({"acknowledged": true}))
}

/// Runs `work` on the node's `management` pool.
async fn managed<T: Send + 'static>(
    node: &Arc<Node>,
    work: impl FnOnce(&Arc<Node>) -> Result<T> + Send + 'static,
) -> Result<T> {
    let worker = node.clone();
    node.pools.management.run(move || work(&worker)).await
}

/// Runs `work` on a thread of its own: a snapshot or restore waited for may copy for minutes,
/// which must not hold a pool's thread.
async fn on_own_thread<T: Send + 'static>(
    node: &Arc<Node>,
    work: impl FnOnce(&Arc<Node>) -> Result<T> + Send + 'static,
) -> Result<T> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let worker = node.clone();
    std::thread::Builder::new()
        .name("snapshot".into())
        .spawn(move || {
            let _ = sender.send(work(&worker));
        })
        .map_err(|e| Error::internal("start a snapshot thread", e))?;
    receiver
        .await
        .map_err(|_| Error::internal("wait for a snapshot thread", "it stopped"))?
}

/// `PUT|POST /_snapshot/{repository}`.
pub async fn put_repository(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let name = request.path_param("repository").to_string();
    let body = request.required_json_body()?;
    managed(&node, move |n| n.put_repository(&name, &body)).await?;
    Ok(acknowledged())
}

/// `GET /_snapshot[/{repository}]`.
pub async fn get_repositories(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let names = request.path_params.get("repository").map(String::as_str);
    let selected = repository::select(&node.cluster_state(), names)?;
    let out: Map<String, Value> = selected
        .into_iter()
        .map(|(name, repository)| (name, repository.to_json()))
        .collect();
    Ok(RestResponse::ok(Value::Object(out)))
}

/// `DELETE /_snapshot/{repository}`.
pub async fn delete_repository(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let names = request.path_param("repository").to_string();
    managed(&node, move |n| n.delete_repositories(&names)).await?;
    Ok(acknowledged())
}

/// `POST /_snapshot/{repository}/_verify`: the nodes that can write to it.
pub async fn verify_repository(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let name = request.path_param("repository").to_string();
    managed(&node, move |n| n.verify_repository(&name)).await?;
    let nodes: Map<String, Value> = node
        .cluster_state()
        .nodes
        .values()
        .map(|n| (n.id.clone(), json!({"name": n.name})))
        .collect();
    Ok(RestResponse::ok(json!({ "nodes": nodes })))
}

/// `PUT|POST /_snapshot/{repository}/{snapshot}`.
pub async fn create(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let repository = request.path_param("repository").to_string();
    let snapshot = request.path_param("snapshot").to_string();
    let body = request.json_body()?;
    let create = CreateRequest::parse(body.as_ref())?;
    let wait = request.param_bool("wait_for_completion", false)?;
    let created = on_own_thread(&node, move |n| {
        n.create_snapshot(&repository, &snapshot, create, wait)
    })
    .await?;
    Ok(RestResponse::ok(match created {
        Created::Done(info) => json!({ "snapshot": render_info(&info) }),
        Created::Accepted => json!({"accepted": true}),
    }))
}

fn iso(millis: i64) -> String {
    tessera_date::DateFormat::default_format().format_millis(millis, None)
}

/// A finished snapshot as `GET /_snapshot/{repo}/{snapshot}` shows it.
fn render_info(info: &SnapshotInfo) -> Value {
    let (total, failed) = info.shard_counts();
    let failures: Vec<Value> = info
        .indices
        .iter()
        .flat_map(|index| {
            index.shards.iter().filter_map(move |shard| {
                let failure = shard.failure.as_ref()?;
                Some(json!({
                    "index": index.name,
                    "index_uuid": index.uuid,
                    "shard_id": shard.shard,
                    "reason": failure.reason,
                    "node_id": failure.node_id,
                    "status": failure.status,
                }))
            })
        })
        .collect();
    let mut out = json!({
        "snapshot": info.snapshot,
        "uuid": info.uuid,
        "version_id": VERSION_ID,
        "version": crate::handlers::root::COMPATIBLE_VERSION,
        "remote_store_index_shallow_copy": false,
        "indices": info.indices.iter().map(|i| i.name.clone()).collect::<Vec<_>>(),
        "data_streams": [],
        "include_global_state": info.include_global_state,
    });
    if let Some(metadata) = &info.metadata {
        out["metadata"] = metadata.clone();
    }
    let rest = json!({
        "state": info.state(),
        "start_time": iso(info.start_time_millis),
        "start_time_in_millis": info.start_time_millis,
        "end_time": iso(info.end_time_millis),
        "end_time_in_millis": info.end_time_millis,
        "duration_in_millis": info.end_time_millis - info.start_time_millis,
        "failures": failures,
        "shards": {"total": total, "failed": failed, "successful": total - failed},
    });
    if let (Value::Object(out), Value::Object(rest)) = (&mut out, rest) {
        out.extend(rest);
    }
    out
}

/// A snapshot being written, as `GET /_snapshot/{repo}/{snapshot}` shows it.
fn render_in_progress(entry: &InProgress) -> Value {
    let mut out = json!({
        "snapshot": entry.snapshot,
        "uuid": entry.uuid,
        "version_id": VERSION_ID,
        "version": crate::handlers::root::COMPATIBLE_VERSION,
        "remote_store_index_shallow_copy": false,
        "indices": entry.indices,
        "data_streams": [],
        "include_global_state": entry.include_global_state,
    });
    if let Some(metadata) = &entry.metadata {
        out["metadata"] = metadata.clone();
    }
    let rest = json!({
        "state": "IN_PROGRESS",
        "start_time": iso(entry.start_time_millis),
        "start_time_in_millis": entry.start_time_millis,
        "end_time_in_millis": 0,
        "duration_in_millis": 0,
        "failures": [],
        "shards": {"total": 0, "failed": 0, "successful": 0},
    });
    if let (Value::Object(out), Value::Object(rest)) = (&mut out, rest) {
        out.extend(rest);
    }
    out
}

/// The finished and running snapshots of a repository whose names match `pattern`.
enum Found {
    Finished(SnapshotInfo),
    Running(InProgress),
}

/// A name without a wildcard that matches none is `snapshot_missing_exception`, unless
/// `ignore_unavailable`.
fn find_snapshots(
    node: &Node,
    repository: &str,
    names: &str,
    ignore_unavailable: bool,
) -> Result<Vec<Found>> {
    let location = repository::get(&node.cluster_state(), repository)?
        .location(repository, &node.config.path_repo)?;
    let finished = store::list(&location)?;
    let running = snapshots::in_progress(&node.cluster_state(), Some(repository));
    let mut out = Vec::new();
    for pattern in names.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let all = pattern == "_all" || pattern == "*";
        let matches = |name: &str| all || tessera_mapping::dynamic::simple_match(pattern, name);
        let before = out.len();
        for info in finished.iter().filter(|i| matches(&i.snapshot)) {
            out.push(Found::Finished(info.clone()));
        }
        for entry in running.iter().filter(|e| matches(&e.snapshot)) {
            out.push(Found::Running(entry.clone()));
        }
        if out.len() == before && !all && !pattern.contains('*') && !ignore_unavailable {
            return Err(snapshots::snapshot_missing(repository, pattern));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|found| {
        seen.insert(match found {
            Found::Finished(info) => info.snapshot.clone(),
            Found::Running(entry) => entry.snapshot.clone(),
        })
    });
    Ok(out)
}

/// `GET /_snapshot/{repository}/{snapshot}` (names, patterns, `_all`).
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let repository = request.path_param("repository").to_string();
    let names = request.path_param("snapshot").to_string();
    let ignore_unavailable = request.param_bool("ignore_unavailable", false)?;
    let verbose = request.param_bool("verbose", true)?;
    let found = managed(&node, move |n| {
        find_snapshots(n, &repository, &names, ignore_unavailable)
    })
    .await?;
    let rendered: Vec<Value> = found
        .iter()
        .map(|found| {
            let full = match found {
                Found::Finished(info) => render_info(info),
                Found::Running(entry) => render_in_progress(entry),
            };
            if verbose {
                return full;
            }
            // `verbose=false`: what the repository's index alone knows
            let brief: Map<String, Value> =
                ["snapshot", "uuid", "indices", "data_streams", "state"]
                    .into_iter()
                    .map(|key| (key.to_string(), full[key].clone()))
                    .collect();
            Value::Object(brief)
        })
        .collect();
    Ok(RestResponse::ok(json!({ "snapshots": rendered })))
}

/// `DELETE /_snapshot/{repository}/{snapshots}` (names and patterns).
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let repository = request.path_param("repository").to_string();
    let snapshot = request.path_param("snapshot").to_string();
    managed(&node, move |n| n.delete_snapshots(&repository, &snapshot)).await?;
    Ok(acknowledged())
}

fn shards_stats(done: u64, failed: u64, total: u64) -> Value {
    json!({
        "initializing": 0,
        "started": total.saturating_sub(done),
        "finalizing": 0,
        "done": done.saturating_sub(failed),
        "failed": failed,
        "total": total,
    })
}

fn stats_json(stats: &ShardSnapshotStats) -> Value {
    json!({
        "incremental": {"file_count": stats.incremental_files, "size_in_bytes": stats.incremental_bytes},
        "total": {"file_count": stats.total_files, "size_in_bytes": stats.total_bytes},
        "start_time_in_millis": stats.start_time_millis,
        "time_in_millis": stats.time_millis,
    })
}

/// The sum of shard figures (the earliest start, the span to the latest end).
fn summed<'a>(all: impl Iterator<Item = &'a ShardSnapshotStats>) -> ShardSnapshotStats {
    let mut sum = ShardSnapshotStats::default();
    let (mut start, mut end) = (i64::MAX, 0i64);
    for s in all {
        sum.incremental_files += s.incremental_files;
        sum.incremental_bytes += s.incremental_bytes;
        sum.total_files += s.total_files;
        sum.total_bytes += s.total_bytes;
        start = start.min(s.start_time_millis);
        end = end.max(s.start_time_millis + s.time_millis);
    }
    if start != i64::MAX {
        sum.start_time_millis = start;
        sum.time_millis = end - start;
    }
    sum
}

fn status_of_finished(repository: &str, info: &SnapshotInfo) -> Value {
    let (total, failed) = info.shard_counts();
    let mut indices = Map::new();
    for index in &info.indices {
        let failed_here = index.shards.iter().filter(|s| s.failure.is_some()).count() as u64;
        let shards: Map<String, Value> = index
            .shards
            .iter()
            .map(|shard| {
                let value = match (&shard.stats, &shard.failure) {
                    (Some(stats), _) => json!({"stage": "DONE", "stats": stats_json(stats)}),
                    (None, failure) => json!({
                        "stage": "FAILURE",
                        "stats": stats_json(&ShardSnapshotStats::default()),
                        "reason": failure.as_ref().map(|f| f.reason.clone()),
                    }),
                };
                (shard.shard.to_string(), value)
            })
            .collect();
        let n = index.shards.len() as u64;
        indices.insert(
            index.name.clone(),
            json!({
                "shards_stats": shards_stats(n, failed_here, n),
                "stats": stats_json(&summed(index.shards.iter().filter_map(|s| s.stats.as_ref()))),
                "shards": shards,
            }),
        );
    }
    let mut stats = summed(
        info.indices
            .iter()
            .flat_map(|i| i.shards.iter().filter_map(|s| s.stats.as_ref())),
    );
    stats.start_time_millis = info.start_time_millis;
    stats.time_millis = info.end_time_millis - info.start_time_millis;
    json!({
        "snapshot": info.snapshot,
        "repository": repository,
        "uuid": info.uuid,
        "state": info.state(),
        "include_global_state": info.include_global_state,
        "shards_stats": shards_stats(total as u64, failed as u64, total as u64),
        "stats": stats_json(&stats),
        "indices": indices,
    })
}

fn status_of_running(entry: &InProgress) -> Value {
    let stats = ShardSnapshotStats {
        start_time_millis: entry.start_time_millis,
        time_millis: tessera_common::time::now_millis() - entry.start_time_millis,
        ..ShardSnapshotStats::default()
    };
    json!({
        "snapshot": entry.snapshot,
        "repository": entry.repository,
        "uuid": entry.uuid,
        "state": "STARTED",
        "include_global_state": entry.include_global_state,
        "shards_stats": shards_stats(entry.done_shards, entry.failed_shards, entry.total_shards),
        "stats": stats_json(&stats),
        "indices": {},
    })
}

/// `GET /_snapshot[/{repository}[/{snapshot}]]/_status`: without a snapshot, those running.
pub async fn status(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let repository = request.path_params.get("repository").cloned();
    let Some(snapshot) = request.path_params.get("snapshot").cloned() else {
        if let Some(name) = &repository {
            repository::get(&node.cluster_state(), name)?;
        }
        let running = snapshots::in_progress(&node.cluster_state(), repository.as_deref());
        let rendered: Vec<Value> = running.iter().map(status_of_running).collect();
        return Ok(RestResponse::ok(json!({ "snapshots": rendered })));
    };
    let repository = repository.unwrap_or_default();
    let name = repository.clone();
    let ignore_unavailable = request.param_bool("ignore_unavailable", false)?;
    let found = managed(&node, move |n| {
        find_snapshots(n, &name, &snapshot, ignore_unavailable)
    })
    .await?;
    let rendered: Vec<Value> = found
        .iter()
        .map(|found| match found {
            Found::Finished(info) => status_of_finished(&repository, info),
            Found::Running(entry) => status_of_running(entry),
        })
        .collect();
    Ok(RestResponse::ok(json!({ "snapshots": rendered })))
}

/// `POST /_snapshot/{repository}/{snapshot}/_restore`.
pub async fn restore(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let repository = request.path_param("repository").to_string();
    let snapshot = request.path_param("snapshot").to_string();
    let body = request.json_body()?;
    let restore = RestoreRequest::parse(body.as_ref())?;
    let wait = request.param_bool("wait_for_completion", false)?;
    let restored = on_own_thread(&node, move |n| {
        n.restore_snapshot(&repository, &snapshot, restore, wait)
    })
    .await?;
    Ok(RestResponse::ok(match restored {
        Restored::Done {
            snapshot,
            indices,
            total,
            failed,
        } => json!({"snapshot": {
            "snapshot": snapshot,
            "indices": indices,
            "shards": {"total": total, "failed": failed, "successful": total - failed},
        }}),
        Restored::Accepted => json!({"accepted": true}),
    }))
}

static SNAPSHOTS: &[Column] = &[
    col("id", "id,snapshot", "unique snapshot", false, true),
    col("status", "s,status", "snapshot name", false, true),
    col(
        "start_epoch",
        "ste,startEpoch",
        "start time in seconds since 1970-01-01 00:00:00",
        true,
        true,
    ),
    col(
        "start_time",
        "sti,startTime",
        "start time in HH:MM:SS",
        false,
        true,
    ),
    col(
        "end_epoch",
        "ete,endEpoch",
        "end time in seconds since 1970-01-01 00:00:00",
        true,
        true,
    ),
    col(
        "end_time",
        "eti,endTime",
        "end time in HH:MM:SS",
        false,
        true,
    ),
    col("duration", "dur,duration", "duration", true, true),
    col("indices", "i,indices", "number of indices", true, true),
    col(
        "successful_shards",
        "ss,successful_shards",
        "number of successful shards",
        true,
        true,
    ),
    col(
        "failed_shards",
        "fs,failed_shards",
        "number of failed shards",
        true,
        true,
    ),
    col(
        "total_shards",
        "ts,total_shards",
        "number of total shards",
        true,
        true,
    ),
    col("reason", "r,reason", "reason for failures", false, false),
];

/// `GET /_cat/snapshots/{repository}`.
pub async fn cat_snapshots(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let Some(repository) = request.path_params.get("repository").cloned() else {
        return Err(Error::new(
            "action_request_validation_exception",
            400,
            "Validation Failed: 1: repository is missing;",
        ));
    };
    let found = managed(&node, move |n| {
        find_snapshots(n, &repository, "_all", false)
    })
    .await?;
    let rows = found
        .iter()
        .map(|found| match found {
            Found::Finished(info) => {
                let (total, failed) = info.shard_counts();
                let (start_epoch, start_time) = clock(info.start_time_millis);
                let (end_epoch, end_time) = clock(info.end_time_millis);
                let duration = (info.end_time_millis - info.start_time_millis).max(0) as u64;
                let reason = info
                    .indices
                    .iter()
                    .flat_map(|i| i.shards.iter())
                    .filter_map(|s| s.failure.as_ref().map(|f| f.reason.clone()))
                    .next();
                vec![
                    Cell::from(info.snapshot.clone()),
                    Cell::from(info.state()),
                    Cell::from(start_epoch),
                    Cell::from(start_time),
                    Cell::from(end_epoch),
                    Cell::from(end_time),
                    Cell::from(tessera_common::time::format_time_value(duration)),
                    Cell::from(info.indices.len()),
                    Cell::from(total - failed),
                    Cell::from(failed),
                    Cell::from(total),
                    reason.map_or(Cell::Null, Cell::from),
                ]
            }
            Found::Running(entry) => {
                let (start_epoch, start_time) = clock(entry.start_time_millis);
                vec![
                    Cell::from(entry.snapshot.clone()),
                    Cell::from("IN_PROGRESS"),
                    Cell::from(start_epoch),
                    Cell::from(start_time),
                    Cell::from("0"),
                    Cell::from("00:00:00"),
                    Cell::from("0s"),
                    Cell::from(entry.indices.len()),
                    Cell::from(0u64),
                    Cell::from(0u64),
                    Cell::from(0u64),
                    Cell::Null,
                ]
            }
        })
        .collect();
    render(&request, SNAPSHOTS, rows)
}

static REPOSITORIES: &[Column] = &[
    col("id", "id,repoId", "unique repository id", false, true),
    col("type", "t,type", "repository type", false, true),
];

/// `GET /_cat/repositories`.
pub async fn cat_repositories(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let rows = repository::repositories(&node.cluster_state())
        .into_iter()
        .map(|(name, repository)| vec![Cell::from(name), Cell::from(repository.kind)])
        .collect();
    render(&request, REPOSITORIES, rows)
}
