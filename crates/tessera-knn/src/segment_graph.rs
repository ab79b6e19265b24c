//! Which segments get an HNSW graph, built with which parameters, and how a merge reuses the
//! graph of one of its sources.
//!
//! Why a threshold: a refresh is a commit every second on one indexing thread, so building a
//! graph for every small flushed segment would stall it, while exact search over a few thousand
//! vectors costs less than the graph would save. OpenSearch's `index.knn.advanced.approximate_threshold`
//! decides: `-1` never builds, `0` always builds, `n` builds for segments of at least `n`
//! vectors (flush and merge alike). Segments without a graph are searched exactly.
//!
//! The graph's space, `m` and `ef_construction` are the mapping's, carried in the shard
//! schema's custom field params (`space_type`, `m`, `ef_construction`) so that the plugin,
//! which sees only the schema, builds what the mapping asks for. A field from a schema written
//! before graphs existed has no `space_type` there and gets no graph (exact search stays right).

use serde_json::Value;
use tantivy::schema::{Field, FieldType, Schema};

use crate::distance::Space;
use crate::hnsw::{build_graph, build_graph_from, HnswGraph, HnswParams, SliceStore, VectorStore};

/// OpenSearch 2.19.6's default of `index.knn.advanced.approximate_threshold` (as its node reports
/// with `include_defaults`): every segment gets a graph.
pub const DEFAULT_APPROXIMATE_THRESHOLD: i64 = 0;

/// Whether a segment of `count` vectors gets a graph under `threshold` (see the module docs).
pub fn builds_graph(threshold: i64, count: usize) -> bool {
    count > 0
        && match threshold {
            t if t < 0 => false,
            0 => true,
            t => count as u64 >= t as u64,
        }
}

/// The schema params of a `knn_vector` field for the mapping's space and method parameters.
pub fn field_params(dimension: usize, space: Space, m: u32, ef_construction: u32) -> Value {
    serde_json::json!({
        "dimension": dimension,
        "space_type": space.name(),
        "m": m,
        "ef_construction": ef_construction,
    })
}

/// The graph settings of `field`, from its schema params; `None` when the field carries none.
pub fn graph_settings(schema: &Schema, field: Field) -> Option<(Space, HnswParams)> {
    let FieldType::Custom(options) = schema.get_field_entry(field).field_type() else {
        return None;
    };
    let params = options.params();
    let space = params.get("space_type").and_then(Value::as_str)?;
    let space = Space::parse(space)?;
    let defaults = HnswParams::default();
    let read = |key: &str, default: usize| {
        params
            .get(key)
            .and_then(Value::as_u64)
            .map_or(default, |v| v as usize)
    };
    Some((
        space,
        HnswParams {
            m: read("m", defaults.m),
            ef_construction: read("ef_construction", defaults.ef_construction),
            seed: defaults.seed,
        },
    ))
}

/// A merge source's share of the merged vectors: ordinals `start..start + len` of the merged
/// segment, and its graph when it has one and lost no document (its nodes are then exactly
/// those vectors, in the same order).
pub struct MergeSource<'a> {
    pub start: u32,
    pub len: u32,
    pub graph: Option<HnswGraph<'a>>,
}

/// The merged segment's graph over `merged` (ordinal-major, `dim` floats each): built from the
/// largest reusable source graph (issue #18: a merge inserts only the other sources' vectors),
/// else from scratch.
pub fn merge_graph(
    space: Space,
    params: &HnswParams,
    merged: &[f32],
    dim: usize,
    sources: &[MergeSource<'_>],
) -> Vec<u8> {
    let store = SliceStore::new(merged, dim);
    let best = sources
        .iter()
        .filter(|s| s.len > 0 && s.graph.as_ref().is_some_and(|g| g.len() == s.len))
        .max_by_key(|s| s.len);
    let Some(best) = best else {
        return build_graph(space, &store, params);
    };
    let graph = best.graph.as_ref().expect("filtered on a graph");
    if best.start == 0 {
        return build_graph_from(space, &store, params, graph, best.len);
    }
    // The reused nodes must come first: build over the vectors in that order (node i holds
    // ordinal order[i]), then rename nodes to ordinals.
    let total = store.len();
    let order: Vec<u32> = (best.start..best.start + best.len)
        .chain(0..best.start)
        .chain(best.start + best.len..total)
        .collect();
    let mut reordered = Vec::with_capacity(merged.len());
    for &ord in &order {
        reordered.extend_from_slice(&merged[ord as usize * dim..][..dim]);
    }
    let bytes = build_graph_from(
        space,
        &SliceStore::new(&reordered, dim),
        params,
        graph,
        best.len,
    );
    match HnswGraph::open(&bytes) {
        Ok(built) => built.relabel(&order),
        // cannot happen for bytes just written; a fresh build is right anyway
        Err(_) => build_graph(space, &store, params),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hnsw::test_data::{clustered, recall};

    #[test]
    fn the_threshold_follows_opensearch() {
        assert!(!builds_graph(-1, 1_000_000));
        assert!(builds_graph(0, 1));
        assert!(!builds_graph(0, 0));
        assert!(!builds_graph(100, 99));
        assert!(builds_graph(100, 100));
    }

    #[test]
    fn settings_come_from_the_field_params() {
        let mut builder = Schema::builder();
        let with = builder.add_custom_field(
            "a",
            crate::segment::KNN_VECTOR_TYPE,
            field_params(3, Space::InnerProduct, 8, 64),
        );
        let without = builder.add_custom_field(
            "b",
            crate::segment::KNN_VECTOR_TYPE,
            serde_json::json!({"dimension": 3}),
        );
        let schema = builder.build();
        let (space, params) = graph_settings(&schema, with).unwrap();
        assert_eq!(
            (space, params.m, params.ef_construction),
            (Space::InnerProduct, 8, 64)
        );
        assert!(graph_settings(&schema, without).is_none());
    }

    #[test]
    fn a_merge_reuses_a_source_graph_wherever_it_lies() {
        let dim = 8;
        let data = clustered(900, dim, 6, 3);
        let params = HnswParams::default();
        // the middle third has a graph of its own
        let middle = &data[300 * dim..600 * dim];
        let middle_bytes = build_graph(Space::L2, &SliceStore::new(middle, dim), &params);
        let sources = [
            MergeSource {
                start: 0,
                len: 300,
                graph: None,
            },
            MergeSource {
                start: 300,
                len: 300,
                graph: Some(HnswGraph::open(&middle_bytes).unwrap()),
            },
            MergeSource {
                start: 600,
                len: 300,
                graph: None,
            },
        ];
        let bytes = merge_graph(Space::L2, &params, &data, dim, &sources);
        let graph = HnswGraph::open(&bytes).unwrap();
        let store = SliceStore::new(&data, dim);
        assert_eq!(graph.len(), store.len());
        // nodes are ordinals: the search finds each vector itself
        let queries = clustered(50, dim, 6, 9);
        assert!(recall(&graph, &store, &queries, 10, 64, None) > 0.95);
        for ord in [0u32, 299, 300, 450, 899] {
            let request = crate::hnsw::SearchRequest::new(store.vector(ord), 1, 64);
            assert_eq!(graph.search(&store, &request).hits[0].0, ord);
        }
    }
}
