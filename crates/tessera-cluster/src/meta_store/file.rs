//! `FileMetaStore`: the single node's [`MetaStore`], over files in the node's data directory
//! (`<data>/_state/meta/`), so a single node needs nothing else to run.
//!
//! - Each key is one file `keys/<name>.json`: a JSON header line (key, revisions, version,
//!   lease) and the value's bytes. Every write is atomic (temp file, fsync, rename, fsync of
//!   the directory) and done before the call returns, so an acknowledged write survives a
//!   crash.
//! - The revision counter is persisted without a write of its own per put: a put's file
//!   carries its `mod_revision`, a delete first writes the `revision` file; on open the
//!   revision is the highest of both, so it never goes back.
//! - Writes are checked and applied under one lock (compare-and-set is a real compare). A
//!   `commit` checks its fence and every op before it writes anything and applies them all at
//!   one revision, as etcd does. One that writes several keys is first written whole to a
//!   journal (`commit.journal`), removed once every key file is written; opening a store
//!   with a journal in place finishes that commit, so a crash keeps all of it or none.
//! - Leases live in memory with real expiry (a reaper thread deletes their keys when they
//!   expire); they do not outlive the process, so keys bound to a lease are deleted when the
//!   store is opened again, as etcd does for a lease that expired while its holder was gone.
//! - Watches are in-process channels fed from an in-memory history of the changes since the
//!   store was opened (bounded; an older start revision is `Compacted`, as in etcd).
//! - Election is etcd's: a candidate key `<name>/<lease>` bound to the candidate's lease, the
//!   lowest `create_revision` leads.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tessera_index::translog::{sync_dir, write_atomic};

use super::{
    check_commit, election_prefix, Expect, KeyValue, LeaderKey, LeaseId, Listing, MetaError,
    MetaResult, MetaStore, Revision, TxnOp, Watch, WatchEvent,
};

/// Changes kept in memory for watches that start in the past.
const HISTORY: usize = 10_000;
const KEYS_DIR: &str = "keys";
const REVISION_FILE: &str = "revision";
/// A multi-key commit while it is being applied (see [`Journal`]).
const JOURNAL_FILE: &str = "commit.journal";
/// The longest key file name (file systems allow 255 bytes).
const MAX_FILE_NAME: usize = 200;

/// The header line of a key file.
#[derive(Serialize, Deserialize)]
struct Header {
    key: String,
    create_revision: Revision,
    mod_revision: Revision,
    version: u64,
    lease: LeaseId,
}

/// A commit that writes more than one key, written (atomically) before its first key file
/// and removed after its last: a store opened with it in place applies the rest, so a
/// crash leaves all of a commit or none of it.
#[derive(Serialize, Deserialize)]
struct Journal {
    revision: Revision,
    ops: Vec<JournalOp>,
}

#[derive(Serialize, Deserialize)]
enum JournalOp {
    Put {
        key: String,
        value: Vec<u8>,
        lease: LeaseId,
    },
    Delete {
        key: String,
    },
}

struct Lease {
    ttl: Duration,
    deadline: Instant,
}

struct Watcher {
    prefix: String,
    sender: Sender<Vec<WatchEvent>>,
}

struct State {
    revision: Revision,
    kvs: BTreeMap<String, KeyValue>,
    /// The file of each key.
    files: HashMap<String, String>,
    history: VecDeque<WatchEvent>,
    /// Watches must start after this revision.
    compact_revision: Revision,
    watchers: Vec<Watcher>,
    leases: HashMap<LeaseId, Lease>,
    next_lease: LeaseId,
    closed: bool,
    /// Tests: a commit stops (as a crash would) before writing its op of this index.
    #[cfg(test)]
    crash_before_op: Option<usize>,
}

struct Inner {
    dir: PathBuf,
    state: Mutex<State>,
    /// Signalled after every change: campaigns wait for their turn, the reaper for expiries.
    changed: Condvar,
}

/// The file-backed [`MetaStore`]; see the module documentation.
pub struct FileMetaStore {
    inner: Arc<Inner>,
}

fn io_error(what: impl std::fmt::Display, e: impl std::fmt::Display) -> MetaError {
    MetaError::Unavailable(format!("{what}: {e}"))
}

/// A file name for `key`: the key with every byte outside `[A-Za-z0-9_-]` percent-encoded,
/// cut short (with a hash) when long.
fn file_name_for(key: &str) -> String {
    let mut name = String::with_capacity(key.len() + 8);
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            name.push(byte as char);
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    if name.len() > MAX_FILE_NAME {
        let hash = crc32fast::hash(key.as_bytes());
        let mut cut = MAX_FILE_NAME - 20;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}~{hash:08x}{:08x}", &name[..cut], key.len());
    }
    name
}

fn encode_file(kv: &KeyValue) -> Vec<u8> {
    let header = Header {
        key: kv.key.clone(),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
        version: kv.version,
        lease: kv.lease,
    };
    let mut bytes = serde_json::to_vec(&header).expect("a header serialises");
    bytes.push(b'\n');
    bytes.extend_from_slice(&kv.value);
    bytes
}

fn decode_file(bytes: &[u8]) -> Option<KeyValue> {
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let header: Header = serde_json::from_slice(&bytes[..newline]).ok()?;
    Some(KeyValue {
        key: header.key,
        value: bytes[newline + 1..].to_vec(),
        create_revision: header.create_revision,
        mod_revision: header.mod_revision,
        version: header.version,
        lease: header.lease,
    })
}

