//! `sampler` and `diversified_sampler`: one bucket whose sub-aggregations see only the
//! best-scoring `shard_size` matches of each shard (of each parent bucket), so that they
//! describe the most relevant documents rather than the long tail.
//!
//! Which matches are the best is only known once the last segment is collected, so the
//! collector keeps its sample (score, segment, doc) and replays it into the sub-aggregations
//! when the first bucket is built, segment by segment in index order, handing them the sampled
//! docs' scores too. A sample is the shard's: a request with a sampler runs each
//! shard as one slice ([`needs_single_slice`]), as OpenSearch runs it without concurrent
//! segment search.
//!
//! Ties go to the earlier document, as Lucene's top-docs collectors break them. The diversified
//! sample keeps at most `max_docs_per_value` documents per value of a field, with the
//! semantics of Lucene's `DiversifiedTopDocsCollector` that OpenSearch uses: a document only
//! has its key looked up when it would enter the sample, a multi-valued key fails the shard,
//! and a document without a value gets the key 0, which it shares with the shard's smallest
//! term (`global_ordinals`, the default), with the first term collected (`map`), or with the
//! numbers in (-1, 1) on numeric fields (whose keys are their values truncated to integers);
//! `bytes_hash` gives it a key of its own.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};

use crate::bucket::filter::InternalSingleBucket;
use crate::collector::{BlockScores, Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::prepare::{AggContext, Factory};
use crate::request::{int_param, string_param, unknown_field, AggKind, AggRequest};
use crate::values::{Accepts, IpValues, KeywordValues, NumericValues, ValueSource};

/// OpenSearch's default sample size per shard.
const DEFAULT_SHARD_SIZE: i64 = 100;

/// What one sampled document holds (its entries in the sample, in its key's group and in the
/// replay list), charged to the request's circuit breaker [`CHARGE_CHUNK`] documents at a time
/// as samples grow: a large `shard_size` under a many-bucket parent must trip the breaker
/// rather than exhaust the node.
const SAMPLED_BYTES: u64 = 96;
const CHARGE_CHUNK: usize = 1024;

#[derive(Clone, Debug, PartialEq)]
pub struct SamplerRequest {
    pub shard_size: i64,
}

impl SamplerRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<SamplerRequest> {
        let mut shard_size = DEFAULT_SHARD_SIZE;
        for (key, value) in body {
            match key.as_str() {
                "shard_size" => shard_size = int_param("sampler", key, value)?,
                // OpenSearch's message, unbalanced quote included
                _ => {
                    return Err(Error::parsing(format!(
                        "Unsupported property \"{key}\" for aggregation \"{name}"
                    )))
                }
            }
        }
        Ok(SamplerRequest { shard_size })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DiversifiedSamplerRequest {
    pub shard_size: i64,
    pub field: String,
    pub max_docs_per_value: i64,
    /// Checked on the shard, where OpenSearch checks it.
    pub execution_hint: Option<String>,
}

impl DiversifiedSamplerRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<DiversifiedSamplerRequest> {
        const AGG: &str = "diversified_sampler";
        let mut request = DiversifiedSamplerRequest {
            shard_size: DEFAULT_SHARD_SIZE,
            field: String::new(),
            max_docs_per_value: 1,
            execution_hint: None,
        };
        let mut field = None;
        for (key, value) in body {
            match key.as_str() {
                "field" => field = Some(string_param(AGG, key, value)?),
                "shard_size" => request.shard_size = int_param(AGG, key, value)?,
                "max_docs_per_value" => request.max_docs_per_value = int_param(AGG, key, value)?,
                "execution_hint" => request.execution_hint = Some(string_param(AGG, key, value)?),
                "script" | "missing" | "value_type" => {
                    return Err(Error::not_supported(&format!("[{key}] in [{AGG}]")))
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.field = field.ok_or_else(|| {
            Error::illegal_argument(
                "Required one of fields [field, script], but none were specified. ",
            )
        })?;
        Ok(request)
    }
}

/// Whether some aggregation of `requests` samples: the shard then runs as one slice, since a
/// sample is the best of the whole shard.
pub fn needs_single_slice(requests: &[AggRequest]) -> bool {
    requests.iter().any(|r| {
        matches!(r.kind, AggKind::Sampler(_) | AggKind::DiversifiedSampler(_))
            || needs_single_slice(&r.subs)
    })
}

fn check_shard_size(shard_size: i64) -> Result<usize> {
    usize::try_from(shard_size).ok().filter(|n| *n > 0).ok_or_else(|| {
        Error::illegal_argument(
            "numHits must be > 0; please use TotalHitCountCollectorManager if you just need the total hit count",
        )
    })
}

fn check_subs(request: &AggRequest) -> Result<()> {
    if request.subs.is_empty() {
        return Err(Error::new(
            "aggregation_execution_exception",
            400,
            "Sampler aggregation must be used with child aggregations.",
        ));
    }
    Ok(())
}

pub fn sampler_factory(
    request: &AggRequest,
    sampler: &SamplerRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    check_subs(request)?;
    Ok(Box::new(SamplerFactory {
        shard_size: check_shard_size(sampler.shard_size)?,
        diversity: None,
        constant_score: ctx.constant_score,
    }))
}

pub fn diversified_factory(
    request: &AggRequest,
    diversified: &DiversifiedSamplerRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    check_subs(request)?;
    let hint = match diversified.execution_hint.as_deref() {
        None | Some("global_ordinals") => Hint::GlobalOrdinals,
        Some("map") => Hint::Map,
        Some("bytes_hash") => Hint::BytesHash,
        Some(other) => {
            return Err(Error::illegal_argument(format!(
                "Unknown `execution_hint`: [{other}], expected any of [map, bytes_hash, global_ordinals]"
            )))
        }
    };
    let source = ValueSource::resolve(
        ctx.table,
        &diversified.field,
        "diversified_sampler",
        Accepts::Any,
    )?;
    let shard_size = check_shard_size(diversified.shard_size)?;
    // a source without values samples nothing, as OpenSearch's unmapped sampler
    let diversity = match source {
        ValueSource::Unmapped => None,
        source => {
            let missing = match (&source, hint) {
                (ValueSource::Keyword { path }, Hint::GlobalOrdinals) => {
                    smallest_term(ctx, path)?.map_or(Key::Missing, Key::Term)
                }
                (ValueSource::Ip { path }, Hint::GlobalOrdinals) => {
                    smallest_ip(ctx, path)?.map_or(Key::Missing, Key::Term)
                }
                (ValueSource::Keyword { .. } | ValueSource::Ip { .. }, Hint::Map) => Key::Number(0),
                (ValueSource::Keyword { .. } | ValueSource::Ip { .. }, Hint::BytesHash) => {
                    Key::Missing
                }
                _ => Key::Number(0),
            };
            Some(Diversity {
                source,
                max_per_key: usize::try_from(diversified.max_docs_per_value).unwrap_or(0),
                missing,
                by_first_seen: hint == Hint::Map,
            })
        }
    };
    Ok(Box::new(SamplerFactory {
        shard_size: if diversity.is_none() { 0 } else { shard_size },
        diversity,
        constant_score: ctx.constant_score,
    }))
}

/// The smallest term of `path` in any segment of the shard: global ordinal 0.
fn smallest_term(ctx: &AggContext, path: &str) -> Result<Option<Box<[u8]>>> {
    let mut smallest: Option<Box<[u8]>> = None;
    for segment in ctx.searcher.segment_readers() {
        let values = KeywordValues::open(
            &ValueSource::Keyword {
                path: path.to_string(),
            },
            segment,
        )?;
        let mut first = None;
        if values.num_terms() > 0 {
            values.for_each_term_of(&[0], |_, term| first = Some(Box::<[u8]>::from(term)))?;
        }
        if let Some(term) = first {
            if smallest.as_ref().is_none_or(|s| term < *s) {
                smallest = Some(term);
            }
        }
    }
    Ok(smallest)
}

/// The smallest address of the ip field `path` in the shard, as key bytes.
fn smallest_ip(ctx: &AggContext, path: &str) -> Result<Option<Box<[u8]>>> {
    let mut smallest = None;
    for segment in ctx.searcher.segment_readers() {
        let values = IpValues::open(
            &ValueSource::Ip {
                path: path.to_string(),
            },
            segment,
        )?;
        if let Some(ip) = values.min_value() {
            smallest = Some(smallest.map_or(ip, |s: std::net::Ipv6Addr| s.min(ip)));
        }
    }
    Ok(smallest.map(|ip| Box::<[u8]>::from(ip.octets())))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    GlobalOrdinals,
    Map,
    BytesHash,
}

/// A value the diversified sample limits documents per.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Number(i64),
    Term(Box<[u8]>),
    /// A document without a value, where it shares no key with any value.
    Missing,
}

#[derive(Clone)]
struct Diversity {
    source: ValueSource,
    max_per_key: usize,
    /// The key of a document without a value.
    missing: Key,
    /// `map`: a term's key is the order in which the parent bucket first met it.
    by_first_seen: bool,
}

struct SamplerFactory {
    shard_size: usize,
    diversity: Option<Diversity>,
    /// The score of every match when the query scores them all the same.
    constant_score: Option<f32>,
}

impl Factory for SamplerFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        self.make(subs, None)
    }

    fn scored_collector(
        &self,
        subs: SubCollectors,
        _single_parent: bool,
        scores: &BlockScores,
    ) -> Result<Box<dyn Collector>> {
        self.make(subs, Some(scores.clone()))
    }
}

impl SamplerFactory {
    fn make(&self, subs: SubCollectors, scores: Option<BlockScores>) -> Result<Box<dyn Collector>> {
        Ok(Box::new(SamplerCollector {
            shard_size: self.shard_size,
            diversity: self.diversity.clone().map(|rules| KeySource {
                rules,
                values: None,
                cached: HashMap::new(),
            }),
            constant_score: self.constant_score.unwrap_or(0.0),
            scores,
            segments: BTreeMap::new(),
            segment_ord: 0,
            samples: Vec::new(),
            block_scores: Vec::new(),
            failure: None,
            replayed: false,
            kept: 0,
            subs,
        }))
    }
}

/// A sampled document; ordered worst first (lower score, then later document).
#[derive(Clone, Copy, Debug)]
struct Hit {
    score: f32,
    segment_ord: u32,
    doc: DocId,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Hit {}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| (other.segment_ord, other.doc).cmp(&(self.segment_ord, self.doc)))
    }
}

