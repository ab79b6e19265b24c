//! Segment replication at the shard level (OpenSearch's `index.replication.type: SEGMENT`).
//!
//! The primary indexes; a replica never does. After each refresh (a tantivy commit) the
//! primary describes its commit as a [`ReplicationCheckpoint`]: the commit's `meta.json` and
//! every segment file it needs, each with its length and checksum. A replica copies the files
//! it lacks, in chunks, verifies them, installs `meta.json` and reopens its reader, so both
//! copies hold byte-identical segments (same hits, same scores).
//!
//! Why it is shaped this way:
//! - Segment files are immutable and uniquely named (a merge writes a new segment, deletes a
//!   new `.del` file named after their opstamp), so a replica only fetches what is new. The one
//!   exception is the `.fieldnorm` file that [`crate::schema_change::grow_schema`] rewrites in
//!   place; it changes length, so it is fetched again, and the rewritten file (a superset of
//!   the old one) is still readable under the previous commit.
//! - The primary's writer deletes the files of older commits once merges replace them, while
//!   replicas may still be copying them. A checkpoint therefore *pins* its commit: its files
//!   are hard-linked into `<shard>/replication/<generation>/` (cheap: same file system) and
//!   chunks are read from there. The last [`PINNED_GENERATIONS`] are kept; closing the shard
//!   releases them all, and a restarted primary starts without any.
//! - A commit's payload carries the mapping it was written with, so a replica builds exactly
//!   the primary's [`FieldTable`] from the copied `meta.json` alone, and a promoted copy opens
//!   with [`Shard::open`] like any primary (a marker beside its index tells `open` that the
//!   commit names the old primary's translog; it commits once on its own and drops it).
//! - A checkpoint's generation is a counter in the commit payload, not tantivy's opstamp: an
//!   empty commit right after the writer reopened repeats the opstamp. tantivy's background
//!   merges rewrite `meta.json` under the same commit (opstamp and payload): replicas get the
//!   merged segments with the next commit, which is why a force merge commits on its own. What
//!   a generation means is what its pin holds.
//! - A replica keeps every search path: it is a [`Shard`] without writer whose reader moves
//!   with each applied checkpoint. Writes and merges answer
//!   `illegal_index_shard_state_exception`; `refresh` and `flush` are no-ops (they reach every
//!   copy of an index); `table_for` answers the copied commit's table without growing it.
//! - Crash safety on the replica: files are written under temporary names, verified, fsynced
//!   and renamed into place; `meta.json` (the commit point) is replaced last, atomically. A
//!   crash at any point leaves the previous `meta.json` and all the files it names, so
//!   [`Shard::open_replica`] opens the previous checkpoint; leftovers are deleted then.
//!
//! - A replica has a translog all the same (`<shard>/translog`, the primary's format): the
//!   primary forwards every operation it logs ([`crate::IndexService::write_shard_replicated`])
//!   and the replica appends it durably without indexing it ([`Shard::replicate_ops`]), so a
//!   write acknowledged by every in-sync copy survives the primary's death: promotion replays
//!   the operations above the copied commit, once each, in seq_no order. Each applied
//!   checkpoint trims the log after its `meta.json` is durable, and only the oldest
//!   generations whose operations the commit all holds ([`translog::Translog::roll_and_trim_to`]),
//!   since forwarded operations and checkpoints may arrive out of order.
//! - Checkpoints are ordered by `(primary_term, generation)`: a new primary continues the
//!   generation counter of its own copy, which may be behind one the replica took from the
//!   old primary.
//!
//! Checksums are tantivy's own: every file tantivy writes ends with a footer holding the crc32
//! of the file's body, so the primary reads it from the footer without reading the file. A
//! replica computes the crc32 of each copied body and compares it with both the checkpoint's
//! checksum and the copied footer, and checks the length.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use tantivy::directory::footer::Footer;
use tantivy::directory::{Directory as _, FileSlice, RamDirectory, META_LOCK};
use tantivy::index::{IndexMeta, SegmentComponent};
use tantivy::schema::Schema;
use tantivy::{Index, IndexReader, ReloadPolicy};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, Mapping};

use crate::shard::{
    corruption, register_tokenizers, tantivy_err, verify_checksums, Durability, Shard, ShardConfig,
    ShardSnapshot, WriteState,
};
use crate::translog::{self, Operation, Translog};

/// Answers `len` bytes at `offset` of a checkpoint's file (see [`Shard::apply_checkpoint`]).
type Fetch<'a> = dyn FnMut(&FileMeta, u64, usize) -> Result<Vec<u8>> + 'a;

/// How many bytes a replica asks for at a time.
pub const CHUNK_BYTES: usize = 1 << 20;

/// How many of the newest checkpoints a primary keeps pinned for replicas still copying them.
pub const PINNED_GENERATIONS: usize = 3;

pub(crate) const META_FILE: &str = "meta.json";
const MANAGED_FILE: &str = ".managed.json";
/// Where a primary keeps its pins, under the shard's path.
pub(crate) const PINS_DIR: &str = "replication";
/// Beside a replica's `index` directory: marks the directory as a copy (its commit names the
/// old primary's translog) and keeps the primary term of the checkpoint it holds.
const REPLICA_MARKER: &str = "replica.json";
/// Suffix of a file being copied, before it is verified and renamed into place.
const PARTIAL_SUFFIX: &str = ".replicating";

/// One file of a commit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileMeta {
    pub name: String,
    pub length: u64,
    /// The crc32 of the file's body, as tantivy's footer records it.
    pub checksum: u32,
}

/// A primary's commit, as replicas copy it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationCheckpoint {
    pub primary_term: u64,
    /// Orders the checkpoints of one shard: a counter in the commit's payload, bumped by each
    /// commit of the primary (and continued by a promoted replica).
    pub generation: u64,
    /// The highest seq_no the commit holds (None: empty).
    pub max_seq_no: Option<u64>,
    /// Every file the commit needs except meta.json (and .managed.json / lock files), sorted by
    /// name.
    pub files: Vec<FileMeta>,
    /// The commit's meta.json, as bytes.
    pub meta_json: Vec<u8>,
}

/// A shard's replication state: its pins as a primary, its checkpoint as a replica.
pub(crate) struct Replication {
    replica: bool,
    /// Replica: the checkpoint held (None before the first).
    held: RwLock<Option<ReplicationCheckpoint>>,
    /// Replica: serializes applies (held for a whole copy, unlike `held`).
    apply: Mutex<()>,
    /// Primary: the pinned checkpoints, by generation.
    pins: Mutex<BTreeMap<u64, ReplicationCheckpoint>>,
    /// Replica: which operations it holds (see [`Shard::local_checkpoint`]); also serializes
    /// forwarded appends with the primary term check.
    held_ops: Mutex<HeldOps>,
}

/// The sequence numbers a replica holds: everything up to `checkpoint` (in its commit or its
/// translog), and the forwarded operations beyond a gap.
#[derive(Debug, Default)]
struct HeldOps {
    checkpoint: Option<u64>,
    beyond: BTreeSet<u64>,
}

impl HeldOps {
    fn holds(&self, seq_no: u64) -> bool {
        self.checkpoint.is_some_and(|c| seq_no <= c)
    }

    /// An operation is held (durably in the translog).
    fn add(&mut self, seq_no: u64) {
        if !self.holds(seq_no) {
            self.beyond.insert(seq_no);
            self.advance();
        }
    }

    /// A commit holding every operation up to `max_seq_no` is installed.
    fn commit(&mut self, max_seq_no: Option<u64>) {
        self.checkpoint = self.checkpoint.max(max_seq_no);
        if let Some(c) = self.checkpoint {
            self.beyond = self.beyond.split_off(&(c + 1));
        }
        self.advance();
    }

    /// A commit that may hold less than the previous one (a new primary's) is installed:
    /// what is held is `max_seq_no` and what the translog holds, `logged`.
    fn reset(&mut self, max_seq_no: Option<u64>, logged: impl IntoIterator<Item = u64>) {
        *self = HeldOps::default();
        self.commit(max_seq_no);
        self.beyond = logged.into_iter().filter(|s| !self.holds(*s)).collect();
        self.advance();
    }

    fn advance(&mut self) {
        loop {
            let next = self.checkpoint.map_or(0, |c| c + 1);
            if !self.beyond.remove(&next) {
                break;
            }
            self.checkpoint = Some(next);
        }
    }
}

impl Replication {
    pub(crate) fn primary() -> Replication {
        Replication {
            replica: false,
            held: RwLock::new(None),
            apply: Mutex::new(()),
            pins: Mutex::new(BTreeMap::new()),
            held_ops: Mutex::new(HeldOps::default()),
        }
    }

    fn replica(held: Option<ReplicationCheckpoint>, held_ops: HeldOps) -> Replication {
        Replication {
            replica: true,
            held: RwLock::new(held),
            held_ops: Mutex::new(held_ops),
            ..Replication::primary()
        }
    }
}

/// What a write (or merge, or checkpoint request) addressed to a replica gets.
pub(crate) fn replica_does_not_index(index: &str, shard_id: u32) -> Error {
    Error::new(
        "illegal_index_shard_state_exception",
        500,
        format!("[{index}][{shard_id}] is a replica: it does not index"),
    )
}

fn not_a_replica(index: &str, shard_id: u32) -> Error {
    Error::new(
        "illegal_index_shard_state_exception",
        500,
        format!("[{index}][{shard_id}] is a primary: it does not apply replication checkpoints"),
    )
}

fn primary_does_not_replicate(index: &str, shard_id: u32) -> Error {
    Error::new(
        "illegal_index_shard_state_exception",
        500,
        format!("[{index}][{shard_id}] is a primary: it indexes, it takes no forwarded operations"),
    )
}

/// What operations forwarded by a primary older than the one this copy knows get.
fn stale_term(index: &str, shard_id: u32, term: u64, current: u64) -> Error {
    Error::new(
        "illegal_state_exception",
        500,
        format!(
            "[{index}][{shard_id}] operation primary term [{term}] is too old (current [{current}])"
        ),
    )
}

fn damaged(reason: impl Into<String>) -> Error {
    Error::new("corrupt_index_exception", 500, reason)
}

fn io(context: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::internal(context, e)
}

