//! One shard: a tantivy index in its own directory, with its translog, sequence numbers and
//! versions, and the searcher snapshot that searches read.
//!
//! A refresh is a tantivy commit (tantivy has no uncommitted near-real-time readers), so a
//! refresh is also a flush: after it the translog rolls and older generations are deleted.
//! Writes between refreshes are tracked in the live version map, which answers version checks
//! and realtime gets for documents that searches cannot see yet.

use crate::sorted_columns::SortedColumns;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use bytes::Bytes;
use serde_json::json;
use tantivy::columnar::Column;
use tantivy::directory::Directory as _;
use tantivy::index::SegmentId;
use tantivy::indexer::{IndexWriterOptions, UserOperation};
use tantivy::merge_policy::LogMergePolicy;
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term, TERMINATED,
};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, Mapping};

use crate::index_queue::{IndexQueue, QueuedDoc, Weighed, QUEUE_BYTES, QUEUE_DOCS};

use crate::replication::{self, Replication};
use crate::schema_change::grow_schema;
use crate::stats::ShardStats;
use crate::translog::{self, OpKind, Operation, Translog};

/// Shards not searched for this long are search-idle: scheduled refreshes skip them (unless
/// `refresh_interval` is set explicitly) and the next search refreshes first, as in OpenSearch.
pub const SEARCH_IDLE_AFTER_MILLIS: u64 = 30_000;

/// How long the version of a deleted document is remembered (`index.gc_deletes`).
pub const GC_DELETES_MILLIS: u64 = 60_000;

/// `index.translog.durability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync before acknowledging each request.
    Request,
    /// fsync every `sync_interval`.
    Async,
}

/// How a shard's writer is sized.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub durability: Durability,
    pub indexing_threads: usize,
    pub memory_budget_per_thread: usize,
    pub merge_threads: usize,
    /// `index.merge.enabled`: false keeps every flushed segment (benchmarks that need many
    /// segments, tests); only `_forcemerge` merges then.
    pub merges: bool,
    /// `index.shard.check_on_startup` other than `false`: verify every segment file's checksum
    /// when the shard opens.
    pub verify_checksums: bool,
    /// `index.knn.advanced.approximate_threshold`: segments with at least this many vectors of
    /// a field get its HNSW graph (-1 never, 0 always).
    pub knn_threshold: i64,
}

impl Default for ShardConfig {
    fn default() -> Self {
        ShardConfig {
            durability: Durability::Request,
            indexing_threads: 1,
            memory_budget_per_thread: 64 << 20,
            merge_threads: 1,
            merges: true,
            verify_checksums: true,
            knn_threshold: tessera_knn::segment_graph::DEFAULT_APPROXIMATE_THRESHOLD,
        }
    }
}

/// Version information of a live document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocVersion {
    pub version: u64,
    pub seq_no: u64,
    pub primary_term: u64,
}

/// A document read by id.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredDoc {
    pub id: String,
    pub version: DocVersion,
    pub source: Option<Bytes>,
    pub routing: Option<String>,
}

#[derive(Clone, Debug)]
struct LiveEntry {
    version: DocVersion,
    deleted: bool,
    /// Kept for documents with client-chosen ids, so gets and updates need no refresh.
    source: Option<Bytes>,
    routing: Option<String>,
}

/// What a search reads: one point-in-time view of the shard.
pub struct ShardSnapshot {
    pub searcher: Searcher,
    pub table: Arc<FieldTable>,
    /// Bumped on every refresh, for tests and stats.
    pub generation: u64,
    /// Segment ordinals in index order (oldest writes first). tantivy lists segments in no
    /// particular order; OpenSearch breaks ties between equal hits by index order, so searches
    /// walk and compare segments in this order.
    pub segments_in_order: Vec<u32>,
    /// The rank of each segment ordinal in `segments_in_order`.
    pub segment_ranks: Vec<u32>,
    /// Sorted copies of integer columns, shared by the shard's snapshots.
    pub sorted: Arc<SortedColumns>,
    /// The segments' vector files, opened by the first k-NN search of this snapshot.
    pub knn_vectors: tessera_knn::segment::ShardVectorsCell,
    /// The segments' `_id` files, opened by the first fetch of this snapshot.
    pub segment_ids: crate::segment_ids::ShardIdsCell,
}

impl ShardSnapshot {
    pub fn new(
        searcher: Searcher,
        table: Arc<FieldTable>,
        generation: u64,
        sorted: Arc<SortedColumns>,
    ) -> ShardSnapshot {
        sorted.retain(searcher.segment_readers());
        let first_seq_no: Vec<u64> = searcher
            .segment_readers()
            .iter()
            .map(|segment| {
                segment
                    .fast_fields()
                    .column_opt::<u64>(tessera_mapping::field_table::SEQ_NO_FIELD)
                    .ok()
                    .flatten()
                    .map(|column| column.min_value())
                    .unwrap_or(u64::MAX)
            })
            .collect();
        let mut segments_in_order: Vec<u32> = (0..first_seq_no.len() as u32).collect();
        segments_in_order.sort_by_key(|&ord| (first_seq_no[ord as usize], ord));
        let mut segment_ranks = vec![0u32; segments_in_order.len()];
        for (rank, &ord) in segments_in_order.iter().enumerate() {
            segment_ranks[ord as usize] = rank as u32;
        }
        ShardSnapshot {
            searcher,
            table,
            generation,
            segments_in_order,
            segment_ranks,
            sorted,
            knn_vectors: Default::default(),
            segment_ids: Default::default(),
        }
    }
}

pub(crate) struct WriteState {
    pub(crate) index: Index,
    writer: Option<IndexWriter<QueuedDoc>>,
    pub(crate) reader: IndexReader,
    pub(crate) table: Arc<FieldTable>,
    mapping_version: u64,
    /// The latest mapping the shard was given, as `GET _mapping` renders it: each commit's
    /// payload carries it, so a copied commit is self-describing (a replica builds its
    /// [`FieldTable`] from it).
    mapping_json: serde_json::Value,
    /// The replication generation of the last commit, written in each commit's payload and
    /// bumped by every commit: tantivy's opstamp cannot serve, as a commit with nothing new
    /// right after the writer reopened (a force merge, a grown schema) repeats it.
    pub(crate) commit_generation: u64,
    live: HashMap<String, LiveEntry>,
    /// Documents with generated ids were written since the last refresh without entries in
    /// `live` (nobody knows their ids yet, so tracking them is wasted work, as OpenSearch
    /// reasons): an id missing from `live` then needs a refresh before it can be looked up.
    unsafe_auto_ids: bool,
    /// Versions of deleted documents, kept across refreshes for `GC_DELETES_MILLIS` so that a
    /// document deleted and indexed again keeps counting versions (OpenSearch's gc_deletes).
    tombstones: HashMap<String, (u64, u64)>,
    pub(crate) next_seq_no: u64,
    dirty: bool,
    generation: u64,
    /// Writes not yet handed to the writer, sent in groups of [`WRITER_BATCH`] (and before
    /// any commit): one hand-over per document cost a channel send and often a thread wake-up.
    pending: Vec<Weighed>,
    /// The documents handed to the writer that its indexing thread has not taken yet.
    queue: Arc<IndexQueue>,
}

/// Writes handed to tantivy's indexing thread at a time: one hand-over per document cost a
/// channel send and often a thread wake-up, and groups of 8 and of 64 loaded nyc_taxis more
/// slowly than 16. How much waits in all is bounded by the shard's [`IndexQueue`].
const WRITER_BATCH: usize = 16;

impl WriteState {
    /// The state of a replica: a reader of copied commits, no writer, nothing to track.
    pub(crate) fn read_only(index: Index, reader: IndexReader, table: Arc<FieldTable>) -> Self {
        WriteState {
            index,
            writer: None,
            reader,
            table,
            mapping_version: 0,
            mapping_json: serde_json::Value::Null,
            commit_generation: 0,
            live: HashMap::new(),
            unsafe_auto_ids: false,
            tombstones: HashMap::new(),
            next_seq_no: 0,
            dirty: false,
            generation: 0,
            pending: Vec::new(),
            queue: IndexQueue::new(QUEUE_DOCS, QUEUE_BYTES),
        }
    }

    /// Indexes a logged operation again (translog replay), without validating it anew.
    fn replay(&mut self, mapping: &Mapping, op: Operation) -> Result<()> {
        for term in block_terms(&self.table, &op.id) {
            self.queue(UserOperation::Delete(term), 0)?;
        }
        if op.kind == OpKind::Index {
            let table = self.table.clone();
            let (nested, doc) = match tessera_mapping::Json::parse(&op.source) {
                Ok(source) => {
                    tessera_mapping::parse_document_for_replay(mapping, &table, &op.id, &source)
                }
                // a source that no longer parses is still the acknowledged document
                Err(_) => (Vec::new(), TantivyDocument::new()),
            };
            let version = DocVersion {
                version: op.version,
                seq_no: op.seq_no,
                primary_term: op.primary_term,
            };
            let doc = with_meta_fields(
                doc,
                &table,
                &op.id,
                version,
                op.routing.as_deref(),
                &op.source,
            );
            self.queue_block(nested, doc, op.source.len())?;
        }
        self.next_seq_no = self.next_seq_no.max(op.seq_no + 1);
        self.dirty = true;
        Ok(())
    }

