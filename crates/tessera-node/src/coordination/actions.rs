//! The node-to-node calls of a cluster, by OpenSearch's action names, and the handlers this
//! node serves them with on its transport (`tessera_cluster::transport`). Bodies are postcard
//! (`tessera_search::messages::encode`); the handlers run their work on the pool it belongs
//! to (the manager's decisions on `management`, shard writes on `write`, shard searches on
//! `search` through [`tessera_search::LocalShard`]), never on the transport's runtime.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock, Weak};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tessera_cluster::transport::{
    register_search_handlers, Handlers, ReceivingRuns, RequestContext, ServerHandle,
    TransportServer,
};
use tessera_common::{Error, Result};
use tessera_index::IndexService;
use tessera_search::messages::{decode, encode};
use tessera_search::ShardSearcher;

use super::manager::{
    AliasesUpdate, ClusterSettingsUpdate, CreateIndex, CustomUpdate, MetadataUpdate, PutPipeline,
    ResizeIndex, ShardReport,
};
use super::Coordination;
use crate::node::Node;
use crate::read::{get_here, GetRequest, GET_DOC};
use crate::write::coordinator::write_here;
use crate::write::{ShardWriteRequest, ShardWriteResponse};

/// `PUT /{index}`, decided by the cluster manager.
pub const CREATE_INDEX: &str = "indices:admin/create";
/// `_shrink`, `_split`, `_clone`, decided by the cluster manager.
pub const RESIZE_INDEX: &str = "indices:admin/resize";
/// `DELETE /{index}`, decided by the cluster manager.
pub const DELETE_INDICES: &str = "indices:admin/delete";
/// A mapping or settings update, decided by the cluster manager.
pub const UPDATE_METADATA: &str = "indices:admin/metadata/update";
/// `POST /_aliases` (and the other alias APIs), decided by the cluster manager.
pub const UPDATE_ALIASES: &str = "indices:admin/aliases";
/// A change of custom documents (templates, data streams), decided by the cluster manager.
pub const UPDATE_CUSTOM: &str = "cluster:admin/metadata/custom/update";
/// Answers once this node applied a cluster state revision (the acknowledgement of a change).
pub const STATE_APPLIED: &str = "internal:cluster/state/applied[n]";
/// `PUT _cluster/settings`, decided by the cluster manager.
pub const UPDATE_CLUSTER_SETTINGS: &str = "cluster:admin/settings/update";
/// `PUT _ingest/pipeline/{id}`, decided by the cluster manager.
pub const PUT_PIPELINE: &str = "cluster:admin/ingest/pipeline/put";
/// `DELETE _ingest/pipeline/{id}`, decided by the cluster manager.
pub const DELETE_PIPELINES: &str = "cluster:admin/ingest/pipeline/delete";
/// A node's news about its copy of a shard, to the cluster manager.
pub const SHARD_REPORT: &str = "internal:cluster/shard/report";
/// The shard groups of a request whose primaries one node holds, in one call (each group
/// runs as `indices:data/write/bulk[s][p]` does in OpenSearch; the answers come back in order).
pub const WRITE_SHARDS: &str = "indices:data/write/bulk[n]";
/// Refresh or flush the copies a node holds of some indices.
pub const BROADCAST: &str = "indices:admin/broadcast[n]";

/// The document counts and sizes of the copies a node holds of some indices (by uuid).
pub const SHARD_STATS: &str = "indices:monitor/stats[n]";

/// A node-local report (the REST layer's hook on that node, `Node::run_report`): the request
/// names the report and carries its parameters as JSON, the answer is JSON.
pub const NODE_REPORT: &str = "cluster:monitor/nodes/report[n]";

/// A [`NODE_REPORT`] request (JSON as text: the transport's encoding is not self-describing).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeReport {
    pub report: String,
    pub params: String,
}

/// One copy's figures, as `_cat/indices` and `_cat/shards` show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardCounts {
    pub docs: u64,
    pub deleted: u64,
    pub store_bytes: u64,
    /// The copy is the primary (figures of replicas count in store sizes only).
    pub primary: bool,
}

