//! Segment replication between the copies of a shard, the node's side (the shard's side is
//! `tessera_index::replication`): replicas never index, they copy the primary's segment files.
//!
//! - Writes: the primary forwards the operations it logged to every assigned replica
//!   ([`REPLICA_WRITE`]), which appends them to its own translog, durably, without indexing
//!   them; the write is acknowledged once every in-sync replica has them. A replica in sync
//!   that does not take them is first taken out of the in-sync set by the manager (the report
//!   carries the primary's term: a primary that was replaced cannot do it, and fails the
//!   write). A replica refuses operations of an older primary term.
//! - Segments: the node holding a primary answers [`START_RECOVERY`] (a commit of everything
//!   written so far: files, checksums, `meta.json`) and [`SEGMENT_FILE`] (a chunk of a file of
//!   a checkpoint it pinned), and after each commit of the primary sends [`PUBLISH_CHECKPOINT`]
//!   to the nodes holding its replicas. A replica copies what a checkpoint names and it lacks,
//!   then switches to it atomically (`Shard::apply_checkpoint`), trimming its translog of what
//!   the commit holds.
//! - Recovery: a new replica asks the primary to start its recovery once the primary's state
//!   shows it (so every later write is forwarded to it), and gets a commit holding every
//!   earlier one; with it copied, the replica holds every write and reports itself started:
//!   the manager puts it in the in-sync set. A forward to it that fails in between fails the
//!   recovery.
//! - Failover is the manager's (`allocation`): an in-sync replica becomes the primary under a
//!   new term, and its node opens it as one, replaying its translog above its last commit.
//!
//! A refresh asked for (`_refresh`, `?refresh=true`) waits for the replicas to take the new
//! checkpoint before it answers, so a search that follows it sees the same documents whichever
//! copy serves it; the refreshes the node schedules publish without waiting.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_cluster::allocation::replica_on;
use tessera_cluster::transport::{Handlers, RequestContext};
use tessera_cluster::{ClusterState, DiscoveryNode, ShardState};
use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};
use tessera_index::index_service::ShardSlot;
use tessera_index::replication::{FileMeta, ReplicationCheckpoint, CHUNK_BYTES};
use tessera_index::shard::Shard;
use tessera_index::translog::Operation;
use tessera_index::IndexService;
use tessera_search::messages::{decode, encode};

use super::actions::{coordination_of, node_of, NodeCell, SHARD_REPORT};
use super::manager::ShardReport;
use super::recovery_state::{Recoveries, RecoveryState, RecoveryType};
use super::Coordination;
use crate::node::Node;
use crate::write::ShardInfo;

/// A replica's start of recovery, to the node holding the primary: answered with a commit of
/// everything written before the replica was forwarded writes.
pub const START_RECOVERY: &str = "internal:index/shard/recovery/start_recovery";
/// Operations the primary logged, to a node holding a replica.
pub const REPLICA_WRITE: &str = "indices:data/write/bulk[s][r]";
/// A chunk of a file of a checkpoint the primary pinned.
pub const SEGMENT_FILE: &str = "internal:index/shard/replication/get_segment_files";
/// A primary's new checkpoint, to a node holding one of its replicas; answered once applied.
pub const PUBLISH_CHECKPOINT: &str = "indices:admin/publish_checkpoint";

/// How long one transport call of a copy may take (a chunk is at most `CHUNK_BYTES`).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a refresh waits for the replicas to take its checkpoint.
const PUBLISH_WAIT: Duration = Duration::from_secs(30);

/// A shard copy, by index uuid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CopyOf {
    pub index_uuid: String,
    pub shard: u32,
}

/// A [`SEGMENT_FILE`] request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileChunk {
    pub copy: CopyOf,
    pub generation: u64,
    pub name: String,
    pub offset: u64,
    pub len: u32,
}

/// A [`PUBLISH_CHECKPOINT`] request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Published {
    pub copy: CopyOf,
    pub checkpoint: ReplicationCheckpoint,
}

/// A [`START_RECOVERY`] request: the replica's allocation id, and the state version that
/// assigned it (the primary waits to see it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StartRecovery {
    pub copy: CopyOf,
    pub allocation_id: String,
    pub state_version: u64,
}