    /// Queues a write that weighs `bytes` (its source; 0 for deletes); sends the group once it
    /// is full.
    fn queue(&mut self, op: UserOperation, bytes: usize) -> Result<()> {
        self.pending.push((op, bytes));
        if self.pending.len() >= WRITER_BATCH {
            self.send_pending()?;
        }
        Ok(())
    }

    /// Queues a document with its nested children (children first), sending the group only
    /// after the whole block: one writer batch lands in one segment, contiguous.
    fn queue_block(
        &mut self,
        nested: Vec<TantivyDocument>,
        doc: TantivyDocument,
        bytes: usize,
    ) -> Result<()> {
        if nested.is_empty() {
            return self.queue(UserOperation::Add(doc), bytes);
        }
        for child in nested {
            self.pending.push((UserOperation::Add(child), 0));
        }
        self.queue(UserOperation::Add(doc), bytes)
    }

    /// Hands the queued writes to the writer, in order.
    fn send_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let writer = self.writer.as_ref().ok_or_else(writer_closed)?;
        writer
            .run(self.queue.enter(&mut self.pending))
            .map_err(tantivy_err("index documents"))?;
        Ok(())
    }
}

/// Opens a shard's tantivy index with the segment plugins it was created with: the k-NN
/// plugin for shards created since k-NN exists, the ids plugin for shards created since the
/// `ids` file exists (tantivy fixes the plugin set at creation and refuses a writer whose
/// plugins differ, so an older shard opens without them: it has no vectors, and its hits read
/// their `_id` from the document store).
pub fn open_index(dir: &Path) -> tantivy::Result<Index> {
    open_index_with(
        dir,
        &Arc::new(AtomicI64::new(
            tessera_knn::segment_graph::DEFAULT_APPROXIMATE_THRESHOLD,
        )),
    )
}

/// [`open_index`] with the shard's k-NN graph threshold, which the plugin reads at each flush
/// and merge.
pub fn open_index_with(dir: &Path, knn_threshold: &Arc<AtomicI64>) -> tantivy::Result<Index> {
    let mut index = Index::open_in_dir(dir)?;
    let persisted = index.load_metas()?.persisted_custom_extensions;
    let has = |extension: &str| persisted.iter().any(|ext| ext == extension);
    if has(tessera_knn::segment::EXTENSION) {
        index.register_plugin(Arc::new(tessera_knn::segment::KnnPlugin::new(
            knn_threshold.clone(),
        )));
    }
    if has(crate::segment_ids::EXTENSION) {
        index.register_plugin(Arc::new(crate::segment_ids::IdsPlugin));
    }
    Ok(index)
}

/// A `knn_vector` field needs the k-NN plugin, which a shard created before k-NN existed does
/// not have (and cannot be given): its vectors would be silently dropped, so refuse instead.
fn check_knn_support(index: &Index, table: &FieldTable) -> Result<()> {
    let has_plugin = index
        .custom_plugins()
        .iter()
        .any(|p| p.extensions().contains(&tessera_knn::segment::EXTENSION));
    if !has_plugin && !tessera_knn::segment::knn_fields(table.schema()).is_empty() {
        return Err(Error::illegal_argument(
            "[knn_vector] fields need a shard created by a Tessera version with k-NN support: reindex this index into a new one",
        ));
    }
    Ok(())
}

/// A new shard's tantivy settings (kept in its `meta.json`). The document store compresses
/// each block on the indexing thread instead of handing it to a compressor thread: the hand-over
/// (a channel of 3 blocks) put the indexing thread to sleep thousands of times a second in a
/// bulk load, each time the compressor thread waited for a core, and bulk loads took ~6% longer.
fn index_settings() -> tantivy::IndexSettings {
    tantivy::IndexSettings {
        docstore_compress_dedicated_thread: false,
        ..Default::default()
    }
}

/// Background merges: tantivy's log merge policy, waiting for 8 segments of a level; none
/// when `index.merge.enabled` is false.
fn background_merge_policy(config: &ShardConfig) -> Box<dyn tantivy::indexer::MergePolicy> {
    if !config.merges {
        return Box::new(tantivy::indexer::NoMergePolicy);
    }
    let mut policy = LogMergePolicy::default();
    policy.set_min_num_segments(8);
    Box::new(policy)
}

/// One shard of an index.
pub struct Shard {
    pub index_name: String,
    pub shard_id: u32,
    pub(crate) path: PathBuf,
    pub(crate) config: ShardConfig,
    pub(crate) state: Mutex<WriteState>,
    pub(crate) snapshot: RwLock<Arc<ShardSnapshot>>,
    /// The primary's write-ahead log; on a replica, the operations its primary forwarded (see
    /// [`crate::replication`]). Always set today; an `Option` for shards that log nothing.
    pub(crate) translog: Option<Translog>,
    pub stats: Arc<ShardStats>,
    /// The term of the primary this copy follows (or is); set on promotion.
    pub(crate) primary_term: AtomicU64,
    /// Pins of commits being copied by replicas (primary), the checkpoint held (replica).
    pub(crate) replication: Replication,
    pub(crate) last_write: AtomicU64,
    pub(crate) async_durability: std::sync::atomic::AtomicBool,
    /// Mirrors `WriteState::dirty` so the scheduler can check it without the write lock.
    pub(crate) pending_refresh: std::sync::atomic::AtomicBool,
    pub(crate) last_refresh: AtomicU64,
    pub(crate) last_search: AtomicU64,
    /// Set when a write, refresh or merge failed in a way that leaves the writer's state unknown
    /// (a full disk, an I/O error): the writer is dropped, nothing more is written or committed,
    /// and the index replaces the shard by a fresh one opened from disk (last commit plus
    /// translog), as OpenSearch fails a shard and recovers it from its store.
    pub(crate) failure: Mutex<Option<Error>>,
    /// Set once a failed engine's writer has stopped (see [`Shard::writer_closed`]).
    pub(crate) writer_closed: Arc<std::sync::atomic::AtomicBool>,
    /// Called after each commit (see [`Shard::set_commit_listener`]).
    pub(crate) commit_listener: std::sync::OnceLock<CommitListener>,
    /// `index.knn.advanced.approximate_threshold`, shared with the shard's k-NN plugin.
    pub(crate) knn_threshold: Arc<AtomicI64>,
}

/// See [`Shard::set_commit_listener`].
pub type CommitListener = Box<dyn Fn() + Send + Sync>;

/// OpenSearch's answer to a request for a shard that is not started here (failed, or still
/// opening): 503 `unavailable_shards_exception`, saying why.
pub fn shard_not_active(index: &str, shard_id: u32, why: &str) -> Error {
    Error::new(
        "unavailable_shards_exception",
        503,
        format!("[{index}][{shard_id}] primary shard is not active: {why}"),
    )
}

fn writer_closed() -> Error {
    Error::new(
        "engine_closed_exception",
        500,
        "the shard's writer is closed after a failure",
    )
}

/// Maps tantivy errors that mean damaged files (a corrupt or truncated file, a missing one) to
/// OpenSearch's `corrupt_index_exception`, so the shard fails for that reason and stays failed;
/// other errors (permissions, a full disk) stay internal and are retried.
pub(crate) fn corruption(
    context: impl std::fmt::Display,
) -> impl FnOnce(tantivy::TantivyError) -> Error {
    move |e| {
        use tantivy::directory::error::OpenReadError;
        let damaged = match &e {
            tantivy::TantivyError::DataCorruption(_)
            | tantivy::TantivyError::IncompatibleIndex(_) => true,
            tantivy::TantivyError::OpenReadError(read) => match read {
                OpenReadError::FileDoesNotExist(_) | OpenReadError::IncompatibleIndex(_) => true,
                // a short or garbled footer reads as invalid data; too many open files, a
                // mapping limit or a permission error is not damage and may heal
                OpenReadError::IoError { io_error, .. } => matches!(
                    io_error.kind(),
                    std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
                ),
            },
            _ => false,
        };
        if damaged {
            Error::new("corrupt_index_exception", 500, format!("{context}: {e}"))
        } else {
            Error::internal(context, e)
        }
    }
}

/// Verifies the checksum in every segment file's footer (`index.shard.check_on_startup`).
pub(crate) fn verify_checksums(index: &Index) -> Result<()> {
    let damaged = index
        .validate_checksum()
        .map_err(corruption("verify segment checksums"))?;
    if damaged.is_empty() {
        return Ok(());
    }
    let mut files: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
    files.sort();
    Err(Error::new(
        "corrupt_index_exception",
        500,
        format!(
            "checksum failed (hardware problem?) : segment files {}",
            files.join(", ")
        ),
    ))
}

pub(crate) fn tantivy_err(
    context: impl std::fmt::Display,
) -> impl FnOnce(tantivy::TantivyError) -> Error {
    move |e| Error::internal(context, e)
}

pub(crate) fn register_tokenizers(index: &Index) {
    tessera_mapping::analysis::register_tokenizers(index);
}

/// What the last commit says: the next sequence number after it, and whether a translog was
/// written beside it (commits before translog checkpoints existed do not say).
fn commit_payload(index: &Index) -> Result<(u64, bool)> {
    let metas = index
        .load_metas()
        .map_err(tantivy_err("load shard metas"))?;
    let payload = metas
        .payload
        .as_deref()
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok());
    let next = payload
        .as_ref()
        .and_then(|v| v.get("max_seq_no").and_then(|n| n.as_u64()))
        .map(|n| n + 1)
        .unwrap_or(0);
    let has_translog = payload
        .as_ref()
        .is_some_and(|v| v.get("translog_generation").is_some());
    Ok((next, has_translog))
}

