//! What this node knows of how its shard copies came to be, for `_recovery`,
//! `_cat/recovery` and `_cat/segment_replication`: OpenSearch operators read these to see a
//! replica copying from its primary, and how far behind the primary a replica is.
//!
//! - [`Recoveries`] keeps the latest recovery of each copy this node holds (one per copy: a
//!   node holds at most one copy of a shard), as OpenSearch's `RecoveryState`: a replica's
//!   `PEER` recovery from its primary's node (stages `INIT`, `INDEX` while files are copied,
//!   `FINALIZE` once the last is, while the commit is installed, `DONE`, with the files and
//!   bytes it reused and copied), and a primary opened here (`EXISTING_STORE` when its
//!   directory held a commit, `EMPTY_STORE` for a new one). A failed
//!   recovery keeps its stage, with its failure and stop time; the next try replaces it.
//!   Segment replication has no operations to replay: the translog figures are all 0.
//! - [`ReplicaLag`] keeps, per replica copy, the newest checkpoint its primary published to it
//!   and when that arrived, and how long the last apply took: with the checkpoint the replica
//!   holds, that says how many checkpoints and bytes it is behind.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tessera_cluster::DiscoveryNode;
use tessera_index::index_service::ShardSlot;
use tessera_index::replication::{FileMeta, ReplicationCheckpoint};
use tessera_index::IndexService;

/// How a copy got its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecoveryType {
    /// A replica, from its primary's node.
    Peer,
    /// A primary opened on a directory that held a commit.
    ExistingStore,
    /// A new primary.
    EmptyStore,
    /// A restored index's new primary, filled from a snapshot.
    Snapshot,
}

impl RecoveryType {
    /// OpenSearch's name: `PEER`, `EXISTING_STORE`, `EMPTY_STORE`.
    pub fn name(self) -> &'static str {
        match self {
            RecoveryType::Peer => "PEER",
            RecoveryType::ExistingStore => "EXISTING_STORE",
            RecoveryType::EmptyStore => "EMPTY_STORE",
            RecoveryType::Snapshot => "SNAPSHOT",
        }
    }
}

/// Where a recovery is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Stage {
    /// Started: asking the primary for a commit.
    Init,
    /// Copying the files the copy lacks.
    Index,
    /// Installing the copied commit.
    Finalize,
    /// Done: the copy holds the commit.
    Done,
}

impl Stage {
    /// OpenSearch's name: `INIT`, `INDEX`, `FINALIZE`, `DONE`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Init => "INIT",
            Stage::Index => "INDEX",
            Stage::Finalize => "FINALIZE",
            Stage::Done => "DONE",
        }
    }
}

/// One recovery of a shard copy on this node (the target).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryState {
    pub index_uuid: String,
    pub index: String,
    pub shard: u32,
    pub primary: bool,
    pub kind: RecoveryType,
    pub stage: Stage,
    pub start_millis: i64,
    /// When it finished (done, or failed).
    pub stop_millis: Option<i64>,
    /// The node copied from (a `PEER` recovery's primary).
    pub source: Option<DiscoveryNode>,
    pub target: DiscoveryNode,
    /// The replica's allocation id (a `PEER` recovery's).
    #[serde(default)]
    pub allocation_id: Option<String>,
    /// The files of the commit recovered to, and of those the ones the copy already held.
    pub files_total: u64,
    pub files_reused: u64,
    /// The files copied so far, entirely.
    pub files_recovered: u64,
    pub bytes_total: u64,
    pub bytes_reused: u64,
    pub bytes_recovered: u64,
    /// Each file of the commit recovered to (`_recovery?detailed`).
    #[serde(default)]
    pub files: Vec<FileDetail>,
    /// When the file copy started, and ended.
    pub index_start_millis: Option<i64>,
    pub index_stop_millis: Option<i64>,
    /// Why it failed.
    pub failure: Option<String>,
    /// A `SNAPSHOT` recovery's snapshot.
    #[serde(default)]
    pub snapshot: Option<tessera_index::snapshot_files::RestoreSource>,
}

/// One file of a recovery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDetail {
    pub name: String,
    pub length: u64,
    /// The copy held it already.
    pub reused: bool,
    /// The bytes of it copied so far.
    pub recovered: u64,
}