/// A [`REPLICA_WRITE`] request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplicaWrite {
    pub copy: CopyOf,
    pub primary_term: u64,
    pub operations: Vec<Operation>,
}

/// The node's replication work, on pools of its own (never the transport's runtime, nor the
/// management pool the cluster state needs): `copy` runs this node's replicas' copies, which
/// wait for other nodes; `source` answers other nodes' copies and publishes checkpoints, and
/// never waits for another node, so two nodes copying from each other cannot deadlock.
pub struct Replication {
    copy: ThreadPool,
    source: ThreadPool,
    recovering: Mutex<HashSet<CopyOf>>,
    /// Allocation ids of replicas whose recovery this node's primaries started: every write
    /// since must reach them, or their recovery fails.
    recovery_started: Mutex<HashSet<String>>,
    /// The recoveries of this node's copies, and how far its replicas are behind.
    pub(crate) recoveries: Recoveries,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            copy: ThreadPool::new("replication", 2, 10_000),
            source: ThreadPool::new("replication_source", 2, 10_000),
            recovering: Mutex::new(HashSet::new()),
            recovery_started: Mutex::new(HashSet::new()),
            recoveries: Recoveries::default(),
        }
    }
}

/// Registers the handlers of a node holding primaries ([`CHECKPOINT`], [`SEGMENT_FILE`]) and
/// replicas ([`PUBLISH_CHECKPOINT`]).
pub(crate) fn register(handlers: &mut Handlers, node: &NodeCell) {
    let cell = node.clone();
    handlers.register(START_RECOVERY, move |body: Vec<u8>, _: RequestContext| {
        let node = node_of(&cell);
        async move {
            let node = node?;
            let request: StartRecovery = decode(&body)?;
            let coordination = coordination_of(&node)?;
            let (here, worker) = (node.clone(), coordination.clone());
            let checkpoint = coordination
                .replication
                .source
                .run(move || start_recovery(&here, &worker, &request))
                .await?;
            encode(&checkpoint)
        }
    });
    let cell = node.clone();
    handlers.register(REPLICA_WRITE, move |body: Vec<u8>, _: RequestContext| {
        let node = node_of(&cell);
        async move {
            let node = node?;
            let request: ReplicaWrite = decode(&body)?;
            let here = node.clone();
            node.pools
                .write
                .run(move || {
                    let index = here
                        .index_by_uuid(&request.copy.index_uuid)
                        .ok_or_else(|| Error::index_not_found(&request.copy.index_uuid))?;
                    let replica = index.shard(request.copy.shard)?;
                    if !replica.is_replica() {
                        return Err(Error::illegal_state(format!(
                            "[{}][{}] is not a replica on this node",
                            index.name(),
                            request.copy.shard
                        )));
                    }
                    replica.replicate_ops(request.primary_term, &request.operations)
                })
                .await?;
            encode(&())
        }
    });
    let cell = node.clone();
    handlers.register(SEGMENT_FILE, move |body: Vec<u8>, _: RequestContext| {
        let node = node_of(&cell);
        async move {
            let node = node?;
            let chunk: FileChunk = decode(&body)?;
            let pool = coordination_of(&node)?;
            let here = node.clone();
            let bytes = pool
                .replication
                .source
                .run(move || {
                    primary_here(&here, &chunk.copy)?.read_checkpoint_file(
                        chunk.generation,
                        &chunk.name,
                        chunk.offset,
                        chunk.len as usize,
                    )
                })
                .await?;
            encode(&bytes)
        }
    });
    let cell = node.clone();
    handlers.register(
        PUBLISH_CHECKPOINT,
        move |body: Vec<u8>, _: RequestContext| {
            let node = node_of(&cell);
            async move {
                let node = node?;
                let published: Published = decode(&body)?;
                let coordination = coordination_of(&node)?;
                let arrived = tessera_common::time::now_millis();
                let recoveries = &coordination.replication.recoveries;
                recoveries.published(
                    &published.copy.index_uuid,
                    published.copy.shard,
                    &published.checkpoint,
                );
                let here = node.clone();
                let worker = coordination.clone();
                coordination
                    .replication
                    .copy
                    .run(move || {
                        let index = here
                            .index_by_uuid(&published.copy.index_uuid)
                            .ok_or_else(|| Error::index_not_found(&published.copy.index_uuid))?;
                        let copy = published.copy.clone();
                        replicate(
                            &worker,
                            &index,
                            copy.shard,
                            Some(published.checkpoint),
                            None,
                        )?;
                        let recoveries = &worker.replication.recoveries;
                        recoveries.applied(&copy.index_uuid, copy.shard, arrived);
                        Ok(())
                    })
                    .await?;
                encode(&())
            }
        },
    );
}

