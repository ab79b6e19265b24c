//! An index: its metadata (settings, mapping), its shards, routing, and the write path that
//! turns client writes into shard operations.
//!
//! The mapping is index-wide; each shard keeps its own append-only schema and catches up with
//! the mapping lazily (before parsing a document, or when a search needs it). Dynamic mapping
//! updates take only the index's mapping lock — never a shard lock — so shards can never
//! deadlock on each other.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use serde_json::{json, Map, Value};
use tessera_common::murmur3::routing_hash;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_mapping::{parse_json_document, FieldMapping, FieldTable, Json, Mapping, ParseOutcome};

use crate::aliases::{aliases_json, parse_aliases, Aliases};
use crate::blocks::BlockLevel;
use crate::index_settings::{self, default_routing_shards, VERSION_CREATED};
use crate::shard::{
    shard_not_active, Conditions, DocVersion, Durability, PreparedDoc, Shard, ShardConfig,
    StoredDoc, WriteBatch, WriteOutcome, Written,
};
use crate::translog::{write_atomic, Operation};
use crate::update_script::{self, Current, Scripted, SharedScripts, UpdateScript, Upserted};
use crate::wire;

const STATE_FILE: &str = "_state.json";

/// What is persisted about an index.
#[derive(Clone, Debug)]
pub struct IndexMetadata {
    pub name: String,
    pub uuid: String,
    pub creation_date: i64,
    /// User settings with `index.` keys (private ones included).
    pub settings: Settings,
    pub mapping: Arc<Mapping>,
    pub mapping_version: u64,
    /// Bumped by every settings update (OpenSearch's `settings_version`); with
    /// `mapping_version` it orders two copies of the same index's metadata.
    pub settings_version: u64,
    pub number_of_shards: u32,
    pub routing_shards: u32,
    pub aliases: Aliases,
    /// Bumped by every change of the aliases (OpenSearch's `aliases_version`).
    pub aliases_version: u64,
    /// Closed (`POST /{index}/_close`): it refuses reads and writes until it is opened.
    pub closed: bool,
    /// A restored index: where its primaries take their first commit from.
    pub restore: Option<crate::snapshot_files::RestoreSource>,
}

impl IndexMetadata {
    /// What orders two copies of the same index's metadata: the higher is the later.
    pub fn versions(&self) -> (u64, u64, u64) {
        (
            self.mapping_version,
            self.settings_version,
            self.aliases_version,
        )
    }

    /// This metadata opened or closed (the next settings version: closing also sets
    /// `index.verified_before_close`, as OpenSearch does); `None` when it already is.
    pub fn with_closed(&self, closed: bool) -> Option<IndexMetadata> {
        if closed == self.closed {
            return None;
        }
        let mut next = self.clone();
        next.closed = closed;
        if closed {
            next.settings.set("index.verified_before_close", "true");
        } else {
            next.settings.remove("index.verified_before_close");
        }
        next.settings_version += 1;
        Some(next)
    }

    /// This metadata with `aliases` (the next aliases version); `None` when they are the same.
    pub fn with_aliases(&self, aliases: Aliases) -> Option<IndexMetadata> {
        if aliases == self.aliases {
            return None;
        }
        let mut next = self.clone();
        next.aliases = aliases;
        next.aliases_version += 1;
        Some(next)
    }

    pub fn setting(&self, key: &str) -> &str {
        index_settings::value(&self.settings, key)
    }

    /// This metadata with `mapping` (the next mapping version), checked against the index's
    /// mapping limits and buildable as a schema; `None` when the mapping is the same.
    pub fn with_mapping(&self, mapping: Mapping) -> Result<Option<IndexMetadata>> {
        if mapping == *self.mapping {
            return Ok(None);
        }
        let total_limit = self
            .setting("index.mapping.total_fields.limit")
            .parse()
            .unwrap_or(1000);
        let depth_limit = self
            .setting("index.mapping.depth.limit")
            .parse()
            .unwrap_or(20);
        mapping.check_limits(total_limit, depth_limit)?;
        mapping.check_nested_limit(
            self.setting("index.mapping.nested_fields.limit")
                .parse()
                .unwrap_or(50),
        )?;
        // the schema must be buildable before the mapping is accepted
        tessera_mapping::FieldTable::build(&mapping, None)?;
        let mut next = self.clone();
        next.mapping = Arc::new(mapping);
        next.mapping_version += 1;
        Ok(Some(next))
    }

    /// This metadata with a (validated) settings update applied (the next settings version);
    /// `None` when nothing changes.
    pub fn with_settings(&self, update: &Settings) -> Option<IndexMetadata> {
        let mut next = self.clone();
        next.settings.merge(update);
        if next.settings == self.settings {
            return None;
        }
        next.settings_version += 1;
        Some(next)
    }

    pub fn number_of_replicas(&self) -> u32 {
        self.setting("index.number_of_replicas")
            .parse()
            .unwrap_or(1)
    }

    /// `refresh_interval` in milliseconds; `None` when refreshes are disabled (`-1`).
    pub fn refresh_interval_millis(&self) -> Option<u64> {
        tessera_common::time::parse_time_value(
            self.setting("index.refresh_interval"),
            "index.refresh_interval",
        )
        .unwrap_or(Some(1000))
    }

    pub fn durability(&self) -> Durability {
        if self
            .setting("index.translog.durability")
            .eq_ignore_ascii_case("async")
        {
            Durability::Async
        } else {
            Durability::Request
        }
    }

    pub fn max_result_window(&self) -> usize {
        self.setting("index.max_result_window")
            .parse()
            .unwrap_or(10_000)
    }

    /// `index.query.default_field` as a list of patterns.
    pub fn default_fields(&self) -> Vec<String> {
        match self.settings.get("index.query.default_field") {
            Some(value) => value.as_list(),
            None => vec!["*".to_string()],
        }
    }

    /// The shard a document goes to (OpenSearch's formula, so ids land on the same shards).
    pub fn shard_for(&self, id: &str, routing: Option<&str>) -> u32 {
        if self.number_of_shards == 1 {
            // every hash lands on shard 0; a bulk load need not hash each id
            return 0;
        }
        let hash = routing_hash(routing.unwrap_or(id));
        let factor = self.routing_shards / self.number_of_shards;
        (hash.rem_euclid(self.routing_shards as i32) as u32) / factor
    }

    /// Settings as OpenSearch shows them: everything as strings, private ones included.
    pub fn rendered_settings(&self) -> Settings {
        let mut out = self.settings.clone();
        out.set("index.number_of_shards", self.number_of_shards.to_string());
        if !out.contains("index.number_of_replicas") {
            out.set("index.number_of_replicas", "1");
        }
        out
    }

    /// The persisted form (`_state.json`, and the cluster state's index metadata).
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "name": self.name,
            "uuid": self.uuid,
            "creation_date": self.creation_date,
            "settings": self.settings.to_flat_json(),
            "mappings": self.mapping.to_json(),
            "mapping_version": self.mapping_version,
            "settings_version": self.settings_version,
            "number_of_shards": self.number_of_shards,
            "routing_shards": self.routing_shards,
            "aliases": aliases_json(&self.aliases),
            "aliases_version": self.aliases_version,
            "state": if self.closed { "close" } else { "open" },
        });
        if let Some(restore) = &self.restore {
            out["restore"] = json!(restore);
        }
        out
    }

    /// Reads the persisted form; `settings_version` and `aliases_version`, which older files
    /// lack, default to 1.
    pub fn from_json(value: &Value) -> Result<IndexMetadata> {
        let bad = |what: &str| {
            Error::internal(
                "read index metadata",
                format!("missing or invalid [{what}]"),
            )
        };
        Ok(IndexMetadata {
            name: value["name"]
                .as_str()
                .ok_or_else(|| bad("name"))?
                .to_string(),
            uuid: value["uuid"]
                .as_str()
                .ok_or_else(|| bad("uuid"))?
                .to_string(),
            creation_date: value["creation_date"]
                .as_i64()
                .ok_or_else(|| bad("creation_date"))?,
            settings: Settings::from_json(&value["settings"])?,
            mapping: Arc::new(Mapping::parse(&value["mappings"])?),
            mapping_version: value["mapping_version"]
                .as_u64()
                .ok_or_else(|| bad("mapping_version"))?,
            settings_version: match &value["settings_version"] {
                Value::Null => 1,
                v => v.as_u64().ok_or_else(|| bad("settings_version"))?,
            },
            number_of_shards: value["number_of_shards"]
                .as_u64()
                .ok_or_else(|| bad("number_of_shards"))? as u32,
            routing_shards: value["routing_shards"]
                .as_u64()
                .ok_or_else(|| bad("routing_shards"))? as u32,
            aliases: parse_aliases(&value["aliases"])?,
            aliases_version: match &value["aliases_version"] {
                Value::Null => 1,
                v => v.as_u64().ok_or_else(|| bad("aliases_version"))?,
            },
            closed: value["state"] == "close",
            restore: match &value["restore"] {
                Value::Null => None,
                v => Some(serde_json::from_value(v.clone()).map_err(|_| bad("restore"))?),
            },
        })
    }
}

/// The shard's field table last fetched while parsing a batch, with its mapping version.
type TableCache = Option<(u64, Arc<FieldTable>)>;