impl FileMetaStore {
    /// Opens (creating) the store in `dir`. Keys bound to a lease are deleted: leases end
    /// with the process that granted them.
    pub fn open(dir: &Path) -> MetaResult<FileMetaStore> {
        let keys_dir = dir.join(KEYS_DIR);
        std::fs::create_dir_all(&keys_dir).map_err(|e| io_error(keys_dir.display(), e))?;
        let mut revision: Revision = match std::fs::read_to_string(dir.join(REVISION_FILE)) {
            Ok(text) => text
                .trim()
                .parse()
                .map_err(|e| io_error(format!("read {}", dir.join(REVISION_FILE).display()), e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io_error("read the revision", e)),
        };
        let mut kvs = BTreeMap::new();
        let mut files = HashMap::new();
        let entries = std::fs::read_dir(&keys_dir).map_err(|e| io_error("list the keys", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list the keys", e))?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = file_name.strip_suffix(".json") else {
                // a temp file a crash left behind: its write was never acknowledged
                let _ = std::fs::remove_file(entry.path());
                continue;
            };
            let bytes =
                std::fs::read(entry.path()).map_err(|e| io_error(entry.path().display(), e))?;
            let kv = decode_file(&bytes).ok_or_else(|| {
                io_error(entry.path().display(), "not a key file (damaged header)")
            })?;
            revision = revision.max(kv.mod_revision);
            files.insert(kv.key.clone(), stem.to_string());
            kvs.insert(kv.key.clone(), kv);
        }
        let store = FileMetaStore {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                state: Mutex::new(State {
                    revision,
                    kvs,
                    files,
                    history: VecDeque::new(),
                    compact_revision: revision,
                    watchers: Vec::new(),
                    leases: HashMap::new(),
                    // lease ids of an earlier process are never handed out again
                    next_lease: tessera_common::ids::random_u64() >> 2 | 1,
                    closed: false,
                    #[cfg(test)]
                    crash_before_op: None,
                }),
                changed: Condvar::new(),
            }),
        };
        {
            let mut state = store.inner.lock();
            if store.inner.finish_journal(&mut state)? {
                state.compact_revision = state.revision;
            }
            let orphans: Vec<String> = state
                .kvs
                .values()
                .filter(|kv| kv.lease != 0)
                .map(|kv| kv.key.clone())
                .collect();
            if !orphans.is_empty() {
                store.inner.delete_keys(&mut state, &orphans)?;
                state.compact_revision = state.revision;
                state.history.clear();
            }
        }
        let reaper = Arc::downgrade(&store.inner);
        thread::Builder::new()
            .name("meta_store_leases".into())
            .spawn(move || reap_leases(reaper))
            .map_err(|e| io_error("start the lease reaper", e))?;
        Ok(store)
    }

    /// The store's current revision.
    pub fn revision(&self) -> Revision {
        self.inner.lock().revision
    }
}

impl Drop for FileMetaStore {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        state.closed = true;
        // ends every watch
        state.watchers.clear();
        drop(state);
        self.inner.changed.notify_all();
    }
}

