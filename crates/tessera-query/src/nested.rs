//! Block join over nested documents, as Lucene's `ToParentBlockJoinQuery` does it.
//!
//! A document with `nested` objects is indexed as one block in one segment: each nested object
//! a hidden child document carrying its path in `_nested_path`, its own nested objects before
//! it, and the root document last (`tessera_mapping::document`). tantivy has no block join, so
//! it is built here on two facts: a block never straddles segments (one writer batch) and a
//! merge keeps document order. The parent of a child of path `P` is then the first document at
//! or after it on `P`'s parent level (the root documents, or the children of the enclosing
//! nested path), a "next set bit" in that level's bitset. The bitsets are computed once per
//! segment and level and cached: segments never change (deletes only hide whole blocks).
//!
//! [`RootDocsQuery`] keeps a query to root documents (what every top-level search of an index
//! with nested fields runs); [`NestedQuery`] is the `nested` query: a child query joined to
//! the parents with a `score_mode`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tantivy::index::SegmentId;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};
use tessera_mapping::NestedMarkers;

/// A set of a segment's documents with next/previous set bit.
#[derive(Debug)]
pub struct DocBits {
    words: Vec<u64>,
    max_doc: DocId,
}

impl DocBits {
    fn new(max_doc: DocId) -> DocBits {
        DocBits {
            words: vec![0; (max_doc as usize).div_ceil(64)],
            max_doc,
        }
    }

    /// The set of `docs` (each below `max_doc`).
    pub fn from_docs(max_doc: DocId, docs: &[DocId]) -> DocBits {
        let mut bits = DocBits::new(max_doc);
        for &doc in docs {
            bits.insert(doc);
        }
        bits
    }

    fn insert(&mut self, doc: DocId) {
        self.words[(doc / 64) as usize] |= 1 << (doc % 64);
    }

    fn flip_all(&mut self) {
        for w in &mut self.words {
            *w = !*w;
        }
        let tail = self.max_doc % 64;
        if tail != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << tail) - 1;
            }
        }
    }

    pub fn contains(&self, doc: DocId) -> bool {
        doc < self.max_doc && self.words[(doc / 64) as usize] & (1 << (doc % 64)) != 0
    }

    /// The first set document at or after `from`; [`TERMINATED`] when there is none.
    pub fn next_set(&self, from: DocId) -> DocId {
        if from >= self.max_doc {
            return TERMINATED;
        }
        let mut i = (from / 64) as usize;
        let mut word = self.words[i] & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return i as DocId * 64 + word.trailing_zeros();
            }
            i += 1;
            if i >= self.words.len() {
                return TERMINATED;
            }
            word = self.words[i];
        }
    }

    /// The last set document strictly before `before`.
    pub fn prev_set(&self, before: DocId) -> Option<DocId> {
        let before = before.min(self.max_doc);
        if before == 0 {
            return None;
        }
        let last = before - 1;
        let mut i = (last / 64) as usize;
        let shift = 63 - (last % 64);
        let mut word = (self.words[i] << shift) >> shift;
        loop {
            if word != 0 {
                return Some(i as DocId * 64 + 63 - word.leading_zeros());
            }
            if i == 0 {
                return None;
            }
            i -= 1;
            word = self.words[i];
        }
    }
}

/// A level of the document blocks: the root documents, or the children of one nested path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    Root,
    Path(String),
}

impl Level {
    pub fn of(path: Option<&str>) -> Level {
        match path {
            Some(p) => Level::Path(p.to_string()),
            None => Level::Root,
        }
    }
}

type Cache = Mutex<HashMap<(SegmentId, Level), Arc<DocBits>>>;

/// Level bitsets of the segments seen lately; cleared when it grows past this many (segments
/// merged away are not tracked, so the cache forgets them all at once now and then).
const CACHE_ENTRIES: usize = 4096;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The documents of `level` in `reader`'s segment (cached per segment).
pub fn level_bits(
    reader: &SegmentReader,
    markers: NestedMarkers,
    level: &Level,
) -> tantivy::Result<Arc<DocBits>> {
    let key = (reader.segment_id(), level.clone());
    if let Some(bits) = cache().lock().expect("nested cache").get(&key) {
        return Ok(bits.clone());
    }
    let bits = Arc::new(compute_level(reader, markers, level)?);
    let mut cache = cache().lock().expect("nested cache");
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(key, bits.clone());
    Ok(bits)
}

