//! `script_score`: the wrapped query's documents scored by a Painless script, which sees
//! `_score`, `doc` and `params`.
//!
//! The inner query's live documents are taken in blocks of [`BLOCK`]. A script with the double
//! arithmetic fast path (`numeric_script`) is evaluated for a whole block at once, each column
//! read once per block; any other script, and a document the fast path cannot take (a missing
//! value), runs in the interpreter when the collection reaches the document. Computing a fast
//! block ahead has no effect a caller can see: it cannot fail, and whether a score is valid
//! (not negative, not NaN) is decided only when its document is reached.
//!
//! A tantivy scorer cannot fail, but a script can, and OpenSearch then fails the shard. Under
//! the shard's search the scorer is lazy (a slice collecting part of a segment scores that part
//! only) and its first failure waits in the context's [`QueryFailures`]; elsewhere it scores a
//! segment's matches when it is made, the first failure being the scorer's error, and replays
//! the scores. Past the request's deadline the segment's remaining documents are left out and
//! the collector, which checks the same deadline, marks the result timed out.

use std::sync::Arc;
use std::time::Instant;

use tantivy::fastfield::AliveBitSet;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, COLLECT_BLOCK_BUFFER_LEN, TERMINATED};
use tessera_common::{Error, Result};
use tessera_script::{ScriptContext, Value};

use super::script::{as_score, carried, java_double, prepare, PreparedScript, DEADLINE_CHECK};
use super::{CompileContext, QueryFailures};
use crate::script_docs::SegmentDocs;

/// How many of the inner query's documents are taken (and fast-path scored) at once: large
/// enough that a column read and an operation are one call over many documents, small enough
/// that a slice ending inside a block scores few documents it does not collect.
const BLOCK: usize = 2 * COLLECT_BLOCK_BUFFER_LEN;

/// `script_score`.
pub(super) fn script_score(
    ctx: &CompileContext,
    query: &crate::ast::ScriptScoreQuery,
) -> Result<Box<dyn Query>> {
    let inner = super::compile(&query.query, ctx)?;
    let script = prepare(ctx, &query.script, ScriptContext::Score)?;
    Ok(super::boosted(
        Box::new(ScriptScoreQuery {
            inner,
            script,
            min_score: query.min_score,
            deadline: ctx.deadline,
            failures: ctx.failures.clone(),
        }),
        query.boost,
    ))
}

#[derive(Debug)]
struct ScriptScoreQuery {
    inner: Box<dyn Query>,
    script: Arc<PreparedScript>,
    min_score: Option<f32>,
    deadline: Option<Instant>,
    /// Under the shard's search: scores are computed as the collection asks for documents
    /// (a slice scoring a part of a segment scores that part only), a failure waits here.
    failures: Option<QueryFailures>,
}

impl Clone for ScriptScoreQuery {
    fn clone(&self) -> Self {
        ScriptScoreQuery {
            inner: self.inner.box_clone(),
            script: self.script.clone(),
            min_score: self.min_score,
            deadline: self.deadline,
            failures: self.failures.clone(),
        }
    }
}

impl Query for ScriptScoreQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = self.inner.weight(enable_scoring)?;
        if !enable_scoring.is_scoring_enabled() && self.min_score.is_none() {
            // as OpenSearch: without scores (and no min_score), the script does not run
            return Ok(inner);
        }
        Ok(Box::new(ScriptScoreWeight {
            inner,
            script: self.script.clone(),
            min_score: self.min_score,
            deadline: self.deadline,
            failures: self.failures.clone(),
        }))
    }
}

struct ScriptScoreWeight {
    inner: Box<dyn Weight>,
    script: Arc<PreparedScript>,
    min_score: Option<f32>,
    deadline: Option<Instant>,
    failures: Option<QueryFailures>,
}

impl Weight for ScriptScoreWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scoring = ScriptScoring {
            inner: self.inner.scorer(reader, 1.0)?,
            docs: self.script.fields.open(reader)?,
            frame: self.script.script.new_frame(),
            slots: self
                .script
                .fast
                .as_ref()
                .map(|f| f.slots())
                .unwrap_or_default(),
            script: self.script.clone(),
            alive: reader.alive_bitset().cloned(),
            min_score: self.min_score,
            deadline: self.deadline,
            block: Block::default(),
            since_check: 0,
            ended: false,
        };
        if let Some(failures) = &self.failures {
            let mut lazy = LazyScriptScorer {
                scoring,
                failures: failures.clone(),
                boost,
                doc: TERMINATED,
                score: 0.0,
            };
            lazy.settle();
            return Ok(Box::new(lazy));
        }
        let (mut ids, mut scores) = (Vec::new(), Vec::new());
        while let Some((doc, score)) = scoring.settle().map_err(carried)? {
            ids.push(doc);
            scores.push(score * boost);
            scoring.step();
        }
        Ok(Box::new(ScoredDocs::new(ids, scores)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new_with_string(
            format!(
                "script score function, computed with script:\"{}\"",
                self.script.script.source()
            ),
            score,
        ))
    }
}

