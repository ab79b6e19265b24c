//! Collecting one slice: walk its segment parts with the shared weight, count matches, keep
//! the best hits and feed aggregations. Each slice gets its own collectors (the caller owns the
//! slice's aggregator and builds its result); the shard reduces slices with the same reduce the
//! coordinator uses.
//!
//! Three ways through a part, cheapest first:
//! - counting only (no hits, no aggregations): `Weight::count`, no per-doc work;
//! - aggregations without hits: matching docs are read in blocks (`fill_buffer`) and handed
//!   to the aggregators a block at a time;
//! - everything else: doc at a time, with hits ranked in a top-k and docs queued for the
//!   aggregators. A constant-score query sorted by score keeps the first hits in index order
//!   and stops as soon as the total-hits threshold is reached, as Lucene does (not when
//!   aggregations need every match).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tantivy::fastfield::AliveBitSet;
use tantivy::query::{ConstScorer, Scorer, Weight};
use tantivy::{DocId, DocSet, SegmentReader, COLLECT_BLOCK_BUFFER_LEN, TERMINATED};
use tessera_aggs::{SliceAggregator, SortedSegment};
use tessera_common::breaker::{RequestBreaker, REUSED_ARRAYS};
use tessera_common::{Error, Result};
use tessera_index::ShardSnapshot;
use tessera_query::compile::ColumnFilter;

use crate::collapse::{CollapseField, CollapseKey, SegmentCollapseKeys, TopGroups};
use crate::collect_plan::{plan_part, AggShortcuts, PartPath};
use crate::hits::{HitSort, QueryResult, ShardHit, TopK};
use crate::slice::{SegmentPart, Slice};
use crate::sort::{Missing, Order, SortField, SortValue};
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
    /// Set when the request's client has gone away: observed with the deadline, every few
    /// thousand documents, so that a slice already running stops too.
    pub cancelled: Option<&'a AtomicBool>,
    /// The request's circuit breaker: the hit queue is charged to it, and a trip (of the
    /// aggregators' charges) stops the slice at the next check.
    pub breaker: Option<&'a RequestBreaker>,
    pub min_score: Option<f32>,
    /// Only hits strictly after this one in the full order are kept (`search_after`, a
    /// scroll's position).
    pub search_after: Option<&'a ShardHit>,
    /// Every match has the same score: the first hits in index order are the top hits.
    pub constant_score: bool,
    /// Whether scores are computed.
    pub scoring: bool,
    pub shard_index: u32,
    /// The shard's index name (the value of an `_index` sort).
    pub index: &'a str,
    /// `post_filter`: limits hits and the total, not the aggregations.
    pub post_filter: Option<&'a dyn Weight>,
    /// The query as a range on one integer column (or match-all), when it is that simple and
    /// nothing but aggregations is collected: aggregations that can count from the column's
    /// sorted values then skip the documents (see [`tessera_aggs::SortedSegment`]).
    pub column_filter: Option<&'a ColumnFilter>,
    /// The query matches every live document (`match_all`).
    pub matches_all: bool,
    /// `collapse`: the best hit of each group is kept, `k` groups.
    pub collapse: Option<&'a CollapseField>,
}

const DEADLINE_CHECK_INTERVAL: u32 = 4096;
/// What the circuit breaker is charged per hit a slice keeps (a `ShardHit` with its sort keys).
const HIT_BYTES: u64 = 128;
/// Docs handed to the aggregators at once.
const AGG_BLOCK: usize = 1024;

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

