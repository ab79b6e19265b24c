//! The aggregation request tree: `aggs`/`aggregations` parsed into [`AggRequest`]s.
//!
//! The framing (names, one type per aggregation, `meta`, sub-aggregations) is parsed here with
//! OpenSearch's errors; each aggregation type parses its own body in its module, rejecting
//! unknown parameters the way OpenSearch's object parsers do (`[terms] unknown field [x]`).

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::bucket::adjacency_matrix::AdjacencyMatrixRequest;
use crate::bucket::geo_distance::GeoDistanceRequest;
use crate::bucket::geo_grid::{GeoGridRequest, Grid};
use crate::bucket::ip_range::IpRangeRequest;
use crate::bucket::rare_terms::RareTermsRequest;
use crate::bucket::{
    auto_date_histogram::AutoDateHistogramRequest, composite::CompositeRequest,
    date_histogram::DateHistogramRequest, date_range::DateRangeRequest, filter::FilterRequest,
    filter::FiltersRequest, histogram::HistogramRequest, missing::MissingRequest,
    multi_terms::MultiTermsRequest, range::RangeRequest,
    significant_terms::SignificantTermsRequest, terms::TermsRequest,
};
use crate::metric::cardinality::CardinalityRequest;
use crate::metric::extended_stats::ExtendedStatsRequest;
use crate::metric::geo::GeoMetricRequest;
use crate::metric::median_absolute_deviation::MedianAbsoluteDeviationRequest;
use crate::metric::percentiles::{PercentilesKind, PercentilesRequest};
use crate::metric::stats::{MetricRequest, StatsKind};
use crate::metric::top_hits::TopHitsRequest;
use crate::metric::weighted_avg::WeightedAvgRequest;
use crate::pipeline::{self, PipelineAgg};
use tessera_common::error::json_token as token;

/// One named aggregation with its sub-aggregations.
#[derive(Clone, Debug, PartialEq)]
pub struct AggRequest {
    pub name: String,
    pub kind: AggKind,
    pub subs: Vec<AggRequest>,
    /// The pipeline aggregations declared among the sub-aggregations: shards never see them,
    /// the coordinator runs them on the final result (`crate::pipeline`).
    pub pipelines: Vec<PipelineAgg>,
    /// `meta`, returned unchanged in the response.
    pub meta: Option<Map<String, Value>>,
}

/// The aggregation types Tessera runs.
#[derive(Clone, Debug, PartialEq)]
pub enum AggKind {
    Terms(TermsRequest),
    SignificantTerms(SignificantTermsRequest),
    RareTerms(RareTermsRequest),
    MultiTerms(MultiTermsRequest),
    Composite(CompositeRequest),
    Histogram(HistogramRequest),
    DateHistogram(DateHistogramRequest),
    AutoDateHistogram(AutoDateHistogramRequest),
    Range(RangeRequest),
    DateRange(DateRangeRequest),
    GeoDistance(GeoDistanceRequest),
    IpRange(IpRangeRequest),
    /// geohash_grid, geotile_grid.
    GeoGrid(GeoGridRequest),
    Filter(FilterRequest),
    Filters(FiltersRequest),
    AdjacencyMatrix(AdjacencyMatrixRequest),
    Missing(MissingRequest),
    Sampler(crate::bucket::sampler::SamplerRequest),
    DiversifiedSampler(crate::bucket::sampler::DiversifiedSamplerRequest),
    Global,
    Nested(crate::bucket::nested::NestedRequest),
    ReverseNested(crate::bucket::nested::ReverseNestedRequest),
    /// min, max, sum, avg, stats, value_count.
    Metric(MetricRequest),
    ExtendedStats(ExtendedStatsRequest),
    WeightedAvg(WeightedAvgRequest),
    Cardinality(CardinalityRequest),
    Percentiles(PercentilesRequest),
    PercentileRanks(PercentilesRequest),
    MedianAbsoluteDeviation(MedianAbsoluteDeviationRequest),
    TopHits(TopHitsRequest),
    GeoBounds(GeoMetricRequest),
    GeoCentroid(GeoMetricRequest),
    ScriptedMetric(crate::metric::scripted_metric::ScriptedMetricRequest),
}

/// How a metric aggregation can be used to order buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricShape {
    /// One value (`order: {"avg_x": "asc"}`).
    Single,
    /// Several named values (`order: {"stats_x.max": "asc"}`).
    Multi,
    /// No number to sort by (top_hits).
    NotNumeric,
}