/// One parent bucket's sample.
#[derive(Default)]
struct Sample {
    /// The sample, worst first, with each document's key (diversified samples only).
    best: BTreeMap<Hit, Option<Key>>,
    /// Diversified samples: the sampled documents of each key.
    per_key: HashMap<Key, BTreeSet<Hit>>,
    /// `map`: the keys of the terms met so far.
    first_seen: HashMap<Box<[u8]>, i64>,
}

impl Sample {
    /// Offers a document; `key` looks its key up, only once it would enter the sample.
    fn offer(
        &mut self,
        hit: Hit,
        size: usize,
        max_per_key: Option<usize>,
        key: impl FnOnce(&mut HashMap<Box<[u8]>, i64>) -> Result<Key>,
    ) -> Result<()> {
        if self.best.len() >= size && self.best.first_key_value().is_some_and(|(w, _)| hit < *w) {
            return Ok(());
        }
        let Some(max_per_key) = max_per_key else {
            self.best.insert(hit, None);
            if self.best.len() > size {
                self.best.pop_first();
            }
            return Ok(());
        };
        let key = key(&mut self.first_seen)?;
        let group = self.per_key.entry(key.clone()).or_default();
        if group.len() < max_per_key {
            group.insert(hit);
            self.best.insert(hit, Some(key));
            if self.best.len() > size {
                if let Some((worst, Some(worst_key))) = self.best.pop_first() {
                    if let Some(group) = self.per_key.get_mut(&worst_key) {
                        group.remove(&worst);
                        if group.is_empty() {
                            self.per_key.remove(&worst_key);
                        }
                    }
                }
            }
            return Ok(());
        }
        // the key's group is full: the document replaces the group's worst if it beats it
        match group.first().copied() {
            Some(worst) if worst < hit => {
                group.pop_first();
                group.insert(hit);
                self.best.remove(&worst);
                self.best.insert(hit, Some(key));
            }
            _ => {
                if group.is_empty() {
                    self.per_key.remove(&key);
                }
            }
        }
        Ok(())
    }
}

