//! Intermediate aggregation results: what a slice produces, what a shard sends, what the
//! coordinator reduces. They are plain data (serde, encoded with postcard when they cross the
//! network), merged by one [`InternalAggregations::reduce`] at every level, trimmed once per
//! shard ([`InternalAggregations::finish_shard`]) and turned into OpenSearch's JSON once, at
//! the coordinator ([`InternalAggregations::render`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::bucket::auto_date_histogram::InternalAutoDateHistogram;
use crate::bucket::composite::InternalComposite;
use crate::bucket::filter::{InternalFilters, InternalSingleBucket};
use crate::bucket::geo_grid::InternalGeoGrid;
use crate::bucket::histogram::{InternalDateHistogram, InternalHistogram};
use crate::bucket::ip_range::InternalIpRange;
use crate::bucket::range::InternalRange;
use crate::bucket::rare_terms::InternalRareTerms;
use crate::bucket::significant_terms::InternalSignificantTerms;
use crate::bucket::terms::InternalTerms;
use crate::metric::cardinality::InternalCardinality;
use crate::metric::extended_stats::InternalExtendedStats;
use crate::metric::geo::{GeoBounds, GeoCentroid};
use crate::metric::median_absolute_deviation;
use crate::metric::percentiles::InternalPercentiles;
use crate::metric::scripted_metric::InternalScriptedMetric;
use crate::metric::stats::InternalStats;
use crate::metric::top_hits::InternalTopHits;
use crate::metric::weighted_avg::InternalWeightedAvg;
use crate::request::{AggKind, AggRequest};

/// The results of sibling aggregations, in request order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalAggregations(pub Vec<(String, InternalAgg)>);

/// One aggregation's intermediate result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum InternalAgg {
    Terms(InternalTerms),
    SignificantTerms(InternalSignificantTerms),
    RareTerms(InternalRareTerms),
    Histogram(InternalHistogram),
    DateHistogram(InternalDateHistogram),
    AutoDateHistogram(InternalAutoDateHistogram),
    Composite(InternalComposite),
    Range(InternalRange),
    IpRange(InternalIpRange),
    /// geohash_grid, geotile_grid.
    GeoGrid(InternalGeoGrid),
    /// filter, missing, global.
    SingleBucket(InternalSingleBucket),
    Filters(InternalFilters),
    /// min, max, sum, avg, stats, value_count.
    Stats(InternalStats),
    ExtendedStats(InternalExtendedStats),
    WeightedAvg(InternalWeightedAvg),
    Cardinality(InternalCardinality),
    /// percentiles and percentile_ranks.
    Percentiles(InternalPercentiles),
    /// median_absolute_deviation: the same sketch as percentiles.
    MedianAbsoluteDeviation(InternalPercentiles),
    TopHits(InternalTopHits),
    GeoBounds(GeoBounds),
    GeoCentroid(GeoCentroid),
    ScriptedMetric(InternalScriptedMetric),
}

/// What finishing a shard's result needs to know.
#[derive(Clone, Copy)]
pub struct ShardFinish<'a> {
    /// How many shards the search request targets (terms size their shard lists by it).
    pub shards_in_request: usize,
    /// The shard's searcher, for shard-wide statistics (background frequencies); `None` in
    /// unit tests of pure reduce logic.
    pub searcher: Option<&'a tantivy::Searcher>,
}

/// State of the final rendering: the bucket budget (`search.max_buckets`).
#[derive(Debug)]
pub struct RenderContext {
    pub max_buckets: usize,
    buckets: usize,
    /// `typed_keys=true`: every aggregation's name is prefixed with its result type
    /// (`sterms#tags`), sub-aggregations included, as clients that parse results by type
    /// (opensearch-java) ask.
    pub typed_keys: bool,
}

/// OpenSearch's default `search.max_buckets`.
pub const DEFAULT_MAX_BUCKETS: usize = 65_535;

impl RenderContext {
    pub fn new(max_buckets: usize) -> RenderContext {
        RenderContext {
            max_buckets,
            buckets: 0,
            typed_keys: false,
        }
    }

    /// The same context, with `typed_keys` set as asked.
    pub fn with_typed_keys(self, typed_keys: bool) -> RenderContext {
        RenderContext { typed_keys, ..self }
    }