/// The figures of the started copies this node holds of the indices with these uuids.
pub(crate) fn shard_counts_here(
    node: &Node,
    index_uuids: &[String],
) -> Vec<(String, u32, ShardCounts)> {
    let mut counts = Vec::new();
    for uuid in index_uuids {
        let Some(index) = node.index_by_uuid(uuid) else {
            continue;
        };
        for (shard, slot) in index.shard_slots().into_iter().enumerate() {
            if let tessera_index::index_service::ShardSlot::Started(copy) = slot {
                let (docs, deleted) = copy.doc_counts();
                let store_bytes = copy.store_size();
                counts.push((
                    uuid.clone(),
                    shard as u32,
                    ShardCounts {
                        docs,
                        deleted,
                        store_bytes,
                        primary: !copy.is_replica(),
                    },
                ));
            }
        }
    }
    counts
}

/// What [`BROADCAST`] does on each copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BroadcastOp {
    Refresh,
    Flush,
    /// `_forcemerge` down to this many segments per shard.
    ForceMerge(usize),
}

impl BroadcastOp {
    pub fn run(self, index: &IndexService) -> Result<()> {
        match self {
            BroadcastOp::Refresh => index.refresh(),
            BroadcastOp::Flush => index.flush(),
            BroadcastOp::ForceMerge(max_segments) => index.force_merge(max_segments),
        }
    }
}

/// A [`BROADCAST`] request: the indices by uuid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Broadcast {
    pub op: BroadcastOp,
    pub index_uuids: Vec<String>,
}

/// The node the handlers work on (set once the node exists; calls before that fail).
pub(crate) type NodeCell = Arc<OnceLock<Weak<Node>>>;

pub(crate) fn node_of(cell: &NodeCell) -> Result<Arc<Node>> {
    cell.get()
        .and_then(Weak::upgrade)
        .filter(|node| !node.is_shutting_down())
        .ok_or_else(|| Error::new("node_closed_exception", 503, "the node is not running"))
}

pub(crate) fn coordination_of(node: &Node) -> Result<Arc<Coordination>> {
    node.coordination()
        .cloned()
        .ok_or_else(|| Error::illegal_state("this node is not a member of a cluster"))
}

/// Registers a handler that decodes `Req`, runs `work` on the node's `management` pool and
/// encodes its answer.
fn on_management<Req, Resp>(
    handlers: &mut Handlers,
    node: &NodeCell,
    action: &str,
    work: fn(&Node, &Coordination, Req) -> Result<Resp>,
) where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
{
    let node = node.clone();
    handlers.register(action, move |body: Vec<u8>, _context: RequestContext| {
        let node = node_of(&node);
        async move {
            let node = node?;
            let request: Req = decode(&body)?;
            let worker = node.clone();
            let answer = node
                .pools
                .management
                .run(move || {
                    let coordination = coordination_of(&worker)?;
                    work(&worker, &coordination, request)
                })
                .await?;
            encode(&answer)
        }
    });
}