impl RecoveryState {
    /// A recovery of this node's copy of `shard` of `index`, starting at `now` (a `PEER`
    /// recovery's copy is a replica, the others' a primary).
    pub fn new(
        index: &IndexService,
        shard: u32,
        kind: RecoveryType,
        source: Option<DiscoveryNode>,
        target: DiscoveryNode,
        now: i64,
    ) -> RecoveryState {
        let meta = index.metadata();
        RecoveryState {
            index_uuid: meta.uuid.clone(),
            index: meta.name.clone(),
            ..RecoveryState::blank(shard, kind, source, target, now)
        }
    }

    /// [`RecoveryState::new`] without its index.
    pub fn blank(
        shard: u32,
        kind: RecoveryType,
        source: Option<DiscoveryNode>,
        target: DiscoveryNode,
        now: i64,
    ) -> RecoveryState {
        RecoveryState {
            index_uuid: String::new(),
            index: String::new(),
            shard,
            primary: kind != RecoveryType::Peer,
            kind,
            stage: Stage::Init,
            start_millis: now,
            stop_millis: None,
            source,
            target,
            allocation_id: None,
            files_total: 0,
            files_reused: 0,
            files_recovered: 0,
            bytes_total: 0,
            bytes_reused: 0,
            bytes_recovered: 0,
            files: Vec::new(),
            index_start_millis: None,
            index_stop_millis: None,
            failure: None,
            snapshot: None,
        }
    }

    /// A `SNAPSHOT` recovery that completed: every file of the snapshot's commit was copied
    /// (the figures come from the repository's manifest, when it is still there).
    pub fn snapshot_copied(&mut self) {
        let Some(manifest) = self
            .snapshot
            .as_ref()
            .and_then(|s| s.manifest(self.shard).ok())
        else {
            return;
        };
        self.files = manifest
            .files
            .iter()
            .map(|file| FileDetail {
                name: file.name.clone(),
                length: file.length,
                reused: false,
                recovered: file.length,
            })
            .collect();
        self.files_total = self.files.len() as u64;
        self.files_recovered = self.files_total;
        self.bytes_total = manifest.files.iter().map(|f| f.length).sum();
        self.bytes_recovered = self.bytes_total;
    }

    /// How long it took, or has taken so far.
    pub fn total_millis(&self, now: i64) -> u64 {
        (self.stop_millis.unwrap_or(now) - self.start_millis).max(0) as u64
    }

    /// How long the file copy took, or has taken so far (0 before it starts).
    pub fn index_millis(&self, now: i64) -> u64 {
        self.index_start_millis.map_or(0, |start| {
            (self.index_stop_millis.unwrap_or(now) - start).max(0) as u64
        })
    }
}

/// OpenSearch's percent of a recovery's files or bytes: 0 when there is nothing at all, 100
/// when everything not reused is copied.
pub fn recovered_percent(total: u64, reused: u64, recovered: u64) -> f64 {
    let to_recover = total.saturating_sub(reused);
    if total == 0 {
        0.0
    } else if recovered >= to_recover {
        100.0
    } else {
        recovered as f64 * 100.0 / to_recover as f64
    }
}

/// The newest checkpoint published to one replica copy, and how its applies went.
#[derive(Clone, Debug, Default)]
pub struct ReplicaLag {
    /// The newest checkpoint the primary published to this copy, and when it arrived.
    pub published: Option<(ReplicationCheckpoint, i64)>,
    /// How long the last applied publication took, from its arrival to its apply.
    pub last_completed_millis: u64,
}

/// How far a replica is behind the newest checkpoint published to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behind {
    /// Generations between the held checkpoint and the newest published, under the same
    /// primary term; 1 when the newest is of a newer term (it replaces what is held).
    pub checkpoints: u64,
    /// The size of the files of the newest published checkpoint the replica lacks.
    pub bytes: u64,
    /// How long since the newest publication not yet applied arrived (0 when none).
    pub current_lag_millis: u64,
    /// How long the last applied publication took, from its arrival to its apply.
    pub last_completed_lag_millis: u64,
}

