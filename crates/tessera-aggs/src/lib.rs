//! Aggregations: the OpenSearch aggregation DSL, collected slice by slice on tantivy's columns
//! and reduced with one function at every level.
//!
//! The life of an aggregation:
//! 1. [`parse_aggregations`] turns `aggs` into [`AggRequest`]s (OpenSearch's parse errors).
//! 2. Per shard request, [`PreparedAggs::prepare`] resolves fields against the shard's mapping.
//! 3. Per slice, [`PreparedAggs::slice_aggregator`] makes collectors that read blocks of
//!    matching documents; [`SliceAggregator::build`] gives the slice's [`InternalAggregations`].
//! 4. The shard reduces its slices and trims ([`PreparedAggs::shard_result`]); the coordinator
//!    reduces shards with the same [`InternalAggregations::reduce`] and renders the final JSON
//!    once ([`InternalAggregations::render`]).
//! 5. Pipeline aggregations, parsed apart and never sent to collectors, run on that final JSON
//!    ([`pipeline::apply`]).
//!
//! Intermediate results never depend on how documents were split into slices or shards: slices
//! keep every bucket, and only the shard step trims (as OpenSearch does without concurrency).

pub mod bucket;
mod collector;
pub use collector::SortedSegment;
pub mod format;
mod internal;
pub mod metric;
mod ords;
pub mod pipeline;
mod prepare;
pub mod request;
mod script_values;
#[cfg(test)]
mod test_util;
pub mod values;

pub use bucket::sampler::needs_single_slice;
pub use internal::{
    too_many_buckets, InternalAgg, InternalAggregations, RenderContext, ShardFinish,
    DEFAULT_MAX_BUCKETS,
};
pub use pipeline::PipelineAgg;
pub use prepare::{needs_scores, AggContext, PreparedAggs, SliceAggregator};
pub use request::{parse_aggregations, parse_aggregations_with_pipelines, AggKind, AggRequest};
