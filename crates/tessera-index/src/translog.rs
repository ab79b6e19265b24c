//! The translog: a shard's write-ahead log, so that an acknowledged write survives a crash.
//!
//! Every index and delete operation is appended here before it is acknowledged; with
//! `index.translog.durability: request` the append is fsynced first. Concurrent requests share
//! fsyncs (group commit): a request waits until the log is durable up to its own last byte, and
//! one fsync covers everyone who appended before it. When the shard commits its tantivy index,
//! the log rolls to a new generation and older generations are deleted.
//!
//! **Integrity.** A generation file starts with a header (magic, format version, generation
//! number); each record is `len u32 | crc32 u32 | payload`, payload = `op u8 | seq_no u64 |
//! primary_term u64 | version u64 | id | routing | source` (byte strings as `len u32 | bytes`,
//! routing `u32::MAX` when absent), all little-endian. Beside the generations, `translog.ckp`
//! (as OpenSearch's checkpoint) records after every fsync how many bytes of the current
//! generation are durable, and which generations must exist (see `CheckpointFile::write` for
//! why it is itself fsynced only when a roll changes which generations exist). It is two fixed slots written in
//! turn, each with a counter and a crc, so a crash while writing one leaves the other intact.
//! On open, everything up to the checkpointed length must be present and verify: a flipped byte,
//! a zeroed block, a truncation or a missing generation there is a `translog_corrupted_exception`,
//! never a silent loss. Bytes past the checkpoint were never acknowledged: complete records there
//! are replayed, and the first torn one ends the log (a crash mid-append) and is cut off.
//!
//! **Failure.** An append or fsync that fails (a full disk, an I/O error) poisons the log: what
//! reached the file is unknown, so every later append and sync fails too, until the shard
//! reopens the log from disk (`Shard::recover`), where the checkpoint tells what is safe.
//!
//! **Replicas.** A replica keeps a log of the same format of the operations its primary forwards
//! (it does not index them, see [`crate::replication`]), so that a promoted replica replays what
//! was acknowledged. Its operations may arrive out of order and its commits are copied, so it
//! cannot drop every older generation at a commit: [`Translog::roll_and_trim_to`] deletes only
//! the oldest generations whose operations all lie at or below the copied commit's `max_seq_no`,
//! which is why the log tracks the highest seq_no of each generation.
//!
//! Logs written before checkpoints existed (headerless generations, no `translog.ckp`) are
//! read by the old rules (only a torn tail of the newest generation is tolerated) and replaced
//! by the new format at the next commit.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};

/// One logged write. Serializable so that a primary can forward it to its replicas (the
/// on-disk format is the hand-written one below, not serde's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    pub kind: OpKind,
    pub seq_no: u64,
    pub primary_term: u64,
    pub version: u64,
    pub id: String,
    pub routing: Option<String>,
    /// The document source (empty for deletes).
    #[serde(with = "crate::wire::bytes")]
    pub source: Bytes,
}

/// What a logged write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpKind {
    Index = 1,
    Delete = 2,
}

impl Operation {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0u8; 8]); // len + crc placeholders
        out.push(self.kind as u8);
        out.extend_from_slice(&self.seq_no.to_le_bytes());
        out.extend_from_slice(&self.primary_term.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        put_bytes(out, self.id.as_bytes());
        match &self.routing {
            Some(r) => put_bytes(out, r.as_bytes()),
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        put_bytes(out, &self.source);
        let payload_len = (out.len() - start - 8) as u32;
        let crc = crc32fast::hash(&out[start + 8..]);
        out[start..start + 4].copy_from_slice(&payload_len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    fn decode(payload: &[u8]) -> Option<Operation> {
        let mut cursor = Cursor {
            data: payload,
            pos: 0,
        };
        let kind = match cursor.u8()? {
            1 => OpKind::Index,
            2 => OpKind::Delete,
            _ => return None,
        };
        let seq_no = cursor.u64()?;
        let primary_term = cursor.u64()?;
        let version = cursor.u64()?;
        let id = String::from_utf8(cursor.bytes()?.to_vec()).ok()?;
        let routing = match cursor.peek_u32()? {
            u32::MAX => {
                cursor.pos += 4;
                None
            }
            _ => Some(String::from_utf8(cursor.bytes()?.to_vec()).ok()?),
        };
        let source = Bytes::copy_from_slice(cursor.bytes()?);
        (cursor.pos == payload.len()).then_some(Operation {
            kind,
            seq_no,
            primary_term,
            version,
            id,
            routing,
            source,
        })
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }
    fn peek_u32(&self) -> Option<u32> {
        let b = self.data.get(self.pos..self.pos + 4)?;
        Some(u32::from_le_bytes(b.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.peek_u32()? as usize;
        self.pos += 4;
        self.take(len)
    }
}

/// The first bytes of every generation file of this format.
const MAGIC: [u8; 4] = *b"TSTL";
const FORMAT_VERSION: u32 = 2;
/// Magic, format version, generation number.
pub const HEADER_LEN: u64 = 16;
const CHECKPOINT_FILE: &str = "translog.ckp";
/// One checkpoint slot; the file holds two, written in turn.
const SLOT_LEN: usize = 64;
const CHECKPOINT_MAGIC: [u8; 4] = *b"TSCK";

fn generation_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("translog-{generation}.tlog"))
}

fn list_generations(dir: &Path) -> Result<Vec<u64>> {
    let mut generations = Vec::new();
    for entry in fs::read_dir(dir)
        .map_err(|e| Error::internal(format!("list translog directory {}", dir.display()), e))?
    {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(number) = name
            .strip_prefix("translog-")
            .and_then(|n| n.strip_suffix(".tlog"))
        {
            if let Ok(generation) = number.parse::<u64>() {
                generations.push(generation);
            }
        }
    }
    generations.sort_unstable();
    Ok(generations)
}

/// The error of a translog whose acknowledged contents are damaged.
pub fn corrupted(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        "translog_corrupted_exception",
        500,
        format!(
            "translog from source [{}] is corrupted, {what}",
            path.display()
        ),
    )
}

/// What `translog.ckp` records: the durable length of the current generation and the oldest
/// generation still needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checkpoint {
    /// Increases with every write; the slot with the larger valid counter wins.
    counter: u64,
    generation: u64,
    /// Bytes of the current generation's file that are durable (header included).
    offset: u64,
    min_generation: u64,
}

