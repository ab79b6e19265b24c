//! `terms` on fields searched through their columns (numbers, dates, ips have no postings, as
//! OpenSearch's have no terms but points): one pass over each segment's column, testing every
//! value against the sorted set of wanted values. Matches score 1.0 × boost.

use std::net::Ipv6Addr;

use tantivy::columnar::Column;
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::{BitSet, DocId, Score, SegmentReader};

/// The wanted values, sorted and deduplicated.
#[derive(Clone, Debug)]
pub enum ColumnValues {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Ip(Vec<Ipv6Addr>),
}

impl ColumnValues {
    fn normalized(self) -> ColumnValues {
        match self {
            ColumnValues::I64(mut v) => {
                v.sort_unstable();
                v.dedup();
                ColumnValues::I64(v)
            }
            ColumnValues::F64(mut v) => {
                v.sort_by(f64::total_cmp);
                v.dedup();
                ColumnValues::F64(v)
            }
            ColumnValues::Ip(mut v) => {
                v.sort_unstable();
                v.dedup();
                ColumnValues::Ip(v)
            }
        }
    }
}

/// Matches documents with at least one value of the column in the set.
#[derive(Clone, Debug)]
pub struct ColumnSetQuery {
    field: String,
    values: ColumnValues,
}

impl ColumnSetQuery {
    pub fn new(field: impl Into<String>, values: ColumnValues) -> ColumnSetQuery {
        ColumnSetQuery {
            field: field.into(),
            values: values.normalized(),
        }
    }
}

impl Query for ColumnSetQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(ColumnSetWeight(self.clone())))
    }
}

struct ColumnSetWeight(ColumnSetQuery);

/// Sets the bit of every doc with a value in `wanted`.
fn mark<T: Copy + PartialOrd + Send + Sync + std::fmt::Debug + 'static>(
    column: &Column<T>,
    max_doc: DocId,
    bits: &mut BitSet,
    wanted: impl Fn(T) -> bool,
) {
    for doc in 0..max_doc {
        if column.values_for_doc(doc).any(&wanted) {
            bits.insert(doc);
        }
    }
}

impl Weight for ColumnSetWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let max_doc = reader.max_doc();
        let mut bits = BitSet::with_max_value(max_doc.max(1));
        let fast = reader.fast_fields();
        let field = &self.0.field;
        match &self.0.values {
            ColumnValues::I64(values) => {
                if let Some(column) = fast.column_opt::<i64>(field)? {
                    mark(&column, max_doc, &mut bits, |v| {
                        values.binary_search(&v).is_ok()
                    });
                }
            }
            ColumnValues::F64(values) => {
                if let Some(column) = fast.column_opt::<f64>(field)? {
                    mark(&column, max_doc, &mut bits, |v| {
                        values.binary_search_by(|w| w.total_cmp(&v)).is_ok()
                    });
                }
            }
            ColumnValues::Ip(values) => {
                if let Some(column) = fast.column_opt::<Ipv6Addr>(field)? {
                    mark(&column, max_doc, &mut bits, |v| {
                        values.binary_search(&v).is_ok()
                    });
                }
            }
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new_with_string(
            format!("{}:{:?}", self.0.field, self.0.values),
            score,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::Count;
    use tantivy::schema::{Schema, FAST};
    use tantivy::{doc, Index};

    #[test]
    fn matches_any_value_of_multi_valued_columns() {
        let mut builder = Schema::builder();
        let n = builder.add_i64_field("n", FAST);
        let f = builder.add_f64_field("f", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        writer.add_document(doc!(n => 1i64, f => 0.5)).unwrap();
        writer.add_document(doc!(n => 5i64, n => 9i64)).unwrap();
        writer.add_document(doc!(f => 2.5)).unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let count = |q: ColumnSetQuery| searcher.search(&q, &Count).unwrap();
        assert_eq!(
            count(ColumnSetQuery::new("n", ColumnValues::I64(vec![9, 1]))),
            2
        );
        assert_eq!(
            count(ColumnSetQuery::new("n", ColumnValues::I64(vec![2]))),
            0
        );
        assert_eq!(
            count(ColumnSetQuery::new("f", ColumnValues::F64(vec![2.5, 0.5]))),
            2
        );
        assert_eq!(
            count(ColumnSetQuery::new("missing", ColumnValues::I64(vec![1]))),
            0
        );
    }
}