impl AggKind {
    /// The type name used in requests and in `typed_keys`.
    pub fn type_name(&self) -> &'static str {
        match self {
            AggKind::Terms(_) => "terms",
            AggKind::SignificantTerms(r) if r.text.is_some() => "significant_text",
            AggKind::SignificantTerms(_) => "significant_terms",
            AggKind::MultiTerms(_) => "multi_terms",
            AggKind::Composite(_) => "composite",
            AggKind::Histogram(_) => "histogram",
            AggKind::DateHistogram(_) => "date_histogram",
            AggKind::AutoDateHistogram(_) => "auto_date_histogram",
            AggKind::Range(_) => "range",
            AggKind::DateRange(_) => "date_range",
            AggKind::GeoDistance(_) => "geo_distance",
            AggKind::IpRange(_) => "ip_range",
            AggKind::RareTerms(_) => "rare_terms",
            AggKind::GeoGrid(g) => g.grid.type_name(),
            AggKind::Filter(_) => "filter",
            AggKind::Filters(_) => "filters",
            AggKind::AdjacencyMatrix(_) => "adjacency_matrix",
            AggKind::Missing(_) => "missing",
            AggKind::Sampler(_) => "sampler",
            AggKind::DiversifiedSampler(_) => "diversified_sampler",
            AggKind::Global => "global",
            AggKind::Nested(_) => "nested",
            AggKind::ReverseNested(_) => "reverse_nested",
            AggKind::Metric(m) => m.kind.type_name(),
            AggKind::ExtendedStats(_) => "extended_stats",
            AggKind::WeightedAvg(_) => "weighted_avg",
            AggKind::Cardinality(_) => "cardinality",
            AggKind::Percentiles(_) => "percentiles",
            AggKind::PercentileRanks(_) => "percentile_ranks",
            AggKind::MedianAbsoluteDeviation(_) => "median_absolute_deviation",
            AggKind::TopHits(_) => "top_hits",
            AggKind::GeoBounds(_) => "geo_bounds",
            AggKind::GeoCentroid(_) => "geo_centroid",
            AggKind::ScriptedMetric(_) => "scripted_metric",
        }
    }

    /// Whether the aggregation makes buckets (and so may have sub-aggregations).
    pub fn is_bucket(&self) -> bool {
        self.metric_shape().is_none()
    }

    /// For metric aggregations, how they order buckets; `None` for bucket aggregations.
    pub fn metric_shape(&self) -> Option<MetricShape> {
        match self {
            AggKind::Metric(m) if m.kind.is_multi_value() => Some(MetricShape::Multi),
            AggKind::Metric(_)
            | AggKind::WeightedAvg(_)
            | AggKind::Cardinality(_)
            | AggKind::MedianAbsoluteDeviation(_) => Some(MetricShape::Single),
            AggKind::ExtendedStats(_) | AggKind::Percentiles(_) | AggKind::PercentileRanks(_) => {
                Some(MetricShape::Multi)
            }
            AggKind::TopHits(_)
            | AggKind::GeoBounds(_)
            | AggKind::GeoCentroid(_)
            | AggKind::ScriptedMetric(_) => Some(MetricShape::NotNumeric),
            AggKind::Terms(_)
            | AggKind::SignificantTerms(_)
            | AggKind::MultiTerms(_)
            | AggKind::Composite(_)
            | AggKind::Histogram(_)
            | AggKind::DateHistogram(_)
            | AggKind::AutoDateHistogram(_)
            | AggKind::Range(_)
            | AggKind::DateRange(_)
            | AggKind::GeoDistance(_)
            | AggKind::IpRange(_)
            | AggKind::RareTerms(_)
            | AggKind::GeoGrid(_)
            | AggKind::AdjacencyMatrix(_)
            | AggKind::Filter(_)
            | AggKind::Filters(_)
            | AggKind::Missing(_)
            | AggKind::Sampler(_)
            | AggKind::DiversifiedSampler(_)
            | AggKind::Global
            | AggKind::Nested(_)
            | AggKind::ReverseNested(_) => None,
        }
    }

    /// Whether the aggregation always makes exactly one bucket (its sub-aggregations then have
    /// one parent, and a bucket order may name it in a path).
    pub fn is_single_bucket(&self) -> bool {
        matches!(
            self,
            AggKind::Filter(_)
                | AggKind::Missing(_)
                | AggKind::Sampler(_)
                | AggKind::DiversifiedSampler(_)
                | AggKind::Global
                | AggKind::Nested(_)
                | AggKind::ReverseNested(_)
        )
    }

    /// Whether a multi-value metric has a value called `metric`.
    pub fn has_metric(&self, metric: &str) -> bool {
        match self {
            AggKind::Metric(m) => m.kind.has_metric(metric),
            AggKind::ExtendedStats(_) => ExtendedStatsRequest::has_metric(metric),
            AggKind::Percentiles(p) | AggKind::PercentileRanks(p) => p.has_metric(metric),
            _ => false,
        }
    }
}

