//! Ranges that cover a whole segment: when every document of a segment has exactly one value
//! and the column's min and max lie inside the range, every document matches, so the segment
//! is answered without scanning the column (a filter such as `trip_distance < 50` over taxi
//! trips, or a date range over the days a segment holds). Other segments use the range query.

use tantivy::columnar::ColumnIndex;
use tantivy::query::{AllScorer, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SegmentReader};

/// An inclusive range `[low, high]` on an i64 column (longs, dates, scaled floats), wrapping the
/// equivalent range query.
#[derive(Debug)]
pub struct CoveringRangeQuery {
    inner: Box<dyn Query>,
    field: String,
    low: i64,
    high: i64,
}

impl Clone for CoveringRangeQuery {
    fn clone(&self) -> Self {
        CoveringRangeQuery {
            inner: self.inner.box_clone(),
            field: self.field.clone(),
            low: self.low,
            high: self.high,
        }
    }
}

impl CoveringRangeQuery {
    pub fn new(inner: Box<dyn Query>, field: &str, low: i64, high: i64) -> CoveringRangeQuery {
        CoveringRangeQuery {
            inner,
            field: field.to_string(),
            low,
            high,
        }
    }
}

impl Query for CoveringRangeQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(CoveringRangeWeight {
            inner: self.inner.weight(scoring)?,
            field: self.field.clone(),
            low: self.low,
            high: self.high,
        }))
    }
}

struct CoveringRangeWeight {
    inner: Box<dyn Weight>,
    field: String,
    low: i64,
    high: i64,
}

impl CoveringRangeWeight {
    /// Whether every document of the segment has one value, inside the range.
    fn covers(&self, reader: &SegmentReader) -> tantivy::Result<bool> {
        let Some(column) = reader.fast_fields().column_opt::<i64>(&self.field)? else {
            return Ok(false);
        };
        Ok(matches!(column.index, ColumnIndex::Full)
            && column.min_value() >= self.low
            && column.max_value() <= self.high)
    }
}

impl Weight for CoveringRangeWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        if self.covers(reader)? {
            return Ok(Box::new(ConstScorer::new(
                AllScorer::new(reader.max_doc()),
                boost,
            )));
        }
        self.inner.scorer(reader, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if self.covers(reader)? {
            return Ok(reader.num_docs());
        }
        self.inner.count(reader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Bound;
    use tantivy::collector::Count;
    use tantivy::query::RangeQuery;
    use tantivy::schema::{Schema, FAST};
    use tantivy::{doc, Index, IndexWriter, Term};

    #[test]
    fn whole_segments_match_without_a_scan_and_others_are_filtered() {
        let mut builder = Schema::builder();
        let n = builder.add_i64_field("n", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer(15_000_000).unwrap();
        for v in [5i64, 6, 7] {
            writer.add_document(doc!(n => v)).unwrap();
        }
        writer.commit().unwrap();
        for v in [1i64, 50] {
            writer.add_document(doc!(n => v)).unwrap();
        }
        writer.add_document(doc!()).unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let query = |low: i64, high: i64| {
            let inner = RangeQuery::new(
                Bound::Included(Term::from_field_i64(n, low)),
                Bound::Included(Term::from_field_i64(n, high)),
            );
            CoveringRangeQuery::new(Box::new(inner), "n", low, high)
        };
        assert_eq!(searcher.search(&query(0, 10), &Count).unwrap(), 4);
        assert_eq!(searcher.search(&query(0, 100), &Count).unwrap(), 5);
        assert_eq!(searcher.search(&query(6, 6), &Count).unwrap(), 1);
    }
}