impl CollectParams<'_> {
    /// The sort field when the hits are a `match_all` sorted first by a field and nothing but
    /// the hits and their count is asked for: the requests whose top a segment's sorted copy
    /// of that field can give (see [`SegmentSortKeys::top_candidates`]).
    pub fn candidate_sort_field(&self) -> Option<&str> {
        let HitSort::Fields { fields, .. } = self.sort else {
            return None;
        };
        let Some(SortField::Field { field, .. }) = fields.first() else {
            return None;
        };
        let plain = self.matches_all
            && self.k > 0
            && self.collapse.is_none()
            && !self.scoring
            && self.post_filter.is_none()
            && self.min_score.is_none()
            && self.terminate_after.is_none();
        plain.then_some(field.as_str())
    }

    /// Whether the first sort field puts documents without a value last (its default): then a
    /// sparse column's sorted copy can still name the top (see
    /// [`SegmentSortKeys::top_candidates`]).
    pub fn candidate_missing_last(&self) -> bool {
        let HitSort::Fields { fields, .. } = self.sort else {
            return false;
        };
        matches!(
            fields.first(),
            Some(SortField::Field {
                missing: Missing::Last,
                ..
            })
        )
    }

    /// When the hits are sorted by `_doc` or `_shard_doc` ascending alone (the order a slice
    /// visits documents in), how a document's sort key is made: its doc id plus the segment's
    /// base, plus the shard's place in the high bits for `_shard_doc`.
    pub fn index_order(&self) -> Option<IndexOrder> {
        let HitSort::Fields { fields, .. } = self.sort else {
            return None;
        };
        match fields.as_slice() {
            [SortField::Doc { order: Order::Asc }] => Some(IndexOrder { shard_bits: 0 }),
            [SortField::ShardDoc { order: Order::Asc }] => Some(IndexOrder {
                shard_bits: (self.shard_index as u64) << 32,
            }),
            _ => None,
        }
    }

    /// The first doc of a segment (whose `_doc` keys start at `doc_base`) that may come after
    /// the `search_after` position of an index-order sort: the earlier ones only count.
    fn first_after(&self, doc_base: u64) -> DocId {
        let (Some(order), Some(after)) = (self.index_order(), self.search_after) else {
            return 0;
        };
        let Some(SortValue::I64(position)) = after.sort.first() else {
            return 0;
        };
        let start = order.shard_bits + doc_base;
        (*position as u64)
            .saturating_sub(start)
            .min(DocId::MAX as u64) as DocId
    }
}

/// See [`CollectParams::index_order`].
#[derive(Clone, Copy, Debug)]
pub struct IndexOrder {
    shard_bits: u64,
}

/// Ascending doc ids as a `DocSet` (the candidates of a narrowed sort).
struct CandidateDocs {
    docs: Vec<DocId>,
    cursor: usize,
}

impl CandidateDocs {
    fn new(docs: Vec<DocId>) -> CandidateDocs {
        CandidateDocs { docs, cursor: 0 }
    }
}

impl DocSet for CandidateDocs {
    fn advance(&mut self) -> DocId {
        self.cursor = (self.cursor + 1).min(self.docs.len());
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.cursor).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.cursor) as u32
    }
}

