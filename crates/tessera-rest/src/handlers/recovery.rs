//! `_recovery`, `_cat/recovery` and `_cat/segment_replication`: how the copies of the shards
//! came to be, and how far the replicas are behind their primaries, as OpenSearch shows them.
//! Each node keeps its own copies' recoveries and lags (`tessera_node::coordination::
//! recovery_state`); these handlers ask every node ([`reports::RECOVERY`],
//! [`reports::SEGMENT_REPLICATION`]) and merge the answers.
//!
//! A node shows the recoveries of the copies it holds now, not those that failed (they are
//! tried again); `detailed` adds each file of a recovery (name, length, reused, bytes copied).
//! Segment replication has no operations to replay: the translog figures are 0 (100%), and
//! the `verify_index` and throttle times 0. `_cat/segment_replication`'s figures for a replica
//! compare the checkpoint it holds with the newest its primary published to it:
//! `checkpoints_behind` (commit generations), `bytes_behind` (the files of the newest it
//! lacks), `current_lag` (since that publication arrived, while not applied),
//! `last_completed_lag` (from the arrival of the last applied publication to its apply), and
//! `rejected_requests` (always 0: Tessera applies back pressure by waiting, not rejecting).

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_cluster::DiscoveryNode;
use tessera_common::{Error, Result};
use tessera_node::coordination::recovery_state::{recovered_percent, Behind, RecoveryState, Stage};
use tessera_node::Node;

use super::reports::{self, host_of};
use crate::cat_table::{col, render, Cell, Column};
use crate::request::RestRequest;
use crate::response::RestResponse;

/// The URL parameters of `_recovery`.
pub const RECOVERY_PARAMS: &[&str] = &[
    "active_only",
    "detailed",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];

/// Every node's recoveries of the named indices, by index (in the order resolved) then shard,
/// primaries first; only those not done with `active_only`.
async fn recoveries(
    node: &Arc<Node>,
    request: &RestRequest,
) -> Result<Vec<(String, Vec<RecoveryState>)>> {
    let active_only = request.param_bool("active_only", false)?;
    request.param_bool("detailed", false)?;
    let (names, answers) = reports::ask(node, request, reports::RECOVERY).await?;
    let mut states: Vec<RecoveryState> = answers
        .into_iter()
        .flat_map(|(_, answer)| match answer {
            Value::Array(states) => states,
            _ => Vec::new(),
        })
        .filter_map(|state| serde_json::from_value(state).ok())
        .filter(|state: &RecoveryState| !active_only || state.stage != Stage::Done)
        .collect();
    states.sort_by_key(|state| (state.shard, !state.primary, state.target.name.clone()));
    Ok(names
        .into_iter()
        .map(|(uuid, name)| {
            let of_index = states
                .iter()
                .filter(|state| state.index_uuid == uuid)
                .cloned()
                .collect();
            (name, of_index)
        })
        .collect())
}

fn percent(value: f64) -> String {
    format!("{value:.1}%")
}

fn node_json(node: &DiscoveryNode) -> Value {
    let host = host_of(&node.transport_address);
    json!({
        "id": node.id,
        "host": host,
        "transport_address": node.transport_address,
        "ip": host,
        "name": node.name,
    })
}

/// One shard's recovery as `_recovery` shows it, at `now`; with `detailed`, each file.
pub fn recovery_json(state: &RecoveryState, detailed: bool, now: i64) -> Value {
    let mut shard = json!({
        "id": state.shard,
        "type": state.kind.name(),
        "stage": state.stage.name(),
        "primary": state.primary,
        "start_time_in_millis": state.start_millis,
    });
    if let Some(stop) = state.stop_millis {
        shard["stop_time_in_millis"] = json!(stop);
    }
    shard["total_time_in_millis"] = json!(state.total_millis(now));
    shard["source"] = match (&state.snapshot, &state.source) {
        (Some(snapshot), _) => json!({
            "repository": snapshot.repository,
            "snapshot": snapshot.snapshot,
            "version": crate::handlers::root::COMPATIBLE_VERSION,
            "index": snapshot.index,
            "isSearchableSnapshot": false,
            "remoteStoreIndexShallowCopy": false,
            "sourceRemoteStoreRepository": null,
            "sourceRemoteTranslogRepository": null,
        }),
        (None, source) => source.as_ref().map_or(json!({}), node_json),
    };
    shard["target"] = node_json(&state.target);
    shard["index"] = json!({
        "size": {
            "total_in_bytes": state.bytes_total,
            "reused_in_bytes": state.bytes_reused,
            "recovered_in_bytes": state.bytes_recovered,
            "percent": percent(recovered_percent(
                state.bytes_total,
                state.bytes_reused,
                state.bytes_recovered,
            )),
        },
        "files": {
            "total": state.files_total,
            "reused": state.files_reused,
            "recovered": state.files_recovered,
            "percent": percent(recovered_percent(
                state.files_total,
                state.files_reused,
                state.files_recovered,
            )),
        },
        "total_time_in_millis": state.index_millis(now),
        "source_throttle_time_in_millis": 0,
        "target_throttle_time_in_millis": 0,
    });
    if detailed {
        let details: Vec<Value> = state
            .files
            .iter()
            .map(|file| {
                json!({
                    "name": file.name,
                    "length_in_bytes": file.length,
                    "reused": file.reused,
                    "recovered_in_bytes": file.recovered,
                })
            })
            .collect();
        shard["index"]["files"]["details"] = Value::Array(details);
    }
    shard["translog"] = json!({
        "recovered": 0,
        "total": 0,
        "percent": "100.0%",
        "total_on_start": 0,
        "total_time_in_millis": 0,
    });
    shard["verify_index"] = json!({
        "check_index_time_in_millis": 0,
        "total_time_in_millis": 0,
    });
    shard
}