/// One client write addressed to an index: plain data, serialisable (postcard included), so that
/// a write can be sent to the node that holds its shard's primary.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum DocWrite {
    Index {
        /// `None`: Tessera generates one.
        id: Option<String>,
        /// The id was generated by Tessera (no earlier version can exist).
        auto_generated_id: bool,
        #[serde(with = "wire::bytes")]
        source: Bytes,
        routing: Option<String>,
        conditions: Conditions,
    },
    Delete {
        id: String,
        routing: Option<String>,
        conditions: Conditions,
    },
    Update(Box<UpdateRequest>),
}

impl DocWrite {
    pub fn id(&self) -> Option<&str> {
        match self {
            DocWrite::Index { id, .. } => id.as_deref(),
            DocWrite::Delete { id, .. } => Some(id),
            DocWrite::Update(u) => Some(&u.id),
        }
    }

    pub fn routing(&self) -> Option<&str> {
        match self {
            DocWrite::Index { routing, .. } | DocWrite::Delete { routing, .. } => {
                routing.as_deref()
            }
            DocWrite::Update(u) => u.routing.as_deref(),
        }
    }

    pub fn set_routing(&mut self, next: Option<String>) {
        match self {
            DocWrite::Index { routing, .. } | DocWrite::Delete { routing, .. } => *routing = next,
            DocWrite::Update(u) => u.routing = next,
        }
    }
}

/// `_update` / bulk `update`: a partial document merged into the current one.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct UpdateRequest {
    pub id: String,
    pub routing: Option<String>,
    #[serde(with = "wire::json_text")]
    pub doc: Option<Value>,
    #[serde(with = "wire::json_text")]
    pub upsert: Option<Value>,
    pub doc_as_upsert: bool,
    pub detect_noop: bool,
    pub conditions: Conditions,
    /// `script`: run on the current document instead of merging `doc` (see `update_script`).
    pub script: Option<UpdateScript>,
    /// `scripted_upsert`: a missing document's `upsert` goes through the script too.
    pub scripted_upsert: bool,
}

/// The result of one write, with what a response needs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct DocWriteResult {
    pub id: String,
    pub shard: u32,
    pub written: Written,
    /// For updates: the document after the update.
    #[serde(with = "wire::optional_bytes")]
    pub source: Option<Bytes>,
    pub forced_refresh: bool,
    /// A scripted upsert the script turned into a noop: the document does not exist (OpenSearch
    /// answers version -1 and no sequence number).
    #[serde(default)]
    pub missing: bool,
}

/// Called with an index's current and next metadata before a mapping or settings update installs
/// it: the node writes it to the cluster state's store there, and an error fails the update. In a
/// cluster the elected cluster manager decides the next metadata (it merges concurrent updates
/// from every node): the sink returns what it decided, which is installed instead.
pub type MetadataSink =
    Arc<dyn Fn(&IndexMetadata, &IndexMetadata) -> Result<Option<IndexMetadata>> + Send + Sync>;

/// An open index.
pub struct IndexService {
    path: PathBuf,
    metadata: RwLock<Arc<IndexMetadata>>,
    metadata_sink: RwLock<Option<MetadataSink>>,
    mapping_lock: Mutex<()>,
    shards: RwLock<Vec<ShardSlot>>,
    resources: NodeResources,
    /// Set when the index is being deleted: a shard opened after that is closed again.
    deleted: std::sync::atomic::AtomicBool,
    /// Told the shard id after each commit of a primary held here (a cluster's node publishes
    /// the commit to the replicas).
    commit_listener: RwLock<Option<CommitListener>>,
}

/// See [`IndexService::set_commit_listener`].
pub type CommitListener = Arc<dyn Fn(u32) + Send + Sync>;

/// One shard of an index on this node: started, or failed (it could not open, or its engine
/// failed) with the reason, which health, `_cat/shards` and allocation explain report. One
/// failed shard never takes its index, let alone the node, down: the other shards serve.
#[derive(Clone)]
pub enum ShardSlot {
    /// Not opened yet: a node opens its shards (replaying their translogs) after it answers
    /// HTTP, so a long replay does not keep the port closed.
    Initializing,
    Started(Arc<Shard>),
    Failed(ShardFailure),
    /// No copy of this shard is allocated to this node (in a cluster, the routing puts it on
    /// another node, or nowhere); its files, if any, stay on disk for when it comes back.
    Unallocated,
}

/// Why a shard is not serving, and when that was found.
#[derive(Clone, Debug)]
pub struct ShardFailure {
    pub error: Error,
    pub at_millis: i64,
    /// Failed attempts to open it so far.
    pub attempts: u32,
    /// The copy is a replica: it is opened again as one.
    pub replica: bool,
    /// Opening the directory again cannot heal it (a resized shard whose first commit could
    /// not be built: its empty directory would open as an empty shard).
    pub permanent: bool,
}

impl ShardFailure {
    fn new(error: Error, attempts: u32) -> ShardFailure {
        ShardFailure {
            error,
            at_millis: tessera_common::time::now_millis(),
            attempts,
            replica: false,
            permanent: false,
        }
    }

    /// Damaged files do not heal by themselves; anything else (a full disk, an I/O error) may.
    pub fn retryable(&self) -> bool {
        !self.permanent
            && !matches!(
                self.error.kind(),
                "translog_corrupted_exception" | "corrupt_index_exception"
            )
    }

    /// The wait before the next attempt to open the shard: 1 s doubling to 30 s.
    fn backoff_millis(&self) -> i64 {
        (1000i64 << self.attempts.min(5)).min(30_000)
    }
}

/// Node-level sizing handed to each shard.
#[derive(Clone, Debug)]
pub struct NodeResources {
    pub indexing_threads: usize,
    pub indexing_buffer_bytes: usize,
    pub merge_threads: usize,
    /// The node's compiled scripts: a script sent with many updates compiles once.
    pub scripts: SharedScripts,
}

impl Default for NodeResources {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        NodeResources {
            // one indexing worker per shard keeps each refresh's segment in insertion order (the
            // order OpenSearch returns ties in); shards and concurrent requests add parallelism
            indexing_threads: 1,
            // an index's in-memory segment, split among its shards: the indexing thread's term
            // and column tables stay small enough to be cache-friendly (64 MB loaded nyc_taxis
            // ~4% faster than 256 MB and 128 MB, side by side; 32 MB made more segments to merge)
            indexing_buffer_bytes: 64 << 20,
            merge_threads: (cores / 4).max(1),
            scripts: SharedScripts::default(),
        }
    }
}

/// A slot as requests see it: a started shard whose engine failed is failed.
fn slot_view(slot: &ShardSlot) -> ShardSlot {
    match slot {
        ShardSlot::Started(shard) => match shard.failure() {
            None => slot.clone(),
            Some(error) => ShardSlot::Failed(ShardFailure::new(error, 0)),
        },
        ShardSlot::Initializing | ShardSlot::Failed(_) | ShardSlot::Unallocated => slot.clone(),
    }
}

/// Opens shard `shard_id` of the index at `path` (a replica: as a copy that only takes the
/// primary's segments); a shard that cannot open becomes a failed slot with the reason, logged.
fn open_shard(
    path: &Path,
    metadata: &IndexMetadata,
    resources: &NodeResources,
    shard_id: u32,
    attempts: u32,
    replica: bool,
) -> ShardSlot {
    let shard_path = path.join(shard_id.to_string());
    let config = shard_config(metadata, resources);
    let opened = if replica {
        // a replica opens to recover (a new allocation): what its translog held belongs to an
        // earlier life of the copy (perhaps a primary's operations no other copy got); the
        // recovery brings a commit of everything written, and forwarding everything after it
        discard_translog(&shard_path)
            .and_then(|()| Shard::open_replica(&metadata.name, shard_id, &shard_path, config))
    } else {
        restore_if_empty(metadata, shard_id, &shard_path).and_then(|()| {
            Shard::open(
                &metadata.name,
                shard_id,
                &shard_path,
                &metadata.mapping,
                metadata.mapping_version,
                config,
            )
        })
    };
    match opened {
        Ok(shard) => ShardSlot::Started(Arc::new(shard)),
        Err(error) => {
            eprintln!(
                "[{}][{shard_id}] shard failed to open: {error}",
                metadata.name
            );
            ShardSlot::Failed(ShardFailure {
                replica,
                ..ShardFailure::new(error, attempts)
            })
        }
    }
}