/// This node's copy of a shard, when it is the primary (replicas do not hand out files: they
/// may be behind).
fn primary_here(node: &Node, copy: &CopyOf) -> Result<Arc<Shard>> {
    let index = node
        .index_by_uuid(&copy.index_uuid)
        .ok_or_else(|| Error::index_not_found(&copy.index_uuid))?;
    let shard = index.shard(copy.shard)?;
    if shard.is_replica() {
        return Err(not_primary(&index, copy.shard));
    }
    Ok(shard)
}

fn not_primary(index: &IndexService, shard: u32) -> Error {
    Error::new(
        "shard_not_found_exception",
        404,
        format!("no primary of [{}][{shard}] on this node", index.name()),
    )
}

/// The node holding the started primary of `shard` of `index`, from `state`.
fn primary_node(state: &ClusterState, index: &IndexService, shard: u32) -> Result<DiscoveryNode> {
    let meta = index.metadata();
    state
        .shard_of(&meta.name, &meta.uuid, shard)
        .and_then(|table| table.primary())
        .filter(|primary| primary.state == ShardState::Started)
        .and_then(|primary| state.nodes.get(primary.node_id.as_ref()?))
        .cloned()
        .ok_or_else(|| {
            tessera_index::shard::shard_not_active(
                &meta.name,
                shard,
                "its primary is not started: a replica has nothing to copy from",
            )
        })
}

/// The primary's side of [`START_RECOVERY`]: once this node's state shows the replica
/// assigned (so that every write from now on is forwarded to it), a commit of everything
/// written so far, which the replica copies.
fn start_recovery(
    node: &Node,
    coordination: &Coordination,
    request: &StartRecovery,
) -> Result<ReplicationCheckpoint> {
    let state = coordination
        .holder
        .wait_for_version(request.state_version, CALL_TIMEOUT)
        .ok_or_else(|| {
            Error::new(
                "process_cluster_event_timeout_exception",
                503,
                "the primary's node did not apply the state that assigned the replica in time",
            )
        })?;
    let primary = primary_here(node, &request.copy)?;
    let index = node
        .index_by_uuid(&request.copy.index_uuid)
        .ok_or_else(|| Error::index_not_found(&request.copy.index_uuid))?;
    let meta = index.metadata();
    let assigned = state
        .shard_of(&meta.name, &meta.uuid, request.copy.shard)
        .is_some_and(|table| {
            table.replicas().any(|copy| {
                copy.state != ShardState::Unassigned
                    && copy.allocation_id.as_deref() == Some(request.allocation_id.as_str())
            })
        });
    if !assigned {
        return Err(Error::illegal_state(format!(
            "[{}][{}] has no replica [{}] to recover",
            meta.name, request.copy.shard, request.allocation_id
        )));
    }
    coordination
        .replication
        .recovery_started
        .lock()
        .unwrap()
        .insert(request.allocation_id.clone());
    primary.refresh()?;
    primary.replication_checkpoint()
}

