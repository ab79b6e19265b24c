//! Tessera's vector search: the distance spaces of OpenSearch's k-NN plugin and an HNSW graph
//! of our own (hnswlib's algorithm), built per segment and read in place from its memory map.
//!
//! Why our own: measured on 150k 256-d embeddings, hnswlib answers in a third of Lucene's CPU per
//! query, and no Rust crate both follows its algorithm and reads a graph in place from bytes.
//! The storage side (segments, merges) and the `knn` query live elsewhere and use only this
//! crate's public API: [`Space`], [`VectorStore`], [`build_graph`], [`build_graph_from`],
//! [`HnswGraph`], [`SearchRequest`], [`exact_search`] and [`SharedBound`].

pub mod distance;
pub mod hnsw;

pub use distance::Space;
pub use hnsw::{
    build_graph, build_graph_from, exact_search, HnswGraph, HnswParams, SearchOutcome,
    SearchRequest, SharedBound, SliceStore, VectorStore,
};
