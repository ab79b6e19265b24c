//! Snapshots (`/_snapshot`): repositories, creating, reading, restoring and deleting snapshots.
//!
//! - `repository`: the registered repositories (custom documents of the cluster state) and
//!   where each one's directory is under `path.repo`.
//! - `store`: the directory's layout: finished snapshots, shard manifests, shared blobs.
//! - `create`: a snapshot of some indices, each shard's commit taken on the node holding its
//!   primary (`tessera_index::snapshot_files`), here or over [`SNAPSHOT_SHARD`].
//! - `restore`: new indices whose primaries fill their directories from the snapshot when they
//!   open (`IndexMetadata::restore`).
//!
//! A snapshot being written, and a deletion being collected, are custom documents too
//! ([`InProgress`], [`DELETIONS`]): the cluster manager decides them against each other, so two
//! snapshots never take the same name, and a deletion never collects a blob that a snapshot
//! being written is about to name. An entry written by a process that no longer runs (its
//! node's ephemeral id is not in the cluster state) counts as gone.

pub mod create;
pub mod repository;
pub mod restore;
pub mod store;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_cluster::ClusterState;
use tessera_common::{Error, Result};

pub use create::{snapshot_shard_here, ShardSnapshotRequest, SNAPSHOT_SHARD};
use repository::{Repository, REPOSITORIES};

/// Snapshots being written: `snapshot_in_progress/<repository>/<snapshot>`.
pub const IN_PROGRESS: &str = "snapshot_in_progress/";
/// Deletions being collected: `snapshot_deletion/<repository>`.
pub const DELETIONS: &str = "snapshot_deletion/";

/// A snapshot being written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InProgress {
    pub repository: String,
    pub snapshot: String,
    pub uuid: String,
    pub indices: Vec<String>,
    pub include_global_state: bool,
    pub metadata: Option<Value>,
    pub start_time_millis: i64,
    pub total_shards: u64,
    pub done_shards: u64,
    pub failed_shards: u64,
    /// The ephemeral id of the node writing it.
    pub node: String,
}

/// A change of repositories and of the snapshots being written or deleted. What holds JSON
/// travels as JSON text (the transport's encoding is not self-describing).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum SnapshotChange {
    PutRepository {
        name: String,
        /// A [`Repository`], as JSON.
        repository: String,
    },
    DeleteRepository {
        names: Vec<String>,
    },
    Start {
        /// An [`InProgress`], as JSON.
        entry: String,
    },
    /// A shard of the snapshot is done (failed or not).
    ShardDone {
        repository: String,
        snapshot: String,
        failed: bool,
    },
    End {
        repository: String,
        snapshot: String,
    },
    StartDeletion {
        repository: String,
        snapshots: Vec<String>,
        /// The ephemeral id of the node deleting it.
        node: String,
    },
    EndDeletion {
        repository: String,
    },
}

fn alive(state: &ClusterState, node: &str) -> bool {
    state.nodes.values().any(|n| n.ephemeral_id == node)
}

/// The snapshots being written by running nodes (of `repository`, or all).
pub fn in_progress(state: &ClusterState, repository: Option<&str>) -> Vec<InProgress> {
    state
        .custom_under(IN_PROGRESS)
        .filter_map(|(_, doc)| serde_json::from_value::<InProgress>(doc.clone()).ok())
        .filter(|entry| alive(state, &entry.node))
        .filter(|entry| repository.is_none_or(|r| r == entry.repository))
        .collect()
}

fn deletion_running(state: &ClusterState, repository: &str) -> bool {
    state
        .custom
        .get(&format!("{DELETIONS}{repository}"))
        .and_then(|doc| doc.0.get("node").and_then(Value::as_str).map(String::from))
        .is_some_and(|node| alive(state, &node))
}

/// A boolean option of a create or restore body: absent → `default`; a boolean or the strings
/// "true"/"false" as OpenSearch accepts them; anything else is OpenSearch's message.
fn body_flag(body: &Value, key: &str, default: bool) -> Result<bool> {
    match &body[key] {
        Value::Null => Ok(default),
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => Err(Error::illegal_argument(format!(
            "malformed [{key}] value [{other}], should be a boolean"
        ))),
    }
}