/// Removes the pins a primary left behind (a previous process, or a shard closed earlier).
pub(crate) fn release_all_pins(shard_path: &Path) -> Result<()> {
    match fs::remove_dir_all(shard_path.join(PINS_DIR)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::internal("release replication pins", e))
        }
        _ => Ok(()),
    }
}

/// True for the directory of a replica: its commit was copied from a primary.
pub(crate) fn is_replica_copy(shard_path: &Path) -> bool {
    shard_path.join(REPLICA_MARKER).exists()
}

/// Called once a promoted copy has committed on its own: it is a primary's directory now.
pub(crate) fn forget_replica_copy(shard_path: &Path) -> Result<()> {
    match fs::remove_file(shard_path.join(REPLICA_MARKER)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::internal("remove the replica marker", e))
        }
        _ => translog::sync_dir(shard_path),
    }
}

/// Marks `shard_path` as a replica's copy holding a checkpoint of `primary_term` (see
/// [`REPLICA_MARKER`]), atomically.
pub(crate) fn write_replica_marker(shard_path: &Path, primary_term: u64) -> Result<()> {
    let marker = serde_json::json!({ "primary_term": primary_term }).to_string();
    translog::write_atomic(&shard_path.join(REPLICA_MARKER), marker.as_bytes())
}

fn read_replica_term(shard_path: &Path) -> Option<u64> {
    let raw = fs::read(shard_path.join(REPLICA_MARKER)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&raw).ok()?;
    value.get("primary_term")?.as_u64()
}

/// Names a checkpoint may list: plain file names in the shard's index directory.
fn check_file_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.contains('/')
        || name.contains('\\')
        || name.contains("..")
        || name.starts_with('.')
        || name == META_FILE
        || name.ends_with(PARTIAL_SUFFIX);
    if bad {
        return Err(Error::new(
            "illegal_argument_exception",
            400,
            format!("[{name}] is not the name of a segment file"),
        ));
    }
    Ok(())
}

/// Parses a commit's meta.json (in memory: nothing is read from or written to disk).
pub(crate) fn parse_meta(meta_json: &[u8]) -> Result<IndexMeta> {
    let directory = RamDirectory::create();
    directory
        .atomic_write(Path::new(META_FILE), meta_json)
        .map_err(|e| Error::internal("stage meta.json", e))?;
    let index = Index::open(directory).map_err(corruption("parse a commit's meta.json"))?;
    index
        .load_metas()
        .map_err(corruption("parse a commit's meta.json"))
}

/// The commit payload as JSON (an empty object when absent or not JSON).
fn payload(meta: &IndexMeta) -> serde_json::Value {
    meta.payload
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_else(|| serde_json::json!({}))
}

/// The replication generation of a commit: the counter in its payload, or, for commits
/// written before it existed, tantivy's opstamp.
fn generation_of(meta: &IndexMeta) -> u64 {
    payload(meta)
        .get("generation")
        .and_then(|g| g.as_u64())
        .unwrap_or(meta.opstamp)
}

/// The replication generation of an index's last commit.
pub(crate) fn commit_generation(index: &Index) -> Result<u64> {
    let meta = index
        .load_metas()
        .map_err(tantivy_err("load shard metas"))?;
    Ok(generation_of(&meta))
}

pub(crate) fn payload_max_seq_no(meta: &IndexMeta) -> Option<u64> {
    payload(meta).get("max_seq_no").and_then(|n| n.as_u64())
}

/// The field table of a commit, from the mapping in its payload and its schema. The schema
/// must already hold every field of the mapping: a replica never grows it.
fn table_of_commit(meta: &IndexMeta, schema: &Schema) -> Result<FieldTable> {
    let payload = payload(meta);
    let Some(mapping) = payload.get("mapping") else {
        return Err(Error::new(
            "illegal_state_exception",
            500,
            format!(
                "commit [{}] carries no mapping: it predates segment replication",
                generation_of(meta)
            ),
        ));
    };
    let mapping = Mapping::parse(mapping)?;
    let (table, grew) = FieldTable::build(&mapping, Some(schema))?;
    if grew {
        return Err(damaged(format!(
            "the mapping of commit [{}] has fields its schema lacks",
            generation_of(meta)
        )));
    }
    Ok(table)
}

/// Every file a commit may name (some, like the `.del` of a segment without deletes, may not
/// exist), and those it needs.
pub(crate) fn commit_files(meta: &IndexMeta) -> (BTreeSet<String>, BTreeSet<String>) {
    let candidates: BTreeSet<String> = meta
        .list_segment_files()
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let optional: BTreeSet<String> = meta
        .segments
        .iter()
        .filter(|segment| !segment.has_deletes())
        .map(|segment| segment.relative_path(SegmentComponent::Delete))
        .chain(
            meta.segments
                .iter()
                .map(|segment| segment.relative_path(SegmentComponent::TempStore)),
        )
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let required = candidates.difference(&optional).cloned().collect();
    (candidates, required)
}

/// The footer tantivy wrote at the end of a file, and the file's body.
fn read_footer(path: &Path) -> Result<(Footer, FileSlice)> {
    let file = FileSlice::open(path).map_err(io(format!("open {}", path.display())))?;
    Footer::extract_footer(file).map_err(|e| damaged(format!("{}: {e}", path.display())))
}

fn body_checksum(body: &FileSlice) -> Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    for chunk in body.stream_file_chunks() {
        hasher.update(chunk.map_err(io("read a copied file"))?.as_slice());
    }
    Ok(hasher.finalize())
}

/// Lengths and checksums (from the footers) of files in `dir`, sorted by name.
fn describe_files(dir: &Path, names: &BTreeSet<String>) -> Result<Vec<FileMeta>> {
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let length = fs::metadata(&path)
                .map_err(io(format!("stat {}", path.display())))?
                .len();
            let (footer, _) = read_footer(&path)?;
            Ok(FileMeta {
                name: name.clone(),
                length,
                checksum: footer.crc,
            })
        })
        .collect()
}

/// Checks a copied file against what the checkpoint says of it.
fn verify_copy(path: &Path, expected: &FileMeta) -> Result<()> {
    let length = fs::metadata(path)
        .map_err(io(format!("stat {}", path.display())))?
        .len();
    let mismatch = |what: String| {
        damaged(format!(
            "checksum failed (hardware problem?) : file [{}] copied from the primary: {what}",
            expected.name
        ))
    };
    if length != expected.length {
        return Err(mismatch(format!(
            "expected length [{}], got [{length}]",
            expected.length
        )));
    }
    let (footer, body) = read_footer(path).map_err(|e| mismatch(e.reason().to_string()))?;
    let actual = body_checksum(&body)?;
    if footer.crc != expected.checksum || actual != expected.checksum {
        return Err(mismatch(format!(
            "expected checksum [{}], footer [{}], body [{actual}]",
            expected.checksum, footer.crc
        )));
    }
    Ok(())
}

/// Copies one file in chunks to a temporary name, verifies it and renames it into place; the
/// temporary file is removed on any failure.
pub(crate) fn copy_file(dir: &Path, file: &FileMeta, fetch: &mut Fetch<'_>) -> Result<()> {
    let partial = dir.join(format!("{}{PARTIAL_SUFFIX}", file.name));
    let copied = write_chunks(&partial, file, fetch)
        .and_then(|_| verify_copy(&partial, file))
        .and_then(|_| {
            fs::rename(&partial, dir.join(&file.name)).map_err(io(format!("install {}", file.name)))
        });
    if copied.is_err() {
        let _ = fs::remove_file(&partial);
    }
    copied
}

fn write_chunks(path: &Path, file: &FileMeta, fetch: &mut Fetch<'_>) -> Result<()> {
    let mut out = File::create(path).map_err(io(format!("create {}", path.display())))?;
    let mut offset = 0u64;
    while offset < file.length {
        let want = (file.length - offset).min(CHUNK_BYTES as u64) as usize;
        let chunk = fetch(file, offset, want)?;
        if chunk.len() != want {
            return Err(damaged(format!(
                "file [{}] copied from the primary: asked [{want}] bytes at [{offset}], got [{}]",
                file.name,
                chunk.len()
            )));
        }
        out.write_all(&chunk)
            .map_err(io(format!("write {}", path.display())))?;
        offset += want as u64;
    }
    out.sync_all()
        .map_err(io(format!("fsync {}", path.display())))
}

/// Deletes what a replica's directory holds beyond `keep` (files of older checkpoints,
/// leftovers of an interrupted copy), then records `keep` as tantivy's managed files, so a
/// writer opened here after a promotion collects them as its own.
fn remove_unreferenced(dir: &Path, keep: &[FileMeta]) -> Result<()> {
    let keep: BTreeSet<&str> = keep.iter().map(|f| f.name.as_str()).collect();
    let entries = fs::read_dir(dir).map_err(io(format!("list {}", dir.display())))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        // lock files and tantivy's own bookkeeping start with a dot
        if !is_file || name == META_FILE || name.starts_with('.') || keep.contains(name.as_str()) {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::internal(format!("delete {name}"), e))
            }
            _ => {}
        }
    }
    write_managed(dir, keep.into_iter())?;
    translog::sync_dir(dir)
}

/// Writes tantivy's `.managed.json`: the files a writer may garbage-collect once unused.
pub(crate) fn write_managed<'a>(dir: &Path, files: impl Iterator<Item = &'a str>) -> Result<()> {
    let managed: BTreeSet<&str> = files.chain([META_FILE]).collect();
    let mut bytes =
        serde_json::to_vec(&managed).map_err(|e| Error::internal("serialise .managed.json", e))?;
    bytes.push(b'\n');
    translog::write_atomic(&dir.join(MANAGED_FILE), &bytes)
}

fn open_reader(index: &Index) -> Result<IndexReader> {
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(corruption("open replica reader"))
}

/// The checkpoint a replica holds on disk: its meta.json and the files it names.
fn checkpoint_on_disk(
    dir: &Path,
    meta: &IndexMeta,
    primary_term: u64,
) -> Result<ReplicationCheckpoint> {
    let meta_json = fs::read(dir.join(META_FILE)).map_err(io("read meta.json"))?;
    let (candidates, _) = commit_files(meta);
    let present: BTreeSet<String> = candidates
        .into_iter()
        .filter(|name| dir.join(name).exists())
        .collect();
    Ok(ReplicationCheckpoint {
        primary_term,
        generation: generation_of(meta),
        max_seq_no: payload_max_seq_no(meta),
        files: describe_files(dir, &present)?,
        meta_json,
    })
}

