//! Tessera's vector search: the distance spaces of OpenSearch's k-NN plugin and their scores
//! (`distance`), an HNSW graph of our own (`hnsw`: hnswlib's algorithm with Lucene's denser
//! layer 0, read in place from a memory map), the per-segment vector file written and merged by
//! a tantivy `SegmentPlugin` (`segment`, with the searcher's files opened once as
//! `ShardVectors`, a `per_segment::PerSegment`), which segments get a graph and how merges reuse one (`segment_graph`), graph
//! or exact search per segment run slice by slice with the shard's top-k rewrite (`search`), the
//! fixed `(segment, doc, score)` query it produces (`query`), and the node's counters (`stats`).
//!
//! Why our own graph: measured on 150k 256-d embeddings, hnswlib answers in a third of Lucene's
//! CPU per query, and no Rust crate both follows its algorithm and reads a graph in place.

pub mod distance;
pub mod hnsw;
pub mod per_segment;
pub mod query;
pub mod search;
pub mod segment;
pub mod segment_graph;
pub mod stats;

pub use distance::Space;
pub use hnsw::{
    build_graph, build_graph_from, exact_search, HnswGraph, HnswParams, SearchOutcome,
    SearchRequest, SharedBound, SliceStore, VectorStore,
};
