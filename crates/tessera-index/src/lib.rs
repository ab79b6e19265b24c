//! One shard on disk (tantivy index, translog, versions, refresh/flush/merge, searcher
//! snapshots) and the index service that owns an index's shards, settings and mapping.

pub mod aliases;
pub mod blocks;
pub mod index_queue;
pub mod index_service;
pub mod index_settings;
pub mod replication;
pub mod resize;
pub mod schema_change;
pub mod segment_ids;
pub mod shard;
pub mod snapshot_files;
pub mod sorted_columns;
pub mod stats;
pub mod translog;
pub mod update_script;
mod wire;

pub use index_service::{
    DocWrite, DocWriteResult, IndexMetadata, IndexService, NodeResources, UpdateRequest,
};
pub use replication::{FileMeta, ReplicationCheckpoint, CHUNK_BYTES};
pub use shard::{
    Conditions, PreparedDoc, Shard, ShardConfig, ShardSnapshot, StoredDoc, WriteOutcome, Written,
};
