//! The translog: a shard's write-ahead log, so that an acknowledged write survives a crash.
//!
//! Every index and delete operation is appended here before it is acknowledged; with
//! `index.translog.durability: request` the append is fsynced first. Concurrent requests share
//! fsyncs (group commit): a request waits until the log is durable up to its own last byte, and
//! one fsync covers everyone who appended before it. When the shard commits its tantivy index,
//! the log rolls to a new generation and older generations are deleted. On start, operations
//! newer than the last commit are replayed; a torn record at the tail (a crash mid-write) is
//! cut off, since it was never acknowledged.
//!
//! Record: `len u32 | crc32 u32 | payload`, payload = `op u8 | seq_no u64 | primary_term u64 |
//! version u64 | id | routing | source` (byte strings as `len u32 | bytes`, routing
//! `u32::MAX` when absent), all little-endian.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tessera_common::{Error, Result};

/// One logged write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    pub kind: OpKind,
    pub seq_no: u64,
    pub primary_term: u64,
    pub version: u64,
    pub id: String,
    pub routing: Option<String>,
    /// The document source (empty for deletes).
    pub source: Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Reads every operation in the log, oldest first. A torn record at the end of the newest
/// generation is truncated away; corruption anywhere else is an error.
pub fn read_operations(dir: &Path) -> Result<Vec<Operation>> {
    let generations = list_generations(dir)?;
    let mut ops = Vec::new();
    for (i, generation) in generations.iter().enumerate() {
        let path = generation_path(dir, *generation);
        let mut data = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut data))
            .map_err(|e| Error::internal(format!("read translog {}", path.display()), e))?;
        let mut pos = 0usize;
        while pos < data.len() {
            let record = (|| {
                let header = data.get(pos..pos + 8)?;
                let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
                let crc = u32::from_le_bytes(header[4..].try_into().unwrap());
                let payload = data.get(pos + 8..pos + 8 + len)?;
                (crc32fast::hash(payload) == crc).then_some(())?;
                Operation::decode(payload).map(|op| (op, 8 + len))
            })();
            match record {
                Some((op, size)) => {
                    ops.push(op);
                    pos += size;
                }
                None if i + 1 == generations.len() => {
                    // torn tail: the write never completed, so it was never acknowledged
                    let file = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(|e| Error::internal("open translog to truncate", e))?;
                    file.set_len(pos as u64)?;
                    file.sync_all()?;
                    break;
                }
                None => {
                    return Err(Error::internal(
                        format!("read translog {}", path.display()),
                        format!("corrupt record at offset {pos}"),
                    ))
                }
            }
        }
    }
    Ok(ops)
}

struct Current {
    generation: u64,
    writer: BufWriter<File>,
    /// A second handle on the same file, for fsync without holding the append lock.
    sync_handle: Arc<File>,
    /// Logical position (bytes across all generations) of the end of what was written.
    written: u64,
}

/// The append side of a shard's translog.
pub struct Translog {
    dir: PathBuf,
    current: Mutex<Current>,
    sync_lock: Mutex<()>,
    synced: AtomicU64,
    encode_buffer: Mutex<Vec<u8>>,
}

impl Translog {
    /// Opens the log for appending in a new generation after any existing ones.
    pub fn open(dir: &Path) -> Result<Translog> {
        fs::create_dir_all(dir).map_err(|e| {
            Error::internal(format!("create translog directory {}", dir.display()), e)
        })?;
        let generation = list_generations(dir)?.last().map(|g| g + 1).unwrap_or(1);
        let current = Self::create_generation(dir, generation, 0)?;
        Ok(Translog {
            dir: dir.to_path_buf(),
            current: Mutex::new(current),
            sync_lock: Mutex::new(()),
            synced: AtomicU64::new(0),
            encode_buffer: Mutex::new(Vec::with_capacity(4096)),
        })
    }