/// A primary of a restored index whose directory holds no commit yet takes the snapshot's.
fn restore_if_empty(metadata: &IndexMetadata, shard_id: u32, shard_path: &Path) -> Result<()> {
    match &metadata.restore {
        Some(source) if crate::snapshot_files::is_empty_shard(shard_path) => {
            crate::snapshot_files::restore_shard(source, shard_id, shard_path).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Removes the translog of the shard at `shard_path`, if any.
fn discard_translog(shard_path: &Path) -> Result<()> {
    let translog = shard_path.join("translog");
    match std::fs::remove_dir_all(&translog) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::internal(
            format!("remove the old translog {}", translog.display()),
            e,
        )),
    }
}

/// `index.knn.advanced.approximate_threshold` (validated when set).
fn knn_threshold(metadata: &IndexMetadata) -> i64 {
    metadata
        .setting("index.knn.advanced.approximate_threshold")
        .parse()
        .unwrap_or(tessera_knn::segment_graph::DEFAULT_APPROXIMATE_THRESHOLD)
}

fn shard_config(metadata: &IndexMetadata, resources: &NodeResources) -> ShardConfig {
    let threads = resources.indexing_threads.max(1);
    let per_shard = resources.indexing_buffer_bytes / metadata.number_of_shards.max(1) as usize;
    ShardConfig {
        durability: metadata.durability(),
        indexing_threads: threads,
        memory_budget_per_thread: (per_shard / threads).max(16 << 20),
        merge_threads: resources.merge_threads,
        merges: metadata.setting("index.merge.enabled") != "false",
        verify_checksums: metadata.setting("index.shard.check_on_startup") != "false",
        knn_threshold: knn_threshold(metadata),
    }
}

impl IndexService {
    /// Creates a new index under `path` (which must not exist yet).
    pub fn create(
        path: &Path,
        name: &str,
        uuid: &str,
        settings: Settings,
        mapping: Mapping,
        resources: &NodeResources,
    ) -> Result<IndexService> {
        let metadata = Self::new_metadata(name, uuid, settings, mapping)?;
        Self::create_from(path, metadata, resources)
    }

    /// Creates a new index under `path` (which must not exist yet) from its metadata (made by
    /// [`IndexService::new_metadata`]).
    pub fn create_from(
        path: &Path,
        metadata: IndexMetadata,
        resources: &NodeResources,
    ) -> Result<IndexService> {
        std::fs::create_dir_all(path).map_err(|e| {
            Error::internal(format!("create index directory {}", path.display()), e)
        })?;
        persist(path, &metadata)?;
        Self::open_with(path, metadata, resources)
    }

    /// The metadata of a new index: its settings validated and completed (shard count, uuid,
    /// creation date, defaults), its mapping checked against the limits.
    pub fn new_metadata(
        name: &str,
        uuid: &str,
        settings: Settings,
        mapping: Mapping,
    ) -> Result<IndexMetadata> {
        index_settings::validate(&settings, false, name)?;
        let number_of_shards: u32 = index_settings::value(&settings, "index.number_of_shards")
            .parse()
            .unwrap_or(1);
        let routing_shards: u32 = settings
            .get_str("index.number_of_routing_shards")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| default_routing_shards(number_of_shards));
        if !routing_shards.is_multiple_of(number_of_shards) || routing_shards < number_of_shards {
            return Err(Error::illegal_argument(format!(
                "the number of source shards [{number_of_shards}] must be a factor of [{routing_shards}]"
            )));
        }
        let limits = (
            index_settings::value(&settings, "index.mapping.total_fields.limit")
                .parse()
                .unwrap_or(1000),
            index_settings::value(&settings, "index.mapping.depth.limit")
                .parse()
                .unwrap_or(20),
        );
        mapping.check_limits(limits.0, limits.1)?;
        mapping.check_nested_limit(
            index_settings::value(&settings, "index.mapping.nested_fields.limit")
                .parse()
                .unwrap_or(50),
        )?;
        let mut settings = settings;
        let creation_date = tessera_common::time::now_millis();
        settings.set("index.creation_date", creation_date.to_string());
        settings.set("index.uuid", uuid);
        settings.set("index.version.created", VERSION_CREATED);
        settings.set("index.provided_name", name);
        if !settings.contains("index.number_of_replicas") {
            settings.set("index.number_of_replicas", "1");
        }
        settings.set("index.number_of_shards", number_of_shards.to_string());
        // replicas copy their primary's segments (OpenSearch's SEGMENT replication); document
        // replication, where every copy indexes, is not built
        match settings.get_str("index.replication.type") {
            None => settings.set("index.replication.type", "SEGMENT"),
            Some("SEGMENT") => {}
            Some(other) => {
                return Err(Error::illegal_argument(format!(
                    "index.replication.type [{other}] is not supported: replicas are kept by segment replication, [SEGMENT]"
                )))
            }
        }
        // the schema must be buildable before the index exists
        tessera_mapping::FieldTable::build(&mapping, None)?;
        Ok(IndexMetadata {
            name: name.to_string(),
            uuid: uuid.to_string(),
            creation_date,
            settings,
            mapping: Arc::new(mapping),
            mapping_version: 1,
            settings_version: 1,
            number_of_shards,
            routing_shards,
            aliases: Aliases::new(),
            aliases_version: 1,
            closed: false,
            restore: None,
        })
    }

    /// An index of a cluster, as a node holds it whatever copies it has: its metadata under
    /// `path` (created if missing, written each time), every shard [`ShardSlot::Unallocated`]
    /// until the routing allocates a copy here ([`IndexService::allocate_shard`]).
    pub fn open_unallocated(
        path: &Path,
        metadata: IndexMetadata,
        resources: &NodeResources,
    ) -> Result<IndexService> {
        std::fs::create_dir_all(path).map_err(|e| {
            Error::internal(format!("create index directory {}", path.display()), e)
        })?;
        persist(path, &metadata)?;
        let slots = vec![ShardSlot::Unallocated; metadata.number_of_shards as usize];
        Ok(Self::with_slots(path, metadata, resources, slots))
    }

    /// Opens (creating if new) the copy of shard `id` the routing allocated to this node;
    /// returns its slot (started, or failed with why). A shard already open stays as it is.
    pub fn allocate_shard(&self, id: u32) -> ShardSlot {
        self.allocate_copy(id, false)
    }

    /// [`IndexService::allocate_shard`] for a replica: it opens what it copied of the
    /// primary's segments so far (nothing, the first time), and takes more with
    /// `Shard::apply_checkpoint`.
    pub fn allocate_replica(&self, id: u32) -> ShardSlot {
        self.allocate_copy(id, true)
    }

    /// [`IndexService::allocate_shard`] for a primary whose first commit `prepare` writes into
    /// its shard directory when the directory holds none yet (a resized index's shard, built
    /// from its source's segments). When `prepare` fails the copy fails for good.
    pub fn allocate_prepared_shard(
        &self,
        id: u32,
        prepare: impl FnOnce(&Path) -> Result<()>,
    ) -> ShardSlot {
        // claimed first: the routing may ask again (a later cluster state) while it builds
        if let Some(slot) = self.claim(id) {
            return slot;
        }
        let shard_path = self.path.join(id.to_string());
        if !shard_path.join("index").exists() {
            if let Err(error) = prepare(&shard_path) {
                eprintln!(
                    "[{}][{id}] cannot build the shard from its source: {error}",
                    self.name()
                );
                let slot = ShardSlot::Failed(ShardFailure {
                    permanent: true,
                    ..ShardFailure::new(error, 0)
                });
                self.shards.write().unwrap()[id as usize] = slot.clone();
                return slot;
            }
        }
        self.open_claimed(id, false)
    }

    /// Marks the unallocated slot `id` initializing (this caller opens it); answers the slot as
    /// it is when it is not unallocated.
    fn claim(&self, id: u32) -> Option<ShardSlot> {
        let mut slots = self.shards.write().unwrap();
        match slots.get(id as usize) {
            Some(ShardSlot::Unallocated) => {
                slots[id as usize] = ShardSlot::Initializing;
                None
            }
            Some(slot) => Some(slot_view(slot)),
            None => Some(ShardSlot::Failed(ShardFailure::new(
                Error::illegal_state(format!("[{}] has no shard [{id}]", self.name())),
                0,
            ))),
        }
    }

    fn allocate_copy(&self, id: u32, replica: bool) -> ShardSlot {
        match self.claim(id) {
            Some(slot) => slot,
            None => self.open_claimed(id, replica),
        }
    }

    /// Opens the copy of shard `id` whose slot this caller claimed.
    fn open_claimed(&self, id: u32, replica: bool) -> ShardSlot {
        let metadata = self.metadata();
        let slot = open_shard(&self.path, &metadata, &self.resources, id, 0, replica);
        if self.deleted.load(std::sync::atomic::Ordering::Acquire) {
            if let ShardSlot::Started(shard) = &slot {
                shard.close_for_delete(Error::index_not_found(&metadata.name));
            }
            return slot;
        }
        if let ShardSlot::Started(shard) = &slot {
            // settings may have changed while it opened
            shard.set_durability(self.metadata().durability());
            shard.set_knn_threshold(knn_threshold(&self.metadata()));
        }
        self.listen(id, &slot);
        self.shards.write().unwrap()[id as usize] = slot.clone();
        slot
    }

    /// Closes this node's copy of shard `id` (the routing moved it away); its files stay.
    pub fn release_shard(&self, id: u32) {
        let previous = {
            let mut slots = self.shards.write().unwrap();
            match slots.get_mut(id as usize) {
                Some(slot) => std::mem::replace(slot, ShardSlot::Unallocated),
                None => return,
            }
        };
        if let ShardSlot::Started(shard) = previous {
            if let Err(e) = shard.close() {
                eprintln!("[{}][{id}] closing the released shard: {e}", self.name());
            }
        }
    }

    /// Opens an existing index from its directory.
    pub fn open(path: &Path, resources: &NodeResources) -> Result<IndexService> {
        let index = Self::open_deferred(path, resources)?;
        index.start_shards(|| false);
        Ok(index)
    }

    /// Reads an existing index's metadata; its shards stay [`ShardSlot::Initializing`] until
    /// [`IndexService::start_shards`] opens them.
    pub fn open_deferred(path: &Path, resources: &NodeResources) -> Result<IndexService> {
        let raw = std::fs::read(path.join(STATE_FILE)).map_err(|e| {
            Error::internal(format!("read index metadata in {}", path.display()), e)
        })?;
        let value = parse_metadata_json(&raw)?;
        let metadata = IndexMetadata::from_json(&value)?;
        let slots = vec![ShardSlot::Initializing; metadata.number_of_shards as usize];
        Ok(Self::with_slots(path, metadata, resources, slots))
    }

    fn open_with(
        path: &Path,
        metadata: IndexMetadata,
        resources: &NodeResources,
    ) -> Result<IndexService> {
        let shards = (0..metadata.number_of_shards)
            .map(|shard_id| open_shard(path, &metadata, resources, shard_id, 0, false))
            .collect();
        Ok(Self::with_slots(path, metadata, resources, shards))
    }

    fn with_slots(
        path: &Path,
        metadata: IndexMetadata,
        resources: &NodeResources,
        shards: Vec<ShardSlot>,
    ) -> IndexService {
        IndexService {
            path: path.to_path_buf(),
            metadata: RwLock::new(Arc::new(metadata)),
            metadata_sink: RwLock::new(None),
            mapping_lock: Mutex::new(()),
            shards: RwLock::new(shards),
            resources: resources.clone(),
            deleted: std::sync::atomic::AtomicBool::new(false),
            commit_listener: RwLock::new(None),
        }
    }

    /// Calls `listener` with the shard id after each commit (refresh, flush, merge) of a
    /// primary this index holds, from the committing thread with the shard's write lock held:
    /// it must only hand the news on.
    pub fn set_commit_listener(&self, listener: CommitListener) {
        *self.commit_listener.write().unwrap() = Some(listener);
        for (id, slot) in self.shard_slots().iter().enumerate() {
            self.listen(id as u32, slot);
        }
    }

    /// Hands a started primary the commit listener.
    fn listen(&self, id: u32, slot: &ShardSlot) {
        let Some(listener) = self.commit_listener.read().unwrap().clone() else {
            return;
        };
        if let ShardSlot::Started(shard) = slot {
            if !shard.is_replica() {
                shard.set_commit_listener(Box::new(move || listener(id)));
            }
        }
    }

    /// Opens the shards still initializing, one at a time (each replays its translog), until
    /// `stop` says the node is shutting down. A shard of an index deleted meanwhile is closed
    /// again instead of started.
    pub fn start_shards(&self, stop: impl Fn() -> bool) {
        let metadata = self.metadata();
        let count = self.shards.read().unwrap().len();
        for shard_id in 0..count {
            if stop() {
                return;
            }
            if !matches!(
                self.shards.read().unwrap()[shard_id],
                ShardSlot::Initializing
            ) {
                continue;
            }
            let slot = open_shard(
                &self.path,
                &metadata,
                &self.resources,
                shard_id as u32,
                0,
                false,
            );
            if self.deleted.load(std::sync::atomic::Ordering::Acquire) {
                if let ShardSlot::Started(shard) = &slot {
                    shard.close_for_delete(Error::index_not_found(&metadata.name));
                }
                return;
            }
            self.shards.write().unwrap()[shard_id] = slot;
        }
    }

    pub fn metadata(&self) -> Arc<IndexMetadata> {
        self.metadata.read().unwrap().clone()
    }

    /// Sets the function every later mapping and settings update hands its next metadata to
    /// before installing it.
    pub fn set_metadata_sink(&self, sink: MetadataSink) {
        *self.metadata_sink.write().unwrap() = Some(sink);
    }

    /// Hands `next` to the metadata sink, if there is one; returns the metadata to install
    /// (what the sink decided, or `next`), `None` when it is not newer than `current`.
    fn sink(&self, current: &IndexMetadata, next: IndexMetadata) -> Result<Option<IndexMetadata>> {
        let sink = self.metadata_sink.read().unwrap().clone();
        let decided = match sink {
            Some(sink) => sink(current, &next)?.unwrap_or(next),
            None => next,
        };
        let newer = decided.versions() > current.versions();
        Ok(newer.then_some(decided))
    }

    /// Installs metadata decided elsewhere (the cluster state's copy, when it is newer than
    /// this index's `_state.json`): persisted here, not handed to the sink.
    pub fn apply_metadata(&self, next: IndexMetadata) -> Result<()> {
        let _guard = self.mapping_lock.lock().unwrap();
        self.apply_metadata_locked(next)
    }

    /// [`IndexService::apply_metadata`] unless a mapping or settings update of this node is
    /// running (it holds the lock while the cluster manager decides it, and installs what was
    /// decided): then nothing, and the caller tries again later.
    pub fn try_apply_metadata(&self, next: IndexMetadata) -> Result<()> {
        match self.mapping_lock.try_lock() {
            Ok(_guard) => self.apply_metadata_locked(next),
            Err(_) => Ok(()),
        }
    }

    fn apply_metadata_locked(&self, next: IndexMetadata) -> Result<()> {
        let current = self.metadata();
        if next.uuid != current.uuid || next.number_of_shards != current.number_of_shards {
            return Err(Error::illegal_state(format!(
                "metadata of [{}/{}] cannot replace [{}/{}]",
                next.name, next.uuid, current.name, current.uuid
            )));
        }
        self.install(next)
    }

    pub fn name(&self) -> String {
        self.metadata().name.clone()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The started shards (a shard whose engine failed is not).
    pub fn shards(&self) -> Vec<Arc<Shard>> {
        self.shard_slots()
            .into_iter()
            .filter_map(|slot| match slot {
                ShardSlot::Started(shard) => Some(shard),
                ShardSlot::Initializing | ShardSlot::Failed(_) | ShardSlot::Unallocated => None,
            })
            .collect()
    }

    /// Every shard, started or failed, by shard id.
    pub fn shard_slots(&self) -> Vec<ShardSlot> {
        self.shards.read().unwrap().iter().map(slot_view).collect()
    }

    /// True while some shard has not been opened yet.
    pub fn is_initializing(&self) -> bool {
        self.shards
            .read()
            .unwrap()
            .iter()
            .any(|slot| matches!(slot, ShardSlot::Initializing))
    }

    /// The started shard `id`, or OpenSearch's error for a shard that is not active. Called for
    /// every shard request: it looks at that one slot only.
    pub fn shard(&self, id: u32) -> Result<Arc<Shard>> {
        let slot = self.shards.read().unwrap().get(id as usize).map(slot_view);
        match slot {
            Some(ShardSlot::Started(shard)) => Ok(shard),
            Some(ShardSlot::Initializing) => Err(shard_not_active(
                &self.name(),
                id,
                "the shard is initializing (replaying its translog)",
            )),
            // deleted while a request was running
            Some(ShardSlot::Failed(failure)) if failure.error.status() == 404 => Err(failure.error),
            Some(ShardSlot::Failed(failure)) => Err(shard_not_active(
                &self.name(),
                id,
                &format!("the shard failed ({})", failure.error.reason()),
            )),
            Some(ShardSlot::Unallocated) => Err(Error::new(
                "shard_not_found_exception",
                404,
                format!(
                    "no such shard: [{}][{id}] has no copy on this node",
                    self.name()
                ),
            )
            .with_meta("index", self.name())
            .with_meta("shard", id.to_string())),
            None => Err(Error::illegal_state(format!(
                "[{}] has no shard [{id}]",
                self.name()
            ))),
        }
    }

    /// Replaces shards whose engine failed by failed slots, and tries again to open failed
    /// shards whose failure may heal (a full disk that has space again), with a backoff.
    /// Returns how many shards started.
    pub fn recover_failed_shards(&self) -> usize {
        let metadata = self.metadata();
        let mut started = 0;
        let count = self.shards.read().unwrap().len();
        for shard_id in 0..count {
            if self.deleted.load(std::sync::atomic::Ordering::Acquire) {
                return started;
            }
            let failure = match &self.shards.read().unwrap()[shard_id] {
                ShardSlot::Started(shard) => match shard.failure() {
                    // reopened only once the failed writer stopped writing into the directory
                    Some(error) if shard.writer_closed() => ShardFailure {
                        replica: shard.is_replica(),
                        ..ShardFailure::new(error, 0)
                    },
                    _ => continue,
                },
                ShardSlot::Failed(failure) => failure.clone(),
                ShardSlot::Initializing | ShardSlot::Unallocated => continue,
            };
            let due =
                tessera_common::time::now_millis() - failure.at_millis >= failure.backoff_millis();
            let slot = if failure.retryable() && due {
                let slot = open_shard(
                    &self.path,
                    &metadata,
                    &self.resources,
                    shard_id as u32,
                    failure.attempts + 1,
                    failure.replica,
                );
                if let ShardSlot::Started(shard) = &slot {
                    eprintln!("[{}][{shard_id}] shard recovered", metadata.name);
                    // settings may have changed while it opened
                    shard.set_durability(self.metadata().durability());
                    shard.set_knn_threshold(knn_threshold(&self.metadata()));
                    started += 1;
                }
                slot
            } else {
                ShardSlot::Failed(failure)
            };
            self.listen(shard_id as u32, &slot);
            self.shards.write().unwrap()[shard_id] = slot;
        }
        started
    }

    /// `PUT _mapping`: merges `update` into the mapping and persists it.
    pub fn put_mapping(&self, update: &Value) -> Result<()> {
        let _guard = self.mapping_lock.lock().unwrap();
        let current = self.metadata();
        let mut mapping = (*current.mapping).clone();
        mapping.merge_json(update)?;
        self.install_mapping(&current, mapping)
    }

    /// Adds fields found by dynamic mapping.
    fn merge_dynamic(
        &self,
        properties: &std::collections::BTreeMap<String, FieldMapping>,
    ) -> Result<()> {
        let _guard = self.mapping_lock.lock().unwrap();
        let current = self.metadata();
        let mut mapping = (*current.mapping).clone();
        mapping.merge_properties(properties)?;
        self.install_mapping(&current, mapping)
    }

    fn install_mapping(&self, current: &IndexMetadata, mapping: Mapping) -> Result<()> {
        let Some(next) = current.with_mapping(mapping)? else {
            return Ok(());
        };
        // a mapping that changes (by `PUT _mapping` or dynamic mapping) changes metadata
        crate::blocks::check(current, BlockLevel::MetadataWrite)?;
        self.decide_and_install(current, next).map(|_| ())
    }

    /// `PUT _settings` with dynamic settings only.
    pub fn update_settings(&self, update: &Settings) -> Result<()> {
        let _guard = self.mapping_lock.lock().unwrap();
        let current = self.metadata();
        let target = format!("[{}/{}]", current.name, current.uuid);
        index_settings::validate(update, true, &target)?;
        if !crate::blocks::only_blocks(update) {
            crate::blocks::check(&current, BlockLevel::MetadataWrite)?;
        }
        let Some(next) = current.with_settings(update) else {
            return Ok(());
        };
        self.decide_and_install(&current, next).map(|_| ())
    }

    /// Opens or closes the index (its metadata: a closed index refuses reads and writes).
    /// Returns whether it changed.
    pub fn set_closed(&self, closed: bool) -> Result<bool> {
        let _guard = self.mapping_lock.lock().unwrap();
        let current = self.metadata();
        let Some(next) = current.with_closed(closed) else {
            return Ok(false);
        };
        self.decide_and_install(&current, next)
    }

    /// Replaces the index's aliases (a single node's `_aliases`: a cluster's manager decides
    /// them for every index at once, and each node installs them with the metadata).
    pub fn update_aliases(&self, aliases: Aliases) -> Result<()> {
        let _guard = self.mapping_lock.lock().unwrap();
        let current = self.metadata();
        let Some(next) = current.with_aliases(aliases) else {
            return Ok(());
        };
        self.decide_and_install(&current, next).map(|_| ())
    }

    /// Hands a change of the metadata to the sink and installs what it decided (under the
    /// mapping lock); whether anything newer was installed.
    fn decide_and_install(&self, current: &IndexMetadata, next: IndexMetadata) -> Result<bool> {
        let Some(next) = self.sink(current, next)? else {
            return Ok(false);
        };
        self.install(next)?;
        Ok(true)
    }

    /// Persists `next` and makes it the index's metadata (under the mapping lock).
    fn install(&self, next: IndexMetadata) -> Result<()> {
        persist(&self.path, &next)?;
        let durability = next.durability();
        let threshold = knn_threshold(&next);
        *self.metadata.write().unwrap() = Arc::new(next);
        for shard in self.shards() {
            shard.set_durability(durability);
            shard.set_knn_threshold(threshold);
        }
        Ok(())
    }

    /// Brings every shard's schema up to the current mapping (before a search).
    pub fn sync_shard_schemas(&self) -> Result<()> {
        let meta = self.metadata();
        for shard in self.shards() {
            shard.table_for(&meta.mapping, meta.mapping_version)?;
        }
        Ok(())
    }

    pub fn shard_for(&self, id: &str, routing: Option<&str>) -> u32 {
        self.metadata().shard_for(id, routing)
    }

    /// The `_source` to keep: the document as sent (shared, not copied) unless the mapping
    /// filters it.
    fn source_bytes(meta: &IndexMetadata, json: &Json, original: &Bytes) -> Bytes {
        if meta.mapping.source_includes.is_empty() && meta.mapping.source_excludes.is_empty() {
            return original.clone();
        }
        let value = json.to_value();
        let value = &value;
        let filter = tessera_mapping::SourceFilter::new(
            meta.mapping.source_includes.clone(),
            meta.mapping.source_excludes.clone(),
        );
        Bytes::from(serde_json::to_vec(&filter.apply(value)).unwrap_or_default())
    }

    /// Parses a document for `shard`, growing the mapping as dynamic mapping requires.
    fn prepare(
        &self,
        shard: &Shard,
        id: String,
        auto_id: bool,
        source: &Bytes,
        routing: Option<String>,
        tables: &mut TableCache,
    ) -> Result<PreparedDoc> {
        let json = parse_source_json(source)?;
        loop {
            let meta = self.metadata();
            // the shard's table takes its write lock: fetched once per mapping version, not
            // once per document, so that parsing never waits for a batch holding the lock
            let table = match tables {
                Some((version, table)) if *version == meta.mapping_version => table.clone(),
                _ => {
                    let table = shard.table_for(&meta.mapping, meta.mapping_version)?;
                    *tables = Some((meta.mapping_version, table.clone()));
                    table
                }
            };
            match parse_json_document(&meta.mapping, &table, &id, &json)? {
                ParseOutcome::MappingUpdate(update) => self.merge_dynamic(&update)?,
                parsed => {
                    let (nested, doc) = parsed.into_block().expect("not a mapping update");
                    check_nested_objects(&meta, nested.len())?;
                    check_stored_queries(&meta, &table, &json)?;
                    return Ok(PreparedDoc {
                        id,
                        auto_id,
                        doc,
                        nested,
                        source: Self::source_bytes(&meta, &json, source),
                        routing,
                    });
                }
            }
        }
    }

    /// Like [`prepare`], for a document built while the shard's write lock is held.
    fn prepare_locked(
        &self,
        batch: &mut WriteBatch<'_>,
        id: &str,
        value: &Value,
        routing: Option<String>,
    ) -> Result<PreparedDoc> {
        let bytes: Bytes = serde_json::to_vec(value)
            .map_err(|e| Error::internal("serialise a document", e))?
            .into();
        let json = Json::parse(&bytes).map_err(|e| Error::internal("parse a document", e))?;
        loop {
            let meta = self.metadata();
            let table = batch.table_for(&meta.mapping, meta.mapping_version)?;
            match parse_json_document(&meta.mapping, &table, id, &json)? {
                ParseOutcome::MappingUpdate(update) => self.merge_dynamic(&update)?,
                parsed => {
                    let (nested, doc) = parsed.into_block().expect("not a mapping update");
                    check_nested_objects(&meta, nested.len())?;
                    check_stored_queries(&meta, &table, &json)?;
                    return Ok(PreparedDoc {
                        id: id.to_string(),
                        auto_id: false,
                        doc,
                        nested,
                        source: Self::source_bytes(&meta, &json, &bytes),
                        routing,
                    });
                }
            }
        }
    }

    /// Applies writes that all route to `shard_id`, in order; one fsync covers them all.
    /// Each item fails alone; the outer error is a failure of the shard itself.
    pub fn write_shard(
        &self,
        shard_id: u32,
        items: Vec<DocWrite>,
        refresh: bool,
    ) -> Result<Vec<Result<DocWriteResult>>> {
        self.write_shard_inner(shard_id, items, refresh, false)
            .map(|(results, _)| results)
    }

    /// `write_shard`, also returning the translog operations the primary logged for these
    /// writes (in the order logged), to forward to the replicas. Noops and failed items log
    /// nothing.
    pub fn write_shard_replicated(
        &self,
        shard_id: u32,
        items: Vec<DocWrite>,
        refresh: bool,
    ) -> Result<(Vec<Result<DocWriteResult>>, Vec<Operation>)> {
        self.write_shard_inner(shard_id, items, refresh, true)
    }

    /// Both of the above: `keep_ops` keeps a copy of the logged operations.
    fn write_shard_inner(
        &self,
        shard_id: u32,
        items: Vec<DocWrite>,
        refresh: bool,
        keep_ops: bool,
    ) -> Result<(Vec<Result<DocWriteResult>>, Vec<Operation>)> {
        let shard = match self.shard(shard_id) {
            Ok(shard) => shard,
            Err(e) => return Ok((items.iter().map(|_| Err(e.clone())).collect(), Vec::new())),
        };
        if let Some(blocked) = crate::blocks::blocked(&self.metadata(), BlockLevel::Write) {
            return Ok((
                items.iter().map(|_| Err(blocked.clone())).collect(),
                Vec::new(),
            ));
        }
        // parse index requests before taking the shard lock, so requests parse in parallel
        let mut prepared: Vec<Option<Result<PreparedDoc>>> = Vec::with_capacity(items.len());
        let mut tables: TableCache = None;
        for item in &items {
            prepared.push(match item {
                DocWrite::Index {
                    id,
                    auto_generated_id,
                    source,
                    routing,
                    ..
                } => {
                    let (id, auto) = match id {
                        Some(id) => (id.clone(), *auto_generated_id),
                        None => (tessera_common::ids::time_based_id(), true),
                    };
                    Some(self.prepare(&shard, id, auto, source, routing.clone(), &mut tables))
                }
                _ => None,
            });
        }
        let mut batch = shard.write_batch();
        if keep_ops {
            batch.keep_operations();
        }
        let mut results = Vec::with_capacity(items.len());
        for (item, prepared) in items.into_iter().zip(prepared) {
            let result = match (item, prepared) {
                (DocWrite::Index { conditions, .. }, Some(prepared)) => prepared.and_then(|doc| {
                    let id = doc.id.clone();
                    batch.index(doc, &conditions).map(|written| DocWriteResult {
                        id,
                        shard: shard_id,
                        written,
                        source: None,
                        forced_refresh: false,
                        missing: false,
                    })
                }),
                (
                    DocWrite::Delete {
                        id,
                        routing,
                        conditions,
                    },
                    _,
                ) => batch
                    .delete(&id, routing.as_deref(), &conditions)
                    .map(|written| DocWriteResult {
                        id,
                        shard: shard_id,
                        written,
                        source: None,
                        forced_refresh: false,
                        missing: false,
                    }),
                (DocWrite::Update(update), _) => self.apply_update(&mut batch, shard_id, *update),
                (DocWrite::Index { .. }, None) => {
                    unreachable!("index requests are always prepared")
                }
            };
            results.push(result);
        }
        if refresh {
            batch.refresh()?;
            for r in results.iter_mut().flatten() {
                r.forced_refresh = true;
            }
        }
        let ops = batch.take_operations();
        batch.finish()?;
        Ok((results, ops))
    }

    fn apply_update(
        &self,
        batch: &mut WriteBatch<'_>,
        shard_id: u32,
        update: UpdateRequest,
    ) -> Result<DocWriteResult> {
        let current = batch.current_doc(&update.id)?;
        let conditions = update.conditions;
        let result = |written: Written, source: Option<Bytes>| DocWriteResult {
            id: update.id.clone(),
            shard: shard_id,
            written,
            source,
            forced_refresh: false,
            missing: false,
        };
        match current {
            None => {
                // a scripted upsert runs the script on the upsert document first
                let upsert = if let (Some(script), true, Some(upsert)) =
                    (&update.script, update.scripted_upsert, &update.upsert)
                {
                    let now = tessera_common::time::now_millis();
                    match update_script::run_upsert(&self.resources.scripts.0, script, upsert, now)?
                    {
                        Upserted::Create(source) => source,
                        Upserted::Noop => {
                            return Ok(DocWriteResult {
                                missing: true,
                                ..result(
                                    Written {
                                        outcome: WriteOutcome::Noop,
                                        version: DocVersion {
                                            version: 0,
                                            seq_no: 0,
                                            primary_term: 0,
                                        },
                                    },
                                    None,
                                )
                            });
                        }
                    }
                } else {
                    match (&update.upsert, update.doc_as_upsert, &update.doc) {
                        (Some(upsert), _, _) => upsert.clone(),
                        (None, true, Some(doc)) => doc.clone(),
                        _ => {
                            let meta = self.metadata();
                            return Err(Error::document_missing(&meta.name, shard_id, &update.id)
                                .with_meta("index_uuid", meta.uuid.clone()));
                        }
                    }
                };
                let prepared =
                    self.prepare_locked(batch, &update.id, &upsert, update.routing.clone())?;
                let source = prepared.source.clone();
                let written = batch.index(
                    prepared,
                    &Conditions {
                        create_only: true,
                        ..conditions
                    },
                )?;
                Ok(result(written, Some(source)))
            }
            Some(doc) => {
                batch.check_conditions(&update.id, &conditions)?;
                let source_bytes = doc.source.ok_or_else(|| {
                    Error::new(
                        "document_source_missing_exception",
                        400,
                        format!("[{}]: document source missing", update.id),
                    )
                })?;
                let mut merged = parse_source(&source_bytes)?;
                if let Some(script) = &update.script {
                    let routing = doc.routing.clone().or(update.routing.clone());
                    let meta = self.metadata();
                    let current = Current {
                        index: &meta.name,
                        id: &update.id,
                        version: doc.version.version,
                        routing: routing.as_deref(),
                        source: &merged,
                    };
                    let now = tessera_common::time::now_millis();
                    return match update_script::run_update(
                        &self.resources.scripts.0,
                        script,
                        &current,
                        now,
                    )? {
                        Scripted::Index(source) => {
                            let prepared =
                                self.prepare_locked(batch, &update.id, &source, routing)?;
                            let source = prepared.source.clone();
                            let written = batch.index(prepared, &conditions)?;
                            Ok(result(written, Some(source)))
                        }
                        Scripted::Delete(_) => {
                            let written =
                                batch.delete(&update.id, routing.as_deref(), &conditions)?;
                            Ok(result(written, None))
                        }
                        Scripted::Noop(source) => {
                            let written = Written {
                                outcome: WriteOutcome::Noop,
                                version: doc.version,
                            };
                            let bytes = serde_json::to_vec(&source)
                                .map_err(|e| Error::internal("serialise a document", e))?;
                            Ok(result(written, Some(bytes.into())))
                        }
                    };
                }
                let Some(partial) = &update.doc else {
                    return Err(Error::action_request_validation(&[
                        "script or doc is missing".into(),
                    ]));
                };
                let changed = merge_partial(&mut merged, partial);
                if !changed && update.detect_noop {
                    let written = Written {
                        outcome: WriteOutcome::Noop,
                        version: doc.version,
                    };
                    return Ok(result(written, Some(source_bytes)));
                }
                let prepared = self.prepare_locked(
                    batch,
                    &update.id,
                    &merged,
                    update.routing.clone().or(doc.routing),
                )?;
                let source = prepared.source.clone();
                let written = batch.index(prepared, &conditions)?;
                Ok(result(written, Some(source)))
            }
        }
    }

    /// Get by id: `realtime` sees writes not yet refreshed; otherwise the last refresh.
    pub fn get(
        &self,
        id: &str,
        routing: Option<&str>,
        realtime: bool,
    ) -> Result<Option<StoredDoc>> {
        let shard = self.shard(self.shard_for(id, routing))?;
        if realtime {
            shard.get(id)
        } else {
            shard.get_refreshed(id)
        }
    }

    pub fn refresh(&self) -> Result<()> {
        for shard in self.shards() {
            shard.refresh()?;
        }
        Ok(())
    }

    pub fn flush(&self) -> Result<()> {
        for shard in self.shards() {
            shard.flush()?;
        }
        Ok(())
    }

    pub fn force_merge(&self, max_segments: usize) -> Result<()> {
        // a replica takes the merged segments from its primary's next checkpoint
        for shard in self.shards().iter().filter(|shard| !shard.is_replica()) {
            shard.force_merge(max_segments)?;
        }
        Ok(())
    }

    /// Live and deleted documents over all shards (as of the last refresh).
    pub fn doc_counts(&self) -> (u64, u64) {
        self.shards()
            .iter()
            .map(|s| s.doc_counts())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    pub fn store_size(&self) -> u64 {
        self.shards().iter().map(|s| s.store_size()).sum()
    }

    /// Closes the shards of this index because it is being deleted: requests still running on it
    /// answer `index_not_found_exception`, and nothing writes into its directory afterwards.
    pub fn close_for_delete(&self) {
        self.deleted
            .store(true, std::sync::atomic::Ordering::Release);
        let name = self.name();
        let slots = self.shards.read().unwrap().clone();
        for slot in slots {
            if let ShardSlot::Started(shard) = slot {
                shard.close_for_delete(Error::index_not_found(&name));
            }
        }
    }

    /// Closes every started shard cleanly; the first error, after trying them all.
    pub fn close(&self) -> Result<()> {
        let mut outcome = Ok(());
        for shard in self.shards() {
            if let Err(e) = shard.close() {
                outcome = outcome.and(Err(e));
            }
        }
        outcome
    }
}

/// Parses `_state.json` without serde_json's nesting limit of 128: a mapping grown by deeply
/// nested documents under a raised `index.mapping.depth.limit` nests deeper than that, and an
/// index whose metadata cannot be read would not open at all. Its depth is bounded by what the
/// request parsers accept (documents and mappings nest at most 128 levels there).
fn parse_metadata_json(raw: &[u8]) -> Result<Value> {
    use serde::Deserialize;
    let mut deserializer = serde_json::Deserializer::from_slice(raw);
    deserializer.disable_recursion_limit();
    Value::deserialize(&mut deserializer).map_err(|e| Error::internal("parse index metadata", e))
}

fn persist(path: &Path, metadata: &IndexMetadata) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(&metadata.to_json())
        .map_err(|e| Error::internal("serialise index metadata", e))?;
    write_atomic(&path.join(STATE_FILE), &bytes)
}

/// Parses a document body; the error matches OpenSearch's for malformed JSON.
pub fn parse_source(source: &[u8]) -> Result<Value> {
    parse_source_json(source).map(|json| json.to_value())
}

/// Parses a document body into a borrowed tree, with OpenSearch's errors for bodies that are
/// not a JSON object.
pub fn parse_source_json(source: &[u8]) -> Result<Json<'_>> {
    match Json::parse(source) {
        Ok(json @ Json::Object(_)) => Ok(json),
                Ok(_) => Err(Error::mapper_parsing("failed to parse").caused_by(Error::new(
            "not_x_content_exception",
            400,
            "Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes",
        ))),
        Err(e) => {
            let message = e.to_string();
            let reason = if message.starts_with(tessera_mapping::json::DUPLICATE_FIELD) {
                // Jackson's wording, as OpenSearch reports it
                let what = message.split(" at line ").next().unwrap_or(&message);
                format!(
                    "{what}\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: {}, column: {}]",
                    e.line(),
                    // Jackson stands after the name's closing quote
                    e.column() + 1
                )
            } else {
                format!("Unexpected character or end of input: {e}")
            };
            Err(Error::mapper_parsing("failed to parse").caused_by(Error::new(
                "json_parse_exception",
                400,
                reason,
            )))
        }
    }
}