fn entry_key(repository: &str, snapshot: &str) -> String {
    format!("{IN_PROGRESS}{repository}/{snapshot}")
}

pub fn concurrent(repository: &str, snapshot: &str, what: &str) -> Error {
    Error::new(
        "concurrent_snapshot_execution_exception",
        503,
        format!("[{repository}:{snapshot}] {what}"),
    )
}

pub fn invalid_name(repository: &str, snapshot: &str, why: &str) -> Error {
    Error::new(
        "invalid_snapshot_name_exception",
        400,
        format!("[{repository}:{snapshot}] Invalid snapshot name [{snapshot}], {why}"),
    )
}

impl SnapshotChange {
    pub fn put_repository(name: &str, repository: &Repository) -> SnapshotChange {
        SnapshotChange::PutRepository {
            name: name.to_string(),
            repository: serde_json::to_string(repository).expect("a repository serialises"),
        }
    }

    pub fn start(entry: &InProgress) -> SnapshotChange {
        SnapshotChange::Start {
            entry: serde_json::to_string(entry).expect("an entry serialises"),
        }
    }

    pub fn decide(&self, state: &ClusterState) -> Result<Vec<(String, Option<Value>)>> {
        match self {
            SnapshotChange::PutRepository { name, repository } => {
                if !in_progress(state, Some(name)).is_empty() || deletion_running(state, name) {
                    return Err(repository_in_use(name));
                }
                Ok(vec![(
                    format!("{REPOSITORIES}{name}"),
                    Some(parse_json(repository)?),
                )])
            }
            SnapshotChange::DeleteRepository { names } => {
                let mut docs = Vec::new();
                for name in names {
                    if !in_progress(state, Some(name)).is_empty() || deletion_running(state, name) {
                        return Err(repository_in_use(name));
                    }
                    docs.push((format!("{REPOSITORIES}{name}"), None));
                }
                Ok(docs)
            }
            SnapshotChange::Start { entry } => {
                let entry: InProgress = serde_json::from_value(parse_json(entry)?)
                    .map_err(|e| Error::internal("read a snapshot in progress", e))?;
                let (repository, snapshot) = (&entry.repository, &entry.snapshot);
                repository::get(state, repository)?;
                let running = in_progress(state, Some(repository));
                if running.iter().any(|e| e.snapshot == *snapshot) {
                    return Err(invalid_name(
                        repository,
                        snapshot,
                        "snapshot with the same name is already in-progress",
                    ));
                }
                if !running.is_empty() {
                    return Err(concurrent(
                        repository,
                        snapshot,
                        "a snapshot is already running in this repository: Tessera writes one at a time",
                    ));
                }
                if deletion_running(state, repository) {
                    return Err(concurrent(
                        repository,
                        snapshot,
                        "cannot snapshot while a snapshot deletion is in-progress",
                    ));
                }
                // entries of processes that are gone go now
                let mut docs: Vec<(String, Option<Value>)> = state
                    .custom_under(IN_PROGRESS)
                    .filter_map(|(key, doc)| {
                        let entry = serde_json::from_value::<InProgress>(doc.clone()).ok()?;
                        (!alive(state, &entry.node)).then(|| (format!("{IN_PROGRESS}{key}"), None))
                    })
                    .collect();
                docs.push((
                    entry_key(repository, snapshot),
                    Some(serde_json::to_value(&entry).expect("an entry serialises")),
                ));
                Ok(docs)
            }
            SnapshotChange::ShardDone {
                repository,
                snapshot,
                failed,
            } => {
                let key = entry_key(repository, snapshot);
                let Some(doc) = state.custom.get(&key) else {
                    return Ok(Vec::new());
                };
                let mut entry: InProgress = serde_json::from_value(doc.0.as_ref().clone())
                    .map_err(|e| Error::internal("read a snapshot in progress", e))?;
                entry.done_shards += 1;
                entry.failed_shards += *failed as u64;
                Ok(vec![(
                    key,
                    Some(serde_json::to_value(entry).expect("an entry serialises")),
                )])
            }
            SnapshotChange::End {
                repository,
                snapshot,
            } => Ok(vec![(entry_key(repository, snapshot), None)]),
            SnapshotChange::StartDeletion {
                repository,
                snapshots,
                node,
            } => {
                repository::get(state, repository)?;
                let names = snapshots.join(",");
                let running = in_progress(state, Some(repository));
                if running.iter().any(|e| snapshots.contains(&e.snapshot)) {
                    return Err(concurrent(
                        repository,
                        &names,
                        "cannot delete a snapshot while it is being written",
                    ));
                }
                if !running.is_empty() || deletion_running(state, repository) {
                    return Err(concurrent(
                        repository,
                        &names,
                        "cannot delete a snapshot while another snapshot operation is in-progress in this repository",
                    ));
                }
                Ok(vec![(
                    format!("{DELETIONS}{repository}"),
                    Some(serde_json::json!({"snapshots": snapshots, "node": node})),
                )])
            }
            SnapshotChange::EndDeletion { repository } => {
                Ok(vec![(format!("{DELETIONS}{repository}"), None)])
            }
        }
    }
}

