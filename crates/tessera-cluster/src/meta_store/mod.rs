//! The `MetaStore` trait: the one door through which the cluster state is read and written.
//!
//! It is shaped after etcd's v3 API so that the etcd implementation (issue #15) is a thin
//! mapping and the single node's [`file::FileMetaStore`] behaves the same way:
//!
//! - one **revision** counter for the whole store, bumped by every put or delete; each key
//!   carries its `create_revision` and `mod_revision` (etcd's `KeyValue`), and the revision of
//!   the last change is the cluster-state version;
//! - `get` / `list(prefix)` (etcd `Range` with a prefix, returning the header revision);
//! - `compare_and_set` / `delete` are single-key transactions (etcd `Txn` comparing the key's
//!   `mod_revision`, or `create_revision == 0` for "absent", then `Put`/`DeleteRange`);
//! - `commit` is the multi-key one, optionally fenced by a [`LeaderKey`]: every op applies at
//!   one revision or none does, and none does once the caller is no longer the leader, so a
//!   cluster manager that lost its election cannot overwrite what its successor wrote;
//! - `watch(prefix, from_revision)` delivers puts and deletes in revision order (etcd `Watch`
//!   with `start_revision`); a revision the store no longer remembers is `Compacted`;
//! - leases (`grant`, `keep_alive`, `revoke`): keys put with a lease vanish when it expires;
//! - election (`campaign`, `leader`, `resign`): etcd's `v3election` service, which is a key
//!   `<name>/<lease id>` bound to the candidate's lease, the lowest `create_revision` under
//!   `<name>/` leading.
//!
//! The trait is synchronous and object-safe: the node calls it from its management pool or
//! its own threads, never on the async runtime's workers; the etcd implementation runs its
//! client's futures on a runtime of its own and waits for them.

pub mod etcd;
pub mod file;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::mpsc::{Receiver, RecvError, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A store revision (etcd's `int64` revisions are never negative). 0 means "never".
pub type Revision = u64;

/// A lease id (etcd's `int64` lease id). 0 means "no lease".
pub type LeaseId = u64;

/// One key with its value and revisions, as etcd's `mvccpb.KeyValue`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    pub key: String,
    pub value: Vec<u8>,
    /// The revision that created the key (since its last deletion).
    pub create_revision: Revision,
    /// The revision of the last put.
    pub mod_revision: Revision,
    /// Puts since creation, 1 for a new key.
    pub version: u64,
    /// The lease the key is bound to, 0 for none.
    pub lease: LeaseId,
}

/// The keys under a prefix and the store's revision when they were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub kvs: Vec<KeyValue>,
    pub revision: Revision,
}

/// What a conditional write expects the key to be (etcd `Compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The key does not exist (`create_revision == 0`).
    Absent,
    /// The key exists with this `mod_revision`.
    ModRevision(Revision),
    /// No condition: a plain put or delete.
    Any,
}

/// One change seen by a watch (etcd `mvccpb.Event`). A delete carries the key with its
/// `mod_revision` set to the revision of the delete and an empty value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    Put(KeyValue),
    Delete(KeyValue),
}

impl WatchEvent {
    pub fn kv(&self) -> &KeyValue {
        match self {
            WatchEvent::Put(kv) | WatchEvent::Delete(kv) => kv,
        }
    }

    pub fn revision(&self) -> Revision {
        self.kv().mod_revision
    }
}

/// A running watch: the changes under its prefix in revision order until the store closes or
/// the watch is dropped. The changes of one revision (a transaction's keys) arrive as one batch,
/// so whoever folds them into a state never builds half a transaction.
pub struct Watch {
    batches: Receiver<Vec<WatchEvent>>,
    /// The rest of a batch handed out one change at a time.
    pending: RefCell<VecDeque<WatchEvent>>,
}

impl Watch {
    /// A watch fed by a store: one message per revision.
    pub fn new(batches: Receiver<Vec<WatchEvent>>) -> Watch {
        Watch {
            batches,
            pending: RefCell::new(VecDeque::new()),
        }
    }