impl Shard {
    /// Opens (or creates) the shard at `path`, replaying the translog's operations above the
    /// last commit's `max_seq_no`. A replica's directory (promotion) replays the operations
    /// its primary forwarded above the copied commit, once each and in seq_no order (they may
    /// have arrived out of order, twice, or with gaps), commits on its own, and is a primary's
    /// directory from then on.
    pub fn open(
        index_name: &str,
        shard_id: u32,
        path: &Path,
        mapping: &Mapping,
        mapping_version: u64,
        config: ShardConfig,
    ) -> Result<Shard> {
        let index_dir = path.join("index");
        std::fs::create_dir_all(&index_dir).map_err(|e| {
            Error::internal(format!("create shard directory {}", index_dir.display()), e)
        })?;
        let knn_threshold = Arc::new(AtomicI64::new(config.knn_threshold));
        // pins of a previous process serve no replica any more
        replication::release_all_pins(path)?;
        // a replica's copy being promoted: its commit names a translog of the old primary's
        let promoted = replication::is_replica_copy(path);
        let exists = index_dir.join("meta.json").exists();
        if !exists && !promoted && path.join("translog").join("translog.ckp").exists() {
            // a translog was written beside a commit that is gone: creating an empty shard
            // would silently drop every committed document (a replica that never copied a
            // commit has only forwarded operations, all replayed below)
            return Err(Error::new(
                "corrupt_index_exception",
                500,
                format!(
                    "the shard's commit point {} is missing",
                    index_dir.join("meta.json").display()
                ),
            ));
        }
        if exists {
            let index =
                open_index_with(&index_dir, &knn_threshold).map_err(corruption("open shard"))?;
            // the writer's lock, held while the files are read and meta.json may be rewritten:
            // a writer of a failed engine that still runs merges keeps it until they end
            let lock = index
                .directory()
                .acquire_lock(&tantivy::directory::INDEX_WRITER_LOCK)
                .map_err(|e| Error::internal("lock the shard directory", e))?;
            if config.verify_checksums {
                verify_checksums(&index)?;
            }
            let (table, grew) = FieldTable::build(mapping, Some(&index.schema()))?;
            // before the schema grows: a refused field must not reach meta.json
            check_knn_support(&index, &table)?;
            drop(index);
            if grew {
                grow_schema(&index_dir, table.schema())?;
            }
            drop(lock);
        } else {
            let (table, _) = FieldTable::build(mapping, None)?;
            Index::builder()
                .schema(table.schema().clone())
                .settings(index_settings())
                .register_plugin(Arc::new(tessera_knn::segment::KnnPlugin::new(
                    knn_threshold.clone(),
                )))
                .register_plugin(Arc::new(crate::segment_ids::IdsPlugin))
                .create_in_dir(&index_dir)
                .map_err(tantivy_err("create shard"))?;
        }
        let index =
            open_index_with(&index_dir, &knn_threshold).map_err(corruption("open shard"))?;
        let (table, _) = FieldTable::build(mapping, Some(&index.schema()))?;
        check_knn_support(&index, &table)?;
        let (committed_next, commit_has_translog) = commit_payload(&index)?;
        let commit_has_translog = commit_has_translog && !promoted;
        let commit_generation = replication::commit_generation(&index)?;
        let (writer, reader) = Self::open_writer_and_reader(&index, &config)?;
        let mut state = WriteState {
            index,
            writer: Some(writer),
            reader,
            table: Arc::new(table),
            mapping_version,
            mapping_json: mapping.to_json(),
            commit_generation,
            live: HashMap::new(),
            unsafe_auto_ids: false,
            tombstones: HashMap::new(),
            next_seq_no: committed_next,
            dirty: false,
            generation: 0,
            pending: Vec::new(),
            queue: IndexQueue::new(QUEUE_DOCS, QUEUE_BYTES),
        };
        // operations newer than the last commit are indexed again, as they were acknowledged;
        // a promoted replica's were forwarded, possibly out of order or twice: replayed once
        // each, by seq_no
        let mut forwarded = BTreeMap::new();
        let translog = Translog::open(&path.join("translog"), commit_has_translog, |op| {
            if op.seq_no < committed_next {
                Ok(())
            } else if promoted {
                forwarded.entry(op.seq_no).or_insert(op);
                Ok(())
            } else {
                state.replay(mapping, op)
            }
        })?;
        for op in forwarded.into_values() {
            state.replay(mapping, op)?;
        }
        let searcher = state.reader.searcher();
        let table = state.table.clone();
        let replayed = state.dirty;
        let shard = Shard {
            index_name: index_name.to_string(),
            shard_id,
            path: path.to_path_buf(),
            state: Mutex::new(state),
            snapshot: RwLock::new(Arc::new(ShardSnapshot::new(
                searcher,
                table,
                0,
                Arc::default(),
            ))),
            translog: Some(translog),
            stats: Arc::default(),
            primary_term: AtomicU64::new(1),
            replication: Replication::primary(),
            last_write: AtomicU64::new(0),
            async_durability: std::sync::atomic::AtomicBool::new(
                config.durability == Durability::Async,
            ),
            config,
            pending_refresh: std::sync::atomic::AtomicBool::new(replayed),
            last_refresh: AtomicU64::new(tessera_common::time::now_millis() as u64),
            last_search: AtomicU64::new(0),
            failure: Mutex::new(None),
            writer_closed: Arc::default(),
            commit_listener: std::sync::OnceLock::new(),
            knn_threshold,
        };
        if replayed || promoted {
            // a promoted copy commits once so its commit names its own translog
            shard.commit_now(&mut shard.lock())?;
        }
        if promoted {
            replication::forget_replica_copy(path)?;
        }
        Ok(shard)
    }

