//! What the write service takes and gives back, as plain data: [`Operation`]s (a parsed
//! index, create, update or delete addressed to an index by name) with request-level options
//! ([`Refresh`]), and one [`ItemResult`] per operation, in the request's order, that the REST
//! layer renders in OpenSearch's shape.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};
use tessera_index::{DocWrite, DocWriteResult, WriteOutcome};

/// One write addressed to an index by name (`write` holds id, routing, source bytes and the
/// `if_seq_no` / `if_primary_term` / create-only conditions).
#[derive(Clone, Debug)]
pub struct Operation {
    pub index: String,
    pub write: DocWrite,
}

/// `refresh`: `true` (or a bare flag), `wait_for`, `false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refresh {
    None,
    Immediate,
    WaitFor,
}

/// `wait_for_active_shards`: how many copies of a shard (its primary counts) must be active
/// before the primary writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActiveShards {
    /// The primary and every replica the index asks for.
    All,
    Count(u32),
}

impl ActiveShards {
    /// Parses `all` or a count, as OpenSearch does (its error for anything else).
    pub fn parse(text: &str) -> Result<ActiveShards> {
        if text == "all" {
            return Ok(ActiveShards::All);
        }
        text.parse::<u32>().map(ActiveShards::Count).map_err(|_| {
            Error::illegal_argument(format!("cannot parse ActiveShardCount[{text}]")).caused_by(
                Error::new(
                    "number_format_exception",
                    400,
                    format!("For input string: \"{text}\""),
                ),
            )
        })
    }

    /// The copies needed of a shard of an index with `replicas` replicas.
    pub fn needed(self, replicas: u32) -> u32 {
        match self {
            ActiveShards::All => 1 + replicas,
            ActiveShards::Count(count) => count,
        }
    }

    /// As OpenSearch names it in errors: `ALL` or the count.
    pub fn render(self) -> String {
        match self {
            ActiveShards::All => "ALL".to_string(),
            ActiveShards::Count(count) => count.to_string(),
        }
    }
}

/// A write request's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    pub refresh: Refresh,
    /// `wait_for_active_shards`; `None`: the index's `index.write.wait_for_active_shards`.
    pub active_shards: Option<ActiveShards>,
    /// `timeout`: how long a primary waits for enough active copies.
    pub timeout_millis: u64,
}

/// OpenSearch's default `timeout` of a write.
pub const DEFAULT_WRITE_TIMEOUT_MILLIS: u64 = 60_000;

impl From<Refresh> for WriteOptions {
    fn from(refresh: Refresh) -> Self {
        WriteOptions {
            refresh,
            active_shards: None,
            timeout_millis: DEFAULT_WRITE_TIMEOUT_MILLIS,
        }
    }
}

/// The copies of a shard a write reached (`_shards` of a write response).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub total: u32,
    pub successful: u32,
    pub failed: u32,
}

/// A successful write: the engine's result, the index it went to and the copies it reached.
#[derive(Clone, Debug)]
pub struct ItemResponse {
    /// The index name, shared by the items of one shard group.
    pub index: Arc<str>,
    pub result: DocWriteResult,
    /// Zero copies for a noop (nothing was written), as in OpenSearch.
    pub shards: ShardInfo,
}

impl ItemResponse {
    /// The item's HTTP status: 201 created, 404 for a delete that found nothing, else 200.
    pub fn status(&self) -> u16 {
        match self.result.written.outcome {
            WriteOutcome::Created => 201,
            WriteOutcome::NotFound => 404,
            _ => 200,
        }
    }
}

/// The outcome of one operation: each fails alone.
pub type ItemResult = Result<ItemResponse>;

/// `index_not_found_exception` as document APIs report it.
pub fn missing_index(index: &str) -> Error {
    Error::new(
        "index_not_found_exception",
        404,
        format!("no such index [{index}]"),
    )
    .with_meta("index", index.to_string())
    .with_meta("resource.id", index.to_string())
    .with_meta("resource.type", "index_expression")
    .with_meta("index_uuid", "_na_")
}
