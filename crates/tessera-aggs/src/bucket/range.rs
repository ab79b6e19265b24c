//! `range`: one bucket per `[from, to)` range; ranges may overlap (a doc then lands in each).
//!
//! As in OpenSearch, ranges are sorted by `(from, to)` once at parse time and the response
//! keeps that order; keys default to `from-to` with `*` for open ends.
//!
//! A lone `range` on a single-valued integer or date field, without sub-aggregations or
//! `missing`, counts a whole segment from the field's sorted values (two binary searches per
//! range, see [`SortedSegment`]) instead of reading the value of every matching document.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::bucket::geo_distance::{DistanceSource, DistanceValues, GeoDistanceRequest};
use crate::bucket::histogram::{bucket_list, java_double};
use crate::collector::{Collector, SegmentContext, SortedSegment, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, string_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, NumericValues, ValueSource};

/// One range as requested: bounds are kept as given (numbers, or strings parsed on the shard).
#[derive(Clone, Debug, PartialEq)]
pub struct RangeSpec {
    pub key: Option<String>,
    pub from: Option<Value>,
    pub to: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RangeRequest {
    pub source: ValuesSourceParams,
    pub ranges: Vec<RangeSpec>,
    pub keyed: bool,
}

impl RangeRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<RangeRequest> {
        const AGG: &str = "range";
        let mut request = RangeRequest {
            source: ValuesSourceParams::default(),
            ranges: Vec::new(),
            keyed: false,
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "ranges" => {
                    let Value::Array(items) = value else {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [ranges]"
                        )));
                    };
                    for item in items {
                        request.ranges.push(parse_range(AGG, item)?);
                    }
                }
                "keyed" => request.keyed = bool_param(AGG, key, value)?,
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        if request.ranges.is_empty() {
            return Err(Error::illegal_argument(format!(
                "No [ranges] specified for the [{name}] aggregation"
            )));
        }
        Ok(request)
    }
}

/// Parses one `{from, to, key}` object of the `agg` aggregation (`range` or `date_range`);
/// the object's own parser is named `range` in OpenSearch's errors.
pub(crate) fn parse_range(agg: &str, item: &Value) -> Result<RangeSpec> {
    let Value::Object(map) = item else {
        return Err(Error::x_content_parse(format!(
            "[{agg}] failed to parse field [ranges]"
        )));
    };
    let mut spec = RangeSpec {
        key: None,
        from: None,
        to: None,
    };
    for (key, value) in map {
        match key.as_str() {
            "key" => spec.key = Some(string_param(agg, key, value)?),
            "from" => spec.from = (!value.is_null()).then(|| value.clone()),
            "to" => spec.to = (!value.is_null()).then(|| value.clone()),
            _ => {
                return Err(Error::x_content_parse(format!(
                    "[{agg}] failed to parse field [ranges]"
                ))
                .caused_by(unknown_field("range", key)))
            }
        }
    }
    Ok(spec)
}

/// A numeric bound: numbers, or numeric strings (`"10"`), with Java's error otherwise.
pub(crate) fn numeric_bound(value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| Error::illegal_argument(format!("bad range bound [{n}]"))),
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| {
            Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{s}\""),
            )
        }),
        other => Err(Error::illegal_argument(format!(
            "bad range bound [{other}]"
        ))),
    }
}

/// Ranges resolved to numbers, sorted by `(from, to)` as OpenSearch does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResolvedRange {
    pub key: Option<String>,
    pub from: f64,
    pub to: f64,
}