/// OpenSearch aggregation types Tessera does not run (yet): a clear error instead of a
/// silently missing result.
const UNSUPPORTED_TYPES: &[&str] = &[
    "children",
    "matrix_stats",
    "moving_avg",
    "variable_width_histogram",
];

/// Parses the value of `aggs` (or `aggregations`) without pipeline aggregations at its top
/// level (a sub-aggregation's pipelines are in its [`AggRequest::pipelines`]).
pub fn parse_aggregations(value: &Value) -> Result<Vec<AggRequest>> {
    let (aggs, pipelines) = parse_aggregations_with_pipelines(value)?;
    if let Some(p) = pipelines.first() {
        return Err(Error::illegal_argument(format!(
            "pipeline aggregation [{}] is not expected here",
            p.name
        )));
    }
    Ok(aggs)
}

/// Parses the value of `aggs` (or `aggregations`): the aggregations that shards collect, and
/// the top level's pipeline aggregations, which the coordinator runs after the final reduce.
/// Every pipeline of the tree is validated (paths, parents) before anything runs.
pub fn parse_aggregations_with_pipelines(
    value: &Value,
) -> Result<(Vec<AggRequest>, Vec<PipelineAgg>)> {
    let (aggs, pipelines) = parse_level(value)?;
    check_global_placement(&aggs)?;
    pipeline::validate(&aggs, &pipelines)?;
    Ok((aggs, pipelines))
}

/// One object of named aggregations, split into collected aggregations and pipelines.
fn parse_level(value: &Value) -> Result<(Vec<AggRequest>, Vec<PipelineAgg>)> {
    let Value::Object(map) = value else {
        return Err(Error::parsing(format!(
            "Expected [START_OBJECT] under [aggs], but got a [{}] in [aggs]",
            token(value)
        )));
    };
    let mut aggs = Vec::new();
    let mut pipelines: Vec<PipelineAgg> = Vec::new();
    for (name, body) in map {
        match parse_one(name, body)? {
            Parsed::Agg(agg) => aggs.push(*agg),
            Parsed::Pipeline(p) => pipelines.push(*p),
        }
    }
    check_sibling_names(&aggs, &pipelines)?;
    Ok((aggs, pipelines))
}

enum Parsed {
    Agg(Box<AggRequest>),
    Pipeline(Box<PipelineAgg>),
}

