//! Sorted copies of single-valued numeric columns (dates, longs, scaled floats, doubles), per
//! segment.
//!
//! OpenSearch counts date histogram buckets under a range query without visiting documents,
//! by asking its points tree how many values fall in each bucket. A segment's live values,
//! sorted, answer the same question with two binary searches per bucket: such "how many values
//! in [a, b)" questions then cost microseconds instead of a scan of every matching document.
//! Each value keeps its document, so the best `k` documents of a sort by the field are a slice
//! of the copy, as OpenSearch's points give them.
//!
//! The sorted copy of a field is built the first time a search asks for it (one read of the
//! column and a sort) and kept while the segment and its deletions stay the same; refreshes
//! carry the copies of unchanged segments over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tantivy::columnar::{Column, ColumnIndex};
use tantivy::index::SegmentId;
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};

/// The sorted values of one field's live documents in one segment.
#[derive(Debug)]
pub struct SortedValues {
    /// Ascending; one entry per live document that has a value: the values of an integer
    /// column, or the [`float_key`]s of a float column.
    pub values: Vec<i64>,
    /// The document of each value (ascending among equal values): the best `k` documents of
    /// a sort by this field are then a slice away.
    pub docs: Vec<DocId>,
    /// Whether `values` are float keys (read them with [`key_float`]).
    pub floats: bool,
}

/// An `i64` that orders like `value` does (by IEEE total order: -0.0 before 0.0, NaNs at the
/// ends), so float columns sort and search like integer ones.
pub fn float_key(value: f64) -> i64 {
    let bits = value.to_bits() as i64;
    if bits < 0 {
        bits ^ i64::MAX
    } else {
        bits
    }
}

/// The float whose [`float_key`] is `key`.
pub fn key_float(key: i64) -> f64 {
    f64::from_bits((if key < 0 { key ^ i64::MAX } else { key }) as u64)
}

impl SortedValues {
    /// How many values lie in `[low, high]` (in the units of `values`).
    pub fn count_in(&self, low: i64, high: i64) -> u64 {
        if low > high {
            return 0;
        }
        let start = self.values.partition_point(|v| *v < low);
        let end = self.values.partition_point(|v| *v <= high);
        end.saturating_sub(start) as u64
    }
}

type Key = (SegmentId, u32, String);

/// The sorted copies of a shard, shared by its snapshots.
#[derive(Default)]
pub struct SortedColumns {
    cache: Mutex<HashMap<Key, Arc<SortedValues>>>,
}

impl SortedColumns {
    /// The sorted live values of `field` in `segment`, or `None` when the field has no column
    /// there or some document has several values (counts of values would not be counts of
    /// documents).
    pub fn get(&self, segment: &SegmentReader, field: &str) -> Result<Option<Arc<SortedValues>>> {
        let key = (
            segment.segment_id(),
            segment.num_deleted_docs(),
            field.to_string(),
        );
        if let Some(found) = self.cache.lock().unwrap().get(&key) {
            return Ok(Some(found.clone()));
        }
        let Some(sorted) = build(segment, field)? else {
            return Ok(None);
        };
        let sorted = Arc::new(sorted);
        self.cache.lock().unwrap().insert(key, sorted.clone());
        Ok(Some(sorted))
    }

    /// Forgets the copies of segments no longer searched (or whose deletions changed).
    pub fn retain(&self, segments: &[SegmentReader]) {
        let live: Vec<(SegmentId, u32)> = segments
            .iter()
            .map(|s| (s.segment_id(), s.num_deleted_docs()))
            .collect();
        self.cache
            .lock()
            .unwrap()
            .retain(|(id, deleted, _), _| live.contains(&(*id, *deleted)));
    }
}