/// Merges a partial document into `target` (objects recursively); returns whether it changed.
pub fn merge_partial(target: &mut Value, partial: &Value) -> bool {
    match (target, partial) {
        (Value::Object(target), Value::Object(partial)) => {
            let mut changed = false;
            for (key, value) in partial {
                match target.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        changed |= merge_partial(existing, value);
                    }
                    Some(existing) => {
                        if existing != value {
                            *existing = value.clone();
                            changed = true;
                        }
                    }
                    None => {
                        target.insert(key.clone(), value.clone());
                        changed = true;
                    }
                }
            }
            changed
        }
        (target, partial) => {
            let changed = target != partial;
            *target = partial.clone();
            changed
        }
    }
}

/// Renders stored metadata as the `GET /{index}` body entry.
pub fn render_index(meta: &IndexMetadata, flat: bool) -> Value {
    let settings = meta.rendered_settings();
    let settings_json = if flat {
        settings.to_flat_json()
    } else {
        settings.to_nested_json()
    };
    let mut body = Map::new();
    body.insert("aliases".into(), aliases_json(&meta.aliases));
    body.insert("mappings".into(), meta.mapping.to_json());
    body.insert("settings".into(), settings_json);
    Value::Object(body)
}

/// The queries of the document's `percolator` fields must be queries this index can run, as
/// OpenSearch checks them when they are indexed.
fn check_stored_queries(meta: &IndexMetadata, table: &FieldTable, json: &Json) -> Result<()> {
    if table.percolators.is_empty() {
        return Ok(());
    }
    let source = json.to_value();
    for path in &table.percolators {
        let mut value = Some(&source);
        for part in path.split('.') {
            value = value.and_then(|v| v.get(part));
        }
        let Some(query) = value.filter(|v| v.is_object()) else {
            continue;
        };
        tessera_query::compile::percolate::check_stored_query(&meta.mapping, &meta.name, query)
            .map_err(|e| Error::mapper_parsing("failed to parse").caused_by(e))?;
    }
    Ok(())
}