    fn open_writer_and_reader(
        index: &Index,
        config: &ShardConfig,
    ) -> Result<(IndexWriter<QueuedDoc>, IndexReader)> {
        register_tokenizers(index);
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(config.memory_budget_per_thread)
            .num_worker_threads(config.indexing_threads.max(1))
            .num_merge_threads(config.merge_threads.max(1))
            .build();
        let writer: IndexWriter<QueuedDoc> = index
            .writer_with_options(options)
            .map_err(tantivy_err("open shard writer"))?;
        writer.set_merge_policy(background_merge_policy(config));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(corruption("open shard reader"))?;
        Ok((writer, reader))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current point-in-time view for searches.
    pub fn snapshot(&self) -> Arc<ShardSnapshot> {
        self.snapshot.read().unwrap().clone()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, WriteState> {
        self.state.lock().unwrap()
    }

    /// The field table for `mapping`, growing the shard schema first if the mapping has new
    /// fields. Must not be called while holding the write lock (see [`WriteBatch::table_for`]).
    pub fn table_for(&self, mapping: &Mapping, mapping_version: u64) -> Result<Arc<FieldTable>> {
        let mut state = self.lock();
        self.ensure_mapping_locked(&mut state, mapping, mapping_version)?;
        Ok(state.table.clone())
    }

    fn ensure_mapping_locked(
        &self,
        state: &mut WriteState,
        mapping: &Mapping,
        mapping_version: u64,
    ) -> Result<()> {
        // a replica's table comes with each checkpoint, never from the index's mapping
        if state.mapping_version >= mapping_version || self.is_replica() {
            return Ok(());
        }
        self.check_engine()?;
        let (table, grew) = FieldTable::build(mapping, Some(state.table.schema()))?;
        if grew {
            // make everything durable under the old schema, close, grow, reopen
            self.commit_locked(state)?;
            self.grow_locked(state, mapping, table)
                .map_err(|e| self.fail_engine(state, e))?;
        } else {
            state.table = Arc::new(table);
        }
        state.mapping_version = mapping_version;
        state.mapping_json = mapping.to_json();
        self.publish(state);
        Ok(())
    }

    fn grow_locked(
        &self,
        state: &mut WriteState,
        mapping: &Mapping,
        table: FieldTable,
    ) -> Result<()> {
        check_knn_support(&state.index, &table)?;
        {
            let writer = state.writer.take().ok_or_else(writer_closed)?;
            writer
                .wait_merging_threads()
                .map_err(tantivy_err("stop the shard writer"))?;
            let index_dir = self.path.join("index");
            grow_schema(&index_dir, table.schema())?;
            let index = open_index_with(&index_dir, &self.knn_threshold)
                .map_err(tantivy_err("reopen shard"))?;
            let (writer, reader) = Self::open_writer_and_reader(&index, &self.config)?;
            state.index = index;
            state.writer = Some(writer);
            state.reader = reader;
            let (table, _) = FieldTable::build(mapping, Some(&state.index.schema()))?;
            state.table = Arc::new(table);
        }
        Ok(())
    }

    pub(crate) fn publish(&self, state: &mut WriteState) {
        state.generation += 1;
        let sorted = self.snapshot.read().unwrap().sorted.clone();
        let snapshot = Arc::new(ShardSnapshot::new(
            state.reader.searcher(),
            state.table.clone(),
            state.generation,
            sorted,
        ));
        *self.snapshot.write().unwrap() = snapshot;
    }

    /// The error of a shard whose engine failed: the shard is unavailable until it is opened
    /// again from disk.
    pub fn failure(&self) -> Option<Error> {
        self.failure.lock().unwrap().clone()
    }

    pub(crate) fn check_engine(&self) -> Result<()> {
        if self.is_replica() {
            return Err(replication::replica_does_not_index(
                &self.index_name,
                self.shard_id,
            ));
        }
        match self.failure() {
            None => Ok(()),
            // the index was deleted under a request
            Some(cause) if cause.status() == 404 => Err(cause),
            Some(cause) => Err(self.unavailable(cause)),
        }
    }

    /// Closes the shard of an index being deleted: in-flight and later writes answer
    /// `error` (the index is gone), the writer stops after its merges finish, so nothing writes
    /// into the directory once this returns.
    pub fn close_for_delete(&self, error: Error) {
        let mut state = self.lock();
        self.release_pins();
        if let Some(translog) = &self.translog {
            translog.close_after_failure(&error.to_string());
        }
        self.failure.lock().unwrap().get_or_insert(error);
        state.pending.clear();
        if let Some(writer) = state.writer.take() {
            let _ = writer.wait_merging_threads();
        }
        self.writer_closed.store(true, Ordering::Release);
        self.pending_refresh.store(false, Ordering::Release);
    }

    /// What a request addressed to this shard gets while its engine is failed.
    fn unavailable(&self, cause: Error) -> Error {
        shard_not_active(
            &self.index_name,
            self.shard_id,
            &format!("the shard failed ({})", cause.reason()),
        )
    }

    /// Fails the shard's engine after `error` left the writer in an unknown state: the writer
    /// is dropped (what it held uncommitted is in the translog, which is never trimmed past the
    /// last good commit) and every later write or commit is refused. Returns `error`.
    fn fail_engine(&self, state: &mut WriteState, error: Error) -> Error {
        {
            let mut failure = self.failure.lock().unwrap();
            if failure.is_none() {
                eprintln!(
                    "[{}][{}] shard failed: {error}",
                    self.index_name, self.shard_id
                );
                *failure = Some(error.clone());
            }
        }
        state.pending.clear();
        if let Some(translog) = &self.translog {
            translog.close_after_failure(&error.to_string());
        }
        match state.writer.take() {
            Some(writer) => {
                // merges still running write into the directory: the writer, and with it its
                // lock on the directory, goes only once they end; the index opens the shard
                // again only after that (`writer_closed`)
                let closed = self.writer_closed.clone();
                let spawned = std::thread::Builder::new()
                    .name("close-failed-writer".into())
                    .spawn(move || {
                        let _ = writer.wait_merging_threads();
                        closed.store(true, Ordering::Release);
                    });
                if spawned.is_err() {
                    self.writer_closed.store(true, Ordering::Release);
                }
            }
            None => self.writer_closed.store(true, Ordering::Release),
        }
        self.pending_refresh.store(false, Ordering::Release);
        error
    }

    /// True once the writer of a failed engine has stopped (its merges ended): the shard's files
    /// can be opened again.
    pub fn writer_closed(&self) -> bool {
        self.writer_closed.load(Ordering::Acquire)
    }

    /// Commits (a refresh), failing the engine if the commit does not complete: after a failed
    /// commit tantivy's writer may have lost documents (an indexing thread that died writing a
    /// segment), so a later commit could claim sequence numbers it does not hold.
    fn commit_locked(&self, state: &mut WriteState) -> Result<()> {
        self.check_engine()?;
        self.commit_inner(state)
            .map_err(|e| self.fail_engine(state, e))
    }

    /// Commits even with nothing new written (to rewrite the commit's payload).
    pub(crate) fn commit_now(&self, state: &mut WriteState) -> Result<()> {
        state.dirty = true;
        self.commit_locked(state)
    }

    fn commit_inner(&self, state: &mut WriteState) -> Result<()> {
        state.send_pending()?;
        if !state.dirty {
            return Ok(());
        }
        let started = Instant::now();
        let max_seq_no = state.next_seq_no.checked_sub(1);
        {
            let writer = state.writer.as_mut().ok_or_else(writer_closed)?;
            let mut prepared = writer
                .prepare_commit()
                .map_err(tantivy_err("prepare a shard commit"))?;
            let payload = json!({
                "generation": state.commit_generation + 1,
                "max_seq_no": max_seq_no,
                "translog_generation": self.translog()?.generation() + 1,
                "primary_term": self.primary_term(),
                "mapping": state.mapping_json,
                "mapping_version": state.mapping_version,
            });
            prepared.set_payload(&payload.to_string());
            prepared.commit().map_err(tantivy_err("commit the shard"))?;
        }
        state.commit_generation += 1;
        // tantivy renames meta.json into place without syncing the directory afterwards: the
        // new commit must be durable before the translog generations it covers are deleted
        translog::sync_dir(&self.path.join("index"))?;
        state
            .reader
            .reload()
            .map_err(tantivy_err("reload the shard reader"))?;
        self.translog()?.roll_and_trim()?;
        state.live.clear();
        state.unsafe_auto_ids = false;
        let horizon = (tessera_common::time::now_millis() as u64).saturating_sub(GC_DELETES_MILLIS);
        state
            .tombstones
            .retain(|_, (_, deleted_at)| *deleted_at >= horizon);
        state.dirty = false;
        self.pending_refresh.store(false, Ordering::Release);
        self.last_refresh
            .store(tessera_common::time::now_millis() as u64, Ordering::Relaxed);
        self.publish(state);
        self.stats.record_refresh(started.elapsed());
        if let Some(listener) = self.commit_listener.get() {
            listener();
        }
        Ok(())
    }

    /// Calls `listener` after each commit of this shard (a refresh, flush or merge that wrote
    /// something), with the shard's write lock held: it must only hand the news on (a node
    /// publishes the commit to the replicas). One listener per shard; a second is ignored.
    pub fn set_commit_listener(&self, listener: CommitListener) {
        let _ = self.commit_listener.set(listener);
    }

    /// Makes every acknowledged write visible to searches (and durable in the index).
    /// On a replica a harmless no-op answering false: its reader moves with each checkpoint
    /// it applies (`_refresh` and the scheduler reach every copy).
    pub fn refresh(&self) -> Result<bool> {
        if self.is_replica() {
            return Ok(false);
        }
        let mut state = self.lock();
        let was_dirty = state.dirty;
        self.commit_locked(&mut state)?;
        Ok(was_dirty)
    }

    /// Refreshes if something was written since the last refresh (for the scheduler).
    pub fn refresh_if_dirty(&self) -> Result<bool> {
        if !self.has_pending_refresh() {
            return Ok(false);
        }
        self.refresh()
    }

    /// True when writes are waiting for a refresh (checked without the write lock).
    pub fn has_pending_refresh(&self) -> bool {
        self.pending_refresh.load(Ordering::Acquire)
    }

    /// Milliseconds since the epoch of the last refresh.
    pub fn last_refresh_millis(&self) -> u64 {
        self.last_refresh.load(Ordering::Relaxed)
    }

    /// Records a search; returns the time of the previous one (0 if none), so a caller can tell
    /// that the shard was search-idle.
    pub fn mark_searched(&self) -> u64 {
        self.last_search
            .swap(tessera_common::time::now_millis() as u64, Ordering::Relaxed)
    }

    pub fn last_search_millis(&self) -> u64 {
        self.last_search.load(Ordering::Relaxed)
    }

    /// `_flush`: a durable commit; identical to a refresh in Tessera.
    pub fn flush(&self) -> Result<()> {
        self.refresh().map(|_| ())
    }

    /// Syncs the translog (async durability).
    pub fn sync_translog(&self) -> Result<()> {
        if let Some(translog) = &self.translog {
            if translog.needs_sync() {
                translog.sync()?;
            }
        }
        Ok(())
    }

    /// The shard's translog (a replica's holds the operations its primary forwarded).
    pub(crate) fn translog(&self) -> Result<&Translog> {
        self.translog
            .as_ref()
            .ok_or_else(|| replication::replica_does_not_index(&self.index_name, self.shard_id))
    }

    /// The term of the primary: written into new documents' versions and carried by
    /// replication checkpoints.
    pub fn primary_term(&self) -> u64 {
        self.primary_term.load(Ordering::Acquire)
    }

    /// Sets the primary term (a replica promoted to primary takes the next term).
    pub fn set_primary_term(&self, term: u64) {
        self.primary_term.store(term, Ordering::Release);
    }

    /// Starts a batch of writes holding the shard's write lock.
    pub fn write_batch(&self) -> WriteBatch<'_> {
        WriteBatch {
            shard: self,
            state: self.lock(),
            last_offset: 0,
            logged: None,
        }
    }

    /// Merges the shard down to at most `max_segments` segments (balanced by size) and commits.
    pub fn force_merge(&self, max_segments: usize) -> Result<()> {
        let max_segments = max_segments.max(1);
        let started = Instant::now();
        self.check_engine()?;
        let mut state = self.lock();
        self.commit_locked(&mut state)?;
        self.merge_locked(&mut state, max_segments)
            .map_err(|e| self.fail_engine(&mut state, e))?;
        // a merge keeps the commit's opstamp and payload: a commit of its own lets replicas
        // (which copy commits) see the merged segments
        self.commit_now(&mut state)?;
        self.stats.record_merge(started.elapsed());
        Ok(())
    }

    fn merge_locked(&self, state: &mut WriteState, max_segments: usize) -> Result<()> {
        // background merges may hold some of the segments: let them finish (tantivy can only
        // wait for them by closing the writer), then plan on the settled segment list
        let writer = state.writer.take().ok_or_else(writer_closed)?;
        writer
            .wait_merging_threads()
            .map_err(tantivy_err("wait for background merges"))?;
        let (writer, reader) = Self::open_writer_and_reader(&state.index, &self.config)?;
        // no background merge may pick segments of the groups merged below
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        state.writer = Some(writer);
        state.reader = reader;
        let outcome = self.merge_to(state, max_segments);
        if let Some(writer) = state.writer.as_ref() {
            writer.set_merge_policy(background_merge_policy(&self.config));
        }
        outcome
    }

    /// Merges the settled segments down to `max_segments` (and away their deletes).
    fn merge_to(&self, state: &mut WriteState, max_segments: usize) -> Result<()> {
        let metas = state
            .index
            .searchable_segment_metas()
            .map_err(tantivy_err("list segments"))?;
        let needs_merge = metas.len() > max_segments || metas.iter().any(|m| m.has_deletes());
        if !needs_merge {
            // background merges may have done the work: searches must see their result
            state
                .reader
                .reload()
                .map_err(tantivy_err("reload the shard reader"))?;
            self.publish(state);
            return Ok(());
        }
        let groups = plan_merge_groups(
            metas
                .iter()
                .map(|m| (m.id(), m.num_docs() as u64))
                .collect(),
            max_segments,
        );
        let writer = state.writer.as_mut().ok_or_else(writer_closed)?;
        for group in groups {
            let has_deletes = metas
                .iter()
                .any(|m| group.contains(&m.id()) && m.has_deletes());
            if group.len() > 1 || has_deletes {
                writer
                    .merge(&group)
                    .wait()
                    .map_err(tantivy_err("merge segments"))?;
            }
        }
        state
            .reader
            .reload()
            .map_err(tantivy_err("reload the shard reader"))?;
        self.publish(state);
        Ok(())
    }

    /// The document `id` as of now, including writes not yet refreshed.
    pub fn get(&self, id: &str) -> Result<Option<StoredDoc>> {
        let mut state = self.lock();
        if state.unsafe_auto_ids && !state.live.contains_key(id) {
            // the id may be one of the generated ids written since the last refresh
            drop(state);
            self.refresh()?;
            state = self.lock();
        }
        if let Some(entry) = state.live.get(id) {
            if entry.deleted {
                return Ok(None);
            }
            if let Some(source) = &entry.source {
                return Ok(Some(StoredDoc {
                    id: id.to_string(),
                    version: entry.version,
                    source: Some(source.clone()),
                    routing: entry.routing.clone(),
                }));
            }
            // an auto-id document written since the last refresh: make it visible first
            drop(state);
            self.refresh()?;
            let state = self.lock();
            return read_stored(&state.reader.searcher(), &state.table, id);
        }
        read_stored(&state.reader.searcher(), &state.table, id)
    }

    /// The document `id` as of the last refresh.
    pub fn get_refreshed(&self, id: &str) -> Result<Option<StoredDoc>> {
        let snapshot = self.snapshot();
        read_stored(&snapshot.searcher, &snapshot.table, id)
    }

    /// Docs, deleted docs and segments, as of the last refresh.
    pub fn doc_counts(&self) -> (u64, u64) {
        let snapshot = self.snapshot();
        let mut live = 0u64;
        let mut deleted = 0u64;
        for segment in snapshot.searcher.segment_readers() {
            live += segment.num_docs() as u64;
            deleted += segment.num_deleted_docs() as u64;
        }
        (live, deleted)
    }

    /// Segments of the last refresh, for `_cat/segments`.
    pub fn segments(&self) -> Result<Vec<SegmentInfo>> {
        let state = self.lock();
        let metas = state
            .index
            .searchable_segment_metas()
            .map_err(tantivy_err("list segments"))?;
        let dir = self.path.join("index");
        Ok(metas
            .iter()
            .enumerate()
            .map(|(generation, meta)| {
                let prefix = meta.id().uuid_string();
                let size = std::fs::read_dir(&dir)
                    .map(|entries| {
                        entries
                            .filter_map(|e| e.ok())
                            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                            .filter_map(|e| e.metadata().ok())
                            .map(|m| m.len())
                            .sum()
                    })
                    .unwrap_or(0);
                SegmentInfo {
                    name: format!("_{}", meta.id().short_uuid_string()),
                    generation: generation as u64,
                    docs: meta.num_docs() as u64,
                    deleted: meta.num_deleted_docs() as u64,
                    size_in_bytes: size,
                }
            })
            .collect())
    }

    /// Bytes on disk (index and translog). Replication pins are left out: they are mostly
    /// hard links to the index's own files.
    pub fn store_size(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return 0;
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name() != replication::PINS_DIR)
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => dir_size(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    }

    pub fn translog_size(&self) -> u64 {
        self.translog.as_ref().map_or(0, Translog::size_in_bytes)
    }

    /// Milliseconds (since the epoch) of the last write, for idle detection.
    pub fn last_write_millis(&self) -> u64 {
        self.last_write.load(Ordering::Relaxed)
    }

    pub fn durability(&self) -> Durability {
        if self.async_durability.load(Ordering::Relaxed) {
            Durability::Async
        } else {
            Durability::Request
        }
    }

    /// `index.knn.advanced.approximate_threshold` is dynamic: segments flushed or merged from
    /// now on follow the new value.
    pub fn set_knn_threshold(&self, threshold: i64) {
        self.knn_threshold.store(threshold, Ordering::Relaxed);
    }

    /// `index.translog.durability` is dynamic.
    pub fn set_durability(&self, durability: Durability) {
        self.async_durability
            .store(durability == Durability::Async, Ordering::Relaxed);
    }

    /// Closes the writer cleanly (waits for merges) after a last commit; a replica syncs the
    /// operations forwarded to it.
    pub fn close(&self) -> Result<()> {
        self.release_pins();
        if self.is_replica() {
            return self.sync_translog();
        }
        let mut state = self.lock();
        self.commit_locked(&mut state)?;
        if let Some(writer) = state.writer.take() {
            writer
                .wait_merging_threads()
                .map_err(tantivy_err("close the shard writer"))?;
        }
        Ok(())
    }
}

/// A segment, as `_cat/segments` shows it.
#[derive(Clone, Debug)]
pub struct SegmentInfo {
    pub name: String,
    pub generation: u64,
    pub docs: u64,
    pub deleted: u64,
    pub size_in_bytes: u64,
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Groups segments into `target` groups of similar total size (largest first, each into the
/// lightest group), so that merging each group leaves `target` balanced segments.
pub fn plan_merge_groups(
    mut segments: Vec<(SegmentId, u64)>,
    target: usize,
) -> Vec<Vec<SegmentId>> {
    segments.sort_by_key(|s| std::cmp::Reverse(s.1));
    let mut groups: Vec<(u64, Vec<SegmentId>)> = (0..target.min(segments.len()).max(1))
        .map(|_| (0, Vec::new()))
        .collect();
    for (id, docs) in segments {
        let lightest = groups
            .iter_mut()
            .min_by_key(|(total, _)| *total)
            .expect("at least one group");
        lightest.0 += docs.max(1);
        lightest.1.push(id);
    }
    groups
        .into_iter()
        .map(|(_, ids)| ids)
        .filter(|g| !g.is_empty())
        .collect()
}

/// The terms that delete document `id` with the whole of its block: its `_id`, and in shards
/// with nested fields, its children's parent id.
pub(crate) fn block_terms(table: &FieldTable, id: &str) -> impl Iterator<Item = Term> {
    let children = table
        .meta
        .nested
        .map(|markers| Term::from_field_text(markers.parent_id, id));
    std::iter::once(Term::from_field_text(table.meta.id, id)).chain(children)
}

/// Adds the metadata fields every indexed document carries.
pub(crate) fn with_meta_fields(
    mut doc: TantivyDocument,
    table: &FieldTable,
    id: &str,
    version: DocVersion,
    routing: Option<&str>,
    source: &[u8],
) -> TantivyDocument {
    let meta = &table.meta;
    doc.add_text(meta.id, id);
    doc.add_bytes(meta.source, source);
    doc.add_u64(meta.seq_no, version.seq_no);
    doc.add_u64(meta.version, version.version);
    doc.add_u64(meta.primary_term, version.primary_term);
    if let Some(routing) = routing {
        doc.add_text(meta.routing, routing);
    }
    doc
}

/// Finds the live document `id` in a searcher.
pub fn find_doc(searcher: &Searcher, table: &FieldTable, id: &str) -> Result<Option<DocAddress>> {
    let term = Term::from_field_text(table.meta.id, id);
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let inverted = segment
            .inverted_index(table.meta.id)
            .map_err(tantivy_err("read the _id index"))?;
        let Some(mut postings) = inverted
            .read_postings(&term, IndexRecordOption::Basic)
            .map_err(|e| Error::internal("read _id postings", e))?
        else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if segment
                .alive_bitset()
                .is_none_or(|alive| alive.is_alive(doc))
            {
                return Ok(Some(DocAddress::new(ord as u32, doc)));
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

fn read_u64(searcher: &Searcher, address: DocAddress, field: &str) -> Result<u64> {
    let segment = searcher.segment_reader(address.segment_ord);
    let column: Column<u64> = segment
        .fast_fields()
        .u64(field)
        .map_err(tantivy_err(format!("read the {field} column")))?;
    Ok(column.first(address.doc_id).unwrap_or(0))
}

fn read_version(searcher: &Searcher, address: DocAddress) -> Result<DocVersion> {
    Ok(DocVersion {
        version: read_u64(
            searcher,
            address,
            tessera_mapping::field_table::VERSION_FIELD,
        )?,
        seq_no: read_u64(
            searcher,
            address,
            tessera_mapping::field_table::SEQ_NO_FIELD,
        )?,
        primary_term: read_u64(
            searcher,
            address,
            tessera_mapping::field_table::PRIMARY_TERM_FIELD,
        )?,
    })
}

fn read_stored(searcher: &Searcher, table: &FieldTable, id: &str) -> Result<Option<StoredDoc>> {
    let Some(address) = find_doc(searcher, table, id)? else {
        return Ok(None);
    };
    let version = read_version(searcher, address)?;
    let doc: TantivyDocument = searcher
        .doc(address)
        .map_err(tantivy_err("read a stored document"))?;
    let source = doc
        .get_first(table.meta.source)
        .and_then(|v| v.as_bytes())
        .map(Bytes::copy_from_slice);
    let routing = doc
        .get_first(table.meta.routing)
        .and_then(|v| v.as_str())
        .map(String::from);
    Ok(Some(StoredDoc {
        id: id.to_string(),
        version,
        source,
        routing,
    }))
}

/// Writes applied under the shard's write lock; [`WriteBatch::finish`] makes them durable.
pub struct WriteBatch<'a> {
    shard: &'a Shard,
    state: MutexGuard<'a, WriteState>,
    last_offset: u64,
    /// The operations logged so far, when kept for the replicas (see
    /// [`WriteBatch::keep_operations`]).
    logged: Option<Vec<Operation>>,
}

/// A document ready to index: parsed, with its id and source.
pub struct PreparedDoc {
    pub id: String,
    /// True for ids Tessera generated: no previous version can exist.
    pub auto_id: bool,
    pub doc: TantivyDocument,
    /// Its nested objects' child documents, indexed just before it in the same writer
    /// batch (so that the block stays whole in one segment).
    pub nested: Vec<TantivyDocument>,
    pub source: Bytes,
    pub routing: Option<String>,
}

/// Optimistic concurrency conditions of a write.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Conditions {
    pub create_only: bool,
    pub if_seq_no: Option<u64>,
    pub if_primary_term: Option<u64>,
}

/// The outcome of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WriteOutcome {
    Created,
    Updated,
    Deleted,
    NotFound,
    Noop,
}

impl WriteOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Updated => "updated",
            WriteOutcome::Deleted => "deleted",
            WriteOutcome::NotFound => "not_found",
            WriteOutcome::Noop => "noop",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Written {
    pub outcome: WriteOutcome,
    pub version: DocVersion,
}

impl WriteBatch<'_> {
    /// The shard's field table for `mapping`, growing the schema if needed (with the lock held).
    pub fn table_for(
        &mut self,
        mapping: &Mapping,
        mapping_version: u64,
    ) -> Result<Arc<FieldTable>> {
        self.shard
            .ensure_mapping_locked(&mut self.state, mapping, mapping_version)?;
        Ok(self.state.table.clone())
    }