/// Checks a checkpoint before anything of it is written: its meta.json parses, names its
/// generation and needs no file the checkpoint does not list, and its mapping fits its schema.
pub(crate) fn validate(checkpoint: &ReplicationCheckpoint) -> Result<()> {
    let meta = parse_meta(&checkpoint.meta_json)?;
    if generation_of(&meta) != checkpoint.generation {
        return Err(damaged(format!(
            "checkpoint [{}] carries the meta.json of commit [{}]",
            checkpoint.generation,
            generation_of(&meta)
        )));
    }
    let mut listed = BTreeSet::new();
    for file in &checkpoint.files {
        check_file_name(&file.name)?;
        if !listed.insert(file.name.as_str()) {
            return Err(damaged(format!(
                "checkpoint [{}] lists [{}] twice",
                checkpoint.generation, file.name
            )));
        }
    }
    let (_, required) = commit_files(&meta);
    if let Some(missing) = required.iter().find(|name| !listed.contains(name.as_str())) {
        return Err(damaged(format!(
            "checkpoint [{}] does not list [{missing}], which its commit needs",
            checkpoint.generation
        )));
    }
    table_of_commit(&meta, &meta.schema)?;
    Ok(())
}

/// The files of `checkpoint` that `held` does not have with the same name, length and checksum.
fn missing_in(
    held: Option<&ReplicationCheckpoint>,
    checkpoint: &ReplicationCheckpoint,
) -> Vec<FileMeta> {
    let have: BTreeSet<&FileMeta> = held.iter().flat_map(|h| h.files.iter()).collect();
    checkpoint
        .files
        .iter()
        .filter(|file| !have.contains(file))
        .cloned()
        .collect()
}

/// Links (or, across file systems, copies) `names` from `dir` into a new pin directory for
/// `generation`, with the commit's meta.json; returns the files linked.
fn pin_commit(
    pins_root: &Path,
    generation: u64,
    dir: &Path,
    meta: &IndexMeta,
    meta_json: &[u8],
) -> Result<(PathBuf, BTreeSet<String>)> {
    let partial = pins_root.join(format!("{generation}.partial"));
    let pin = pins_root.join(generation.to_string());
    let _ = fs::remove_dir_all(&partial);
    let _ = fs::remove_dir_all(&pin);
    fs::create_dir_all(&partial).map_err(io(format!("create {}", partial.display())))?;
    let (candidates, required) = commit_files(meta);
    let mut linked = BTreeSet::new();
    for name in candidates {
        let source = dir.join(&name);
        let target = partial.join(&name);
        match fs::hard_link(&source, &target) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if required.contains(&name) {
                    return Err(damaged(format!(
                        "file [{name}] of commit [{generation}] is missing"
                    )));
                }
                continue;
            }
            Err(_) => {
                fs::copy(&source, &target).map_err(io(format!("pin {name}")))?;
            }
        }
        linked.insert(name);
    }
    fs::write(partial.join(META_FILE), meta_json).map_err(io("pin meta.json"))?;
    fs::rename(&partial, &pin).map_err(io(format!("install {}", pin.display())))?;
    Ok((pin, linked))
}

impl Shard {
    /// True for a copy that applies its primary's checkpoints instead of indexing.
    pub fn is_replica(&self) -> bool {
        self.replication.replica
    }

    fn pins_root(&self) -> PathBuf {
        self.path.join(PINS_DIR)
    }

    /// Releases every pin (the shard is closing or being deleted).
    pub(crate) fn release_pins(&self) {
        if self.is_replica() {
            return;
        }
        let mut pins = self.replication.pins.lock().unwrap();
        pins.clear();
        let _ = release_all_pins(&self.path);
    }

    /// The checkpoint of the shard's latest commit, pinned so that replicas can copy its files
    /// (with [`Shard::read_checkpoint_file`]) even after merges made the writer delete them.
    /// Taking it again for the same commit reuses the pin; pins beyond the newest
    /// [`PINNED_GENERATIONS`] are released. The checkpoint carries the current primary term.
    ///
    /// A commit written before commits carried their mapping is committed once more first,
    /// so that every checkpoint is self-describing.
    pub fn replication_checkpoint(&self) -> Result<ReplicationCheckpoint> {
        if self.is_replica() {
            return Err(replica_does_not_index(&self.index_name, self.shard_id));
        }
        let mut state = self.lock();
        self.check_engine()?;
        let live = state
            .index
            .load_metas()
            .map_err(tantivy_err("load shard metas"))?;
        let live = payload(&live);
        if live.get("mapping").is_none() || live.get("generation").is_none() {
            self.commit_now(&mut state)?;
        }
        let dir = self.path.join("index");
        let mut pins = self.replication.pins.lock().unwrap();
        let (generation, meta, meta_json, pin, linked) = {
            // the writer's garbage collection waits for this lock before it decides what to
            // delete: the files named by the meta.json read here stay until they are linked
            let _meta_lock = state
                .index
                .directory()
                .acquire_lock(&META_LOCK)
                .map_err(|e| Error::internal("lock the shard's commit", e))?;
            let meta_json = fs::read(dir.join(META_FILE)).map_err(io("read meta.json"))?;
            let meta = parse_meta(&meta_json)?;
            let generation = generation_of(&meta);
            if let Some(pinned) = pins.get(&generation) {
                return Ok(ReplicationCheckpoint {
                    primary_term: self.primary_term(),
                    ..pinned.clone()
                });
            }
            let (pin, linked) = pin_commit(&self.pins_root(), generation, &dir, &meta, &meta_json)?;
            (generation, meta, meta_json, pin, linked)
        };
        drop(state);
        let files = match describe_files(&pin, &linked) {
            Ok(files) => files,
            Err(e) => {
                let _ = fs::remove_dir_all(&pin);
                return Err(e);
            }
        };
        let checkpoint = ReplicationCheckpoint {
            primary_term: self.primary_term(),
            generation,
            max_seq_no: payload_max_seq_no(&meta),
            files,
            meta_json,
        };
        pins.insert(generation, checkpoint.clone());
        while pins.len() > PINNED_GENERATIONS {
            let Some((&oldest, _)) = pins.iter().next() else {
                break;
            };
            pins.remove(&oldest);
            let _ = fs::remove_dir_all(self.pins_root().join(oldest.to_string()));
        }
        Ok(checkpoint)
    }

    /// The shard's latest commit, pinned (see [`Shard::replication_checkpoint`]): the
    /// directory holding hard links to its files and its `meta.json`, for building another
    /// shard from them (a resize, [`crate::resize`]).
    pub fn pinned_commit(&self) -> Result<crate::resize::SourceCommit> {
        let checkpoint = self.replication_checkpoint()?;
        Ok(crate::resize::SourceCommit {
            dir: self.pins_root().join(checkpoint.generation.to_string()),
            meta_json: checkpoint.meta_json,
        })
    }

    /// Hard-links the files of the pinned checkpoint `generation` into `into` (created), so
    /// that they outlive the pin (a snapshot copies them for longer than replicas keep pins).
    /// A checkpoint no longer pinned answers `resource_not_found_exception`.
    pub fn link_pinned_files(&self, generation: u64, into: &Path) -> Result<()> {
        let pins = self.replication.pins.lock().unwrap();
        let checkpoint = pins.get(&generation).ok_or_else(|| {
            Error::new(
                "resource_not_found_exception",
                404,
                format!(
                    "[{}][{}] commit [{generation}] is no longer pinned",
                    self.index_name, self.shard_id
                ),
            )
        })?;
        fs::create_dir_all(into).map_err(io(format!("create {}", into.display())))?;
        let pin = self.pins_root().join(generation.to_string());
        for file in &checkpoint.files {
            let (source, target) = (pin.join(&file.name), into.join(&file.name));
            if fs::hard_link(&source, &target).is_err() {
                fs::copy(&source, &target).map_err(io(format!("link {}", file.name)))?;
            }
        }
        Ok(())
    }