/// A block of the inner query's live documents with their query scores and, for a script
/// with the fast path, their script scores; the position is `at`.
#[derive(Default)]
struct Block {
    docs: Vec<DocId>,
    query_scores: Vec<f64>,
    /// The fast path's scores, and whether each document has every value the path reads
    /// (one that has not is scored by the interpreter).
    fast: Vec<f64>,
    has_fast: Vec<bool>,
    at: usize,
    /// Scratch kept between blocks: the block's values of each field slot, integer column
    /// values, spare buffers for the evaluation.
    columns: Vec<Vec<f64>>,
    ints: Vec<i64>,
    spare: Vec<Vec<f64>>,
}

/// The inner query's live documents of one segment, walked in blocks and scored by the
/// script: the part the lazy and the eager scorer share.
struct ScriptScoring {
    inner: Box<dyn Scorer>,
    script: Arc<PreparedScript>,
    docs: SegmentDocs,
    frame: Vec<Value>,
    /// The field slots the fast path reads.
    slots: Vec<u32>,
    alive: Option<AliveBitSet>,
    min_score: Option<f32>,
    deadline: Option<Instant>,
    block: Block,
    /// Documents taken since the clock was last read.
    since_check: u32,
    /// No documents remain (the inner query's end, the deadline, or a failure).
    ended: bool,
}

impl ScriptScoring {
    /// The document at or after the position that scores at least `min_score`, with its
    /// score (unboosted); `None` at the end. A script failure ends the walk.
    fn settle(&mut self) -> Result<Option<(DocId, f32)>> {
        loop {
            if self.ended || (self.block.at >= self.block.docs.len() && !self.fill()) {
                return Ok(None);
            }
            let at = self.block.at;
            let doc = self.block.docs[at];
            let score = match self.script.fast.is_some() && self.block.has_fast[at] {
                true => self.block.fast[at],
                false => self.interpret(doc, self.block.query_scores[at])?,
            };
            // NaN is no valid score either
            if score.is_nan() || score < 0.0 {
                self.ended = true;
                return Err(Error::illegal_argument(format!(
                    "script_score script returned an invalid score [{}] for doc [{doc}]. Must be a non-negative score!",
                    java_double(score)
                )));
            }
            let score = score as f32;
            if self.min_score.is_none_or(|min| score >= min) {
                return Ok(Some((doc, score)));
            }
            self.block.at += 1;
        }
    }

    /// Moves past the current document.
    fn step(&mut self) {
        self.block.at += 1;
    }

    /// Moves to the first document at or after `target` (which is past the current one).
    fn seek(&mut self, target: DocId) {
        let block = &mut self.block;
        block.at += block.docs[block.at.min(block.docs.len())..].partition_point(|&d| d < target);
        if block.at >= block.docs.len() && self.inner.doc() < target {
            self.inner.seek(target);
        }
    }

    /// The script run by the interpreter on `doc`.
    fn interpret(&mut self, doc: DocId, query_score: f64) -> Result<f64> {
        self.docs.set_doc(doc);
        let value = self
            .script
            .run(&mut self.frame, &self.docs, query_score)
            .inspect_err(|_| self.ended = true)?;
        as_score(&value).ok_or_else(|| {
            self.ended = true;
            Error::new(
                "class_cast_exception",
                400,
                format!("Cannot cast from [{}] to [double].", value.java_class()),
            )
        })
    }