impl Checkpoint {
    fn encode(&self) -> [u8; SLOT_LEN] {
        let mut slot = [0u8; SLOT_LEN];
        slot[..4].copy_from_slice(&CHECKPOINT_MAGIC);
        slot[4..12].copy_from_slice(&self.counter.to_le_bytes());
        slot[12..20].copy_from_slice(&self.generation.to_le_bytes());
        slot[20..28].copy_from_slice(&self.offset.to_le_bytes());
        slot[28..36].copy_from_slice(&self.min_generation.to_le_bytes());
        let crc = crc32fast::hash(&slot[..36]);
        slot[36..40].copy_from_slice(&crc.to_le_bytes());
        slot
    }

    fn decode(slot: &[u8]) -> Option<Checkpoint> {
        let slot = slot.get(..40)?;
        let u64_at = |at: usize| u64::from_le_bytes(slot[at..at + 8].try_into().unwrap());
        let crc = u32::from_le_bytes(slot[36..40].try_into().unwrap());
        (slot[..4] == CHECKPOINT_MAGIC && crc32fast::hash(&slot[..36]) == crc).then(|| Checkpoint {
            counter: u64_at(4),
            generation: u64_at(12),
            offset: u64_at(20),
            min_generation: u64_at(28),
        })
    }
}

/// Reads `translog.ckp`: `None` when there is none; an error when neither slot verifies.
fn read_checkpoint(dir: &Path) -> Result<Option<Checkpoint>> {
    let path = dir.join(CHECKPOINT_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::internal(format!("read {}", path.display()), e)),
    };
    let best = bytes
        .chunks(SLOT_LEN)
        .take(2)
        .filter_map(Checkpoint::decode)
        .max_by_key(|c| c.counter);
    best.map(Some)
        .ok_or_else(|| corrupted(&path, "no checkpoint slot verifies"))
}

/// The open checkpoint file.
struct CheckpointFile {
    file: File,
    last: Checkpoint,
}

impl CheckpointFile {
    /// Creates the checkpoint file whole (temp file, fsync, rename): a crash leaves either no
    /// checkpoint or a complete one, never an empty file that would read as corruption.
    fn create(dir: &Path, checkpoint: Checkpoint) -> Result<CheckpointFile> {
        let path = dir.join(CHECKPOINT_FILE);
        let first = Checkpoint {
            counter: checkpoint.counter + 1,
            ..checkpoint
        };
        let mut slots = [0u8; 2 * SLOT_LEN];
        let at = (first.counter % 2) as usize * SLOT_LEN;
        slots[at..at + SLOT_LEN].copy_from_slice(&first.encode());
        write_atomic(&path, &slots)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::internal(format!("open {}", path.display()), e))?;
        Ok(CheckpointFile { file, last: first })
    }

    /// Writes the next checkpoint into the slot not holding the last one; `durable` fsyncs it.
    ///
    /// After a data fsync the checkpoint is written but not fsynced: a second device flush per
    /// acknowledged write would double the cost of every synced request. A process crash keeps
    /// the write (it is in the page cache); a power loss may lose it, leaving an older
    /// checkpoint — then the records past it, acknowledged or not, are still replayed when they
    /// verify, so nothing is lost, only the torn-or-corrupt distinction for those last records
    /// is weaker. Rolls, which delete generations, fsync theirs before deleting anything.
    fn write(
        &mut self,
        generation: u64,
        offset: u64,
        min_generation: u64,
        durable: bool,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let next = Checkpoint {
            counter: self.last.counter + 1,
            generation,
            offset,
            min_generation,
        };
        let slot = (next.counter % 2) * SLOT_LEN as u64;
        self.file
            .write_all_at(&next.encode(), slot)
            .and_then(|_| {
                if durable {
                    self.file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| Error::internal("write the translog checkpoint", e))?;
        self.last = next;
        Ok(())
    }
}

/// Where reading a generation stopped.
struct Scan {
    /// File offset after the last complete, verified record.
    end: u64,
    /// Why reading stopped before the end of the file, if it did.
    stopped: Option<String>,
}

/// Reads the records of a generation from `start`, handing each operation to `visit`.
fn scan_generation(
    path: &Path,
    start: u64,
    visit: &mut dyn FnMut(Operation) -> Result<()>,
) -> Result<Scan> {
    let file =
        File::open(path).map_err(|e| Error::internal(format!("read {}", path.display()), e))?;
    let len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    reader.seek(SeekFrom::Start(start))?;
    let mut pos = start;
    let mut payload = Vec::new();
    while pos < len {
        if len - pos < 8 {
            return Ok(Scan {
                end: pos,
                stopped: Some(format!("a partial record header at offset [{pos}]")),
            });
        }
        let mut header = [0u8; 8];
        reader.read_exact(&mut header)?;
        let size = u32::from_le_bytes(header[..4].try_into().unwrap()) as u64;
        let crc = u32::from_le_bytes(header[4..].try_into().unwrap());
        if size > len - pos - 8 {
            return Ok(Scan {
                end: pos,
                stopped: Some(format!(
                    "the record at offset [{pos}] announces [{size}] bytes past the end of the file"
                )),
            });
        }
        payload.resize(size as usize, 0);
        reader.read_exact(&mut payload)?;
        let actual = crc32fast::hash(&payload);
        if actual != crc {
            return Ok(Scan {
                end: pos,
                stopped: Some(format!(
                    "checksum verification failed at offset [{pos}] - expected: [{crc:#010x}], got: [{actual:#010x}]"
                )),
            });
        }
        let Some(op) = Operation::decode(&payload) else {
            return Ok(Scan {
                end: pos,
                stopped: Some(format!("the record at offset [{pos}] does not decode")),
            });
        };
        visit(op)?;
        pos += 8 + size;
    }
    Ok(Scan {
        end: pos,
        stopped: None,
    })
}

fn encode_header(generation: u64) -> [u8; HEADER_LEN as usize] {
    let mut header = [0u8; HEADER_LEN as usize];
    header[..4].copy_from_slice(&MAGIC);
    header[4..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[8..].copy_from_slice(&generation.to_le_bytes());
    header
}

/// True when the file starts with this format's magic (a generation written with checkpoints).
fn has_header(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let mut file =
        File::open(path).map_err(|e| Error::internal(format!("read {}", path.display()), e))?;
    Ok(file.read_exact(&mut magic).is_ok() && magic == MAGIC)
}

fn check_header(path: &Path, generation: u64) -> Result<()> {
    let mut header = [0u8; HEADER_LEN as usize];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map_err(|_| corrupted(path, "its header is missing"))?;
    if header != encode_header(generation) {
        return Err(corrupted(
            path,
            format!("its header is not that of generation [{generation}]"),
        ));
    }
    Ok(())
}

fn truncate_to(path: &Path, len: u64) -> Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::internal(format!("open {} to truncate it", path.display()), e))?;
    file.set_len(len)
        .and_then(|_| file.sync_all())
        .map_err(|e| Error::internal(format!("truncate {}", path.display()), e))
}