impl ReplicaLag {
    /// How far behind a replica holding `held` is; `missing` answers the files of a checkpoint
    /// it lacks (`Shard::missing_files`).
    pub fn behind(
        &self,
        held: Option<&ReplicationCheckpoint>,
        missing: impl Fn(&ReplicationCheckpoint) -> Vec<FileMeta>,
        now: i64,
    ) -> Behind {
        let mut behind = Behind {
            checkpoints: 0,
            bytes: 0,
            current_lag_millis: 0,
            last_completed_lag_millis: self.last_completed_millis,
        };
        let Some((newest, arrived)) = &self.published else {
            return behind;
        };
        let key = |c: &ReplicationCheckpoint| (c.primary_term, c.generation);
        if held.is_some_and(|held| key(held) >= key(newest)) {
            return behind;
        }
        behind.checkpoints = match held {
            Some(held) if held.primary_term == newest.primary_term => {
                newest.generation - held.generation
            }
            _ => 1,
        };
        behind.bytes = missing(newest).iter().map(|f| f.length).sum();
        behind.current_lag_millis = (now - arrived).max(0) as u64;
        behind
    }
}

/// A primary being opened on this node (see [`Recoveries::opening_primary`]).
pub struct Opening {
    index_uuid: String,
    index: String,
    shard: u32,
    kind: RecoveryType,
    start_millis: i64,
    snapshot: Option<tessera_index::snapshot_files::RestoreSource>,
}

type Copy = (String, u32);

/// The recoveries and replica lags of this node's copies, by (index uuid, shard).
#[derive(Default)]
pub struct Recoveries {
    states: Mutex<HashMap<Copy, RecoveryState>>,
    /// A done recovery of a replica recovering again under the same allocation id (the node
    /// may start a recovery again before the routing shows the first one's end): it stands
    /// unless the new one copies something.
    earlier: Mutex<HashMap<Copy, RecoveryState>>,
    lags: Mutex<HashMap<Copy, ReplicaLag>>,
}

impl Recoveries {
    /// Records a new recovery of a copy, replacing the one before (see
    /// [`Recoveries::finished`] for a replica's recovery repeated under its allocation id).
    pub fn start(&self, state: RecoveryState) {
        let key = (state.index_uuid.clone(), state.shard);
        let allocation_id = state.allocation_id.clone();
        let before = self.states.lock().unwrap().insert(key.clone(), state);
        let mut earlier = self.earlier.lock().unwrap();
        match before {
            Some(before)
                if before.stage == Stage::Done
                    && allocation_id.is_some()
                    && before.allocation_id == allocation_id =>
            {
                earlier.insert(key, before);
            }
            // a repeat of a repeat keeps the first
            _ if earlier
                .get(&key)
                .is_some_and(|e| allocation_id.is_some() && e.allocation_id == allocation_id) => {}
            _ => {
                earlier.remove(&key);
            }
        }
    }

    /// Changes the recovery of a copy, when there is one.
    pub fn update(&self, index_uuid: &str, shard: u32, change: impl FnOnce(&mut RecoveryState)) {
        if let Some(state) = self
            .states
            .lock()
            .unwrap()
            .get_mut(&(index_uuid.to_string(), shard))
        {
            change(state);
        }
    }

    /// A primary about to be opened on this node: `EXISTING_STORE` when its directory holds a
    /// commit, else `EMPTY_STORE`; [`Recoveries::opened`] records it once open. None when the
    /// copy is open already (or opening): an open asked for twice records the first only.
    pub fn opening_primary(&self, index: &IndexService, shard: u32) -> Option<Opening> {
        if !matches!(
            index.shard_slots().get(shard as usize),
            Some(ShardSlot::Unallocated)
        ) {
            return None;
        }
        let commit = index
            .path()
            .join(shard.to_string())
            .join("index")
            .join("meta.json");
        let meta = index.metadata();
        let kind = match &meta.restore {
            _ if commit.exists() => RecoveryType::ExistingStore,
            Some(_) => RecoveryType::Snapshot,
            None => RecoveryType::EmptyStore,
        };
        Some(Opening {
            index_uuid: meta.uuid.clone(),
            index: meta.name.clone(),
            shard,
            kind,
            start_millis: tessera_common::time::now_millis(),
            snapshot: meta
                .restore
                .clone()
                .filter(|_| kind == RecoveryType::Snapshot),
        })
    }