    /// Up to `len` bytes at `offset` of file `name` of the pinned checkpoint `generation`
    /// (fewer only at the end of the file). A checkpoint no longer pinned answers
    /// `resource_not_found_exception`: the replica should start over with a newer one.
    pub fn read_checkpoint_file(
        &self,
        generation: u64,
        name: &str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>> {
        check_file_name(name)?;
        let gone = || {
            Error::new(
                "resource_not_found_exception",
                404,
                format!(
                    "[{}][{}] replication checkpoint [{generation}] is gone (released after newer commits): retry with a newer checkpoint",
                    self.index_name, self.shard_id
                ),
            )
        };
        let (mut file, length) = {
            let pins = self.replication.pins.lock().unwrap();
            let checkpoint = pins.get(&generation).ok_or_else(gone)?;
            let Some(meta) = checkpoint.files.iter().find(|f| f.name == name) else {
                return Err(Error::new(
                    "resource_not_found_exception",
                    404,
                    format!(
                        "[{}][{}] replication checkpoint [{generation}] has no file [{name}]",
                        self.index_name, self.shard_id
                    ),
                ));
            };
            // opened under the lock: a pin released later keeps the open file readable
            let path = self.pins_root().join(generation.to_string()).join(name);
            let file = File::open(&path).map_err(|_| gone())?;
            (file, meta.length)
        };
        if offset > length {
            return Err(Error::new(
                "illegal_argument_exception",
                400,
                format!("offset [{offset}] is past the end of [{name}] ([{length}] bytes)"),
            ));
        }
        file.seek(SeekFrom::Start(offset))
            .map_err(io(format!("read {name}")))?;
        let mut chunk = Vec::with_capacity(len.min((length - offset) as usize));
        file.take(len as u64)
            .read_to_end(&mut chunk)
            .map_err(io(format!("read {name}")))?;
        Ok(chunk)
    }

    /// Opens a replica at `path`: the last checkpoint it applied (its meta.json; the field
    /// table comes from the mapping in the commit's payload), or, with none, an empty replica
    /// whose searches find nothing. A replica has no writer; its translog (`<path>/translog`,
    /// opened or created) holds the operations forwarded to it, and a `replica.json` marker
    /// tells [`Shard::open`] (promotion) to replay them over the copied commit.
    pub fn open_replica(
        index_name: &str,
        shard_id: u32,
        path: &Path,
        config: ShardConfig,
    ) -> Result<Shard> {
        let dir = path.join("index");
        fs::create_dir_all(&dir)
            .map_err(|e| Error::internal(format!("create shard directory {}", dir.display()), e))?;
        // pins of the primary this directory may have held before
        release_all_pins(path)?;
        let knn_threshold = Arc::new(std::sync::atomic::AtomicI64::new(config.knn_threshold));
        let (index, table, held) = if dir.join(META_FILE).exists() {
            let index = crate::shard::open_index_with(&dir, &knn_threshold)
                .map_err(corruption("open replica"))?;
            if config.verify_checksums {
                verify_checksums(&index)?;
            }
            let meta = index
                .load_metas()
                .map_err(corruption("load replica metas"))?;
            let table = table_of_commit(&meta, &index.schema())?;
            let term = read_replica_term(path)
                .or_else(|| payload(&meta).get("primary_term").and_then(|t| t.as_u64()))
                .unwrap_or(0);
            let held = checkpoint_on_disk(&dir, &meta, term)?;
            // what an interrupted copy left behind
            remove_unreferenced(&dir, &held.files)?;
            (index, table, Some(held))
        } else {
            let (table, _) = FieldTable::build(&Mapping::default(), None)?;
            let index = Index::create_in_ram(table.schema().clone());
            (index, table, None)
        };
        let term = held.as_ref().map_or(0, |h| h.primary_term);
        if !is_replica_copy(path) {
            write_replica_marker(path, term)?;
        }
        let mut held_ops = HeldOps::default();
        held_ops.commit(held.as_ref().and_then(|h| h.max_seq_no));
        let mut newest_term = term;
        let translog = Translog::open(&path.join("translog"), false, |op| {
            held_ops.add(op.seq_no);
            newest_term = newest_term.max(op.primary_term);
            Ok(())
        })?;
        register_tokenizers(&index);
        let reader = open_reader(&index)?;
        let state = WriteState::read_only(index, reader, Arc::new(table));
        let async_durability = config.durability == Durability::Async;
        let snapshot = ShardSnapshot::new(
            state.reader.searcher(),
            state.table.clone(),
            0,
            Arc::default(),
        );
        Ok(Shard {
            index_name: index_name.to_string(),
            shard_id,
            path: path.to_path_buf(),
            config,
            state: Mutex::new(state),
            snapshot: RwLock::new(Arc::new(snapshot)),
            async_durability: AtomicBool::new(async_durability),
            translog: Some(translog),
            stats: Arc::default(),
            primary_term: AtomicU64::new(newest_term),
            replication: Replication::replica(held, held_ops),
            last_write: AtomicU64::new(0),
            pending_refresh: AtomicBool::new(false),
            last_refresh: AtomicU64::new(tessera_common::time::now_millis() as u64),
            last_search: AtomicU64::new(0),
            failure: Mutex::new(None),
            writer_closed: Arc::new(AtomicBool::new(true)),
            commit_listener: std::sync::OnceLock::new(),
            knn_threshold,
        })
    }

    /// The checkpoint this replica holds now (None before the first, and on a primary).
    pub fn replica_checkpoint(&self) -> Option<ReplicationCheckpoint> {
        self.replication.held.read().unwrap().clone()
    }

    /// The files of `checkpoint` this replica does not already hold with the same name, length
    /// and checksum: after a merge, only the merged segment's files.
    pub fn missing_files(&self, checkpoint: &ReplicationCheckpoint) -> Vec<FileMeta> {
        missing_in(self.replication.held.read().unwrap().as_ref(), checkpoint)
    }

    /// Applies a primary's checkpoint: copies the missing files in chunks of [`CHUNK_BYTES`]
    /// (`fetch(file, offset, len)` answers the bytes, e.g. through
    /// [`Shard::read_checkpoint_file`] on the primary), verifies them, installs the commit's
    /// meta.json atomically, reopens the reader and publishes a new snapshot, then deletes the
    /// files no commit needs any more. A crash at any point leaves the previous checkpoint
    /// intact. Then the translog drops the oldest generations whose operations the installed
    /// commit all holds (after `meta.json` is durable: a crash in between keeps operations
    /// the commit already holds, skipped when replayed). Answers false (and does nothing) for a
    /// checkpoint not newer than the one held by `(primary_term, generation)`: a new primary's
    /// checkpoints are taken even when its generation is behind the old primary's. Applies are
    /// serialized.
    #[allow(clippy::type_complexity)] // the signature the cluster side is written against
    pub fn apply_checkpoint(
        &self,
        checkpoint: &ReplicationCheckpoint,
        fetch: &mut dyn FnMut(&FileMeta, u64, usize) -> Result<Vec<u8>>,
    ) -> Result<bool> {
        if !self.is_replica() {
            return Err(not_a_replica(&self.index_name, self.shard_id));
        }
        let _applying = self.replication.apply.lock().unwrap();
        let held = self.replica_checkpoint();
        let new_term = held
            .as_ref()
            .is_some_and(|h| checkpoint.primary_term > h.primary_term);
        if let Some(held) = &held {
            if (checkpoint.primary_term, checkpoint.generation)
                <= (held.primary_term, held.generation)
            {
                return Ok(false);
            }
        }
        validate(checkpoint)?;
        let dir = self.path.join("index");
        for file in missing_in(held.as_ref(), checkpoint) {
            copy_file(&dir, &file, fetch)?;
        }
        translog::sync_dir(&dir)?;
        // a writer opened here later (promotion) collects whichever files end up unused
        let both = held
            .iter()
            .flat_map(|h| h.files.iter())
            .chain(&checkpoint.files)
            .map(|f| f.name.as_str());
        write_managed(&dir, both)?;
        write_replica_marker(&self.path, checkpoint.primary_term)?;
        // the commit point, durable (written, fsynced, renamed, directory fsynced) before the
        // translog is trimmed below
        translog::write_atomic(&dir.join(META_FILE), &checkpoint.meta_json)?;
        self.load_copied_commit(&dir)?;
        *self.replication.held.write().unwrap() = Some(checkpoint.clone());
        self.trim_translog(checkpoint.max_seq_no, new_term)?;
        self.primary_term
            .fetch_max(checkpoint.primary_term, std::sync::atomic::Ordering::AcqRel);
        self.last_refresh.store(
            tessera_common::time::now_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        // open readers keep the deleted files they mapped
        remove_unreferenced(&dir, &checkpoint.files)?;
        Ok(true)
    }

    /// Drops the translog generations a commit holding every operation up to `max_seq_no`
    /// covers. A new primary's commit (`new_term`) may hold less than the one it replaced:
    /// what this copy holds is counted again from the translog.
    fn trim_translog(&self, max_seq_no: Option<u64>, new_term: bool) -> Result<()> {
        let translog = self.translog()?;
        let mut held_ops = self.replication.held_ops.lock().unwrap();
        if new_term {
            held_ops.reset(max_seq_no, translog.seq_nos()?);
        } else {
            held_ops.commit(max_seq_no);
        }
        translog.roll_and_trim_to(max_seq_no)
    }

    /// Appends operations the primary forwarded to this replica's translog, durably (fsync
    /// when the shard's durability is `request`), without indexing them: a promoted replica
    /// replays them ([`Shard::open`]). Refuses (`illegal_state_exception`, nothing appended)
    /// operations from an older primary term than the newest this copy knows; a newer term is
    /// adopted. A primary answers `illegal_index_shard_state_exception`: it indexes.
    pub fn replicate_ops(&self, primary_term: u64, ops: &[Operation]) -> Result<()> {
        if !self.is_replica() {
            return Err(primary_does_not_replicate(&self.index_name, self.shard_id));
        }
        let translog = self.translog()?;
        let offset = {
            let _appending = self.replication.held_ops.lock().unwrap();
            let current = self.primary_term();
            if primary_term < current {
                return Err(stale_term(
                    &self.index_name,
                    self.shard_id,
                    primary_term,
                    current,
                ));
            }
            self.primary_term
                .fetch_max(primary_term, std::sync::atomic::Ordering::AcqRel);
            let mut offset = 0;
            for op in ops {
                offset = translog.append(op)?;
            }
            offset
        };
        if ops.is_empty() {
            return Ok(());
        }
        if self.durability() == Durability::Request {
            translog.sync_to(offset)?;
        }
        let mut held_ops = self.replication.held_ops.lock().unwrap();
        for op in ops {
            held_ops.add(op.seq_no);
        }
        Ok(())
    }

    /// The highest seq_no below which this copy holds every operation: in its commit
    /// (`max_seq_no`) or, on a replica, its translog (contiguous from the commit's
    /// `max_seq_no + 1`). None when it holds nothing. Under `async` durability a replica
    /// counts forwarded operations once appended, before they are fsynced.
    pub fn local_checkpoint(&self) -> Option<u64> {
        if self.is_replica() {
            self.replication.held_ops.lock().unwrap().checkpoint
        } else {
            self.lock().next_seq_no.checked_sub(1)
        }
    }

    /// Opens the commit just installed in `dir` and publishes it to searches.
    fn load_copied_commit(&self, dir: &Path) -> Result<()> {
        let index = crate::shard::open_index(dir).map_err(corruption("open the copied commit"))?;
        register_tokenizers(&index);
        let meta = index
            .load_metas()
            .map_err(corruption("load the copied commit"))?;
        let table = table_of_commit(&meta, &index.schema())?;
        let reader = open_reader(&index)?;
        let mut state = self.lock();
        state.index = index;
        state.reader = reader;
        state.table = Arc::new(table);
        self.publish(&mut state);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{Conditions, PreparedDoc};
    use bytes::Bytes;
    use serde_json::{json, Value};
    use tantivy::collector::TopDocs;
    use tantivy::query::TermQuery;
    use tantivy::schema::{IndexRecordOption, Value as _};
    use tantivy::{TantivyDocument, Term};
    use tessera_mapping::{parse_document, ParseOutcome};

    fn mapping() -> Mapping {
        Mapping::parse(&json!({"properties": {"title": {"type": "text"}, "n": {"type": "long"}}}))
            .unwrap()
    }

    /// Merges off: every refresh keeps its segment, so file sets are predictable.
    fn config() -> ShardConfig {
        ShardConfig {
            merges: false,
            ..ShardConfig::default()
        }
    }

    fn primary(dir: &Path, mapping: &Mapping) -> Shard {
        Shard::open("idx", 0, dir, mapping, 1, config()).unwrap()
    }

    fn replica(dir: &Path) -> Shard {
        Shard::open_replica("idx", 0, dir, config()).unwrap()
    }

    /// Indexes `docs` in one batch; returns the operations it logged.
    fn index(
        shard: &Shard,
        mapping: &Mapping,
        version: u64,
        docs: &[(&str, Value)],
    ) -> Vec<Operation> {
        let table = shard.table_for(mapping, version).unwrap();
        let mut batch = shard.write_batch();
        batch.keep_operations();
        for (id, source) in docs {
            let ParseOutcome::Document(doc) = parse_document(mapping, &table, id, source).unwrap()
            else {
                panic!("mapping update")
            };
            let prepared = PreparedDoc {
                id: id.to_string(),
                auto_id: false,
                doc,
                nested: Vec::new(),
                source: Bytes::from(serde_json::to_vec(source).unwrap()),
                routing: None,
            };
            batch.index(prepared, &Conditions::default()).unwrap();
        }
        let ops = batch.take_operations();
        batch.finish().unwrap();
        ops
    }

    fn titled(range: std::ops::Range<usize>) -> Vec<(String, Value)> {
        range
            .map(|i| {
                // term frequencies differ, so scores differ
                let title = format!("{} world", "hello ".repeat(1 + i % 4));
                (format!("d{i}"), json!({"title": title, "n": i}))
            })
            .collect()
    }

    fn index_titled(
        shard: &Shard,
        mapping: &Mapping,
        range: std::ops::Range<usize>,
    ) -> Vec<Operation> {
        let docs = titled(range);
        let docs: Vec<(&str, Value)> = docs.iter().map(|(i, d)| (i.as_str(), d.clone())).collect();
        index(shard, mapping, 1, &docs)
    }

    /// Deletes `id` in a batch of its own; returns the operation logged.
    fn delete(shard: &Shard, id: &str) -> Operation {
        let mut batch = shard.write_batch();
        batch.keep_operations();
        batch.delete(id, None, &Conditions::default()).unwrap();
        let mut ops = batch.take_operations();
        batch.finish().unwrap();
        assert_eq!(ops.len(), 1);
        ops.pop().unwrap()
    }

    /// A forwarded index operation made up for the test (term 1).
    fn op(seq_no: u64) -> Operation {
        Operation {
            kind: crate::translog::OpKind::Index,
            seq_no,
            primary_term: 1,
            version: 1,
            id: format!("d{seq_no}"),
            routing: None,
            source: Bytes::from(format!(r#"{{"title":"hello world","n":{seq_no}}}"#)),
        }
    }

    fn ops(seq_nos: impl IntoIterator<Item = u64>) -> Vec<Operation> {
        seq_nos.into_iter().map(op).collect()
    }

    /// What the translog in `shard_path` holds, oldest first.
    fn logged(shard_path: &Path) -> Vec<Operation> {
        let mut ops = Vec::new();
        Translog::open(&shard_path.join("translog"), false, |op| {
            ops.push(op);
            Ok(())
        })
        .unwrap();
        ops
    }

    /// The highest seq_no of each translog generation of a replica, oldest first.
    fn generation_maxes(shard: &Shard) -> Vec<Option<u64>> {
        let generations = shard.translog().unwrap().generations();
        generations.into_iter().map(|(_, max)| max).collect()
    }

    /// Fetches chunks from the primary's pin of the checkpoint.
    fn from(
        primary: &Shard,
        generation: u64,
    ) -> impl FnMut(&FileMeta, u64, usize) -> Result<Vec<u8>> + '_ {
        move |file, offset, len| primary.read_checkpoint_file(generation, &file.name, offset, len)
    }

    fn replicate(primary: &Shard, replica: &Shard) -> ReplicationCheckpoint {
        let checkpoint = primary.replication_checkpoint().unwrap();
        let applied = replica
            .apply_checkpoint(&checkpoint, &mut from(primary, checkpoint.generation))
            .unwrap();
        assert!(applied);
        checkpoint
    }

    /// Hits of a term query, best first: score, segment ordinal, doc id and source.
    fn hits(shard: &Shard, field: &str, word: &str) -> Vec<(f32, u32, u32, String)> {
        hits_in(&shard.snapshot(), field, word)
    }

    fn hits_in(snapshot: &ShardSnapshot, field: &str, word: &str) -> Vec<(f32, u32, u32, String)> {
        let Some(field) = snapshot.table.leaf(field).and_then(|leaf| leaf.field) else {
            return Vec::new();
        };
        let query = TermQuery::new(
            Term::from_field_text(field, word),
            IndexRecordOption::WithFreqs,
        );
        let top = snapshot
            .searcher
            .search(&query, &TopDocs::with_limit(100).order_by_score())
            .unwrap();
        top.into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = snapshot.searcher.doc(address).unwrap();
                let source = doc
                    .get_first(snapshot.table.meta.source)
                    .and_then(|v| v.as_bytes())
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default();
                (score, address.segment_ord, address.doc_id, source)
            })
            .collect()
    }

    fn names(files: &[FileMeta]) -> BTreeSet<String> {
        files.iter().map(|f| f.name.clone()).collect()
    }

    #[test]
    fn a_replica_copies_the_primarys_commit_and_searches_alike() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..30);
        primary.refresh().unwrap();

        let replica = replica(r.path());
        assert!(replica.is_replica() && !primary.is_replica());
        // an empty replica answers nothing, without failing
        assert_eq!(replica.replica_checkpoint(), None);
        assert_eq!(replica.doc_counts(), (0, 0));
        assert!(replica.segments().unwrap().is_empty());
        assert!(replica.get_refreshed("d1").unwrap().is_none());
        assert!(hits(&replica, "title", "hello").is_empty());
        assert!(replica.table_for(&m, 1).unwrap().leaf("title").is_none());

        let checkpoint = primary.replication_checkpoint().unwrap();
        assert_eq!(checkpoint.max_seq_no, Some(29));
        assert_eq!(checkpoint.primary_term, 1);
        assert_eq!(replica.missing_files(&checkpoint), checkpoint.files);
        let generation_before = replica.snapshot().generation;
        let applied = replica
            .apply_checkpoint(&checkpoint, &mut from(&primary, checkpoint.generation))
            .unwrap();
        assert!(applied);
        assert!(replica.snapshot().generation > generation_before);
        assert_eq!(replica.replica_checkpoint(), Some(checkpoint.clone()));
        assert!(replica.missing_files(&checkpoint).is_empty());

        assert_eq!(replica.doc_counts(), (30, 0));
        assert_eq!(replica.doc_counts(), primary.doc_counts());
        let on_primary = hits(&primary, "title", "hello");
        assert_eq!(on_primary.len(), 30);
        assert_eq!(hits(&replica, "title", "hello"), on_primary);
        assert_eq!(
            replica.get_refreshed("d7").unwrap(),
            primary.get_refreshed("d7").unwrap()
        );
        assert_eq!(
            replica.get("d7").unwrap().unwrap().source,
            Some(Bytes::from(serde_json::to_vec(&titled(7..8)[0].1).unwrap()))
        );
        assert_eq!(replica.segments().unwrap().len(), 1);
        assert!(replica.store_size() > 0);
        // byte-identical files
        for file in &checkpoint.files {
            let copied = fs::read(r.path().join("index").join(&file.name)).unwrap();
            let original = fs::read(p.path().join("index").join(&file.name)).unwrap();
            assert!(copied == original, "{} differs", file.name);
        }
        // the checkpoint crosses the wire
        let wire = postcard::to_allocvec(&checkpoint).unwrap();
        let back: ReplicationCheckpoint = postcard::from_bytes(&wire).unwrap();
        assert_eq!(back, checkpoint);
    }