fn build(segment: &SegmentReader, field: &str) -> Result<Option<SortedValues>> {
    let fast = segment.fast_fields();
    let open = |e| Error::internal("open a column to sort", e);
    if let Some(column) = fast.column_opt::<i64>(field).map_err(open)? {
        return Ok(
            live_sorted(segment, &column, |v| v).map(|(values, docs)| SortedValues {
                values,
                docs,
                floats: false,
            }),
        );
    }
    if let Some(column) = fast.column_opt::<f64>(field).map_err(open)? {
        return Ok(
            live_sorted(segment, &column, float_key).map(|(values, docs)| SortedValues {
                values,
                docs,
                floats: true,
            }),
        );
    }
    Ok(None)
}

/// The live documents' values of a single-valued column as keys, ascending, with their
/// documents; `None` for a multi-valued column.
#[allow(clippy::type_complexity)]
fn live_sorted<T>(
    segment: &SegmentReader,
    column: &Column<T>,
    key: fn(T) -> i64,
) -> Option<(Vec<i64>, Vec<DocId>)>
where
    T: PartialOrd + Copy + Default + std::fmt::Debug + Send + Sync + 'static,
{
    if matches!(column.index, ColumnIndex::Multivalued(_)) {
        return None;
    }
    let alive = segment.alive_bitset();
    let max_doc = segment.max_doc();
    let mut pairs: Vec<(i64, DocId)> = Vec::with_capacity(segment.num_docs() as usize);
    let mut block = [None; 4096];
    let mut docs: Vec<DocId> = Vec::with_capacity(4096);
    let mut start = 0;
    while start < max_doc {
        let end = (start + 4096).min(max_doc);
        docs.clear();
        docs.extend(start..end);
        let block = &mut block[..docs.len()];
        block.iter_mut().for_each(|v| *v = None);
        column.first_vals(&docs, block);
        for (doc, value) in docs.iter().zip(block.iter()) {
            if let Some(value) = value {
                if alive.is_none_or(|a| a.is_alive(*doc)) {
                    pairs.push((key(*value), *doc));
                }
            }
        }
        start = end;
    }
    pairs.sort_unstable();
    Some(pairs.into_iter().unzip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STRING};
    use tantivy::{doc, Index, IndexWriter, Term};

    #[test]
    fn float_keys_order_like_the_floats_and_read_back() {
        let floats = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            2.5,
            f64::INFINITY,
        ];
        let keys: Vec<i64> = floats.iter().map(|f| float_key(*f)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for f in floats {
            assert_eq!(key_float(float_key(f)).to_bits(), f.to_bits());
        }
    }

    #[test]
    fn sorted_live_values_answer_range_counts() {
        let mut builder = Schema::builder();
        let n = builder.add_i64_field("n", FAST);
        let m = builder.add_i64_field("m", FAST);
        let id = builder.add_text_field("id", STRING);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer(15_000_000).unwrap();
        for (i, v) in [9i64, 3, 7, 3, 12].iter().enumerate() {
            writer
                .add_document(doc!(n => *v, id => i.to_string(), m => 1i64, m => 2i64))
                .unwrap();
        }
        writer.add_document(doc!(id => "none")).unwrap();
        writer.commit().unwrap();
        writer.delete_term(Term::from_field_text(id, "2"));
        writer.commit().unwrap();
        let reader = index.reader().unwrap();
        let searcher = reader.searcher();
        let segment = &searcher.segment_readers()[0];
        let columns = SortedColumns::default();
        let sorted = columns.get(segment, "n").unwrap().unwrap();
        assert_eq!(sorted.values, vec![3, 3, 9, 12]);
        assert_eq!(sorted.docs, vec![1, 3, 0, 4]);
        assert_eq!(sorted.count_in(3, 9), 3);
        assert_eq!(sorted.count_in(10, 5), 0);
        assert!(columns.get(segment, "m").unwrap().is_none(), "multi-valued");
        assert!(columns.get(segment, "missing").unwrap().is_none());
        // cached, and forgotten when the segment is gone
        assert!(Arc::ptr_eq(
            &sorted,
            &columns.get(segment, "n").unwrap().unwrap()
        ));
        columns.retain(&[]);
        assert!(columns.cache.lock().unwrap().is_empty());
    }
}
