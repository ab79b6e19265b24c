//! `composite`: buckets keyed by a combination of sources (`terms`, `histogram`,
//! `date_histogram`), returned in key order one page at a time: `size` buckets after the
//! `after` key, with `after_key` naming the last bucket of the page.
//!
//! The order of keys is total (each source ascending or descending, missing values first or
//! last), so every level keeps exactly what the final page can need: a slice keeps its
//! `size` smallest keys after `after` in a sorted map (a new key larger than a full map's
//! largest is dropped at once, so memory stays at `size` buckets whatever the cardinality),
//! and [`InternalComposite::reduce`] merges parts by key and keeps the first `size` again.
//! Any grouping of slices and shards therefore gives the same page. A key evicted from a
//! slice's map can never come back (all later keys it would compete with are smaller), so
//! sub-aggregations collected for it are simply never built. When every source is a keyword
//! column without a missing bucket, a document's combinations are first compared with
//! `after` and the full map's largest key as segment ordinals (term order is ordinal order
//! within a segment), and only a key that can enter the map is built: most documents of a
//! large result never allocate one.
//!
//! Keys print as OpenSearch prints them: raw numbers (a `terms` source on a date gives epoch
//! millis, a `date_histogram` source too unless it has a `format`), booleans as JSON
//! booleans, ips and keywords as strings, `null` for the missing bucket; `after_key` is the
//! last bucket's key and is absent when the page is empty. A composite aggregation must be
//! at the top level (OpenSearch's error names the parent's factory class).
//!
//! A source may read a script instead of a field: a `terms` source keys a script's values by
//! their text (or by number with a numeric `value_type`, or for a value script on a number),
//! `histogram` and `date_histogram` sources read its values as numbers and dates.

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_date::{CalendarUnit, DateFormat, TimeZone};

use crate::bucket::auto_date_histogram::zone_error;
use crate::bucket::date_histogram::{parse_date_value, parse_offset, DateInterval, Rounding};
use crate::collector::{Collector, SegmentContext, SortedSegment, SubCollectors};
use crate::format::{Formatter, ValueFormat};
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext, ShardFinish};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    int_param, string_param, unknown_field, value_text, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{ip_to_string, Accepts, AnyValues, NumericKind, NumericValues, ValueSource};

const AGG: &str = "composite";

/// Where the missing bucket sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingOrder {
    /// First when ascending, last when descending.
    Default,
    First,
    Last,
}

/// How a source turns values into key parts.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceKind {
    Terms,
    Histogram {
        interval: f64,
    },
    DateHistogram {
        interval: Option<DateInterval>,
        time_zone: Option<String>,
        offset: i64,
        format: Option<String>,
    },
}