/// The highest seq_no logged in each generation still on disk (None: it holds no operation).
type MaxSeqNos = BTreeMap<u64, Option<u64>>;

/// Records that `generation` holds an operation numbered `seq_no`.
fn note_seq_no(max_seq_nos: &mut MaxSeqNos, generation: u64, seq_no: u64) {
    let max = max_seq_nos.entry(generation).or_insert(None);
    *max = (*max).max(Some(seq_no));
}

/// Scans a whole generation of either format (from its header, if it has one), recording its
/// highest seq_no.
fn scan_whole_generation(
    dir: &Path,
    generation: u64,
    max_seq_nos: &mut MaxSeqNos,
    visit: &mut dyn FnMut(Operation) -> Result<()>,
) -> Result<Scan> {
    let path = generation_path(dir, generation);
    let start = if has_header(&path)? {
        check_header(&path, generation)?;
        HEADER_LEN
    } else {
        0
    };
    max_seq_nos.entry(generation).or_insert(None);
    scan_generation(&path, start, &mut |op| {
        note_seq_no(max_seq_nos, generation, op.seq_no);
        visit(op)
    })
}

/// Reads a log that predates checkpoints: every generation must verify, except for a torn tail
/// of the newest, which is cut off.
fn read_legacy(
    dir: &Path,
    generations: &[u64],
    max_seq_nos: &mut MaxSeqNos,
    visit: &mut dyn FnMut(Operation) -> Result<()>,
) -> Result<()> {
    for (i, generation) in generations.iter().enumerate() {
        let path = generation_path(dir, *generation);
        let scan = scan_whole_generation(dir, *generation, max_seq_nos, visit)?;
        if let Some(problem) = scan.stopped {
            if i + 1 < generations.len() {
                return Err(corrupted(&path, problem));
            }
            truncate_to(&path, scan.end)?;
        }
    }
    Ok(())
}

struct Current {
    generation: u64,
    writer: BufWriter<File>,
    /// A second handle on the same file, for fsync without holding the append lock.
    sync_handle: Arc<File>,
    /// Logical position (bytes across all generations) of the end of what was written.
    written: u64,
    /// Length of the current generation's file once everything written is flushed.
    file_len: u64,
}

/// The append side of a shard's translog.
pub struct Translog {
    dir: PathBuf,
    current: Mutex<Current>,
    /// Held while syncing or rolling; guards the checkpoint file.
    sync_lock: Mutex<CheckpointFile>,
    synced: AtomicU64,
    encode_buffer: Mutex<Vec<u8>>,
    /// Set by the first failed append, fsync or roll: the file's contents past the checkpoint
    /// are unknown from then on.
    failure: Mutex<Option<String>>,
    /// The highest seq_no of each generation on disk (see [`Translog::roll_and_trim_to`]);
    /// locked inside `current`.
    max_seq_nos: Mutex<MaxSeqNos>,
}