fn compute_level(
    reader: &SegmentReader,
    markers: NestedMarkers,
    level: &Level,
) -> tantivy::Result<DocBits> {
    let mut bits = DocBits::new(reader.max_doc());
    let inverted = reader.inverted_index(markers.path)?;
    let mut mark = |postings: &mut tantivy::postings::SegmentPostings| {
        let mut doc = postings.doc();
        while doc != TERMINATED {
            bits.insert(doc);
            doc = postings.advance();
        }
    };
    match level {
        Level::Path(path) => {
            let term = tantivy::Term::from_field_text(markers.path, path);
            if let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? {
                mark(&mut postings);
            }
        }
        Level::Root => {
            // every document but the children, whatever their path
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                mark(&mut postings);
            }
            bits.flip_all();
        }
    }
    Ok(bits)
}

// ---- root documents only ----

/// `inner`, limited to root documents: the top-level query of an index with nested fields
/// (or, [`RootDocsQuery::at`], to the documents of one level: a `match_all` inside a `nested`
/// query means the path's children).
#[derive(Debug)]
pub struct RootDocsQuery {
    inner: Box<dyn Query>,
    markers: NestedMarkers,
    level: Level,
}

impl Clone for RootDocsQuery {
    fn clone(&self) -> Self {
        RootDocsQuery {
            inner: self.inner.box_clone(),
            markers: self.markers,
            level: self.level.clone(),
        }
    }
}

impl RootDocsQuery {
    pub fn new(inner: Box<dyn Query>, markers: NestedMarkers) -> RootDocsQuery {
        Self::at(inner, markers, Level::Root)
    }

    /// `inner`, limited to the documents of `level`.
    pub fn at(inner: Box<dyn Query>, markers: NestedMarkers, level: Level) -> RootDocsQuery {
        RootDocsQuery {
            inner,
            markers,
            level,
        }
    }
}

impl Query for RootDocsQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(RootDocsWeight {
            inner: self.inner.weight(enable_scoring)?,
            markers: self.markers,
            level: self.level.clone(),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.inner.query_terms(visitor)
    }
}

struct RootDocsWeight {
    inner: Box<dyn Weight>,
    markers: NestedMarkers,
    level: Level,
}

impl Weight for RootDocsWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let roots = level_bits(reader, self.markers, &self.level)?;
        let mut scorer = FilteredScorer {
            inner: self.inner.scorer(reader, boost)?,
            keep: roots,
        };
        scorer.settle();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }
}

/// The documents of `inner` that `keep` holds.
struct FilteredScorer {
    inner: Box<dyn Scorer>,
    keep: Arc<DocBits>,
}

impl FilteredScorer {
    fn settle(&mut self) -> DocId {
        let mut doc = self.inner.doc();
        while doc != TERMINATED && !self.keep.contains(doc) {
            doc = self.inner.advance();
        }
        doc
    }
}

impl DocSet for FilteredScorer {
    fn advance(&mut self) -> DocId {
        self.inner.advance();
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.inner.doc() < target {
            self.inner.seek(target);
        }
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.inner.doc()
    }

    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }

    fn cost(&self) -> u64 {
        self.inner.cost()
    }
}

impl Scorer for FilteredScorer {
    fn score(&mut self) -> Score {
        self.inner.score()
    }
}

// ---- the nested query ----

/// How a parent's score is made of its matching children's (`score_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ScoreMode {
    Avg,
    Max,
    Min,
    Sum,
    None,
}