    /// The current version of `id`, including unrefreshed writes.
    pub fn current(&mut self, id: &str) -> Result<Option<DocVersion>> {
        if let Some(entry) = self.state.live.get(id) {
            return Ok((!entry.deleted).then_some(entry.version));
        }
        if self.state.unsafe_auto_ids {
            self.shard.commit_locked(&mut self.state)?;
        }
        let searcher = self.state.reader.searcher();
        match find_doc(&searcher, &self.state.table, id)? {
            Some(address) => Ok(Some(read_version(&searcher, address)?)),
            None => Ok(None),
        }
    }

    /// The current document `id` with its source (for updates).
    pub fn current_doc(&mut self, id: &str) -> Result<Option<StoredDoc>> {
        if let Some(entry) = self.state.live.get(id).cloned() {
            if entry.deleted {
                return Ok(None);
            }
            if let Some(source) = entry.source {
                return Ok(Some(StoredDoc {
                    id: id.to_string(),
                    version: entry.version,
                    source: Some(source),
                    routing: entry.routing,
                }));
            }
            self.shard.commit_locked(&mut self.state)?;
        } else if self.state.unsafe_auto_ids {
            self.shard.commit_locked(&mut self.state)?;
        }
        read_stored(&self.state.reader.searcher(), &self.state.table, id)
    }