/// Reads the diversity key of documents in the current segment.
struct KeySource {
    rules: Diversity,
    values: Option<KeyValues>,
    /// The current segment's keyword ordinals already resolved to their terms.
    cached: HashMap<u64, Box<[u8]>>,
}

enum KeyValues {
    /// Numbers as OpenSearch's long values read them: doubles truncated.
    Numeric(NumericValues),
    Keyword(KeywordValues),
    Ip(IpValues),
}

fn multi_valued() -> Error {
    Error::illegal_argument("Sample diversifying key must be a single valued-field")
}

impl KeySource {
    fn set_segment(&mut self, reader: &SegmentReader) -> Result<()> {
        self.cached.clear();
        let source = &self.rules.source;
        self.values = Some(match source {
            ValueSource::Keyword { .. } => KeyValues::Keyword(KeywordValues::open(source, reader)?),
            ValueSource::Ip { .. } => KeyValues::Ip(IpValues::open(source, reader)?),
            ValueSource::Numeric { .. } => KeyValues::Numeric(NumericValues::open(source, reader)?),
            _ => {
                return Err(Error::illegal_state(
                    "a diversified sample over an unknown source",
                ))
            }
        });
        Ok(())
    }

    /// The key of `doc`; `first_seen` numbers the terms of a `map` sample.
    fn key(&mut self, doc: DocId, first_seen: &mut HashMap<Box<[u8]>, i64>) -> Result<Key> {
        let docs = [doc];
        let mut term: Option<Box<[u8]>> = None;
        let mut count = 0;
        match self.values.as_mut() {
            None => return Ok(self.rules.missing.clone()),
            Some(KeyValues::Numeric(values)) => {
                let mut number = 0;
                values.for_each_i64(&docs, |_, v| {
                    count += 1;
                    number = v;
                });
                return match count {
                    0 => Ok(self.rules.missing.clone()),
                    1 => Ok(Key::Number(number)),
                    _ => Err(multi_valued()),
                };
            }
            Some(KeyValues::Ip(values)) => values.for_each(&docs, |_, ip| {
                count += 1;
                term = Some(Box::from(ip.octets()));
            }),
            Some(KeyValues::Keyword(values)) => {
                let mut ord = 0;
                values.for_each_ord(&docs, |_, o| {
                    count += 1;
                    ord = o;
                });
                if count == 1 {
                    term = Some(match self.cached.get(&ord) {
                        Some(term) => term.clone(),
                        None => {
                            let mut found = None;
                            values.for_each_term_of(&[ord], |_, bytes| {
                                found = Some(Box::<[u8]>::from(bytes))
                            })?;
                            let found = found.ok_or_else(|| {
                                Error::illegal_state("a term ordinal without its term")
                            })?;
                            self.cached.insert(ord, found.clone());
                            found
                        }
                    });
                }
            }
        }
        match (count, term) {
            (0, _) => Ok(self.rules.missing.clone()),
            (1, Some(term)) if self.rules.by_first_seen => {
                let next = first_seen.len() as i64;
                Ok(Key::Number(*first_seen.entry(term).or_insert(next)))
            }
            (1, Some(term)) => Ok(Key::Term(term)),
            _ => Err(multi_valued()),
        }
    }
}

