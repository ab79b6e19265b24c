//! Search execution: slice planning and collection, the one reduce shared by slices and
//! shards, the shard query/fetch phases behind the [`shard::ShardSearcher`] trait, and the
//! coordinator that scatters a request and gathers the answer.

pub mod can_match;
pub mod collapse;
pub mod collect;
pub mod collect_plan;
pub mod concurrent;
pub mod coordinator;
pub mod decimal_format;
pub mod fetch;
pub mod highlight;
pub mod hit_meta;
pub mod hits;
pub mod knn_slices;
pub mod messages;
pub mod named_queries;
pub mod nested_inner_hits;
pub mod percolate_slots;
pub mod pinned;
pub mod profile;
pub mod query_phase;
pub mod reader_context;
pub mod request;
pub mod rescore;
pub mod scroll_slice;
pub mod search_load;
pub mod shard;
pub mod slice;
pub mod sort;
pub mod sort_keys;
pub mod source_fields;
pub mod suggest;
pub mod transport;
pub mod unavailable;
pub mod url_params;

#[cfg(test)]
mod test_support;

pub use coordinator::{count, search, ResponseOptions, Search, SearchResponse, ShardGroup};
pub use messages::SearchSource;
pub use reader_context::ReaderContexts;
pub use request::SearchRequest;
pub use shard::{LocalShard, ShardSearcher, ShardServices};
pub use transport::LoopbackShard;
pub use unavailable::UnavailableShard;