    fn create_generation(dir: &Path, generation: u64, written: u64) -> Result<Current> {
        let path = generation_path(dir, generation);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::internal(format!("create translog {}", path.display()), e))?;
        let sync_handle = Arc::new(file.try_clone()?);
        sync_dir(dir)?;
        Ok(Current {
            generation,
            writer: BufWriter::with_capacity(256 * 1024, file),
            sync_handle,
            written,
        })
    }

    /// Appends one operation; returns the logical offset that must be synced to make it durable.
    pub fn append(&self, op: &Operation) -> Result<u64> {
        let mut buffer = self.encode_buffer.lock().unwrap();
        buffer.clear();
        op.encode(&mut buffer);
        let mut current = self.current.lock().unwrap();
        current
            .writer
            .write_all(&buffer)
            .map_err(|e| Error::internal("append to the translog", e))?;
        current.written += buffer.len() as u64;
        Ok(current.written)
    }

    /// Makes everything up to `offset` durable; concurrent callers share one fsync.
    pub fn sync_to(&self, offset: u64) -> Result<()> {
        if self.synced.load(Ordering::Acquire) >= offset {
            return Ok(());
        }
        let _guard = self.sync_lock.lock().unwrap();
        if self.synced.load(Ordering::Acquire) >= offset {
            return Ok(());
        }
        let (handle, written) = {
            let mut current = self.current.lock().unwrap();
            current
                .writer
                .flush()
                .map_err(|e| Error::internal("flush the translog", e))?;
            (current.sync_handle.clone(), current.written)
        };
        handle
            .sync_data()
            .map_err(|e| Error::internal("fsync the translog", e))?;
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
        let _guard = self.sync_lock.lock().unwrap();
        let mut current = self.current.lock().unwrap();
        current
            .writer
            .flush()
            .map_err(|e| Error::internal("flush the translog", e))?;
        let next = current.generation + 1;
        let written = current.written;
        *current = Self::create_generation(&self.dir, next, written)?;
        self.synced.fetch_max(written, Ordering::AcqRel);
        for generation in list_generations(&self.dir)? {
            if generation < next {
                fs::remove_file(generation_path(&self.dir, generation))
                    .map_err(|e| Error::internal("delete an old translog generation", e))?;
            }
        }
        sync_dir(&self.dir)
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

    #[test]
    fn appended_operations_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = Translog::open(dir.path()).unwrap();
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
        let ops = read_operations(dir.path()).unwrap();
        assert_eq!(ops.len(), 101);
        assert_eq!(ops[7], op(7, "id7"));
        assert_eq!(ops[100], delete);
    }

    #[test]
    fn torn_tail_is_cut_off_and_log_stays_usable() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = Translog::open(dir.path()).unwrap();
            for i in 0..10 {
                log.append(&op(i, "x")).unwrap();
            }
            log.sync().unwrap();
        }
        let generation = list_generations(dir.path()).unwrap()[0];
        truncate_tail(&generation_path(dir.path(), generation), 3).unwrap();
        let ops = read_operations(dir.path()).unwrap();
        assert_eq!(ops.len(), 9, "the torn 10th record is dropped");
        // a second read finds a clean file
        assert_eq!(read_operations(dir.path()).unwrap().len(), 9);
        // and a new writer appends after it in a new generation
        let log = Translog::open(dir.path()).unwrap();
        log.append(&op(42, "y")).unwrap();
        log.sync().unwrap();
        assert_eq!(read_operations(dir.path()).unwrap().len(), 10);
    }

    #[test]
    fn corruption_in_an_old_generation_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = Translog::open(dir.path()).unwrap();
            log.append(&op(1, "a")).unwrap();
            log.sync().unwrap();
        }
        {
            let log = Translog::open(dir.path()).unwrap();
            log.append(&op(2, "b")).unwrap();
            log.sync().unwrap();
        }
        let first = list_generations(dir.path()).unwrap()[0];
        let path = generation_path(dir.path(), first);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        assert!(read_operations(dir.path()).is_err());
    }

    #[test]
    fn roll_and_trim_drops_old_generations() {
        let dir = tempfile::tempdir().unwrap();
        let log = Translog::open(dir.path()).unwrap();
        log.append(&op(1, "a")).unwrap();
        log.roll_and_trim().unwrap();
        assert!(read_operations(dir.path()).unwrap().is_empty());
        log.append(&op(2, "b")).unwrap();
        log.sync().unwrap();
        let ops = read_operations(dir.path()).unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].seq_no, 2);
        assert!(!log.needs_sync());
    }

    #[test]
    fn concurrent_appends_share_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(Translog::open(dir.path()).unwrap());
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
        assert_eq!(read_operations(dir.path()).unwrap().len(), 200);
    }
}