/// Binds the node's transport on `host:port` (port 0: any free one) and serves every action;
/// returns the address bound and the server's handle (dropping it stops the server).
pub(crate) fn bind_transport(
    runtime: &tokio::runtime::Runtime,
    host: &str,
    port: u16,
    node: NodeCell,
) -> Result<(SocketAddr, ServerHandle)> {
    let address = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| {
            Error::illegal_argument(format!("invalid transport address [{host}:{port}]"))
        })?;
    let mut handlers = Handlers::new();
    on_management(
        &mut handlers,
        &node,
        CREATE_INDEX,
        |_, c, r: CreateIndex| c.manager.create_index(&r),
    );
    on_management(
        &mut handlers,
        &node,
        RESIZE_INDEX,
        |_, c, r: ResizeIndex| c.manager.resize_index(&r),
    );
    on_management(
        &mut handlers,
        &node,
        DELETE_INDICES,
        |_, c, r: Vec<String>| c.manager.delete_indices(&r),
    );
    on_management(
        &mut handlers,
        &node,
        UPDATE_METADATA,
        |_, c, r: MetadataUpdate| c.manager.update_metadata(&r),
    );
    on_management(
        &mut handlers,
        &node,
        UPDATE_CUSTOM,
        |_, c, r: CustomUpdate| c.manager.update_custom(&r),
    );
    on_management(
        &mut handlers,
        &node,
        UPDATE_ALIASES,
        |_, c, r: AliasesUpdate| c.manager.update_aliases(&r),
    );
    on_management(
        &mut handlers,
        &node,
        SHARD_REPORT,
        |_, c, r: ShardReport| c.manager.shard_report(&r),
    );
    on_management(
        &mut handlers,
        &node,
        UPDATE_CLUSTER_SETTINGS,
        |_, c, r: ClusterSettingsUpdate| c.manager.update_cluster_settings(&r),
    );
    on_management(
        &mut handlers,
        &node,
        PUT_PIPELINE,
        |_, c, r: PutPipeline| c.manager.put_pipeline(&r),
    );
    on_management(
        &mut handlers,
        &node,
        DELETE_PIPELINES,
        |_, c, ids: Vec<String>| c.manager.delete_pipelines(&ids),
    );
    on_management(
        &mut handlers,
        &node,
        crate::snapshots::SNAPSHOT_SHARD,
        |n, _, r: crate::snapshots::ShardSnapshotRequest| {
            crate::snapshots::snapshot_shard_here(n, &r)
        },
    );
    on_management(&mut handlers, &node, BROADCAST, |n, _, r: Broadcast| {
        broadcast_here(n, &r)
    });
    on_management(
        &mut handlers,
        &node,
        SHARD_STATS,
        |n, _, uuids: Vec<String>| Ok(shard_counts_here(n, &uuids)),
    );
    let reporter = node.clone();
    handlers.register(
        NODE_REPORT,
        move |body: Vec<u8>, _context: RequestContext| {
            let node = node_of(&reporter);
            async move {
                let node = node?;
                let request: NodeReport = decode(&body)?;
                let params = serde_json::from_str(&request.params)
                    .map_err(|e| Error::parsing(format!("report parameters: {e}")))?;
                let answer = node.run_report(&request.report, params).await?;
                encode(&answer.to_string())
            }
        },
    );
    let writer = node.clone();
    handlers.register(
        WRITE_SHARDS,
        move |body: Vec<u8>, _context: RequestContext| {
            let node = node_of(&writer);
            async move {
                let node = node?;
                let requests: Vec<ShardWriteRequest> = decode(&body)?;
                // every group started on the `write` pool before any is awaited
                let pending: Vec<_> = requests
                    .into_iter()
                    .map(|request| write_here(&node, &node.pools.write, request))
                    .collect();
                let mut answers: Vec<Result<ShardWriteResponse>> =
                    Vec::with_capacity(pending.len());
                for answer in pending {
                    answers.push(answer.await);
                }
                encode(&answers)
            }
        },
    );
    let acknowledging = node.clone();
    handlers.register(
        STATE_APPLIED,
        move |body: Vec<u8>, _context: RequestContext| {
            let node = node_of(&acknowledging);
            async move {
                let node = node?;
                let revision: u64 = decode(&body)?;
                coordination_of(&node)?.applied(revision).await?;
                encode(&())
            }
        },
    );
    let reader = node.clone();
    handlers.register(GET_DOC, move |body: Vec<u8>, _context: RequestContext| {
        let node = node_of(&reader);
        async move {
            let node = node?;
            let request: GetRequest = decode(&body)?;
            let here = node.clone();
            node.pools
                .search
                .run(move || get_here(&here, request))
                .await
        }
    });
    super::replication::register(&mut handlers, &node);
    let searcher = node.clone();
    register_search_handlers(
        &mut handlers,
        Arc::new(move |index_uuid: &str, shard: u32| {
            let node = node_of(&searcher)?;
            local_shard(&node, index_uuid, shard)
        }),
        ReceivingRuns::new(crate::node::TRANSPORT_WORKERS - 1),
    );
    let _runtime = runtime.enter();
    TransportServer::bind(address, Arc::new(handlers))
        .map_err(|e| Error::internal(format!("bind the transport on {address}"), e))
}

/// This node's copy of a shard, for a search from another node: only a copy the node holds
/// open (a shard the routing gives another node is `Unallocated` here, and its requests fail),
/// or one it is opening as a promoted primary, which the search waits for.
fn local_shard(node: &Node, index_uuid: &str, shard: u32) -> Result<Arc<dyn ShardSearcher>> {
    let index = node
        .index_by_uuid(index_uuid)
        .ok_or_else(|| Error::index_not_found(index_uuid))?;
    node.shard_for_search(index, shard)
}

/// Runs a broadcast on the copies this node holds.
pub(crate) fn broadcast_here(node: &Node, request: &Broadcast) -> Result<()> {
    for uuid in &request.index_uuids {
        if let Some(index) = node.index_by_uuid(uuid) {
            request.op.run(&index)?;
            // what a refresh, flush or merge committed shows on every copy before it answers
            if let Some(coordination) = node.coordination() {
                super::replication::publish_primaries(coordination, &index);
            }
        }
    }
    Ok(())
}