/// Expires leases until the store is dropped.
fn reap_leases(inner: Weak<Inner>) {
    loop {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let mut state = inner.lock();
        if state.closed {
            return;
        }
        if let Err(e) = inner.expire_leases(&mut state) {
            eprintln!("metadata store: could not delete the keys of an expired lease: {e}");
        }
        let now = Instant::now();
        let wait = state
            .leases
            .values()
            .map(|lease| lease.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::MAX)
            // bounded so that a dropped store's thread ends soon
            .clamp(Duration::from_millis(1), Duration::from_millis(250));
        let (state, _) = inner.changed.wait_timeout(state, wait).unwrap();
        drop(state);
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn keys_dir(&self) -> PathBuf {
        self.dir.join(KEYS_DIR)
    }

    /// Deletes the keys of every lease past its deadline.
    fn expire_leases(&self, state: &mut State) -> MetaResult<()> {
        let now = Instant::now();
        let expired: Vec<LeaseId> = state
            .leases
            .iter()
            .filter(|(_, lease)| lease.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.end_lease(state, id)?;
        }
        Ok(())
    }

    fn end_lease(&self, state: &mut State, id: LeaseId) -> MetaResult<()> {
        state.leases.remove(&id);
        let keys: Vec<String> = state
            .kvs
            .values()
            .filter(|kv| kv.lease == id)
            .map(|kv| kv.key.clone())
            .collect();
        if !keys.is_empty() {
            self.delete_keys(state, &keys)?;
        }
        self.changed.notify_all();
        Ok(())
    }

    fn check_lease(&self, state: &mut State, lease: LeaseId) -> MetaResult<()> {
        self.expire_leases(state)?;
        if lease != 0 && !state.leases.contains_key(&lease) {
            return Err(MetaError::LeaseNotFound(lease));
        }
        Ok(())
    }

    fn put(
        &self,
        state: &mut State,
        key: &str,
        value: &[u8],
        lease: LeaseId,
    ) -> MetaResult<Revision> {
        let revision = state.revision + 1;
        let kv = self.write_key(state, key, value, lease, revision)?;
        state.revision = revision;
        self.publish(state, vec![WatchEvent::Put(kv)]);
        Ok(revision)
    }

    /// Writes the key's file and puts it in the map at `revision`; the caller bumps the
    /// revision and publishes the event.
    fn write_key(
        &self,
        state: &mut State,
        key: &str,
        value: &[u8],
        lease: LeaseId,
        revision: Revision,
    ) -> MetaResult<KeyValue> {
        let previous = state.kvs.get(key);
        let kv = KeyValue {
            key: key.to_string(),
            value: value.to_vec(),
            create_revision: previous.map_or(revision, |p| p.create_revision),
            mod_revision: revision,
            version: previous.map_or(1, |p| p.version + 1),
            lease,
        };
        let file = match state.files.get(key) {
            Some(file) => file.clone(),
            None => {
                let mut file = file_name_for(key);
                let taken: std::collections::HashSet<&String> = state.files.values().collect();
                let mut n = 0;
                while taken.contains(&file) {
                    n += 1;
                    file = format!("{}~{n}", file_name_for(key));
                }
                file
            }
        };
        let path = self.keys_dir().join(format!("{file}.json"));
        write_atomic(&path, &encode_file(&kv)).map_err(|e| io_error(path.display(), e))?;
        state.files.insert(key.to_string(), file);
        state.kvs.insert(key.to_string(), kv.clone());
        Ok(kv)
    }

    /// Applies a checked commit at one revision: the revision file first when the commit
    /// deletes (no key file will remember that revision), then every key's file.
    fn apply(&self, state: &mut State, ops: &[TxnOp]) -> MetaResult<Revision> {
        let revision = state.revision + 1;
        let deletes = ops
            .iter()
            .any(|op| matches!(op, TxnOp::Delete { key, .. } if state.kvs.contains_key(key)));
        let writes = ops
            .iter()
            .filter(|op| match op {
                TxnOp::Put { .. } => true,
                TxnOp::Delete { key, .. } => state.kvs.contains_key(key),
            })
            .count();
        if writes == 0 {
            // nothing changes: as etcd, no new revision
            return Ok(state.revision);
        }
        let journal_path = self.dir.join(JOURNAL_FILE);
        if writes > 1 {
            let journal = Journal {
                revision,
                ops: ops
                    .iter()
                    .map(|op| match op {
                        TxnOp::Put {
                            key, value, lease, ..
                        } => JournalOp::Put {
                            key: key.clone(),
                            value: value.clone(),
                            lease: *lease,
                        },
                        TxnOp::Delete { key, .. } => JournalOp::Delete { key: key.clone() },
                    })
                    .collect(),
            };
            let bytes = postcard::to_stdvec(&journal).expect("a journal serialises");
            write_atomic(&journal_path, &bytes).map_err(|e| io_error(journal_path.display(), e))?;
        }
        if deletes {
            let revision_path = self.dir.join(REVISION_FILE);
            write_atomic(&revision_path, revision.to_string().as_bytes())
                .map_err(|e| io_error(revision_path.display(), e))?;
        }
        let mut events = Vec::with_capacity(ops.len());
        let mut result = Ok(revision);
        for (index, op) in ops.iter().enumerate() {
            simulated_crash(state, index)?;
            let applied = match op {
                TxnOp::Put {
                    key, value, lease, ..
                } => self
                    .write_key(state, key, value, *lease, revision)
                    .map(|kv| Some(WatchEvent::Put(kv))),
                TxnOp::Delete { key, .. } => self
                    .remove_key(state, key, revision)
                    .map(|kv| kv.map(WatchEvent::Delete)),
            };
            match applied {
                Ok(event) => events.extend(event),
                Err(e) => {
                    // what was written stays written (and is published); the journal stays
                    // too, so the store opened again applies the rest
                    result = Err(e);
                    break;
                }
            }
        }
        if deletes {
            if let Err(e) = sync_dir(&self.keys_dir()) {
                result = result.and(Err(io_error("sync the keys directory", e)));
            }
        }
        if writes > 1 && result.is_ok() {
            // the key files are durable: the journal has done its work
            if let Err(e) = std::fs::remove_file(&journal_path)
                .map_err(|e| io_error(journal_path.display(), e))
                .and_then(|()| {
                    sync_dir(&self.dir).map_err(|e| io_error("sync the store directory", e))
                })
            {
                result = Err(e);
            }
        }
        state.revision = revision;
        self.publish(state, events);
        result
    }

    /// Applies what a commit cut short by a crash left in its journal (the ops it had
    /// written already are skipped: their key files carry its revision). Returns whether
    /// there was one.
    fn finish_journal(&self, state: &mut State) -> MetaResult<bool> {
        let path = self.dir.join(JOURNAL_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io_error(path.display(), e)),
        };
        let journal: Journal =
            postcard::from_bytes(&bytes).map_err(|e| io_error(path.display(), e))?;
        let revision = journal.revision;
        let revision_path = self.dir.join(REVISION_FILE);
        let highest = state.revision.max(revision);
        write_atomic(&revision_path, highest.to_string().as_bytes())
            .map_err(|e| io_error(revision_path.display(), e))?;
        for op in &journal.ops {
            match op {
                JournalOp::Put { key, value, lease } => {
                    if state.kvs.get(key).map(|kv| kv.mod_revision) != Some(revision) {
                        self.write_key(state, key, value, *lease, revision)?;
                    }
                }
                JournalOp::Delete { key } => {
                    self.remove_key(state, key, revision)?;
                }
            }
        }
        state.revision = highest;
        sync_dir(&self.keys_dir()).map_err(|e| io_error("sync the keys directory", e))?;
        std::fs::remove_file(&path).map_err(|e| io_error(path.display(), e))?;
        sync_dir(&self.dir).map_err(|e| io_error("sync the store directory", e))?;
        Ok(true)
    }

    /// Removes the key's file and the key at `revision`; returns it as its delete event
    /// carries it (`None`: it was not there).
    fn remove_key(
        &self,
        state: &mut State,
        key: &str,
        revision: Revision,
    ) -> MetaResult<Option<KeyValue>> {
        let Some(file) = state.files.remove(key) else {
            return Ok(None);
        };
        let path = self.keys_dir().join(format!("{file}.json"));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                state.files.insert(key.to_string(), file);
                return Err(io_error(path.display(), e));
            }
        }
        Ok(state.kvs.remove(key).map(|mut kv| {
            kv.mod_revision = revision;
            kv.value.clear();
            kv
        }))
    }

    /// Deletes existing keys, all at one revision.
    fn delete_keys(&self, state: &mut State, keys: &[String]) -> MetaResult<Revision> {
        let revision = state.revision + 1;
        // the counter first: once a file is gone, nothing else remembers this revision
        let revision_path = self.dir.join(REVISION_FILE);
        write_atomic(&revision_path, revision.to_string().as_bytes())
            .map_err(|e| io_error(revision_path.display(), e))?;
        state.revision = revision;
        let mut events = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(kv) = self.remove_key(state, key, revision)? {
                events.push(WatchEvent::Delete(kv));
            }
        }
        sync_dir(&self.keys_dir()).map_err(|e| io_error("sync the keys directory", e))?;
        self.publish(state, events);
        Ok(revision)
    }

    /// Records changes in the history and sends them to the watches they concern.
    /// `events` are the changes of one revision: each watch gets those under its prefix as
    /// one batch.
    fn publish(&self, state: &mut State, events: Vec<WatchEvent>) {
        state.watchers.retain(|watcher| {
            let batch: Vec<WatchEvent> = events
                .iter()
                .filter(|event| event.kv().key.starts_with(&watcher.prefix))
                .cloned()
                .collect();
            batch.is_empty() || watcher.sender.send(batch).is_ok()
        });
        for event in events {
            state.history.push_back(event);
            while state.history.len() > HISTORY {
                if let Some(old) = state.history.pop_front() {
                    state.compact_revision = old.revision();
                }
            }
        }
        self.changed.notify_all();
    }

    fn check(state: &State, key: &str, expect: Expect) -> MetaResult<()> {
        let current = state.kvs.get(key).map(|kv| kv.mod_revision);
        let ok = match expect {
            Expect::Any => true,
            Expect::Absent => current.is_none(),
            Expect::ModRevision(rev) => current == Some(rev),
        };
        if ok {
            Ok(())
        } else {
            Err(MetaError::Conflict {
                key: key.to_string(),
                current,
            })
        }
    }

    fn leader_of(state: &State, name: &str) -> Option<KeyValue> {
        let prefix = election_prefix(name);
        state
            .kvs
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .map(|(_, kv)| kv)
            .min_by_key(|kv| kv.create_revision)
            .cloned()
    }
}

