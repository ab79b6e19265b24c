//! Collecting one slice: walk its segment parts with the shared weight, count matches, keep
//! the best hits. Each slice gets its own collector and returns a [`QueryResult`]; the shard
//! reduces them with the same [`crate::hits::reduce`] the coordinator uses.
//!
//! Shortcuts that keep cheap queries cheap: a size-0 request counts with `Weight::count`
//! (bitsets, no per-doc work); a constant-score query sorted by score keeps the first hits in
//! index order and stops as soon as the total-hits threshold is reached, as Lucene does.

use std::time::Instant;

use tantivy::query::Weight;
use tantivy::{DocSet, TERMINATED};
use tessera_common::{Error, Result};
use tessera_index::ShardSnapshot;

use crate::hits::{HitSort, QueryResult, ShardHit, TopK};
use crate::slice::Slice;
use crate::sort_keys::SegmentSortKeys;

/// What a slice collector needs to know about the request.
pub struct CollectParams<'a> {
    pub sort: &'a HitSort,
    /// `from + size`.
    pub k: usize,
    /// Count exactly up to this many hits (`u64::MAX` for all).
    pub total_hits_threshold: u64,
    pub terminate_after: Option<u64>,
    pub deadline: Option<Instant>,
    pub min_score: Option<f32>,
    /// Only hits strictly after this key are kept (`search_after`).
    pub search_after: Option<&'a ShardHit>,
    /// Every match has the same score: the first hits in index order are the top hits.
    pub constant_score: bool,
    /// Whether scores are computed.
    pub scoring: bool,
    pub shard_index: u32,
}

const DEADLINE_CHECK_INTERVAL: u32 = 4096;

/// The first doc id of each segment (by ordinal) when segments are laid out in index order,
/// as Lucene's `docBase`.
pub fn doc_bases(snapshot: &ShardSnapshot) -> Vec<u64> {
    let readers = snapshot.searcher.segment_readers();
    let mut bases = vec![0u64; readers.len()];
    let mut next = 0u64;
    for &ord in &snapshot.segments_in_order {
        bases[ord as usize] = next;
        next += readers[ord as usize].max_doc() as u64;
    }
    bases
}

/// Collects one slice. Its parts must be in index order (see `ShardSnapshot::segments_in_order`).
pub fn collect_slice(
    snapshot: &ShardSnapshot,
    weight: &dyn Weight,
    slice: &Slice,
    params: &CollectParams,
) -> Result<QueryResult> {
    let mut top = TopK::new(params.k, params.sort);
    let mut result = QueryResult::default();
    let mut max_score = f32::NEG_INFINITY;
    let table = &snapshot.table;
    let segment_readers = snapshot.searcher.segment_readers();
    let doc_bases = doc_bases(snapshot);
    let first_hits_only = params.constant_score
        && params.sort.is_score()
        && params.min_score.is_none()
        && params.search_after.is_none()
        && params.terminate_after.is_none();
    let mut since_check = 0u32;
    'parts: for part in &slice.parts {
        let reader = &segment_readers[part.segment_ord as usize];
        let whole_segment = part.docs.start == 0 && part.docs.end >= reader.max_doc();
        if params.k == 0 && whole_segment && params.min_score.is_none() && !params.scoring {
            if result.total >= params.total_hits_threshold {
                result.total_is_lower_bound = true;
                break;
            }
            // counting needs no collection: like OpenSearch, `terminate_after` then only says
            // whether the count reached it, the total stays exact
            result.total += weight
                .count(reader)
                .map_err(|e| Error::internal("count matches", e))?
                as u64;
            if params
                .terminate_after
                .is_some_and(|limit| result.total >= limit)
            {
                result.terminated_early = true;
            }
            continue;
        }
        let mut keys = match params.sort {
            HitSort::Score => None,
            HitSort::Fields { fields, .. } => Some(SegmentSortKeys::new(
                table,
                fields,
                reader,
                doc_bases[part.segment_ord as usize],
            )?),
        };
        let mut scorer = weight
            .scorer(reader, 1.0)
            .map_err(|e| Error::internal("create a scorer", e))?;
        let alive = reader.alive_bitset();
        let mut doc = scorer.doc();
        if doc < part.docs.start {
            doc = scorer.seek(part.docs.start);
        }
        while doc != TERMINATED && doc < part.docs.end {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let score = if params.scoring {
                    scorer.score()
                } else {
                    f32::NAN
                };
                let passes = params.min_score.is_none_or(|min| score >= min);
                if passes {
                    result.total += 1;
                    if score > max_score {
                        max_score = score;
                    }
                    if params.k > 0 {
                        let sort = keys.as_mut().map(|k| k.key(doc, score)).unwrap_or_default();
                        let hit = ShardHit {
                            shard_index: params.shard_index,
                            segment_ord: part.segment_ord,
                            segment_rank: snapshot.segment_ranks[part.segment_ord as usize],
                            doc,
                            score,
                            sort,
                        };
                        let after = params.search_after.is_none_or(|after| {
                            params.sort.compare_key(&hit, after) == std::cmp::Ordering::Greater
                        });
                        if after && top.accepts(&hit) {
                            top.push(hit);
                        }
                    }
                    if let Some(limit) = params.terminate_after {
                        if result.total >= limit {
                            result.terminated_early = true;
                            break 'parts;
                        }
                    }
                    if first_hits_only && top.len() >= params.k {
                        if result.total >= params.total_hits_threshold {
                            result.total_is_lower_bound = true;
                            break 'parts;
                        }
                        if params.total_hits_threshold == u64::MAX && whole_segment {
                            // the top hits are known: count the rest of the segment in bulk
                            scorer.advance();
                            result.total += match alive {
                                Some(alive) => scorer.count(alive),
                                None => scorer.count_including_deleted(),
                            } as u64;
                            continue 'parts;
                        }
                    }
                }
            }
            since_check += 1;
            if since_check == DEADLINE_CHECK_INTERVAL {
                since_check = 0;
                if params.deadline.is_some_and(|d| Instant::now() >= d) {
                    result.timed_out = true;
                    break 'parts;
                }
            }
            doc = scorer.advance();
        }
    }
    if params.scoring && max_score > f32::NEG_INFINITY {
        result.max_score = Some(max_score);
    }
    result.hits = top.into_sorted();
    Ok(result)
}
