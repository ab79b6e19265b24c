//! `PUT /_snapshot/{repo}/{snapshot}`: a snapshot of some indices.
//!
//! The node that takes the request coordinates: it records the snapshot as in progress (the
//! manager refuses a name taken or a repository busy), asks the node holding each shard's
//! primary to copy that shard's commit into the repository ([`SNAPSHOT_SHARD`], or here),
//! and records the finished snapshot in the repository last. Shards are snapshotted one at a
//! time: a snapshot copies files, and copying several at once on the same disks is not faster.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_index::snapshot_files::ShardManifest;

use super::repository::{self, Repository};
use super::store::{self, ShardFailure, ShardResult, SnapshotIndex, SnapshotInfo};
use super::{validate_snapshot_name, InProgress, SnapshotChange};
use crate::custom::CustomChange;
use crate::node::{Node, PrimaryTarget};
use crate::resolve::ResolveOptions;

/// Copy a shard's commit into a repository, on the node holding its primary.
pub const SNAPSHOT_SHARD: &str = "internal:cluster/snapshot/shard";

/// How long the coordinating node waits for one shard's copy.
const SHARD_TIMEOUT: Duration = Duration::from_secs(3600);

/// A [`SNAPSHOT_SHARD`] request: the receiving node finds the repository's directory in its
/// own cluster state and `path.repo`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardSnapshotRequest {
    pub repository: String,
    pub snapshot_uuid: String,
    pub index: String,
    pub index_uuid: String,
    pub shard: u32,
}

/// The body of a create request.
#[derive(Clone, Debug)]
pub struct CreateRequest {
    pub indices: String,
    pub ignore_unavailable: bool,
    pub include_global_state: bool,
    pub metadata: Option<Value>,
    /// Snapshot what can be when some primaries are not active (else refuse).
    pub partial: bool,
}

