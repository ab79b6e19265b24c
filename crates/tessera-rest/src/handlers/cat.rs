//! `_cat` APIs: indices, shards, segments, count, health, nodes, thread_pool, and the listing.

use std::sync::Arc;

use tessera_common::Result;
use tessera_index::index_service::{ShardFailure, ShardSlot};
use tessera_node::coordination::actions::ShardCounts;
use tessera_node::Node;

use super::reports::{self, host_of, port_of};
use super::resolve_options;
use crate::cat_table::{col, render, Cell, Column};
use crate::request::RestRequest;
use crate::response::RestResponse;

fn index_expression(request: &RestRequest) -> &str {
    request
        .path_params
        .get("index")
        .map(String::as_str)
        .unwrap_or("_all")
}

const ENDPOINTS: &[&str] = &[
    "/_cat/indices",
    "/_cat/indices/{index}",
    "/_cat/shards",
    "/_cat/shards/{index}",
    "/_cat/segments",
    "/_cat/segments/{index}",
    "/_cat/count",
    "/_cat/count/{index}",
    "/_cat/health",
    "/_cat/nodes",
    "/_cat/allocation",
    "/_cat/allocation/{node_id}",
    "/_cat/cluster_manager",
    "/_cat/master",
    "/_cat/thread_pool",
    "/_cat/thread_pool/{thread_pool_patterns}",
    "/_cat/recovery",
    "/_cat/recovery/{index}",
    "/_cat/segment_replication",
    "/_cat/segment_replication/{index}",
    "/_cat/repositories",
    "/_cat/snapshots/{repository}",
];

/// `GET /_cat`.
pub async fn listing(_node: Arc<Node>, _request: RestRequest) -> Result<RestResponse> {
    let mut text = String::from("=^.^=\n");
    for endpoint in ENDPOINTS {
        text.push_str(endpoint);
        text.push('\n');
    }
    Ok(RestResponse::text(text))
}

pub(crate) fn clock(millis: i64) -> (String, String) {
    let seconds = millis / 1000;
    let of_day = seconds.rem_euclid(86_400);
    (
        seconds.to_string(),
        format!(
            "{:02}:{:02}:{:02}",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        ),
    )
}

static INDICES: &[Column] = &[
    col("health", "h", "current health status", false, true),
    col("status", "s", "open/close status", false, true),
    col("index", "i,idx", "index name", false, true),
    col("uuid", "id,uuid", "index uuid", false, true),
    col(
        "pri",
        "p,shards.primary,shardsPrimary",
        "number of primary shards",
        true,
        true,
    ),
    col(
        "rep",
        "r,shards.replica,shardsReplica",
        "number of replica shards",
        true,
        true,
    ),
    col("docs.count", "dc,docsCount", "available docs", true, true),
    col("docs.deleted", "dd,docsDeleted", "deleted docs", true, true),
    col(
        "creation.date",
        "cd",
        "index creation date (millisecond value)",
        true,
        false,
    ),
    col(
        "creation.date.string",
        "cds",
        "index creation date (as string)",
        false,
        false,
    ),
    col(
        "store.size",
        "ss,storeSize",
        "store size of primaries & replicas",
        true,
        true,
    ),
    col("pri.store.size", "", "store size of primaries", true, true),
];