    /// The changes of the next revision, waiting up to `timeout`; `Disconnected` when the
    /// watch ended (the store closed, or its history was compacted: list again).
    pub fn next_batch(&self, timeout: Duration) -> Result<Vec<WatchEvent>, RecvTimeoutError> {
        let pending: Vec<WatchEvent> = self.pending.borrow_mut().drain(..).collect();
        if !pending.is_empty() {
            return Ok(pending);
        }
        self.batches.recv_timeout(timeout)
    }

    /// The changes of the next revision if they already arrived.
    pub fn try_next_batch(&self) -> Option<Vec<WatchEvent>> {
        let pending: Vec<WatchEvent> = self.pending.borrow_mut().drain(..).collect();
        if !pending.is_empty() {
            return Some(pending);
        }
        self.batches.try_recv().ok()
    }

    /// The next change, one at a time, waiting up to `timeout` for a batch.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<WatchEvent, RecvTimeoutError> {
        loop {
            if let Some(event) = self.pending.borrow_mut().pop_front() {
                return Ok(event);
            }
            let batch = self.batches.recv_timeout(timeout)?;
            self.pending.borrow_mut().extend(batch);
        }
    }

    /// The next change, waiting as long as it takes.
    pub fn recv(&self) -> Result<WatchEvent, RecvError> {
        loop {
            if let Some(event) = self.pending.borrow_mut().pop_front() {
                return Ok(event);
            }
            let batch = self.batches.recv()?;
            self.pending.borrow_mut().extend(batch);
        }
    }
}

/// The key that holds a leadership, as etcd's `LeaderKey`: resign with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderKey {
    pub name: String,
    pub key: String,
    pub create_revision: Revision,
    pub lease: LeaseId,
}

/// One write of a [`MetaStore::commit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOp {
    /// Puts `value` under `key` (bound to `lease` unless 0) if the key is as `expect` says.
    Put {
        key: String,
        expect: Expect,
        value: Vec<u8>,
        lease: LeaseId,
    },
    /// Deletes `key` if it is as `expect` says (a missing key with [`Expect::Any`] is no
    /// change).
    Delete { key: String, expect: Expect },
}

impl TxnOp {
    pub fn key(&self) -> &str {
        match self {
            TxnOp::Put { key, .. } | TxnOp::Delete { key, .. } => key,
        }
    }

    pub fn expect(&self) -> Expect {
        match self {
            TxnOp::Put { expect, .. } | TxnOp::Delete { expect, .. } => *expect,
        }
    }
}

/// Why a store call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// A conditional write found the key otherwise: `current` is its `mod_revision` now
    /// (`None`: absent).
    Conflict {
        key: String,
        current: Option<Revision>,
    },
    /// The watch's start revision is older than the history the store keeps.
    Compacted { compact_revision: Revision },
    /// The lease does not exist (never granted, revoked or expired).
    LeaseNotFound(LeaseId),
    /// The call waited as long as it was allowed to (a campaign that did not win).
    Timeout,
    /// The store cannot be read or written.
    Unavailable(String),
    /// A fenced commit found the leader key `key` gone or re-created: the caller is no longer
    /// the leader.
    NotLeader { key: String },
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Conflict { key, current } => match current {
                Some(rev) => write!(f, "[{key}] was modified at revision [{rev}]"),
                None => write!(f, "[{key}] does not exist"),
            },
            MetaError::Compacted { compact_revision } => write!(
                f,
                "required revision has been compacted (compact revision [{compact_revision}])"
            ),
            MetaError::LeaseNotFound(id) => write!(f, "lease [{id:x}] not found"),
            MetaError::Timeout => write!(f, "timed out"),
            MetaError::Unavailable(why) => write!(f, "metadata store unavailable: {why}"),
            MetaError::NotLeader { key } => write!(
                f,
                "this node is no longer the elected cluster manager (leader key [{key}] is gone)"
            ),
        }
    }
}

impl std::error::Error for MetaError {}