struct SamplerCollector {
    shard_size: usize,
    diversity: Option<KeySource>,
    constant_score: f32,
    /// The scores of the block being collected, for a scored query.
    scores: Option<BlockScores>,
    /// The segments collected, by ordinal, to replay the sample into the sub-aggregations.
    segments: BTreeMap<u32, SegmentReader>,
    segment_ord: u32,
    /// One per parent bucket.
    samples: Vec<Sample>,
    block_scores: Vec<Option<f32>>,
    /// The first failure (a multi-valued key), reported when the segment ends.
    failure: Option<Error>,
    replayed: bool,
    /// Documents the samples have grown by (evictions from a full sample do not count).
    kept: usize,
    subs: SubCollectors,
}

impl Collector for SamplerCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.segments
            .entry(segment.segment_ord)
            .or_insert_with(|| segment.reader.clone());
        self.segment_ord = segment.segment_ord;
        if let Some(keys) = &mut self.diversity {
            keys.set_segment(segment.reader)?;
        }
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        if self.failure.is_some() || self.shard_size == 0 {
            return;
        }
        match &self.scores {
            Some(scores) => scores.read(docs, &mut self.block_scores),
            None => {
                self.block_scores.clear();
                self.block_scores
                    .resize(docs.len(), Some(self.constant_score));
            }
        }
        for (i, (&doc, &parent)) in docs.iter().zip(parents).enumerate() {
            let parent = parent as usize;
            if self.samples.len() <= parent {
                self.samples.resize_with(parent + 1, Sample::default);
            }
            let hit = Hit {
                // a document outside the scored block (under `global`) scores nothing
                score: self.block_scores[i].unwrap_or(0.0),
                segment_ord: self.segment_ord,
                doc,
            };
            let keys = &mut self.diversity;
            let max_per_key = keys.as_ref().map(|k| k.rules.max_per_key);
            let sample = &mut self.samples[parent];
            let before = sample.best.len();
            let offered = sample.offer(hit, self.shard_size, max_per_key, |seen| {
                keys.as_mut()
                    .map_or(Ok(Key::Missing), |keys| keys.key(doc, seen))
            });
            if let Err(e) = offered {
                self.failure = Some(e);
                return;
            }
            if sample.best.len() > before {
                self.kept += 1;
                if self.kept.is_multiple_of(CHARGE_CHUNK) {
                    tessera_common::breaker::charge_current(
                        CHARGE_CHUNK as u64 * SAMPLED_BYTES,
                        tessera_common::breaker::REUSED_ARRAYS,
                    );
                }
            }
        }
    }

    fn finish_segment(&mut self) -> Result<()> {
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        if !self.replayed {
            self.replayed = true;
            self.replay()?;
        }
        Ok(InternalAgg::SingleBucket(InternalSingleBucket {
            doc_count: self
                .samples
                .get(parent as usize)
                .map_or(0, |s| s.best.len() as u64),
            subs: self.subs.build(parent)?,
        }))
    }
}