    /// Fails, before anything is allocated, when `n` more buckets would pass the budget. `n`
    /// is a float so that a count computed from extreme bounds or a tiny interval (beyond
    /// `usize`, infinite or NaN) is checked without overflowing: a histogram's empty-bucket
    /// fill asks here first instead of growing a list until the budget trips, or forever
    /// when the count wrapped.
    pub fn check_room(&self, n: f64) -> Result<()> {
        let total = self.buckets as f64 + n;
        if total.is_nan() || total > self.max_buckets as f64 {
            let count = if total.is_finite() && total < usize::MAX as f64 {
                total as usize
            } else {
                usize::MAX
            };
            return Err(too_many_buckets(self.max_buckets, count));
        }
        Ok(())
    }

    /// Accounts for `n` more buckets in the response.
    pub fn add_buckets(&mut self, n: usize) -> Result<()> {
        self.buckets = self.buckets.saturating_add(n);
        if self.buckets > self.max_buckets {
            return Err(too_many_buckets(self.max_buckets, self.buckets));
        }
        Ok(())
    }
}

/// OpenSearch's `too_many_buckets_exception`.
pub fn too_many_buckets(max: usize, count: usize) -> Error {
    Error::new(
        "too_many_buckets_exception",
        503,
        format!(
            "Trying to create too many buckets. Must be less than or equal to: [{max}] but was [{count}]. This limit can be set by changing the [search.max_buckets] cluster level setting."
        ),
    )
    .with_meta("max_buckets", max)
}

fn mismatch(name: &str) -> Error {
    Error::illegal_state(format!(
        "partial results of aggregation [{name}] do not have the same type"
    ))
}

impl InternalAggregations {
    /// Empty results for `requests` (no documents matched anywhere).
    pub fn empty(requests: &[AggRequest]) -> InternalAggregations {
        InternalAggregations(
            requests
                .iter()
                .map(|r| (r.name.clone(), InternalAgg::empty(r)))
                .collect(),
        )
    }

    /// Merges partial results of the same requests (slices of a shard, or shards). The result
    /// does not depend on how the partial results were grouped.
    pub fn reduce(
        parts: Vec<InternalAggregations>,
        requests: &[AggRequest],
    ) -> Result<InternalAggregations> {
        let mut parts = parts.into_iter();
        let Some(first) = parts.next() else {
            return Ok(InternalAggregations::empty(requests));
        };
        let rest: Vec<InternalAggregations> = parts.collect();
        if rest.is_empty() {
            return Ok(first);
        }
        let mut columns: Vec<Vec<InternalAgg>> = first
            .0
            .into_iter()
            .map(|(_, agg)| {
                let mut column = Vec::with_capacity(rest.len() + 1);
                column.push(agg);
                column
            })
            .collect();
        for part in rest {
            if part.0.len() != columns.len() {
                return Err(Error::illegal_state(
                    "partial aggregation results have different shapes",
                ));
            }
            for (column, (_, agg)) in columns.iter_mut().zip(part.0) {
                column.push(agg);
            }
        }
        let mut out = Vec::with_capacity(requests.len());
        for (request, column) in requests.iter().zip(columns) {
            out.push((request.name.clone(), InternalAgg::reduce(column, request)?));
        }
        Ok(InternalAggregations(out))
    }

    /// What a shard sends after reducing its slices: bucket lists cut to their shard size.
    pub fn finish_shard(&mut self, requests: &[AggRequest], ctx: &ShardFinish) -> Result<()> {
        for ((_, agg), request) in self.0.iter_mut().zip(requests) {
            agg.finish_shard(request, ctx)?;
        }
        Ok(())
    }

    /// The final JSON object (`{"name": {...}, ...}`), rendered once at the coordinator.
    pub fn render(
        self,
        requests: &[AggRequest],
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for ((name, agg), request) in self.0.into_iter().zip(requests) {
            let key = if ctx.typed_keys {
                format!("{}#{name}", agg.typed_name(request))
            } else {
                name
            };
            out.insert(key, Value::Object(agg.render(request, ctx)?));
        }
        Ok(out)
    }

