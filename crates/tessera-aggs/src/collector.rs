//! The collector contract: one collector per aggregation per slice, fed blocks of matching
//! documents segment by segment, then asked for the intermediate result of each parent bucket.
//!
//! Every `collect` call gets documents in strictly ascending order within the current segment;
//! successive calls may go back (a doc in two overlapping ranges reaches the sub-aggregations
//! twice, in two calls). Collectors therefore read columns by block and never rely on a forward
//! only iterator across calls.

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::{DocId, SegmentReader};
use tessera_common::Result;

use crate::internal::{InternalAgg, InternalAggregations};

/// The segment (part) a slice is about to collect.
pub struct SegmentContext<'a> {
    pub reader: &'a SegmentReader,
    pub segment_ord: u32,
    /// The doc ids of the segment this slice covers (a whole segment, or one partition of it).
    pub docs: Range<DocId>,
}

/// A whole segment's live values of one single-valued integer field, sorted, with the
/// query's inclusive bounds on that field: aggregations that only count values of that field
/// can count buckets with binary searches instead of being fed every matching document.
pub struct SortedSegment<'a> {
    pub field: &'a str,
    /// Ascending, one per live document with a value.
    pub values: &'a [i64],
    pub low: i64,
    pub high: i64,
}

impl SortedSegment<'_> {
    /// The index range of the values inside the bounds.
    pub fn matching(&self) -> std::ops::Range<usize> {
        if self.low > self.high {
            return 0..0;
        }
        let start = self.values.partition_point(|v| *v < self.low);
        let end = self.values.partition_point(|v| *v <= self.high);
        start..end.max(start)
    }
}

/// The scores of the block of matches a slice is handing its aggregations, for the collectors
/// that show or sort by score (top_hits). Only a scored query fills it, and only when some
/// aggregation asks ([`crate::needs_scores`]), so other requests pay nothing.
///
/// Collectors are fed `(doc, bucket)` pairs that bucket aggregations derive from the block, so
/// a collector deep in the tree looks a doc's score up here rather than receiving it: the
/// block is the slice's, set before its top-level collectors run and read while they do. A doc
/// that is not in the block (`global` collects every doc of the segment) has no score.
#[derive(Clone, Default)]
pub struct BlockScores(Arc<Mutex<ScoredBlock>>);

#[derive(Default)]
struct ScoredBlock {
    /// Strictly ascending.
    docs: Vec<DocId>,
    scores: Vec<f32>,
}

impl BlockScores {
    /// The block about to be collected (`docs` strictly ascending, `scores[i]` that of `docs[i]`).
    pub fn set(&self, docs: &[DocId], scores: &[f32]) {
        let mut block = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        block.docs.clear();
        block.docs.extend_from_slice(docs);
        block.scores.clear();
        block.scores.extend_from_slice(scores);
    }

    /// Forgets the block (a new segment starts).
    pub fn clear(&self) {
        self.set(&[], &[]);
    }

    /// The score of each of `docs` (strictly ascending), `None` for a doc outside the block.
    pub fn read(&self, docs: &[DocId], out: &mut Vec<Option<f32>>) {
        let block = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        out.clear();
        let mut from = 0;
        for &doc in docs {
            from += block.docs[from..].partition_point(|d| *d < doc);
            out.push((block.docs.get(from) == Some(&doc)).then(|| block.scores[from]));
        }
    }
}

/// One aggregation's collector for one slice.
pub trait Collector: Send {
    /// Prepares to read the given segment's columns.
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()>;

    /// Collects `docs` (strictly ascending), `parents[i]` being the parent bucket of `docs[i]`.
    fn collect(&mut self, docs: &[DocId], parents: &[u32]);

    /// The field whose sorted values can stand in for the matching documents: `Some` only for
    /// collectors that need nothing but that field's values (no sub-aggregations, no
    /// `missing`, one parent bucket).
    fn sorted_field(&self) -> Option<&str> {
        None
    }

    /// Counts a segment from its sorted values (only when [`Collector::sorted_field`] named
    /// `segment.field`).
    fn collect_sorted(&mut self, _segment: &SortedSegment) {}

    /// The keyword field whose terms dictionary can count this collector's segments (see
    /// [`Collector::collect_from_dictionary`]; single-valued segments without deletions).
    fn dictionary_field(&self) -> Option<&str> {
        None
    }

    /// Counts the current segment from its terms dictionary instead of its documents, when
    /// every document of the segment matches and none is deleted (a term's document frequency
    /// is then its bucket's count). False, with nothing counted, when the collector cannot.
    fn collect_from_dictionary(&mut self, _segment: &SegmentReader) -> Result<bool> {
        Ok(false)
    }

    /// Called after the last document of a segment.
    fn finish_segment(&mut self) -> Result<()> {
        Ok(())
    }

    /// The intermediate result for the parent bucket `parent` (an empty result when the
    /// parent never received a document).
    fn build(&mut self, parent: u32) -> Result<InternalAgg>;
}