pub async fn indices(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let health_filter = request.param("health").map(String::from);
    let counts = node.shard_counts(indices.clone()).await?;
    let reader = node.clone();
    let rows = node
        .pools
        .management
        .run(move || {
            let mut rows = Vec::new();
            for index in indices {
                let meta = index.metadata();
                let health = reader.index_health(&index);
                if health_filter
                    .as_deref()
                    .is_some_and(|h| h != health.status.as_str())
                {
                    continue;
                }
                // documents count once, in the primaries; every copy takes room
                let (mut docs, mut deleted, mut store, mut primary_store) = (0, 0, 0, 0);
                for ((uuid, _, _), copy) in &counts {
                    if *uuid != meta.uuid {
                        continue;
                    }
                    store += copy.store_bytes;
                    if copy.primary {
                        docs += copy.docs;
                        deleted += copy.deleted;
                        primary_store += copy.store_bytes;
                    }
                }
                // a closed index shows no document counts, as OpenSearch's
                let count = |n: u64| {
                    if meta.closed {
                        Cell::Null
                    } else {
                        Cell::from(n)
                    }
                };
                rows.push(vec![
                    Cell::from(health.status.as_str()),
                    Cell::from(if meta.closed { "close" } else { "open" }),
                    Cell::from(meta.name.clone()),
                    Cell::from(meta.uuid.clone()),
                    Cell::from(meta.number_of_shards),
                    Cell::from(meta.number_of_replicas()),
                    count(docs),
                    count(deleted),
                    Cell::from(meta.creation_date),
                    Cell::from(
                        tessera_date::DateFormat::default_format()
                            .format_millis(meta.creation_date, None),
                    ),
                    Cell::Bytes(store),
                    Cell::Bytes(primary_store),
                ]);
            }
            Ok(rows)
        })
        .await?;
    render(&request, INDICES, rows)
}

static SHARDS: &[Column] = &[
    col("index", "i,idx", "index name", false, true),
    col("shard", "s,sh", "shard name", true, true),
    col(
        "prirep",
        "p,pr,primaryOrReplica",
        "primary or replica",
        false,
        true,
    ),
    col("state", "st", "shard state", false, true),
    col("docs", "d,dc", "number of docs in shard", true, true),
    col(
        "store",
        "sto",
        "store size of shard (how much disk it uses)",
        true,
        true,
    ),
    col("ip", "", "ip of node where it lives", false, true),
    col("node", "n", "name of node where it lives", false, true),
    col("id", "", "unique id of node where it lives", false, false),
    col(
        "unassigned.reason",
        "ur",
        "reason shard is unassigned",
        false,
        false,
    ),
    col(
        "unassigned.details",
        "ud",
        "additional details as to why the shard became unassigned",
        false,
        false,
    ),
];

/// `_cat/shards` of a cluster: every copy as the routing has it, with the figures its node
/// sent.
fn cluster_shard_rows(
    state: &tessera_cluster::ClusterState,
    indices: &[Arc<tessera_index::IndexService>],
    counts: &std::collections::HashMap<(String, u32, String), ShardCounts>,
) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for index in indices {
        let meta = index.metadata();
        let Some(routing) = state
            .index(&meta.name)
            .filter(|i| i.metadata.uuid == meta.uuid)
        else {
            continue;
        };
        for table in &routing.routing.shards {
            for copy in &table.copies {
                let prirep = if copy.primary { "p" } else { "r" };
                let holder = copy.node_id.as_ref().and_then(|id| state.nodes.get(id));
                let figures = copy
                    .node_id
                    .as_ref()
                    .and_then(|id| counts.get(&(meta.uuid.clone(), table.shard, id.clone())));
                match (holder, copy.is_active()) {
                    (Some(holder), true) => {
                        let host = holder
                            .transport_address
                            .rsplit_once(':')
                            .map_or(holder.transport_address.as_str(), |(host, _)| host);
                        rows.push(vec![
                            Cell::from(meta.name.clone()),
                            Cell::from(table.shard),
                            Cell::from(prirep),
                            Cell::from(copy.state.as_str()),
                            figures.map_or(Cell::Null, |f| Cell::from(f.docs)),
                            figures.map_or(Cell::Null, |f| Cell::Bytes(f.store_bytes)),
                            Cell::from(host.to_string()),
                            Cell::from(holder.name.clone()),
                            Cell::from(holder.id.clone()),
                            Cell::Null,
                            Cell::Null,
                        ]);
                    }
                    _ => {
                        let info = copy.unassigned.as_ref();
                        rows.push(inactive_row(
                            &meta.name,
                            table.shard as usize,
                            prirep,
                            copy.state.as_str(),
                            info.map_or(Cell::Null, |i| Cell::from(i.reason.clone())),
                            info.and_then(|i| i.details.clone())
                                .map_or(Cell::Null, Cell::from),
                        ));
                    }
                }
            }
        }
    }
    rows
}