    /// Binary encoding for results crossing the network.
    pub fn encode(&self) -> Result<Vec<u8>> {
        postcard::to_stdvec(self).map_err(|e| Error::internal("encode aggregation results", e))
    }

    pub fn decode(bytes: &[u8]) -> Result<InternalAggregations> {
        postcard::from_bytes(bytes).map_err(|e| Error::internal("decode aggregation results", e))
    }
}

impl InternalAgg {
    /// The result of `request` over no documents.
    pub fn empty(request: &AggRequest) -> InternalAgg {
        match &request.kind {
            AggKind::Terms(_) | AggKind::MultiTerms(_) => {
                InternalAgg::Terms(InternalTerms::default())
            }
            AggKind::SignificantTerms(_) => {
                InternalAgg::SignificantTerms(InternalSignificantTerms::default())
            }
            AggKind::Histogram(_) => InternalAgg::Histogram(InternalHistogram::default()),
            AggKind::DateHistogram(_) => {
                InternalAgg::DateHistogram(InternalDateHistogram::default())
            }
            AggKind::AutoDateHistogram(_) => {
                InternalAgg::AutoDateHistogram(InternalAutoDateHistogram::default())
            }
            AggKind::Composite(_) => InternalAgg::Composite(InternalComposite::default()),
            AggKind::Range(r) => InternalAgg::Range(InternalRange::empty(r, &request.subs)),
            AggKind::DateRange(r) => {
                InternalAgg::Range(InternalRange::empty(&r.range, &request.subs))
            }
            AggKind::GeoDistance(g) => {
                InternalAgg::Range(InternalRange::empty_distances(g, &request.subs))
            }
            AggKind::IpRange(r) => InternalAgg::IpRange(InternalIpRange::empty(r, &request.subs)),
            AggKind::RareTerms(_) => InternalAgg::RareTerms(InternalRareTerms::empty()),
            AggKind::GeoGrid(_) => InternalAgg::GeoGrid(InternalGeoGrid::default()),
            AggKind::Filter(_)
            | AggKind::Missing(_)
            | AggKind::Sampler(_)
            | AggKind::DiversifiedSampler(_)
            | AggKind::Global
            | AggKind::Nested(_)
            | AggKind::ReverseNested(_) => {
                InternalAgg::SingleBucket(InternalSingleBucket::empty(&request.subs))
            }
            AggKind::Filters(f) => InternalAgg::Filters(InternalFilters::empty(f, &request.subs)),
            AggKind::AdjacencyMatrix(m) => InternalAgg::Filters(m.empty(&request.subs)),
            AggKind::Metric(_) => InternalAgg::Stats(InternalStats::default()),
            AggKind::ExtendedStats(_) => {
                InternalAgg::ExtendedStats(InternalExtendedStats::default())
            }
            AggKind::WeightedAvg(_) => InternalAgg::WeightedAvg(InternalWeightedAvg::default()),
            AggKind::Cardinality(_) => {
                InternalAgg::Cardinality(InternalCardinality::empty(request))
            }
            AggKind::Percentiles(_) | AggKind::PercentileRanks(_) => {
                InternalAgg::Percentiles(InternalPercentiles::empty(request))
            }
            AggKind::MedianAbsoluteDeviation(m) => {
                InternalAgg::MedianAbsoluteDeviation(median_absolute_deviation::empty(m))
            }
            AggKind::TopHits(_) => InternalAgg::TopHits(InternalTopHits::default()),
            AggKind::GeoBounds(_) => InternalAgg::GeoBounds(GeoBounds::default()),
            AggKind::GeoCentroid(_) => InternalAgg::GeoCentroid(GeoCentroid::default()),
            AggKind::ScriptedMetric(_) => {
                InternalAgg::ScriptedMetric(InternalScriptedMetric::default())
            }
        }
    }