    /// Checks `conditions` against the current version of `id`.
    pub fn check_conditions(&mut self, id: &str, conditions: &Conditions) -> Result<()> {
        let current = self.current(id)?;
        self.check(id, current, conditions)
    }

    fn check(&self, id: &str, current: Option<DocVersion>, conditions: &Conditions) -> Result<()> {
        let shard = self.shard;
        if conditions.create_only {
            if let Some(v) = current {
                return Err(Error::version_conflict(
                    &shard.index_name,
                    shard.shard_id,
                    id,
                    &format!("document already exists (current version [{}])", v.version),
                ));
            }
        }
        if let Some(if_seq_no) = conditions.if_seq_no {
            let term = conditions.if_primary_term.unwrap_or(shard.primary_term());
            match current {
                Some(v) if v.seq_no == if_seq_no && v.primary_term == term => {}
                Some(v) => {
                    return Err(Error::version_conflict(
                        &shard.index_name,
                        shard.shard_id,
                        id,
                        &format!(
                            "required seqNo [{if_seq_no}], primary term [{term}]. current document has seqNo [{}] and primary term [{}]",
                            v.seq_no, v.primary_term
                        ),
                    ))
                }
                None => {
                    return Err(Error::version_conflict(
                        &shard.index_name,
                        shard.shard_id,
                        id,
                        &format!("required seqNo [{if_seq_no}], primary term [{term}] but no document was found"),
                    ))
                }
            }
        }
        Ok(())
    }

    fn next_version(&mut self, previous: Option<u64>) -> DocVersion {
        let seq_no = self.state.next_seq_no;
        self.state.next_seq_no += 1;
        DocVersion {
            version: previous.map(|v| v + 1).unwrap_or(1),
            seq_no,
            primary_term: self.shard.primary_term(),
        }
    }

    /// The version of a recent delete of `id`, if any.
    fn tombstone(&self, id: &str) -> Option<u64> {
        match self.state.live.get(id) {
            Some(entry) if entry.deleted => Some(entry.version.version),
            Some(_) => None,
            None => self.state.tombstones.get(id).map(|(version, _)| *version),
        }
    }

    /// Indexes (creates or replaces) a document.
    pub fn index(&mut self, prepared: PreparedDoc, conditions: &Conditions) -> Result<Written> {
        let started = Instant::now();
        self.shard.check_engine()?;
        let (current, tombstone) = if prepared.auto_id {
            (None, None)
        } else {
            let tombstone = self.tombstone(&prepared.id);
            (self.current(&prepared.id)?, tombstone)
        };
        self.check(&prepared.id, current, conditions)?;
        let version = self.next_version(current.map(|v| v.version).or(tombstone));
        let table = self.state.table.clone();
        let doc = with_meta_fields(
            prepared.doc,
            &table,
            &prepared.id,
            version,
            prepared.routing.as_deref(),
            &prepared.source,
        );
        self.log(Operation {
            kind: OpKind::Index,
            seq_no: version.seq_no,
            primary_term: version.primary_term,
            version: version.version,
            id: prepared.id.clone(),
            routing: prepared.routing.clone(),
            source: prepared.source.clone(),
        })?;
        let queued = if prepared.auto_id {
            Ok(())
        } else {
            block_terms(&table, &prepared.id)
                .try_for_each(|term| self.state.queue(UserOperation::Delete(term), 0))
        }
        .and_then(|_| {
            self.state
                .queue_block(prepared.nested, doc, prepared.source.len())
        });
        queued.map_err(|e| self.failed(e))?;
        if prepared.auto_id {
            self.state.unsafe_auto_ids = true;
        } else {
            self.state.live.insert(
                prepared.id,
                LiveEntry {
                    version,
                    deleted: false,
                    // a copy of its own: the source may be a slice of a whole bulk body, which
                    // the entry would otherwise keep alive until the next refresh
                    source: Some(Bytes::copy_from_slice(&prepared.source)),
                    routing: prepared.routing,
                },
            );
        }
        self.state.dirty = true;
        self.shard.pending_refresh.store(true, Ordering::Release);
        self.shard.stats.record_index(started.elapsed());
        Ok(Written {
            outcome: if current.is_some() {
                WriteOutcome::Updated
            } else {
                WriteOutcome::Created
            },
            version,
        })
    }