impl SamplerCollector {
    /// Feeds every parent's sample to the sub-aggregations, segment by segment in index order.
    fn replay(&mut self) -> Result<()> {
        let mut sampled: Vec<(u32, DocId, u32, f32)> = self
            .samples
            .iter()
            .enumerate()
            .flat_map(|(parent, sample)| {
                sample
                    .best
                    .keys()
                    .map(move |h| (h.segment_ord, h.doc, parent as u32, h.score))
            })
            .collect();
        sampled.sort_unstable_by_key(|&(segment, doc, parent, _)| (segment, doc, parent));
        let mut docs = Vec::new();
        let mut scores = Vec::new();
        for run in sampled.chunk_by(|a, b| a.0 == b.0) {
            let segment_ord = run[0].0;
            let reader = &self.segments[&segment_ord];
            self.subs.set_segment(&SegmentContext {
                reader,
                segment_ord,
                docs: 0..reader.max_doc(),
            })?;
            if let Some(block) = &self.scores {
                docs.clear();
                scores.clear();
                for &(_, doc, _, score) in run {
                    if docs.last() != Some(&doc) {
                        docs.push(doc);
                        scores.push(score);
                    }
                }
                block.set(&docs, &scores);
            }
            for &(_, doc, parent, _) in run {
                self.subs.push(doc, parent);
            }
            self.subs.flush();
            self.subs.finish_segment()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(score: f32, doc: DocId) -> Hit {
        Hit {
            score,
            segment_ord: 0,
            doc,
        }
    }

    fn offer_all(sample: &mut Sample, size: usize, per_key: Option<usize>, docs: &[(f32, i64)]) {
        for (doc, &(score, key)) in docs.iter().enumerate() {
            sample
                .offer(hit(score, doc as DocId), size, per_key, |_| {
                    Ok(Key::Number(key))
                })
                .unwrap();
        }
    }

    fn sampled(sample: &Sample) -> Vec<DocId> {
        let mut docs: Vec<DocId> = sample.best.keys().map(|h| h.doc).collect();
        docs.sort_unstable();
        docs
    }

    #[test]
    fn the_best_scores_win_and_ties_go_to_the_earlier_document() {
        let mut sample = Sample::default();
        offer_all(
            &mut sample,
            3,
            None,
            &[(1.0, 0), (3.0, 0), (2.0, 0), (2.0, 0), (0.5, 0), (2.0, 0)],
        );
        assert_eq!(sampled(&sample), vec![1, 2, 3]);
    }

    #[test]
    fn a_key_keeps_at_most_its_share_of_the_sample() {
        let mut sample = Sample::default();
        // keys 7, 7, 8, 7, 9: one per key leaves docs 1 (7), 2 (8) and 4 (9)
        offer_all(
            &mut sample,
            3,
            Some(1),
            &[(1.0, 7), (5.0, 7), (4.0, 8), (3.0, 7), (0.1, 9)],
        );
        assert_eq!(sampled(&sample), vec![1, 2, 4]);
        assert_eq!(sample.per_key.len(), 3);
        // two per key: the best five overall but the third of key 7
        let mut sample = Sample::default();
        offer_all(
            &mut sample,
            4,
            Some(2),
            &[(1.0, 7), (5.0, 7), (4.0, 8), (3.0, 7), (0.1, 9), (0.2, 9)],
        );
        assert_eq!(sampled(&sample), vec![1, 2, 3, 5]);
    }

    #[test]
    fn a_document_evicted_from_the_sample_leaves_its_key_group() {
        let mut sample = Sample::default();
        offer_all(&mut sample, 2, Some(1), &[(1.0, 1), (2.0, 2), (3.0, 3)]);
        assert_eq!(sampled(&sample), vec![1, 2]);
        assert!(!sample.per_key.contains_key(&Key::Number(1)));
        // key 1 is free again for a better document
        sample
            .offer(hit(9.0, 3), 2, Some(1), |_| Ok(Key::Number(1)))
            .unwrap();
        assert_eq!(sampled(&sample), vec![2, 3]);
    }

    #[test]
    fn no_document_per_key_samples_nothing() {
        let mut sample = Sample::default();
        offer_all(&mut sample, 5, Some(0), &[(1.0, 1), (2.0, 2)]);
        assert!(sample.best.is_empty());
        assert!(sample.per_key.is_empty());
    }

    #[test]
    fn a_key_is_only_looked_up_for_a_competitive_document() {
        let mut sample = Sample::default();
        offer_all(&mut sample, 1, Some(1), &[(5.0, 1)]);
        sample
            .offer(hit(1.0, 1), 1, Some(1), |_| Err(multi_valued()))
            .unwrap();
        assert!(sample
            .offer(hit(6.0, 2), 1, Some(1), |_| Err(multi_valued()))
            .is_err());
    }

    /// Twelve documents in `segments` segments (whose order in the searcher is not the order
    /// they were written in); 0 and 8 have no `k`.
    fn shard(segments: usize) -> crate::test_util::TestShard {
        let keys = [
            None,
            Some(1),
            Some(2),
            Some(1),
            Some(0),
            Some(2),
            Some(0),
            Some(1),
            None,
            Some(2),
            Some(0),
            Some(1),
        ];
        let docs: Vec<Value> = keys
            .iter()
            .enumerate()
            .map(|(n, k)| match k {
                Some(k) => serde_json::json!({"n": n, "k": format!("k{k}")}),
                None => serde_json::json!({"n": n}),
            })
            .collect();
        crate::test_util::TestShard::new(
            serde_json::json!({"properties": {"n": {"type": "long"}, "k": {"type": "keyword"}}}),
            &docs,
            segments,
        )
    }

    /// `sum` of `n` over the sample of `sampler`, and the sample's size, the same for every
    /// way of cutting the shard's segments into parts.
    fn sample_sum(shard: &crate::test_util::TestShard, sampler: Value) -> (u64, f64) {
        let mut aggs = serde_json::json!({"s": {"aggs": {"n": {"sum": {"field": "n"}}}}});
        aggs["s"]
            .as_object_mut()
            .unwrap()
            .extend(sampler.as_object().unwrap().clone());
        let first = shard.render(&aggs, 1, 0);
        for seed in 1..6 {
            assert_eq!(shard.render(&aggs, 1, seed), first, "seed {seed}");
        }
        (
            first["s"]["doc_count"].as_u64().unwrap(),
            first["s"]["n"]["value"].as_f64().unwrap(),
        )
    }

    #[test]
    fn equal_scores_sample_the_first_documents() {
        let sampler = serde_json::json!({"sampler": {"shard_size": 5}});
        assert_eq!(sample_sum(&shard(1), sampler.clone()), (5, 10.0));
        // in segment order, whatever the parts and slices the segments are cut into
        assert_eq!(sample_sum(&shard(3), sampler).0, 5);
    }

    #[test]
    fn a_document_without_a_value_shares_the_key_its_execution_hint_gives_it() {
        let shard = shard(1);
        let diversified = |extra: Value| {
            let mut body = serde_json::json!({"field": "k", "shard_size": 10});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            sample_sum(&shard, serde_json::json!({"diversified_sampler": body}))
        };
        // global ordinals: doc 0 takes the key of k0, the smallest term
        assert_eq!(diversified(serde_json::json!({})), (3, 3.0));
        // bytes_hash: a key of its own
        assert_eq!(
            diversified(serde_json::json!({"execution_hint": "bytes_hash"})),
            (4, 7.0)
        );
        // map: the key of the first term met (k1, doc 1)
        assert_eq!(
            diversified(serde_json::json!({"execution_hint": "map"})),
            (3, 6.0)
        );
        assert_eq!(
            diversified(serde_json::json!({"max_docs_per_value": 2})),
            (6, 15.0)
        );
        assert_eq!(
            diversified(serde_json::json!({"max_docs_per_value": 2, "shard_size": 4})),
            (4, 6.0)
        );
        // numbers: values truncated, a missing one is 0
        let (count, _) = sample_sum(
            &shard,
            serde_json::json!({"diversified_sampler": {"field": "n", "shard_size": 20}}),
        );
        assert_eq!(count, 12);
    }

    #[test]
    fn each_parent_bucket_has_its_own_sample() {
        let aggs = serde_json::json!({"k": {"terms": {"field": "k"}, "aggs": {
            "s": {"sampler": {"shard_size": 2}, "aggs": {"n": {"sum": {"field": "n"}}}}}}});
        let result = shard(1).render(&aggs, 1, 3);
        let sums: Vec<(String, f64)> = result["k"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_string(),
                    b["s"]["n"]["value"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            sums,
            vec![("k1".into(), 4.0), ("k0".into(), 10.0), ("k2".into(), 7.0)]
        );
    }

    #[test]
    fn a_multi_valued_key_fails_and_a_sampler_needs_sub_aggregations() {
        let shard = crate::test_util::TestShard::new(
            serde_json::json!({"properties": {"k": {"type": "keyword"}}}),
            &[
                serde_json::json!({"k": "a"}),
                serde_json::json!({"k": ["a", "b"]}),
            ],
            1,
        );
        let run = |aggs: Value| shard.try_run(&aggs, 1, 0).unwrap_err().reason().to_string();
        assert_eq!(
            run(
                serde_json::json!({"s": {"diversified_sampler": {"field": "k"},
                "aggs": {"c": {"value_count": {"field": "k"}}}}})
            ),
            "Sample diversifying key must be a single valued-field"
        );
        assert_eq!(
            run(serde_json::json!({"s": {"sampler": {}}})),
            "Sampler aggregation must be used with child aggregations."
        );
        assert!(run(serde_json::json!({"s": {"sampler": {"shard_size": 0},
            "aggs": {"c": {"value_count": {"field": "k"}}}}}))
        .starts_with("numHits must be > 0"));
    }

    #[test]
    fn a_growing_sample_is_charged_to_the_request_breaker() {
        use std::sync::Arc;
        use tessera_common::breaker::{enter, CircuitBreakerService};

        let docs: Vec<Value> = (0..3 * CHARGE_CHUNK)
            .map(|n| serde_json::json!({"n": n}))
            .collect();
        let shard = crate::test_util::TestShard::new(
            serde_json::json!({"properties": {"n": {"type": "long"}}}),
            &docs,
            1,
        );
        let service = Arc::new(CircuitBreakerService::new(1 << 30));
        let chunk = CHARGE_CHUNK as u64 * SAMPLED_BYTES;
        service
            .set_limits(&(2 * chunk + chunk / 2).to_string(), "100%")
            .unwrap();
        let sampler = |size: usize| {
            serde_json::json!({"s": {"sampler": {"shard_size": size},
                "aggs": {"m": {"max": {"field": "n"}}}}})
        };
        let request = service.request();
        {
            let _current = enter(Some(request.clone()));
            // a sample of two chunks fits
            shard.try_run(&sampler(2 * CHARGE_CHUNK), 1, 0).unwrap();
            assert_eq!(request.held(), 2 * chunk);
            assert!(request.tripped().is_none());
        }
        drop(request);
        let request = service.request();
        {
            let _current = enter(Some(request.clone()));
            // a third chunk passes the limit
            let _ = shard.try_run(&sampler(3 * CHARGE_CHUNK), 1, 0);
            let e = request.tripped().expect("the sample trips the breaker");
            assert_eq!(e.kind(), "circuit_breaking_exception");
        }
        drop(request);
        assert_eq!(service.used(), 0);
    }

    #[test]
    fn only_requests_with_a_sampler_run_on_one_slice() {
        let parse = |v: Value| crate::request::parse_aggregations(&v).unwrap();
        assert!(!needs_single_slice(&parse(
            serde_json::json!({"t": {"terms": {"field": "k"}}})
        )));
        assert!(needs_single_slice(&parse(
            serde_json::json!({"t": {"terms": {"field": "k"},
            "aggs": {"s": {"sampler": {}, "aggs": {"m": {"max": {"field": "n"}}}}}}})
        )));
    }

    #[test]
    fn parsing() {
        let body = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            SamplerRequest::parse("s", &body(serde_json::json!({"shard_size": 7})))
                .unwrap()
                .shard_size,
            7
        );
        let error = SamplerRequest::parse("s", &body(serde_json::json!({"size": 7}))).unwrap_err();
        assert_eq!(
            error.reason(),
            "Unsupported property \"size\" for aggregation \"s"
        );
        let diversified = DiversifiedSamplerRequest::parse(&body(
            serde_json::json!({"field": "k", "max_docs_per_value": 3, "execution_hint": "map"}),
        ))
        .unwrap();
        assert_eq!(
            (
                diversified.field.as_str(),
                diversified.max_docs_per_value,
                diversified.shard_size
            ),
            ("k", 3, 100)
        );
        assert!(
            DiversifiedSamplerRequest::parse(&body(serde_json::json!({"shard_size": 3})))
                .unwrap_err()
                .reason()
                .starts_with("Required one of fields [field, script]")
        );
        assert!(
            DiversifiedSamplerRequest::parse(&body(serde_json::json!({"script": "1"})))
                .unwrap_err()
                .reason()
                .contains("not supported by Tessera")
        );
    }
}