impl SourceKind {
    fn type_name(&self) -> &'static str {
        match self {
            SourceKind::Terms => "terms",
            SourceKind::Histogram { .. } => "histogram",
            SourceKind::DateHistogram { .. } => "date_histogram",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompositeSource {
    pub name: String,
    pub kind: SourceKind,
    pub field: Option<String>,
    pub script: Option<tessera_script::ScriptSpec>,
    pub value_type: Option<String>,
    pub missing_bucket: bool,
    pub missing_order: MissingOrder,
    pub asc: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompositeRequest {
    pub sources: Vec<CompositeSource>,
    pub size: usize,
    pub after: Option<Map<String, Value>>,
}

fn failed_sources(cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [sources]")).caused_by(cause)
}

fn failed(agg: &str, key: &str, cause: Error) -> Error {
    failed_sources(
        Error::x_content_parse(format!("[{agg}] failed to parse field [{key}]")).caused_by(cause),
    )
}

fn source_bool(agg: &str, key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => {
            let text = match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            Err(failed(
                agg,
                key,
                Error::illegal_argument(format!(
                    "Failed to parse value [{text}] as only [true] or [false] are allowed."
                )),
            ))
        }
    }
}

fn parse_source(name: &str, type_name: &str, body: &Value) -> Result<CompositeSource> {
    let Value::Object(params) = body else {
        return Err(failed_sources(Error::parsing(format!(
            "Failed to parse object: expecting token of type [START_OBJECT] but found [{}]",
            crate::bucket::token(body)
        ))));
    };
    let mut kind = match type_name {
        "terms" => SourceKind::Terms,
        "histogram" => SourceKind::Histogram { interval: 0.0 },
        "date_histogram" => SourceKind::DateHistogram {
            interval: None,
            time_zone: None,
            offset: 0,
            format: None,
        },
        other => {
            return Err(failed_sources(Error::parsing(format!(
                "invalid source type: {other}"
            ))))
        }
    };
    let mut source = CompositeSource {
        name: name.to_string(),
        kind: SourceKind::Terms,
        field: None,
        script: None,
        value_type: None,
        missing_bucket: false,
        missing_order: MissingOrder::Default,
        asc: true,
    };
    let mut calendar = false;
    let mut fixed = false;
    for (key, value) in params {
        let wrap = |e: Error| failed_sources(e);
        match (key.as_str(), &mut kind) {
            ("field", _) => source.field = Some(string_param(type_name, key, value).map_err(wrap)?),
            ("script", _) => {
                source.script =
                    Some(tessera_script::ScriptSpec::parse(type_name, value).map_err(wrap)?)
            }
            ("value_type" | "valueType", _) => {
                source.value_type = Some(string_param(type_name, key, value).map_err(wrap)?);
            }
            ("missing_bucket", _) => source.missing_bucket = source_bool(type_name, key, value)?,
            ("missing_order", _) => {
                let text = string_param(type_name, key, value).map_err(wrap)?;
                source.missing_order = match text.to_ascii_lowercase().as_str() {
                    "first" => MissingOrder::First,
                    "last" => MissingOrder::Last,
                    "default" => MissingOrder::Default,
                    _ => {
                        return Err(failed(
                            type_name,
                            key,
                            Error::illegal_argument(format!(
                                "No enum constant org.opensearch.search.aggregations.bucket.missing.MissingOrder.{}",
                                text.to_ascii_uppercase()
                            )),
                        ))
                    }
                };
            }
            ("order", _) => {
                let text = string_param(type_name, key, value).map_err(wrap)?;
                source.asc = match text.to_ascii_lowercase().as_str() {
                    "asc" => true,
                    "desc" => false,
                    _ => {
                        return Err(failed(
                            type_name,
                            key,
                            Error::illegal_argument(format!(
                                "No enum constant org.opensearch.search.sort.SortOrder.{}",
                                text.to_ascii_uppercase()
                            )),
                        ))
                    }
                };
            }
            ("interval", SourceKind::Histogram { interval }) => {
                let n = crate::request::f64_param(type_name, key, value).map_err(wrap)?;
                if n.is_nan() || n <= 0.0 {
                    return Err(failed(
                        type_name,
                        key,
                        Error::illegal_argument(
                            "[interval] must be greater than 0 for [histogram] source",
                        ),
                    ));
                }
                *interval = n;
            }
            (
                "calendar_interval" | "fixed_interval" | "interval" | "time_zone" | "offset"
                | "format",
                SourceKind::DateHistogram {
                    interval,
                    time_zone,
                    offset,
                    format,
                },
            ) => match key.as_str() {
                "calendar_interval" => {
                    let text = string_param(type_name, key, value).map_err(wrap)?;
                    let unit = CalendarUnit::parse(&text).ok_or_else(|| {
                        failed(
                            type_name,
                            key,
                            Error::illegal_argument(format!(
                                "The supplied interval [{text}] could not be parsed as a calendar interval."
                            )),
                        )
                    })?;
                    calendar = true;
                    *interval = Some(DateInterval::Calendar(unit));
                }
                "fixed_interval" => {
                    let text = string_param(type_name, key, value).map_err(wrap)?;
                    let ms = tessera_date::parse_fixed_interval(&text).ok_or_else(|| {
                        failed(
                            type_name,
                            key,
                            Error::illegal_argument(format!(
                                "failed to parse setting [date_histogram.fixedInterval] with value [{text}] as a time value: unit is missing or unrecognized"
                            )),
                        )
                    })?;
                    fixed = true;
                    *interval = Some(DateInterval::Fixed(ms));
                }
                "interval" => {
                    *interval = Some(match value {
                        Value::Number(n) => DateInterval::Fixed(
                            n.as_i64().filter(|n| *n > 0).ok_or_else(|| {
                                failed(
                                    type_name,
                                    key,
                                    Error::illegal_argument(
                                        "[interval] must be 1 or greater for aggregation [date_histogram]",
                                    ),
                                )
                            })?,
                        ),
                        _ => {
                            let text = string_param(type_name, key, value).map_err(wrap)?;
                            match CalendarUnit::parse(&text) {
                                Some(unit) => DateInterval::Calendar(unit),
                                None => DateInterval::Fixed(
                                    tessera_date::parse_fixed_interval(&text).ok_or_else(|| {
                                        failed(
                                            type_name,
                                            key,
                                            Error::illegal_argument(format!(
                                                "failed to parse setting [date_histogram.interval] with value [{text}] as a time value: unit is missing or unrecognized"
                                            )),
                                        )
                                    })?,
                                ),
                            }
                        }
                    })
                }
                "time_zone" => {
                    let zone = string_param(type_name, key, value).map_err(wrap)?;
                    TimeZone::parse(&zone)
                        .map_err(|e| failed_sources(zone_error(type_name, key, e.message)))?;
                    *time_zone = Some(zone);
                }
                "offset" => *offset = parse_offset(type_name, value).map_err(wrap)?,
                _ => *format = Some(string_param(type_name, key, value).map_err(wrap)?),
            },
            _ => {
                let hint = if key == "missing" {
                    " did you mean [missing_order]?"
                } else {
                    ""
                };
                return Err(wrap(Error::x_content_parse(format!(
                    "[{type_name}] unknown field [{key}]{hint}"
                ))));
            }
        }
        if calendar && fixed {
            return Err(wrap(Error::illegal_argument(
                "Cannot use [fixed_interval] with [calendar_interval] configuration option.",
            )));
        }
    }
    source.kind = kind;
    Ok(source)
}

/// One `{"name": {"type": {...}}}` entry of `sources`.
fn parse_entry(entry: &Value) -> Result<CompositeSource> {
    let Value::Object(named) = entry else {
        return Err(failed_sources(Error::parsing(format!(
            "Failed to parse object: expecting token of type [START_OBJECT] but found [{}]",
            crate::bucket::token(entry)
        ))));
    };
    let mut iter = named.iter();
    let Some((name, typed)) = iter.next() else {
        return Err(failed_sources(Error::parsing(
            "Failed to parse object: expecting token of type [FIELD_NAME] but found [END_OBJECT]",
        )));
    };
    if iter.next().is_some() {
        return Err(failed_sources(Error::parsing(
            "Failed to parse object: expecting token of type [START_OBJECT] but found [VALUE_STRING]",
        )));
    }
    let Value::Object(typed) = typed else {
        return Err(failed_sources(Error::parsing(format!(
            "Failed to parse object: expecting token of type [START_OBJECT] but found [{}]",
            crate::bucket::token(typed)
        ))));
    };
    let mut types = typed.iter();
    let Some((type_name, body)) = types.next() else {
        return Err(failed_sources(Error::parsing(
            "Failed to parse object: expecting token of type [FIELD_NAME] but found [END_OBJECT]",
        )));
    };
    if types.next().is_some() {
        return Err(
            failed_sources(Error::illegal_state("expected value but got [FIELD_NAME]"))
                .with_reason(format!("[{AGG}] failed to parse field [sources]")),
        );
    }
    parse_source(name, type_name, body)
}

impl CompositeRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<CompositeRequest> {
        let mut sources = None;
        let mut size = 10usize;
        let mut after = None;
        for (key, value) in body {
            match key.as_str() {
                "sources" => {
                    let list = match value {
                        Value::Array(items) => items.iter().map(parse_entry).collect(),
                        object @ Value::Object(_) => parse_entry(object).map(|s| vec![s]),
                        other => Err(Error::x_content_parse(format!(
                            "[{AGG}] sources doesn't support values of type: {}",
                            crate::bucket::token(other)
                        ))),
                    }?;
                    let built = |reason: String| {
                        failed_sources(
                            Error::x_content_parse(format!(
                                "Failed to build [{AGG}] after last required field arrived"
                            ))
                            .caused_by(Error::illegal_argument(reason)),
                        )
                    };
                    if list.is_empty() {
                        return Err(built("Composite [sources] cannot be null or empty".into()));
                    }
                    let mut duplicates: Vec<&str> = Vec::new();
                    for (i, s) in list.iter().enumerate() {
                        if list[..i].iter().any(|o| o.name == s.name)
                            && !duplicates.contains(&s.name.as_str())
                        {
                            duplicates.push(&s.name);
                        }
                    }
                    if !duplicates.is_empty() {
                        return Err(built(format!(
                            "Composite source names must be unique, found duplicates: [{}]",
                            duplicates.join(", ")
                        )));
                    }
                    sources = Some(list);
                }
                "size" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [size]"
                        ))
                        .caused_by(Error::illegal_argument(format!(
                            "[size] must be greater than 0. Found [{n}]"
                        ))));
                    }
                    size = n.min(i32::MAX as i64) as usize;
                }
                "after" => match value {
                    Value::Object(map) => after = Some(map.clone()),
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] after doesn't support values of type: {}",
                            crate::bucket::token(other)
                        )))
                    }
                },
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        let Some(sources) = sources else {
            return Err(Error::illegal_argument("Required [sources]"));
        };
        Ok(CompositeRequest {
            sources,
            size,
            after,
        })
    }

    /// How each source orders its part of the key.
    fn orders(&self) -> Vec<PartOrder> {
        self.sources
            .iter()
            .map(|s| PartOrder {
                asc: s.asc,
                missing_first: match s.missing_order {
                    MissingOrder::First => true,
                    MissingOrder::Last => false,
                    MissingOrder::Default => s.asc,
                },
            })
            .collect()
    }
}

/// OpenSearch's error for a composite aggregation under another aggregation.
pub(crate) fn parent_error(parent: &AggKind) -> Error {
    let factory = match parent {
        AggKind::Terms(_) => "TermsAggregatorFactory".to_string(),
        AggKind::SignificantTerms(_) => "SignificantTermsAggregatorFactory".to_string(),
        AggKind::MultiTerms(_) => "MultiTermsAggregationFactory".to_string(),
        AggKind::Histogram(_) => "HistogramAggregatorFactory".to_string(),
        AggKind::DateHistogram(_) => "DateHistogramAggregatorFactory".to_string(),
        AggKind::AutoDateHistogram(_) => "AutoDateHistogramAggregatorFactory".to_string(),
        AggKind::Range(_) => "RangeAggregatorFactory".to_string(),
        AggKind::DateRange(_) => "DateRangeAggregatorFactory".to_string(),
        AggKind::GeoDistance(_) => "GeoDistanceRangeAggregatorFactory".to_string(),
        AggKind::IpRange(_) => "IpRangeAggregatorFactory".to_string(),
        AggKind::RareTerms(_) => "RareTermsAggregatorFactory".to_string(),
        AggKind::AdjacencyMatrix(_) => "AdjacencyMatrixAggregatorFactory".to_string(),
        AggKind::GeoGrid(g) => match g.grid {
            crate::bucket::geo_grid::Grid::Geohash => "GeoHashGridAggregatorFactory".to_string(),
            crate::bucket::geo_grid::Grid::Geotile => "GeoTileGridAggregatorFactory".to_string(),
        },
        AggKind::Filter(_) => "FilterAggregatorFactory".to_string(),
        AggKind::Filters(_) => "FiltersAggregatorFactory".to_string(),
        AggKind::Missing(_) => "MissingAggregatorFactory".to_string(),
        AggKind::Sampler(_) => "SamplerAggregatorFactory".to_string(),
        AggKind::DiversifiedSampler(_) => "DiversifiedAggregatorFactory".to_string(),
        AggKind::Global => "GlobalAggregatorFactory".to_string(),
        AggKind::Nested(_) => "NestedAggregatorFactory".to_string(),
        AggKind::ReverseNested(_) => "ReverseNestedAggregatorFactory".to_string(),
        AggKind::Composite(_) => "CompositeAggregationFactory".to_string(),
        other => format!("{}AggregatorFactory", other.type_name()),
    };
    Error::illegal_argument(format!(
        "[composite] aggregation cannot be used with a parent aggregation of type: [{factory}]"
    ))
}