/// Brings this node's replica of `shard` up to `checkpoint` (`None`: a recovery, from a commit
/// the primary makes for it, see [`START_RECOVERY`]), copying the files it lacks from the node
/// holding the primary. Returns whether the replica moved (an older checkpoint than the one
/// held changes nothing).
pub(crate) fn replicate(
    coordination: &Coordination,
    index: &IndexService,
    shard: u32,
    checkpoint: Option<ReplicationCheckpoint>,
    allocation_id: Option<&str>,
) -> Result<bool> {
    let replica = index.shard(shard)?;
    if !replica.is_replica() {
        return Err(Error::illegal_state(format!(
            "[{}][{shard}] is not a replica on this node",
            index.name()
        )));
    }
    let source = primary_node(&coordination.holder.current(), index, shard)?;
    let copy = CopyOf {
        index_uuid: index.metadata().uuid.clone(),
        shard,
    };
    let recoveries = &coordination.replication.recoveries;
    let recovering = checkpoint.is_none();
    if recovering {
        let (local, now) = (
            coordination.local().clone(),
            tessera_common::time::now_millis(),
        );
        let state = RecoveryState::new(
            index,
            shard,
            RecoveryType::Peer,
            Some(source.clone()),
            local,
            now,
        );
        let allocation_id = allocation_id.map(String::from);
        recoveries.start(RecoveryState {
            allocation_id,
            ..state
        });
    }
    let outcome = copy_checkpoint(
        coordination,
        &replica,
        &copy,
        &source,
        checkpoint,
        allocation_id,
    );
    if recovering {
        let failure = outcome.as_ref().err().map(|e| e.to_string());
        recoveries.finished(
            &copy.index_uuid,
            shard,
            failure,
            tessera_common::time::now_millis(),
        );
    }
    outcome
}

/// [`replicate`]'s copy: a recovery (no `checkpoint`) is counted in the node's recoveries.
fn copy_checkpoint(
    coordination: &Coordination,
    replica: &Shard,
    copy: &CopyOf,
    source: &DiscoveryNode,
    checkpoint: Option<ReplicationCheckpoint>,
    allocation_id: Option<&str>,
) -> Result<bool> {
    let recoveries = &coordination.replication.recoveries;
    let recovering = checkpoint.is_none();
    let checkpoint = match (checkpoint, allocation_id) {
        (Some(checkpoint), _) => checkpoint,
        (None, Some(allocation_id)) => {
            let request = StartRecovery {
                copy: copy.clone(),
                allocation_id: allocation_id.to_string(),
                state_version: coordination.holder.current().version,
            };
            let checkpoint: ReplicationCheckpoint =
                coordination.call_blocking(source, START_RECOVERY, &request, CALL_TIMEOUT)?;
            let missing = replica.missing_files(&checkpoint);
            let now = tessera_common::time::now_millis();
            recoveries.copying(
                &copy.index_uuid,
                copy.shard,
                &checkpoint.files,
                &missing,
                now,
            );
            checkpoint
        }
        (None, None) => return Err(Error::illegal_state("a recovery names its replica")),
    };
    let generation = checkpoint.generation;
    let mut fetch = |file: &FileMeta, offset: u64, len: usize| -> Result<Vec<u8>> {
        let request = FileChunk {
            copy: copy.clone(),
            generation,
            name: file.name.clone(),
            offset,
            len: len.min(CHUNK_BYTES) as u32,
        };
        let bytes: Vec<u8> =
            coordination.call_blocking(source, SEGMENT_FILE, &request, CALL_TIMEOUT)?;
        if recovering {
            let end = offset + bytes.len() as u64;
            let (chunk, now) = (
                (bytes.len() as u64, end),
                tessera_common::time::now_millis(),
            );
            recoveries.copied(&copy.index_uuid, copy.shard, file, chunk, now);
        }
        Ok(bytes)
    };
    replica.apply_checkpoint(&checkpoint, &mut fetch)
}

/// How long a primary waits for its replicas to take a write.
const REPLICA_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// A replica a primary forwards writes to.
struct Target {
    node: DiscoveryNode,
    allocation_id: String,
    in_sync: bool,
}