    /// Records the primary [`Recoveries::opening_primary`] announced: done when it opened,
    /// failed when it did not.
    pub fn opened(&self, opening: Option<Opening>, target: &DiscoveryNode, slot: &ShardSlot) {
        let Some(opening) = opening else {
            return;
        };
        let failure = match slot {
            ShardSlot::Started(copy) if !copy.is_replica() => None,
            ShardSlot::Failed(failure) => Some(failure.error.to_string()),
            _ => return,
        };
        let (uuid, shard) = (opening.index_uuid.clone(), opening.shard);
        let mut state = RecoveryState {
            index_uuid: opening.index_uuid,
            index: opening.index,
            snapshot: opening.snapshot,
            ..RecoveryState::blank(
                opening.shard,
                opening.kind,
                None,
                target.clone(),
                opening.start_millis,
            )
        };
        if failure.is_none() {
            state.snapshot_copied();
        }
        self.start(state);

        self.finished(&uuid, shard, failure, tessera_common::time::now_millis());
    }

    /// The recovery now knows what it copies: the commit's files, less those held.
    pub fn copying(
        &self,
        index_uuid: &str,
        shard: u32,
        files: &[FileMeta],
        missing: &[FileMeta],
        now: i64,
    ) {
        self.update(index_uuid, shard, |state| {
            state.stage = Stage::Index;
            state.index_start_millis = Some(now);
            state.files_total = files.len() as u64;
            state.bytes_total = files.iter().map(|f| f.length).sum();
            state.files_reused = state.files_total - missing.len() as u64;
            state.bytes_reused = state.bytes_total - missing.iter().map(|f| f.length).sum::<u64>();
            state.files = files
                .iter()
                .map(|file| FileDetail {
                    name: file.name.clone(),
                    length: file.length,
                    reused: !missing.iter().any(|m| m.name == file.name),
                    recovered: 0,
                })
                .collect();
        });
    }

    /// A chunk of `file` came at `now`, ending at `end`.
    pub fn copied(
        &self,
        index_uuid: &str,
        shard: u32,
        file: &FileMeta,
        (bytes, end): (u64, u64),
        now: i64,
    ) {
        self.update(index_uuid, shard, |state| {
            state.bytes_recovered += bytes;
            if let Some(detail) = state.files.iter_mut().find(|f| f.name == file.name) {
                detail.recovered += bytes;
            }
            if end >= file.length {
                state.files_recovered += 1;
                // the last file copied: the commit is installed next
                if state.files_recovered >= state.files_total - state.files_reused {
                    state.stage = Stage::Finalize;
                    state.index_stop_millis = Some(now);
                }
            }
        });
    }

    /// The recovery ended: done (every file it lacked copied), or failed. A repeated recovery
    /// of a replica (same allocation id as a done one) that copied nothing, or failed, gives
    /// way to the done one: that is how the copy got its files.
    pub fn finished(&self, index_uuid: &str, shard: u32, failure: Option<String>, now: i64) {
        let key = (index_uuid.to_string(), shard);
        if let Some(earlier) = self.earlier.lock().unwrap().remove(&key) {
            let mut states = self.states.lock().unwrap();
            if states
                .get(&key)
                .is_some_and(|s| failure.is_some() || s.files_reused == s.files_total)
            {
                states.insert(key, earlier);
                return;
            }
        }
        self.update(index_uuid, shard, |state| {
            state.stop_millis = Some(now);
            if state.index_start_millis.is_some() && state.index_stop_millis.is_none() {
                state.index_stop_millis = Some(now);
            }
            match failure {
                None => {
                    state.stage = Stage::Done;
                    state.files_recovered = state.files_total - state.files_reused;
                    state.bytes_recovered = state.bytes_total - state.bytes_reused;
                    for file in state.files.iter_mut().filter(|f| !f.reused) {
                        file.recovered = file.length;
                    }
                }
                Some(failure) => state.failure = Some(failure),
            }
        });
    }

