//! The primary's step of a write: one shard's group of operations, as the message a
//! coordinator sends to the node holding the shard's primary ([`ShardWriteRequest`]) and the
//! answer it gets back ([`ShardWriteResponse`]). Both are plain serialisable data, so that a
//! local primary and a remote one are the same call; here the primary is always local.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};
use tessera_index::translog::Operation;
use tessera_index::{DocWrite, DocWriteResult, IndexService};

use super::operation::{ActiveShards, Refresh, ShardInfo};
use crate::node::Node;

/// The writes of one request bound for one shard, in the request's order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardWriteRequest {
    pub index: String,
    /// The index the coordinator routed with: a primary whose index of that name has another
    /// uuid (deleted and created again meanwhile) refuses the writes.
    pub index_uuid: String,
    pub shard_id: u32,
    pub refresh: Refresh,
    /// `wait_for_active_shards` (`None`: the index's setting).
    #[serde(default)]
    pub active_shards: Option<ActiveShards>,
    /// How long the primary waits for enough active copies.
    #[serde(default = "default_timeout")]
    pub timeout_millis: u64,
    pub operations: Vec<DocWrite>,
}

fn default_timeout() -> u64 {
    super::operation::DEFAULT_WRITE_TIMEOUT_MILLIS
}

/// What the primary did with a [`ShardWriteRequest`]: one result per operation, in order (each
/// fails alone), and the copies the writes reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardWriteResponse {
    pub shards: ShardInfo,
    pub results: Vec<Result<DocWriteResult>>,
}

/// Runs `request` on this node's primary of the shard; an error fails every operation of the
/// request (the index is gone, the shard could not refresh or sync its translog, or, in a
/// cluster, the node cannot show that it is still a member: its lease may have expired, and the
/// cluster may have given its shards to another node).
///
/// This is the primary's own step; in a cluster its replicas' follows (see
/// `write::coordinator::write_here`).
pub fn write_on_node(node: &Node, request: ShardWriteRequest) -> Result<ShardWriteResponse> {
    write_logged_on_node(node, request).map(|(response, _, _)| response)
}

/// [`write_on_node`], also returning the operations the primary logged and the index.
pub(crate) fn write_logged_on_node(
    node: &Node,
    request: ShardWriteRequest,
) -> Result<(ShardWriteResponse, Vec<Operation>, Arc<IndexService>)> {
    node.check_membership_for_writes()?;
    let index = node
        .index(&request.index)
        .filter(|index| index.metadata().uuid == request.index_uuid)
        .ok_or_else(|| Error::index_not_found(&request.index))?;
    let (response, operations) = write_logged(&index, request)?;
    Ok((response, operations, index))
}

/// The primary's write of one shard group: every operation under one hold of the shard's write
/// lock and one translog fsync (`IndexService::write_shard`).
///
/// In a cluster, the operations logged here then go to the replicas
/// (`coordination::replication::replicate_writes`), and `shards` counts the copies that took
/// them.
pub fn write(index: &IndexService, request: ShardWriteRequest) -> Result<ShardWriteResponse> {
    write_logged(index, request).map(|(response, _)| response)
}

/// [`write`], also returning the operations the primary logged, for its replicas.
fn write_logged(
    index: &IndexService,
    request: ShardWriteRequest,
) -> Result<(ShardWriteResponse, Vec<Operation>)> {
    let ShardWriteRequest {
        shard_id,
        refresh,
        operations,
        ..
    } = request;
    let (results, logged) =
        index.write_shard_replicated(shard_id, operations, refresh != Refresh::None)?;
    let meta = index.metadata();
    // `wait_for` waits for a refresh rather than forcing one, and says so
    let forced = refresh == Refresh::Immediate;
    let results = results
        .into_iter()
        .map(|result| match result {
            Ok(mut written) => {
                written.forced_refresh &= forced;
                Ok(written)
            }
            Err(error) => Err(with_uuid(error, &meta.uuid)),
        })
        .collect();
    let response = ShardWriteResponse {
        shards: ShardInfo {
            total: 1 + meta.number_of_replicas(),
            successful: 1,
            failed: 0,
        },
        results,
    };
    Ok((response, logged))
}

/// Adds the index uuid that OpenSearch puts on shard-level document errors.
fn with_uuid(error: Error, uuid: &str) -> Error {
    match error.kind() {
        "version_conflict_engine_exception" | "document_missing_exception"
            if error.meta("index_uuid").is_none() =>
        {
            error.with_meta("index_uuid", uuid.to_string())
        }
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;
    use tessera_index::Conditions;

    use super::*;
    use crate::write::tests::{create, start};

    #[test]
    fn shard_requests_and_responses_round_trip_through_postcard() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        create(&node, "p", 1);
        let uuid = node.index("p").unwrap().metadata().uuid.clone();
        let request = ShardWriteRequest {
            index: "p".into(),
            index_uuid: uuid.clone(),
            shard_id: 0,
            refresh: Refresh::Immediate,
            active_shards: None,
            timeout_millis: 1000,
            operations: vec![
                DocWrite::Index {
                    id: Some("1".into()),
                    auto_generated_id: false,
                    source: Bytes::from(json!({"a": 1}).to_string()),
                    routing: Some("r".into()),
                    conditions: Conditions::default(),
                },
                DocWrite::Index {
                    id: Some("1".into()),
                    auto_generated_id: false,
                    source: Bytes::from_static(b"{}"),
                    routing: None,
                    conditions: Conditions {
                        create_only: true,
                        ..Conditions::default()
                    },
                },
            ],
        };
        let bytes = postcard::to_allocvec(&request).unwrap();
        let received: ShardWriteRequest = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{received:?}"), format!("{request:?}"));
        let response = write_on_node(&node, received).unwrap();
        assert_eq!(
            response.shards,
            ShardInfo {
                total: 1,
                successful: 1,
                failed: 0
            }
        );
        let bytes = postcard::to_allocvec(&response).unwrap();
        let back: ShardWriteResponse = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{response:?}"));
        let written = back.results[0].as_ref().unwrap();
        assert_eq!((written.id.as_str(), written.forced_refresh), ("1", true));
        let conflict = back.results[1].as_ref().unwrap_err();
        assert_eq!(conflict.kind(), "version_conflict_engine_exception");
        assert_eq!(conflict.meta("index_uuid"), Some(&json!(uuid)));
        // an index of that name with another uuid (deleted and created again) refuses the writes
        let stale = ShardWriteRequest {
            index_uuid: "another".into(),
            ..request
        };
        assert_eq!(
            write_on_node(&node, stale).unwrap_err().kind(),
            "index_not_found_exception"
        );
    }
}