impl CreateRequest {
    /// The body's fields; OpenSearch ignores the ones it does not know.
    pub fn parse(body: Option<&Value>) -> Result<CreateRequest> {
        let empty = Value::Object(Default::default());
        let body = body.unwrap_or(&empty);
        if !body.is_object() {
            return Err(Error::parsing("request body must be an object"));
        }
        let indices = match &body["indices"] {
            Value::Null => "_all".to_string(),
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_str().map(String::from).ok_or_else(|| {
                        Error::illegal_argument(
                            "malformed indices section, should be an array of strings",
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?
                .join(","),
            _ => {
                return Err(Error::illegal_argument(
                    "malformed indices section, should be an array of strings",
                ))
            }
        };
        let flag = |key: &str, default: bool| super::body_flag(body, key, default);
        let metadata = match &body["metadata"] {
            Value::Null => None,
            Value::Object(_) => Some(body["metadata"].clone()),
            _ => {
                return Err(Error::illegal_argument(
                    "malformed metadata, should be an object",
                ))
            }
        };
        Ok(CreateRequest {
            indices,
            ignore_unavailable: flag("ignore_unavailable", false)?,
            include_global_state: flag("include_global_state", true)?,
            metadata,
            partial: flag("partial", false)?,
        })
    }
}

/// A repository's directory on this node.
pub(crate) fn repository_location(node: &Node, name: &str) -> Result<(Repository, PathBuf)> {
    let repository = repository::get(&node.cluster_state(), name)?;
    let location = repository.location(name, &node.config.path_repo)?;
    Ok((repository, location))
}

/// The receiving side of [`SNAPSHOT_SHARD`] (and the local case): copies this node's primary
/// of the shard into the repository.
pub fn snapshot_shard_here(node: &Node, request: &ShardSnapshotRequest) -> Result<ShardManifest> {
    let (_, location) = repository_location(node, &request.repository)?;
    let index = node
        .index_by_uuid(&request.index_uuid)
        .ok_or_else(|| Error::index_not_found(&request.index))?;
    let shard = index.shard(request.shard)?;
    if shard.is_replica() {
        return Err(Error::illegal_state(format!(
            "[{}][{}] this node holds a replica, not the primary",
            request.index, request.shard
        )));
    }
    shard.snapshot_into(&location, &request.snapshot_uuid, &request.index_uuid)
}

/// One shard's copy, where its primary is.
fn snapshot_shard(node: &Node, request: &ShardSnapshotRequest) -> Result<ShardManifest> {
    match node.primary_target(&request.index, &request.index_uuid, request.shard) {
        PrimaryTarget::Local => snapshot_shard_here(node, request),
        PrimaryTarget::Remote(target) => {
            let coordination = node
                .coordination()
                .ok_or_else(|| Error::illegal_state("a single node has no remote primaries"))?;
            coordination.call_blocking(&target, SNAPSHOT_SHARD, request, SHARD_TIMEOUT)
        }
        PrimaryTarget::Unavailable(error) | PrimaryTarget::Moving(error) => Err(error),
    }
}

/// What a create answers: the finished snapshot, or that it runs in the background.
pub enum Created {
    Done(SnapshotInfo),
    Accepted,
}

impl Node {
    /// `PUT /_snapshot/{repo}/{snapshot}`: with `wait`, returns once the snapshot is finished.
    pub fn create_snapshot(
        self: &Arc<Self>,
        repository: &str,
        snapshot: &str,
        request: CreateRequest,
        wait: bool,
    ) -> Result<Created> {
        validate_snapshot_name(repository, snapshot)?;
        let (_, location) = repository_location(self, repository)?;
        let options = ResolveOptions {
            ignore_unavailable: request.ignore_unavailable,
            ..ResolveOptions::default()
        };
        let indices = self.resolve(&request.indices, &options)?;
        if !request.partial {
            let missing: Vec<String> = indices
                .iter()
                .filter(|index| {
                    let meta = index.metadata();
                    (0..meta.number_of_shards).any(|shard| !self.primary_active(index, shard))
                })
                .map(|index| index.name())
                .collect();
            if !missing.is_empty() {
                return Err(Error::new(
                    "snapshot_exception",
                    500,
                    format!(
                        "[{repository}:{snapshot}] Indices don't have primary shards [{}]",
                        missing.join(", ")
                    ),
                ));
            }
        }
        if store::read(&location, snapshot)?.is_some() {
            return Err(super::invalid_name(
                repository,
                snapshot,
                "snapshot with the same name already exists",
            ));
        }
        let entry = InProgress {
            repository: repository.to_string(),
            snapshot: snapshot.to_string(),
            uuid: tessera_common::ids::random_uuid(),
            indices: indices.iter().map(|i| i.name().to_string()).collect(),
            include_global_state: request.include_global_state,
            metadata: request.metadata.clone(),
            start_time_millis: tessera_common::time::now_millis(),
            total_shards: indices
                .iter()
                .map(|i| i.metadata().number_of_shards as u64)
                .sum(),
            done_shards: 0,
            failed_shards: 0,
            node: self.local_node().ephemeral_id,
        };
        self.update_custom(CustomChange::Snapshots(SnapshotChange::start(&entry)))?;
        let node = self.clone();
        let indices: Vec<_> = indices.into_iter().map(|i| i.metadata()).collect();
        let run = move || {
            let finished = node.write_snapshot(&entry, &indices, &location);
            let end = node.update_custom(CustomChange::Snapshots(SnapshotChange::End {
                repository: entry.repository.clone(),
                snapshot: entry.snapshot.clone(),
            }));
            if let Err(e) = &end {
                eprintln!(
                    "[{}:{}] cannot record the snapshot's end: {e}",
                    entry.repository, entry.snapshot
                );
            }
            finished
        };
        if wait {
            return run().map(Created::Done);
        }
        std::thread::Builder::new()
            .name("snapshot".into())
            .spawn(move || {
                if let Err(e) = run() {
                    eprintln!("snapshot failed: {e}");
                }
            })
            .map_err(|e| Error::internal("start the snapshot thread", e))?;
        Ok(Created::Accepted)
    }

    /// Whether shard `shard` of `index` has an active primary to snapshot.
    fn primary_active(&self, index: &tessera_index::IndexService, shard: u32) -> bool {
        let meta = index.metadata();
        match self.primary_target(&meta.name, &meta.uuid, shard) {
            PrimaryTarget::Local => index.shard(shard).is_ok(),
            PrimaryTarget::Remote(_) => true,
            PrimaryTarget::Unavailable(_) | PrimaryTarget::Moving(_) => false,
        }
    }

    /// Copies every shard, then records the finished snapshot in the repository.
    fn write_snapshot(
        &self,
        entry: &InProgress,
        indices: &[Arc<tessera_index::index_service::IndexMetadata>],
        location: &std::path::Path,
    ) -> Result<SnapshotInfo> {
        let mut written = Vec::new();
        for metadata in indices {
            let mut shards = Vec::new();
            for shard in 0..metadata.number_of_shards {
                let request = ShardSnapshotRequest {
                    repository: entry.repository.clone(),
                    snapshot_uuid: entry.uuid.clone(),
                    index: metadata.name.clone(),
                    index_uuid: metadata.uuid.clone(),
                    shard,
                };
                let result = match snapshot_shard(self, &request) {
                    Ok(manifest) => ShardResult {
                        shard,
                        stats: Some(manifest.stats),
                        failure: None,
                    },
                    Err(e) => ShardResult {
                        shard,
                        stats: None,
                        failure: Some(ShardFailure {
                            reason: e.reason().to_string(),
                            node_id: None,
                            status: status_name(e.status()).to_string(),
                        }),
                    },
                };
                let failed = result.failure.is_some();
                shards.push(result);
                self.update_custom(CustomChange::Snapshots(SnapshotChange::ShardDone {
                    repository: entry.repository.clone(),
                    snapshot: entry.snapshot.clone(),
                    failed,
                }))?;
            }
            written.push(SnapshotIndex {
                name: metadata.name.clone(),
                uuid: metadata.uuid.clone(),
                metadata: metadata.to_json(),
                shards,
            });
        }
        let info = SnapshotInfo {
            snapshot: entry.snapshot.clone(),
            uuid: entry.uuid.clone(),
            indices: written,
            include_global_state: entry.include_global_state,
            metadata: entry.metadata.clone(),
            start_time_millis: entry.start_time_millis,
            end_time_millis: tessera_common::time::now_millis(),
        };
        store::write(location, &info)?;
        Ok(info)
    }
}

/// OpenSearch's `RestStatus` name of an HTTP status.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "BAD_REQUEST",
        404 => "NOT_FOUND",
        409 => "CONFLICT",
        429 => "TOO_MANY_REQUESTS",
        503 => "SERVICE_UNAVAILABLE",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_bodies() {
        let all = CreateRequest::parse(None).unwrap();
        assert_eq!(all.indices, "_all");
        assert!(all.include_global_state);
        let listed = CreateRequest::parse(Some(&json!({
            "indices": ["a", "b*"], "ignore_unavailable": true,
            "include_global_state": false, "metadata": {"by": "me"}, "partial": false
        })))
        .unwrap();
        assert_eq!(listed.indices, "a,b*");
        assert!(listed.ignore_unavailable && !listed.include_global_state && !listed.partial);
        assert_eq!(listed.metadata.unwrap()["by"], "me");
        assert!(CreateRequest::parse(Some(&json!({"indices": 3}))).is_err());
        assert!(CreateRequest::parse(Some(&json!({"metadata": "x"}))).is_err());
    }
}