// ---- keys and their order ----

/// One source's value in a bucket key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CompositeValue {
    /// The missing bucket.
    Null,
    Long(i64),
    Double(f64),
    Str(String),
    Ip(u128),
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct PartOrder {
    asc: bool,
    missing_first: bool,
}

/// A totally ordered f64 (Java's `Double.compareTo`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Val {
    Nil,
    I(i64),
    F(OrdF64),
    S(Arc<str>),
    P(u128),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Directed {
    Asc(Val),
    Desc(Reverse<Val>),
}

/// One source's part of a sort key: the missing bucket first (rank 0) or last (rank 2).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Part(u8, Directed);

type SortKey = Vec<Part>;

fn part(value: &CompositeValue, order: PartOrder) -> Part {
    let (rank, val) = match value {
        CompositeValue::Null => (if order.missing_first { 0 } else { 2 }, Val::Nil),
        CompositeValue::Long(n) => (1, Val::I(*n)),
        CompositeValue::Double(f) => (1, Val::F(OrdF64(*f))),
        CompositeValue::Str(s) => (1, Val::S(Arc::from(s.as_str()))),
        CompositeValue::Ip(bits) => (1, Val::P(*bits)),
    };
    Part(rank, directed(val, order))
}

fn sort_key(values: &[CompositeValue], orders: &[PartOrder]) -> SortKey {
    values
        .iter()
        .zip(orders)
        .map(|(v, o)| part(v, *o))
        .collect()
}

fn value_of(part: &Part) -> CompositeValue {
    let val = match &part.1 {
        Directed::Asc(v) => v,
        Directed::Desc(Reverse(v)) => v,
    };
    match val {
        Val::Nil => CompositeValue::Null,
        Val::I(n) => CompositeValue::Long(*n),
        Val::F(f) => CompositeValue::Double(f.0),
        Val::S(s) => CompositeValue::Str(s.to_string()),
        Val::P(bits) => CompositeValue::Ip(*bits),
    }
}

// ---- collection ----

/// How a source's values are read and keyed in a shard.
#[derive(Clone, Debug, PartialEq)]
enum ValueKind {
    Keyword,
    Ip,
    Long,
    Double,
    /// A script's values, keyed by their text.
    ScriptText,
    Unmapped,
}

#[derive(Clone)]
struct SourceSpec {
    source: ValueSource,
    kind: ValueKind,
    /// Histogram interval, or the date rounding.
    histogram: Option<f64>,
    rounding: Option<Rounding>,
    missing_bucket: bool,
    format: ValueFormat,
    /// Count a document once per distinct key of this source.
    dedupe: bool,
}

struct CompositeFactory {
    specs: Vec<SourceSpec>,
    orders: Vec<PartOrder>,
    size: usize,
    after: Option<SortKey>,
}

fn not_comparable(name: &str, value: &Value) -> Error {
    let class = match value {
        Value::Null => "null",
        Value::Array(_) => "ArrayList",
        Value::Object(_) => "LinkedHashMap",
        _ => "Object",
    };
    Error::illegal_argument(format!(
        "Invalid value for [after.{name}], expected comparable, got [{class}]"
    ))
}

fn number_format(text: &str) -> Error {
    Error::new(
        "number_format_exception",
        400,
        format!("For input string: \"{text}\""),
    )
}

/// The `after` value of one source, as that source's key part.
fn after_value(
    source: &CompositeSource,
    spec: &SourceSpec,
    value: &Value,
    ctx: &AggContext,
) -> Result<CompositeValue> {
    match value {
        Value::Null if source.missing_bucket => return Ok(CompositeValue::Null),
        Value::Null | Value::Array(_) | Value::Object(_) => {
            return Err(not_comparable(&source.name, value))
        }
        _ => {}
    }
    let text = value_text(value);
    if let SourceKind::DateHistogram {
        format: Some(spec_format),
        time_zone,
        ..
    } = &source.kind
    {
        if let Value::String(_) = value {
            let format = DateFormat::parse(spec_format).map_err(|e| {
                Error::illegal_argument(format!("Invalid format: [{spec_format}]: {}", e.message))
            })?;
            let zone = time_zone
                .as_deref()
                .map(TimeZone::parse)
                .transpose()
                .map_err(|e| Error::illegal_argument(e.message))?;
            return parse_date_value(value, &format, ctx.now_millis, zone.as_ref())
                .map(CompositeValue::Long);
        }
    }
    let long = || -> Result<i64> {
        match value {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .ok_or_else(|| number_format(&text)),
            _ => text.trim().parse::<i64>().map_err(|_| number_format(&text)),
        }
    };
    let double = || -> Result<f64> {
        match value {
            Value::Number(n) => n.as_f64().ok_or_else(|| number_format(&text)),
            _ => text.trim().parse::<f64>().map_err(|_| number_format(&text)),
        }
    };
    Ok(match (&source.kind, &spec.kind) {
        (SourceKind::Histogram { .. }, _) => CompositeValue::Double(double()?),
        (SourceKind::DateHistogram { .. }, _) => CompositeValue::Long(long()?),
        (SourceKind::Terms, ValueKind::Keyword | ValueKind::ScriptText | ValueKind::Unmapped) => {
            CompositeValue::Str(text)
        }
        (SourceKind::Terms, ValueKind::Ip) => {
            let ip: IpAddr = text.parse().map_err(|_| {
                Error::illegal_argument(format!("'{text}' is not an IP string literal."))
            })?;
            CompositeValue::Ip(u128::from(match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            }))
        }
        (SourceKind::Terms, ValueKind::Double) => CompositeValue::Double(double()?),
        (SourceKind::Terms, ValueKind::Long) => {
            if matches!(spec.source.numeric_kind(), Some(NumericKind::Boolean)) {
                match value {
                    Value::Bool(b) => CompositeValue::Long(*b as i64),
                    _ if text == "true" || text == "false" => {
                        CompositeValue::Long((text == "true") as i64)
                    }
                    _ => CompositeValue::Long(long()?),
                }
            } else {
                CompositeValue::Long(long()?)
            }
        }
    })
}