    #[test]
    fn a_primary_without_documents_replicates_an_empty_commit() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        let replica = replica(r.path());
        let checkpoint = replicate(&primary, &replica);
        assert!(checkpoint.files.is_empty());
        assert_eq!(checkpoint.max_seq_no, None);
        assert_eq!(replica.doc_counts(), (0, 0));
        assert!(hits(&replica, "title", "hello").is_empty());
        // the table is the primary's already
        assert!(replica.snapshot().table.leaf("title").is_some());
        drop(replica);
        let reopened = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(reopened.replica_checkpoint(), Some(checkpoint));
    }

    #[test]
    fn a_replica_refuses_writes_and_ignores_refreshes() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..3);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        replicate(&primary, &replica);
        let table = replica.table_for(&m, 1).unwrap();
        let ParseOutcome::Document(doc) =
            parse_document(&m, &table, "x", &json!({"n": 1})).unwrap()
        else {
            panic!()
        };
        let prepared = PreparedDoc {
            id: "x".into(),
            auto_id: false,
            doc,
            nested: Vec::new(),
            source: Bytes::from_static(br#"{"n":1}"#),
            routing: None,
        };
        let mut batch = replica.write_batch();
        let err = batch.index(prepared, &Conditions::default()).unwrap_err();
        assert_eq!(err.kind(), "illegal_index_shard_state_exception");
        assert!(err.reason().contains("is a replica"), "{}", err.reason());
        let err = batch
            .delete("d1", None, &Conditions::default())
            .unwrap_err();
        assert_eq!(err.kind(), "illegal_index_shard_state_exception");
        batch.finish().unwrap();
        assert!(!replica.refresh().unwrap());
        replica.flush().unwrap();
        assert_eq!(
            replica.force_merge(1).unwrap_err().kind(),
            "illegal_index_shard_state_exception"
        );
        assert!(replica.replication_checkpoint().is_err());
        let checkpoint = primary.replication_checkpoint().unwrap();
        assert!(primary
            .apply_checkpoint(&checkpoint, &mut from(&primary, checkpoint.generation))
            .is_err());
        assert_eq!(replica.doc_counts(), (3, 0));
        // nothing was logged for the replica's own sake
        assert_eq!(generation_maxes(&replica), vec![None]);
        replica.close().unwrap();
    }

    #[test]
    fn incremental_checkpoints_copy_only_new_files_and_carry_deletes() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..20);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let first = replicate(&primary, &replica);

        index_titled(&primary, &m, 20..25);
        let mut batch = primary.write_batch();
        batch.delete("d3", None, &Conditions::default()).unwrap();
        batch.delete("d4", None, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        primary.refresh().unwrap();
        let second = primary.replication_checkpoint().unwrap();
        assert!(second.generation > first.generation);
        let missing = replica.missing_files(&second);
        let old = names(&first.files);
        // the new segment and the deletes of the old one, nothing the replica already has
        assert!(!missing.is_empty());
        assert!(
            missing.iter().all(|f| !old.contains(&f.name)),
            "{missing:?}"
        );
        assert!(missing.iter().any(|f| f.name.ends_with(".del")));
        let kept: Vec<&FileMeta> = second
            .files
            .iter()
            .filter(|f| old.contains(&f.name))
            .collect();
        assert!(!kept.is_empty());
        let mut fetched = BTreeSet::new();
        let mut fetch = |file: &FileMeta, offset: u64, len: usize| {
            fetched.insert(file.name.clone());
            primary.read_checkpoint_file(second.generation, &file.name, offset, len)
        };
        assert!(replica.apply_checkpoint(&second, &mut fetch).unwrap());
        assert_eq!(fetched, names(&missing));

        assert_eq!(replica.doc_counts(), primary.doc_counts());
        assert_eq!(replica.doc_counts().0, 23);
        assert!(replica.get_refreshed("d3").unwrap().is_none());
        assert!(replica.get_refreshed("d22").unwrap().is_some());
        assert_eq!(
            hits(&replica, "title", "hello"),
            hits(&primary, "title", "hello")
        );
        assert_eq!(replica.segments().unwrap().len(), 2);
    }

    #[test]
    fn a_force_merge_reaches_the_replica_and_old_pins_still_serve() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        for round in 0..3 {
            index_titled(&primary, &m, round * 10..round * 10 + 10);
            primary.refresh().unwrap();
        }
        let replica = replica(r.path());
        let old = replicate(&primary, &replica);
        assert_eq!(replica.segments().unwrap().len(), 3);

        primary.force_merge(1).unwrap();
        primary.refresh().unwrap();
        let live = p.path().join("index");
        let gone: Vec<&FileMeta> = old
            .files
            .iter()
            .filter(|f| !live.join(&f.name).exists())
            .collect();
        assert!(!gone.is_empty(), "the merge deleted no file");
        // the pin still serves the old checkpoint, from its own links
        for file in gone {
            let bytes = primary
                .read_checkpoint_file(old.generation, &file.name, 0, file.length as usize + 10)
                .unwrap();
            assert_eq!(bytes.len() as u64, file.length);
            assert_eq!(
                bytes,
                fs::read(r.path().join("index").join(&file.name)).unwrap()
            );
            let tail = primary
                .read_checkpoint_file(old.generation, &file.name, file.length - 3, 100)
                .unwrap();
            assert_eq!(tail, bytes[bytes.len() - 3..]);
        }

        let before = replica.snapshot();
        let hits_before = hits_in(&before, "title", "hello");
        let merged = replicate(&primary, &replica);
        assert!(merged.generation > old.generation);
        // a search that still holds the previous snapshot reads the deleted files it mapped
        assert_eq!(hits_in(&before, "title", "hello"), hits_before);
        assert_eq!(replica.segments().unwrap().len(), 1);
        assert_eq!(replica.doc_counts(), (30, 0));
        assert_eq!(
            hits(&replica, "title", "hello"),
            hits(&primary, "title", "hello")
        );
        // the replica deleted what no commit needs any more
        let on_replica: BTreeSet<String> = fs::read_dir(r.path().join("index"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.') && name != META_FILE)
            .collect();
        assert_eq!(on_replica, names(&merged.files));
        let managed: BTreeSet<String> =
            serde_json::from_slice(&fs::read(r.path().join("index").join(MANAGED_FILE)).unwrap())
                .unwrap();
        assert!(managed.contains(META_FILE));
        assert!(names(&merged.files).is_subset(&managed));
    }

    #[test]
    fn pins_are_reused_released_and_answer_clear_errors() {
        let p = tempfile::tempdir().unwrap();
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..2);
        primary.refresh().unwrap();
        let size = primary.store_size();
        let first = primary.replication_checkpoint().unwrap();
        // pins are links to the index's files, not more data
        assert_eq!(primary.store_size(), size);
        // the same commit, the same pin; the current term
        primary.set_primary_term(3);
        let again = primary.replication_checkpoint().unwrap();
        assert_eq!(again.primary_term, 3);
        assert_eq!(again.files, first.files);
        assert_eq!(again.generation, first.generation);
        let name = &first.files[0].name;
        for bad in ["../meta.json", "a/b", "meta.json", ".managed.json", ""] {
            let err = primary
                .read_checkpoint_file(first.generation, bad, 0, 10)
                .unwrap_err();
            assert_eq!(err.status(), 400, "{bad}");
        }
        let err = primary
            .read_checkpoint_file(first.generation, "nope.idx", 0, 10)
            .unwrap_err();
        assert_eq!(err.kind(), "resource_not_found_exception");
        let err = primary
            .read_checkpoint_file(first.generation + 100, name, 0, 10)
            .unwrap_err();
        assert_eq!(err.kind(), "resource_not_found_exception");
        assert!(err.reason().contains("retry with a newer checkpoint"));
        // newer commits release the oldest pins
        for i in 0..PINNED_GENERATIONS {
            index_titled(&primary, &m, 10 + i..11 + i);
            primary.refresh().unwrap();
            primary.replication_checkpoint().unwrap();
        }
        let err = primary
            .read_checkpoint_file(first.generation, name, 0, 10)
            .unwrap_err();
        assert_eq!(err.kind(), "resource_not_found_exception");
        assert!(!p
            .path()
            .join(PINS_DIR)
            .join(first.generation.to_string())
            .exists());
        let pins = fs::read_dir(p.path().join(PINS_DIR)).unwrap().count();
        assert_eq!(pins, PINNED_GENERATIONS);
        // writes carry the new term
        index(&primary, &m, 1, &[("t", json!({"n": 1}))]);
        assert_eq!(primary.get("t").unwrap().unwrap().version.primary_term, 3);
        // closing releases them all
        primary.close().unwrap();
        assert!(!p.path().join(PINS_DIR).exists());
    }

    #[test]
    fn a_corrupt_chunk_fails_the_copy_and_keeps_the_previous_checkpoint() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..10);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let first = replicate(&primary, &replica);

        index_titled(&primary, &m, 10..20);
        primary.refresh().unwrap();
        let second = primary.replication_checkpoint().unwrap();
        let mut flipped = false;
        let mut fetch = |file: &FileMeta, offset: u64, len: usize| {
            let mut bytes =
                primary.read_checkpoint_file(second.generation, &file.name, offset, len)?;
            if !flipped && file.name.ends_with(".store") {
                bytes[0] ^= 0x40;
                flipped = true;
            }
            Ok(bytes)
        };
        let err = replica.apply_checkpoint(&second, &mut fetch).unwrap_err();
        assert!(flipped);
        assert_eq!(err.kind(), "corrupt_index_exception");
        assert!(err.reason().contains("checksum failed"), "{}", err.reason());
        // no temporary file stays behind; the replica still serves its checkpoint
        let partials = fs::read_dir(r.path().join("index"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(PARTIAL_SUFFIX)
            })
            .count();
        assert_eq!(partials, 0);
        assert_eq!(replica.replica_checkpoint(), Some(first.clone()));
        assert_eq!(replica.doc_counts(), (10, 0));
        assert_eq!(hits(&replica, "title", "hello").len(), 10);
        drop(replica);
        let reopened = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(reopened.replica_checkpoint(), Some(first));
        assert_eq!(reopened.doc_counts(), (10, 0));
        // a good copy then goes through
        assert!(reopened
            .apply_checkpoint(&second, &mut from(&primary, second.generation))
            .unwrap());
        assert_eq!(reopened.doc_counts(), (20, 0));
    }

    #[test]
    fn a_crash_mid_copy_leaves_the_previous_checkpoint() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..10);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let first = replicate(&primary, &replica);
        index_titled(&primary, &m, 10..15);
        primary.refresh().unwrap();
        let second = primary.replication_checkpoint().unwrap();
        let missing = replica.missing_files(&second).len();
        assert!(missing > 3);

        // the connection drops after three files
        let mut copied = BTreeSet::new();
        let mut fetch = |file: &FileMeta, offset: u64, len: usize| {
            if copied.len() == 3 && !copied.contains(&file.name) {
                return Err(Error::new("node_disconnected_exception", 500, "gone"));
            }
            copied.insert(file.name.clone());
            primary.read_checkpoint_file(second.generation, &file.name, offset, len)
        };
        let err = replica.apply_checkpoint(&second, &mut fetch).unwrap_err();
        assert_eq!(err.kind(), "node_disconnected_exception");
        assert_eq!(replica.replica_checkpoint(), Some(first.clone()));
        assert_eq!(replica.doc_counts(), (10, 0));
        // as after kill -9: the process goes, the files stay, with a file half copied and a
        // meta.json half written
        drop(replica);
        let index_dir = r.path().join("index");
        fs::write(index_dir.join(format!("abc.idx{PARTIAL_SUFFIX}")), b"half").unwrap();
        fs::write(index_dir.join("meta.tmp"), b"{").unwrap();
        let reopened = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(reopened.replica_checkpoint(), Some(first));
        assert_eq!(reopened.doc_counts(), (10, 0));
        assert_eq!(reopened.missing_files(&second).len(), missing);
        assert!(!index_dir.join(format!("abc.idx{PARTIAL_SUFFIX}")).exists());
        assert!(!index_dir.join("meta.tmp").exists());
        assert!(reopened
            .apply_checkpoint(&second, &mut from(&primary, second.generation))
            .unwrap());
        assert_eq!(reopened.doc_counts(), (15, 0));
        assert_eq!(reopened.replica_checkpoint(), Some(second));
    }

    #[test]
    fn concurrent_applies_of_one_checkpoint_copy_it_once() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..10);
        primary.refresh().unwrap();
        let checkpoint = primary.replication_checkpoint().unwrap();
        let replica = replica(r.path());
        let outcomes: Vec<bool> = std::thread::scope(|scope| {
            let applies: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        replica
                            .apply_checkpoint(
                                &checkpoint,
                                &mut from(&primary, checkpoint.generation),
                            )
                            .unwrap()
                    })
                })
                .collect();
            applies.into_iter().map(|a| a.join().unwrap()).collect()
        });
        let mut outcomes = outcomes;
        outcomes.sort();
        assert_eq!(outcomes, vec![false, true]);
        assert_eq!(replica.doc_counts(), (10, 0));
    }

    #[test]
    fn a_replica_follows_a_primary_that_merges_in_the_background() {
        // the default policy merges once 8 segments of a level exist, on its own thread
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = Shard::open("idx", 0, p.path(), &m, 1, ShardConfig::default()).unwrap();
        let replica = replica(r.path());
        for round in 0..24 {
            index_titled(&primary, &m, round * 3..round * 3 + 3);
            if round % 5 == 4 {
                let mut batch = primary.write_batch();
                batch
                    .delete(&format!("d{}", round * 3), None, &Conditions::default())
                    .unwrap();
                batch.finish().unwrap();
            }
            primary.refresh().unwrap();
            replicate(&primary, &replica);
            assert_eq!(
                replica.doc_counts().0,
                primary.doc_counts().0,
                "round {round}"
            );
        }
        let sorted = |shard: &Shard| {
            let mut found: Vec<(u32, String)> = hits(shard, "title", "hello")
                .into_iter()
                .map(|(score, _, _, source)| (score.to_bits(), source))
                .collect();
            found.sort();
            found
        };
        assert_eq!(sorted(&replica).len(), 72 - 4);
        assert_eq!(sorted(&replica).len(), sorted(&primary).len());
    }

    #[test]
    fn malformed_checkpoints_and_short_chunks_are_refused_before_anything_changes() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..5);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let first = replicate(&primary, &replica);
        index_titled(&primary, &m, 5..10);
        primary.refresh().unwrap();
        let good = primary.replication_checkpoint().unwrap();
        let mut never = |_: &FileMeta, _: u64, _: usize| -> Result<Vec<u8>> {
            panic!("a malformed checkpoint fetches nothing")
        };
        let mut escaping = good.clone();
        escaping.files[0].name = "../../escape".into();
        let err = replica.apply_checkpoint(&escaping, &mut never).unwrap_err();
        assert_eq!(err.status(), 400);
        let mut incomplete = good.clone();
        let dropped = incomplete
            .files
            .iter()
            .position(|f| !names(&first.files).contains(&f.name))
            .unwrap();
        incomplete.files.remove(dropped);
        let err = replica
            .apply_checkpoint(&incomplete, &mut never)
            .unwrap_err();
        assert_eq!(err.kind(), "corrupt_index_exception");
        let mut mislabelled = good.clone();
        mislabelled.generation += 1;
        let err = replica
            .apply_checkpoint(&mislabelled, &mut never)
            .unwrap_err();
        assert_eq!(err.kind(), "corrupt_index_exception");
        // a primary answering short chunks
        let mut short = |file: &FileMeta, offset: u64, len: usize| {
            let mut bytes =
                primary.read_checkpoint_file(good.generation, &file.name, offset, len)?;
            bytes.pop();
            Ok(bytes)
        };
        let err = replica.apply_checkpoint(&good, &mut short).unwrap_err();
        assert_eq!(err.kind(), "corrupt_index_exception");
        assert_eq!(replica.replica_checkpoint(), Some(first));
        assert_eq!(replica.doc_counts(), (5, 0));
        assert!(replica
            .apply_checkpoint(&good, &mut from(&primary, good.generation))
            .unwrap());
        assert_eq!(replica.doc_counts(), (10, 0));
    }

    #[test]
    fn older_or_equal_checkpoints_are_ignored() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..5);
        primary.refresh().unwrap();
        let first = primary.replication_checkpoint().unwrap();
        index_titled(&primary, &m, 5..10);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let second = replicate(&primary, &replica);
        let generation = replica.snapshot().generation;
        let mut never = |_: &FileMeta, _: u64, _: usize| -> Result<Vec<u8>> {
            panic!("nothing is fetched for an ignored checkpoint")
        };
        assert!(!replica.apply_checkpoint(&second, &mut never).unwrap());
        assert!(!replica.apply_checkpoint(&first, &mut never).unwrap());
        // a newer generation from an older term is ignored too
        let stale_term = ReplicationCheckpoint {
            primary_term: 0,
            generation: second.generation + 1,
            ..second.clone()
        };
        assert!(!replica.apply_checkpoint(&stale_term, &mut never).unwrap());
        assert_eq!(replica.snapshot().generation, generation);
        assert_eq!(replica.replica_checkpoint(), Some(second));
        assert_eq!(replica.doc_counts(), (10, 0));
    }

    #[test]
    fn checkpoints_are_ordered_by_term_then_generation() {
        let (p1, p2, r) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let m = mapping();
        let old = primary(p1.path(), &m);
        for i in 0..4 {
            index_titled(&old, &m, i * 2..i * 2 + 2);
            old.refresh().unwrap();
        }
        let replica = replica(r.path());
        let from_old = replicate(&old, &replica);
        // the new primary: term 2, fewer commits, so a lower generation
        let new = primary(p2.path(), &m);
        new.set_primary_term(2);
        index_titled(&new, &m, 100..103);
        new.refresh().unwrap();
        let from_new = new.replication_checkpoint().unwrap();
        assert_eq!(from_new.primary_term, 2);
        assert!(from_new.generation < from_old.generation);
        assert!(replica
            .apply_checkpoint(&from_new, &mut from(&new, from_new.generation))
            .unwrap());
        assert_eq!(replica.doc_counts().0, 3);
        assert_eq!(replica.primary_term(), 2);
        // the old primary's later checkpoints are ignored, whatever their generation
        index_titled(&old, &m, 50..52);
        old.refresh().unwrap();
        let stale = old.replication_checkpoint().unwrap();
        assert!(stale.generation > from_new.generation);
        let mut never = |_: &FileMeta, _: u64, _: usize| -> Result<Vec<u8>> {
            panic!("nothing is fetched for an ignored checkpoint")
        };
        assert!(!replica.apply_checkpoint(&stale, &mut never).unwrap());
        assert_eq!(replica.replica_checkpoint(), Some(from_new));
        assert_eq!(replica.doc_counts().0, 3);
    }

    #[test]
    fn a_new_primarys_smaller_commit_lowers_the_local_checkpoint() {
        let (p1, p2, r) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let m = mapping();
        let old = primary(p1.path(), &m);
        index_titled(&old, &m, 0..10);
        old.refresh().unwrap();
        let replica = replica(r.path());
        replicate(&old, &replica);
        replica.replicate_ops(1, &ops(6..13)).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(12));
        // the new primary's commit holds 0..=4 only; the replica's translog lacks 5
        let new = primary(p2.path(), &m);
        new.set_primary_term(2);
        index_titled(&new, &m, 0..5);
        new.refresh().unwrap();
        let checkpoint = replicate(&new, &replica);
        assert_eq!(checkpoint.max_seq_no, Some(4));
        assert_eq!(replica.local_checkpoint(), Some(4));
        let five = Operation {
            primary_term: 2,
            ..op(5)
        };
        replica.replicate_ops(2, &[five]).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(12));
    }

    #[test]
    fn a_promoted_replica_replays_the_operations_forwarded_after_its_commit() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..10);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        assert_eq!(replica.local_checkpoint(), None);
        let checkpoint = replicate(&primary, &replica);
        assert_eq!(checkpoint.max_seq_no, Some(9));
        assert_eq!(replica.local_checkpoint(), Some(9));
        // acknowledged after the copied commit: new documents, a delete, a new version
        let mut forwarded = index_titled(&primary, &m, 10..15);
        forwarded.push(delete(&primary, "d3"));
        forwarded.extend(index(&primary, &m, 1, &[("d0", json!({"title": "again"}))]));
        let seq_nos: Vec<u64> = forwarded.iter().map(|op| op.seq_no).collect();
        assert_eq!(seq_nos, (10..17).collect::<Vec<_>>());
        replica.replicate_ops(1, &forwarded[..3]).unwrap();
        replica.replicate_ops(1, &forwarded[3..]).unwrap();
        assert_eq!(primary.local_checkpoint(), Some(16));
        assert_eq!(replica.local_checkpoint(), Some(16));
        // nothing was indexed on the replica
        assert_eq!(replica.doc_counts().0, 10);
        replica.close().unwrap();
        drop(replica);
        drop(primary);

        let promoted = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        promoted.set_primary_term(2);
        promoted.refresh().unwrap();
        assert_eq!(promoted.local_checkpoint(), Some(16));
        assert_eq!(promoted.doc_counts().0, 14);
        assert!(promoted.get("d3").unwrap().is_none());
        let d0 = promoted.get("d0").unwrap().unwrap();
        assert_eq!((d0.version.version, d0.version.seq_no), (2, 16));
        assert_eq!(hits(&promoted, "title", "again").len(), 1);
        assert!(promoted.get("d14").unwrap().is_some());
        // new writes continue the sequence numbers, under the new term
        let next = index_titled(&promoted, &m, 20..21);
        assert_eq!((next[0].seq_no, next[0].primary_term), (17, 2));
        assert_eq!(promoted.local_checkpoint(), Some(17));
        promoted.close().unwrap();
    }

    #[test]
    fn a_replica_without_a_commit_is_promoted_from_its_translog_alone() {
        let r = tempfile::tempdir().unwrap();
        let m = mapping();
        let replica = replica(r.path());
        // forwarded out of order and one twice
        replica.replicate_ops(1, &ops([2, 0, 1, 1])).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(2));
        drop(replica);
        let promoted = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        promoted.refresh().unwrap();
        assert_eq!(promoted.doc_counts().0, 3);
        assert_eq!(promoted.local_checkpoint(), Some(2));
        assert!(!is_replica_copy(r.path()));
    }

    #[test]
    fn operations_of_an_older_term_are_refused() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let replica = replica(r.path());
        replica.replicate_ops(2, &ops(0..2)).unwrap();
        assert_eq!(replica.primary_term(), 2);
        let err = replica.replicate_ops(1, &ops(2..4)).unwrap_err();
        assert_eq!(err.kind(), "illegal_state_exception");
        assert!(
            err.reason()
                .contains("operation primary term [1] is too old (current [2])"),
            "{}",
            err.reason()
        );
        assert_eq!(generation_maxes(&replica), vec![Some(1)]);
        assert_eq!(replica.local_checkpoint(), Some(1));
        let of_term_3 = Operation {
            primary_term: 3,
            ..op(2)
        };
        replica.replicate_ops(3, &[of_term_3]).unwrap();
        assert_eq!(replica.primary_term(), 3);
        assert_eq!(replica.local_checkpoint(), Some(2));
        // the newest term survives a restart, through the operations logged
        drop(replica);
        let replica = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(replica.primary_term(), 3);
        assert!(replica.replicate_ops(2, &ops(3..4)).is_err());
        drop(replica);
        // a primary indexes; it takes no forwarded operations
        let primary = primary(p.path(), &m);
        let err = primary.replicate_ops(1, &ops(0..1)).unwrap_err();
        assert_eq!(err.kind(), "illegal_index_shard_state_exception");
    }

    #[test]
    fn a_copied_commit_trims_only_generations_it_covers_whole() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        let mut forwarded = index_titled(&primary, &m, 0..61);
        primary.refresh().unwrap();
        let at_60 = primary.replication_checkpoint().unwrap();
        assert_eq!(at_60.max_seq_no, Some(60));
        forwarded.extend(index_titled(&primary, &m, 61..100));
        let replica = replica(r.path());
        // generations: 0..30, 70..80 (early, out of order), 30..61, 61..70, then 80..100
        let roll = || replica.translog().unwrap().roll_and_trim_to(None).unwrap();
        for range in [0..30, 70..80, 30..61, 61..70] {
            replica.replicate_ops(1, &forwarded[range]).unwrap();
            roll();
        }
        replica.replicate_ops(1, &forwarded[80..100]).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(99));
        assert_eq!(
            generation_maxes(&replica),
            vec![Some(29), Some(79), Some(60), Some(69), Some(99)]
        );
        assert!(replica
            .apply_checkpoint(&at_60, &mut from(&primary, at_60.generation))
            .unwrap());
        // only the first is covered whole; the second holds 70..80, so it and all after stay
        assert_eq!(
            generation_maxes(&replica),
            vec![Some(79), Some(60), Some(69), Some(99), None]
        );
        assert_eq!(replica.local_checkpoint(), Some(99));
        replica.close().unwrap();
        drop(replica);

        // reopened, the replica reads the generations it kept
        let replica = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(99));
        assert_eq!(
            generation_maxes(&replica),
            vec![Some(79), Some(60), Some(69), Some(99), None]
        );
        drop(replica);
        let above: BTreeSet<u64> = logged(r.path())
            .iter()
            .map(|op| op.seq_no)
            .filter(|s| *s > 60)
            .collect();
        assert_eq!(above, (61..100).collect());
        let promoted = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        promoted.refresh().unwrap();
        assert_eq!(promoted.doc_counts().0, 100);
        assert_eq!(promoted.local_checkpoint(), Some(99));
    }

    #[test]
    fn a_later_commit_trims_the_out_of_order_generations_too() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        let mut forwarded = index_titled(&primary, &m, 0..40);
        forwarded.extend(index_titled(&primary, &m, 40..80));
        primary.refresh().unwrap();
        let replica = replica(r.path());
        replica.replicate_ops(1, &forwarded[70..80]).unwrap();
        replica.translog().unwrap().roll_and_trim_to(None).unwrap();
        replica.replicate_ops(1, &forwarded[0..70]).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(79));
        replicate(&primary, &replica);
        assert_eq!(generation_maxes(&replica), vec![None]);
        assert_eq!(replica.local_checkpoint(), Some(79));
    }

    #[test]
    fn forwarded_operations_survive_a_crash_of_the_replica() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..5);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        assert_eq!(replica.durability(), Durability::Request);
        replicate(&primary, &replica);
        let forwarded = index_titled(&primary, &m, 5..9);
        replica.replicate_ops(1, &forwarded).unwrap();
        // killed: no close, no flush of anything still buffered
        std::mem::forget(replica);
        let replica = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(8));
        assert_eq!(generation_maxes(&replica), vec![Some(8)]);
        drop(replica);
        let promoted = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        promoted.refresh().unwrap();
        assert_eq!(promoted.doc_counts().0, 9);
    }

    #[test]
    fn a_replicas_local_checkpoint_stops_at_a_gap() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        assert_eq!(primary.local_checkpoint(), None);
        index_titled(&primary, &m, 0..10);
        assert_eq!(primary.local_checkpoint(), Some(9));
        primary.refresh().unwrap();
        let replica = replica(r.path());
        replicate(&primary, &replica);
        assert_eq!(replica.local_checkpoint(), Some(9));
        replica.replicate_ops(1, &ops([10, 11])).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(11));
        replica.replicate_ops(1, &ops([13, 14])).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(11));
        // at or below what it holds: logged, changes nothing
        replica.replicate_ops(1, &ops([5, 11])).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(11));
        replica.replicate_ops(1, &ops([12])).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(14));
        drop(replica);
        let replica = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(replica.local_checkpoint(), Some(14));
    }

    #[test]
    fn a_promoted_replica_indexes_and_continues_the_sequence_numbers() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..12);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let checkpoint = replicate(&primary, &replica);
        assert_eq!(checkpoint.max_seq_no, Some(11));
        replica.close().unwrap();
        drop(replica);

        let promoted = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        assert!(!promoted.is_replica());
        promoted.set_primary_term(2);
        assert_eq!(promoted.doc_counts(), (12, 0));
        index_titled(&promoted, &m, 100..103);
        let mut batch = promoted.write_batch();
        let deleted = batch.delete("d0", None, &Conditions::default()).unwrap();
        batch.finish().unwrap();
        assert_eq!(deleted.version.seq_no, 15);
        assert_eq!(deleted.version.primary_term, 2);
        let got = promoted.get("d101").unwrap().unwrap();
        assert_eq!(got.version.seq_no, 13);
        promoted.refresh().unwrap();
        assert_eq!(promoted.doc_counts().0, 14);
        // it now replicates in turn, with generations after the copied one
        let next = promoted.replication_checkpoint().unwrap();
        assert!(next.generation > checkpoint.generation);
        assert_eq!(next.primary_term, 2);
        // and survives a restart like any primary (its own translog, no marker)
        promoted.close().unwrap();
        drop(promoted);
        let reopened = Shard::open("idx", 0, r.path(), &m, 1, config()).unwrap();
        assert_eq!(reopened.doc_counts().0, 14);
        assert!(!is_replica_copy(r.path()));
    }

    #[test]
    fn a_new_field_on_the_primary_reaches_the_replica_with_the_checkpoint() {
        let (p, r) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut m = mapping();
        let primary = primary(p.path(), &m);
        index_titled(&primary, &m, 0..5);
        primary.refresh().unwrap();
        let replica = replica(r.path());
        let first = replicate(&primary, &replica);
        assert!(replica.snapshot().table.leaf("tag").is_none());
        let before = replica.snapshot();

        // dynamic mapping found new fields; a text field makes the primary rewrite the old
        // segment's field norms in place (same name, new length)
        m.merge_json(
            &json!({"properties": {"tag": {"type": "keyword"}, "body": {"type": "text"}}}),
        )
        .unwrap();
        index(
            &primary,
            &m,
            2,
            &[
                (
                    "t1",
                    json!({"tag": "red", "title": "hello", "body": "gamma"}),
                ),
                ("t2", json!({"tag": "blue", "body": "gamma delta"})),
            ],
        );
        primary.refresh().unwrap();
        let checkpoint = primary.replication_checkpoint().unwrap();
        let old = names(&first.files);
        let rewritten: Vec<FileMeta> = replica
            .missing_files(&checkpoint)
            .into_iter()
            .filter(|f| old.contains(&f.name))
            .collect();
        assert!(
            rewritten.iter().any(|f| f.name.ends_with(".fieldnorm")),
            "{rewritten:?}"
        );
        assert!(replica
            .apply_checkpoint(&checkpoint, &mut from(&primary, checkpoint.generation))
            .unwrap());
        // the previous snapshot still searches (it mapped the replaced file)
        assert_eq!(hits_in(&before, "title", "hello").len(), 5);
        assert!(replica.snapshot().table.leaf("tag").is_some());
        assert_eq!(hits(&replica, "body", "gamma").len(), 2);
        assert_eq!(
            hits(&replica, "body", "gamma"),
            hits(&primary, "body", "gamma")
        );
        let red = hits(&replica, "tag", "red");
        assert_eq!(red.len(), 1);
        assert_eq!(red, hits(&primary, "tag", "red"));
        assert_eq!(
            hits(&replica, "title", "hello"),
            hits(&primary, "title", "hello")
        );
        assert_eq!(replica.doc_counts(), (7, 0));
        // the schemas are the same, field for field
        assert_eq!(
            replica.snapshot().searcher.schema(),
            primary.snapshot().searcher.schema()
        );
        // and a reopened replica builds the same table from the copied commit alone
        drop(replica);
        let reopened = Shard::open_replica("idx", 0, r.path(), config()).unwrap();
        assert_eq!(reopened.replica_checkpoint(), Some(checkpoint));
        assert_eq!(hits(&reopened, "tag", "red").len(), 1);
    }

    #[test]
    fn commits_without_replication_keys_still_open_and_get_them_for_a_checkpoint() {
        let p = tempfile::tempdir().unwrap();
        let m = mapping();
        {
            let shard = primary(p.path(), &m);
            index_titled(&shard, &m, 0..4);
            shard.refresh().unwrap();
            shard.close().unwrap();
        }
        // rewrite the payload as commits had it before replication
        let dir = p.path().join("index");
        let mut meta: Value =
            serde_json::from_slice(&fs::read(dir.join(META_FILE)).unwrap()).unwrap();
        let old: Value = serde_json::from_str(meta["payload"].as_str().unwrap()).unwrap();
        let legacy = json!({
            "max_seq_no": old["max_seq_no"],
            "translog_generation": old["translog_generation"],
        });
        meta["payload"] = Value::String(legacy.to_string());
        fs::write(dir.join(META_FILE), serde_json::to_vec(&meta).unwrap()).unwrap();

        let shard = primary(p.path(), &m);
        assert_eq!(shard.doc_counts().0, 4);
        let checkpoint = shard.replication_checkpoint().unwrap();
        assert_eq!(checkpoint.max_seq_no, Some(3));
        let r = tempfile::tempdir().unwrap();
        let replica = replica(r.path());
        replicate(&shard, &replica);
        assert_eq!(
            hits(&replica, "title", "hello"),
            hits(&shard, "title", "hello")
        );
    }
}
