//! `boosting`: documents matching `positive` keep its score, multiplied by `negative_boost`
//! when they also match `negative` (Lucene's `BoostingQuery`). The negative query only filters;
//! its own score does not matter.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader};

#[derive(Debug)]
pub struct BoostingQuery {
    positive: Box<dyn Query>,
    negative: Box<dyn Query>,
    negative_boost: f32,
}

impl Clone for BoostingQuery {
    fn clone(&self) -> Self {
        BoostingQuery {
            positive: self.positive.box_clone(),
            negative: self.negative.box_clone(),
            negative_boost: self.negative_boost,
        }
    }
}

impl BoostingQuery {
    pub fn new(
        positive: Box<dyn Query>,
        negative: Box<dyn Query>,
        negative_boost: f32,
    ) -> BoostingQuery {
        BoostingQuery {
            positive,
            negative,
            negative_boost,
        }
    }
}

impl Query for BoostingQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let positive = self.positive.weight(enable_scoring)?;
        let negative = self
            .negative
            .weight(EnableScoring::disabled_from_schema(enable_scoring.schema()))?;
        Ok(Box::new(BoostingWeight {
            positive,
            negative,
            negative_boost: self.negative_boost,
        }))
    }
}

struct BoostingWeight {
    positive: Box<dyn Weight>,
    negative: Box<dyn Weight>,
    negative_boost: f32,
}

impl Weight for BoostingWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(BoostingScorer {
            positive: self.positive.scorer(reader, boost)?,
            negative: self.negative.scorer(reader, 1.0)?,
            negative_boost: self.negative_boost,
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new("boosting", score))
    }
}

struct BoostingScorer {
    positive: Box<dyn Scorer>,
    negative: Box<dyn Scorer>,
    negative_boost: f32,
}

impl DocSet for BoostingScorer {
    fn advance(&mut self) -> DocId {
        self.positive.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.positive.seek(target)
    }

    fn doc(&self) -> DocId {
        self.positive.doc()
    }

    fn size_hint(&self) -> u32 {
        self.positive.size_hint()
    }
}

impl Scorer for BoostingScorer {
    fn score(&mut self) -> Score {
        let doc = self.positive.doc();
        let score = self.positive.score();
        let demoted = self.negative.doc() == doc
            || (self.negative.doc() < doc && self.negative.seek(doc) == doc);
        if demoted {
            score * self.negative_boost
        } else {
            score
        }
    }
}