    /// Takes the next block of live documents from the inner scorer (and scores it on the
    /// fast path); false at the inner query's end or past the deadline.
    fn fill(&mut self) -> bool {
        let block = &mut self.block;
        block.docs.clear();
        block.query_scores.clear();
        block.at = 0;
        let alive = |doc: &DocId| self.alive.as_ref().is_none_or(|a| a.is_alive(*doc));
        // the clock is read every `DEADLINE_CHECK` documents visited, deleted ones included
        let deadline = self.deadline;
        let mut since_check = self.since_check;
        let mut past_deadline = |visited: u32| {
            since_check += visited;
            if since_check < DEADLINE_CHECK {
                return false;
            }
            since_check = 0;
            deadline.is_some_and(|d| Instant::now() >= d)
        };
        let mut past = false;
        if self.script.script.reads_score() {
            let mut doc = self.inner.doc();
            while doc != TERMINATED && block.docs.len() < BLOCK {
                if alive(&doc) {
                    block.docs.push(doc);
                    block.query_scores.push(f64::from(self.inner.score()));
                }
                doc = self.inner.advance();
                if past_deadline(1) {
                    past = true;
                    break;
                }
            }
        } else {
            // the query's scores are not read: its documents come a buffer at a time
            let mut buffer = [0; COLLECT_BLOCK_BUFFER_LEN];
            loop {
                let n = self.inner.fill_buffer(&mut buffer);
                block.docs.extend(buffer[..n].iter().filter(|d| alive(d)));
                if past_deadline(n as u32) {
                    past = true;
                    break;
                }
                // a short buffer is the end (or a pause) of the query's documents
                let short = n < buffer.len() && !block.docs.is_empty();
                if n == 0 || short || block.docs.len() + buffer.len() > BLOCK {
                    break;
                }
            }
            block.query_scores.resize(block.docs.len(), 0.0);
        }
        self.since_check = since_check;
        if past {
            block.docs.clear();
        }
        if block.docs.is_empty() {
            self.ended = true;
            return false;
        }
        if let Some(fast) = &self.script.fast {
            let n = block.docs.len();
            block.has_fast.clear();
            block.has_fast.resize(n, true);
            block.fast.resize(n, 0.0);
            for &slot in &self.slots {
                let slot_index = slot as usize;
                if block.columns.len() <= slot_index {
                    block.columns.resize_with(slot_index + 1, Vec::new);
                }
                let values = &mut block.columns[slot_index];
                values.resize(n, 0.0);
                self.docs.first_f64_block(
                    slot,
                    &block.docs,
                    values,
                    &mut block.has_fast,
                    &mut block.ints,
                );
            }
            fast.eval_block(
                &block.columns,
                &block.query_scores,
                &mut block.fast[..n],
                &mut block.spare,
            );
        }
        true
    }
}

/// The scorer of a `script_score` under the shard's search: each document's score is
/// settled when the collection reaches it (see the module's docs). The first failure is
/// recorded for the shard and ends the scorer.
struct LazyScriptScorer {
    scoring: ScriptScoring,
    failures: QueryFailures,
    boost: Score,
    /// The current document (TERMINATED at the end) and its boosted score.
    doc: DocId,
    score: Score,
}

impl LazyScriptScorer {
    fn settle(&mut self) -> DocId {
        (self.doc, self.score) = match self.scoring.settle() {
            Ok(Some((doc, score))) => (doc, score * self.boost),
            Ok(None) => (TERMINATED, 0.0),
            Err(e) => {
                self.failures.record(e);
                (TERMINATED, 0.0)
            }
        };
        self.doc
    }
}

impl DocSet for LazyScriptScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.scoring.step();
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        self.scoring.seek(target);
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.scoring.inner.size_hint()
    }
}

impl Scorer for LazyScriptScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

/// Documents with scores computed beforehand, in doc order.
struct ScoredDocs {
    ids: Vec<DocId>,
    scores: Vec<Score>,
    at: usize,
}

impl ScoredDocs {
    fn new(ids: Vec<DocId>, scores: Vec<Score>) -> Self {
        ScoredDocs { ids, scores, at: 0 }
    }
}

impl DocSet for ScoredDocs {
    fn advance(&mut self) -> DocId {
        if self.at < self.ids.len() {
            self.at += 1;
        }
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() >= target {
            return self.doc();
        }
        self.at += self.ids[self.at..].partition_point(|&d| d < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.ids.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.ids.len() - self.at.min(self.ids.len())) as u32
    }
}

impl Scorer for ScoredDocs {
    fn score(&mut self) -> Score {
        self.scores.get(self.at).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scored_docs_advance_and_seek() {
        let mut docs = ScoredDocs::new(vec![1, 4, 9], vec![0.5, 1.0, 2.0]);
        assert_eq!(docs.doc(), 1);
        assert_eq!(docs.score(), 0.5);
        assert_eq!(docs.seek(4), 4);
        assert_eq!(docs.score(), 1.0);
        assert_eq!(docs.seek(5), 9);
        assert_eq!(docs.advance(), TERMINATED);
        assert_eq!(docs.seek(20), TERMINATED);
        assert_eq!(docs.size_hint(), 0);
    }
}