fn parse_json(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::internal("read a snapshot change", e))
}

fn repository_in_use(name: &str) -> Error {
    Error::illegal_state(format!(
        "trying to modify or unregister repository [{name}] that is currently used"
    ))
}

/// Snapshot and repository names (OpenSearch's rules for snapshot names).
pub fn validate_snapshot_name(repository: &str, snapshot: &str) -> Result<()> {
    let why = if snapshot.is_empty() {
        Some("cannot be empty".to_string())
    } else if snapshot.contains(' ') {
        Some("must not contain whitespace".to_string())
    } else if snapshot.contains(',') {
        Some("must not contain ','".to_string())
    } else if snapshot.contains('#') {
        Some("must not contain '#'".to_string())
    } else if snapshot.starts_with('_') {
        Some("must not start with '_'".to_string())
    } else if snapshot.to_lowercase() != snapshot {
        Some("must be lowercase".to_string())
    } else if snapshot
        .chars()
        .any(|c| matches!(c, '\\' | '/' | '*' | '?' | '"' | '<' | '>' | '|'))
    {
        Some(r#"must not contain the following characters [\, /, *, ?, ", <, >, |, ,]"#.to_string())
    } else {
        None
    };
    match why {
        Some(why) => Err(invalid_name(repository, snapshot, &why)),
        None => Ok(()),
    }
}

/// Deleting snapshots.
impl crate::Node {
    /// `DELETE /_snapshot/{repo}/{snapshots}` (names and patterns, comma-separated): removes
    /// the snapshots, then the files of the repository no remaining snapshot names. A name
    /// without a wildcard must name a snapshot; nothing is deleted otherwise. The deletion is
    /// recorded while it runs, so no snapshot of the repository starts meanwhile.
    pub fn delete_snapshots(&self, repository: &str, names: &str) -> Result<()> {
        let (_, location) = create::repository_location(self, repository)?;
        let finished: Vec<String> = store::list(&location)?
            .into_iter()
            .map(|info| info.snapshot)
            .collect();
        let running: Vec<String> = in_progress(&self.cluster_state(), Some(repository))
            .into_iter()
            .map(|entry| entry.snapshot)
            .collect();
        let mut chosen: Vec<String> = Vec::new();
        for pattern in names.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let wildcard = pattern == "_all" || pattern.contains('*');
            let matches = |name: &&String| {
                pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, name)
            };
            let found: Vec<&String> = finished.iter().chain(&running).filter(matches).collect();
            if found.is_empty() && !wildcard {
                return Err(snapshot_missing(repository, pattern));
            }
            for name in found {
                if !chosen.contains(name) {
                    chosen.push(name.clone());
                }
            }
        }
        if chosen.is_empty() {
            return Ok(());
        }
        self.update_custom(crate::custom::CustomChange::Snapshots(
            SnapshotChange::StartDeletion {
                repository: repository.to_string(),
                snapshots: chosen.clone(),
                node: self.local_node().ephemeral_id,
            },
        ))?;
        let deleted = store::delete(&location, &chosen);
        let end = self.update_custom(crate::custom::CustomChange::Snapshots(
            SnapshotChange::EndDeletion {
                repository: repository.to_string(),
            },
        ));
        deleted.and(end)
    }
}