    /// Deletes a document (a missing one still consumes a sequence number, as in OpenSearch).
    pub fn delete(
        &mut self,
        id: &str,
        routing: Option<&str>,
        conditions: &Conditions,
    ) -> Result<Written> {
        let started = Instant::now();
        self.shard.check_engine()?;
        let current = self.current(id)?;
        self.check(id, current, conditions)?;
        let tombstone = self.tombstone(id);
        let version = self.next_version(current.map(|v| v.version).or(tombstone));
        let table = self.state.table.clone();
        self.log(Operation {
            kind: OpKind::Delete,
            seq_no: version.seq_no,
            primary_term: version.primary_term,
            version: version.version,
            id: id.to_string(),
            routing: routing.map(String::from),
            source: Bytes::new(),
        })?;
        if current.is_some() {
            let queued = block_terms(&table, id)
                .try_for_each(|term| self.state.queue(UserOperation::Delete(term), 0));
            queued.map_err(|e| self.failed(e))?;
        }
        self.state.live.insert(
            id.to_string(),
            LiveEntry {
                version,
                deleted: true,
                source: None,
                routing: None,
            },
        );
        self.state.tombstones.insert(
            id.to_string(),
            (version.version, tessera_common::time::now_millis() as u64),
        );
        self.state.dirty = true;
        self.shard.pending_refresh.store(true, Ordering::Release);
        self.shard.stats.record_delete(started.elapsed());
        Ok(Written {
            outcome: if current.is_some() {
                WriteOutcome::Deleted
            } else {
                WriteOutcome::NotFound
            },
            version,
        })
    }

    /// Appends an operation to the translog (failing the engine if that fails), keeping a copy
    /// when asked to.
    fn log(&mut self, op: Operation) -> Result<()> {
        let appended = self.shard.translog().and_then(|t| t.append(&op));
        self.last_offset = appended.map_err(|e| self.failed(e))?;
        if let Some(logged) = &mut self.logged {
            logged.push(op);
        }
        Ok(())
    }

    /// Keeps a copy of every operation this batch logs from now on, in the order logged, for
    /// the primary to forward to its replicas (see [`WriteBatch::take_operations`]).
    pub fn keep_operations(&mut self) {
        self.logged.get_or_insert_with(Vec::new);
    }