/// The hits a slice keeps: the best `k`, or under `collapse` the best hit of the best `k`
/// groups.
enum Top<'a> {
    Hits(TopK<'a>),
    Groups(TopGroups<'a>),
}

impl<'a> Top<'a> {
    fn new(params: &CollectParams<'a>) -> Top<'a> {
        match params.collapse {
            Some(_) => Top::Groups(TopGroups::new(params.k, params.sort)),
            None => Top::Hits(TopK::new(params.k, params.sort)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Top::Hits(top) => top.len(),
            Top::Groups(top) => top.len(),
        }
    }

    fn worst(&self) -> Option<&ShardHit> {
        match self {
            Top::Hits(top) => top.worst(),
            Top::Groups(top) => top.worst(),
        }
    }

    fn accepts(&self, hit: &ShardHit) -> bool {
        match self {
            Top::Hits(top) => top.accepts(hit),
            Top::Groups(top) => top.accepts(hit),
        }
    }

    fn push(&mut self, hit: ShardHit) {
        match self {
            Top::Hits(top) => top.push(hit),
            Top::Groups(top) => top.push(hit),
        }
    }

    fn into_sorted(self) -> Vec<ShardHit> {
        match self {
            Top::Hits(top) => top.into_sorted(),
            Top::Groups(top) => top.into_sorted(),
        }
    }

    /// The best hit kept of a group (under `collapse`).
    fn group_head(&self, key: &CollapseKey) -> Option<&ShardHit> {
        match self {
            Top::Hits(_) => None,
            Top::Groups(top) => top.head(key),
        }
    }
}

/// Why a slice stopped before its last part.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Stop,
}

/// Docs queued for the aggregators, with their scores when the aggregators show them.
struct AggFeed<'a> {
    aggs: Option<&'a mut SliceAggregator>,
    block: Vec<DocId>,
    /// The scores of `block`'s docs, when `scored`.
    scores: Vec<f32>,
    /// The query scores its matches and the aggregators want each one's score.
    scored: bool,
}

impl AggFeed<'_> {
    #[inline]
    fn push(&mut self, doc: DocId, score: f32) {
        if self.aggs.is_some() {
            self.block.push(doc);
            if self.scored {
                self.scores.push(score);
            }
            if self.block.len() == AGG_BLOCK {
                self.flush();
            }
        }
    }

    /// Queues ascending docs (following those already queued), a block at a time; only
    /// for matches without scores.
    fn extend(&mut self, mut docs: &[DocId]) {
        if self.aggs.is_none() {
            return;
        }
        debug_assert!(!self.scored, "scored matches are pushed one by one");
        while !docs.is_empty() {
            let room = AGG_BLOCK - self.block.len();
            let (now, later) = docs.split_at(room.min(docs.len()));
            self.block.extend_from_slice(now);
            if self.block.len() == AGG_BLOCK {
                self.flush();
            }
            docs = later;
        }
    }

    fn flush(&mut self) {
        match self.aggs.as_deref_mut() {
            Some(_) if self.block.is_empty() => {}
            Some(aggs) if self.scored => aggs.collect_scored(&self.block, &self.scores),
            Some(aggs) => aggs.collect(&self.block),
            None => {}
        }
        self.block.clear();
        self.scores.clear();
    }
}

/// Collects one slice. Its parts must be in index order (see `ShardSnapshot::segments_in_order`).
pub fn collect_slice(
    snapshot: &ShardSnapshot,
    weight: &dyn Weight,
    slice: &Slice,
    params: &CollectParams,
    aggs: Option<&mut SliceAggregator>,
) -> Result<QueryResult> {
    if let Some(breaker) = params.breaker {
        // the slice's top-k queue, before it is allocated
        breaker.charge(params.k as u64 * HIT_BYTES, REUSED_ARRAYS)?;
    }
    let mut collector = SliceCollector {
        snapshot,
        weight,
        params,
        top: Top::new(params),
        result: QueryResult::default(),
        max_score: f32::NEG_INFINITY,
        doc_bases: doc_bases(snapshot),
        since_check: 0,
        cancelled: false,
        shortcuts: aggs.as_deref().map(AggShortcuts::of_slice),
        feed: AggFeed {
            scored: params.scoring && aggs.as_deref().is_some_and(SliceAggregator::wants_scores),
            aggs,
            block: Vec::with_capacity(AGG_BLOCK),
            scores: Vec::new(),
        },
    };
    let segment_readers = snapshot.searcher.segment_readers();
    for part in &slice.parts {
        let reader = &segment_readers[part.segment_ord as usize];
        if let Some(aggs) = collector.feed.aggs.as_deref_mut() {
            aggs.set_segment(reader, part.segment_ord, part.docs.clone())?;
        }
        let flow = collector.collect_part(reader, part)?;
        collector.feed.flush();
        if let Some(aggs) = collector.feed.aggs.as_deref_mut() {
            aggs.finish_segment()?;
        }
        if flow == Flow::Stop {
            break;
        }
    }
    if collector.cancelled {
        return Err(crate::concurrent::cancelled_mid_slice_error());
    }
    if let Some(error) = params.breaker.and_then(RequestBreaker::tripped) {
        return Err(error.clone());
    }
    let SliceCollector {
        mut result,
        top,
        max_score,
        ..
    } = collector;
    if params.scoring && max_score > f32::NEG_INFINITY {
        result.max_score = Some(max_score);
    }
    result.hits = top.into_sorted();
    Ok(result)
}

