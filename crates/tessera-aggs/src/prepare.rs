//! Preparing aggregations for one shard request and collecting them slice by slice.
//!
//! [`PreparedAggs::prepare`] runs once per shard request on the search thread: it resolves
//! fields against the shard's mapping, checks types (OpenSearch's errors surface here, before
//! any slice runs) and builds filter weights. Each slice then gets its own
//! [`SliceAggregator`] from the prepared tree: collectors share nothing, so slices run in
//! parallel without locks.

use std::ops::Range;

use tantivy::{DocId, Searcher, SegmentReader};
use tessera_common::Result;
use tessera_mapping::FieldTable;

use crate::bucket;
use crate::collector::{
    BlockScores, Collector, SegmentContext, SortedSegment, SubCollectors, ZERO_PARENTS,
    ZERO_PARENTS_LEN,
};
use crate::internal::{InternalAggregations, ShardFinish};
use crate::metric;
use crate::request::{AggKind, AggRequest};

/// What preparing aggregations on a shard needs.
pub struct AggContext<'a> {
    pub table: &'a FieldTable,
    /// Index name, for error metadata.
    pub index: &'a str,
    /// `index.query.default_field`, for filter queries.
    pub default_fields: &'a [String],
    /// "now" for date math, the same on every shard.
    pub now_millis: i64,
    /// `index.max_terms_count`, for `terms` queries of filter aggregations.
    pub max_terms_count: usize,
    pub searcher: &'a Searcher,
    /// The shard's position in the search request (top_hits breaks ties by it, as hits do).
    pub shard_index: u32,
    /// `index.max_inner_result_window`: the most hits a top_hits may ask for.
    pub max_inner_result_window: usize,
    /// The score every match gets when the query scores all matches the same (1.0 for
    /// `match_all`, 0.0 for a `bool` of filters, ...); `None` for scored queries, whose slices
    /// then hand each match's score to the aggregations that [`needs_scores`] says show them.
    pub constant_score: Option<f32>,
    /// Where an aggregation script's first error waits for the slice that collects it (see
    /// [`crate::script_values`]).
    pub script_failures: tessera_query::compile::QueryFailures,
}

/// Whether some aggregation in `requests` shows, sorts or samples by scores (top_hits,
/// samplers): the shard then works out [`AggContext::constant_score`], or scores the matches
/// of a scored query.
pub fn needs_scores(requests: &[AggRequest]) -> bool {
    requests.iter().any(|r| match &r.kind {
        AggKind::TopHits(top) => top.uses_scores(),
        AggKind::Sampler(_) | AggKind::DiversifiedSampler(_) => true,
        _ => needs_scores(&r.subs),
    })
}

/// Makes one aggregation's collector for a slice.
pub trait Factory: Send + Sync {
    /// `subs` are the sub-aggregations' collectors; `single_parent` is true when the
    /// aggregation can only ever be asked for parent bucket 0.
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>>;

    /// The collector of a slice that hands its aggregations the scores of a scored query:
    /// `scores` holds those of the block being collected. Only collectors that show scores
    /// read them.
    fn scored_collector(
        &self,
        subs: SubCollectors,
        single_parent: bool,
        _scores: &BlockScores,
    ) -> Result<Box<dyn Collector>> {
        self.collector(subs, single_parent)
    }
}

struct Prepared {
    name: String,
    factory: Box<dyn Factory>,
    /// Whether this aggregation always yields exactly one bucket (so its subs have one parent).
    single_bucket: bool,
    subs: Vec<Prepared>,
}

/// Aggregations resolved against one shard.
pub struct PreparedAggs {
    requests: Vec<AggRequest>,
    tree: Vec<Prepared>,
    /// The shard's searcher, for shard-wide statistics when the shard result is finished.
    searcher: Searcher,
    /// The query scores its matches and some aggregation shows scores: slices hand them over.
    scored: bool,
    script_failures: tessera_query::compile::QueryFailures,
}