pub fn snapshot_missing(repository: &str, snapshot: &str) -> Error {
    Error::new(
        "snapshot_missing_exception",
        404,
        format!("[{repository}:{snapshot}] is missing"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tessera_cluster::DiscoveryNode;

    fn state() -> ClusterState {
        let node = DiscoveryNode {
            id: "n".into(),
            name: "n".into(),
            ephemeral_id: "alive".into(),
            transport_address: String::new(),
            http_address: String::new(),
            roles: Vec::new(),
        };
        ClusterState::empty("c", "u")
            .builder()
            .put_node(node)
            .put_custom(
                "repository/r",
                Some(json!({"type": "fs", "settings": {"location": "a"}})),
            )
            .build()
    }

    fn entry(snapshot: &str, node: &str) -> InProgress {
        InProgress {
            repository: "r".into(),
            snapshot: snapshot.into(),
            uuid: "u".into(),
            indices: vec![],
            include_global_state: true,
            metadata: None,
            start_time_millis: 0,
            total_shards: 1,
            done_shards: 0,
            failed_shards: 0,
            node: node.into(),
        }
    }

    fn apply(state: &ClusterState, change: SnapshotChange) -> Result<ClusterState> {
        let docs = change.decide(state)?;
        Ok(docs
            .into_iter()
            .fold(state.builder(), |b, (key, doc)| b.put_custom(&key, doc))
            .build())
    }

    #[test]
    fn snapshots_and_deletions_exclude_each_other() {
        let state = state();
        let started = apply(&state, SnapshotChange::start(&entry("s1", "alive"))).unwrap();
        let same = SnapshotChange::start(&entry("s1", "alive")).decide(&started);
        assert_eq!(same.unwrap_err().kind(), "invalid_snapshot_name_exception");
        let other = SnapshotChange::start(&entry("s2", "alive")).decide(&started);
        assert_eq!(
            other.unwrap_err().kind(),
            "concurrent_snapshot_execution_exception"
        );
        let delete = SnapshotChange::StartDeletion {
            repository: "r".into(),
            snapshots: vec!["s0".into()],
            node: "alive".into(),
        };
        assert!(delete.decide(&started).is_err());
        let progressed = apply(
            &started,
            SnapshotChange::ShardDone {
                repository: "r".into(),
                snapshot: "s1".into(),
                failed: false,
            },
        )
        .unwrap();
        assert_eq!(in_progress(&progressed, Some("r"))[0].done_shards, 1);
        let ended = apply(
            &progressed,
            SnapshotChange::End {
                repository: "r".into(),
                snapshot: "s1".into(),
            },
        )
        .unwrap();
        let deleting = apply(&ended, delete.clone()).unwrap();
        assert!(SnapshotChange::start(&entry("s3", "alive"))
            .decide(&deleting)
            .is_err());
        assert!(SnapshotChange::DeleteRepository {
            names: vec!["r".into()]
        }
        .decide(&deleting)
        .is_err());
    }

    #[test]
    fn entries_of_gone_processes_do_not_count() {
        let state = state();
        let stale = apply(&state, SnapshotChange::start(&entry("s1", "gone"))).unwrap();
        assert!(in_progress(&stale, None).is_empty());
        let docs = SnapshotChange::start(&entry("s2", "alive"))
            .decide(&stale)
            .unwrap();
        assert!(docs.contains(&("snapshot_in_progress/r/s1".to_string(), None)));
    }

    #[test]
    fn snapshot_names() {
        assert!(validate_snapshot_name("r", "snap-1").is_ok());
        let upper = validate_snapshot_name("r1", "S5").unwrap_err();
        assert_eq!(
            upper.reason(),
            "[r1:S5] Invalid snapshot name [S5], must be lowercase"
        );
        assert!(validate_snapshot_name("r", "_x").is_err());
        assert!(validate_snapshot_name("r", "a/b").is_err());
    }
}