impl Translog {
    /// Opens the log in `dir` (creating it), handing every logged operation to `visit`, oldest
    /// first, and continues appending after them. `expect_existing` says that a commit of the
    /// shard refers to this log, so an empty directory means it was lost.
    pub fn open(
        dir: &Path,
        expect_existing: bool,
        mut visit: impl FnMut(Operation) -> Result<()>,
    ) -> Result<Translog> {
        fs::create_dir_all(dir).map_err(|e| {
            Error::internal(format!("create translog directory {}", dir.display()), e)
        })?;
        let generations = list_generations(dir)?;
        let mut max_seq_nos = MaxSeqNos::new();
        let checkpoint = match read_checkpoint(dir)? {
            Some(checkpoint) => checkpoint,
            None => {
                return Self::open_without_checkpoint(
                    dir,
                    &generations,
                    expect_existing,
                    &mut visit,
                )
            }
        };
        for &generation in &generations {
            let path = generation_path(dir, generation);
            if generation < checkpoint.min_generation {
                // a crash between the checkpoint of a roll and the deletion of what it trimmed
                fs::remove_file(&path)
                    .map_err(|e| Error::internal("delete a trimmed translog generation", e))?;
            } else if generation > checkpoint.generation {
                // a crash in a roll before its checkpoint: nothing was appended there yet
                let len = fs::metadata(&path)?.len();
                if len > HEADER_LEN {
                    return Err(corrupted(
                        &path,
                        format!(
                            "it holds [{len}] bytes but the checkpoint names generation [{}]",
                            checkpoint.generation
                        ),
                    ));
                }
                fs::remove_file(&path)
                    .map_err(|e| Error::internal("delete an unused translog generation", e))?;
            }
        }
        // generations before the current one remain from a log of the older format, or in a
        // replica's log, whose rolls keep what its copied commit does not cover yet (fsynced
        // whole before the roll)
        for generation in checkpoint.min_generation..checkpoint.generation {
            let path = generation_path(dir, generation);
            if !path.exists() {
                return Err(corrupted(
                    &path,
                    format!("generation [{generation}] is missing"),
                ));
            }
            let scan = scan_whole_generation(dir, generation, &mut max_seq_nos, &mut visit)?;
            if let Some(problem) = scan.stopped {
                return Err(corrupted(&path, problem));
            }
        }
        let path = generation_path(dir, checkpoint.generation);
        if !path.exists() {
            return Err(corrupted(
                &path,
                format!("generation [{}] is missing", checkpoint.generation),
            ));
        }
        check_header(&path, checkpoint.generation)?;
        max_seq_nos.insert(checkpoint.generation, None);
        let len = fs::metadata(&path)?.len();
        if len < checkpoint.offset {
            return Err(corrupted(
                &path,
                format!(
                    "it is truncated: [{len}] bytes, but [{}] were made durable",
                    checkpoint.offset
                ),
            ));
        }
        let current = checkpoint.generation;
        let scan = scan_generation(&path, HEADER_LEN, &mut |op| {
            note_seq_no(&mut max_seq_nos, current, op.seq_no);
            visit(op)
        })?;
        if let Some(problem) = &scan.stopped {
            if scan.end < checkpoint.offset {
                return Err(corrupted(&path, problem));
            }
            // a torn tail past the checkpoint: a crash mid-append, never acknowledged
            truncate_to(&path, scan.end)?;
        }
        let checkpoint_file = CheckpointFile {
            file: OpenOptions::new()
                .read(true)
                .write(true)
                .open(dir.join(CHECKPOINT_FILE))
                .map_err(|e| Error::internal("open the translog checkpoint", e))?,
            last: checkpoint,
        };
        Self::continue_generation(
            dir,
            checkpoint.generation,
            scan.end,
            checkpoint_file,
            max_seq_nos,
        )
    }

    /// A directory without a checkpoint: new, or a log of the older format.
    fn open_without_checkpoint(
        dir: &Path,
        generations: &[u64],
        expect_existing: bool,
        visit: &mut dyn FnMut(Operation) -> Result<()>,
    ) -> Result<Translog> {
        let mut generations = generations.to_vec();
        if let Some(&newest) = generations.last() {
            // a crash between creating a generation and its first checkpoint: it holds at most
            // its header, nothing was ever appended to it
            let path = generation_path(dir, newest);
            if has_header(&path)? && fs::metadata(&path)?.len() <= HEADER_LEN {
                fs::remove_file(&path)
                    .map_err(|e| Error::internal("delete an unused translog generation", e))?;
                generations.pop();
            }
        }
        for &generation in &generations {
            let path = generation_path(dir, generation);
            if has_header(&path)? {
                return Err(corrupted(
                    &dir.join(CHECKPOINT_FILE),
                    "the checkpoint is missing",
                ));
            }
        }
        let generations = &generations[..];
        if generations.is_empty() && expect_existing {
            return Err(corrupted(
                &dir.join(CHECKPOINT_FILE),
                "the checkpoint and every generation are missing",
            ));
        }
        let mut max_seq_nos = MaxSeqNos::new();
        read_legacy(dir, generations, &mut max_seq_nos, visit)?;
        let generation = generations.last().map(|g| g + 1).unwrap_or(1);
        max_seq_nos.insert(generation, None);
        let min_generation = generations.first().copied().unwrap_or(generation);
        Self::create_generation(dir, generation)?;
        let checkpoint_file = CheckpointFile::create(
            dir,
            Checkpoint {
                counter: 0,
                generation,
                offset: HEADER_LEN,
                min_generation,
            },
        )?;
        Self::continue_generation(dir, generation, HEADER_LEN, checkpoint_file, max_seq_nos)
    }

    fn continue_generation(
        dir: &Path,
        generation: u64,
        file_len: u64,
        checkpoint: CheckpointFile,
        max_seq_nos: MaxSeqNos,
    ) -> Result<Translog> {
        let current = Self::open_for_append(dir, generation, 0, file_len)?;
        Ok(Translog {
            dir: dir.to_path_buf(),
            current: Mutex::new(current),
            sync_lock: Mutex::new(checkpoint),
            synced: AtomicU64::new(0),
            encode_buffer: Mutex::new(Vec::with_capacity(4096)),
            failure: Mutex::new(None),
            max_seq_nos: Mutex::new(max_seq_nos),
        })
    }