pub async fn shards(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    if node.coordination().is_some() {
        let counts = node.shard_counts(indices.clone()).await?;
        let rows = cluster_shard_rows(&node.cluster_state(), &indices, &counts);
        return render(&request, SHARDS, rows);
    }
    let (host, name, id) = (
        node.config.host.clone(),
        node.config.name.clone(),
        node.node_id.clone(),
    );
    let rows = node
        .pools
        .management
        .run(move || {
            let mut rows = Vec::new();
            for index in indices {
                let meta = index.metadata();
                for (shard_id, slot) in index.shard_slots().into_iter().enumerate() {
                    match slot {
                        ShardSlot::Started(shard) => {
                            let (docs, _) = shard.doc_counts();
                            rows.push(vec![
                                Cell::from(meta.name.clone()),
                                Cell::from(shard_id),
                                Cell::from("p"),
                                Cell::from("STARTED"),
                                Cell::from(docs),
                                Cell::Bytes(shard.store_size()),
                                Cell::from(host.clone()),
                                Cell::from(name.clone()),
                                Cell::from(id.clone()),
                                Cell::Null,
                                Cell::Null,
                            ]);
                        }
                        ShardSlot::Initializing => rows.push(inactive_row(
                            &meta.name,
                            shard_id,
                            "p",
                            "INITIALIZING",
                            Cell::Null,
                            Cell::Null,
                        )),
                        ShardSlot::Failed(failure) => rows.push(inactive_row(
                            &meta.name,
                            shard_id,
                            "p",
                            "UNASSIGNED",
                            Cell::from("ALLOCATION_FAILED"),
                            Cell::from(failure_details(&failure)),
                        )),
                        // another node's copy: that node lists it
                        ShardSlot::Unallocated => continue,
                    }
                    for _ in 0..meta.number_of_replicas() {
                        rows.push(inactive_row(
                            &meta.name,
                            shard_id,
                            "r",
                            "UNASSIGNED",
                            Cell::from("INDEX_CREATED"),
                            Cell::Null,
                        ));
                    }
                }
            }
            Ok(rows)
        })
        .await?;
    render(&request, SHARDS, rows)
}

static SEGMENTS: &[Column] = &[
    col("index", "i,idx", "index name", false, true),
    col("shard", "s,sh", "shard name", true, true),
    col(
        "prirep",
        "p,pr,primaryOrReplica",
        "primary or replica",
        false,
        true,
    ),
    col("ip", "", "ip of node where it lives", false, true),
    col("id", "", "unique id of node where it lives", false, false),
    col("segment", "seg", "segment name", false, true),
    col("generation", "g,gen", "segment generation", true, true),
    col(
        "docs.count",
        "dc,docsCount",
        "number of docs in segment",
        true,
        true,
    ),
    col(
        "docs.deleted",
        "dd,docsDeleted",
        "number of deleted docs in segment",
        true,
        true,
    ),
    col("size", "si", "segment size in bytes", true, true),
    col(
        "size.memory",
        "sm,sizeMemory",
        "segment memory in bytes",
        true,
        true,
    ),
    col(
        "committed",
        "ic,isCommitted",
        "is segment committed",
        false,
        true,
    ),
    col(
        "searchable",
        "is,isSearchable",
        "is segment searched",
        false,
        true,
    ),
    col("version", "v,ver", "version", false, true),
    col(
        "compound",
        "ico,isCompound",
        "is segment compound",
        false,
        true,
    ),
];