    fn reduce(parts: Vec<InternalAgg>, request: &AggRequest) -> Result<InternalAgg> {
        macro_rules! gather {
            ($variant:ident) => {{
                let mut items = Vec::with_capacity(parts.len());
                for part in parts {
                    match part {
                        InternalAgg::$variant(x) => items.push(x),
                        _ => return Err(mismatch(&request.name)),
                    }
                }
                items
            }};
        }
        Ok(match parts.first() {
            None => InternalAgg::empty(request),
            Some(InternalAgg::Terms(_)) => {
                InternalAgg::Terms(InternalTerms::reduce(gather!(Terms), request)?)
            }
            Some(InternalAgg::SignificantTerms(_)) => InternalAgg::SignificantTerms(
                InternalSignificantTerms::reduce(gather!(SignificantTerms), request)?,
            ),
            Some(InternalAgg::Histogram(_)) => {
                InternalAgg::Histogram(InternalHistogram::reduce(gather!(Histogram), request)?)
            }
            Some(InternalAgg::DateHistogram(_)) => InternalAgg::DateHistogram(
                InternalDateHistogram::reduce(gather!(DateHistogram), request)?,
            ),
            Some(InternalAgg::AutoDateHistogram(_)) => InternalAgg::AutoDateHistogram(
                InternalAutoDateHistogram::reduce(gather!(AutoDateHistogram), request)?,
            ),
            Some(InternalAgg::Composite(_)) => {
                InternalAgg::Composite(InternalComposite::reduce(gather!(Composite), request)?)
            }
            Some(InternalAgg::Range(_)) => {
                InternalAgg::Range(InternalRange::reduce(gather!(Range), request)?)
            }
            Some(InternalAgg::RareTerms(_)) => {
                InternalAgg::RareTerms(InternalRareTerms::reduce(gather!(RareTerms), request)?)
            }
            Some(InternalAgg::GeoGrid(_)) => {
                InternalAgg::GeoGrid(InternalGeoGrid::reduce(gather!(GeoGrid), request)?)
            }
            Some(InternalAgg::IpRange(_)) => {
                InternalAgg::IpRange(InternalIpRange::reduce(gather!(IpRange), request)?)
            }
            Some(InternalAgg::SingleBucket(_)) => InternalAgg::SingleBucket(
                InternalSingleBucket::reduce(gather!(SingleBucket), request)?,
            ),
            Some(InternalAgg::Filters(_)) => {
                InternalAgg::Filters(InternalFilters::reduce(gather!(Filters), request)?)
            }
            Some(InternalAgg::Stats(_)) => {
                InternalAgg::Stats(InternalStats::reduce(gather!(Stats)))
            }
            Some(InternalAgg::ExtendedStats(_)) => {
                InternalAgg::ExtendedStats(InternalExtendedStats::reduce(gather!(ExtendedStats)))
            }
            Some(InternalAgg::WeightedAvg(_)) => {
                InternalAgg::WeightedAvg(InternalWeightedAvg::reduce(gather!(WeightedAvg)))
            }
            Some(InternalAgg::Cardinality(_)) => {
                InternalAgg::Cardinality(InternalCardinality::reduce(gather!(Cardinality))?)
            }
            Some(InternalAgg::Percentiles(_)) => {
                InternalAgg::Percentiles(InternalPercentiles::reduce(gather!(Percentiles))?)
            }
            Some(InternalAgg::MedianAbsoluteDeviation(_)) => InternalAgg::MedianAbsoluteDeviation(
                InternalPercentiles::reduce(gather!(MedianAbsoluteDeviation))?,
            ),
            Some(InternalAgg::TopHits(_)) => {
                InternalAgg::TopHits(InternalTopHits::reduce(gather!(TopHits), request)?)
            }
            Some(InternalAgg::GeoBounds(_)) => {
                InternalAgg::GeoBounds(GeoBounds::reduce(gather!(GeoBounds)))
            }
            Some(InternalAgg::GeoCentroid(_)) => {
                InternalAgg::GeoCentroid(GeoCentroid::reduce(gather!(GeoCentroid)))
            }
            Some(InternalAgg::ScriptedMetric(_)) => {
                InternalAgg::ScriptedMetric(InternalScriptedMetric::reduce(gather!(ScriptedMetric)))
            }
        })
    }

    fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        match self {
            InternalAgg::Terms(t) => t.finish_shard(request, ctx),
            InternalAgg::SignificantTerms(t) => t.finish_shard(request, ctx),
            InternalAgg::Histogram(h) => h.for_each_subs(|s| s.finish_shard(&request.subs, ctx)),
            InternalAgg::DateHistogram(h) => {
                h.for_each_subs(|s| s.finish_shard(&request.subs, ctx))
            }
            InternalAgg::AutoDateHistogram(h) => h.finish_shard(request, ctx),
            InternalAgg::Composite(c) => c.finish_shard(request, ctx),
            InternalAgg::Range(r) => r.for_each_subs(|s| s.finish_shard(&request.subs, ctx)),
            InternalAgg::IpRange(r) => r.for_each_subs(|s| s.finish_shard(&request.subs, ctx)),
            InternalAgg::RareTerms(r) => r.finish_shard(request, ctx),
            InternalAgg::GeoGrid(g) => g.finish_shard(request, ctx),
            InternalAgg::SingleBucket(b) => b.subs.finish_shard(&request.subs, ctx),
            InternalAgg::Filters(f) => f.for_each_subs(|s| s.finish_shard(&request.subs, ctx)),
            InternalAgg::Stats(_)
            | InternalAgg::ExtendedStats(_)
            | InternalAgg::WeightedAvg(_)
            | InternalAgg::Cardinality(_)
            | InternalAgg::Percentiles(_)
            | InternalAgg::MedianAbsoluteDeviation(_)
            | InternalAgg::GeoBounds(_)
            | InternalAgg::GeoCentroid(_)
            | InternalAgg::ScriptedMetric(_) => Ok(()),
            InternalAgg::TopHits(t) => t.finish_shard(request, ctx),
        }
    }

    /// The name of this result's type in OpenSearch (`typed_keys`), which for terms and
    /// significant terms depends on the keys (`sterms`, `lterms`, `dterms`, `sigsterms`,
    /// `siglterms`) and for percentiles on the method (always t-digest here).
    pub fn typed_name(&self, request: &AggRequest) -> &'static str {
        match (self, &request.kind) {
            (_, AggKind::MultiTerms(_)) => "multi_terms",
            (InternalAgg::Terms(t), _) => t.value_type.typed_name(),
            (InternalAgg::SignificantTerms(t), _) => t.typed_name(),
            (InternalAgg::RareTerms(t), _) => t.typed_name(),
            (_, AggKind::Percentiles(_)) => "tdigest_percentiles",
            (_, AggKind::PercentileRanks(_)) => "tdigest_percentile_ranks",
            // a diversified sample is a sample
            (_, AggKind::DiversifiedSampler(_)) => "sampler",
            (_, kind) => kind.type_name(),
        }
    }

    fn render(self, request: &AggRequest, ctx: &mut RenderContext) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        if let Some(meta) = &request.meta {
            out.insert("meta".into(), Value::Object(meta.clone()));
        }
        let body = match self {
            InternalAgg::Terms(t) => t.render(request, ctx)?,
            InternalAgg::SignificantTerms(t) => t.render(request, ctx)?,
            InternalAgg::Histogram(h) => h.render(request, ctx)?,
            InternalAgg::DateHistogram(h) => h.render(request, ctx)?,
            InternalAgg::AutoDateHistogram(h) => h.render(request, ctx)?,
            InternalAgg::Composite(c) => c.render(request, ctx)?,
            InternalAgg::Range(r) => r.render(request, ctx)?,
            InternalAgg::IpRange(r) => r.render(request, ctx)?,
            InternalAgg::RareTerms(r) => r.render(request, ctx)?,
            InternalAgg::GeoGrid(g) => g.render(request, ctx)?,
            InternalAgg::SingleBucket(b) => b.render(request, ctx)?,
            InternalAgg::Filters(f) => f.render(request, ctx)?,
            InternalAgg::Stats(s) => s.render(request)?,
            InternalAgg::ExtendedStats(s) => s.render(request)?,
            InternalAgg::WeightedAvg(w) => w.render(),
            InternalAgg::Cardinality(c) => c.render(),
            InternalAgg::Percentiles(p) => p.render(request)?,
            InternalAgg::MedianAbsoluteDeviation(m) => median_absolute_deviation::render(&m),
            InternalAgg::TopHits(t) => t.render(request)?,
            InternalAgg::GeoBounds(b) => b.render(request),
            InternalAgg::GeoCentroid(c) => c.render(),
            InternalAgg::ScriptedMetric(s) => s.render(request)?,
        };
        out.extend(body);
        Ok(out)
    }

    /// A single numeric value of this result, for ordering buckets by a sub-aggregation
    /// (`order: {"avg_price": "desc"}` or `{"stats_x.max": "asc"}`).
    pub fn sort_value(&self, metric: Option<&str>, request: &AggRequest) -> Result<f64> {
        match self {
            InternalAgg::Stats(s) => s.sort_value(metric, request),
            InternalAgg::ExtendedStats(s) => s.sort_value(metric, request),
            InternalAgg::WeightedAvg(w) => Ok(w.sort_value()),
            InternalAgg::Cardinality(c) => Ok(c.value() as f64),
            InternalAgg::Percentiles(p) => p.sort_value(metric, request),
            InternalAgg::MedianAbsoluteDeviation(m) => {
                Ok(median_absolute_deviation::value(&m.sketch))
            }
            InternalAgg::SingleBucket(b) if metric.is_none() => Ok(b.doc_count as f64),
            _ => Err(Error::new(
                "aggregation_execution_exception",
                400,
                format!(
                    "Invalid aggregation order path [{}]. Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end.",
                    request.name
                ),
            )),
        }
    }
}