/// `index.mapping.nested_objects.limit`: the most nested child documents one document may
/// hold, refused with OpenSearch's message.
fn check_nested_objects(meta: &IndexMetadata, count: usize) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let limit: usize = meta
        .setting("index.mapping.nested_objects.limit")
        .parse()
        .unwrap_or(10_000);
    if count > limit {
        return Err(Error::mapper_parsing(format!(
            "The number of nested documents has exceeded the allowed limit of [{limit}]. This limit can be set by changing the [index.mapping.nested_objects.limit] index level setting."
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::DocVersion;
    use crate::translog::{OpKind, Translog};

    fn create(dir: &Path, settings: Value, mappings: Value) -> IndexService {
        IndexService::create(
            &dir.join("idx"),
            "idx",
            "uuid1",
            Settings::from_json(&settings)
                .unwrap()
                .with_prefix("index."),
            Mapping::parse(&mappings).unwrap(),
            &NodeResources {
                indexing_threads: 1,
                indexing_buffer_bytes: 64 << 20,
                merge_threads: 1,
                scripts: SharedScripts::default(),
            },
        )
        .unwrap()
    }

    #[test]
    fn replicas_are_segment_replicas() {
        let dir = tempfile::tempdir().unwrap();
        let index = create(dir.path(), json!({}), json!({}));
        assert_eq!(
            index.metadata().setting("index.replication.type"),
            "SEGMENT"
        );
        let document = Settings::from_json(&json!({"index.replication.type": "DOCUMENT"})).unwrap();
        let e = IndexService::new_metadata("d", "u", document, Mapping::parse(&json!({})).unwrap())
            .unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(
            e.reason().contains("[DOCUMENT] is not supported"),
            "{}",
            e.reason()
        );
    }

    #[test]
    fn replicated_writes_return_the_operations_the_translog_holds() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(
            dir.path(),
            json!({"number_of_shards": 1}),
            json!({"properties": {"a": {"type": "long"}}}),
        );
        let index = |id: &str, a: i64, routing: Option<&str>| DocWrite::Index {
            id: Some(id.into()),
            auto_generated_id: false,
            source: Bytes::from(format!(r#"{{"a":{a}}}"#)),
            routing: routing.map(String::from),
            conditions: Conditions::default(),
        };
        let noop = DocWrite::Update(Box::new(UpdateRequest {
            id: "1".into(),
            routing: None,
            doc: Some(json!({"a": 2})),
            upsert: None,
            doc_as_upsert: false,
            detect_noop: true,
            conditions: Conditions::default(),
            script: None,
            scripted_upsert: false,
        }));
        let items = vec![
            index("1", 1, None),
            index("2", 1, Some("r")),
            index("1", 2, None),
            noop,
            DocWrite::Delete {
                id: "2".into(),
                routing: Some("r".into()),
                conditions: Conditions::default(),
            },
        ];
        let (results, ops) = service.write_shard_replicated(0, items, false).unwrap();
        assert_eq!(results.len(), 5);
        assert!(results.iter().all(|r| r.is_ok()));
        let summary: Vec<_> = ops
            .iter()
            .map(|op| {
                (
                    op.kind,
                    op.seq_no,
                    op.version,
                    op.id.as_str(),
                    op.routing.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (OpKind::Index, 0, 1, "1", None),
                (OpKind::Index, 1, 1, "2", Some("r")),
                (OpKind::Index, 2, 2, "1", None),
                (OpKind::Delete, 3, 2, "2", Some("r")),
            ]
        );
        assert_eq!(&ops[2].source[..], br#"{"a":2}"#);
        assert!(ops.iter().all(|op| op.primary_term == 1));
        // they cross the wire intact
        let bytes = postcard::to_allocvec(&ops).unwrap();
        let back: Vec<Operation> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, ops);
        let json = serde_json::to_vec(&ops).unwrap();
        assert_eq!(
            serde_json::from_slice::<Vec<Operation>>(&json).unwrap(),
            ops
        );
        // and are exactly what the primary's translog replays
        let (results, none) = service
            .write_shard_replicated(0, vec![index("1", 2, None)], false)
            .map(|(results, ops)| (results, ops.len()))
            .unwrap();
        assert!(results[0].is_ok());
        assert_eq!(none, 1);
        let results = service
            .write_shard(0, vec![index("3", 3, None)], false)
            .unwrap();
        assert!(results[0].is_ok());
        drop(service);
        let mut replayed = Vec::new();
        Translog::open(
            &dir.path().join("idx").join("0").join("translog"),
            true,
            |op| {
                replayed.push(op);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(replayed[..4], ops[..]);
        assert_eq!(replayed.len(), 6);
    }

    #[test]
    fn writes_and_their_results_round_trip_through_postcard() {
        let writes = vec![
            DocWrite::Index {
                id: Some("1".into()),
                auto_generated_id: false,
                source: Bytes::from_static(br#"{"a":1}"#),
                routing: Some("r".into()),
                conditions: Conditions {
                    create_only: true,
                    if_seq_no: Some(3),
                    if_primary_term: Some(1),
                },
            },
            DocWrite::Delete {
                id: "2".into(),
                routing: None,
                conditions: Conditions::default(),
            },
            DocWrite::Update(Box::new(UpdateRequest {
                id: "3".into(),
                routing: None,
                doc: Some(json!({"b": {"c": [1, "x", null]}, "a": 2})),
                upsert: None,
                doc_as_upsert: true,
                detect_noop: false,
                conditions: Conditions::default(),
                script: None,
                scripted_upsert: false,
            })),
            DocWrite::Update(Box::new(UpdateRequest {
                id: "4".into(),
                upsert: Some(json!({"n": 0})),
                script: Some(UpdateScript {
                    source: "ctx._source.n += params.by".into(),
                    params: Some(json!({"by": 2})),
                }),
                scripted_upsert: true,
                ..Default::default()
            })),
        ];
        let bytes = postcard::to_allocvec(&writes).unwrap();
        let back: Vec<DocWrite> = postcard::from_bytes(&bytes).unwrap();
        // Debug shows every field, the JSON documents' member order included
        assert_eq!(format!("{back:?}"), format!("{writes:?}"));
        let result = DocWriteResult {
            id: "3".into(),
            shard: 1,
            written: Written {
                outcome: WriteOutcome::Updated,
                version: DocVersion {
                    version: 2,
                    seq_no: 7,
                    primary_term: 1,
                },
            },
            source: Some(Bytes::from_static(br#"{"a":2}"#)),
            forced_refresh: true,
            missing: true,
        };
        let bytes = postcard::to_allocvec(&result).unwrap();
        let back: DocWriteResult = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{result:?}"));
    }

    fn scripted(id: &str, source: &str, upsert: Option<Value>) -> DocWrite {
        DocWrite::Update(Box::new(UpdateRequest {
            id: id.into(),
            upsert,
            script: Some(UpdateScript {
                source: source.into(),
                params: Some(json!({"by": 1})),
            }),
            detect_noop: true,
            ..Default::default()
        }))
    }

    #[test]
    fn scripted_updates_compile_once_and_write_through_the_translog() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(dir.path(), json!({"number_of_shards": 1}), json!({}));
        let bump = "ctx._source.n += params.by";
        let mut items = vec![scripted("1", bump, Some(json!({"n": 0})))];
        items.extend((0..999).map(|_| scripted("1", bump, None)));
        let (results, ops) = service.write_shard_replicated(0, items, false).unwrap();
        assert!(results.iter().all(|r| r.is_ok()));
        assert_eq!(service.resources.scripts.0.compilations(), 1);
        // every update is an operation of the translog, with the document it wrote
        assert_eq!(ops.len(), 1000);
        assert_eq!(&ops[999].source[..], br#"{"n":999}"#);
        let last = results.last().unwrap().as_ref().unwrap();
        assert_eq!(last.written.version.version, 1000);
        // noop and delete
        let results = service
            .write_shard(
                0,
                vec![
                    scripted("1", "ctx.op = 'noop'", None),
                    scripted("1", "ctx.op = 'delete'", None),
                    scripted("1", bump, None),
                ],
                false,
            )
            .unwrap();
        let outcomes: Vec<_> = results
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| r.written.outcome)
                    .map_err(|e| e.kind().to_string())
            })
            .collect();
        assert_eq!(
            outcomes,
            vec![
                Ok(WriteOutcome::Noop),
                Ok(WriteOutcome::Deleted),
                Err("document_missing_exception".to_string())
            ]
        );
        // a scripted upsert the script turns into a noop creates nothing
        let mut noop_upsert = scripted("2", "ctx.op = 'none'", Some(json!({"n": 0})));
        if let DocWrite::Update(update) = &mut noop_upsert {
            update.scripted_upsert = true;
        }
        let result = service.write_shard(0, vec![noop_upsert], false).unwrap();
        let result = result[0].as_ref().unwrap();
        assert!(result.missing);
        assert_eq!(result.written.outcome, WriteOutcome::Noop);
        assert!(service.get("2", None, true).unwrap().is_none());
    }

    fn index(service: &IndexService, id: &str, source: Value) -> Result<DocWriteResult> {
        let shard = service.shard_for(id, None);
        let bytes = Bytes::from(serde_json::to_vec(&source).unwrap());
        service
            .write_shard(
                shard,
                vec![DocWrite::Index {
                    id: Some(id.into()),
                    auto_generated_id: false,
                    source: bytes,
                    routing: None,
                    conditions: Conditions::default(),
                }],
                false,
            )
            .unwrap()
            .pop()
            .unwrap()
    }

    #[test]
    fn shards_found_at_start_serve_only_once_opened() {
        let dir = tempfile::tempdir().unwrap();
        let resources = NodeResources {
            indexing_threads: 1,
            indexing_buffer_bytes: 64 << 20,
            merge_threads: 1,
            scripts: SharedScripts::default(),
        };
        {
            let service = create(dir.path(), json!({"number_of_shards": 2}), json!({}));
            index(&service, "a", json!({"n": 1})).unwrap();
            service.close().unwrap();
        }
        let service = IndexService::open_deferred(&dir.path().join("idx"), &resources).unwrap();
        assert!(service.is_initializing());
        assert!(service.shards().is_empty());
        let e = service.shard(0).err().unwrap();
        assert_eq!(
            (e.kind(), e.status()),
            ("unavailable_shards_exception", 503)
        );
        let e = index(&service, "b", json!({"n": 2})).unwrap_err();
        assert_eq!(e.status(), 503);
        // a stop request ends the opening before any shard
        service.start_shards(|| true);
        assert!(service.is_initializing());
        service.start_shards(|| false);
        assert!(!service.is_initializing());
        assert_eq!(service.shards().len(), 2);
        index(&service, "b", json!({"n": 2})).unwrap();
        assert!(service.get("a", None, true).unwrap().is_some());
        // an index deleted while its shards open gets none of them started
        service.close().unwrap();
        drop(service);
        let service = IndexService::open_deferred(&dir.path().join("idx"), &resources).unwrap();
        service.close_for_delete();
        service.start_shards(|| false);
        assert!(service.shards().is_empty());
    }

    #[test]
    fn generated_ids_are_found_before_a_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(dir.path(), json!({"number_of_shards": 1}), json!({}));
        let written = service
            .write_shard(
                0,
                vec![DocWrite::Index {
                    id: None,
                    auto_generated_id: true,
                    source: Bytes::from_static(b"{\"a\": 1}"),
                    routing: None,
                    conditions: Conditions::default(),
                }],
                false,
            )
            .unwrap()
            .pop()
            .unwrap()
            .unwrap();
        // not tracked in the live version map, yet a realtime get and a write with the same
        // id both see it (they refresh first)
        let got = service.get(&written.id, None, true).unwrap().unwrap();
        assert_eq!(got.version.version, 1);
        let again = index(&service, &written.id, json!({"a": 2})).unwrap();
        assert_eq!(again.written.version.version, 2);
        assert_eq!(again.written.outcome, WriteOutcome::Updated);
        service.refresh().unwrap();
        assert_eq!(service.doc_counts().0, 1);
    }

    #[test]
    fn dynamic_mapping_is_added_and_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(dir.path(), json!({"number_of_shards": 2}), json!({}));
        index(&service, "1", json!({"title": "hello", "n": 5})).unwrap();
        index(
            &service,
            "2",
            json!({"title": "again", "extra": {"flag": true}}),
        )
        .unwrap();
        let meta = service.metadata();
        assert!(meta.mapping.field("title.keyword").is_some());
        assert!(meta.mapping.field("extra.flag").is_some());
        assert!(meta.mapping_version >= 3);
        service.refresh().unwrap();
        assert_eq!(service.doc_counts().0, 2);
        service.close().unwrap();
        drop(service);
        let reopened =
            IndexService::open(&dir.path().join("idx"), &NodeResources::default()).unwrap();
        assert!(reopened.metadata().mapping.field("extra.flag").is_some());
        assert_eq!(reopened.doc_counts().0, 2);
        assert_eq!(
            reopened
                .get("1", None, true)
                .unwrap()
                .unwrap()
                .version
                .version,
            1
        );
    }

    #[test]
    fn bad_documents_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(
            dir.path(),
            json!({}),
            json!({"properties": {"n": {"type": "long"}}}),
        );
        let items = vec![
            DocWrite::Index {
                id: Some("a".into()),
                auto_generated_id: false,
                source: Bytes::from_static(br#"{"n": 1}"#),
                routing: None,
                conditions: Conditions::default(),
            },
            DocWrite::Index {
                id: Some("b".into()),
                auto_generated_id: false,
                source: Bytes::from_static(br#"{"n": "x"}"#),
                routing: None,
                conditions: Conditions::default(),
            },
            DocWrite::Index {
                id: Some("c".into()),
                auto_generated_id: false,
                source: Bytes::from_static(br#"{"n": "#),
                routing: None,
                conditions: Conditions::default(),
            },
        ];
        let results = service.write_shard(0, items, true).unwrap();
        assert!(results[0].is_ok());
        assert_eq!(
            results[1].as_ref().unwrap_err().kind(),
            "mapper_parsing_exception"
        );
        assert_eq!(
            results[2].as_ref().unwrap_err().kind(),
            "mapper_parsing_exception"
        );
        assert!(results[0].as_ref().unwrap().forced_refresh);
        assert_eq!(service.doc_counts().0, 1);
    }

    #[test]
    fn updates_merge_upsert_and_detect_noops() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(dir.path(), json!({}), json!({}));
        index(&service, "1", json!({"a": 1, "o": {"x": 1}})).unwrap();
        let update = |doc: Value, upsert: bool| {
            let shard = service.shard_for("1", None);
            service
                .write_shard(
                    shard,
                    vec![DocWrite::Update(Box::new(UpdateRequest {
                        id: "1".into(),
                        doc: Some(doc),
                        doc_as_upsert: upsert,
                        detect_noop: true,
                        ..Default::default()
                    }))],
                    false,
                )
                .unwrap()
                .pop()
                .unwrap()
        };
        let r = update(json!({"o": {"y": 2}}), false).unwrap();
        assert_eq!(r.written.outcome, WriteOutcome::Updated);
        let source: Value = serde_json::from_slice(&r.source.unwrap()).unwrap();
        assert_eq!(source, json!({"a": 1, "o": {"x": 1, "y": 2}}));
        let r = update(json!({"a": 1}), false).unwrap();
        assert_eq!(r.written.outcome, WriteOutcome::Noop);
        assert_eq!(r.written.version.version, 2);
        // missing document
        let shard = service.shard_for("zz", None);
        let missing = service
            .write_shard(
                shard,
                vec![DocWrite::Update(Box::new(UpdateRequest {
                    id: "zz".into(),
                    doc: Some(json!({"a": 1})),
                    ..Default::default()
                }))],
                false,
            )
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(missing.unwrap_err().kind(), "document_missing_exception");
        let upserted = service
            .write_shard(
                shard,
                vec![DocWrite::Update(Box::new(UpdateRequest {
                    id: "zz".into(),
                    doc: Some(json!({"a": 1})),
                    doc_as_upsert: true,
                    ..Default::default()
                }))],
                false,
            )
            .unwrap()
            .pop()
            .unwrap()
            .unwrap();
        assert_eq!(upserted.written.outcome, WriteOutcome::Created);
    }

    #[test]
    fn routing_matches_opensearch_for_known_ids() {
        let dir = tempfile::tempdir().unwrap();
        let service = create(dir.path(), json!({"number_of_shards": 5}), json!({}));
        let meta = service.metadata();
        assert_eq!(meta.routing_shards, 640);
        let shards: std::collections::HashSet<u32> = (0..100)
            .map(|i| meta.shard_for(&i.to_string(), None))
            .collect();
        assert_eq!(shards.len(), 5);
        assert_eq!(
            meta.shard_for("a", Some("r")),
            meta.shard_for("b", Some("r"))
        );
    }

    #[test]
    fn merge_partial_reports_changes() {
        let mut doc = json!({"a": 1, "b": {"c": 2}});
        assert!(!merge_partial(&mut doc, &json!({"a": 1, "b": {"c": 2}})));
        assert!(merge_partial(&mut doc, &json!({"b": {"d": 3}})));
        assert_eq!(doc, json!({"a": 1, "b": {"c": 2, "d": 3}}));
    }
}