/// `_cat/segments[/{index}]`: every node's segments of the copies it holds.
pub async fn segments(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (names, answers) = reports::ask(&node, &request, reports::SEGMENTS).await?;
    // (index position, shard, node position) orders the rows
    let mut keyed = Vec::new();
    for (position, (target, answer)) in answers.into_iter().enumerate() {
        let serde_json::Value::Array(segments) = answer else {
            continue;
        };
        let ip = host_of(&target.transport_address).to_string();
        for segment in segments {
            let Some(index) = names
                .iter()
                .position(|(uuid, _)| Some(uuid.as_str()) == segment["index_uuid"].as_str())
            else {
                continue;
            };
            let shard = segment["shard"].as_u64().unwrap_or(0);
            let number = |key: &str| segment[key].as_u64().unwrap_or(0);
            keyed.push((
                (index, shard, position),
                vec![
                    Cell::from(names[index].1.clone()),
                    Cell::from(shard),
                    Cell::from(if segment["primary"] == false {
                        "r"
                    } else {
                        "p"
                    }),
                    Cell::from(ip.clone()),
                    Cell::from(target.id.clone()),
                    Cell::from(segment["segment"].as_str().unwrap_or_default().to_string()),
                    Cell::from(number("generation")),
                    Cell::from(number("docs")),
                    Cell::from(number("deleted")),
                    Cell::Bytes(number("size")),
                    Cell::from(0u64),
                    Cell::from("true"),
                    Cell::from("true"),
                    Cell::from("tantivy-0.27"),
                    Cell::from("false"),
                ],
            ));
        }
    }
    keyed.sort_by_key(|(key, _)| *key);
    render(
        &request,
        SEGMENTS,
        keyed.into_iter().map(|(_, row)| row).collect(),
    )
}

static COUNT: &[Column] = &[
    col(
        "epoch",
        "t,time",
        "seconds since 1970-01-01 00:00:00",
        false,
        true,
    ),
    col(
        "timestamp",
        "ts,hms,hhmmss",
        "time in HH:MM:SS",
        false,
        true,
    ),
    col(
        "count",
        "dc,docs.count,docsCount",
        "the document count",
        false,
        true,
    ),
];

pub async fn count(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    // every node's copies (on one node, its own)
    let counts = node.shard_counts(indices).await?;
    let total: u64 = counts.values().filter(|c| c.primary).map(|c| c.docs).sum();
    let (epoch, timestamp) = clock(tessera_common::time::now_millis());
    render(
        &request,
        COUNT,
        vec![vec![
            Cell::from(epoch),
            Cell::from(timestamp),
            Cell::from(total),
        ]],
    )
}

static HEALTH: &[Column] = &[
    col(
        "epoch",
        "t,time",
        "seconds since 1970-01-01 00:00:00",
        false,
        true,
    ),
    col(
        "timestamp",
        "ts,hms,hhmmss",
        "time in HH:MM:SS",
        false,
        true,
    ),
    col("cluster", "cl", "cluster name", false, true),
    col("status", "st", "health status", false, true),
    col(
        "node.total",
        "nt,nodeTotal",
        "total number of nodes",
        true,
        true,
    ),
    col(
        "node.data",
        "nd,nodeData",
        "number of nodes that can store data",
        true,
        true,
    ),
    col(
        "discovered_cluster_manager",
        "dcm",
        "cluster manager is discovered",
        true,
        true,
    ),
    col(
        "shards",
        "t,sh,shards.total,shardsTotal",
        "total number of shards",
        true,
        true,
    ),
    col(
        "pri",
        "p,shards.primary,shardsPrimary",
        "number of primary shards",
        true,
        true,
    ),
    col(
        "relo",
        "r,shards.relocating,shardsRelocating",
        "number of relocating nodes",
        true,
        true,
    ),
    col(
        "init",
        "i,shards.initializing,shardsInitializing",
        "number of initializing nodes",
        true,
        true,
    ),
    col(
        "unassign",
        "u,shards.unassigned,shardsUnassigned",
        "number of unassigned shards",
        true,
        true,
    ),
    col(
        "pending_tasks",
        "pt,pendingTasks",
        "number of pending tasks",
        true,
        true,
    ),
    col(
        "max_task_wait_time",
        "mtwt,maxTaskWaitTime",
        "wait time of longest task pending",
        true,
        true,
    ),
    col(
        "active_shards_percent",
        "asp,activeShardsPercent",
        "active number of shards in percent",
        true,
        true,
    ),
];