pub fn factory(
    _request: &AggRequest,
    composite: &CompositeRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let mut specs = Vec::with_capacity(composite.sources.len());
    for source in &composite.sources {
        let accepts = match source.kind {
            SourceKind::Terms => Accepts::Any,
            _ => Accepts::Numeric,
        };
        let resolved = match (&source.field, &source.script) {
            (Some(field), None) => {
                ValueSource::resolve(ctx.table, field, source.kind.type_name(), accepts)?
            }
            (None, None) => {
                return Err(Error::illegal_state(
                    "value source config is invalid; must have either a field or a script",
                ))
            }
            (field, Some(script)) => {
                let params = ValuesSourceParams {
                    field: field.clone(),
                    script: Some(script.clone()),
                    value_type: source.value_type.clone(),
                    ..ValuesSourceParams::default()
                };
                ValueSource::resolve_params(ctx, &params, source.kind.type_name(), accepts)?
            }
        };
        if source.missing_order != MissingOrder::Default && !source.missing_bucket {
            return Err(Error::illegal_argument(
                "missing_order require missing_bucket is true",
            ));
        }
        let kind = match (&resolved, resolved.numeric_kind()) {
            (ValueSource::Script(script), _) => script_kind(source, script.field_kind.as_ref())?,
            (ValueSource::Keyword { .. }, _) => ValueKind::Keyword,
            (ValueSource::Ip { .. }, _) => ValueKind::Ip,
            (ValueSource::Unmapped, _) => ValueKind::Unmapped,
            (_, Some(NumericKind::Double | NumericKind::Scaled(_))) => ValueKind::Double,
            _ => ValueKind::Long,
        };
        let (histogram, rounding, format) = match &source.kind {
            SourceKind::Terms => {
                let format = match resolved.numeric_kind() {
                    Some(NumericKind::Boolean) => ValueFormat::Boolean,
                    _ => ValueFormat::Raw,
                };
                (None, None, format)
            }
            SourceKind::Histogram { interval } => (Some(*interval), None, ValueFormat::Raw),
            SourceKind::DateHistogram {
                interval,
                time_zone,
                offset,
                format,
            } => {
                let interval = interval.clone().ok_or_else(|| {
                    Error::illegal_argument(
                        "Invalid interval specified, must be non-null and non-empty",
                    )
                })?;
                let zone = match time_zone {
                    None => TimeZone::utc(),
                    Some(z) => {
                        TimeZone::parse(z).map_err(|e| Error::illegal_argument(e.message))?
                    }
                };
                let display = match format {
                    None => ValueFormat::Raw,
                    Some(spec) => {
                        DateFormat::parse(spec).map_err(|e| {
                            Error::illegal_argument(format!(
                                "Invalid format: [{spec}]: {}",
                                e.message
                            ))
                        })?;
                        ValueFormat::Date {
                            format: spec.clone(),
                            zone: time_zone.clone(),
                        }
                    }
                };
                (None, Some(Rounding::new(interval, zone, *offset)), display)
            }
        };
        // OpenSearch reads a leading long/date source without a missing bucket through its
        // points, in key order, collecting each document once per key; other numeric sources
        // count a document once per value
        let points_leading = specs.is_empty()
            && !source.missing_bucket
            && matches!(
                (&source.kind, resolved.numeric_kind()),
                (
                    SourceKind::Terms | SourceKind::DateHistogram { .. },
                    Some(NumericKind::Long | NumericKind::Date(_))
                )
            )
            && source
                .field
                .as_deref()
                .and_then(|field| ctx.table.leaf(field))
                .is_some_and(|l| l.indexed);
        let dedupe = matches!(kind, ValueKind::Keyword | ValueKind::Ip) || points_leading;
        specs.push(SourceSpec {
            source: resolved,
            kind,
            histogram,
            rounding,
            missing_bucket: source.missing_bucket,
            format,
            dedupe,
        });
    }
    let orders = composite.orders();
    let after = match &composite.after {
        None => None,
        Some(after) => {
            if after.len() != composite.sources.len() {
                return Err(Error::illegal_argument(format!(
                    "[after] has {} value(s) but [sources] has {}",
                    after.len(),
                    composite.sources.len()
                )));
            }
            let mut values = Vec::with_capacity(specs.len());
            for (source, spec) in composite.sources.iter().zip(&specs) {
                let Some(value) = after.get(&source.name) else {
                    return Err(Error::illegal_argument(format!(
                        "Missing value for [after.{}]",
                        source.name
                    )));
                };
                values.push(after_value(source, spec, value, ctx)?);
            }
            Some(sort_key(&values, &orders))
        }
    };
    Ok(Box::new(CompositeFactory {
        specs,
        orders,
        size: composite.size,
        after,
    }))
}

/// How a source reads a script's values (`field_kind`: the kind of a value script's numeric
/// field). A `terms` source keys them by their text unless OpenSearch would key them by
/// number. OpenSearch leaves a value script out of a `date_histogram` source, and out of a
/// `terms` source on a keyword or ip field (it reads the field's ordinals): those are refused
/// rather than answered differently, as is one on a boolean field.
fn script_kind(source: &CompositeSource, field_kind: Option<&NumericKind>) -> Result<ValueKind> {
    let refused = |what: &str| {
        Error::not_supported(&format!(
            "{what} in a [{}] source of the [composite] aggregation",
            source.kind.type_name()
        ))
    };
    Ok(match (&source.kind, field_kind, &source.field) {
        (SourceKind::Histogram { .. }, _, _) => ValueKind::Double,
        (SourceKind::DateHistogram { .. }, _, Some(_)) => return Err(refused("a value script")),
        (SourceKind::DateHistogram { .. }, _, None) => ValueKind::Long,
        (SourceKind::Terms, Some(NumericKind::Boolean), _) => {
            return Err(refused("a value script on a boolean field"))
        }
        (SourceKind::Terms, Some(_), _) => ValueKind::Double,
        (SourceKind::Terms, None, Some(_)) => {
            return Err(refused("a value script on a keyword or ip field"))
        }
        (SourceKind::Terms, None, None) => match source.value_type.as_deref() {
            None | Some("string" | "keyword" | "text" | "bytes") => ValueKind::ScriptText,
            Some("long" | "integer" | "short" | "byte") => ValueKind::Long,
            Some("double" | "float" | "number" | "numeric") => ValueKind::Double,
            Some(other) => return Err(refused(&format!("[value_type] [{other}]"))),
        },
    })
}

impl Factory for CompositeFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(CompositeCollector {
            sources: self.specs.iter().cloned().map(SourceState::new).collect(),
            orders: self.orders.clone(),
            size: self.size,
            after: self.after.clone(),
            queue: BTreeMap::new(),
            counts: Vec::new(),
            subs,
            doc_parts: Vec::new(),
            ordinal_keys: false,
            after_positions: None,
            top_positions: None,
            formats: self.specs.iter().map(|s| s.format.clone()).collect(),
        }))
    }
}

/// One source's readers in one slice.
struct SourceState {
    spec: SourceSpec,
    /// The source's values in the current segment.
    values: AnyValues,
    /// Segment ordinal → the term (keyword fields), resolved on first use.
    segment_terms: Vec<Option<Arc<str>>>,
    /// Whether `segment_terms` holds every term of the segment.
    all_terms: bool,
    text: String,
    /// The block's `(position, part)` values.
    pairs: Vec<(u32, Val)>,
    ords: Vec<(u32, u64)>,
}

impl SourceState {
    fn new(spec: SourceSpec) -> SourceState {
        SourceState {
            spec,
            values: AnyValues::Unmapped,
            segment_terms: Vec::new(),
            all_terms: false,
            text: String::new(),
            pairs: Vec::new(),
            ords: Vec::new(),
        }
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        // range fields are refused by `ValueSource::resolve` for this aggregation; a script
        // read as numbers goes through the numeric reader
        self.values = match (&self.spec.source, &self.spec.kind) {
            (ValueSource::Script(_), ValueKind::Long | ValueKind::Double) => {
                AnyValues::Numeric(NumericValues::open(&self.spec.source, segment.reader)?)
            }
            _ => AnyValues::open(&self.spec.source, segment.reader)?,
        };
        self.all_terms = false;
        if let AnyValues::Keyword(values) = &self.values {
            self.segment_terms.clear();
            self.segment_terms.resize(values.num_terms(), None);
            // when the part may touch a good share of the terms, read them all in one pass over
            // the dictionary: a lookup per ordinal rescans its block (hundreds of terms)
            if values.num_terms() <= segment.docs.len().saturating_mul(4) {
                let terms = &mut self.segment_terms;
                values.for_each_term(|ord, bytes| {
                    if let Some(slot) = terms.get_mut(ord as usize) {
                        *slot = Some(Arc::from(String::from_utf8_lossy(bytes).as_ref()));
                    }
                })?;
                self.all_terms = self.segment_terms.iter().all(Option::is_some);
            }
        }
        Ok(())
    }

    /// The segment's term of a keyword ordinal, read on first use.
    fn term(&mut self, ord: u64) -> Arc<str> {
        let slot = &mut self.segment_terms[ord as usize];
        if slot.is_none() {
            if let AnyValues::Keyword(values) = &self.values {
                let _ = values.term(ord, &mut self.text);
            }
            *slot = Some(Arc::from(self.text.as_str()));
        }
        slot.clone().expect("resolved above")
    }