    /// The recoveries of the copies of `index_uuids`.
    pub fn of(&self, index_uuids: &[String]) -> Vec<RecoveryState> {
        let mut states: Vec<RecoveryState> = self
            .states
            .lock()
            .unwrap()
            .values()
            .filter(|state| index_uuids.contains(&state.index_uuid))
            .cloned()
            .collect();
        states.sort_by(|a, b| (&a.index_uuid, a.shard).cmp(&(&b.index_uuid, b.shard)));
        states
    }

    /// A checkpoint published to this node's replica arrived.
    pub fn published(&self, index_uuid: &str, shard: u32, checkpoint: &ReplicationCheckpoint) {
        let now = tessera_common::time::now_millis();
        let mut lags = self.lags.lock().unwrap();
        let lag = lags.entry((index_uuid.to_string(), shard)).or_default();
        let key = |c: &ReplicationCheckpoint| (c.primary_term, c.generation);
        if lag
            .published
            .as_ref()
            .is_none_or(|(newest, _)| key(checkpoint) > key(newest))
        {
            lag.published = Some((checkpoint.clone(), now));
        }
    }

    /// A publication that arrived at `arrived` is applied (or was not newer than what the
    /// replica held).
    pub fn applied(&self, index_uuid: &str, shard: u32, arrived: i64) {
        let now = tessera_common::time::now_millis();
        if let Some(lag) = self
            .lags
            .lock()
            .unwrap()
            .get_mut(&(index_uuid.to_string(), shard))
        {
            lag.last_completed_millis = (now - arrived).max(0) as u64;
        }
    }

