//! The names of the actions nodes call on each other: OpenSearch's transport action names, so
//! that logs, task lists and errors (`No handler for action [...]`) read as OpenSearch's do.

/// Whether a shard may match at all (the pre-filter round).
pub const SEARCH_CAN_MATCH: &str = "indices:data/read/search[can_match]";
/// The query phase on one shard.
pub const SEARCH_QUERY: &str = "indices:data/read/search[phase/query]";
/// The fetch phase on one shard: load hits from the reader the query phase kept.
pub const SEARCH_FETCH_ID: &str = "indices:data/read/search[phase/fetch/id]";
/// Release a reader context nobody will fetch from.
pub const SEARCH_FREE_CONTEXT: &str = "indices:data/read/search[free_context]";

/// Every search action, in the order a search uses them.
pub const SEARCH_ACTIONS: [&str; 4] = [
    SEARCH_CAN_MATCH,
    SEARCH_QUERY,
    SEARCH_FETCH_ID,
    SEARCH_FREE_CONTEXT,
];