    /// Creates a generation file holding only its header, durable.
    fn create_generation(dir: &Path, generation: u64) -> Result<()> {
        let path = generation_path(dir, generation);
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::internal(format!("create translog {}", path.display()), e))?;
        file.write_all(&encode_header(generation))
            .and_then(|_| file.sync_all())
            .map_err(|e| Error::internal(format!("write translog {}", path.display()), e))?;
        sync_dir(dir)
    }

    fn open_for_append(
        dir: &Path,
        generation: u64,
        written: u64,
        file_len: u64,
    ) -> Result<Current> {
        let path = generation_path(dir, generation);
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| Error::internal(format!("open translog {}", path.display()), e))?;
        let sync_handle = Arc::new(file.try_clone()?);
        Ok(Current {
            generation,
            writer: BufWriter::with_capacity(256 * 1024, file),
            sync_handle,
            written,
            file_len,
        })
    }

    /// The error every operation returns once the log has failed.
    fn check_failed(&self) -> Result<()> {
        match &*self.failure.lock().unwrap() {
            None => Ok(()),
            Some(reason) => Err(Error::new(
                "translog_exception",
                500,
                format!(
                    "translog of [{}] failed earlier: {reason}",
                    self.dir.display()
                ),
            )),
        }
    }

    /// Records the first failure; returns the error unchanged.
    fn fail(&self, error: Error) -> Error {
        self.failure
            .lock()
            .unwrap()
            .get_or_insert_with(|| error.to_string());
        error
    }

    /// Closes the log after its shard failed: what the append buffer holds goes to the file now
    /// (async-acknowledged operations, replayed when the shard opens again; a torn record there
    /// is past the checkpoint and cut off then), the log is poisoned, and nothing is ever
    /// written through it again — not even when it is dropped, possibly after the shard opened
    /// the same files anew.
    pub fn close_after_failure(&self, reason: &str) {
        self.failure
            .lock()
            .unwrap()
            .get_or_insert_with(|| reason.to_string());
        let mut current = self.current.lock().unwrap();
        let _ = current.writer.flush();
        if let Ok(file) = current.sync_handle.try_clone() {
            let unflushed =
                std::mem::replace(&mut current.writer, BufWriter::with_capacity(0, file));
            // what could not be flushed is dropped here, without another write attempt
            let _ = unflushed.into_parts();
        }
    }

    /// The failure that poisoned the log, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap().clone()
    }

    /// Appends one operation; returns the logical offset that must be synced to make it durable.
    pub fn append(&self, op: &Operation) -> Result<u64> {
        self.check_failed()?;
        let mut buffer = self.encode_buffer.lock().unwrap();
        buffer.clear();
        op.encode(&mut buffer);
        let mut current = self.current.lock().unwrap();
        if let Err(e) = current.writer.write_all(&buffer) {
            return Err(self.fail(Error::internal("append to the translog", e)));
        }
        current.written += buffer.len() as u64;
        current.file_len += buffer.len() as u64;
        let generation = current.generation;
        note_seq_no(&mut self.max_seq_nos.lock().unwrap(), generation, op.seq_no);
        Ok(current.written)
    }

    /// Makes everything up to `offset` durable; concurrent callers share one fsync.
    pub fn sync_to(&self, offset: u64) -> Result<()> {
        self.check_failed()?;
        if self.synced.load(Ordering::Acquire) >= offset {
            return Ok(());
        }
        let mut checkpoint = self.sync_lock.lock().unwrap();
        self.check_failed()?;
        if self.synced.load(Ordering::Acquire) >= offset {
            return Ok(());
        }
        let (handle, written, generation, file_len) = {
            let mut current = self.current.lock().unwrap();
            if let Err(e) = current.writer.flush() {
                return Err(self.fail(Error::internal("flush the translog", e)));
            }
            (
                current.sync_handle.clone(),
                current.written,
                current.generation,
                current.file_len,
            )
        };
        if let Err(e) = handle.sync_data() {
            return Err(self.fail(Error::internal("fsync the translog", e)));
        }
        let min_generation = checkpoint.last.min_generation;
        if let Err(e) = checkpoint.write(generation, file_len, min_generation, false) {
            return Err(self.fail(e));
        }
        self.synced.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }

    /// Syncs everything written so far.
    pub fn sync(&self) -> Result<()> {
        let written = self.current.lock().unwrap().written;
        self.sync_to(written)
    }

    /// True when some appended operations are not yet durable.
    pub fn needs_sync(&self) -> bool {
        self.current.lock().unwrap().written > self.synced.load(Ordering::Acquire)
    }

    /// Starts a new generation and deletes the older ones. Call only after a durable commit of
    /// the index that contains every operation appended so far.
    pub fn roll_and_trim(&self) -> Result<()> {
        self.roll(false, |_| None)
    }

    /// Starts a new generation and deletes the oldest generations whose operations all have a
    /// seq_no at or below `max_seq_no` (empty ones included), stopping at the first that holds
    /// a newer one: a replica's log, whose operations may arrive out of order, trimmed once a
    /// commit holding every operation up to `max_seq_no` is durable. The generations kept are
    /// fsynced whole before the roll, so a crash never loses an operation above `max_seq_no`.
    pub fn roll_and_trim_to(&self, max_seq_no: Option<u64>) -> Result<()> {
        self.roll(true, |max_seq_nos| {
            max_seq_nos
                .iter()
                .find(|(_, max)| **max > max_seq_no)
                .map(|(generation, _)| *generation)
        })
    }

    /// Rolls to a new generation: `keep_old` fsyncs the current one first (it may be kept);
    /// `first_kept` picks the oldest generation to keep (None: only the new one).
    fn roll(
        &self,
        keep_old: bool,
        first_kept: impl FnOnce(&MaxSeqNos) -> Option<u64>,
    ) -> Result<()> {
        self.check_failed()?;
        let mut checkpoint = self.sync_lock.lock().unwrap();
        let mut current = self.current.lock().unwrap();
        let rolled = (|| {
            current
                .writer
                .flush()
                .map_err(|e| Error::internal("flush the translog", e))?;
            if keep_old {
                current
                    .sync_handle
                    .sync_data()
                    .map_err(|e| Error::internal("fsync the translog", e))?;
            }
            let next = current.generation + 1;
            Self::create_generation(&self.dir, next)?;
            let mut max_seq_nos = self.max_seq_nos.lock().unwrap();
            let min_generation = first_kept(&max_seq_nos).unwrap_or(next);
            checkpoint.write(next, HEADER_LEN, min_generation, true)?;
            max_seq_nos.insert(next, None);
            max_seq_nos.retain(|generation, _| *generation >= min_generation);
            drop(max_seq_nos);
            let written = current.written;
            *current = Self::open_for_append(&self.dir, next, written, HEADER_LEN)?;
            self.synced.fetch_max(written, Ordering::AcqRel);
            for generation in list_generations(&self.dir)? {
                if generation < min_generation {
                    fs::remove_file(generation_path(&self.dir, generation))
                        .map_err(|e| Error::internal("delete an old translog generation", e))?;
                }
            }
            sync_dir(&self.dir)
        })();
        rolled.map_err(|e| self.fail(e))
    }

    /// Bytes in the translog files on disk.
    pub fn size_in_bytes(&self) -> u64 {
        list_generations(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|g| fs::metadata(generation_path(&self.dir, g)).ok())
            .map(|m| m.len())
            .sum()
    }

    pub fn generation(&self) -> u64 {
        self.current.lock().unwrap().generation
    }

    /// The seq_no of every operation in the log, oldest generation first (what was appended is
    /// flushed to the files first). Appends wait meanwhile: for rare recomputations, such as a
    /// replica's after a new primary's commit replaced its own.
    pub fn seq_nos(&self) -> Result<Vec<u64>> {
        self.check_failed()?;
        let mut current = self.current.lock().unwrap();
        if let Err(e) = current.writer.flush() {
            return Err(self.fail(Error::internal("flush the translog", e)));
        }
        let generations: Vec<u64> = self.max_seq_nos.lock().unwrap().keys().copied().collect();
        let mut seq_nos = Vec::new();
        for generation in generations {
            let path = generation_path(&self.dir, generation);
            let start = if has_header(&path)? { HEADER_LEN } else { 0 };
            scan_generation(&path, start, &mut |op| {
                seq_nos.push(op.seq_no);
                Ok(())
            })?;
        }
        Ok(seq_nos)
    }

    /// The generations on disk, oldest first, each with the highest seq_no it holds (None:
    /// none).
    pub fn generations(&self) -> Vec<(u64, Option<u64>)> {
        let _current = self.current.lock().unwrap();
        let max_seq_nos = self.max_seq_nos.lock().unwrap();
        max_seq_nos.iter().map(|(g, max)| (*g, *max)).collect()
    }
}