    /// Fills `ords` with the block's distinct `(position, ordinal)` pairs (keyword sources;
    /// a document's column may repeat a term it holds twice).
    fn read_ords(&mut self, docs: &[DocId]) {
        self.ords.clear();
        if let AnyValues::Keyword(values) = &mut self.values {
            let ords = &mut self.ords;
            values.for_each_ord(docs, |p, ord| ords.push((p as u32, ord)));
            if values.is_multivalued() {
                ords.sort_unstable();
                ords.dedup();
            }
        }
    }

    /// Where `term` sits among the segment's ordinals, comparable with `2·ord + 1` (see
    /// `KeywordValues::ord_position`).
    fn position(&self, term: &str) -> Result<u64> {
        if self.all_terms {
            let terms = &self.segment_terms;
            let at = terms.partition_point(|t| t.as_deref().is_some_and(|t| t < term));
            let exact = terms.get(at).is_some_and(|t| t.as_deref() == Some(term));
            return Ok(2 * at as u64 + u64::from(exact));
        }
        match &self.values {
            AnyValues::Keyword(values) => values.ord_position(term.as_bytes()),
            _ => Err(Error::illegal_state("not a keyword source")),
        }
    }

    /// Reads the block's values, keyed by the source (rounded for histograms), grouped by
    /// document.
    fn read(&mut self, docs: &[DocId]) {
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        match self.spec.kind {
            ValueKind::Keyword => {
                self.read_ords(docs);
                let ords = std::mem::take(&mut self.ords);
                for &(p, ord) in &ords {
                    pairs.push((p, Val::S(self.term(ord))));
                }
                self.ords = ords;
            }
            ValueKind::Ip => {
                if let AnyValues::Ip(values) = &mut self.values {
                    values.for_each(docs, |p, ip| pairs.push((p as u32, Val::P(u128::from(ip)))));
                }
            }
            ValueKind::Long => {
                if let AnyValues::Numeric(values) = &mut self.values {
                    match (&mut self.spec.rounding, self.spec.histogram) {
                        (Some(rounding), _) => values.for_each_i64(docs, |p, v| {
                            pairs.push((p as u32, Val::I(rounding.round(v))))
                        }),
                        (None, Some(interval)) => values.for_each_f64(docs, |p, v| {
                            pairs
                                .push((p as u32, Val::F(OrdF64((v / interval).floor() * interval))))
                        }),
                        (None, None) => {
                            values.for_each_i64(docs, |p, v| pairs.push((p as u32, Val::I(v))))
                        }
                    }
                }
            }
            ValueKind::Double => {
                if let AnyValues::Numeric(values) = &mut self.values {
                    match (&mut self.spec.rounding, self.spec.histogram) {
                        (Some(rounding), _) => values.for_each_f64(docs, |p, v| {
                            pairs.push((p as u32, Val::I(rounding.round(v as i64))))
                        }),
                        (None, Some(interval)) => values.for_each_f64(docs, |p, v| {
                            pairs
                                .push((p as u32, Val::F(OrdF64((v / interval).floor() * interval))))
                        }),
                        (None, None) => values
                            .for_each_f64(docs, |p, v| pairs.push((p as u32, Val::F(OrdF64(v))))),
                    }
                }
            }
            ValueKind::ScriptText => {
                if let AnyValues::Script(values) = &mut self.values {
                    let text = &mut self.text;
                    values.for_each(docs, |p, value| {
                        text.clear();
                        value.write_java(text);
                        pairs.push((p as u32, Val::S(Arc::from(text.as_str()))));
                    });
                }
            }
            ValueKind::Unmapped => {}
        }
        // keyword and ip values are distinct per document; numbers (and their rounded keys)
        // count once per value, as OpenSearch's sorted-numeric sources do, except where
        // OpenSearch walks a leading source's points (see `factory`)
        if self.spec.dedupe {
            pairs.sort();
            pairs.dedup();
        } else {
            pairs.sort_by_key(|(p, _)| *p);
        }
        self.pairs = pairs;
    }
}

struct CompositeCollector {
    sources: Vec<SourceState>,
    orders: Vec<PartOrder>,
    size: usize,
    after: Option<SortKey>,
    /// The slice's smallest keys after `after`, at most `size`, with their ordinals.
    queue: BTreeMap<SortKey, u32>,
    counts: Vec<u64>,
    subs: SubCollectors,
    /// Per source, the current document's parts.
    doc_parts: Vec<Vec<Part>>,
    formats: Vec<ValueFormat>,
    /// Set for a segment whose sources are all keyword columns without a missing bucket:
    /// a document's keys are compared with `after` and the full queue's largest key as
    /// segment ordinals, and only keys that can enter the queue are built
    /// ([`CompositeCollector::collect_ordinals`]).
    ordinal_keys: bool,
    /// `after` as segment ordinal positions (`SourceState::position`).
    after_positions: Option<Vec<u64>>,
    /// The full queue's largest key as positions; none until needed after the queue changed.
    top_positions: Option<Vec<u64>>,
}

/// `ords` (segment ordinals, one per source) against `positions` (`SourceState::position`),
/// in the key order.
fn compare_positions(ords: &[u64], positions: &[u64], orders: &[PartOrder]) -> Ordering {
    for ((ord, position), order) in ords.iter().zip(positions).zip(orders) {
        let by_term = (2 * ord + 1).cmp(position);
        let directed = if order.asc {
            by_term
        } else {
            by_term.reverse()
        };
        if directed != Ordering::Equal {
            return directed;
        }
    }
    Ordering::Equal
}

/// Moves `index` to the next combination of the sources' values (odometer order, the last
/// source fastest), source `s` having `len(s)` values; false once every one was visited.
fn next_combination(index: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
    for s in (0..index.len()).rev() {
        index[s] += 1;
        if index[s] < len(s) {
            return true;
        }
        index[s] = 0;
    }
    false
}

fn directed(val: Val, order: PartOrder) -> Directed {
    if order.asc {
        Directed::Asc(val)
    } else {
        Directed::Desc(Reverse(val))
    }
}

impl CompositeCollector {
    fn offer(&mut self, doc: DocId, key: SortKey) {
        if let Some(ord) = self.offer_count(key, 1) {
            if !self.subs.is_empty() {
                self.subs.push(doc, ord);
            }
        }
    }

    /// Adds `count` documents to the bucket `key` when it is among the slice's first `size`
    /// keys after `after`; its ordinal, or `None` when it is not.
    fn offer_count(&mut self, key: SortKey, count: u64) -> Option<u32> {
        if let Some(after) = &self.after {
            if key <= *after {
                return None;
            }
        }
        let ord = match self.queue.get(&key) {
            Some(ord) => *ord,
            None => {
                if self.queue.len() >= self.size {
                    match self.queue.last_key_value() {
                        Some((largest, _)) if key > *largest => return None,
                        _ => {}
                    }
                    self.queue.pop_last();
                }
                let ord = self.counts.len() as u32;
                self.counts.push(0);
                self.queue.insert(key, ord);
                self.top_positions = None;
                ord
            }
        };
        self.counts[ord as usize] += count;
        Some(ord)
    }

    /// `key` (keyword terms only) as this segment's ordinal positions; none when a part is
    /// not a term or a lookup fails.
    fn positions_of(&self, key: &SortKey) -> Option<Vec<u64>> {
        key.iter()
            .zip(&self.sources)
            .map(|(part, source)| match &part.1 {
                Directed::Asc(Val::S(term)) | Directed::Desc(Reverse(Val::S(term))) => {
                    source.position(term).ok()
                }
                _ => None,
            })
            .collect()
    }

    /// Whether a key with these segment ordinals can enter the queue: after `after`, and not
    /// after the full queue's largest key.
    fn competitive(&mut self, ords: &[u64]) -> bool {
        if let Some(after) = &self.after_positions {
            if compare_positions(ords, after, &self.orders) != Ordering::Greater {
                return false;
            }
        }
        if self.queue.len() < self.size {
            return true;
        }
        if self.top_positions.is_none() {
            let largest = self.queue.last_key_value().map(|(key, _)| key);
            self.top_positions = largest.and_then(|key| self.positions_of(key));
        }
        match &self.top_positions {
            Some(top) => compare_positions(ords, top, &self.orders) != Ordering::Greater,
            None => true,
        }
    }

