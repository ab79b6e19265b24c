//! `"profile": true`: per-shard timings of the query phase in OpenSearch's response shape,
//! with the concurrent search fields (`slice_count`, min/max/avg slice times, reduce time).
//!
//! Tessera measures what it can measure without slowing collection down: creating the weight,
//! each slice's collection, and the reduce. Lucene's per-method breakdown (next_doc, advance,
//! score, ...) has no counterpart in a block-at-a-time collector and is reported as 0.

use serde_json::{json, Map, Value};

use crate::shard::{ShardProfile, ShardSearcher};

fn slice_stats(slices: &[u64]) -> (u64, u64, u64) {
    let max = slices.iter().copied().max().unwrap_or(0);
    let min = slices.iter().copied().min().unwrap_or(0);
    let avg = if slices.is_empty() {
        0
    } else {
        slices.iter().sum::<u64>() / slices.len() as u64
    };
    (max, min, avg)
}

/// One entry of `profile.shards`.
pub fn render_shard(shard: &dyn ShardSearcher, profile: &ShardProfile) -> Value {
    let (max, min, avg) = slice_stats(&profile.slice_nanos);
    let collect_nanos: u64 = profile.slice_nanos.iter().sum();
    let mut breakdown = Map::new();
    for (name, value) in [
        ("create_weight", profile.create_weight_nanos),
        ("create_weight_count", 1),
        ("build_scorer", 0),
        ("build_scorer_count", profile.slice_nanos.len() as u64),
        ("next_doc", 0),
        ("next_doc_count", 0),
        ("advance", 0),
        ("advance_count", 0),
        ("score", 0),
        ("score_count", 0),
        ("match", 0),
        ("match_count", 0),
    ] {
        breakdown.insert(name.into(), json!(value));
    }
    let query = json!({
        "type": profile.query_type,
        "description": profile.description,
        "time_in_nanos": profile.create_weight_nanos + collect_nanos,
        "max_slice_time_in_nanos": max,
        "min_slice_time_in_nanos": min,
        "avg_slice_time_in_nanos": avg,
        "breakdown": breakdown,
    });
    let collector = json!({
        "name": "QueryCollectorManager",
        "reason": if profile.aggregations.is_empty() { "search_top_hits" } else { "search_multi" },
        "time_in_nanos": collect_nanos,
        "reduce_time_in_nanos": profile.reduce_nanos,
        "max_slice_time_in_nanos": max,
        "min_slice_time_in_nanos": min,
        "avg_slice_time_in_nanos": avg,
        "slice_count": profile.slice_nanos.len(),
    });
    let aggregations: Vec<Value> = profile
        .aggregations
        .iter()
        .map(|(name, kind)| {
            json!({
                "type": kind,
                "description": name,
                "time_in_nanos": collect_nanos,
                "max_slice_time_in_nanos": max,
                "min_slice_time_in_nanos": min,
                "avg_slice_time_in_nanos": avg,
            })
        })
        .collect();
    json!({
        "id": format!("[{}][{}][{}]", shard.node_id(), shard.index_name(), shard.shard_id()),
        "inbound_network_time_in_millis": 0,
        "outbound_network_time_in_millis": 0,
        "searches": [{
            "query": [query],
            "rewrite_time": 0,
            "collector": [collector],
        }],
        "aggregations": aggregations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_statistics() {
        assert_eq!(slice_stats(&[5, 1, 3]), (5, 1, 3));
        assert_eq!(slice_stats(&[]), (0, 0, 0));
    }
}