/// The sub-aggregations of a bucket aggregation, fed `(doc, bucket)` pairs.
pub struct SubCollectors {
    collectors: Vec<(String, Box<dyn Collector>)>,
    docs: Vec<DocId>,
    ords: Vec<u32>,
    round_docs: Vec<Vec<DocId>>,
    round_ords: Vec<Vec<u32>>,
}

impl SubCollectors {
    pub fn new(collectors: Vec<(String, Box<dyn Collector>)>) -> SubCollectors {
        SubCollectors {
            collectors,
            docs: Vec::new(),
            ords: Vec::new(),
            round_docs: Vec::new(),
            round_ords: Vec::new(),
        }
    }

    /// Whether there are no sub-aggregations (callers can skip `push`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.collectors.is_empty()
    }

    pub fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.collectors
            .iter_mut()
            .try_for_each(|(_, c)| c.set_segment(segment))
    }

    /// The fields every collector can count from sorted values, or `None` when one cannot.
    pub fn sorted_fields(&self) -> Option<Vec<String>> {
        if self.collectors.is_empty() {
            return None;
        }
        self.collectors
            .iter()
            .map(|(_, c)| c.sorted_field().map(String::from))
            .collect()
    }

    /// Counts the segment in every collector whose field it is.
    pub fn collect_sorted(&mut self, segment: &SortedSegment) {
        for (_, collector) in &mut self.collectors {
            if collector.sorted_field() == Some(segment.field) {
                collector.collect_sorted(segment);
            }
        }
    }

    /// The field a lone collector can count segments from by its terms dictionary.
    pub fn dictionary_field(&self) -> Option<String> {
        match self.collectors.as_slice() {
            [(_, only)] => only.dictionary_field().map(String::from),
            _ => None,
        }
    }

    /// Counts the segment from its terms dictionary (see [`Collector::collect_from_dictionary`])
    /// when there is a single collector, which either counts all of it or nothing.
    pub fn collect_from_dictionary(&mut self, segment: &SegmentReader) -> Result<bool> {
        match self.collectors.as_mut_slice() {
            [(_, only)] => only.collect_from_dictionary(segment),
            _ => Ok(false),
        }
    }

    pub fn finish_segment(&mut self) -> Result<()> {
        self.collectors
            .iter_mut()
            .try_for_each(|(_, c)| c.finish_segment())
    }

    /// Hands a block straight to every sub-aggregation (docs strictly ascending).
    pub fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        for (_, collector) in &mut self.collectors {
            collector.collect(docs, parents);
        }
    }

    /// Queues `doc` for bucket `ord`. Docs must be pushed in non-decreasing order between two
    /// [`SubCollectors::flush`] calls.
    #[inline]
    pub fn push(&mut self, doc: DocId, ord: u32) {
        self.docs.push(doc);
        self.ords.push(ord);
    }

    /// Hands the queued pairs to the sub-aggregations, splitting them into calls with strictly
    /// ascending docs when a doc was queued for several buckets.
    pub fn flush(&mut self) {
        if self.docs.is_empty() {
            return;
        }
        let strictly_ascending = self.docs.windows(2).all(|w| w[0] < w[1]);
        if strictly_ascending {
            for (_, collector) in &mut self.collectors {
                collector.collect(&self.docs, &self.ords);
            }
        } else {
            self.flush_in_rounds();
        }
        self.docs.clear();
        self.ords.clear();
    }

    /// Round k holds the k-th bucket of each doc.
    fn flush_in_rounds(&mut self) {
        let mut previous = None;
        let mut occurrence = 0;
        for (&doc, &ord) in self.docs.iter().zip(&self.ords) {
            occurrence = if previous == Some(doc) {
                occurrence + 1
            } else {
                0
            };
            previous = Some(doc);
            if self.round_docs.len() <= occurrence {
                self.round_docs.push(Vec::new());
                self.round_ords.push(Vec::new());
            }
            self.round_docs[occurrence].push(doc);
            self.round_ords[occurrence].push(ord);
        }
        for (docs, ords) in self.round_docs.iter_mut().zip(&mut self.round_ords) {
            if !docs.is_empty() {
                for (_, collector) in &mut self.collectors {
                    collector.collect(docs, ords);
                }
            }
            docs.clear();
            ords.clear();
        }
    }

    /// The sub-aggregations' results for bucket `ord`.
    pub fn build(&mut self, ord: u32) -> Result<InternalAggregations> {
        let mut out = Vec::with_capacity(self.collectors.len());
        for (name, collector) in &mut self.collectors {
            out.push((name.clone(), collector.build(ord)?));
        }
        Ok(InternalAggregations(out))
    }
}

/// A block of parent ordinals that are all 0, for top-level collection.
pub const ZERO_PARENTS: [u32; ZERO_PARENTS_LEN] = [0; ZERO_PARENTS_LEN];
pub const ZERO_PARENTS_LEN: usize = 1024;