impl MetaStore for FileMetaStore {
    fn get(&self, key: &str) -> MetaResult<Option<KeyValue>> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        Ok(state.kvs.get(key).cloned())
    }

    fn list(&self, prefix: &str) -> MetaResult<Listing> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        let kvs = state
            .kvs
            .range(prefix.to_string()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, kv)| kv.clone())
            .collect();
        Ok(Listing {
            kvs,
            revision: state.revision,
        })
    }

    fn compare_and_set(
        &self,
        key: &str,
        expect: Expect,
        value: &[u8],
        lease: LeaseId,
    ) -> MetaResult<Revision> {
        let mut state = self.inner.lock();
        self.inner.check_lease(&mut state, lease)?;
        Inner::check(&state, key, expect)?;
        self.inner.put(&mut state, key, value, lease)
    }

    fn delete(&self, key: &str, expect: Expect) -> MetaResult<Revision> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        Inner::check(&state, key, expect)?;
        if !state.kvs.contains_key(key) {
            return Ok(state.revision);
        }
        self.inner.delete_keys(&mut state, &[key.to_string()])
    }

    fn commit(&self, fence: Option<&LeaderKey>, ops: &[TxnOp]) -> MetaResult<Revision> {
        check_commit(ops)?;
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        if let Some(fence) = fence {
            match state.kvs.get(&fence.key) {
                Some(kv) if kv.create_revision == fence.create_revision => {}
                _ => {
                    return Err(MetaError::NotLeader {
                        key: fence.key.clone(),
                    })
                }
            }
        }
        for op in ops {
            Inner::check(&state, op.key(), op.expect())?;
        }
        // as etcd, which checks the leases of the branch its compares chose
        for op in ops {
            if let TxnOp::Put { lease, .. } = op {
                if *lease != 0 && !state.leases.contains_key(lease) {
                    return Err(MetaError::LeaseNotFound(*lease));
                }
            }
        }
        self.inner.apply(&mut state, ops)
    }

    fn watch(&self, prefix: &str, from_revision: Revision) -> MetaResult<Watch> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        let from = if from_revision == 0 {
            state.revision + 1
        } else {
            from_revision
        };
        if from <= state.compact_revision {
            return Err(MetaError::Compacted {
                compact_revision: state.compact_revision,
            });
        }
        let (sender, events) = channel();
        let mut batch: Vec<WatchEvent> = Vec::new();
        for event in &state.history {
            if event.revision() >= from && event.kv().key.starts_with(prefix) {
                if batch
                    .last()
                    .is_some_and(|last| last.revision() != event.revision())
                {
                    // the receiver is still in hand: this cannot fail
                    let _ = sender.send(std::mem::take(&mut batch));
                }
                batch.push(event.clone());
            }
        }
        if !batch.is_empty() {
            let _ = sender.send(batch);
        }
        if !state.closed {
            state.watchers.push(Watcher {
                prefix: prefix.to_string(),
                sender,
            });
        }
        Ok(Watch::new(events))
    }

    fn grant(&self, ttl: Duration) -> MetaResult<LeaseId> {
        let mut state = self.inner.lock();
        let id = state.next_lease;
        state.next_lease += 1;
        state.leases.insert(
            id,
            Lease {
                ttl,
                deadline: Instant::now() + ttl,
            },
        );
        drop(state);
        // the reaper recomputes its wake-up
        self.inner.changed.notify_all();
        Ok(id)
    }

    fn keep_alive(&self, lease: LeaseId) -> MetaResult<Duration> {
        let mut state = self.inner.lock();
        self.inner.check_lease(&mut state, lease)?;
        let entry = state
            .leases
            .get_mut(&lease)
            .ok_or(MetaError::LeaseNotFound(lease))?;
        entry.deadline = Instant::now() + entry.ttl;
        Ok(entry.ttl)
    }

    fn revoke(&self, lease: LeaseId) -> MetaResult<()> {
        let mut state = self.inner.lock();
        self.inner.check_lease(&mut state, lease)?;
        self.inner.end_lease(&mut state, lease)
    }

    fn campaign(
        &self,
        name: &str,
        value: &[u8],
        lease: LeaseId,
        wait: Duration,
    ) -> MetaResult<LeaderKey> {
        let deadline = Instant::now() + wait;
        let key = format!("{}{lease:016x}", election_prefix(name));
        let mut state = self.inner.lock();
        if lease == 0 {
            return Err(MetaError::LeaseNotFound(0));
        }
        self.inner.check_lease(&mut state, lease)?;
        if !state.kvs.contains_key(&key) {
            self.inner.put(&mut state, &key, value, lease)?;
        }
        loop {
            self.inner.expire_leases(&mut state)?;
            let Some(mine) = state.kvs.get(&key).cloned() else {
                // our lease expired while we waited
                return Err(MetaError::LeaseNotFound(lease));
            };
            let leader = Inner::leader_of(&state, name);
            if leader.as_ref().map(|kv| &kv.key) == Some(&key) {
                return Ok(LeaderKey {
                    name: name.to_string(),
                    key,
                    create_revision: mine.create_revision,
                    lease,
                });
            }
            let now = Instant::now();
            if now >= deadline || state.closed {
                // a candidate that gives up leaves the line, as an abandoned etcd campaign does
                self.inner
                    .delete_keys(&mut state, std::slice::from_ref(&key))?;
                return Err(MetaError::Timeout);
            }
            // leases may expire with no other change: wake up for them too
            let step = (deadline - now).min(Duration::from_millis(50));
            state = self.inner.changed.wait_timeout(state, step).unwrap().0;
        }
    }

    fn leader(&self, name: &str) -> MetaResult<Option<KeyValue>> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        Ok(Inner::leader_of(&state, name))
    }

    fn resign(&self, leader: &LeaderKey) -> MetaResult<()> {
        let mut state = self.inner.lock();
        self.inner.expire_leases(&mut state)?;
        match state.kvs.get(&leader.key) {
            Some(kv) if kv.create_revision == leader.create_revision => {
                self.inner
                    .delete_keys(&mut state, std::slice::from_ref(&leader.key))?;
                Ok(())
            }
            // no longer the leader (its lease expired): nothing to give up
            _ => Ok(()),
        }
    }
}