impl ScoreMode {
    pub fn parse(name: &str) -> Option<ScoreMode> {
        Some(match name {
            "avg" => ScoreMode::Avg,
            "max" => ScoreMode::Max,
            "min" => ScoreMode::Min,
            "sum" | "total" => ScoreMode::Sum,
            "none" => ScoreMode::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ScoreMode::Avg => "avg",
            ScoreMode::Max => "max",
            ScoreMode::Min => "min",
            ScoreMode::Sum => "sum",
            ScoreMode::None => "none",
        }
    }
}

/// The parents (on `parent` level) of the children of `path` that match `child`.
#[derive(Debug)]
pub struct NestedQuery {
    child: Box<dyn Query>,
    markers: NestedMarkers,
    path: String,
    parent: Level,
    score_mode: ScoreMode,
}

impl Clone for NestedQuery {
    fn clone(&self) -> Self {
        NestedQuery {
            child: self.child.box_clone(),
            markers: self.markers,
            path: self.path.clone(),
            parent: self.parent.clone(),
            score_mode: self.score_mode,
        }
    }
}

impl NestedQuery {
    pub fn new(
        child: Box<dyn Query>,
        markers: NestedMarkers,
        path: String,
        parent: Level,
        score_mode: ScoreMode,
    ) -> NestedQuery {
        NestedQuery {
            child,
            markers,
            path,
            parent,
            score_mode,
        }
    }
}

impl Query for NestedQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let scoring = enable_scoring.is_scoring_enabled() && self.score_mode != ScoreMode::None;
        let child_scoring = if scoring {
            enable_scoring
        } else {
            EnableScoring::disabled_from_schema(enable_scoring.schema())
        };
        Ok(Box::new(NestedWeight {
            child: self.child.weight(child_scoring)?,
            markers: self.markers,
            path: Level::Path(self.path.clone()),
            parent: self.parent.clone(),
            score_mode: self.score_mode,
            scoring,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a tantivy::Term, bool)) {
        self.child.query_terms(visitor)
    }
}

struct NestedWeight {
    child: Box<dyn Weight>,
    markers: NestedMarkers,
    path: Level,
    parent: Level,
    score_mode: ScoreMode,
    scoring: bool,
}

impl Weight for NestedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let children = level_bits(reader, self.markers, &self.path)?;
        let parents = level_bits(reader, self.markers, &self.parent)?;
        let mut child = FilteredScorer {
            inner: self.child.scorer(reader, 1.0)?,
            keep: children,
        };
        child.settle();
        let mut scorer = NestedScorer {
            child,
            parents,
            score_mode: self.score_mode,
            scoring: self.scoring,
            boost,
            doc: 0,
            score: 0.0,
        };
        scorer.next_parent();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = crate::compile::score_of_match(self, reader, doc)?;
        Ok(Explanation::new_with_string(
            format!(
                "Score based on child doc range from nested query (score_mode {})",
                self.score_mode.name()
            ),
            score,
        ))
    }
}

struct NestedScorer {
    child: FilteredScorer,
    parents: Arc<DocBits>,
    score_mode: ScoreMode,
    scoring: bool,
    boost: Score,
    doc: DocId,
    score: Score,
}

impl NestedScorer {
    /// Moves to the parent of the child the child scorer stands on, scoring it from all its
    /// matching children.
    fn next_parent(&mut self) -> DocId {
        let first = self.child.doc();
        if first == TERMINATED {
            self.doc = TERMINATED;
            return TERMINATED;
        }
        let parent = self.parents.next_set(first);
        if parent == TERMINATED {
            // a child without parent (cannot happen in a whole block): nothing more matches
            self.doc = TERMINATED;
            return TERMINATED;
        }
        let (mut sum, mut min, mut max, mut count) =
            (0.0f32, f32::INFINITY, f32::NEG_INFINITY, 0u32);
        let mut doc = first;
        while doc < parent {
            if self.scoring {
                let s = self.child.score();
                sum += s;
                min = min.min(s);
                max = max.max(s);
            }
            count += 1;
            doc = self.child.advance();
        }
        self.doc = parent;
        self.score = if !self.scoring || count == 0 {
            0.0
        } else {
            self.boost
                * match self.score_mode {
                    ScoreMode::Avg => sum / count as f32,
                    ScoreMode::Max => max,
                    ScoreMode::Min => min,
                    ScoreMode::Sum => sum,
                    ScoreMode::None => 0.0,
                }
        };
        parent
    }
}

impl DocSet for NestedScorer {
    fn advance(&mut self) -> DocId {
        self.next_parent()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        // the children of parents at or after `target` come after the last parent before it
        let from = self.parents.prev_set(target).map_or(0, |p| p + 1);
        if self.child.doc() < from {
            self.child.seek(from);
        }
        self.next_parent()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.child.size_hint()
    }

    fn cost(&self) -> u64 {
        self.child.cost()
    }
}

impl Scorer for NestedScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_and_previous_set_bits() {
        let mut bits = DocBits::new(200);
        for d in [0, 3, 64, 130, 199] {
            bits.insert(d);
        }
        assert_eq!(bits.next_set(0), 0);
        assert_eq!(bits.next_set(1), 3);
        assert_eq!(bits.next_set(4), 64);
        assert_eq!(bits.next_set(65), 130);
        assert_eq!(bits.next_set(199), 199);
        assert_eq!(bits.next_set(200), TERMINATED);
        assert_eq!(bits.prev_set(0), None);
        assert_eq!(bits.prev_set(1), Some(0));
        assert_eq!(bits.prev_set(64), Some(3));
        assert_eq!(bits.prev_set(65), Some(64));
        assert_eq!(bits.prev_set(500), Some(199));
        bits.flip_all();
        assert!(!bits.contains(3) && bits.contains(4) && !bits.contains(199));
        assert_eq!(bits.next_set(199), TERMINATED);
        assert_eq!(bits.prev_set(200), Some(198));
    }
}