/// Forwards the operations this node's primary of `shard` logged to the replicas the routing
/// assigns ([`REPLICA_WRITE`]) and waits for their answers. A replica that does not take them
/// while in sync (or while recovering from a commit this primary made for it) is reported
/// failed to the manager, which takes it out of the in-sync set, before this returns; when
/// that cannot be done (no manager, or this primary was replaced: its term is old) the write
/// fails. Returns the copies that have the operations.
///
/// It waits without holding a thread: the primaries of every node wait for replicas on other
/// nodes, whose writes run on the same pools.
pub(crate) async fn replicate_writes(
    node: &Arc<Node>,
    coordination: &Arc<Coordination>,
    index: &IndexService,
    shard: u32,
    operations: Vec<Operation>,
) -> Result<ShardInfo> {
    let meta = index.metadata();
    let total = 1 + meta.number_of_replicas();
    let state = coordination.holder.current();
    let Some(table) = state.shard_of(&meta.name, &meta.uuid, shard) else {
        return Ok(ShardInfo {
            total,
            successful: 1,
            failed: 0,
        });
    };
    let targets: Vec<Target> = table
        .replicas()
        .filter(|copy| copy.state != ShardState::Unassigned)
        .filter_map(|copy| {
            let allocation_id = copy.allocation_id.clone()?;
            Some(Target {
                node: state.nodes.get(copy.node_id.as_ref()?)?.clone(),
                in_sync: table.in_sync.contains(&allocation_id),
                allocation_id,
            })
        })
        .collect();
    if targets.is_empty() {
        return Ok(ShardInfo {
            total,
            successful: 1,
            failed: 0,
        });
    }
    let request = ReplicaWrite {
        copy: CopyOf {
            index_uuid: meta.uuid.clone(),
            shard,
        },
        primary_term: table.primary_term,
        operations,
    };
    let deadline = std::time::Instant::now() + REPLICA_WRITE_TIMEOUT;
    let calls: Vec<_> = targets
        .iter()
        .map(|target| {
            coordination.send_while_member::<_, ()>(
                &target.node,
                REPLICA_WRITE,
                &request,
                Some(deadline),
            )
        })
        .collect();
    // the calls started when sent: waiting for them in turn waits for the slowest
    let mut answers = Vec::with_capacity(calls.len());
    for call in calls {
        answers.push(call.await);
    }
    let (mut successful, mut failed) = (1, 0);
    for (target, answer) in targets.into_iter().zip(answers) {
        let Err(e) = answer else {
            successful += 1;
            continue;
        };
        failed += 1;
        let started = coordination
            .replication
            .recovery_started
            .lock()
            .unwrap()
            .contains(&target.allocation_id);
        if target.in_sync || started {
            let why = format!(
                "failed to perform indices:data/write/bulk[s] on replica [{}][{shard}], node [{}]: {}[{}]",
                meta.name,
                target.node.name,
                e.kind(),
                e.reason()
            );
            eprintln!("{why}");
            let (reporter, term) = (coordination.clone(), table.primary_term);
            let (name, uuid) = (meta.name.clone(), meta.uuid.clone());
            node.pools
                .management
                .run(move || reporter.fail_replica(&name, &uuid, shard, &target, term, why))
                .await?;
        }
    }
    Ok(ShardInfo {
        total,
        successful,
        failed,
    })
}

/// Sends the latest checkpoint of this node's primary of `shard` to the nodes holding its
/// replicas; with `wait`, returns once they took it (or failed to), else at once.
pub(crate) fn publish(
    coordination: &Arc<Coordination>,
    index: &IndexService,
    shard: u32,
    wait: bool,
) {
    let Some(answers) = publish_calls(coordination, index, shard) else {
        return;
    };
    if wait {
        let _ = coordination.block_on(answers);
    } else {
        coordination.runtime().spawn(answers);
    }
}

/// The answers of a publication whose calls have started.
pub(crate) type Publication = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Starts [`publish`]ing: takes the checkpoint (blocking: it may link files) and sends it;
/// the future waits for the replicas' answers. `None` when there is nothing to publish.
pub(crate) fn publish_calls(
    coordination: &Arc<Coordination>,
    index: &IndexService,
    shard: u32,
) -> Option<Publication> {
    let meta = index.metadata();
    let state = coordination.holder.current();
    let table = state.shard_of(&meta.name, &meta.uuid, shard)?;
    let targets: Vec<DiscoveryNode> = table
        .replicas()
        .filter(|copy| copy.state != ShardState::Unassigned)
        .filter_map(|copy| state.nodes.get(copy.node_id.as_ref()?).cloned())
        .collect();
    if targets.is_empty() {
        return None;
    }
    let checkpoint = match index.shard(shard).and_then(|primary| {
        if primary.is_replica() {
            Err(not_primary(index, shard))
        } else {
            primary.replication_checkpoint()
        }
    }) {
        Ok(checkpoint) => checkpoint,
        Err(e) => {
            eprintln!("[{}][{shard}] cannot publish a checkpoint: {e}", meta.name);
            return None;
        }
    };
    let published = Published {
        copy: CopyOf {
            index_uuid: meta.uuid.clone(),
            shard,
        },
        checkpoint,
    };
    let deadline = std::time::Instant::now() + PUBLISH_WAIT;
    let calls: Vec<_> = targets
        .iter()
        .map(|node| {
            coordination.send_until::<_, ()>(node, PUBLISH_CHECKPOINT, &published, Some(deadline))
        })
        .collect();
    let name = meta.name.clone();
    // the calls started when sent: waiting for them in turn waits for the slowest
    Some(Box::pin(async move {
        for (node, call) in targets.iter().zip(calls) {
            if let Err(e) = call.await {
                // the replica catches up with the next checkpoint (or recovers again)
                eprintln!(
                    "[{name}][{shard}] replica on [{}] did not take the checkpoint: {e}",
                    node.name
                );
            }
        }
    }))
}