pub async fn health(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let health = node.health(None);
    let (epoch, timestamp) = clock(tessera_common::time::now_millis());
    let with_ts = request.param_bool("ts", true)?;
    let row = vec![
        Cell::from(epoch),
        Cell::from(timestamp),
        Cell::from(node.config.cluster_name.clone()),
        Cell::from(health.status.as_str()),
        Cell::from(health.number_of_nodes),
        Cell::from(health.number_of_data_nodes),
        Cell::from(health.discovered_cluster_manager.to_string()),
        Cell::from(health.active_shards),
        Cell::from(health.active_primary_shards),
        Cell::from(0u32),
        Cell::from(0u32),
        Cell::from(health.unassigned_shards),
        Cell::from(0u32),
        Cell::from("-"),
        Cell::from(format!("{:.1}%", health.active_shards_percent())),
    ];
    if with_ts || request.param("h").is_some() {
        return render(&request, HEALTH, vec![row]);
    }
    render(&request, &HEALTH[2..], vec![row[2..].to_vec()])
}

static NODES: &[Column] = &[
    col("ip", "i", "ip address", false, true),
    col(
        "heap.percent",
        "hp,heapPercent",
        "used heap ratio (for Tessera: resident memory / machine memory)",
        true,
        true,
    ),
    col(
        "ram.percent",
        "rp,ramPercent",
        "used machine memory ratio",
        true,
        true,
    ),
    col("cpu", "", "recent cpu usage", true, true),
    col("load_1m", "l", "1m load avg", true, true),
    col("load_5m", "l", "5m load avg", true, true),
    col("load_15m", "l", "15m load avg", true, true),
    col(
        "node.role",
        "r,role,nodeRole",
        "m:master eligible node, d:data node, i:ingest node, -:coordinating node only",
        false,
        true,
    ),
    col("node.roles", "rs,all roles", "node roles", false, true),
    col(
        "cluster_manager",
        "m",
        "*:current cluster manager",
        false,
        true,
    ),
    col("name", "n", "node name", false, true),
    col("id", "nodeId", "unique node id", false, false),
    col("pid", "p", "process id", true, false),
    col("port", "po", "bound transport port", true, false),
    col("http_address", "http", "bound http address", false, false),
];

/// `_cat/nodes`: one row per node of the cluster state, each with its own figures (a node
/// that does not answer shows none), the elected cluster manager marked `*`.
pub async fn nodes(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let manager = node.cluster_state().cluster_manager.clone();
    let answers = node
        .fan_out(reports::CAT_NODES, serde_json::json!({}))
        .await;
    let mut rows = Vec::new();
    for (target, answer) in answers {
        let figures = answer.ok();
        let number = |key: &str| {
            figures
                .as_ref()
                .and_then(|f| f[key].as_u64())
                .map_or(Cell::Null, Cell::from)
        };
        let load = |i: usize| {
            figures
                .as_ref()
                .and_then(|f| f["load"][i].as_f64())
                .map_or(Cell::Null, |l| Cell::from(format!("{l:.2}")))
        };
        let marker = if manager.as_deref() == Some(target.id.as_str()) {
            "*"
        } else {
            "-"
        };
        rows.push(vec![
            Cell::from(host_of(&target.transport_address).to_string()),
            number("heap_percent"),
            number("ram_percent"),
            number("cpu"),
            load(0),
            load(1),
            load(2),
            Cell::from(role_letters(&target.roles)),
            Cell::from(target.roles.join(",")),
            Cell::from(marker),
            Cell::from(target.name.clone()),
            Cell::from(target.id.clone()),
            number("pid"),
            port_of(&target.transport_address).map_or(Cell::Null, Cell::from),
            Cell::from(target.http_address.clone()),
        ]);
    }
    render(&request, NODES, rows)
}