    /// [`Collector::collect`] for keyword sources only (`ordinal_keys`): each combination of a
    /// document's ordinals is checked against the bounds before its key is built.
    fn collect_ordinals(&mut self, docs: &[DocId]) {
        for source in &mut self.sources {
            source.read_ords(docs);
        }
        let n = self.sources.len();
        let mut ranges = vec![(0usize, 0usize); n];
        let mut index = vec![0usize; n];
        let mut ords = vec![0u64; n];
        for (position, &doc) in docs.iter().enumerate() {
            for (range, source) in ranges.iter_mut().zip(&self.sources) {
                let start = range.1;
                let mut end = start;
                while end < source.ords.len() && source.ords[end].0 as usize == position {
                    end += 1;
                }
                *range = (start, end);
            }
            if ranges.iter().any(|(start, end)| start == end) {
                continue;
            }
            index.fill(0);
            loop {
                for s in 0..n {
                    ords[s] = self.sources[s].ords[ranges[s].0 + index[s]].1;
                }
                if self.competitive(&ords) {
                    let key: SortKey = (0..n)
                        .map(|s| {
                            let term = self.sources[s].term(ords[s]);
                            Part(1, directed(Val::S(term), self.orders[s]))
                        })
                        .collect();
                    self.offer(doc, key);
                }
                if !next_combination(&mut index, |s| ranges[s].1 - ranges[s].0) {
                    break;
                }
            }
        }
        self.subs.flush();
    }
}

impl Collector for CompositeCollector {
    /// One `date_histogram` source on a single-valued integer or date column, without
    /// sub-aggregations or a missing bucket: each bucket's count is a run of the column's
    /// sorted values (see [`SortedSegment`]), found by binary search.
    fn sorted_field(&self) -> Option<&str> {
        let [source] = self.sources.as_slice() else {
            return None;
        };
        let spec = &source.spec;
        if !self.subs.is_empty()
            || spec.missing_bucket
            || spec.rounding.is_none()
            || spec.kind != ValueKind::Long
        {
            return None;
        }
        match &spec.source {
            ValueSource::Numeric {
                path,
                kind: NumericKind::Long | NumericKind::Date(_),
            } => Some(path.as_str()),
            _ => None,
        }
    }