/// [`publish`]es the latest checkpoint of every primary this node holds of `index`, and waits
/// for the replicas to take them.
pub(crate) fn publish_primaries(coordination: &Arc<Coordination>, index: &IndexService) {
    for (shard, slot) in index.shard_slots().iter().enumerate() {
        if matches!(slot, ShardSlot::Started(copy) if !copy.is_replica()) {
            publish(coordination, index, shard as u32, true);
        }
    }
}

impl Coordination {
    /// The recoveries of this node's copies and how far its replicas are behind (`_recovery`,
    /// `_cat/recovery`, `_cat/segment_replication`).
    pub fn recoveries(&self) -> &Recoveries {
        &self.replication.recoveries
    }

    /// Publishes the new commit of this node's primary of `shard` to its replicas, without
    /// waiting for them (see [`publish`]); called after each commit.
    pub(crate) fn publish_later(self: &Arc<Self>, index: Arc<IndexService>, shard: u32) {
        let this = self.clone();
        let name = index.name();
        let submitted = self
            .replication
            .source
            .execute(move || publish(&this, &index, shard, false));
        if let Err(e) = submitted {
            eprintln!("[{name}][{shard}] cannot publish a checkpoint: {e}");
        }
    }

    /// Recovers this node's replica of `shard` (opened, initializing in the routing) from the
    /// primary, then reports it started; one recovery per copy at a time. A recovery that
    /// fails reports the replica failed, and the manager allocates it again.
    pub(crate) fn recover_replica(
        self: &Arc<Self>,
        index: Arc<IndexService>,
        shard: u32,
        allocation_id: String,
    ) {
        let copy = CopyOf {
            index_uuid: index.metadata().uuid.clone(),
            shard,
        };
        if !self
            .replication
            .recovering
            .lock()
            .unwrap()
            .insert(copy.clone())
        {
            return;
        }
        let this = self.clone();
        let name = index.name();
        let submitted = self.replication.copy.execute(move || {
            let outcome = this.recover_once(&index, shard, &allocation_id);
            let failure = outcome.err().map(|e| {
                format!(
                    "failed recovery on node [{}]: {}[{}]",
                    this.local().id,
                    e.kind(),
                    e.reason()
                )
            });
            if let Some(why) = &failure {
                eprintln!("[{}][{shard}] replica {why}", index.name());
            }
            this.report_replica(&index, shard, &allocation_id, failure);
            this.replication.recovering.lock().unwrap().remove(&copy);
        });
        if let Err(e) = submitted {
            eprintln!("[{name}][{shard}] cannot start the replica's recovery: {e}");
        }
    }

