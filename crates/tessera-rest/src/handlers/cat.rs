//! `_cat` APIs: indices, shards, segments, count, health, nodes, thread_pool, and the listing.

use std::sync::Arc;

use tessera_common::Result;
use tessera_index::index_service::{ShardFailure, ShardSlot};
use tessera_node::coordination::actions::ShardCounts;
use tessera_node::process_stats;
use tessera_node::Node;

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
    "/_cat/thread_pool",
    "/_cat/thread_pool/{thread_pool_patterns}",
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

fn clock(millis: i64) -> (String, String) {
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
                let health =
                    tessera_node::health::IndexHealth::of(&meta, reader.primary_states(&index));
                if health_filter
                    .as_deref()
                    .is_some_and(|h| h != health.status.as_str())
                {
                    continue;
                }
                let mut figures = ShardCounts::default();
                for shard in 0..meta.number_of_shards {
                    if let Some(copy) = counts.get(&(meta.uuid.clone(), shard)) {
                        figures.docs += copy.docs;
                        figures.deleted += copy.deleted;
                        figures.store_bytes += copy.store_bytes;
                    }
                }
                let (docs, deleted, store) = (figures.docs, figures.deleted, figures.store_bytes);
                rows.push(vec![
                    Cell::from(health.status.as_str()),
                    Cell::from("open"),
                    Cell::from(meta.name.clone()),
                    Cell::from(meta.uuid.clone()),
                    Cell::from(meta.number_of_shards),
                    Cell::from(meta.number_of_replicas()),
                    Cell::from(docs),
                    Cell::from(deleted),
                    Cell::from(meta.creation_date),
                    Cell::from(
                        tessera_date::DateFormat::default_format()
                            .format_millis(meta.creation_date, None),
                    ),
                    Cell::Bytes(store),
                    Cell::Bytes(store),
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
    counts: &std::collections::HashMap<(String, u32), ShardCounts>,
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
                let figures = counts.get(&(meta.uuid.clone(), table.shard));
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

pub async fn segments(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let indices = node.resolve(
        index_expression(&request),
        &resolve_options(&request, true)?,
    )?;
    let (host, id) = (node.config.host.clone(), node.node_id.clone());
    let rows = node
        .pools
        .management
        .run(move || {
            let mut rows = Vec::new();
            for index in indices {
                let meta = index.metadata();
                for shard in index.shards() {
                    for segment in shard.segments()? {
                        rows.push(vec![
                            Cell::from(meta.name.clone()),
                            Cell::from(shard.shard_id),
                            Cell::from("p"),
                            Cell::from(host.clone()),
                            Cell::from(id.clone()),
                            Cell::from(segment.name),
                            Cell::from(segment.generation),
                            Cell::from(segment.docs),
                            Cell::from(segment.deleted),
                            Cell::Bytes(segment.size_in_bytes),
                            Cell::from(0u64),
                            Cell::from("true"),
                            Cell::from("true"),
                            Cell::from("tantivy-0.27"),
                            Cell::from("false"),
                        ]);
                    }
                }
            }
            Ok(rows)
        })
        .await?;
    render(&request, SEGMENTS, rows)
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
    let total: u64 = indices.iter().map(|i| i.doc_counts().0).sum();
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
        Cell::from(1u32),
        Cell::from(1u32),
        Cell::from("true"),
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

pub async fn nodes(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (resident, _) = process_stats::process_memory();
    let (total, available) = process_stats::os_memory();
    let percent = |part: u64| (part * 100).checked_div(total).unwrap_or(0);
    let (_, os_cpu) = node.cpu.sample();
    let load = process_stats::load_average();
    let row = vec![
        Cell::from(node.config.host.clone()),
        Cell::from(percent(resident)),
        Cell::from(percent(total.saturating_sub(available))),
        Cell::from(os_cpu as u64),
        Cell::from(format!("{:.2}", load[0])),
        Cell::from(format!("{:.2}", load[1])),
        Cell::from(format!("{:.2}", load[2])),
        Cell::from("dimr"),
        Cell::from("cluster_manager,data,ingest,remote_cluster_client"),
        Cell::from("*"),
        Cell::from(node.config.name.clone()),
        Cell::from(node.node_id.clone()),
        Cell::from(std::process::id() as u64),
        Cell::from(node.config.port as u64 + 100),
        Cell::from(format!("{}:{}", node.config.host, node.config.port)),
    ];
    render(&request, NODES, vec![row])
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
    let mut rows = Vec::new();
    for pool in node.pools.all() {
        if !patterns
            .iter()
            .any(|p| tessera_mapping::dynamic::simple_match(p, pool.name()))
        {
            continue;
        }
        let stats = pool.stats();
        rows.push(vec![
            Cell::from(node.config.name.clone()),
            Cell::from(node.node_id.clone()),
            Cell::from(pool.name()),
            Cell::from(stats.active),
            Cell::from(stats.queue),
            Cell::from(stats.rejected),
            Cell::from(stats.largest),
            Cell::from(stats.completed),
            Cell::from(stats.threads),
            Cell::from(stats.queue_size),
            Cell::from("fixed"),
        ]);
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