    fn collect_sorted(&mut self, segment: &SortedSegment) {
        let values = segment.values;
        let range = segment.matching();
        let order = self.orders[0];
        let Some(rounding) = self.sources[0].spec.rounding.as_mut() else {
            return;
        };
        let mut runs = Vec::new();
        let (mut i, end) = (range.start, range.end);
        while i < end {
            let key = rounding.round(values[i]);
            let next = rounding.next(key);
            let j = (i + values[i..end].partition_point(|v| *v < next)).max(i + 1);
            runs.push((key, (j - i) as u64));
            i = j;
        }
        for (key, count) in runs {
            self.offer_count(vec![Part(1, directed(Val::I(key), order))], count);
        }
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        for source in &mut self.sources {
            source.set_segment(segment)?;
        }
        self.top_positions = None;
        self.ordinal_keys = self.sources.iter().all(|source| {
            source.spec.kind == ValueKind::Keyword
                && !source.spec.missing_bucket
                && matches!(source.values, AnyValues::Keyword(_))
        });
        self.after_positions = match (&self.after, self.ordinal_keys) {
            (Some(after), true) => {
                let positions = self.positions_of(after);
                self.ordinal_keys = positions.is_some();
                positions
            }
            _ => None,
        };
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], _parents: &[u32]) {
        if self.ordinal_keys {
            return self.collect_ordinals(docs);
        }
        for source in &mut self.sources {
            source.read(docs);
        }
        let n = self.sources.len();
        let mut cursors = vec![0usize; n];
        self.doc_parts.resize_with(n, Vec::new);
        for (position, &doc) in docs.iter().enumerate() {
            let mut complete = true;
            let per_source = self
                .doc_parts
                .iter_mut()
                .zip(&self.sources)
                .zip(&self.orders)
                .zip(cursors.iter_mut());
            for (((parts, source), &order), cursor) in per_source {
                parts.clear();
                while *cursor < source.pairs.len() && source.pairs[*cursor].0 as usize == position {
                    let val = source.pairs[*cursor].1.clone();
                    parts.push(Part(1, directed(val, order)));
                    *cursor += 1;
                }
                if parts.is_empty() {
                    if source.spec.missing_bucket {
                        parts.push(part(&CompositeValue::Null, order));
                    } else {
                        complete = false;
                    }
                }
            }
            if !complete {
                continue;
            }
            // every combination of the sources' values (odometer order)
            let mut index = vec![0usize; n];
            loop {
                let key: SortKey = (0..n)
                    .map(|s| self.doc_parts[s][index[s]].clone())
                    .collect();
                self.offer(doc, key);
                if !next_combination(&mut index, |s| self.doc_parts[s].len()) {
                    break;
                }
            }
        }
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let mut buckets = Vec::with_capacity(self.queue.len());
        if parent == 0 {
            for (key, ord) in &self.queue {
                buckets.push(CompositeBucket {
                    key: key.iter().map(value_of).collect(),
                    doc_count: self.counts[*ord as usize],
                    subs: self.subs.build(*ord)?,
                });
            }
        }
        Ok(InternalAgg::Composite(InternalComposite {
            buckets,
            formats: self.formats.clone(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompositeBucket {
    pub key: Vec<CompositeValue>,
    pub doc_count: u64,
    pub subs: InternalAggregations,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalComposite {
    /// In key order, at most `size`.
    pub buckets: Vec<CompositeBucket>,
    /// The display format of each source.
    pub formats: Vec<ValueFormat>,
}

fn composite_request(request: &AggRequest) -> Result<&CompositeRequest> {
    match &request.kind {
        AggKind::Composite(c) => Ok(c),
        _ => Err(Error::illegal_state("composite result for another request")),
    }
}

/// A key part as OpenSearch's `formatObject` prints it.
fn render_value(value: &CompositeValue, formatter: &Formatter) -> Value {
    match (value, formatter) {
        (CompositeValue::Null, _) => Value::Null,
        (CompositeValue::Str(s), _) => json!(s),
        (CompositeValue::Ip(bits), _) => json!(ip_to_string(Ipv6Addr::from(*bits))),
        (CompositeValue::Long(n), Formatter::Raw) => json!(n),
        (CompositeValue::Long(n), Formatter::Boolean) => json!(*n != 0),
        (CompositeValue::Long(n), f) => f
            .as_string(*n as f64)
            .map(Value::String)
            .unwrap_or_else(|| json!(n)),
        (CompositeValue::Double(f), _) if f.is_nan() => json!("NaN"),
        (CompositeValue::Double(f), _) if f.is_infinite() => {
            json!(if *f > 0.0 { "Infinity" } else { "-Infinity" })
        }
        (CompositeValue::Double(f), Formatter::Raw) => json!(f),
        (CompositeValue::Double(f), formatter) => formatter
            .as_string(*f)
            .map(Value::String)
            .unwrap_or_else(|| json!(f)),
    }
}

impl InternalComposite {
    pub fn reduce(
        parts: Vec<InternalComposite>,
        request: &AggRequest,
    ) -> Result<InternalComposite> {
        let composite = composite_request(request)?;
        let orders = composite.orders();
        let width = parts.iter().map(|p| p.formats.len()).max().unwrap_or(0);
        let formats = (0..width)
            .map(|i| ValueFormat::merge(parts.iter().filter_map(|p| p.formats.get(i))))
            .collect();
        let mut merged: BTreeMap<SortKey, (Vec<CompositeValue>, u64, Vec<InternalAggregations>)> =
            BTreeMap::new();
        for part in parts {
            for bucket in part.buckets {
                let key = sort_key(&bucket.key, &orders);
                let entry = merged
                    .entry(key)
                    .or_insert_with(|| (bucket.key, 0, Vec::new()));
                entry.1 += bucket.doc_count;
                entry.2.push(bucket.subs);
            }
        }
        let buckets = merged
            .into_values()
            .take(composite.size)
            .map(|(key, doc_count, subs)| {
                Ok(CompositeBucket {
                    key,
                    doc_count,
                    subs: InternalAggregations::reduce(subs, &request.subs)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(InternalComposite { buckets, formats })
    }

    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        for bucket in &mut self.buckets {
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let composite = composite_request(request)?;
        let formatters: Vec<Formatter> = (0..composite.sources.len())
            .map(|i| {
                self.formats
                    .get(i)
                    .map_or(Formatter::Raw, |f| f.formatter())
            })
            .collect();
        let key_map = |key: &[CompositeValue]| -> Value {
            let mut map = Map::new();
            for ((source, value), formatter) in composite.sources.iter().zip(key).zip(&formatters) {
                map.insert(source.name.clone(), render_value(value, formatter));
            }
            Value::Object(map)
        };
        ctx.add_buckets(self.buckets.len())?;
        let mut out = Map::new();
        if let Some(last) = self.buckets.last() {
            out.insert("after_key".into(), key_map(&last.key));
        }
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for bucket in self.buckets {
            let mut b = Map::new();
            b.insert("key".into(), key_map(&bucket.key));
            b.insert("doc_count".into(), json!(bucket.doc_count));
            render_subs(&mut b, bucket.subs, &request.subs, ctx)?;
            buckets.push(Value::Object(b));
        }
        out.insert("buckets".into(), Value::Array(buckets));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use crate::test_util::{json_diff, render_shards, split_docs, Rng, TestShard};

    #[test]
    fn script_sources_read_text_or_numbers_and_refuse_what_opensearch_ignores() {
        let source = |entry: Value| parse_entry(&entry).unwrap();
        let kind = |entry: Value, field_kind: Option<NumericKind>| {
            script_kind(&source(entry), field_kind.as_ref())
        };
        let text = json!({"s": {"terms": {"script": "doc['k'].value"}}});
        assert_eq!(kind(text, None).unwrap(), ValueKind::ScriptText);
        let long = json!({"s": {"terms": {"script": "1", "value_type": "long"}}});
        assert_eq!(kind(long, None).unwrap(), ValueKind::Long);
        let on_number = json!({"s": {"terms": {"field": "n", "script": "_value"}}});
        assert_eq!(
            kind(on_number, Some(NumericKind::Long)).unwrap(),
            ValueKind::Double
        );
        let dates = json!({"s": {"date_histogram": {"script": "1", "calendar_interval": "day"}}});
        assert_eq!(kind(dates, None).unwrap(), ValueKind::Long);
        for (entry, field_kind) in [
            (
                json!({"s": {"terms": {"field": "k", "script": "_value"}}}),
                None,
            ),
            (
                json!({"s": {"terms": {"field": "b", "script": "_value"}}}),
                Some(NumericKind::Boolean),
            ),
            (
                json!({"s": {"date_histogram": {"field": "d", "script": "_value", "calendar_interval": "day"}}}),
                Some(NumericKind::Long),
            ),
            (
                json!({"s": {"terms": {"script": "1", "value_type": "ip"}}}),
                None,
            ),
        ] {
            let e = kind(entry.clone(), field_kind).unwrap_err();
            assert_eq!(e.status(), 400, "{entry}");
            assert!(
                e.reason().ends_with("is not supported by Tessera"),
                "{entry}"
            );
        }
    }

    fn parse_err(body: Value) -> (String, Option<String>) {
        let e = parse_aggregations(&json!({"c": {"composite": body}})).unwrap_err();
        let mut inner = e.cause();
        while let Some(c) = inner.and_then(|c| c.cause()) {
            inner = Some(c);
        }
        (
            e.reason().to_string(),
            inner.map(|c| format!("{}: {}", c.kind(), c.reason())),
        )
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let terms = |extra: Value| {
            let mut t = json!({"field": "k"});
            t.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"sources": [{"k": {"terms": t}}]})
        };
        assert_eq!(
            parse_err(json!({"sources": [{"k": {"terms": {"field": "k"}}}, {"k": {"terms": {"field": "j"}}}]})),
            (
                "[composite] failed to parse field [sources]".into(),
                Some("illegal_argument_exception: Composite source names must be unique, found duplicates: [k]".into())
            )
        );
        assert_eq!(
            parse_err(json!({"sources": []})).1.unwrap(),
            "illegal_argument_exception: Composite [sources] cannot be null or empty"
        );
        assert_eq!(parse_err(json!({"size": 2})).0, "Required [sources]");
        assert_eq!(
            parse_err(json!({"sources": [{"k": {"bogus": {"field": "k"}}}]}))
                .1
                .unwrap(),
            "parsing_exception: invalid source type: bogus"
        );
        assert_eq!(
            parse_err(terms(json!({"missing": "x"}))).1.unwrap(),
            "x_content_parse_exception: [terms] unknown field [missing] did you mean [missing_order]?"
        );
        assert_eq!(
            parse_err(terms(json!({"order": "up"}))).1.unwrap(),
            "illegal_argument_exception: No enum constant org.opensearch.search.sort.SortOrder.UP"
        );
        assert_eq!(
            parse_err(terms(json!({"missing_bucket": "yes"}))).1.unwrap(),
            "illegal_argument_exception: Failed to parse value [yes] as only [true] or [false] are allowed."
        );
        assert_eq!(
            parse_err(json!({"sources": [{"h": {"histogram": {"field": "f", "interval": 0}}}]}))
                .1
                .unwrap(),
            "illegal_argument_exception: [interval] must be greater than 0 for [histogram] source"
        );
        assert_eq!(
            parse_err(json!({"sources": [{"h": {"date_histogram": {"field": "d", "calendar_interval": "2d"}}}]}))
                .1
                .unwrap(),
            "illegal_argument_exception: The supplied interval [2d] could not be parsed as a calendar interval."
        );
        assert_eq!(
            parse_err(json!({"sources": [{"k": {"terms": {"field": "k"}}}], "after": "x"})).0,
            "[composite] after doesn't support values of type: VALUE_STRING"
        );
        assert_eq!(
            parse_err(json!({"sources": [{"k": {"terms": {"field": "k"}}}], "bogus": 1})).0,
            "[composite] unknown field [bogus]"
        );
    }

    /// The shape OpenSearch 2.19 gives for a histogram source on a double and a terms source
    /// on a boolean: doubles as doubles, booleans as JSON booleans, `after_key` = last key.
    #[test]
    fn renders_keys_and_after_key_like_opensearch() {
        let aggs = parse_aggregations(&json!({"c": {"composite": {"size": 4, "sources": [
            {"h": {"histogram": {"field": "f", "interval": 25}}},
            {"b": {"terms": {"field": "b"}}}]}}}))
        .unwrap();
        let bucket = |h: f64, b: i64, doc_count: u64| CompositeBucket {
            key: vec![CompositeValue::Double(h), CompositeValue::Long(b)],
            doc_count,
            subs: InternalAggregations::default(),
        };
        let result = InternalComposite {
            buckets: vec![
                bucket(-25.0, 0, 27),
                bucket(-25.0, 1, 19),
                bucket(0.0, 0, 68),
                bucket(0.0, 1, 21),
            ],
            formats: vec![ValueFormat::Raw, ValueFormat::Boolean],
        };
        let out = result
            .render(&aggs[0], &mut RenderContext::new(100))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"after_key": {"h": 0.0, "b": true}, "buckets": [
                {"key": {"h": -25.0, "b": false}, "doc_count": 27},
                {"key": {"h": -25.0, "b": true}, "doc_count": 19},
                {"key": {"h": 0.0, "b": false}, "doc_count": 68},
                {"key": {"h": 0.0, "b": true}, "doc_count": 21}
            ]})
        );
        let empty = InternalComposite::default()
            .render(&aggs[0], &mut RenderContext::new(100))
            .unwrap();
        assert_eq!(Value::Object(empty), json!({"buckets": []}));
        assert_eq!(
            render_value(&CompositeValue::Double(f64::NAN), &Formatter::Raw),
            json!("NaN")
        );
        assert_eq!(
            render_value(&CompositeValue::Null, &Formatter::Raw),
            Value::Null
        );
    }

    fn docs(seed: u64, n: usize) -> Vec<Value> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|i| {
                let k = ["a", "b", "c", "d", "e"][rng.below(5) as usize];
                let d = 1_420_070_400_000i64 + rng.below(10 * 86_400_000) as i64;
                match i % 7 {
                    0 => json!({"n": rng.below(20)}),
                    1 => json!({"k": [k, "z"], "n": [rng.below(20), rng.below(20)], "d": d}),
                    _ => json!({"k": k, "n": rng.below(20), "d": d, "ip": format!("10.0.0.{}", i % 13)}),
                }
            })
            .collect()
    }

    fn shard(docs: &[Value], segments: usize) -> TestShard {
        TestShard::new(
            json!({"properties": {"k": {"type": "keyword"}, "n": {"type": "long"},
                   "d": {"type": "date"}, "ip": {"type": "ip"}}}),
            docs,
            segments,
        )
    }

    /// Pages through every bucket with `after_key`; returns all buckets.
    fn pages(shards: &[&TestShard], sources: &Value, size: usize, seed: u64) -> Vec<Value> {
        let mut all = Vec::new();
        let mut after: Option<Value> = None;
        for page in 0..1000 {
            let mut body = json!({"sources": sources, "size": size});
            if let Some(after) = &after {
                body["after"] = after.clone();
            }
            let aggs = json!({"c": {"composite": body}, });
            let out = render_shards(
                shards,
                &aggs,
                1 + (page + seed as usize) % 5,
                seed + page as u64,
            )
            .unwrap();
            let buckets = out["c"]["buckets"].as_array().unwrap().clone();
            if buckets.is_empty() {
                assert!(out["c"].get("after_key").is_none());
                break;
            }
            assert_eq!(out["c"]["after_key"], buckets.last().unwrap()["key"]);
            after = Some(out["c"]["after_key"].clone());
            all.extend(buckets);
        }
        all
    }

    #[test]
    fn pagination_is_exact_for_any_slicing_and_sharding() {
        let docs = docs(4, 500);
        let sources = json!([
            {"k": {"terms": {"field": "k", "missing_bucket": true, "order": "desc"}}},
            {"d": {"date_histogram": {"field": "d", "calendar_interval": "1d", "format": "yyyy-MM-dd"}}},
            {"n": {"histogram": {"field": "n", "interval": 5, "missing_bucket": true, "missing_order": "last"}}}
        ]);
        let one = shard(&docs, 4);
        let everything = render_shards(
            &[&one],
            &json!({"c": {"composite": {"sources": sources, "size": 10000}}}),
            1,
            0,
        )
        .unwrap()["c"]["buckets"]
            .as_array()
            .unwrap()
            .clone();
        assert!(everything.len() > 50);
        let paged = pages(&[&one], &sources, 7, 1);
        assert_eq!(json_diff(&json!(paged), &json!(everything), 0.0, ""), None);
        let parts = split_docs(&docs, 3, 9);
        let shards: Vec<TestShard> = parts.iter().map(|p| shard(p, 2)).collect();
        let refs: Vec<&TestShard> = shards.iter().collect();
        let paged = pages(&refs, &sources, 13, 2);
        assert_eq!(json_diff(&json!(paged), &json!(everything), 0.0, ""), None);
        // keys come in the requested order: k descending (documents without `d` have no
        // bucket, so neither has the missing `k`)
        let ks: Vec<&str> = everything
            .iter()
            .map(|b| b["key"]["k"].as_str().unwrap())
            .collect();
        assert_eq!(ks[0], "z");
        assert!(ks.windows(2).all(|w| w[0] >= w[1]));
    }

    /// Keyword sources only (the ordinal path): every page, over any slicing, sharding and
    /// segments (each with its own ordinals), is the brute-force count of each combination.
    #[test]
    fn keyword_sources_page_exactly_by_ordinals() {
        let mut rng = Rng::new(11);
        let words = [
            "ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "yak",
        ];
        let docs: Vec<Value> = (0..600)
            .map(|i| {
                let mut pick = || words[rng.below(words.len() as u64) as usize];
                match i % 5 {
                    0 => json!({"k": pick()}),
                    1 => json!({"k": [pick(), pick()], "m": [pick(), pick(), pick()]}),
                    _ => json!({"k": pick(), "m": pick()}),
                }
            })
            .collect();
        let mapping = json!({"properties": {"k": {"type": "keyword"}, "m": {"type": "keyword"}}});
        // brute force: k descending, then m ascending
        let mut expected: BTreeMap<(Reverse<String>, String), u64> = BTreeMap::new();
        let values = |doc: &Value, field: &str| -> Vec<String> {
            let mut all: Vec<String> = match &doc[field] {
                Value::String(s) => vec![s.clone()],
                Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_string()).collect(),
                _ => vec![],
            };
            all.sort();
            all.dedup();
            all
        };
        for doc in &docs {
            for k in values(doc, "k") {
                for m in values(doc, "m") {
                    *expected.entry((Reverse(k.clone()), m)).or_default() += 1;
                }
            }
        }
        let expected: Vec<Value> = expected
            .into_iter()
            .map(|((Reverse(k), m), count)| json!({"key": {"k": k, "m": m}, "doc_count": count}))
            .collect();
        assert!(expected.len() > 40);
        let sources = json!([
            {"k": {"terms": {"field": "k", "order": "desc"}}},
            {"m": {"terms": {"field": "m"}}}
        ]);
        let one = TestShard::new(mapping.clone(), &docs, 5);
        for (size, seed) in [(1, 1), (4, 2), (9, 3), (1000, 4)] {
            let paged = pages(&[&one], &sources, size, seed);
            assert_eq!(
                json_diff(&json!(paged), &json!(expected), 0.0, ""),
                None,
                "{size}"
            );
        }
        let parts = split_docs(&docs, 3, 5);
        let shards: Vec<TestShard> = parts
            .iter()
            .map(|p| TestShard::new(mapping.clone(), p, 3))
            .collect();
        let refs: Vec<&TestShard> = shards.iter().collect();
        let paged = pages(&refs, &sources, 6, 5);
        assert_eq!(json_diff(&json!(paged), &json!(expected), 0.0, ""), None);
    }

    #[test]
    fn shard_errors_match_opensearch() {
        let shard = shard(&docs(1, 30), 1);
        let run = |body: Value| {
            shard
                .try_run(&json!({"c": {"composite": body}}), 1, 0)
                .unwrap_err()
        };
        let src = json!([{"k": {"terms": {"field": "k"}}}, {"n": {"terms": {"field": "n"}}}]);
        assert_eq!(
            run(json!({"sources": src, "after": {"k": "a"}})).reason(),
            "[after] has 1 value(s) but [sources] has 2"
        );
        assert_eq!(
            run(json!({"sources": src, "after": {"k": "a", "x": 1}})).reason(),
            "Missing value for [after.n]"
        );
        assert_eq!(
            run(json!({"sources": src, "after": {"k": "a", "n": null}})).reason(),
            "Invalid value for [after.n], expected comparable, got [null]"
        );
        assert_eq!(
            run(json!({"sources": src, "after": {"k": "a", "n": "abc"}})).kind(),
            "number_format_exception"
        );
        assert_eq!(
            run(json!({"sources": [{"k": {"terms": {"field": "k", "missing_order": "last"}}}]}))
                .reason(),
            "missing_order require missing_bucket is true"
        );
        let e = shard
            .try_run(
                &json!({"t": {"terms": {"field": "k"}, "aggs": {"c": {"composite": {"sources": src}}}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "[composite] aggregation cannot be used with a parent aggregation of type: [TermsAggregatorFactory]"
        );
    }
}
