//! The node and its cluster-level state: indices registry, index name resolution, cluster
//! settings, health, background refresh, thread pools and process statistics; the write service.

pub mod aliases;
pub mod bulk_by_scroll;
pub mod by_query;
pub mod cluster_settings;
pub mod cluster_state;
pub mod coordination;
pub mod custom;
pub mod data_streams;
pub mod disk;
pub mod health;
pub mod hit_script;
pub mod indexing_pressure;
pub mod ingest;
pub mod node;
pub mod node_filter;
pub mod pending_tasks;
pub mod pinned_search;
pub mod poll;
pub mod preference;
pub mod process_stats;
pub mod promoting;
mod query_lookups;
pub mod read;
pub mod reindex;
pub mod resize;
pub mod resolve;
pub mod rollover;
pub mod scripts;
pub mod search_service;
pub mod snapshots;
pub mod tasks;
pub mod templates;
pub mod write;

pub use indexing_pressure::{IndexingPermit, IndexingPressure};
pub use node::{Node, NodeConfig, Redirect, ShardTransport};
pub use resolve::ResolveOptions;
pub use search_service::{SearchService, SearchTarget};
pub use write::WriteService;