/// Renders a bucket's sub-aggregations into the bucket object.
pub(crate) fn render_subs(
    bucket: &mut Map<String, Value>,
    subs: InternalAggregations,
    requests: &[AggRequest],
    ctx: &mut RenderContext,
) -> Result<()> {
    bucket.extend(subs.render(requests, ctx)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_checked_in_floats_before_anything_is_counted() {
        let mut ctx = RenderContext::new(10);
        ctx.add_buckets(4).unwrap();
        ctx.check_room(6.0).unwrap();
        let e = ctx.check_room(7.0).unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
        assert!(e.reason().contains("but was [11]"), "{}", e.reason());
        for n in [f64::NAN, f64::INFINITY, 1e300] {
            let e = ctx.check_room(n).unwrap_err();
            assert!(
                e.reason().contains(&format!("but was [{}]", usize::MAX)),
                "{}",
                e.reason()
            );
        }
        // checking counts nothing
        ctx.add_buckets(6).unwrap();
        assert!(ctx.add_buckets(1).is_err());
    }

    #[test]
    fn typed_keys_name_each_result_by_its_type_at_every_level() {
        let requests = crate::request::parse_aggregations(&serde_json::json!({
            "longs": {"terms": {"field": "n"}},
            "words": {"terms": {"field": "k"}},
            "both": {"multi_terms": {"terms": [{"field": "k"}, {"field": "n"}]}},
            "f": {"filter": {"match_all": {}}, "aggs": {"avg_n": {"avg": {"field": "n"}}}},
            "p": {"percentiles": {"field": "n"}},
            "r": {"percentile_ranks": {"field": "n", "values": [1]}},
            "h": {"date_histogram": {"field": "t", "calendar_interval": "day"}}
        }))
        .unwrap();
        let mut results = InternalAggregations::empty(&requests);
        // a shard of a long field names its terms `lterms`, even without buckets, and
        // keeps that type through a reduce with a shard where the field is unmapped
        for (name, result) in &mut results.0 {
            if let (true, InternalAgg::Terms(terms)) = (name == "longs", result) {
                terms.value_type = crate::bucket::terms::TermsValueType::Long;
            }
        }
        let reduced = InternalAggregations::reduce(
            vec![results, InternalAggregations::empty(&requests)],
            &requests,
        )
        .unwrap();
        let render = |typed: bool| {
            reduced
                .clone()
                .render(
                    &requests,
                    &mut RenderContext::new(100).with_typed_keys(typed),
                )
                .unwrap()
        };
        let keys: Vec<String> = render(true).keys().cloned().collect();
        let mut expected = vec![
            "lterms#longs",
            "sterms#words",
            "multi_terms#both",
            "filter#f",
            "tdigest_percentiles#p",
            "tdigest_percentile_ranks#r",
            "date_histogram#h",
        ];
        expected.sort();
        let mut keys_sorted = keys.clone();
        keys_sorted.sort();
        assert_eq!(keys_sorted, expected);
        assert!(render(true)["filter#f"].get("avg#avg_n").is_some());
        let plain = render(false);
        assert!(plain.contains_key("longs") && plain["f"].get("avg_n").is_some());
    }
}