fn parse_one(name: &str, body: &Value) -> Result<Parsed> {
    if name.contains(['[', ']', '>']) {
        return Err(Error::parsing(format!(
            "Invalid aggregation name [{name}]. Aggregation names can contain any character except '[', ']', and '>'"
        ))
        .at_body_key(name));
    }
    let Value::Object(fields) = body else {
        return Err(Error::parsing(format!(
            "Aggregation definition for [{name} starts with a [{}], expected a [START_OBJECT].",
            token(body)
        ))
        .at_body_key(name));
    };
    let mut kind: Option<(&str, AggKind)> = None;
    let mut pipeline_body: Option<(&str, &Value)> = None;
    let mut subs: Option<Vec<AggRequest>> = None;
    let mut pipelines: Vec<PipelineAgg> = Vec::new();
    let mut meta = None;
    for (key, value) in fields {
        match key.as_str() {
            "aggs" | "aggregations" => {
                if !value.is_object() {
                    return Err(Error::parsing(format!(
                        "Expected [START_OBJECT] under [{key}], but got a [{}] in [{name}]",
                        token(value)
                    ))
                    .at_body_key(key.as_str()));
                }
                let (parsed, parsed_pipelines) = parse_level(value)?;
                subs.get_or_insert_with(Vec::new).extend(parsed);
                pipelines.extend(parsed_pipelines);
            }
            "meta" => match value {
                Value::Object(m) => meta = Some(m.clone()),
                other => {
                    return Err(Error::parsing(format!(
                        "Expected [START_OBJECT] under [meta], but got a [{}] in [{name}]",
                        token(other)
                    ))
                    .at_body_key("meta"))
                }
            },
            type_name => {
                let first = kind
                    .as_ref()
                    .map(|(t, _)| *t)
                    .or(pipeline_body.map(|(t, _)| t));
                if let Some(first) = first {
                    return Err(Error::parsing(format!(
                        "Found two aggregation type definitions in [{name}]: [{first}] and [{type_name}]"
                    )));
                }
                if pipeline::is_pipeline_type(type_name) {
                    pipeline_body = Some((type_name, value));
                } else {
                    kind = Some((type_name, parse_kind(name, type_name, value)?));
                }
            }
        }
    }
    if let Some((type_name, body)) = pipeline_body {
        if subs.is_some() || !pipelines.is_empty() {
            return Err(Error::illegal_argument(format!(
                "Aggregation [{name}] cannot define sub-aggregations"
            )));
        }
        return Ok(Parsed::Pipeline(Box::new(pipeline::parse_pipeline(
            name, type_name, body, meta,
        )?)));
    }
    let Some((_, kind)) = kind else {
        return Err(
            Error::parsing(format!("Missing definition for aggregation [{name}]"))
                .at_body_key(name),
        );
    };
    let subs = subs.unwrap_or_default();
    if !kind.is_bucket() && (!subs.is_empty() || !pipelines.is_empty()) {
        return Err(Error::new(
            "aggregation_initialization_exception",
            400,
            format!(
                "Aggregator [{name}] of type [{}] cannot accept sub-aggregations",
                kind.type_name()
            ),
        ));
    }
    Ok(Parsed::Agg(Box::new(AggRequest {
        name: name.to_string(),
        kind,
        subs,
        pipelines,
        meta,
    })))
}