/// Tests: fails (as a crash would stop it) a commit before its op `index`.
#[cfg(test)]
fn simulated_crash(state: &State, index: usize) -> MetaResult<()> {
    if state.crash_before_op == Some(index) {
        return Err(MetaError::Unavailable("a simulated crash".into()));
    }
    Ok(())
}

#[cfg(not(test))]
#[inline(always)]
fn simulated_crash(_: &State, _: usize) -> MetaResult<()> {
    Ok(())
}

/// Writes `bytes` to a file next to the store's keys without the atomic protocol: for tests
/// that simulate a write a crash cut short.
#[cfg(test)]
fn write_torn(dir: &Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join(KEYS_DIR).join(name)).unwrap();
    file.write_all(bytes).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(watch: &Watch) -> WatchEvent {
        watch
            .recv_timeout(Duration::from_secs(5))
            .expect("an event")
    }

    #[test]
    fn compare_and_set_checks_the_revision_and_absence() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let r1 = store
            .compare_and_set("indices/a", Expect::Absent, b"one", 0)
            .unwrap();
        assert_eq!(r1, 1);
        assert_eq!(
            store.compare_and_set("indices/a", Expect::Absent, b"again", 0),
            Err(MetaError::Conflict {
                key: "indices/a".into(),
                current: Some(1)
            })
        );
        let r2 = store
            .compare_and_set("indices/a", Expect::ModRevision(r1), b"two", 0)
            .unwrap();
        assert_eq!(r2, 2);
        // the old revision no longer matches: a lost update is refused
        assert!(matches!(
            store.compare_and_set("indices/a", Expect::ModRevision(r1), b"stale", 0),
            Err(MetaError::Conflict {
                current: Some(2),
                ..
            })
        ));
        assert_eq!(
            store.delete("indices/a", Expect::ModRevision(r1)),
            Err(MetaError::Conflict {
                key: "indices/a".into(),
                current: Some(2)
            })
        );
        assert!(matches!(
            store.compare_and_set("indices/b", Expect::ModRevision(1), b"x", 0),
            Err(MetaError::Conflict { current: None, .. })
        ));
        let kv = store.get("indices/a").unwrap().unwrap();
        assert_eq!(
            (
                kv.value.as_slice(),
                kv.create_revision,
                kv.mod_revision,
                kv.version
            ),
            (&b"two"[..], 1, 2, 2)
        );
        store
            .compare_and_set("indices/b", Expect::Any, b"b", 0)
            .unwrap();
        store
            .compare_and_set("nodes/x", Expect::Any, b"n", 0)
            .unwrap();
        let listing = store.list("indices/").unwrap();
        assert_eq!(listing.revision, 4);
        assert_eq!(
            listing
                .kvs
                .iter()
                .map(|kv| kv.key.as_str())
                .collect::<Vec<_>>(),
            ["indices/a", "indices/b"]
        );
        assert_eq!(store.delete("indices/a", Expect::ModRevision(2)), Ok(5));
        assert_eq!(store.get("indices/a").unwrap(), None);
        // deleting what is not there changes nothing
        assert_eq!(store.delete("indices/a", Expect::Any), Ok(5));
    }

    #[test]
    fn revisions_keep_increasing_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = FileMetaStore::open(dir.path()).unwrap();
            store.compare_and_set("a", Expect::Absent, b"1", 0).unwrap();
            store.compare_and_set("b", Expect::Absent, b"2", 0).unwrap();
            // the highest revision is a delete's: no key file remembers it
            assert_eq!(store.delete("b", Expect::Any), Ok(3));
        }
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(store.revision(), 3);
        assert_eq!(store.compare_and_set("c", Expect::Absent, b"3", 0), Ok(4));
        let a = store.get("a").unwrap().unwrap();
        assert_eq!((a.value, a.create_revision), (b"1".to_vec(), 1));
        // a key whose name needs encoding, and a very long one, come back under their names
        let long = format!("indices/{}", "é+x".repeat(120));
        store
            .compare_and_set("indices/a.b/c d", Expect::Absent, b"odd", 0)
            .unwrap();
        store
            .compare_and_set(&long, Expect::Absent, b"long", 0)
            .unwrap();
        drop(store);
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(store.revision(), 6);
        assert_eq!(store.get("indices/a.b/c d").unwrap().unwrap().value, b"odd");
        assert_eq!(store.get(&long).unwrap().unwrap().value, b"long");
    }

    #[test]
    fn a_crash_keeps_every_acknowledged_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let mut acknowledged = BTreeMap::new();
        for i in 0..50u32 {
            let key = format!("indices/i{}", i % 7);
            let value = format!("value {i}").into_bytes();
            let rev = store.compare_and_set(&key, Expect::Any, &value, 0).unwrap();
            acknowledged.insert(key, (value, rev));
        }
        store.delete("indices/i3", Expect::Any).unwrap();
        acknowledged.remove("indices/i3");
        let last = store.revision();
        // no clean shutdown: nothing runs after the last acknowledged write, and a write the
        // crash cut short left its temp file behind
        std::mem::forget(store);
        write_torn(dir.path(), "indices%2Fi9.tmp", b"{\"key\":\"indices/i9\",");
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(store.revision(), last);
        let listing = store.list("indices/").unwrap();
        let found: BTreeMap<String, (Vec<u8>, Revision)> = listing
            .kvs
            .into_iter()
            .map(|kv| (kv.key, (kv.value, kv.mod_revision)))
            .collect();
        assert_eq!(found, acknowledged);
        assert!(!dir.path().join(KEYS_DIR).join("indices%2Fi9.tmp").exists());
    }

    #[test]
    fn watches_deliver_changes_in_revision_order_from_a_revision() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let live = store.watch("indices/", 0).unwrap();
        store
            .compare_and_set("indices/a", Expect::Absent, b"1", 0)
            .unwrap();
        store
            .compare_and_set("nodes/n", Expect::Absent, b"n", 0)
            .unwrap();
        store
            .compare_and_set("indices/b", Expect::Absent, b"2", 0)
            .unwrap();
        store
            .compare_and_set("indices/a", Expect::Any, b"3", 0)
            .unwrap();
        store.delete("indices/b", Expect::Any).unwrap();
        let mut seen = Vec::new();
        for _ in 0..4 {
            match recv(&live) {
                WatchEvent::Put(kv) => seen.push(format!("put {} {}", kv.key, kv.mod_revision)),
                WatchEvent::Delete(kv) => {
                    seen.push(format!("delete {} {}", kv.key, kv.mod_revision))
                }
            }
        }
        assert_eq!(
            seen,
            [
                "put indices/a 1",
                "put indices/b 3",
                "put indices/a 4",
                "delete indices/b 5"
            ]
        );
        // a watch that starts in the past replays from there, then goes on live
        let replay = store.watch("indices/", 3).unwrap();
        assert_eq!(recv(&replay).revision(), 3);
        assert_eq!(recv(&replay).revision(), 4);
        assert_eq!(recv(&replay).revision(), 5);
        store
            .compare_and_set("indices/c", Expect::Absent, b"4", 0)
            .unwrap();
        assert_eq!(recv(&replay).kv().key, "indices/c");
        assert_eq!(recv(&live).kv().key, "indices/c");
        // what happened before the store was opened is not in its history
        drop((live, replay));
        drop(store);
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(
            store.watch("indices/", 2).err(),
            Some(MetaError::Compacted {
                compact_revision: 6
            })
        );
        assert!(store.watch("indices/", 7).is_ok());
        // dropping the store ends its watches
        let watch = store.watch("", 0).unwrap();
        drop(store);
        assert!(watch.recv_timeout(Duration::from_secs(5)).is_err());
    }

    #[test]
    fn an_expired_lease_deletes_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let watch = store.watch("nodes/", 0).unwrap();
        let short = store.grant(Duration::from_millis(100)).unwrap();
        let kept = store.grant(Duration::from_secs(1)).unwrap();
        store
            .compare_and_set("nodes/a", Expect::Absent, b"a", short)
            .unwrap();
        store
            .compare_and_set("nodes/b", Expect::Absent, b"b", kept)
            .unwrap();
        store
            .compare_and_set("nodes/c", Expect::Absent, b"c", 0)
            .unwrap();
        for _ in 0..3 {
            recv(&watch);
        }
        let start = Instant::now();
        // renewed, it outlives its ttl
        while start.elapsed() < Duration::from_millis(1500) {
            store.keep_alive(kept).unwrap();
            thread::sleep(Duration::from_millis(50));
        }
        // the reaper deleted the key without any other call, and the watch saw it
        match recv(&watch) {
            WatchEvent::Delete(kv) => assert_eq!(kv.key, "nodes/a"),
            other => panic!("expected the delete of nodes/a, got {other:?}"),
        }
        assert_eq!(store.get("nodes/a").unwrap(), None);
        assert!(store.get("nodes/b").unwrap().is_some());
        assert_eq!(
            store.keep_alive(short),
            Err(MetaError::LeaseNotFound(short))
        );
        assert_eq!(
            store.compare_and_set("nodes/d", Expect::Absent, b"d", short),
            Err(MetaError::LeaseNotFound(short))
        );
        store.revoke(kept).unwrap();
        assert_eq!(store.get("nodes/b").unwrap(), None);
        assert!(store.get("nodes/c").unwrap().is_some());
        // a key bound to a lease does not outlive the process that held the lease
        let lease = store.grant(Duration::from_secs(60)).unwrap();
        store
            .compare_and_set("nodes/e", Expect::Absent, b"e", lease)
            .unwrap();
        let before = store.revision();
        drop(store);
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(store.get("nodes/e").unwrap(), None);
        assert!(store.get("nodes/c").unwrap().is_some());
        assert_eq!(store.revision(), before + 1);
    }

    #[test]
    fn leadership_passes_on_resign_and_on_lease_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileMetaStore::open(dir.path()).unwrap());
        assert_eq!(store.leader("cluster_manager").unwrap(), None);
        let first = store.grant(Duration::from_secs(60)).unwrap();
        let leader = store
            .campaign("cluster_manager", b"node-1", first, Duration::from_secs(1))
            .unwrap();
        assert_eq!(
            store.leader("cluster_manager").unwrap().unwrap().value,
            b"node-1"
        );
        // a second candidate waits its turn, and gives up when told to
        let second = store.grant(Duration::from_secs(60)).unwrap();
        assert_eq!(
            store.campaign(
                "cluster_manager",
                b"node-2",
                second,
                Duration::from_millis(100)
            ),
            Err(MetaError::Timeout)
        );
        // it wins once the leader resigns
        let waiting = {
            let store = store.clone();
            thread::spawn(move || {
                store.campaign(
                    "cluster_manager",
                    b"node-2",
                    second,
                    Duration::from_secs(10),
                )
            })
        };
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            store.leader("cluster_manager").unwrap().unwrap().value,
            b"node-1"
        );
        store.resign(&leader).unwrap();
        let second_key = waiting.join().unwrap().unwrap();
        assert_eq!(second_key.lease, second);
        assert_eq!(
            store.leader("cluster_manager").unwrap().unwrap().value,
            b"node-2"
        );
        // a third one wins when the leader's lease expires (its node died)
        let short = store.grant(Duration::from_millis(200)).unwrap();
        let third = store.grant(Duration::from_secs(60)).unwrap();
        store.revoke(second).unwrap();
        store
            .campaign("cluster_manager", b"node-4", short, Duration::from_secs(1))
            .unwrap();
        let started = Instant::now();
        let third_key = store
            .campaign("cluster_manager", b"node-3", third, Duration::from_secs(10))
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(third_key.lease, third);
        assert_eq!(
            store.leader("cluster_manager").unwrap().unwrap().value,
            b"node-3"
        );
        // resigning a leadership already lost is harmless
        store.resign(&leader).unwrap();
        assert_eq!(
            store.leader("cluster_manager").unwrap().unwrap().value,
            b"node-3"
        );
    }

    #[test]
    fn a_commit_applies_every_op_at_one_revision_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let a = store
            .compare_and_set("k/a", Expect::Absent, b"a", 0)
            .unwrap();
        store
            .compare_and_set("k/b", Expect::Absent, b"b", 0)
            .unwrap();
        let watch = store.watch("k/", 0).unwrap();
        let put = |key: &str, expect, value: &[u8]| TxnOp::Put {
            key: key.into(),
            expect,
            value: value.to_vec(),
            lease: 0,
        };
        // one failed expect: nothing is written, the conflict names the key
        assert_eq!(
            store.commit(
                None,
                &[
                    put("k/a", Expect::ModRevision(a), b"a2"),
                    put("k/b", Expect::Absent, b"b2"),
                ]
            ),
            Err(MetaError::Conflict {
                key: "k/b".into(),
                current: Some(2)
            })
        );
        assert_eq!(store.revision(), 2);
        assert_eq!(store.get("k/a").unwrap().unwrap().value, b"a");
        // all hold: one revision for puts and deletes alike
        let rev = store
            .commit(
                None,
                &[
                    put("k/a", Expect::ModRevision(a), b"a2"),
                    put("k/c", Expect::Absent, b"c"),
                    TxnOp::Delete {
                        key: "k/b".into(),
                        expect: Expect::Any,
                    },
                ],
            )
            .unwrap();
        assert_eq!(rev, 3);
        assert_eq!(store.revision(), 3);
        assert_eq!(store.get("k/a").unwrap().unwrap().mod_revision, 3);
        assert_eq!(store.get("k/c").unwrap().unwrap().create_revision, 3);
        assert_eq!(store.get("k/b").unwrap(), None);
        let events: Vec<(bool, String, Revision)> = (0..3)
            .map(|_| {
                let event = recv(&watch);
                let put = matches!(event, WatchEvent::Put(_));
                (put, event.kv().key.clone(), event.revision())
            })
            .collect();
        assert_eq!(
            events,
            [
                (true, "k/a".to_string(), 3),
                (true, "k/c".to_string(), 3),
                (false, "k/b".to_string(), 3)
            ]
        );
        // a key written twice is refused, a commit that changes nothing keeps the revision
        assert!(matches!(
            store.commit(
                None,
                &[put("k/x", Expect::Any, b"1"), put("k/x", Expect::Any, b"2")]
            ),
            Err(MetaError::Unavailable(_))
        ));
        assert_eq!(
            store.commit(
                None,
                &[TxnOp::Delete {
                    key: "k/missing".into(),
                    expect: Expect::Any
                }]
            ),
            Ok(3)
        );
        // the whole commit survives a reopen, deletes included
        drop(watch);
        drop(store);
        let store = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(store.revision(), 3);
        assert_eq!(store.get("k/b").unwrap(), None);
        assert_eq!(store.get("k/c").unwrap().unwrap().value, b"c");
    }

    #[test]
    fn a_fenced_commit_needs_the_leadership() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        let lease = store.grant(Duration::from_secs(60)).unwrap();
        let leader = store
            .campaign("manager", b"n1", lease, Duration::from_secs(1))
            .unwrap();
        let write = |value: &[u8]| {
            vec![TxnOp::Put {
                key: "state".into(),
                expect: Expect::Any,
                value: value.to_vec(),
                lease: 0,
            }]
        };
        let rev = store.commit(Some(&leader), &write(b"1")).unwrap();
        assert_eq!(store.get("state").unwrap().unwrap().mod_revision, rev);
        store.resign(&leader).unwrap();
        let not_leader = Err(MetaError::NotLeader {
            key: leader.key.clone(),
        });
        assert_eq!(store.commit(Some(&leader), &write(b"2")), not_leader);
        // leading again is a new key (a new create_revision): the old fence stays stale
        let again = store
            .campaign("manager", b"n1", lease, Duration::from_secs(1))
            .unwrap();
        assert_eq!(again.key, leader.key);
        assert_ne!(again.create_revision, leader.create_revision);
        assert_eq!(store.commit(Some(&leader), &write(b"3")), not_leader);
        assert_eq!(store.get("state").unwrap().unwrap().value, b"1");
        assert!(store.commit(Some(&again), &write(b"4")).is_ok());
        let error: tessera_common::Error = MetaError::NotLeader { key: "k".into() }.into();
        assert_eq!(error.status(), 503);
        assert_eq!(error.kind(), "not_cluster_manager_exception");
    }

    #[test]
    fn a_crash_in_a_commit_keeps_all_of_it() {
        for crash_before_op in [0, 1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let store = FileMetaStore::open(dir.path()).unwrap();
            store
                .compare_and_set("k/a", Expect::Absent, b"a", 0)
                .unwrap();
            store
                .compare_and_set("k/b", Expect::Absent, b"b", 0)
                .unwrap();
            let ops = [
                TxnOp::Put {
                    key: "k/a".into(),
                    expect: Expect::ModRevision(1),
                    value: b"a2".to_vec(),
                    lease: 0,
                },
                TxnOp::Delete {
                    key: "k/b".into(),
                    expect: Expect::Any,
                },
                TxnOp::Put {
                    key: "k/c".into(),
                    expect: Expect::Absent,
                    value: b"c".to_vec(),
                    lease: 0,
                },
            ];
            store.inner.lock().crash_before_op = Some(crash_before_op);
            assert!(store.commit(None, &ops).is_err());
            // the process dies here: part of the commit may be on disk
            std::mem::forget(store);
            assert!(dir.path().join(JOURNAL_FILE).exists());
            let store = FileMetaStore::open(dir.path()).unwrap();
            assert_eq!(store.revision(), 3, "crash before op {crash_before_op}");
            let a = store.get("k/a").unwrap().unwrap();
            assert_eq!(
                (
                    a.value.as_slice(),
                    a.create_revision,
                    a.mod_revision,
                    a.version
                ),
                (&b"a2"[..], 1, 3, 2)
            );
            assert_eq!(store.get("k/b").unwrap(), None);
            let c = store.get("k/c").unwrap().unwrap();
            assert_eq!((c.create_revision, c.mod_revision, c.version), (3, 3, 1));
            assert!(!dir.path().join(JOURNAL_FILE).exists());
            // and the store goes on from there
            assert_eq!(store.compare_and_set("k/d", Expect::Absent, b"d", 0), Ok(4));
            drop(store);
            let store = FileMetaStore::open(dir.path()).unwrap();
            assert_eq!(store.revision(), 4);
        }
        // a commit that writes one key needs no journal
        let dir = tempfile::tempdir().unwrap();
        let store = FileMetaStore::open(dir.path()).unwrap();
        store.inner.lock().crash_before_op = Some(0);
        let one = [TxnOp::Put {
            key: "k".into(),
            expect: Expect::Any,
            value: b"v".to_vec(),
            lease: 0,
        }];
        assert!(store.commit(None, &one).is_err());
        assert!(!dir.path().join(JOURNAL_FILE).exists());
    }
}