/// fsyncs a directory so that file creations and deletions in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let handle = File::open(dir)
        .map_err(|e| Error::internal(format!("open directory {}", dir.display()), e))?;
    handle
        .sync_all()
        .map_err(|e| Error::internal(format!("fsync directory {}", dir.display()), e))
}

/// Writes `bytes` to `path` atomically: temp file, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut file = File::create(&tmp)
            .map_err(|e| Error::internal(format!("write {}", tmp.display()), e))?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path).map_err(|e| Error::internal(format!("rename {}", tmp.display()), e))?;
    if let Some(parent) = path.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// Truncates a file's tail (used by tests to simulate a crash mid-write).
pub fn truncate_tail(path: &Path, bytes: u64) -> Result<()> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    let len = file.seek(SeekFrom::End(0))?;
    file.set_len(len.saturating_sub(bytes))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(seq_no: u64, id: &str) -> Operation {
        Operation {
            kind: OpKind::Index,
            seq_no,
            primary_term: 1,
            version: 1,
            id: id.to_string(),
            routing: seq_no.is_multiple_of(2).then(|| "r".to_string()),
            source: Bytes::from(format!("{{\"n\":{seq_no}}}")),
        }
    }

    /// Opens the log and collects what it replays.
    fn open(dir: &Path) -> Result<(Translog, Vec<Operation>)> {
        let mut ops = Vec::new();
        let log = Translog::open(dir, false, |op| {
            ops.push(op);
            Ok(())
        })?;
        Ok((log, ops))
    }

    fn reopen_ops(dir: &Path) -> Result<Vec<Operation>> {
        open(dir).map(|(_, ops)| ops)
    }

    fn only_generation(dir: &Path) -> PathBuf {
        let generations = list_generations(dir).unwrap();
        assert_eq!(generations.len(), 1, "{generations:?}");
        generation_path(dir, generations[0])
    }

    /// A log with `n` synced operations, closed.
    fn synced_log(dir: &Path, n: u64) {
        let (log, _) = open(dir).unwrap();
        for i in 0..n {
            let offset = log.append(&op(i, &format!("id{i}"))).unwrap();
            log.sync_to(offset).unwrap();
        }
    }

    fn assert_corrupted(result: Result<Vec<Operation>>) {
        match result {
            Err(e) => assert_eq!(e.kind(), "translog_corrupted_exception", "{e}"),
            Ok(ops) => panic!("corruption not detected; {} operations read", ops.len()),
        }
    }

    #[test]
    fn a_replica_roll_keeps_generations_above_the_commit_and_reopens_them() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        for group in [[5, 1], [9, 2], [3, 4]] {
            for seq_no in group {
                log.append(&op(seq_no, &format!("id{seq_no}"))).unwrap();
            }
            log.roll_and_trim_to(None).unwrap();
        }
        assert_eq!(
            log.generations(),
            vec![(1, Some(5)), (2, Some(9)), (3, Some(4)), (4, None)]
        );
        // the first holds nothing above 5; the second holds 9: it and all after stay
        log.roll_and_trim_to(Some(5)).unwrap();
        assert_eq!(
            log.generations(),
            vec![(2, Some(9)), (3, Some(4)), (4, None), (5, None)]
        );
        drop(log);
        let (log, ops) = open(dir.path()).unwrap();
        let seq_nos: Vec<u64> = ops.iter().map(|op| op.seq_no).collect();
        assert_eq!(seq_nos, vec![9, 2, 3, 4]);
        assert_eq!(
            log.generations(),
            vec![(2, Some(9)), (3, Some(4)), (4, None), (5, None)]
        );
        log.append(&op(7, "id7")).unwrap();
        assert_eq!(log.seq_nos().unwrap(), vec![9, 2, 3, 4, 7]);
        log.roll_and_trim_to(Some(9)).unwrap();
        assert_eq!(log.generations(), vec![(6, None)]);
        assert_eq!(log.seq_nos().unwrap(), Vec::<u64>::new());
        // a primary's roll drops everything
        log.append(&op(10, "id10")).unwrap();
        log.roll_and_trim().unwrap();
        assert_eq!(log.generations(), vec![(7, None)]);
    }

    #[test]
    fn a_crash_before_a_replica_roll_deletes_what_it_trimmed_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        for seq_no in [1, 2] {
            log.append(&op(seq_no, "a")).unwrap();
            log.roll_and_trim_to(None).unwrap();
        }
        log.append(&op(3, "a")).unwrap();
        let first = fs::read(generation_path(dir.path(), 1)).unwrap();
        log.roll_and_trim_to(Some(1)).unwrap();
        drop(log);
        // the checkpoint names generation 2 as the oldest; generation 1 was not deleted yet
        fs::write(generation_path(dir.path(), 1), first).unwrap();
        let (log, ops) = open(dir.path()).unwrap();
        let seq_nos: Vec<u64> = ops.iter().map(|op| op.seq_no).collect();
        assert_eq!(seq_nos, vec![2, 3]);
        assert!(!generation_path(dir.path(), 1).exists());
        assert_eq!(log.generations()[0], (2, Some(2)));
    }

    #[test]
    fn appended_operations_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let (log, ops) = open(dir.path()).unwrap();
        assert!(ops.is_empty());
        for i in 0..100 {
            let offset = log.append(&op(i, &format!("id{i}"))).unwrap();
            log.sync_to(offset).unwrap();
        }
        let delete = Operation {
            kind: OpKind::Delete,
            source: Bytes::new(),
            ..op(100, "id3")
        };
        log.append(&delete).unwrap();
        log.sync().unwrap();
        drop(log);
        let ops = reopen_ops(dir.path()).unwrap();
        assert_eq!(ops.len(), 101);
        assert_eq!(ops[7], op(7, "id7"));
        assert_eq!(ops[100], delete);
        // reopening appends to the same generation, and a third open reads both runs
        let (log, _) = open(dir.path()).unwrap();
        log.append(&op(101, "more")).unwrap();
        log.sync().unwrap();
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 102);
    }

    #[test]
    fn torn_tail_is_cut_off_and_log_stays_usable() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 10);
        // a crash in mid-append: a record header announcing more than follows
        {
            let mut file = OpenOptions::new()
                .append(true)
                .open(only_generation(dir.path()))
                .unwrap();
            file.write_all(&200u32.to_le_bytes()).unwrap();
            file.write_all(b"torn").unwrap();
        }
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 10);
        let (log, _) = open(dir.path()).unwrap();
        log.append(&op(42, "y")).unwrap();
        log.sync().unwrap();
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 11);
    }

    #[test]
    fn complete_records_past_the_checkpoint_are_replayed() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (log, _) = open(dir.path()).unwrap();
            log.append(&op(1, "a")).unwrap();
            log.sync().unwrap();
            log.append(&op(2, "b")).unwrap();
            // flushed to the file but not checkpointed (a kill -9 before the fsync)
            log.current.lock().unwrap().writer.flush().unwrap();
        }
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 2);
    }

    #[test]
    fn a_flipped_byte_in_acknowledged_records_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 20);
        let path = only_generation(dir.path());
        let mut bytes = fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        fs::write(&path, bytes).unwrap();
        assert_corrupted(reopen_ops(dir.path()));
    }

    #[test]
    fn a_zeroed_block_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 50);
        let path = only_generation(dir.path());
        let mut bytes = fs::read(&path).unwrap();
        let len = bytes.len();
        bytes[len / 3..len / 3 + 64].fill(0);
        fs::write(&path, bytes).unwrap();
        assert_corrupted(reopen_ops(dir.path()));
    }

    #[test]
    fn a_truncation_in_the_middle_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 20);
        let path = only_generation(dir.path());
        let len = fs::metadata(&path).unwrap().len();
        truncate_tail(&path, len / 2).unwrap();
        assert_corrupted(reopen_ops(dir.path()));
        // also a truncation at a record boundary
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 20);
        let path = only_generation(dir.path());
        let record = (fs::metadata(&path).unwrap().len() - HEADER_LEN) / 20;
        truncate_tail(&path, record).unwrap();
        assert_corrupted(reopen_ops(dir.path()));
    }

    #[test]
    fn a_deleted_generation_or_checkpoint_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 5);
        fs::remove_file(only_generation(dir.path())).unwrap();
        assert_corrupted(reopen_ops(dir.path()));

        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 5);
        fs::remove_file(dir.path().join(CHECKPOINT_FILE)).unwrap();
        assert_corrupted(reopen_ops(dir.path()));

        // a shard whose commit refers to a log that vanished entirely
        let dir = tempfile::tempdir().unwrap();
        let result = Translog::open(dir.path(), true, |_| Ok(())).map(|_| Vec::new());
        assert_corrupted(result);
    }

    #[test]
    fn a_torn_checkpoint_slot_falls_back_to_the_other() {
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 3);
        let path = dir.path().join(CHECKPOINT_FILE);
        let mut bytes = fs::read(&path).unwrap();
        let newest = Checkpoint::decode(&bytes[..SLOT_LEN])
            .into_iter()
            .chain(Checkpoint::decode(&bytes[SLOT_LEN..]))
            .max_by_key(|c| c.counter)
            .unwrap();
        let at = (newest.counter % 2) as usize * SLOT_LEN;
        bytes[at + 20] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        // the older slot checkpoints two records; the third, complete, is replayed past it
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 3);
        // both slots torn: corruption
        fs::write(&path, [0u8; 2 * SLOT_LEN]).unwrap();
        assert_corrupted(reopen_ops(dir.path()));
    }

    #[test]
    fn roll_and_trim_drops_old_generations() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        log.append(&op(1, "a")).unwrap();
        log.roll_and_trim().unwrap();
        log.append(&op(2, "b")).unwrap();
        log.sync().unwrap();
        assert!(!log.needs_sync());
        drop(log);
        let ops = reopen_ops(dir.path()).unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].seq_no, 2);
        assert_eq!(list_generations(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn crashes_inside_a_roll_recover() {
        // the new generation was created but the checkpoint still names the old one
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 4);
        let current = list_generations(dir.path()).unwrap()[0];
        Translog::create_generation(dir.path(), current + 1).unwrap();
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 4);
        assert_eq!(list_generations(dir.path()).unwrap(), [current]);
        // the checkpoint moved on but the trimmed generation was not deleted yet
        let dir = tempfile::tempdir().unwrap();
        synced_log(dir.path(), 4);
        let stale = fs::read(only_generation(dir.path())).unwrap();
        let (log, _) = open(dir.path()).unwrap();
        log.roll_and_trim().unwrap();
        let next = log.generation();
        drop(log);
        fs::write(generation_path(dir.path(), next - 1), stale).unwrap();
        assert!(reopen_ops(dir.path()).unwrap().is_empty());
        assert_eq!(list_generations(dir.path()).unwrap(), [next]);
    }

    #[test]
    fn a_crash_while_creating_the_log_is_not_corruption() {
        // the first generation exists, its checkpoint was never written
        let dir = tempfile::tempdir().unwrap();
        Translog::create_generation(dir.path(), 1).unwrap();
        let (log, ops) = open(dir.path()).unwrap();
        assert!(ops.is_empty());
        log.append(&op(1, "a")).unwrap();
        log.sync().unwrap();
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn a_log_closed_after_a_failure_never_writes_again() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        let offset = log.append(&op(1, "a")).unwrap();
        log.sync_to(offset).unwrap();
        // appended (async durability: acknowledged) but not flushed yet
        log.append(&op(2, "b")).unwrap();
        log.close_after_failure("the shard failed");
        let len = fs::metadata(only_generation(dir.path())).unwrap().len();
        // what the buffer held reached the file at once, and is replayed
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 2);
        assert!(log.append(&op(3, "c")).is_err());
        drop(log);
        assert_eq!(
            fs::metadata(only_generation(dir.path())).unwrap().len(),
            len
        );
    }

    #[test]
    fn a_failed_append_poisons_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        let offset = log.append(&op(1, "a")).unwrap();
        log.sync_to(offset).unwrap();
        log.fail(Error::internal(
            "append to the translog",
            "No space left on device",
        ));
        assert_eq!(
            log.append(&op(2, "b")).unwrap_err().kind(),
            "translog_exception"
        );
        assert!(log.sync().is_err());
        assert!(log.roll_and_trim().is_err());
        assert!(log.failure().unwrap().contains("No space left"));
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn logs_of_the_older_format_are_read_and_converted() {
        let dir = tempfile::tempdir().unwrap();
        let mut legacy = Vec::new();
        for i in 0..5 {
            op(i, "old").encode(&mut legacy);
        }
        fs::write(generation_path(dir.path(), 1), &legacy).unwrap();
        legacy.truncate(legacy.len() - 3); // and a torn tail in the newest
        fs::write(generation_path(dir.path(), 2), &legacy).unwrap();
        let (log, ops) = open(dir.path()).unwrap();
        assert_eq!(ops.len(), 9);
        log.append(&op(9, "new")).unwrap();
        log.sync().unwrap();
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 10);
        let (log, _) = open(dir.path()).unwrap();
        log.roll_and_trim().unwrap();
        drop(log);
        assert!(reopen_ops(dir.path()).unwrap().is_empty());
        assert_eq!(list_generations(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn concurrent_appends_share_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = open(dir.path()).unwrap();
        let log = Arc::new(log);
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let offset = log.append(&op(t * 1000 + i, "c")).unwrap();
                        log.sync_to(offset).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        drop(log);
        assert_eq!(reopen_ops(dir.path()).unwrap().len(), 200);
    }
}
