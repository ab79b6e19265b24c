//! can_match: skipping shards that certainly have no match, before the query phase.
//!
//! A range that every match must satisfy (a top-level range, or one in a `filter`/`must`
//! clause) is compared with the min/max of the field's column in each segment; a shard whose
//! values all fall outside is skipped. The check is conservative: anything it does not
//! understand means "may match".

use tessera_index::ShardSnapshot;
use tessera_query::ast::{QueryAst, RangeQuery};
use tessera_query::compile::i64_bounds;
use tessera_query::CompileContext;

fn required_ranges<'a>(query: &'a QueryAst, out: &mut Vec<&'a RangeQuery>) {
    match query {
        QueryAst::Range(range) => out.push(range),
        QueryAst::ConstantScore { filter, .. } => required_ranges(filter, out),
        QueryAst::Bool(b) => {
            for clause in b.must.iter().chain(&b.filter) {
                required_ranges(clause, out);
            }
        }
        _ => {}
    }
}

/// Whether a can_match round could skip anything for `query` (OpenSearch runs it only for
/// queries that may rewrite to "match none", such as ranges).
pub fn may_skip(query: &QueryAst) -> bool {
    let mut ranges = Vec::new();
    required_ranges(query, &mut ranges);
    !ranges.is_empty() || matches!(query, QueryAst::MatchNone)
}

/// False when `query` certainly matches nothing in this shard snapshot.
pub fn can_match(snapshot: &ShardSnapshot, index: &str, query: &QueryAst, now_millis: i64) -> bool {
    if matches!(query, QueryAst::MatchNone) {
        return false;
    }
    let mut ranges = Vec::new();
    required_ranges(query, &mut ranges);
    let ctx = CompileContext {
        searcher: None,
        table: &snapshot.table,
        index,
        default_fields: &[],
        now_millis,
        // only required ranges are compiled here
        max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
        clauses: Default::default(),
        knn: Default::default(),
        nested_scope: Default::default(),
        deadline: None,
        failures: None,
        mapping: None,
        legacy_bm25: true,
        shard_id: 0,
    };
    for range in ranges {
        let Some(leaf) = snapshot.table.leaf(&range.field) else {
            return false;
        };
        if !leaf.fast {
            continue;
        }
        let bounds = match i64_bounds(&ctx, leaf, range) {
            Ok(Some(Some(bounds))) => bounds,
            Ok(Some(None)) => return false,
            _ => continue,
        };
        let mut overlaps = false;
        for segment in snapshot.searcher.segment_readers() {
            match segment.fast_fields().column_opt::<i64>(&range.field) {
                Ok(Some(column)) => {
                    if column.max_value() >= bounds.0 && column.min_value() <= bounds.1 {
                        overlaps = true;
                        break;
                    }
                }
                Ok(None) => {}
                Err(_) => {
                    overlaps = true;
                    break;
                }
            }
        }
        if !overlaps {
            return false;
        }
    }
    true
}