/// `node.role` of `_cat/nodes`: a letter per role, sorted (`dimr` for every role).
fn role_letters(roles: &[String]) -> String {
    let mut letters: Vec<char> = roles
        .iter()
        .filter_map(|role| match role.as_str() {
            "cluster_manager" => Some('m'),
            "data" => Some('d'),
            "ingest" => Some('i'),
            "remote_cluster_client" => Some('r'),
            _ => None,
        })
        .collect();
    letters.sort_unstable();
    if letters.is_empty() {
        return "-".to_string();
    }
    letters.into_iter().collect()
}

static ALLOCATION: &[Column] = &[
    col("shards", "s", "number of shards on node", true, true),
    col(
        "disk.indices",
        "di,diskIndices",
        "disk used by OpenSearch indices",
        true,
        true,
    ),
    col(
        "disk.used",
        "du,diskUsed",
        "disk used (total, not just OpenSearch)",
        true,
        true,
    ),
    col("disk.avail", "da,diskAvail", "disk available", true, true),
    col(
        "disk.total",
        "dt,diskTotal",
        "total capacity of all volumes",
        true,
        true,
    ),
    col(
        "disk.percent",
        "dp,diskPercent",
        "percent disk used",
        true,
        true,
    ),
    col("host", "h", "host of node", false, true),
    col("ip", "", "ip of node", false, true),
    col("node", "n", "name of node", false, true),
];

/// `_cat/allocation[/{node}]`: the copies the routing gives each node (or the nodes `{node}`
/// names, by id or name pattern), with that node's disk, and an `UNASSIGNED` row when some
/// copies have no node.
pub async fn allocation(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let filter: Option<Vec<String>> = request
        .path_params
        .get("node_id")
        .map(|p| p.split(',').map(|s| s.trim().to_string()).collect());
    let state = node.cluster_state();
    let mut shards: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    let mut unassigned = 0u64;
    for index in state.indices.values() {
        for table in &index.routing.shards {
            for copy in &table.copies {
                match copy.node_id.as_deref() {
                    Some(id) if copy.state != tessera_cluster::ShardState::Unassigned => {
                        *shards.entry(id).or_default() += 1
                    }
                    _ => unassigned += 1,
                }
            }
        }
    }
    let answers = node.fan_out(reports::DISK, serde_json::json!({})).await;
    let mut rows = Vec::new();
    for (target, answer) in answers {
        let wanted = filter.as_ref().is_none_or(|names| {
            names.iter().any(|n| {
                n == "_all"
                    || n == &target.id
                    || (n == "_local" && target.id == node.node_id)
                    || tessera_mapping::dynamic::simple_match(n, &target.name)
            })
        });
        if !wanted {
            continue;
        }
        let disk = answer.ok();
        let figure = |key: &str| disk.as_ref().and_then(|d| d[key].as_u64());
        let (total, available) = (figure("total"), figure("available"));
        let used = total.zip(available).map(|(t, a)| t.saturating_sub(a));
        let percent = total.zip(used).and_then(|(t, u)| (u * 100).checked_div(t));
        let host = host_of(&target.transport_address).to_string();
        rows.push(vec![
            Cell::from(shards.get(target.id.as_str()).copied().unwrap_or(0)),
            figure("indices").map_or(Cell::Null, Cell::Bytes),
            used.map_or(Cell::Null, Cell::Bytes),
            available.map_or(Cell::Null, Cell::Bytes),
            total.map_or(Cell::Null, Cell::Bytes),
            percent.map_or(Cell::Null, Cell::from),
            Cell::from(host.clone()),
            Cell::from(host),
            Cell::from(target.name.clone()),
        ]);
    }
    if unassigned > 0 {
        let mut row = vec![Cell::from(unassigned)];
        row.extend(std::iter::repeat_with(|| Cell::Null).take(7));
        row.push(Cell::from("UNASSIGNED"));
        rows.push(row);
    }
    render(&request, ALLOCATION, rows)
}

static CLUSTER_MANAGER: &[Column] = &[
    col("id", "", "node id", false, true),
    col("host", "h", "host name", false, true),
    col("ip", "", "ip address", false, true),
    col("node", "n", "node name", false, true),
];