impl From<MetaError> for tessera_common::Error {
    fn from(e: MetaError) -> Self {
        match e {
            MetaError::Conflict { .. } => {
                tessera_common::Error::new("concurrent_modification_exception", 409, e.to_string())
            }
            MetaError::Unavailable(_) | MetaError::Timeout => {
                tessera_common::Error::new("cluster_block_exception", 503, e.to_string())
            }
            MetaError::NotLeader { .. } => {
                tessera_common::Error::new("not_cluster_manager_exception", 503, e.to_string())
            }
            MetaError::Compacted { .. } | MetaError::LeaseNotFound(_) => {
                tessera_common::Error::illegal_state(e.to_string())
            }
        }
    }
}

pub type MetaResult<T> = std::result::Result<T, MetaError>;

/// The cluster's metadata store; see the module documentation for the semantics.
pub trait MetaStore: Send + Sync {
    /// The key's current value.
    fn get(&self, key: &str) -> MetaResult<Option<KeyValue>>;

    /// Every key starting with `prefix`, in key order, with the revision they were read at.
    fn list(&self, prefix: &str) -> MetaResult<Listing>;

    /// Puts `value` under `key` if the key is as `expect` says; binds it to `lease` unless
    /// that is 0. Returns the revision of the put.
    fn compare_and_set(
        &self,
        key: &str,
        expect: Expect,
        value: &[u8],
        lease: LeaseId,
    ) -> MetaResult<Revision>;

    /// Deletes `key` if it is as `expect` says. Returns the revision of the delete; deleting a
    /// missing key with [`Expect::Any`] changes nothing and returns the current revision.
    fn delete(&self, key: &str, expect: Expect) -> MetaResult<Revision>;

    /// Applies every op or none: each op's `expect` must hold, and when `fence` is given the
    /// leader key must still exist with its create_revision (the caller is still the leader).
    /// Returns the revision of the transaction: every key it writes gets that `mod_revision`
    /// and its watch events all carry it. A failed fence is [`MetaError::NotLeader`] (checked
    /// first), a failed expect [`MetaError::Conflict`]; an empty `ops` only checks the fence
    /// and returns the current revision. A key may appear in `ops` once.
    fn commit(&self, fence: Option<&LeaderKey>, ops: &[TxnOp]) -> MetaResult<Revision>;

    /// Changes under `prefix` from `from_revision` on (0: from the next change), in revision
    /// order.
    fn watch(&self, prefix: &str, from_revision: Revision) -> MetaResult<Watch>;

    /// A new lease that expires `ttl` after its last keep-alive.
    fn grant(&self, ttl: Duration) -> MetaResult<LeaseId>;

    /// Renews the lease; returns its ttl.
    fn keep_alive(&self, lease: LeaseId) -> MetaResult<Duration>;

    /// Ends the lease now, deleting its keys.
    fn revoke(&self, lease: LeaseId) -> MetaResult<()>;

    /// Becomes the leader of election `name` with `value`, bound to `lease`: waits up to
    /// `wait` for the leaders before it to resign or lose their leases.
    fn campaign(
        &self,
        name: &str,
        value: &[u8],
        lease: LeaseId,
        wait: Duration,
    ) -> MetaResult<LeaderKey>;

    /// The current leader's key and value.
    fn leader(&self, name: &str) -> MetaResult<Option<KeyValue>>;

    /// Gives the leadership up (deletes the leader key).
    fn resign(&self, leader: &LeaderKey) -> MetaResult<()>;
}

/// The prefix of an election's candidate keys.
pub fn election_prefix(name: &str) -> String {
    format!("{name}/")
}

/// Refuses a commit that writes a key twice, as etcd does ("duplicate key given in txn
/// request"): which of the two writes wins would be up to the store. A caller's bug, so it
/// is not a `Conflict` the caller could retry.
pub(crate) fn check_commit(ops: &[TxnOp]) -> MetaResult<()> {
    let mut keys = std::collections::HashSet::with_capacity(ops.len());
    for op in ops {
        if !keys.insert(op.key()) {
            return Err(MetaError::Unavailable(format!(
                "a commit writes [{}] twice",
                op.key()
            )));
        }
    }
    Ok(())
}