    /// The operations kept since [`WriteBatch::keep_operations`] (or the last take).
    pub fn take_operations(&mut self) -> Vec<Operation> {
        self.logged.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Forces a refresh inside the batch (`refresh=true`), after the writes so far.
    pub fn refresh(&mut self) -> Result<()> {
        self.shard.commit_locked(&mut self.state)
    }

    /// Fails the shard's engine (see [`Shard::fail_engine`]); returns `error`.
    fn failed(&mut self, error: Error) -> Error {
        self.shard.fail_engine(&mut self.state, error)
    }

    /// Releases the lock and, with request durability, waits until the batch is fsynced. An
    /// error means the batch's writes must not be acknowledged.
    pub fn finish(mut self) -> Result<()> {
        if self.last_offset > 0 {
            self.shard.check_engine()?;
        }
        let sent = self.state.send_pending();
        sent.map_err(|e| self.failed(e))?;
        let offset = self.last_offset;
        let shard = self.shard;
        shard
            .last_write
            .store(tessera_common::time::now_millis() as u64, Ordering::Relaxed);
        drop(self.state);
        if offset > 0 && shard.durability() == Durability::Request {
            if let Err(e) = shard.translog().and_then(|t| t.sync_to(offset)) {
                let mut state = shard.lock();
                let e = shard.fail_engine(&mut state, e);
                // the shard's own answer when it was closed meanwhile (the index deleted: 404)
                // or has failed (503), rather than the translog's internal error
                return Err(shard.check_engine().err().unwrap_or(e));
            }
        }
        Ok(())
    }
}

/// Reads the IP stored for a field (helper for tests and docvalue fields).
pub fn ip_to_string(ip: Ipv6Addr) -> String {
    tessera_mapping::values::format_ip(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use tessera_mapping::{parse_document, ParseOutcome};

    fn mapping() -> Mapping {
        Mapping::parse(&json!({"properties": {"title": {"type": "text"}, "n": {"type": "long"}}}))
            .unwrap()
    }

    fn prepared(shard: &Shard, mapping: &Mapping, id: &str, source: Value) -> PreparedDoc {
        let table = shard.table_for(mapping, 1).unwrap();
        let ParseOutcome::Document(doc) = parse_document(mapping, &table, id, &source).unwrap()
        else {
            panic!("mapping update")
        };
        PreparedDoc {
            id: id.to_string(),
            auto_id: false,
            doc,
            nested: Vec::new(),
            source: Bytes::from(serde_json::to_vec(&source).unwrap()),
            routing: None,
        }
    }

    fn open(dir: &Path, mapping: &Mapping) -> Shard {
        Shard::open("idx", 0, dir, mapping, 1, ShardConfig::default()).unwrap()
    }

    /// A shard directory whose index was created without segment plugins, as shards were
    /// before k-NN and the ids file.
    fn pluginless_shard() -> tempfile::TempDir {
        let old = tempfile::tempdir().unwrap();
        let index_dir = old.path().join("index");
        std::fs::create_dir_all(&index_dir).unwrap();
        let (table, _) = FieldTable::build(&mapping(), None).unwrap();
        Index::builder()
            .schema(table.schema().clone())
            .create_in_dir(&index_dir)
            .unwrap();
        old
    }

    #[test]
    fn new_shards_carry_the_knn_plugin_and_older_ones_still_open() {
        let dir = tempfile::tempdir().unwrap();
        let knn =
            Mapping::parse(&json!({"properties": {"v": {"type": "knn_vector", "dimension": 2}}}))
                .unwrap();
        let shard = open(dir.path(), &knn);
        let has_plugin = |index: &Index| {
            index
                .custom_plugins()
                .iter()
                .any(|p| p.extensions().contains(&tessera_knn::segment::EXTENSION))
        };
        assert!(has_plugin(&shard.lock().index));
        drop(shard);
        // an index created without the plugin (before k-NN) opens without it and still writes
        let old = pluginless_shard();
        let index = open_index(&old.path().join("index")).unwrap();
        assert!(!has_plugin(&index));
        drop(index);
        let shard = open(old.path(), &mapping());
        assert!(!has_plugin(&shard.lock().index));
        // but a knn_vector field cannot be added to it: its vectors would be lost
        drop(shard);
        let both = Mapping::parse(
            &json!({"properties": {"title": {"type": "text"}, "n": {"type": "long"},
            "v": {"type": "knn_vector", "dimension": 2}}}),
        )
        .unwrap();
        let Err(err) = Shard::open("idx", 0, old.path(), &both, 2, ShardConfig::default()) else {
            panic!("a knn_vector field was added to a shard without the plugin");
        };
        assert!(err.reason().contains("k-NN support"), "{err:?}");
        // and the refusal left the shard as it was
        drop(open(old.path(), &mapping()));
        let index = open_index(&old.path().join("index")).unwrap();
        assert!(index.schema().get_field("v").is_err());
    }

    #[test]
    fn new_shards_write_ids_files_and_older_ones_still_write_without() {
        let ids_of = |shard: &Shard| {
            let snapshot = shard.snapshot();
            let ids = snapshot.segment_ids.get(&snapshot.searcher).unwrap();
            (0..snapshot.searcher.segment_readers().len() as u32)
                .map(|ord| ids.segment(ord).map(|s| s.id(0).unwrap()))
                .collect::<Vec<_>>()
        };
        let write = |shard: &Shard, id: &str| {
            let doc = prepared(shard, &mapping(), id, json!({"n": 1}));
            let mut batch = shard.write_batch();
            batch.index(doc, &Conditions::default()).unwrap();
            batch.finish().unwrap();
            shard.refresh().unwrap();
        };
        let dir = tempfile::tempdir().unwrap();
        let shard = open(dir.path(), &mapping());
        write(&shard, "first");
        assert_eq!(ids_of(&shard), vec![Some(Some("first".to_string()))]);
        // an index created without the plugin (before the ids file) opens without it and writes
        let old = pluginless_shard();
        let shard = open(old.path(), &mapping());
        write(&shard, "old");
        assert_eq!(ids_of(&shard), vec![None]);
    }

    #[test]
    fn index_get_update_delete_with_versions() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let shard = open(dir.path(), &m);
        let doc = prepared(&shard, &m, "1", json!({"n": 0}));
        let mut batch = shard.write_batch();
        let first = batch.index(doc, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        assert_eq!(first.outcome, WriteOutcome::Created);
        assert_eq!(first.version.version, 1);
        let doc = prepared(&shard, &m, "1", json!({"n": 1}));
        let mut batch = shard.write_batch();
        let w = batch.index(doc, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        assert_eq!(w.outcome, WriteOutcome::Updated);
        assert_eq!(w.version.version, 2);
        // realtime get before any refresh
        let got = shard.get("1").unwrap().unwrap();
        assert_eq!(got.version.version, 2);
        assert_eq!(&*got.source.unwrap(), br#"{"n":1}"#);
        shard.refresh().unwrap();
        let got = shard.get("1").unwrap().unwrap();
        assert_eq!(got.version.version, 2);
        assert_eq!(got.version.seq_no, 1);
        let create = prepared(&shard, &m, "1", json!({"n": 2}));
        let mut batch = shard.write_batch();
        let err = batch
            .index(
                create,
                &Conditions {
                    create_only: true,
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(err.status(), 409);
        let w = batch.delete("1", None, &Conditions::default()).unwrap();
        assert_eq!(w.outcome, WriteOutcome::Deleted);
        let w = batch.delete("1", None, &Conditions::default()).unwrap();
        assert_eq!(w.outcome, WriteOutcome::NotFound);
        batch.finish().unwrap();
        assert!(shard.get("1").unwrap().is_none());
        shard.refresh().unwrap();
        assert_eq!(shard.doc_counts().0, 0);
    }

    #[test]
    fn a_new_shard_compresses_its_document_store_on_the_indexing_thread() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let shard = open(dir.path(), &m);
        let docs: Vec<PreparedDoc> = (0..50)
            .map(|i| prepared(&shard, &m, &i.to_string(), json!({ "n": i })))
            .collect();
        let mut batch = shard.write_batch();
        for doc in docs {
            batch.index(doc, &Conditions::default()).unwrap();
        }
        batch.finish().unwrap();
        shard.refresh().unwrap();
        // the setting lives in meta.json, so the shard keeps it across restarts
        let index = Index::open_in_dir(dir.path().join("index")).unwrap();
        assert!(!index.settings().docstore_compress_dedicated_thread);
        let searcher = shard.snapshot().searcher.clone();
        let table = shard.snapshot().table.clone();
        let stored = read_stored(&searcher, &table, "42").unwrap().unwrap();
        assert_eq!(stored.source.unwrap().as_ref(), br#"{"n":42}"#);
    }

    #[test]
    fn an_unrefreshed_document_keeps_its_own_copy_of_its_source() {
        // a bulk body holds many documents; the live version map must not keep it all alive
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let shard = open(dir.path(), &m);
        let body = Bytes::from(format!("{}\n{{\"n\":7}}\n", "x".repeat(4096)));
        let mut doc = prepared(&shard, &m, "7", json!({"n": 7}));
        doc.source = body.slice(4097..4104);
        let mut batch = shard.write_batch();
        batch.index(doc, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        let source = shard.get("7").unwrap().unwrap().source.unwrap();
        assert_eq!(source.as_ref(), br#"{"n":7}"#);
        let body_range = body.as_ptr_range();
        assert!(
            !body_range.contains(&source.as_ptr()),
            "the source still points into the body"
        );
    }

    #[test]
    fn writes_grouped_for_the_writer_keep_their_order() {
        // more writes than one group, with replacements and deletes of documents still queued
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let shard = open(dir.path(), &m);
        let docs: Vec<PreparedDoc> = (0..3)
            .flat_map(|round| (0..WRITER_BATCH + 3).map(move |i| (round, i)))
            .map(|(round, i)| prepared(&shard, &m, &i.to_string(), json!({ "n": round })))
            .collect();
        let mut batch = shard.write_batch();
        for doc in docs {
            batch.index(doc, &Conditions::default()).unwrap();
        }
        for i in (0..WRITER_BATCH + 3).step_by(2) {
            batch
                .delete(&i.to_string(), None, &Conditions::default())
                .unwrap();
        }
        batch.finish().unwrap();
        // nothing is visible before the refresh, which sends what is still queued
        assert_eq!(shard.doc_counts().0, 0);
        shard.refresh().unwrap();
        let live = (WRITER_BATCH + 3) / 2;
        assert_eq!(shard.doc_counts().0, live as u64);
        let searcher = shard.snapshot().searcher.clone();
        let table = shard.snapshot().table.clone();
        for i in 0..WRITER_BATCH + 3 {
            let found = find_doc(&searcher, &table, &i.to_string()).unwrap();
            assert_eq!(found.is_some(), i % 2 == 1, "document {i}");
            if let Some(address) = found {
                assert_eq!(read_version(&searcher, address).unwrap().version, 3);
            }
        }
    }

    #[test]
    fn if_seq_no_conditions() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let shard = open(dir.path(), &m);
        let doc = prepared(&shard, &m, "a", json!({"n": 1}));
        let mut batch = shard.write_batch();
        let w = batch.index(doc, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        let doc = prepared(&shard, &m, "a", json!({"n": 2}));
        let mut batch = shard.write_batch();
        let stale = Conditions {
            if_seq_no: Some(w.version.seq_no + 5),
            if_primary_term: Some(1),
            ..Default::default()
        };
        let err = batch.index(doc, &stale).unwrap_err();
        assert!(err.reason().contains("required seqNo"), "{}", err.reason());
        batch.finish().unwrap();
        let doc = prepared(&shard, &m, "a", json!({"n": 2}));
        let mut batch = shard.write_batch();
        let ok = Conditions {
            if_seq_no: Some(w.version.seq_no),
            if_primary_term: Some(1),
            ..Default::default()
        };
        batch.index(doc, &ok).unwrap();
        batch.finish().unwrap();
    }

    #[test]
    fn unrefreshed_writes_survive_a_crash_via_the_translog() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        {
            let shard = open(dir.path(), &m);
            for i in 0..20 {
                let doc = prepared(
                    &shard,
                    &m,
                    &format!("d{i}"),
                    json!({"n": i, "title": "hello world"}),
                );
                let mut batch = shard.write_batch();
                batch.index(doc, &Conditions::default()).unwrap();
                batch.finish().unwrap();
            }
            shard.refresh().unwrap();
            for i in 20..30 {
                let doc = prepared(&shard, &m, &format!("d{i}"), json!({"n": i}));
                let mut batch = shard.write_batch();
                batch.index(doc, &Conditions::default()).unwrap();
                batch.finish().unwrap();
            }
            let mut batch = shard.write_batch();
            batch.delete("d0", None, &Conditions::default()).unwrap();
            batch.finish().unwrap();
            // dropped without refresh or close: the index loses the uncommitted writes, as
            // after kill -9; only the translog has them
            drop(shard);
        }
        let shard = open(dir.path(), &m);
        assert_eq!(shard.doc_counts().0, 29);
        assert!(shard.get("d0").unwrap().is_none());
        let d25 = shard.get("d25").unwrap().unwrap();
        assert_eq!(d25.version.seq_no, 25);
        // sequence numbers continue after the replayed ones
        let doc = prepared(&shard, &m, "new", json!({"n": 1}));
        let mut batch = shard.write_batch();
        let w = batch.index(doc, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        assert_eq!(w.version.seq_no, 31);
    }

    #[test]
    fn schema_grows_and_old_segments_still_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = mapping();
        let shard = open(dir.path(), &m);
        for i in 0..5 {
            let doc = prepared(
                &shard,
                &m,
                &format!("old{i}"),
                json!({"title": "alpha beta", "n": i}),
            );
            let mut batch = shard.write_batch();
            batch.index(doc, &Conditions::default()).unwrap();
            batch.finish().unwrap();
            shard.refresh().unwrap();
        }
        m.merge_json(&json!({"properties": {"body": {"type": "text"}, "k": {"type": "keyword"}}}))
            .unwrap();
        let table = shard.table_for(&m, 2).unwrap();
        assert!(table.leaf("body").is_some());
        let ParseOutcome::Document(doc) =
            parse_document(&m, &table, "new", &json!({"body": "gamma", "k": "x"})).unwrap()
        else {
            panic!()
        };
        let mut batch = shard.write_batch();
        batch
            .index(
                PreparedDoc {
                    id: "new".into(),
                    auto_id: false,
                    doc,
                    nested: Vec::new(),
                    source: Bytes::from_static(b"{}"),
                    routing: None,
                },
                &Conditions::default(),
            )
            .unwrap();
        batch.finish().unwrap();
        shard.refresh().unwrap();
        shard.force_merge(1).unwrap();
        assert_eq!(shard.segments().unwrap().len(), 1);
        assert_eq!(shard.doc_counts().0, 6);
        // reopening reads the grown schema
        shard.close().unwrap();
        drop(shard);
        let reopened = Shard::open("idx", 0, dir.path(), &m, 2, ShardConfig::default()).unwrap();
        assert_eq!(reopened.doc_counts().0, 6);
    }

    #[test]
    fn with_merges_disabled_every_refresh_keeps_its_segment() {
        let dir = tempfile::tempdir().unwrap();
        let m = mapping();
        let config = ShardConfig {
            merges: false,
            ..ShardConfig::default()
        };
        let shard = Shard::open("idx", 0, dir.path(), &m, 1, config).unwrap();
        // the default policy would merge once 8 segments of a level exist
        for i in 0..10 {
            let doc = prepared(&shard, &m, &format!("d{i}"), json!({"n": i}));
            let mut batch = shard.write_batch();
            batch.index(doc, &Conditions::default()).unwrap();
            batch.finish().unwrap();
            shard.refresh().unwrap();
        }
        assert_eq!(shard.segments().unwrap().len(), 10);
        // an explicit force merge still merges, and merges stay off after it
        shard.force_merge(3).unwrap();
        assert_eq!(shard.segments().unwrap().len(), 3);
        for i in 10..20 {
            let doc = prepared(&shard, &m, &format!("d{i}"), json!({"n": i}));
            let mut batch = shard.write_batch();
            batch.index(doc, &Conditions::default()).unwrap();
            batch.finish().unwrap();
            shard.refresh().unwrap();
        }
        assert_eq!(shard.segments().unwrap().len(), 13);
        assert_eq!(shard.doc_counts().0, 20);
    }

    #[test]
    fn merge_groups_are_balanced() {
        let ids: Vec<SegmentId> = (0..6).map(|_| SegmentId::generate_random()).collect();
        let sizes = [100, 90, 50, 40, 10, 10];
        let groups = plan_merge_groups(ids.iter().cloned().zip(sizes).collect(), 2);
        assert_eq!(groups.len(), 2);
        let totals: Vec<u64> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|id| sizes[ids.iter().position(|x| x == id).unwrap()])
                    .sum()
            })
            .collect();
        assert!(totals.iter().all(|t| (140..=160).contains(t)), "{totals:?}");
        assert_eq!(
            plan_merge_groups(ids.iter().cloned().zip(sizes).collect(), 1).len(),
            1
        );
    }
}