fn parse_kind(name: &str, type_name: &str, body: &Value) -> Result<AggKind> {
    let object = |body: &Value| -> Result<Map<String, Value>> {
        match body {
            Value::Object(m) => Ok(m.clone()),
            other => Err(Error::parsing(format!(
                "Expected [START_OBJECT] under [{type_name}], but got a [{}]",
                token(other)
            ))),
        }
    };
    if let Some(kind) = StatsKind::parse(type_name) {
        return Ok(AggKind::Metric(MetricRequest::parse(kind, &object(body)?)?));
    }
    Ok(match type_name {
        "extended_stats" => {
            AggKind::ExtendedStats(ExtendedStatsRequest::parse(name, &object(body)?)?)
        }
        "weighted_avg" => AggKind::WeightedAvg(WeightedAvgRequest::parse(&object(body)?)?),
        "scripted_metric" => AggKind::ScriptedMetric(
            crate::metric::scripted_metric::ScriptedMetricRequest::parse(&object(body)?)?,
        ),
        "top_hits" => AggKind::TopHits(TopHitsRequest::parse(name, &object(body)?)?),
        "geo_bounds" => AggKind::GeoBounds(GeoMetricRequest::parse(type_name, &object(body)?)?),
        "geo_centroid" => AggKind::GeoCentroid(GeoMetricRequest::parse(type_name, &object(body)?)?),
        "cardinality" => AggKind::Cardinality(CardinalityRequest::parse(name, &object(body)?)?),
        "percentiles" => AggKind::Percentiles(PercentilesRequest::parse(
            PercentilesKind::Percentiles,
            name,
            &object(body)?,
        )?),
        "percentile_ranks" => AggKind::PercentileRanks(crate::metric::percentile_ranks::parse(
            name,
            &object(body)?,
        )?),
        "median_absolute_deviation" => AggKind::MedianAbsoluteDeviation(
            MedianAbsoluteDeviationRequest::parse(name, &object(body)?)?,
        ),
        "terms" => AggKind::Terms(TermsRequest::parse(name, &object(body)?)?),
        "multi_terms" => AggKind::MultiTerms(MultiTermsRequest::parse(name, &object(body)?)?),
        "composite" => AggKind::Composite(CompositeRequest::parse(&object(body)?)?),
        "significant_terms" => {
            AggKind::SignificantTerms(SignificantTermsRequest::parse(name, &object(body)?)?)
        }
        "significant_text" => AggKind::SignificantTerms(crate::bucket::significant_text::parse(
            name,
            &object(body)?,
        )?),
        "histogram" => AggKind::Histogram(HistogramRequest::parse(name, &object(body)?)?),
        "date_histogram" => AggKind::DateHistogram(DateHistogramRequest::parse(&object(body)?)?),
        "auto_date_histogram" => {
            AggKind::AutoDateHistogram(AutoDateHistogramRequest::parse(name, &object(body)?)?)
        }
        "range" => AggKind::Range(RangeRequest::parse(name, &object(body)?)?),
        "date_range" => AggKind::DateRange(DateRangeRequest::parse(&object(body)?)?),
        "geo_distance" => AggKind::GeoDistance(GeoDistanceRequest::parse(name, &object(body)?)?),
        "ip_range" => AggKind::IpRange(IpRangeRequest::parse(&object(body)?)?),
        "rare_terms" => AggKind::RareTerms(RareTermsRequest::parse(name, &object(body)?)?),
        "geohash_grid" => {
            AggKind::GeoGrid(GeoGridRequest::parse(Grid::Geohash, name, &object(body)?)?)
        }
        "geotile_grid" => {
            AggKind::GeoGrid(GeoGridRequest::parse(Grid::Geotile, name, &object(body)?)?)
        }
        "filter" => AggKind::Filter(FilterRequest::parse(body)?),
        "filters" => AggKind::Filters(FiltersRequest::parse(name, &object(body)?)?),
        "adjacency_matrix" => {
            AggKind::AdjacencyMatrix(AdjacencyMatrixRequest::parse(name, &object(body)?)?)
        }
        "missing" => AggKind::Missing(MissingRequest::parse(&object(body)?)?),
        "sampler" => AggKind::Sampler(crate::bucket::sampler::SamplerRequest::parse(
            name,
            &object(body)?,
        )?),
        "diversified_sampler" => AggKind::DiversifiedSampler(
            crate::bucket::sampler::DiversifiedSamplerRequest::parse(&object(body)?)?,
        ),
        "nested" => AggKind::Nested(crate::bucket::nested::NestedRequest::parse(name, body)?),
        "reverse_nested" => AggKind::ReverseNested(
            crate::bucket::nested::ReverseNestedRequest::parse(name, body)?,
        ),
        "global" => {
            if let Some(key) = object(body)?.keys().next() {
                return Err(unknown_field("global", key));
            }
            AggKind::Global
        }
        other if UNSUPPORTED_TYPES.contains(&other) => {
            return Err(Error::not_supported(&format!("the [{other}] aggregation")))
        }
        other => {
            return Err(
                Error::parsing(format!("Unknown aggregation type [{other}]")).caused_by(
                    Error::new(
                        "named_object_not_found_exception",
                        400,
                        format!("unknown field [{other}]"),
                    ),
                ),
            )
        }
    })
}

fn check_sibling_names(aggs: &[AggRequest], pipelines: &[PipelineAgg]) -> Result<()> {
    let names: Vec<&str> = aggs
        .iter()
        .map(|a| a.name.as_str())
        .chain(pipelines.iter().map(|p| p.name.as_str()))
        .collect();
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Error::illegal_argument(format!(
                "Two sibling aggregations cannot have the same name: [{name}]"
            )));
        }
    }
    Ok(())
}

/// `global` only makes sense at the top level, where it ignores the query.
fn check_global_placement(top: &[AggRequest]) -> Result<()> {
    fn check(parent: &AggRequest) -> Result<()> {
        for sub in &parent.subs {
            if matches!(sub.kind, AggKind::Global) {
                return Err(Error::new(
                    "aggregation_execution_exception",
                    400,
                    format!(
                        "Aggregation [{}] cannot have a global sub-aggregation [{}]. Global aggregations can only be defined as top level aggregations",
                        parent.name, sub.name
                    ),
                ));
            }
            check(sub)?;
        }
        Ok(())
    }
    top.iter().try_for_each(check)
}

// ---- helpers for the per-type parsers, with OpenSearch's object-parser errors ----

/// `[terms] unknown field [x]` (the REST layer adds the position).
pub(crate) fn unknown_field(agg: &str, key: &str) -> Error {
    Error::x_content_parse(format!("[{agg}] unknown field [{key}]"))
}