/// Resolves and sorts ranges; `parse` turns a bound into a number (dates use their format).
pub fn resolve_ranges(
    specs: &[RangeSpec],
    mut parse: impl FnMut(&Value) -> Result<f64>,
) -> Result<Vec<ResolvedRange>> {
    let mut ranges = specs
        .iter()
        .map(|s| {
            Ok(ResolvedRange {
                key: s.key.clone(),
                from: s
                    .from
                    .as_ref()
                    .map(&mut parse)
                    .transpose()?
                    .unwrap_or(f64::NEG_INFINITY),
                to: s
                    .to
                    .as_ref()
                    .map(&mut parse)
                    .transpose()?
                    .unwrap_or(f64::INFINITY),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    ranges.sort_by(|a, b| a.from.total_cmp(&b.from).then(a.to.total_cmp(&b.to)));
    Ok(ranges)
}

// ---- collection ----

pub(crate) struct RangeFactory {
    pub input: RangeInput,
    pub format: ValueFormat,
    pub ranges: Vec<ResolvedRange>,
    pub missing: Option<f64>,
}

/// What the ranges are tested against: a numeric field's values (`range`, `date_range`) or the
/// distances of a geo field's points from an origin (`geo_distance`).
#[derive(Clone)]
pub(crate) enum RangeInput {
    Numeric(ValueSource),
    Distance(DistanceSource),
}

/// A segment's values for a [`RangeInput`].
enum RangeInputValues {
    Numeric(NumericValues),
    Distance(DistanceValues),
}

impl RangeFactory {
    /// The factory of a `range` over distances (`geo_distance`).
    pub fn distances(
        source: DistanceSource,
        format: ValueFormat,
        ranges: Vec<ResolvedRange>,
    ) -> RangeFactory {
        RangeFactory {
            input: RangeInput::Distance(source),
            format,
            ranges,
            missing: None,
        }
    }
}

pub fn factory(
    _request: &AggRequest,
    range: &RangeRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let source = ValueSource::resolve_params(ctx, &range.source, "range", Accepts::Numeric)?;
    let format = ValueFormat::for_source(&source, range.source.format.as_deref(), None)?;
    // a range on a date field takes dates (and date math) as bounds
    let date_format = match source.numeric_kind() {
        Some(crate::values::NumericKind::Date(f)) => Some(match &range.source.format {
            Some(spec) => tessera_date::DateFormat::parse(spec)
                .map_err(|e| Error::illegal_argument(e.message))?,
            None => f.clone(),
        }),
        _ => None,
    };
    let bound = |v: &Value| -> Result<f64> {
        match (&date_format, v) {
            (Some(format), Value::String(_)) => {
                crate::bucket::date_histogram::parse_date_value(v, format, ctx.now_millis, None)
                    .map(|m| m as f64)
            }
            _ => numeric_bound(v),
        }
    };
    let ranges = resolve_ranges(&range.ranges, bound)?;
    let missing = range.source.missing.as_ref().map(bound).transpose()?;
    Ok(Box::new(RangeFactory {
        input: RangeInput::Numeric(source),
        format,
        ranges,
        missing,
    }))
}

impl Factory for RangeFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(RangeCollector {
            single_parent,
            input: self.input.clone(),
            format: self.format.clone(),
            ranges: self.ranges.clone(),
            missing: self.missing,
            values: None,
            tally: RangeTally::default(),
            subs,
            hits: Vec::new(),
        }))
    }
}

struct RangeCollector {
    input: RangeInput,
    format: ValueFormat,
    ranges: Vec<ResolvedRange>,
    missing: Option<f64>,
    values: Option<RangeInputValues>,
    tally: RangeTally,
    subs: SubCollectors,
    hits: Vec<(u32, u32)>,
    single_parent: bool,
}

/// The doc counts of possibly overlapping ranges under each parent bucket, shared by the
/// range-shaped aggregations (`range`, `date_range`, `geo_distance`, `ip_range`): a document
/// counts once in each range one of its values falls in.
#[derive(Default)]
pub(crate) struct RangeTally {
    /// Bucket ordinal = parent × ranges + range index.
    counts: Vec<u64>,
    doc_ranges: Vec<u32>,
}

impl RangeTally {
    /// Counts `hits`, `(position in docs, range index)` grouped by position, into the buckets
    /// of `n` ranges under each doc's parent, and hands each doc to the sub-aggregations once
    /// per bucket.
    pub fn add(
        &mut self,
        hits: &[(u32, u32)],
        n: u32,
        docs: &[DocId],
        parents: &[u32],
        subs: &mut SubCollectors,
    ) {
        let mut previous = u32::MAX;
        for &(position, range) in hits {
            if position != previous {
                self.doc_ranges.clear();
                previous = position;
            } else if self.doc_ranges.contains(&range) {
                continue;
            }
            self.doc_ranges.push(range);
            let ord = parents[position as usize] * n + range;
            *slot(&mut self.counts, ord) += 1;
            if !subs.is_empty() {
                subs.push(docs[position as usize], ord);
            }
        }
        subs.flush();
    }

    /// Adds `count` documents to range `range` of the first parent (counts read from sorted
    /// values).
    pub fn add_count(&mut self, range: u32, count: u64) {
        if count > 0 {
            *slot(&mut self.counts, range) += count;
        }
    }

    /// The buckets of `parent`'s `n` ranges, with their sub-aggregation results.
    pub fn buckets(
        &mut self,
        parent: u32,
        n: u32,
        subs: &mut SubCollectors,
    ) -> Result<Vec<RangeBucket>> {
        (0..n)
            .map(|i| {
                let ord = parent.saturating_mul(n).saturating_add(i);
                Ok(RangeBucket {
                    doc_count: self.counts.get(ord as usize).copied().unwrap_or(0),
                    subs: subs.build(ord)?,
                })
            })
            .collect()
    }
}

impl Collector for RangeCollector {
    fn sorted_field(&self) -> Option<&str> {
        let RangeInput::Numeric(ValueSource::Numeric { path, kind, .. }) = &self.input else {
            return None;
        };
        if !self.subs.is_empty() || !self.single_parent || self.missing.is_some() {
            return None;
        }
        // the sorted values are the column's integers, which `collect` reads as they are
        matches!(kind, NumericKind::Long | NumericKind::Date(_)).then_some(path.as_str())
    }

    fn collect_sorted(&mut self, segment: &SortedSegment) {
        let values = &segment.values[segment.matching()];
        for (i, range) in self.ranges.iter().enumerate() {
            // `from <= v < to` as `collect` tests it, on values in ascending order
            let start = values.partition_point(|v| (*v as f64) < range.from);
            let end = values.partition_point(|v| (*v as f64) < range.to);
            self.tally
                .add_count(i as u32, end.saturating_sub(start) as u64);
        }
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(match &self.input {
            RangeInput::Numeric(source) => {
                RangeInputValues::Numeric(NumericValues::open(source, segment.reader)?)
            }
            RangeInput::Distance(source) => {
                RangeInputValues::Distance(source.open(segment.reader)?)
            }
        });
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(values) = &mut self.values else {
            return;
        };
        let ranges = &self.ranges;
        let hits = &mut self.hits;
        hits.clear();
        let record = |p: usize, v: f64| {
            for (i, r) in ranges.iter().enumerate() {
                if v >= r.from && v < r.to {
                    hits.push((p as u32, i as u32));
                }
            }
        };
        match values {
            RangeInputValues::Numeric(values) => values.for_each_f64_or(docs, self.missing, record),
            RangeInputValues::Distance(values) => values.for_each(docs, record),
        }
        self.tally
            .add(hits, ranges.len() as u32, docs, parents, &mut self.subs);
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let n = self.ranges.len() as u32;
        let buckets = self.tally.buckets(parent, n, &mut self.subs)?;
        Ok(InternalAgg::Range(InternalRange {
            buckets,
            format: self.format.clone(),
            ranges: self.ranges.clone(),
        }))
    }
}

// ---- intermediate result ----

/// The buckets of `n` ranges summed over partial results (one bucket list per part, in the
/// same range order), their sub-aggregations reduced; `agg` names the aggregation in the
/// error for parts of different lengths.
pub(crate) fn reduce_buckets(
    parts: impl IntoIterator<Item = Vec<RangeBucket>>,
    n: usize,
    agg: &str,
    request: &AggRequest,
) -> Result<Vec<RangeBucket>> {
    let mut counts = vec![0u64; n];
    let mut subs: Vec<Vec<InternalAggregations>> = vec![Vec::new(); n];
    for buckets in parts {
        if buckets.len() != n {
            return Err(Error::illegal_state(format!(
                "{agg} results with different bucket counts"
            )));
        }
        for (i, bucket) in buckets.into_iter().enumerate() {
            counts[i] += bucket.doc_count;
            subs[i].push(bucket.subs);
        }
    }
    counts
        .into_iter()
        .zip(subs)
        .map(|(doc_count, parts)| {
            Ok(RangeBucket {
                doc_count,
                subs: InternalAggregations::reduce(parts, &request.subs)?,
            })
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeBucket {
    pub doc_count: u64,
    pub subs: InternalAggregations,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalRange {
    /// One per range, in the sorted order.
    pub buckets: Vec<RangeBucket>,
    pub format: ValueFormat,
    /// The resolved ranges of the buckets, in order (dates resolved on the shard).
    pub ranges: Vec<ResolvedRange>,
}

impl InternalRange {
    /// Zero-count buckets; bounds are filled in from the request where they are plain numbers.
    pub fn empty(range: &RangeRequest, subs: &[AggRequest]) -> InternalRange {
        let ranges = resolve_ranges(&range.ranges, |v| Ok(numeric_bound(v).unwrap_or(f64::NAN)))
            .unwrap_or_default();
        InternalRange {
            buckets: ranges
                .iter()
                .map(|_| RangeBucket {
                    doc_count: 0,
                    subs: InternalAggregations::empty(subs),
                })
                .collect(),
            format: ValueFormat::Raw,
            ranges,
        }
    }

    /// Zero-count buckets of a `geo_distance` (its ranges need no field to resolve).
    pub fn empty_distances(geo: &GeoDistanceRequest, subs: &[AggRequest]) -> InternalRange {
        let ranges = geo.resolved_ranges().unwrap_or_default();
        InternalRange {
            buckets: ranges
                .iter()
                .map(|_| RangeBucket {
                    doc_count: 0,
                    subs: InternalAggregations::empty(subs),
                })
                .collect(),
            format: ValueFormat::Raw,
            ranges,
        }
    }

    pub fn reduce(parts: Vec<InternalRange>, request: &AggRequest) -> Result<InternalRange> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let ranges = parts
            .iter()
            .find(|p| p.ranges.iter().all(|r| !r.from.is_nan() && !r.to.is_nan()))
            .map(|p| p.ranges.clone())
            .unwrap_or_else(|| parts[0].ranges.clone());
        let buckets = reduce_buckets(
            parts.into_iter().map(|p| p.buckets),
            ranges.len(),
            "range",
            request,
        )?;
        Ok(InternalRange {
            buckets,
            format,
            ranges,
        })
    }

    pub fn for_each_subs(
        &mut self,
        mut f: impl FnMut(&mut InternalAggregations) -> Result<()>,
    ) -> Result<()> {
        self.buckets.iter_mut().try_for_each(|b| f(&mut b.subs))
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let keyed = match &request.kind {
            AggKind::Range(r) => r.keyed,
            AggKind::DateRange(r) => r.range.keyed,
            AggKind::GeoDistance(r) => r.keyed,
            _ => return Err(Error::illegal_state("range result for another request")),
        };
        ctx.add_buckets(self.buckets.len())?;
        let formatter = self.format.formatter();
        let mut rendered = Vec::with_capacity(self.buckets.len());
        for (i, bucket) in self.buckets.into_iter().enumerate() {
            let range = &self.ranges[i];
            let (from, to) = (range.from, range.to);
            let show = |v: f64| formatter.as_string(v).unwrap_or_else(|| java_double(v));
            let key = range.key.clone().unwrap_or_else(|| {
                let from = if from.is_finite() {
                    show(from)
                } else {
                    "*".into()
                };
                let to = if to.is_finite() { show(to) } else { "*".into() };
                format!("{from}-{to}")
            });
            let mut out = Map::new();
            if !keyed {
                out.insert("key".into(), json!(key));
            }
            if from.is_finite() {
                out.insert("from".into(), json!(from));
                if let Some(text) = formatter.as_string(from) {
                    out.insert("from_as_string".into(), json!(text));
                }
            }
            if to.is_finite() {
                out.insert("to".into(), json!(to));
                if let Some(text) = formatter.as_string(to) {
                    out.insert("to_as_string".into(), json!(text));
                }
            }
            out.insert("doc_count".into(), json!(bucket.doc_count));
            render_subs(&mut out, bucket.subs, &request.subs, ctx)?;
            rendered.push((key, Value::Object(out)));
        }
        Ok(bucket_list(rendered, keyed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use serde_json::json;

    #[test]
    fn parse_and_sort_like_opensearch() {
        let aggs = parse_aggregations(&json!({"x": {"range": {"field": "n", "ranges": [
            {"from": 5}, {"to": 2}, {"from": 1, "to": 6, "key": "mid"}, {"from": 1, "to": 3}
        ]}}}))
        .unwrap();
        let AggKind::Range(r) = &aggs[0].kind else {
            panic!()
        };
        let resolved = resolve_ranges(&r.ranges, numeric_bound).unwrap();
        let order: Vec<(f64, f64)> = resolved.iter().map(|r| (r.from, r.to)).collect();
        assert_eq!(
            order,
            [
                (f64::NEG_INFINITY, 2.0),
                (1.0, 3.0),
                (1.0, 6.0),
                (5.0, f64::INFINITY)
            ]
        );
        let empty = InternalRange::empty(r, &[]);
        let out = empty
            .render(&aggs[0], &mut RenderContext::new(100))
            .unwrap();
        let keys: Vec<&str> = out["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["*-2.0", "1.0-3.0", "mid", "5.0-*"]);
    }

    #[test]
    fn parse_errors() {
        let e =
            parse_aggregations(&json!({"x": {"range": {"field": "n", "ranges": []}}})).unwrap_err();
        assert_eq!(e.reason(), "No [ranges] specified for the [x] aggregation");
        let e =
            parse_aggregations(&json!({"x": {"range": {"field": "n", "ranges": [{"bogus": 1}]}}}))
                .unwrap_err();
        assert_eq!(e.cause().unwrap().reason(), "[range] unknown field [bogus]");
        assert_eq!(
            numeric_bound(&json!("a")).unwrap_err().kind(),
            "number_format_exception"
        );
    }
}