/// `_cat/cluster_manager` and `_cat/master`: the elected cluster manager.
pub async fn cluster_manager(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let state = node.cluster_state();
    let manager = state
        .cluster_manager
        .as_ref()
        .and_then(|id| state.nodes.get(id))
        .ok_or_else(tessera_node::coordination::manager_not_discovered)?;
    let host = host_of(&manager.transport_address).to_string();
    let row = vec![
        Cell::from(manager.id.clone()),
        Cell::from(host.clone()),
        Cell::from(host),
        Cell::from(manager.name.clone()),
    ];
    render(&request, CLUSTER_MANAGER, vec![row])
}

static PLUGINS: &[Column] = &[
    col("id", "", "unique node id", false, false),
    col("name", "n", "node name", false, true),
    col("component", "c", "component", false, true),
    col("version", "v", "component version", false, true),
    col("description", "d", "plugin details", false, false),
];

/// `_cat/plugins`: Tessera has no plugins (what OpenSearch ships as modules is built in), so
/// no node lists one.
pub async fn plugins(_node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    render(&request, PLUGINS, Vec::new())
}

static NODEATTRS: &[Column] = &[
    col("node", "name", "node name", false, true),
    col("id", "id,nodeId", "unique node id", false, false),
    col("pid", "p", "process id", false, false),
    col("host", "h", "host name", false, true),
    col("ip", "i", "ip address", false, true),
    col("port", "po", "bound transport port", false, false),
    col("attr", "attr.name", "attribute description", false, true),
    col("value", "attr.value", "attribute value", false, true),
];

/// `_cat/nodeattrs`: Tessera nodes carry no custom attributes (`node.attr.*`), so there is no
/// row.
pub async fn nodeattrs(_node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    render(&request, NODEATTRS, Vec::new())
}

static FIELDDATA: &[Column] = &[
    col("id", "", "node id", false, true),
    col("host", "h", "host name", false, true),
    col("ip", "", "ip address", false, true),
    col("node", "n", "node name", false, true),
    col("field", "f", "field name", false, true),
    col("size", "s", "field data usage", true, true),
];

/// `_cat/fielddata`: Tessera reads sort and aggregation values from columns on disk and never
/// loads fielddata on the heap, so no field has any.
pub async fn fielddata(_node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    render(&request, FIELDDATA, Vec::new())
}

static TASKS: &[Column] = &[
    col(
        "id",
        "id,task_id",
        "id of the task with the node",
        false,
        false,
    ),
    col("action", "ac", "task action", false, true),
    col("task_id", "ti", "unique task id", false, true),
    col("parent_task_id", "pti", "parent task id", false, true),
    col("type", "ty", "task type", false, true),
    col("start_time", "start", "start time in ms", false, true),
    col(
        "timestamp",
        "ts,hms,hhmmss",
        "start time in HH:MM:SS",
        false,
        true,
    ),
    col("running_time_ns", "time", "running time ns", false, false),
    col("running_time", "time", "running time", false, true),
    col("node_id", "ni", "unique node id", false, false),
    col("ip", "i", "ip address", false, true),
    col("port", "po", "bound transport port", false, false),
    col("node", "n", "node name", false, true),
    col("description", "desc", "task action", false, false),
];