fn failed_to_parse(agg: &str, key: &str) -> Error {
    Error::x_content_parse(format!("[{agg}] failed to parse field [{key}]"))
}

fn wrong_token(agg: &str, key: &str, value: &Value) -> Error {
    Error::x_content_parse(format!(
        "[{agg}] {key} doesn't support values of type: {}",
        token(value)
    ))
}

/// An integer parameter; numeric strings are accepted, as in OpenSearch.
pub(crate) fn int_param(agg: &str, key: &str, value: &Value) -> Result<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| failed_to_parse(agg, key)),
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
            failed_to_parse(agg, key).caused_by(Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{s}\""),
            ))
        }),
        other => Err(wrong_token(agg, key, other)),
    }
}

/// A non-negative count parameter such as `size` or `min_doc_count`.
pub(crate) fn count_param(agg: &str, key: &str, value: &Value) -> Result<u64> {
    let n = int_param(agg, key, value)?;
    u64::try_from(n).map_err(|_| {
        Error::illegal_argument(format!(
            "[{key}] must be greater than or equal to 0. Found [{n}] in [{agg}]"
        ))
    })
}

/// A floating point parameter; numeric strings are accepted.
pub(crate) fn f64_param(agg: &str, key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| failed_to_parse(agg, key)),
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| {
            failed_to_parse(agg, key).caused_by(Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{s}\""),
            ))
        }),
        other => Err(wrong_token(agg, key, other)),
    }
}

pub(crate) fn bool_param(agg: &str, key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        Value::String(_) => Err(failed_to_parse(agg, key)),
        other => Err(wrong_token(agg, key, other)),
    }
}

/// A string parameter; numbers and booleans are accepted as their text, as OpenSearch does.
pub(crate) fn string_param(agg: &str, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(wrong_token(agg, key, other)),
    }
}

/// A request value as text, as OpenSearch reads a `missing` or bound given as any JSON: a
/// string as it is, anything else as its JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The aggregations whose values may come from a script instead of a field.
const SCRIPTED: &[&str] = &[
    "terms",
    "min",
    "max",
    "sum",
    "avg",
    "stats",
    "value_count",
    "extended_stats",
    "percentiles",
    "percentile_ranks",
    "median_absolute_deviation",
    "cardinality",
    "histogram",
    "date_histogram",
    "auto_date_histogram",
    "range",
    "date_range",
    "missing",
    "rare_terms",
];

/// `script` in an aggregation that does not run scripts (yet).
pub(crate) fn no_scripts(agg: &str) -> Error {
    Error::not_supported(&format!("[script] in the [{agg}] aggregation"))
}

/// The common `field` / `missing` / `format` / `value_type` parameters of a values source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValuesSourceParams {
    pub field: Option<String>,
    /// A script in place of the field (only the aggregations that run one accept it).
    pub script: Option<tessera_script::ScriptSpec>,
    pub missing: Option<Value>,
    pub format: Option<String>,
    /// `value_type`: how a script's values are read.
    pub value_type: Option<String>,
}