    /// One recovery: waits a little for the primary to be started (the routing allocates a
    /// replica only then, but this node may not have applied that state yet), then copies.
    fn recover_once(&self, index: &IndexService, shard: u32, allocation_id: &str) -> Result<()> {
        let mut tries = 0;
        loop {
            match replicate(self, index, shard, None, Some(allocation_id)) {
                Ok(_) => return Ok(()),
                Err(e) if tries < 5 && e.status() >= 500 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(200 << tries));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Has the manager take a replica that missed a write out of the in-sync set (failing the
    /// copy, which recovers again), as the primary under `primary_term`: an error when that
    /// cannot be done, and the write must not be acknowledged.
    fn fail_replica(
        &self,
        index: &str,
        index_uuid: &str,
        shard: u32,
        target: &Target,
        primary_term: u64,
        why: String,
    ) -> Result<()> {
        let report = ShardReport {
            index: index.to_string(),
            index_uuid: index_uuid.to_string(),
            shard,
            node_id: target.node.id.clone(),
            replica: Some(target.allocation_id.clone()),
            primary_term: Some(primary_term),
            failure: Some(why),
        };
        self.to_manager(SHARD_REPORT, &report, |manager, report| {
            manager.shard_report(report)
        })
        .map(|_| ())
        .map_err(|e| {
            tessera_index::shard::shard_not_active(
                index,
                shard,
                &format!(
                    "a replica missed the write and could not be marked stale: {}",
                    e.reason()
                ),
            )
        })
    }

    /// Tells the manager how this node's replica `allocation_id` of `shard` is doing.
    fn report_replica(
        &self,
        index: &IndexService,
        shard: u32,
        allocation_id: &str,
        failure: Option<String>,
    ) {
        let meta = index.metadata();
        let report = ShardReport {
            index: meta.name.clone(),
            index_uuid: meta.uuid.clone(),
            shard,
            node_id: self.local().id.clone(),
            replica: Some(allocation_id.to_string()),
            primary_term: None,
            failure,
        };
        if let Err(e) = self.to_manager(SHARD_REPORT, &report, |manager, report| {
            manager.shard_report(report)
        }) {
            eprintln!(
                "[{}][{shard}] cannot report the replica to the cluster manager: {e}",
                meta.name
            );
        }
    }

    /// Brings this node's copy of `shard` in line with a replica the routing gives it:
    /// opens it, recovers it while it initializes. Returns false when the routing gives this
    /// node no replica of the shard.
    pub(crate) fn reconcile_replica(
        self: &Arc<Self>,
        node: &Arc<Node>,
        state: &ClusterState,
        index: &Arc<IndexService>,
        shard: u32,
        slot: &ShardSlot,
    ) -> bool {
        let meta = index.metadata();
        let Some(routing) = state
            .index(&meta.name)
            .filter(|i| i.metadata.uuid == meta.uuid)
        else {
            return false;
        };
        let Some((allocation_id, routed)) = replica_on(&routing.routing, shard, &self.local().id)
        else {
            return false;
        };
        match slot {
            ShardSlot::Unallocated => {
                let this = self.clone();
                let index = index.clone();
                let opened = node.pools.management.execute(move || {
                    if let ShardSlot::Started(_) = index.allocate_replica(shard) {
                        this.recover_replica(index, shard, allocation_id);
                    }
                });
                if let Err(e) = opened {
                    eprintln!("cannot open replica [{shard}]: {e}");
                }
            }
            // a primary here that the routing made a replica is closed, and opened again as one
            ShardSlot::Started(copy) if !copy.is_replica() => index.release_shard(shard),
            ShardSlot::Started(_) if routed == ShardState::Initializing => {
                self.recover_replica(index.clone(), shard, allocation_id)
            }
            ShardSlot::Failed(failure) if routed != ShardState::Unassigned => {
                let why = format!(
                    "failed shard on node [{}]: {}[{}]",
                    self.local().id,
                    failure.error.kind(),
                    failure.error.reason()
                );
                let this = self.clone();
                let index = index.clone();
                let _ = self
                    .replication
                    .copy
                    .execute(move || this.report_replica(&index, shard, &allocation_id, Some(why)));
            }
            _ => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_the_wire() {
        let chunk = FileChunk {
            copy: CopyOf {
                index_uuid: "u".into(),
                shard: 2,
            },
            generation: 7,
            name: "abc.idx".into(),
            offset: 1 << 20,
            len: 4096,
        };
        let back: FileChunk = decode(&encode(&chunk).unwrap()).unwrap();
        assert_eq!(
            (back.copy, back.generation, back.name, back.offset, back.len),
            (chunk.copy, 7, "abc.idx".to_string(), 1 << 20, 4096)
        );
    }
}
