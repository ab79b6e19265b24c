//! The query a `knn` query is rewritten into: a fixed set of `(segment, doc, score)`.
//!
//! Lucene's `DocAndScoreQuery`: the shard-wide top k is known before the weight is built, so
//! each segment's scorer only walks its share of the hits. Segments are identified by their id
//! (the rewrite and the search run on the same searcher).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use tantivy::index::{SegmentId, SegmentReader};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, Searcher, TERMINATED};

use crate::distance::Space;
use crate::search::ShardHit;

/// Matches exactly the given documents, each with its score (times the query's boost).
#[derive(Clone)]
pub struct DocScoresQuery {
    by_segment: Arc<HashMap<SegmentId, Vec<(DocId, Score)>>>,
    boost: Score,
}

impl fmt::Debug for DocScoresQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hits: usize = self.by_segment.values().map(Vec::len).sum();
        write!(f, "DocScoresQuery({hits} hits, boost {})", self.boost)
    }
}

impl DocScoresQuery {
    /// The query of `hits` found on `searcher`, scored as OpenSearch scores `space`.
    pub fn new(searcher: &Searcher, hits: &[ShardHit], space: Space, boost: Score) -> Self {
        let readers = searcher.segment_readers();
        let mut by_segment: HashMap<SegmentId, Vec<(DocId, Score)>> = HashMap::new();
        for hit in hits {
            let segment = readers[hit.segment_ord as usize].segment_id();
            by_segment
                .entry(segment)
                .or_default()
                .push((hit.doc, space.score(hit.distance)));
        }
        for docs in by_segment.values_mut() {
            docs.sort_by_key(|d| d.0);
        }
        DocScoresQuery {
            by_segment: Arc::new(by_segment),
            boost,
        }
    }

    /// The query of documents already scored: (segment ordinal on `searcher`, doc, score).
    pub fn from_scores(searcher: &Searcher, hits: &[(u32, DocId, Score)], boost: Score) -> Self {
        let readers = searcher.segment_readers();
        let mut by_segment: HashMap<SegmentId, Vec<(DocId, Score)>> = HashMap::new();
        for &(segment_ord, doc, score) in hits {
            by_segment
                .entry(readers[segment_ord as usize].segment_id())
                .or_default()
                .push((doc, score));
        }
        for docs in by_segment.values_mut() {
            docs.sort_by_key(|d| d.0);
        }
        DocScoresQuery {
            by_segment: Arc::new(by_segment),
            boost,
        }
    }

    fn segment(&self, reader: &SegmentReader) -> &[(DocId, Score)] {
        self.by_segment
            .get(&reader.segment_id())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

impl Query for DocScoresQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for DocScoresQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs: Arc<[(DocId, Score)]> = Arc::from(self.segment(reader));
        Ok(Box::new(DocScoresScorer::new(docs, boost * self.boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        match self.segment(reader).binary_search_by_key(&doc, |d| d.0) {
            Ok(i) => Ok(Explanation::new(
                "within top k",
                self.segment(reader)[i].1 * self.boost,
            )),
            Err(_) => Err(tantivy::TantivyError::InvalidArgument(format!(
                "document #({doc}) does not match"
            ))),
        }
    }
}

/// A segment's matches and their scores (times `boost`), in document order: the scorer of
/// any query whose scores are computed before it is walked.
pub struct DocScoresScorer {
    docs: Arc<[(DocId, Score)]>,
    at: usize,
    boost: Score,
}

impl DocScoresScorer {
    /// `docs` must be in document order.
    pub fn new(docs: Arc<[(DocId, Score)]>, boost: Score) -> DocScoresScorer {
        DocScoresScorer { docs, at: 0, boost }
    }
}

impl DocSet for DocScoresScorer {
    fn advance(&mut self) -> DocId {
        if self.at < self.docs.len() {
            self.at += 1;
        }
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() >= target {
            return self.doc();
        }
        let rest = &self.docs[self.at..];
        self.at += rest.partition_point(|d| d.0 < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).map_or(TERMINATED, |d| d.0)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.at) as u32
    }
}

impl Scorer for DocScoresScorer {
    fn score(&mut self) -> Score {
        self.docs.get(self.at).map_or(0.0, |d| d.1 * self.boost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scorer_walks_and_seeks_its_docs() {
        let mut scorer = DocScoresScorer {
            docs: Arc::from(vec![(1, 0.5), (4, 0.25), (9, 1.0)]),
            at: 0,
            boost: 2.0,
        };
        assert_eq!(scorer.doc(), 1);
        assert_eq!(scorer.score(), 1.0);
        assert_eq!(scorer.seek(5), 9);
        assert_eq!(scorer.score(), 2.0);
        assert_eq!(scorer.advance(), TERMINATED);
        assert_eq!(scorer.seek(3), TERMINATED);
    }
}