/// `_cat/tasks`: the tasks every node runs now (`actions` filters them, `detailed` adds
/// their descriptions), one row each.
pub async fn tasks(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let actions: Vec<String> = request
        .param("actions")
        .map(|a| a.split(',').map(String::from).collect())
        .unwrap_or_default();
    let answers = tessera_node::tasks::on_every_node(
        &node,
        tessera_node::tasks::LIST,
        &actions,
        request.param_bool("detailed", false)?,
        request.param("nodes"),
    )
    .await?;
    let mut rows = Vec::new();
    for (target, answer) in answers {
        let Ok(serde_json::Value::Array(tasks)) = answer else {
            continue;
        };
        let ip = host_of(&target.transport_address).to_string();
        for task in tasks {
            let start = task["start_time_in_millis"].as_i64().unwrap_or(0);
            let nanos = task["running_time_in_nanos"].as_u64().unwrap_or(0);
            let id = format!("{}:{}", target.id, task["id"]);
            rows.push(vec![
                Cell::from(task["id"].to_string()),
                Cell::from(task["action"].as_str().unwrap_or_default()),
                Cell::from(id),
                Cell::from("-"),
                Cell::from(task["type"].as_str().unwrap_or("transport")),
                Cell::from(start.to_string()),
                Cell::from(clock(start).1),
                Cell::from(nanos),
                Cell::from(format!("{:.1}ms", nanos as f64 / 1e6)),
                Cell::from(target.id.clone()),
                Cell::from(ip.clone()),
                port_of(&target.transport_address).map_or(Cell::Null, Cell::from),
                Cell::from(target.name.clone()),
                Cell::from(task["description"].as_str().unwrap_or_default()),
            ]);
        }
    }
    render(&request, TASKS, rows)
}

static THREAD_POOL: &[Column] = &[
    col("node_name", "nn", "node name", false, true),
    col("node_id", "id", "persistent node id", false, false),
    col("name", "n", "thread pool name", false, true),
    col("active", "a", "number of active threads", true, true),
    col(
        "queue",
        "q",
        "number of tasks currently in queue",
        true,
        true,
    ),
    col("rejected", "r", "number of rejected tasks", true, true),
    col(
        "largest",
        "l",
        "highest number of seen active threads",
        true,
        false,
    ),
    col("completed", "c", "number of completed tasks", true, false),
    col("size", "sz", "number of threads", true, false),
    col(
        "queue_size",
        "qs",
        "maximum number of tasks permitted in queue",
        true,
        false,
    ),
    col("type", "t", "thread pool type", false, false),
];

pub async fn thread_pool(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let patterns: Vec<String> = request
        .path_params
        .get("thread_pool_patterns")
        .map(|p| p.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_else(|| vec!["*".to_string()]);
    let mut answers = node
        .fan_out(reports::THREAD_POOLS, serde_json::json!({}))
        .await;
    answers.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
    let mut rows = Vec::new();
    for (target, answer) in answers {
        let Ok(serde_json::Value::Array(pools)) = answer else {
            continue;
        };
        for pool in pools {
            let name = pool["name"].as_str().unwrap_or_default();
            if !patterns
                .iter()
                .any(|p| tessera_mapping::dynamic::simple_match(p, name))
            {
                continue;
            }
            let number = |key: &str| pool[key].as_u64().map_or(Cell::Null, Cell::from);
            rows.push(vec![
                Cell::from(target.name.clone()),
                Cell::from(target.id.clone()),
                Cell::from(name),
                number("active"),
                number("queue"),
                number("rejected"),
                number("largest"),
                number("completed"),
                number("size"),
                number("queue_size"),
                Cell::from("fixed"),
            ]);
        }
    }
    render(&request, THREAD_POOL, rows)
}

/// A `_cat/shards` row of a copy that does not serve (unassigned or initializing): no docs,
/// store or node, and `unassigned.reason`/`details` when it is unassigned.
fn inactive_row(
    index: &str,
    shard: usize,
    prirep: &str,
    state: &str,
    reason: Cell,
    details: Cell,
) -> Vec<Cell> {
    let mut row = vec![
        Cell::from(index.to_string()),
        Cell::from(shard),
        Cell::from(prirep.to_string()),
        Cell::from(state.to_string()),
    ];
    row.extend(std::iter::repeat_with(|| Cell::Null).take(5));
    row.push(reason);
    row.push(details);
    row
}

/// `unassigned.details` of a shard that failed: OpenSearch's "failed shard on node [...]: ..."
/// with the failure's type and reason.
fn failure_details(failure: &ShardFailure) -> String {
    format!(
        "failed shard, failure {}[{}] (attempts: {})",
        failure.error.kind(),
        failure.error.reason(),
        failure.attempts
    )
}