impl ValuesSourceParams {
    /// Consumes `key` if it is a values-source parameter; `Ok(false)` when it is not one.
    pub(crate) fn accept(&mut self, agg: &str, key: &str, value: &Value) -> Result<bool> {
        match key {
            "field" => self.field = Some(string_param(agg, key, value)?),
            "missing" => {
                if !value.is_null() {
                    self.missing = Some(value.clone());
                }
            }
            "format" => self.format = Some(string_param(agg, key, value)?),
            "value_type" | "valueType" => self.value_type = Some(string_param(agg, key, value)?),
            "script" if SCRIPTED.contains(&agg) => {
                self.script = Some(tessera_script::ScriptSpec::parse(agg, value)?)
            }
            "script" => return Err(no_scripts(agg)),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The field, or OpenSearch's error when neither a field nor a script is given.
    pub(crate) fn require_field(&self, _agg_name: &str) -> Result<&str> {
        self.field.as_deref().ok_or_else(no_field)
    }

    /// Checks at parse time that a field is given (OpenSearch rejects the request before it
    /// reaches a shard).
    pub(crate) fn require_field_at_parse(&self) -> Result<()> {
        match (&self.field, &self.script) {
            (None, None) => Err(no_field()),
            _ => Ok(()),
        }
    }
}

fn no_field() -> Error {
    Error::illegal_argument("Required one of fields [field, script], but none were specified. ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scripts_are_taken_where_they_run_and_refused_elsewhere() {
        for agg in [
            "date_histogram",
            "date_range",
            "missing",
            "rare_terms",
            "terms",
        ] {
            let body = json!({"a": {agg: {"script": "doc['n'].value"}}});
            let parsed = parse_aggregations(&body);
            // date_histogram still wants an interval, date_range its ranges (later)
            if let Err(e) = &parsed {
                assert!(!e.reason().contains("[script]"), "{agg}: {}", e.reason());
            }
        }
        let e =
            parse_aggregations(&json!({"a": {"significant_terms": {"script": "1"}}})).unwrap_err();
        assert_eq!(e.status(), 400);
        assert_eq!(
            e.reason(),
            "[script] in the [significant_terms] aggregation is not supported by Tessera"
        );
    }

    #[test]
    fn parses_names_types_meta_and_subs() {
        let aggs = parse_aggregations(&json!({
            "by_kind": {
                "terms": {"field": "k"},
                "meta": {"color": "blue"},
                "aggs": {"avg_n": {"avg": {"field": "n"}}},
                "aggregations": {"max_n": {"max": {"field": "n"}}}
            },
            "all": {"global": {}}
        }))
        .unwrap();
        assert_eq!(aggs.len(), 2);
        assert_eq!(aggs[0].name, "by_kind");
        assert_eq!(aggs[0].kind.type_name(), "terms");
        assert_eq!(aggs[0].subs.len(), 2);
        assert_eq!(aggs[0].meta.as_ref().unwrap()["color"], "blue");
        assert_eq!(aggs[1].kind, AggKind::Global);
    }

    #[test]
    fn framing_errors_match_opensearch() {
        let reason = |v: Value| parse_aggregations(&v).unwrap_err().reason().to_string();
        assert_eq!(
            reason(json!({"x": {"bogus": {}}})),
            "Unknown aggregation type [bogus]"
        );
        assert_eq!(
            reason(json!({"x": {"terms": {"field": "k"}, "histogram": {}}})),
            "Found two aggregation type definitions in [x]: [terms] and [histogram]"
        );
        assert_eq!(
            reason(json!({"x": {}})),
            "Missing definition for aggregation [x]"
        );
        assert_eq!(
            reason(json!({"x": 5})),
            "Aggregation definition for [x starts with a [VALUE_NUMBER], expected a [START_OBJECT]."
        );
        assert_eq!(
            reason(json!({"x[": {"terms": {"field": "k"}}})),
            "Invalid aggregation name [x[]. Aggregation names can contain any character except '[', ']', and '>'"
        );
        assert_eq!(
            reason(json!({"x": {"terms": {"field": "k"}, "meta": 5}})),
            "Expected [START_OBJECT] under [meta], but got a [VALUE_NUMBER] in [x]"
        );
        assert_eq!(
            reason(json!({"x": {"terms": {"field": "k"}, "aggs": {"g": {"global": {}}}}})),
            "Aggregation [x] cannot have a global sub-aggregation [g]. Global aggregations can only be defined as top level aggregations"
        );
        assert_eq!(
            reason(json!({"x": {"avg": {"field": "k"}, "aggs": {"y": {"max": {"field": "n"}}}}})),
            "Aggregator [x] of type [avg] cannot accept sub-aggregations"
        );
        assert!(reason(json!({"x": {"matrix_stats": {"fields": ["n"]}}})).contains("not supported"));
    }

    #[test]
    fn parameter_errors_match_object_parsers() {
        let e = int_param("terms", "size", &json!("abc")).unwrap_err();
        assert_eq!(e.kind(), "x_content_parse_exception");
        assert_eq!(e.reason(), "[terms] failed to parse field [size]");
        assert_eq!(e.cause().unwrap().kind(), "number_format_exception");
        assert_eq!(
            int_param("terms", "size", &json!({})).unwrap_err().reason(),
            "[terms] size doesn't support values of type: START_OBJECT"
        );
        assert_eq!(int_param("terms", "size", &json!("12")).unwrap(), 12);
        assert_eq!(
            f64_param("histogram", "interval", &json!("2.5")).unwrap(),
            2.5
        );
        assert!(bool_param("histogram", "keyed", &json!("yes")).is_err());
    }
}