/// `scope`: the nested path of the documents this aggregation collects (`None`: root
/// documents), set by an enclosing `nested` or `reverse_nested` aggregation.
fn prepare_one(request: &AggRequest, ctx: &AggContext, scope: Option<&str>) -> Result<Prepared> {
    let factory: Box<dyn Factory> = match &request.kind {
        AggKind::Terms(r) => bucket::terms::factory(request, r, ctx)?,
        AggKind::SignificantTerms(r) => bucket::significant_terms::factory(request, r, ctx)?,
        AggKind::MultiTerms(r) => bucket::multi_terms::factory(request, r, ctx)?,
        AggKind::Composite(r) => bucket::composite::factory(request, r, ctx)?,
        AggKind::Histogram(r) => bucket::histogram::histogram_factory(request, r, ctx)?,
        AggKind::DateHistogram(r) => bucket::date_histogram::factory(request, r, ctx)?,
        AggKind::AutoDateHistogram(r) => bucket::auto_date_histogram::factory(request, r, ctx)?,
        AggKind::Range(r) => bucket::range::factory(request, r, ctx)?,
        AggKind::DateRange(r) => bucket::date_range::factory(request, r, ctx)?,
        AggKind::GeoDistance(r) => bucket::geo_distance::factory(request, r, ctx)?,
        AggKind::IpRange(r) => bucket::ip_range::factory(request, r, ctx)?,
        AggKind::RareTerms(r) => bucket::rare_terms::factory(request, r, ctx)?,
        AggKind::GeoGrid(r) => bucket::geo_grid::factory(request, r, ctx)?,
        AggKind::Filter(r) => bucket::filter::filter_factory(r, ctx)?,
        AggKind::Filters(r) => bucket::filter::filters_factory(r, ctx)?,
        AggKind::AdjacencyMatrix(r) => bucket::adjacency_matrix::factory(r, ctx)?,
        AggKind::Missing(r) => bucket::missing::factory(request, r, ctx)?,
        AggKind::Sampler(r) => bucket::sampler::sampler_factory(request, r, ctx)?,
        AggKind::DiversifiedSampler(r) => bucket::sampler::diversified_factory(request, r, ctx)?,
        AggKind::Global => bucket::filter::global_factory(ctx),
        AggKind::Nested(r) => bucket::nested::nested_factory(&request.name, r, ctx.table, scope)?,
        AggKind::ReverseNested(r) => {
            bucket::nested::reverse_nested_factory(&request.name, r, ctx.table, scope)?
        }
        AggKind::Metric(r) => metric::stats::factory(request, r, ctx)?,
        AggKind::ExtendedStats(r) => metric::extended_stats::factory(request, r, ctx)?,
        AggKind::WeightedAvg(r) => metric::weighted_avg::factory(request, r, ctx)?,
        AggKind::ScriptedMetric(r) => metric::scripted_metric::factory(request, r, ctx)?,
        AggKind::Cardinality(r) => metric::cardinality::factory(request, r, ctx)?,
        AggKind::TopHits(r) => metric::top_hits::factory(request, r, ctx, scope)?,
        AggKind::GeoBounds(r) => metric::geo::bounds_factory(request, r, ctx)?,
        AggKind::GeoCentroid(r) => metric::geo::centroid_factory(request, r, ctx)?,
        AggKind::Percentiles(r) | AggKind::PercentileRanks(r) => {
            metric::percentiles::factory(request, r, ctx)?
        }
        AggKind::MedianAbsoluteDeviation(r) => {
            metric::median_absolute_deviation::factory(request, r, ctx)?
        }
    };
    // a composite aggregation only runs at the top level
    if request
        .subs
        .iter()
        .any(|sub| matches!(sub.kind, AggKind::Composite(_)))
    {
        return Err(bucket::composite::parent_error(&request.kind));
    }
    let subs = request
        .subs
        .iter()
        .map(|sub| {
            let sub_scope = match &request.kind {
                AggKind::Nested(n) => Some(n.path.as_str()),
                AggKind::ReverseNested(r) => r.path.as_deref(),
                _ => scope,
            };
            prepare_one(sub, ctx, sub_scope)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Prepared {
        name: request.name.clone(),
        factory,
        single_bucket: request.kind.is_single_bucket(),
        subs,
    })
}

fn make_collector(
    prepared: &Prepared,
    single_parent: bool,
    scores: Option<&BlockScores>,
) -> Result<Box<dyn Collector>> {
    let subs_single = single_parent && prepared.single_bucket;
    let subs = prepared
        .subs
        .iter()
        .map(|sub| Ok((sub.name.clone(), make_collector(sub, subs_single, scores)?)))
        .collect::<Result<Vec<_>>>()?;
    let subs = SubCollectors::new(subs);
    match scores {
        Some(scores) => prepared
            .factory
            .scored_collector(subs, single_parent, scores),
        None => prepared.factory.collector(subs, single_parent),
    }
}

impl PreparedAggs {
    pub fn prepare(requests: &[AggRequest], ctx: &AggContext) -> Result<PreparedAggs> {
        Ok(PreparedAggs {
            searcher: ctx.searcher.clone(),
            scored: ctx.constant_score.is_none() && needs_scores(requests),
            script_failures: ctx.script_failures.clone(),
            requests: requests.to_vec(),
            tree: requests
                .iter()
                .map(|r| prepare_one(r, ctx, None))
                .collect::<Result<Vec<_>>>()?,
        })
    }

    pub fn requests(&self) -> &[AggRequest] {
        &self.requests
    }

    /// A fresh set of collectors for one slice.
    pub fn slice_aggregator(&self) -> Result<SliceAggregator> {
        let scores = self.scored.then(BlockScores::default);
        let collectors = self
            .tree
            .iter()
            .map(|p| Ok((p.name.clone(), make_collector(p, true, scores.as_ref())?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(SliceAggregator {
            top: SubCollectors::new(collectors),
            scores,
            script_failures: self.script_failures.clone(),
        })
    }

    /// Reduces the slices' results and trims them to what the shard sends; the request
    /// searches `shards_in_request` shards.
    pub fn shard_result(
        &self,
        slices: Vec<InternalAggregations>,
        shards_in_request: usize,
    ) -> Result<InternalAggregations> {
        let mut merged = InternalAggregations::reduce(slices, &self.requests)?;
        let ctx = ShardFinish {
            shards_in_request,
            searcher: Some(&self.searcher),
        };
        merged.finish_shard(&self.requests, &ctx)?;
        Ok(merged)
    }
}

/// The collectors of one slice.
pub struct SliceAggregator {
    top: SubCollectors,
    /// Where the scores of the block being collected wait for the collectors that show them
    /// (`None` when none does, or the query scores every match the same).
    scores: Option<BlockScores>,
    script_failures: tessera_query::compile::QueryFailures,
}

impl SliceAggregator {
    /// Starts a segment (or the part `docs` of it).
    pub fn set_segment(
        &mut self,
        reader: &SegmentReader,
        segment_ord: u32,
        docs: Range<DocId>,
    ) -> Result<()> {
        if let Some(scores) = &self.scores {
            scores.clear();
        }
        self.top.set_segment(&SegmentContext {
            reader,
            segment_ord,
            docs,
        })
    }

    /// Collects matching docs of the current segment (strictly ascending).
    pub fn collect(&mut self, docs: &[DocId]) {
        for chunk in docs.chunks(ZERO_PARENTS_LEN) {
            self.top.collect(chunk, &ZERO_PARENTS[..chunk.len()]);
        }
    }

    /// Whether the collectors want each match's score ([`SliceAggregator::collect_scored`]).
    pub fn wants_scores(&self) -> bool {
        self.scores.is_some()
    }

    /// Collects matching docs of the current segment (strictly ascending) with their scores.
    pub fn collect_scored(&mut self, docs: &[DocId], scores: &[f32]) {
        if let Some(block) = &self.scores {
            block.set(docs, scores);
        }
        self.collect(docs);
    }

    /// The fields whose sorted values can stand in for matching documents in every top-level
    /// aggregation; `None` when some aggregation needs documents.
    pub fn sorted_fields(&self) -> Option<Vec<String>> {
        self.top.sorted_fields()
    }

    /// The field a lone aggregation can count segments from by its terms dictionary.
    pub fn dictionary_field(&self) -> Option<String> {
        self.top.dictionary_field()
    }

    /// Counts the current segment from sorted values (see [`SliceAggregator::sorted_fields`]).
    pub fn collect_sorted(&mut self, segment: &SortedSegment) {
        self.top.collect_sorted(segment)
    }

    /// Counts the current segment from its terms dictionary, when every document of it
    /// matches and none is deleted (see [`Collector::collect_from_dictionary`]).
    pub fn collect_from_dictionary(&mut self, segment: &SegmentReader) -> Result<bool> {
        self.top.collect_from_dictionary(segment)
    }

    /// Ends the current segment; an aggregation script's error fails the slice here.
    pub fn finish_segment(&mut self) -> Result<()> {
        self.top.finish_segment()?;
        self.script_failed()
    }

    /// The slice's intermediate results.
    pub fn build(mut self) -> Result<InternalAggregations> {
        self.script_failed()?;
        self.top.build(0)
    }

    fn script_failed(&self) -> Result<()> {
        match self.script_failures.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}