struct SliceCollector<'a, 'b> {
    snapshot: &'a ShardSnapshot,
    weight: &'a dyn Weight,
    params: &'a CollectParams<'a>,
    top: Top<'a>,
    result: QueryResult,
    max_score: f32,
    doc_bases: Vec<u64>,
    since_check: u32,
    /// The request was cancelled while this slice ran.
    cancelled: bool,
    /// What the slice's aggregations can count without documents (the collection plan's
    /// view of them), read once from its own collectors.
    shortcuts: Option<AggShortcuts>,
    feed: AggFeed<'b>,
}

impl SliceCollector<'_, '_> {
    fn scorer(&self, reader: &SegmentReader, part: &SegmentPart) -> Result<Box<dyn Scorer>> {
        let mut scorer = self
            .weight
            .scorer(reader, 1.0)
            .map_err(|e| Error::internal("create a scorer", e))?;
        if scorer.doc() < part.docs.start {
            scorer.seek(part.docs.start);
        }
        Ok(scorer)
    }

    /// True (and marks the result) when the request's deadline has passed or its client has
    /// gone away; checked every few thousand documents.
    #[inline]
    fn deadline_passed(&mut self, docs: u32) -> bool {
        self.since_check += docs;
        if self.since_check < DEADLINE_CHECK_INTERVAL {
            return false;
        }
        self.since_check = 0;
        if self
            .params
            .cancelled
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            self.cancelled = true;
            return true;
        }
        if self.params.breaker.is_some_and(|b| b.tripped().is_some()) {
            return true;
        }
        if self.params.deadline.is_some_and(|d| Instant::now() >= d) {
            self.result.timed_out = true;
            return true;
        }
        false
    }

    fn collect_part(&mut self, reader: &SegmentReader, part: &SegmentPart) -> Result<Flow> {
        let whole_segment = part.docs.start == 0 && part.docs.end >= reader.max_doc();
        let mut path = plan_part(self.params, self.shortcuts.as_ref(), reader, whole_segment);
        loop {
            match path {
                PartPath::SortedColumns if self.collect_sorted(reader)? => {
                    return Ok(Flow::Continue)
                }
                PartPath::Dictionary if self.count_from_dictionary(reader)? => {
                    return Ok(Flow::Continue)
                }
                PartPath::SortedColumns | PartPath::Dictionary => {
                    path = path.fallback(self.params, self.shortcuts.as_ref(), reader)
                }
                PartPath::CountOnly => return self.count_part(reader),
                PartPath::Blocks => return self.collect_blocks(reader, part),
                PartPath::Docs {
                    first_hits_only,
                    sorted_candidates,
                } => return self.collect_docs(reader, part, first_hits_only, sorted_candidates),
            }
        }
    }

    /// A whole segment answered from sorted column values, when the query is a column filter
    /// and every aggregation counts from that column; false when documents must be visited.
    fn collect_sorted(&mut self, reader: &SegmentReader) -> Result<bool> {
        // the plan chose this path: a column filter, and aggregations that all count from
        // the filter's column (or any column, under a match-all)
        let (Some(filter), Some(aggs), Some(fields)) = (
            self.params.column_filter,
            self.feed.aggs.as_deref_mut(),
            self.shortcuts
                .as_ref()
                .and_then(|s| s.sorted_fields.as_deref()),
        ) else {
            return Ok(false);
        };
        let sorted = &self.snapshot.sorted;
        let (low, high, matched) = match filter {
            ColumnFilter::All => (i64::MIN, i64::MAX, reader.num_docs() as u64),
            ColumnFilter::Range { field, low, high } => {
                let Some(values) = sorted.get(reader, field)?.filter(|v| !v.floats) else {
                    return Ok(false);
                };
                (*low, *high, values.count_in(*low, *high))
            }
        };
        let mut columns = Vec::with_capacity(fields.len());
        for field in fields {
            match sorted.get(reader, field)?.filter(|v| !v.floats) {
                Some(values) => columns.push((field, values)),
                None => return Ok(false),
            }
        }
        for (field, values) in &columns {
            aggs.collect_sorted(&SortedSegment {
                field,
                values: &values.values,
                low,
                high,
            });
        }
        self.result.total += matched;
        Ok(true)
    }

    /// A whole segment of a match-all without deletions, counted by the aggregation from the
    /// field's terms dictionary (document frequencies), as OpenSearch counts a match-all
    /// `terms` aggregation; false when documents must be visited.
    fn count_from_dictionary(&mut self, reader: &SegmentReader) -> Result<bool> {
        let Some(aggs) = self.feed.aggs.as_deref_mut() else {
            return Ok(false);
        };
        if !aggs.collect_from_dictionary(reader)? {
            return Ok(false);
        }
        self.result.total += reader.num_docs() as u64;
        Ok(true)
    }

    /// Counts a whole segment's matches without visiting them.
    fn count_part(&mut self, reader: &SegmentReader) -> Result<Flow> {
        let params = self.params;
        // like Lucene, the count is a lower bound only once it exceeds the threshold
        if self.result.total > params.total_hits_threshold {
            self.result.total_is_lower_bound = true;
            return Ok(Flow::Stop);
        }
        // like OpenSearch, `terminate_after` then only says whether the count reached it;
        // the total stays exact
        self.result.total += self
            .weight
            .count(reader)
            .map_err(|e| Error::internal("count matches", e))? as u64;
        if params
            .terminate_after
            .is_some_and(|limit| self.result.total >= limit)
        {
            self.result.terminated_early = true;
        }
        Ok(Flow::Continue)
    }

    /// Matches read a buffer at a time and handed to the aggregators in blocks.
    fn collect_blocks(&mut self, reader: &SegmentReader, part: &SegmentPart) -> Result<Flow> {
        let mut scorer = self.scorer(reader, part)?;
        let alive = reader.alive_bitset();
        let mut buffer = [0 as DocId; COLLECT_BLOCK_BUFFER_LEN];
        loop {
            let n = scorer.fill_buffer(&mut buffer);
            if n == 0 {
                return Ok(Flow::Continue);
            }
            // the buffer is ascending: the docs of this part are a prefix
            let within = buffer[..n].partition_point(|doc| *doc < part.docs.end);
            let docs = &buffer[..within];
            let mut collected = 0u32;
            if alive.is_none() && self.params.terminate_after.is_none() {
                // every doc counts: no per-doc checks
                self.result.total += docs.len() as u64;
                collected = docs.len() as u32;
                self.feed.extend(docs);
            } else {
                for &doc in docs {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        self.result.total += 1;
                        collected += 1;
                        self.feed.push(doc, f32::NAN);
                        if let Some(limit) = self.params.terminate_after {
                            if self.result.total >= limit {
                                self.result.terminated_early = true;
                                return Ok(Flow::Stop);
                            }
                        }
                    }
                }
            }
            if within < n {
                return Ok(Flow::Continue);
            }
            if self.deadline_passed(collected.max(n as u32)) {
                return Ok(Flow::Stop);
            }
        }
    }

    /// Counts the matches after the scorer's current doc, up to the total hits threshold.
    fn count_on(
        &mut self,
        scorer: &mut dyn Scorer,
        alive: Option<&AliveBitSet>,
        part: &SegmentPart,
    ) -> Flow {
        let threshold = self.params.total_hits_threshold;
        let mut doc = scorer.advance();
        while doc != TERMINATED && doc < part.docs.end {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                self.result.total += 1;
                if self.result.total > threshold {
                    self.result.total_is_lower_bound = true;
                    return Flow::Stop;
                }
            }
            if self.deadline_passed(1) {
                return Flow::Stop;
            }
            doc = scorer.advance();
        }
        Flow::Continue
    }

    /// Doc at a time: scores, `min_score`, `post_filter`, hits and aggregations.
    fn collect_docs(
        &mut self,
        reader: &SegmentReader,
        part: &SegmentPart,
        first_hits_only: bool,
        sorted_candidates: bool,
    ) -> Result<Flow> {
        let params = self.params;
        let snapshot = self.snapshot;
        let whole_segment = part.docs.start == 0 && part.docs.end >= reader.max_doc();
        let mut keys = match params.sort {
            HitSort::Score => None,
            HitSort::Fields { fields, .. } => Some(SegmentSortKeys::new(
                &snapshot.table,
                fields,
                reader,
                self.doc_bases[part.segment_ord as usize],
                params.shard_index,
                params.index,
            )?),
        };
        let mut post_filter = match params.post_filter {
            Some(w) => Some(
                w.scorer(reader, 1.0)
                    .map_err(|e| Error::internal("create a post_filter scorer", e))?,
            ),
            None => None,
        };
        let mut groups: Option<SegmentCollapseKeys> = params
            .collapse
            .map(|field| field.segment_keys(reader))
            .transpose()?;
        let candidates = match &keys {
            Some(keys) if sorted_candidates => self.top_candidates(keys, reader)?,
            _ => None,
        };
        let total_before = self.result.total;
        let narrowed = candidates.is_some();
        let mut scorer: Box<dyn Scorer> = match candidates {
            Some(docs) => Box::new(ConstScorer::new(CandidateDocs::new(docs), 1.0)),
            None => self.scorer(reader, part)?,
        };
        let alive = reader.alive_bitset();
        // an index-order scroll's page: the documents before its position are only counted
        let first_after = params.first_after(self.doc_bases[part.segment_ord as usize]);
        let mut doc = scorer.doc();
        if params.total_hits_threshold == 0 && doc < first_after {
            // nothing to count (a scroll's later pages): skip to the position
            if first_after >= part.docs.end {
                return Ok(Flow::Continue);
            }
            doc = scorer.seek(first_after);
        }
        while doc != TERMINATED && doc < part.docs.end {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let score = if params.scoring {
                    scorer.score()
                } else {
                    f32::NAN
                };
                if params.min_score.is_none_or(|min| score >= min) {
                    self.feed.push(doc, score);
                    let is_hit = match post_filter.as_mut() {
                        None => true,
                        Some(pf) => pf.doc() == doc || (pf.doc() < doc && pf.seek(doc) == doc),
                    };
                    if is_hit {
                        self.result.total += 1;
                        if score > self.max_score {
                            self.max_score = score;
                        }
                        let mut beaten = match (&keys, self.top.worst()) {
                            (Some(keys), Some(worst)) => keys.cannot_beat(doc, worst),
                            // by score: a lower score loses whatever the tie-breakers say
                            (None, Some(worst)) => score < worst.score,
                            _ => false,
                        };
                        // under `collapse`, a document that cannot beat its own group's best
                        // changes nothing: most documents of a few large groups stop here
                        if let (false, Some(groups)) = (beaten, groups.as_mut()) {
                            if let Some(head) = self.top.group_head(groups.key(doc)?) {
                                beaten = match &keys {
                                    Some(keys) => keys.cannot_beat(doc, head),
                                    // by score, in index order: a tie comes later and loses
                                    None => score <= head.score,
                                };
                            }
                        }
                        if params.k > 0 && !beaten && doc >= first_after {
                            let sort = keys.as_mut().map(|k| k.key(doc, score)).unwrap_or_default();
                            let mut hit = ShardHit {
                                shard_index: params.shard_index,
                                segment_ord: part.segment_ord,
                                segment_rank: snapshot.segment_ranks[part.segment_ord as usize],
                                doc,
                                score,
                                sort,
                                collapse: None,
                            };
                            // the full order: a `search_after` key sorts after every hit
                            // with its sort values (its shard and doc are the largest), a
                            // scroll's position is a hit
                            let after = params.search_after.is_none_or(|after| {
                                params.sort.compare(&hit, after) == std::cmp::Ordering::Greater
                            });
                            if after && self.top.accepts(&hit) {
                                if let Some(groups) = groups.as_mut() {
                                    hit.collapse = Some(groups.key(doc)?.clone());
                                }
                                self.top.push(hit);
                            }
                        }
                        if let Some(limit) = params.terminate_after {
                            if self.result.total >= limit {
                                self.result.terminated_early = true;
                                return Ok(Flow::Stop);
                            }
                        }
                        if first_hits_only && self.top.len() >= params.k {
                            if self.result.total > params.total_hits_threshold {
                                self.result.total_is_lower_bound = true;
                                return Ok(Flow::Stop);
                            }
                            if params.total_hits_threshold == u64::MAX && whole_segment {
                                // the top hits are known: count the rest of the segment in bulk
                                scorer.advance();
                                self.result.total += match alive {
                                    Some(alive) => scorer.count(alive),
                                    None => scorer.count_including_deleted(),
                                } as u64;
                                return Ok(Flow::Continue);
                            }
                            if params.matches_all && whole_segment {
                                // every live document matches: the segment counts at once
                                self.result.total = total_before + reader.num_docs() as u64;
                                if self.result.total > params.total_hits_threshold {
                                    self.result.total_is_lower_bound = true;
                                    return Ok(Flow::Stop);
                                }
                                return Ok(Flow::Continue);
                            }
                            // the top hits are known (later docs only tie, and lose): count on
                            // to the threshold without scoring or building hits
                            return Ok(self.count_on(scorer.as_mut(), alive, part));
                        }
                    }
                }
            }
            if self.deadline_passed(1) {
                return Ok(Flow::Stop);
            }
            doc = scorer.advance();
        }
        if narrowed {
            // every live document matched; only the candidates were visited
            self.result.total = total_before + reader.num_docs() as u64;
        }
        if let Some(e) = keys.as_mut().and_then(SegmentSortKeys::take_error) {
            return Err(e);
        }
        Ok(Flow::Continue)
    }

    /// The only documents of a whole segment that can make the top hits of a `match_all`
    /// sorted by a numeric field (see [`SegmentSortKeys::top_candidates`]), when nothing but
    /// the hits and their count is asked for.
    fn top_candidates(
        &self,
        keys: &SegmentSortKeys,
        reader: &SegmentReader,
    ) -> Result<Option<Vec<DocId>>> {
        let params = self.params;
        let Some(field) = params.candidate_sort_field() else {
            return Ok(None);
        };
        if !keys.numeric_lead() {
            return Ok(None);
        }
        let Some(sorted) = self.snapshot.sorted.get(reader, field)? else {
            return Ok(None);
        };
        // documents without a value sort by `missing`: `top_candidates` decides whether the
        // copy still holds the whole top
        let after = params.search_after.and_then(|after| after.sort.first());
        Ok(keys.top_candidates(params.k, &sorted, after, reader.num_docs() as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_docs_walk_their_ids_then_stay_terminated() {
        let mut docs = CandidateDocs::new(vec![3, 7, 20]);
        assert_eq!((docs.doc(), docs.size_hint()), (3, 3));
        assert_eq!(docs.advance(), 7);
        assert_eq!(docs.seek(15), 20);
        assert_eq!(docs.advance(), TERMINATED);
        assert_eq!(docs.advance(), TERMINATED);
        assert_eq!(docs.size_hint(), 0);
        assert_eq!(CandidateDocs::new(Vec::new()).doc(), TERMINATED);
    }
}
