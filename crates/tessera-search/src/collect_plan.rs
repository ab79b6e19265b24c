//! How one segment part is collected, decided in one place. The query phase's work estimate
//! (does slicing pay? see [`crate::concurrent`]) and the slice collector read the same
//! [`PartPath`], so `auto` never estimates one path while the collector takes another.
//!
//! The plan is made from what is known before collecting without opening a column: the
//! request's shape and the segment's deletions. A column path checks its column when it runs
//! (a sorted copy that holds floats, a multi-valued dictionary field, a sort column some
//! documents lack) and falls back along [`PartPath::fallback`], never to a path the plan ruled
//! out. The work estimate, made before any slice runs, asks [`estimate_part`]: the same plan
//! with those column checks made up front, so it predicts the fallback the collector would take.

use tantivy::columnar::{Cardinality, ColumnIndex};
use tantivy::SegmentReader;
use tessera_aggs::{PreparedAggs, SliceAggregator};
use tessera_query::compile::ColumnFilter;

use crate::collect::CollectParams;

/// What a request's aggregations can count without visiting documents.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggShortcuts {
    /// Every top-level aggregation counts from the sorted values of these columns.
    pub sorted_fields: Option<Vec<String>>,
    /// A lone `terms` aggregation that counts from this field's terms dictionary.
    pub dictionary_field: Option<String>,
}

impl AggShortcuts {
    /// Read from a slice's own collectors (what the collector plans with: nothing to build).
    pub fn of_slice(aggs: &SliceAggregator) -> AggShortcuts {
        AggShortcuts {
            sorted_fields: aggs.sorted_fields(),
            dictionary_field: aggs.dictionary_field(),
        }
    }

    /// Read from collectors made for the purpose (the work estimate, before any slice runs).
    pub fn of(aggs: &PreparedAggs) -> AggShortcuts {
        match aggs.slice_aggregator() {
            Ok(aggregator) => AggShortcuts::of_slice(&aggregator),
            Err(_) => AggShortcuts::default(),
        }
    }
}

/// The ways a part can be collected, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartPath {
    /// Aggregations counted from the segment's sorted column copies: no document visited.
    SortedColumns,
    /// A lone `terms` aggregation counted from the terms dictionary: no document visited.
    Dictionary,
    /// Only the number of matches (`Weight::count`).
    CountOnly,
    /// Aggregations without hits: matches read a buffer at a time, fed in blocks.
    Blocks,
    /// Doc at a time (scores, hits, `min_score`, `post_filter`…), with the shortcuts the
    /// request allows.
    Docs {
        /// A constant-score query sorted by score: the first `k` matches are the top hits,
        /// the rest is only counted.
        first_hits_only: bool,
        /// A `match_all` sorted by a numeric column every document has: only the documents the
        /// column's sorted copy names as candidates are visited.
        sorted_candidates: bool,
    },
}

impl PartPath {
    /// Whether the path's cost does not grow with the matches, so slicing never pays.
    pub fn is_cheap(self) -> bool {
        match self {
            PartPath::SortedColumns | PartPath::Dictionary | PartPath::CountOnly => true,
            PartPath::Blocks => false,
            PartPath::Docs {
                first_hits_only,
                sorted_candidates,
            } => first_hits_only || sorted_candidates,
        }
    }

    /// The path to take when this one turns out, at run time, not to serve the part: a
    /// column-counting path falls back to the one after it, then to blocks.
    pub fn fallback(
        self,
        params: &CollectParams,
        aggs: Option<&AggShortcuts>,
        reader: &SegmentReader,
    ) -> PartPath {
        match self {
            PartPath::SortedColumns if dictionary_counts(params, aggs, reader) => {
                PartPath::Dictionary
            }
            PartPath::SortedColumns | PartPath::Dictionary => PartPath::Blocks,
            other => other,
        }
    }
}

/// Nothing but aggregations and the total are collected, and nothing limits the matches
/// they see: they may count from columns.
fn only_counts(params: &CollectParams) -> bool {
    params.k == 0 && plain(params) && params.terminate_after.is_none()
}

/// Matches need no score and no per-document filter.
fn plain(params: &CollectParams) -> bool {
    params.min_score.is_none() && !params.scoring && params.post_filter.is_none()
}

/// A match-all whose `terms` aggregation may count this segment from its dictionary: no
/// document is deleted (the field being single-valued is checked when it runs).
fn dictionary_counts(
    params: &CollectParams,
    aggs: Option<&AggShortcuts>,
    reader: &SegmentReader,
) -> bool {
    let (Some(ColumnFilter::All), Some(aggs)) = (params.column_filter, aggs) else {
        return false;
    };
    aggs.dictionary_field.is_some() && only_counts(params) && reader.num_deleted_docs() == 0
}