/// `GET [/{index}]/_recovery`: every node's recoveries of its copies.
pub async fn recovery(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let now = tessera_common::time::now_millis();
    let detailed = request.param_bool("detailed", false)?;
    let mut out = Map::new();
    for (name, states) in recoveries(&node, &request).await? {
        if states.is_empty() {
            continue;
        }
        let shards: Vec<Value> = states
            .iter()
            .map(|s| recovery_json(s, detailed, now))
            .collect();
        out.insert(name, json!({ "shards": shards }));
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

/// A duration as OpenSearch's `TimeValue` prints it (`510ms`, `1.5s`, `0s`), or in the unit of
/// the request's `time`.
pub(super) fn duration(request: &RestRequest, millis: u64) -> Result<Cell> {
    if let Some(unit) = request.param("time") {
        let value = match unit {
            "d" => millis / 86_400_000,
            "h" => millis / 3_600_000,
            "m" => millis / 60_000,
            "s" => millis / 1_000,
            "ms" => millis,
            "micros" => millis * 1_000,
            "nanos" => millis * 1_000_000,
            other => {
                return Err(Error::illegal_argument(format!(
                    "failed to parse [{other}] as a time unit"
                )))
            }
        };
        return Ok(Cell::from(value));
    }
    Ok(Cell::from(time_value(millis)))
}

/// OpenSearch's `TimeValue.toString()` of `millis`.
pub fn time_value(millis: u64) -> String {
    if millis == 0 {
        return "0s".into();
    }
    let (unit, suffix) = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ]
    .into_iter()
    .find(|(unit, _)| millis >= *unit)
    .unwrap_or((1, "ms"));
    let value = format!("{:.1}", millis as f64 / unit as f64);
    format!("{}{suffix}", value.trim_end_matches(".0"))
}

static RECOVERY: &[Column] = &[
    col("index", "i,idx", "index name", false, true),
    col("shard", "s,sh", "shard name", false, true),
    col("start_time", "start", "recovery start time", false, false),
    col(
        "start_time_millis",
        "start_millis",
        "recovery start time in epoch milliseconds",
        false,
        false,
    ),
    col("stop_time", "stop", "recovery stop time", false, false),
    col(
        "stop_time_millis",
        "stop_millis",
        "recovery stop time in epoch milliseconds",
        false,
        false,
    ),
    col("time", "t,ti", "recovery time", false, true),
    col("type", "ty", "recovery type", false, true),
    col("stage", "st", "recovery stage", false, true),
    col("source_host", "shost", "source host", false, true),
    col("source_node", "snode", "source node name", false, true),
    col("target_host", "thost", "target host", false, true),
    col("target_node", "tnode", "target node name", false, true),
    col("repository", "rep", "repository", false, true),
    col("snapshot", "snap", "snapshot", false, true),
    col("files", "f", "number of files to recover", false, true),
    col("files_recovered", "fr", "files recovered", false, true),
    col(
        "files_percent",
        "fp",
        "percent of files recovered",
        false,
        true,
    ),
    col("files_total", "tf", "total number of files", false, true),
    col("bytes", "b", "number of bytes to recover", false, true),
    col("bytes_recovered", "br", "bytes recovered", false, true),
    col(
        "bytes_percent",
        "bp",
        "percent of bytes recovered",
        false,
        true,
    ),
    col("bytes_total", "tb", "total number of bytes", false, true),
    col(
        "translog_ops",
        "to",
        "number of translog ops to recover",
        false,
        true,
    ),
    col(
        "translog_ops_recovered",
        "tor",
        "translog ops recovered",
        false,
        true,
    ),
    col(
        "translog_ops_percent",
        "top",
        "percent of translog ops recovered",
        false,
        true,
    ),
];

fn date(millis: i64) -> String {
    tessera_date::DateFormat::default_format().format_millis(millis, None)
}

/// `_cat/recovery[/{index}]`: the rows of `_recovery`.
pub async fn cat_recovery(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let now = tessera_common::time::now_millis();
    let mut rows = Vec::new();
    for (name, states) in recoveries(&node, &request).await? {
        for state in states {
            let source = state.source.as_ref();
            let stop = state.stop_millis.unwrap_or(0);
            rows.push(vec![
                Cell::from(name.clone()),
                Cell::from(state.shard),
                Cell::from(date(state.start_millis)),
                Cell::from(state.start_millis),
                Cell::from(date(stop)),
                Cell::from(stop),
                duration(&request, state.total_millis(now))?,
                Cell::from(state.kind.name().to_lowercase()),
                Cell::from(state.stage.name().to_lowercase()),
                Cell::from(source.map_or("n/a", |n| host_of(&n.transport_address))),
                Cell::from(source.map_or("n/a", |n| n.name.as_str())),
                Cell::from(host_of(&state.target.transport_address)),
                Cell::from(state.target.name.clone()),
                Cell::from(
                    state
                        .snapshot
                        .as_ref()
                        .map_or("n/a", |s| s.repository.as_str()),
                ),
                Cell::from(
                    state
                        .snapshot
                        .as_ref()
                        .map_or("n/a", |s| s.snapshot.as_str()),
                ),
                Cell::from(state.files_total - state.files_reused),
                Cell::from(state.files_recovered),
                Cell::from(percent(recovered_percent(
                    state.files_total,
                    state.files_reused,
                    state.files_recovered,
                ))),
                Cell::from(state.files_total),
                Cell::from(state.bytes_total - state.bytes_reused),
                Cell::from(state.bytes_recovered),
                Cell::from(percent(recovered_percent(
                    state.bytes_total,
                    state.bytes_reused,
                    state.bytes_recovered,
                ))),
                Cell::from(state.bytes_total),
                Cell::from(0u64),
                Cell::from(0u64),
                Cell::from("100.0%"),
            ]);
        }
    }
    render(&request, RECOVERY, rows)
}

static SEGMENT_REPLICATION: &[Column] = &[
    col("shardId", "s", "shard Id", false, true),
    col("target_node", "tnode", "target node name", false, true),
    col("target_host", "thost", "target host", false, true),
    col(
        "checkpoints_behind",
        "cpb",
        "checkpoints behind primary",
        false,
        true,
    ),
    col("bytes_behind", "bb", "bytes behind primary", false, true),
    col(
        "current_lag",
        "clag",
        "ongoing time elapsed waiting for replica to catch up to primary",
        false,
        true,
    ),
    col(
        "last_completed_lag",
        "lcl",
        "time taken for replica to catch up to latest primary refresh",
        false,
        true,
    ),
    col(
        "rejected_requests",
        "rr",
        "count of rejected requests for the replication group",
        false,
        true,
    ),
];

/// `_cat/segment_replication[/{index}]`: every replica, and how far it is behind the newest
/// checkpoint its primary published to it; only those behind with `active_only`, only the
/// shard ids listed in `shards`.
pub async fn cat_segment_replication(
    node: Arc<Node>,
    request: RestRequest,
) -> Result<RestResponse> {
    let active_only = request.param_bool("active_only", false)?;
    request.param_bool("detailed", false)?;
    // every row shows both the ongoing lag and the last completed one
    request.param_bool("completed_only", false)?;
    let shards: Option<Vec<u64>> = request.param("shards").map(|list| {
        list.split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    });
    let (names, answers) = reports::ask(&node, &request, reports::SEGMENT_REPLICATION).await?;
    // (index position, shard, node name) orders the rows
    let mut keyed = Vec::new();
    for (target, answer) in answers {
        let Value::Array(replicas) = answer else {
            continue;
        };
        for replica in replicas {
            let Some(position) = names
                .iter()
                .position(|(uuid, _)| Some(uuid.as_str()) == replica["index_uuid"].as_str())
            else {
                continue;
            };
            let Ok(behind) = serde_json::from_value::<Behind>(replica["behind"].clone()) else {
                continue;
            };
            if active_only && behind.checkpoints == 0 {
                continue;
            }
            let shard = replica["shard"].as_u64().unwrap_or(0);
            if shards.as_ref().is_some_and(|only| !only.contains(&shard)) {
                continue;
            }
            keyed.push((
                (position, shard, target.name.clone()),
                vec![
                    Cell::from(format!("[{}][{shard}]", names[position].1)),
                    Cell::from(target.name.clone()),
                    Cell::from(host_of(&target.transport_address)),
                    Cell::from(behind.checkpoints),
                    Cell::Bytes(behind.bytes),
                    duration(&request, behind.current_lag_millis)?,
                    duration(&request, behind.last_completed_lag_millis)?,
                    Cell::from(0u64),
                ],
            ));
        }
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    render(
        &request,
        SEGMENT_REPLICATION,
        keyed.into_iter().map(|(_, row)| row).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_node::coordination::recovery_state::{FileDetail, RecoveryType};

    fn node(id: &str, address: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.into(),
            name: format!("node-{id}"),
            ephemeral_id: String::new(),
            transport_address: address.into(),
            http_address: String::new(),
            roles: vec![],
        }
    }

    #[test]
    fn durations_print_as_opensearch_time_values() {
        assert_eq!(time_value(0), "0s");
        assert_eq!(time_value(510), "510ms");
        assert_eq!(time_value(1_000), "1s");
        assert_eq!(time_value(1_500), "1.5s");
        assert_eq!(time_value(90_000), "1.5m");
        assert_eq!(time_value(7_200_000), "2h");
    }

    #[test]
    fn a_peer_recovery_renders_as_opensearch_does() {
        let mut state = RecoveryState::blank(
            1,
            RecoveryType::Peer,
            Some(node("a", "127.0.0.1:9300")),
            node("b", "127.0.0.2:9301"),
            1_000,
        );
        state.stage = Stage::Done;
        state.stop_millis = Some(1_250);
        (state.files_total, state.files_reused, state.files_recovered) = (4, 1, 3);
        (state.bytes_total, state.bytes_reused, state.bytes_recovered) = (400, 100, 300);
        state.index_start_millis = Some(1_010);
        state.index_stop_millis = Some(1_200);
        state.files = vec![FileDetail {
            name: "a".into(),
            length: 300,
            reused: false,
            recovered: 300,
        }];
        let shard = recovery_json(&state, false, 5_000);
        assert_eq!(shard["index"]["files"].get("details"), None);
        let shard = recovery_json(&state, true, 5_000);
        assert_eq!(
            shard["index"]["files"]["details"],
            json!([{"name": "a", "length_in_bytes": 300, "reused": false,
                    "recovered_in_bytes": 300}])
        );
        assert_eq!(shard["id"], 1);
        assert_eq!(shard["type"], "PEER");
        assert_eq!(shard["stage"], "DONE");
        assert_eq!(shard["primary"], false);
        assert_eq!(shard["stop_time_in_millis"], 1_250);
        assert_eq!(shard["total_time_in_millis"], 250);
        assert_eq!(
            shard["source"],
            json!({"id": "a", "host": "127.0.0.1", "transport_address": "127.0.0.1:9300",
                   "ip": "127.0.0.1", "name": "node-a"})
        );
        assert_eq!(shard["target"]["host"], "127.0.0.2");
        assert_eq!(
            shard["index"]["size"],
            json!({"total_in_bytes": 400, "reused_in_bytes": 100, "recovered_in_bytes": 300,
                   "percent": "100.0%"})
        );
        assert_eq!(shard["index"]["files"]["percent"], "100.0%");
        assert_eq!(shard["index"]["total_time_in_millis"], 190);
        assert_eq!(shard["translog"]["percent"], "100.0%");
        assert_eq!(shard["verify_index"]["total_time_in_millis"], 0);
    }

    #[test]
    fn a_new_primary_has_no_source_and_nothing_to_copy() {
        let mut state =
            RecoveryState::blank(0, RecoveryType::EmptyStore, None, node("a", "h:1"), 7);
        let running = recovery_json(&state, false, 10);
        assert_eq!(running["stop_time_in_millis"], Value::Null);
        assert_eq!(running["total_time_in_millis"], 3);
        state.stage = Stage::Done;
        state.stop_millis = Some(9);
        let shard = recovery_json(&state, true, 10);
        assert_eq!(shard["index"]["files"]["details"], json!([]));
        assert_eq!(shard["type"], "EMPTY_STORE");
        assert_eq!(shard["primary"], true);
        assert_eq!(shard["source"], json!({}));
        assert_eq!(shard["index"]["files"]["percent"], "0.0%");
        assert_eq!(shard["index"]["size"]["total_in_bytes"], 0);
    }
}