    /// The lag of this node's replica of a shard.
    pub fn lag(&self, index_uuid: &str, shard: u32) -> ReplicaLag {
        self.lags
            .lock()
            .unwrap()
            .get(&(index_uuid.to_string(), shard))
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.into(),
            name: id.into(),
            ephemeral_id: String::new(),
            transport_address: "127.0.0.1:9300".into(),
            http_address: "127.0.0.1:9200".into(),
            roles: vec![],
        }
    }

    fn file(name: &str, length: u64) -> FileMeta {
        FileMeta {
            name: name.into(),
            length,
            checksum: 0,
        }
    }

    fn checkpoint(term: u64, generation: u64, files: Vec<FileMeta>) -> ReplicationCheckpoint {
        ReplicationCheckpoint {
            primary_term: term,
            generation,
            max_seq_no: None,
            files,
            meta_json: vec![],
        }
    }

    fn peer(shard: u32) -> RecoveryState {
        RecoveryState {
            index_uuid: "u".into(),
            index: "i".into(),
            ..RecoveryState::blank(shard, RecoveryType::Peer, Some(node("a")), node("b"), 1_000)
        }
    }

    #[test]
    fn a_peer_recovery_counts_what_it_reuses_and_copies() {
        let recoveries = Recoveries::default();
        recoveries.start(peer(0));
        let files = vec![file("a", 100), file("b", 50), file("c", 10)];
        let missing = vec![file("b", 50), file("c", 10)];
        recoveries.copying("u", 0, &files, &missing, 1_010);
        let state = &recoveries.of(&["u".into()])[0];
        assert_eq!(state.stage, Stage::Index);
        assert_eq!((state.files_total, state.files_reused), (3, 1));
        assert_eq!((state.bytes_total, state.bytes_reused), (160, 100));
        recoveries.copied("u", 0, &missing[0], (30, 30), 1_020);
        recoveries.copied("u", 0, &missing[0], (20, 50), 1_030);
        let state = &recoveries.of(&["u".into()])[0];
        assert_eq!((state.files_recovered, state.bytes_recovered), (1, 50));
        assert_eq!(state.stage, Stage::Index);
        let details: Vec<(&str, bool, u64)> = state
            .files
            .iter()
            .map(|f| (f.name.as_str(), f.reused, f.recovered))
            .collect();
        assert_eq!(details, [("a", true, 0), ("b", false, 50), ("c", false, 0)]);
        assert_eq!(recovered_percent(160, 100, 50).round(), 83.0);
        recoveries.copied("u", 0, &missing[1], (10, 10), 1_040);
        assert_eq!(recoveries.of(&["u".into()])[0].stage, Stage::Finalize);
        recoveries.finished("u", 0, None, 1_050);
        let state = &recoveries.of(&["u".into()])[0];
        assert_eq!(state.stage, Stage::Done);
        assert_eq!((state.files_recovered, state.bytes_recovered), (2, 60));
        assert_eq!(state.files[2].recovered, 10);
        assert_eq!(state.total_millis(9_999), 50);
        assert_eq!(state.index_millis(9_999), 30);
        assert_eq!(recovered_percent(160, 100, 60), 100.0);
        assert_eq!(recovered_percent(0, 0, 0), 0.0);
    }

    #[test]
    fn only_the_latest_recovery_of_a_copy_stays_and_a_failure_is_kept() {
        let recoveries = Recoveries::default();
        recoveries.start(peer(0));
        recoveries.finished("u", 0, Some("gone".into()), 1_100);
        let state = &recoveries.of(&["u".into()])[0];
        assert_eq!(
            (state.stage, state.failure.as_deref()),
            (Stage::Init, Some("gone"))
        );
        recoveries.start(peer(0));
        recoveries.start(peer(1));
        let states = recoveries.of(&["u".into()]);
        assert_eq!(states.len(), 2);
        assert_eq!(states[0].failure, None);
        assert!(recoveries.of(&["other".into()]).is_empty());
    }

    #[test]
    fn a_repeated_recovery_that_copies_nothing_leaves_the_first() {
        let recoveries = Recoveries::default();
        let with_id = |id: &str| RecoveryState {
            allocation_id: Some(id.into()),
            ..peer(0)
        };
        let files = vec![file("a", 100)];
        recoveries.start(with_id("x"));
        recoveries.copying("u", 0, &files, &files, 1_010);
        recoveries.finished("u", 0, None, 1_050);
        // again, everything held: the first stands
        for failure in [None, Some("gone".to_string())] {
            recoveries.start(with_id("x"));
            recoveries.copying("u", 0, &files, &[], 2_010);
            assert_eq!(recoveries.of(&["u".into()])[0].stage, Stage::Index);
            recoveries.finished("u", 0, failure, 2_050);
            let state = &recoveries.of(&["u".into()])[0];
            assert_eq!(
                (state.bytes_recovered, state.stop_millis),
                (100, Some(1_050))
            );
        }
        // a new allocation's recovery replaces it, whatever it copied
        recoveries.start(with_id("y"));
        recoveries.copying("u", 0, &files, &[], 3_010);
        recoveries.finished("u", 0, None, 3_050);
        let state = &recoveries.of(&["u".into()])[0];
        assert_eq!((state.bytes_reused, state.stop_millis), (100, Some(3_050)));
    }

    #[test]
    fn a_replica_is_behind_the_newest_checkpoint_it_was_published() {
        let recoveries = Recoveries::default();
        let held = checkpoint(1, 3, vec![file("a", 100)]);
        assert_eq!(
            recoveries.lag("u", 0).behind(Some(&held), |_| vec![], 0),
            Behind {
                checkpoints: 0,
                bytes: 0,
                current_lag_millis: 0,
                last_completed_lag_millis: 0
            }
        );
        let newest = checkpoint(1, 5, vec![file("a", 100), file("b", 40)]);
        recoveries.published("u", 0, &newest);
        // an older one arriving late does not replace it
        recoveries.published("u", 0, &checkpoint(1, 4, vec![]));
        let lag = recoveries.lag("u", 0);
        let arrived = lag.published.as_ref().unwrap().1;
        let behind = lag.behind(Some(&held), |_| vec![file("b", 40)], arrived + 7);
        assert_eq!(
            (behind.checkpoints, behind.bytes, behind.current_lag_millis),
            (2, 40, 7)
        );
        // a new primary's checkpoint replaces what is held
        let behind = lag.behind(Some(&checkpoint(0, 9, vec![])), |_| vec![], arrived);
        assert_eq!(behind.checkpoints, 1);
        // applied: nothing behind, and the lag of the last apply stays
        recoveries.applied("u", 0, arrived - 5);
        let lag = recoveries.lag("u", 0);
        let behind = lag.behind(Some(&newest), |_| vec![], arrived + 100);
        assert_eq!((behind.checkpoints, behind.current_lag_millis), (0, 0));
        assert!(behind.last_completed_lag_millis >= 5);
    }
}