/// The field is single-valued in the segment (or absent from it).
fn single_valued(reader: &SegmentReader, field: &str) -> bool {
    match reader.fast_fields().str(field) {
        Ok(Some(column)) => column.ords().get_cardinality() != Cardinality::Multivalued,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// Every document of the segment has a value in `field` (a numeric column).
fn column_is_full(reader: &SegmentReader, field: &str) -> bool {
    let fast = reader.fast_fields();
    let full = |index: &ColumnIndex| matches!(index, ColumnIndex::Full);
    match (fast.column_opt::<i64>(field), fast.column_opt::<f64>(field)) {
        (Ok(Some(column)), _) => full(&column.index),
        (_, Ok(Some(column))) => full(&column.index),
        _ => false,
    }
}

/// `field` is a single-valued numeric column of the segment, with a value in some documents.
fn column_has_values(reader: &SegmentReader, field: &str) -> bool {
    let fast = reader.fast_fields();
    let single =
        |index: &ColumnIndex| matches!(index, ColumnIndex::Full | ColumnIndex::Optional(_));
    match (fast.column_opt::<i64>(field), fast.column_opt::<f64>(field)) {
        (Ok(Some(column)), _) => single(&column.index),
        (_, Ok(Some(column))) => single(&column.index),
        _ => false,
    }
}

/// The path for the part of `reader` a slice collects (`whole_segment`: all of it); `aggs`:
/// what the request's aggregations can count without documents, `None` without aggregations.
pub fn plan_part(
    params: &CollectParams,
    aggs: Option<&AggShortcuts>,
    reader: &SegmentReader,
    whole_segment: bool,
) -> PartPath {
    let aggregating = aggs.is_some();
    if whole_segment && only_counts(params) {
        if let (Some(filter), Some(shortcuts)) = (params.column_filter, aggs) {
            let from_sorted = match (&shortcuts.sorted_fields, filter) {
                (Some(_), ColumnFilter::All) => true,
                (Some(fields), ColumnFilter::Range { field, .. }) => {
                    fields.iter().all(|f| f == field)
                }
                (None, _) => false,
            };
            if from_sorted {
                return PartPath::SortedColumns;
            }
            if dictionary_counts(params, aggs, reader) {
                return PartPath::Dictionary;
            }
        }
    }
    if params.k == 0 && plain(params) {
        if aggregating {
            return PartPath::Blocks;
        }
        if whole_segment {
            return PartPath::CountOnly;
        }
    }
    // under `collapse` a later document may start a better group: every match is visited
    let plain_hits = !aggregating
        && params.collapse.is_none()
        && params.min_score.is_none()
        && params.terminate_after.is_none()
        && params.post_filter.is_none();
    PartPath::Docs {
        // a slice visits documents in index order: the first hits it accepts are its top when
        // every match scores the same, or when the order is index order (a `_doc` scroll) and
        // no score is tracked (`max_score` is the best score of every match, as OpenSearch's
        // max score collector sees them all)
        first_hits_only: plain_hits
            && ((params.constant_score && params.sort.is_score() && params.search_after.is_none())
                || (params.index_order().is_some() && !params.scoring)),
        sorted_candidates: !aggregating && whole_segment && params.candidate_sort_field().is_some(),
    }
}

/// The path the collector will end up on for a whole segment: [`plan_part`] with the column
/// checks a column path makes when it runs made now (the work estimate's view; it opens
/// columns, which the collector's plan avoids doing twice).
pub fn estimate_part(
    params: &CollectParams,
    aggs: Option<&AggShortcuts>,
    reader: &SegmentReader,
) -> PartPath {
    match plan_part(params, aggs, reader, true) {
        PartPath::Dictionary => {
            let field = aggs.and_then(|a| a.dictionary_field.as_deref());
            if field.is_some_and(|f| single_valued(reader, f)) {
                PartPath::Dictionary
            } else {
                PartPath::Blocks
            }
        }
        PartPath::Docs {
            first_hits_only,
            sorted_candidates: true,
        } => PartPath::Docs {
            first_hits_only,
            // a sparse column narrows the sort too when missing values come last (unless
            // it holds fewer than k values, which only running it finds out)
            sorted_candidates: params.candidate_sort_field().is_some_and(|field| {
                column_is_full(reader, field)
                    || (params.candidate_missing_last() && column_has_values(reader, field))
            }),
        },
        path => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_paths_are_those_whose_cost_does_not_grow_with_matches() {
        assert!(PartPath::SortedColumns.is_cheap());
        assert!(PartPath::Dictionary.is_cheap());
        assert!(PartPath::CountOnly.is_cheap());
        assert!(!PartPath::Blocks.is_cheap());
        let docs = |first_hits_only, sorted_candidates| PartPath::Docs {
            first_hits_only,
            sorted_candidates,
        };
        assert!(!docs(false, false).is_cheap());
        assert!(docs(true, false).is_cheap());
        assert!(docs(false, true).is_cheap());
    }
}
