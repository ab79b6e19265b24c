//! k-NN vector search for Tessera: distances and OpenSearch's scores per space type
//! (`distance`), the per-segment vector file written and merged by a tantivy `SegmentPlugin`
//! (`segment`), exact (and, once wired in, graph) search per segment with the shard's top-k
//! rewrite (`search`), the fixed `(segment, doc, score)` query it produces (`query`), and the
//! node's counters (`stats`). `hnsw` holds the search primitives over a segment's vectors.

pub mod distance;
pub mod hnsw;
pub mod query;
pub mod search;
pub mod segment;
pub mod stats;

pub use distance::Space;
