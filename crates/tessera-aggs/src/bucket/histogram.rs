//! `histogram` (numeric keys) and the bucket machinery it shares with `date_histogram`: the
//! collector that keys each value by a rounding, the intermediate results, and the final
//! rendering with empty-bucket filling (`min_doc_count: 0`), `extended_bounds` and `keyed`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::bucket::date_histogram::{longest_bucket, Rounding};
use crate::bucket::order::BucketOrder;
use crate::bucket::range_histogram::{self, RangeHistogramCollector};
use crate::collector::{Collector, SegmentContext, SortedSegment, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext};
use crate::ords::{slot, BucketOrds, IndexOrds, NO_BUCKET, UNSEEN};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, count_param, f64_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, NumericValues, RangeSource, ValueSource};
use tessera_mapping::range::RangeKind;

/// `{min, max}` of `extended_bounds` / `hard_bounds`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds<T> {
    pub min: Option<T>,
    pub max: Option<T>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HistogramRequest {
    pub source: ValuesSourceParams,
    pub interval: f64,
    pub offset: f64,
    pub min_doc_count: u64,
    pub extended_bounds: Option<Bounds<f64>>,
    pub hard_bounds: Option<Bounds<f64>>,
    pub keyed: bool,
    pub order: BucketOrder,
}

fn parse_bounds(agg: &str, key: &str, value: &Value) -> Result<Bounds<f64>> {
    let Value::Object(map) = value else {
        return Err(Error::x_content_parse(format!(
            "[{agg}] failed to parse field [{key}]"
        )));
    };
    let mut bounds = Bounds {
        min: None,
        max: None,
    };
    for (k, v) in map {
        match k.as_str() {
            "min" if !v.is_null() => bounds.min = Some(f64_param(key, k, v)?),
            "max" if !v.is_null() => bounds.max = Some(f64_param(key, k, v)?),
            "min" | "max" => {}
            other => return Err(unknown_field(key, other)),
        }
    }
    Ok(bounds)
}

impl HistogramRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<HistogramRequest> {
        const AGG: &str = "histogram";
        let mut request = HistogramRequest {
            source: ValuesSourceParams::default(),
            interval: 0.0,
            offset: 0.0,
            min_doc_count: 0,
            extended_bounds: None,
            hard_bounds: None,
            keyed: false,
            order: BucketOrder::key_asc(),
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "interval" => {
                    let interval = f64_param(AGG, key, value)?;
                    if interval <= 0.0 || !interval.is_finite() {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [interval]"
                        ))
                        .caused_by(Error::illegal_argument(format!(
                            "[interval] must be >0 for histogram aggregation [{name}]"
                        ))));
                    }
                    request.interval = interval;
                }
                "offset" => request.offset = f64_param(AGG, key, value)?,
                "min_doc_count" => request.min_doc_count = count_param(AGG, key, value)?,
                "extended_bounds" => request.extended_bounds = Some(parse_bounds(AGG, key, value)?),
                "hard_bounds" => request.hard_bounds = Some(parse_bounds(AGG, key, value)?),
                "keyed" => request.keyed = bool_param(AGG, key, value)?,
                "order" => request.order = BucketOrder::parse(AGG, value)?,
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }
}

// ---- collection ----

/// How a value becomes a bucket key.
#[derive(Clone, Debug)]
pub(crate) enum KeyFn {
    /// `floor((v - offset) / interval) * interval + offset`, as f64 bits.
    Numeric {
        interval: f64,
        offset: f64,
        hard_min: f64,
        hard_max: f64,
    },
    /// A date rounding, keys as i64 millis.
    Date {
        rounding: Rounding,
        hard_min: i64,
        hard_max: i64,
    },
}

pub(crate) struct HistogramFactory {
    pub source: ValueSource,
    pub format: ValueFormat,
    pub key_fn: KeyFn,
    pub missing: Option<f64>,
    /// Extended bounds resolved on the shard (dates need the field's format).
    pub date_bounds: Option<(Option<i64>, Option<i64>)>,
    /// Set when the field is a range field: its ranges are bucketed instead of values.
    pub ranges: Option<RangeSource>,
}

pub fn histogram_factory(
    request: &AggRequest,
    histogram: &HistogramRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    histogram.order.validate(&request.subs)?;
    if histogram.interval <= 0.0 {
        return Err(Error::illegal_argument(format!(
            "interval must be positive, got: {:?}",
            histogram.interval
        )));
    }
    let ranges = match (&histogram.source.field, &histogram.source.script) {
        (Some(field), None) => RangeSource::resolve(ctx.table, field)?,
        _ => None,
    };
    let source = match &ranges {
        Some(range) => {
            range_histogram::check_source(range, false, histogram.source.missing.is_some())?;
            // keys shown like those of a field of the range's element type
            ValueSource::Numeric {
                path: range.path.clone(),
                kind: match &range.kind {
                    RangeKind::Date(format) => NumericKind::Date(format.clone()),
                    RangeKind::Integer | RangeKind::Long => NumericKind::Long,
                    _ => NumericKind::Double,
                },
            }
        }
        None => ValueSource::resolve_params(ctx, &histogram.source, "histogram", Accepts::Numeric)?,
    };
    let format = ValueFormat::for_source(&source, histogram.source.format.as_deref(), None)?;
    let hard = histogram.hard_bounds.clone().unwrap_or(Bounds {
        min: None,
        max: None,
    });
    Ok(Box::new(HistogramFactory {
        source,
        format,
        key_fn: KeyFn::Numeric {
            interval: histogram.interval,
            offset: histogram.offset,
            hard_min: hard.min.unwrap_or(f64::NEG_INFINITY),
            hard_max: hard.max.unwrap_or(f64::INFINITY),
        },
        missing: match &histogram.source.missing {
            None => None,
            Some(v) => Some(f64_param("histogram", "missing", v)?),
        },
        date_bounds: None,
        ranges,
    }))
}

impl Factory for HistogramFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        if let Some(range) = &self.ranges {
            return Ok(Box::new(RangeHistogramCollector::new(
                range.clone(),
                self.key_fn.clone(),
                self.format.clone(),
                self.date_bounds,
                subs,
                single_parent,
            )));
        }
        Ok(Box::new(HistogramCollector {
            source: self.source.clone(),
            key_fn: self.key_fn.clone(),
            format: self.format.clone(),
            missing: self.missing,
            date_bounds: self.date_bounds,
            values: None,
            ords: BucketOrds::new(single_parent),
            counts: Vec::new(),
            subs,
            doc_keys: Vec::new(),
            index_ords: IndexOrds::default(),
            single_parent,
        }))
    }
}

struct HistogramCollector {
    source: ValueSource,
    key_fn: KeyFn,
    format: ValueFormat,
    missing: Option<f64>,
    date_bounds: Option<(Option<i64>, Option<i64>)>,
    values: Option<NumericValues>,
    ords: BucketOrds,
    counts: Vec<u64>,
    subs: SubCollectors,
    doc_keys: Vec<u64>,
    /// The ordinals of integer step numbers, for the single-valued, single-parent loop.
    index_ords: IndexOrds,
    single_parent: bool,
}

impl HistogramCollector {
    /// The raw scaling factor of integer sources (for sorted counting).
    fn integer_factor(&self) -> Option<f64> {
        match self.source.numeric_kind()? {
            NumericKind::Long | NumericKind::Date(_) => Some(1.0),
            NumericKind::Scaled(factor) => Some(*factor),
            NumericKind::Double | NumericKind::Boolean => None,
        }
    }

    /// Adds `count` documents to the bucket `key` of the only parent.
    fn add_count(&mut self, key: u64, count: u64) {
        if count > 0 {
            let ord = self.ords.ord(0, key);
            *slot(&mut self.counts, ord) += count;
        }
    }
}

impl Collector for HistogramCollector {
    fn sorted_field(&self) -> Option<&str> {
        let ValueSource::Numeric { path, .. } = &self.source else {
            return None;
        };
        if !self.subs.is_empty() || !self.single_parent || self.missing.is_some() {
            return None;
        }
        let factor = self.integer_factor()?;
        let usable = match &self.key_fn {
            KeyFn::Date { .. } => true,
            KeyFn::Numeric {
                interval, offset, ..
            } => integer_steps(Some(factor), *interval, *offset, None).is_some(),
        };
        usable.then_some(path.as_str())
    }

    fn collect_sorted(&mut self, segment: &SortedSegment) {
        let values = segment.values;
        let range = segment.matching();
        let (mut i, end) = (range.start, range.end);
        let factor = self.integer_factor().unwrap_or(1.0);
        while i < end {
            // one bucket at a time: its key from the first value, its end by binary search
            let (key, next, in_bounds) = match &mut self.key_fn {
                KeyFn::Date {
                    rounding,
                    hard_min,
                    hard_max,
                } => {
                    let key = rounding.round(values[i]);
                    let next = rounding.next(key);
                    (key as u64, next, key >= *hard_min && key <= *hard_max)
                }
                KeyFn::Numeric {
                    interval,
                    offset,
                    hard_min,
                    hard_max,
                } => {
                    let Some((step, start)) = integer_steps(Some(factor), *interval, *offset, None)
                    else {
                        return;
                    };
                    let index = values[i].saturating_sub(start).div_euclid(step);
                    let key = index as f64 * *interval + *offset;
                    let next = start.saturating_add((index + 1).saturating_mul(step));
                    (key.to_bits(), next, key >= *hard_min && key <= *hard_max)
                }
            };
            let j = i + values[i..end].partition_point(|v| *v < next);
            let j = j.max(i + 1);
            if in_bounds {
                self.add_count(key, (j - i) as u64);
            }
            i = j;
        }
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(NumericValues::open(&self.source, segment.reader)?);
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let HistogramCollector {
            values,
            key_fn,
            missing,
            ords,
            counts,
            subs,
            doc_keys,
            index_ords,
            single_parent,
            ..
        } = self;
        let Some(values) = values else {
            return;
        };
        let with_subs = !subs.is_empty();
        if let (
            true,
            true,
            KeyFn::Numeric {
                interval,
                offset,
                hard_min,
                hard_max,
            },
        ) = (*single_parent, values.is_single_valued(), &*key_fn)
        {
            if let Some((step, start)) =
                integer_steps(values.raw_factor(), *interval, *offset, *missing)
            {
                // one value per doc and one parent: no doc can reach a bucket twice, and the
                // ordinal of a step number comes from an array instead of a hash
                let (interval, offset, lo, hi) = (*interval, *offset, *hard_min, *hard_max);
                let divider = StepDivider::new(step, start);
                values.for_each_raw(docs, |p, raw| {
                    let index = divider.index(raw);
                    let mut ord = index_ords.lookup(index);
                    if ord == UNSEEN {
                        let key = index as f64 * interval + offset;
                        ord = if key >= lo && key <= hi {
                            ords.ord(0, key.to_bits())
                        } else {
                            NO_BUCKET
                        };
                        index_ords.remember(index, ord);
                    }
                    if ord != NO_BUCKET {
                        *slot(counts, ord) += 1;
                        if with_subs {
                            subs.push(docs[p], ord);
                        }
                    }
                });
                subs.flush();
                return;
            }
        }
        // each (position, key) as it is read: a multi-valued doc counts once per bucket
        let mut previous = u32::MAX;
        let mut add = |position: usize, key: u64| {
            let position = position as u32;
            if position != previous {
                doc_keys.clear();
                previous = position;
            } else if doc_keys.contains(&key) {
                return;
            }
            doc_keys.push(key);
            let ord = ords.ord(parents[position as usize], key);
            *slot(counts, ord) += 1;
            if with_subs {
                subs.push(docs[position as usize], ord);
            }
        };
        match key_fn {
            KeyFn::Numeric {
                interval,
                offset,
                hard_min,
                hard_max,
            } => {
                let (interval, offset, lo, hi) = (*interval, *offset, *hard_min, *hard_max);
                match integer_steps(values.raw_factor(), interval, offset, *missing) {
                    // integers with whole intervals: integer division, the same buckets
                    Some((step, start)) => values.for_each_raw(docs, |p, raw| {
                        let index = raw.saturating_sub(start).div_euclid(step);
                        let key = index as f64 * interval + offset;
                        if key >= lo && key <= hi {
                            add(p, key.to_bits());
                        }
                    }),
                    None => values.for_each_f64_or(docs, *missing, |p, v| {
                        let key = floor((v - offset) / interval) * interval + offset;
                        if key >= lo && key <= hi {
                            add(p, key.to_bits());
                        }
                    }),
                }
            }
            KeyFn::Date {
                rounding,
                hard_min,
                hard_max,
            } => {
                let (lo, hi) = (*hard_min, *hard_max);
                match *missing {
                    None => values.for_each_i64(docs, |p, v| {
                        let key = rounding.round(v);
                        if key >= lo && key <= hi {
                            add(p, key as u64);
                        }
                    }),
                    Some(missing) => values.for_each_f64_or(docs, Some(missing), |p, v| {
                        let key = rounding.round(v as i64);
                        if key >= lo && key <= hi {
                            add(p, key as u64);
                        }
                    }),
                }
            }
        }
        subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let pairs = self.ords.buckets_of(parent).to_vec();
        build_buckets(
            &pairs,
            &self.key_fn,
            &self.counts,
            &mut self.subs,
            &self.format,
            self.date_bounds,
        )
    }
}

/// The intermediate result of one parent's buckets (`(key, ordinal)` pairs, keys as
/// [`KeyFn`] encodes them), sorted by key: shared by the histograms over numbers and over
/// ranges.
pub(crate) fn build_buckets(
    pairs: &[(u64, u32)],
    key_fn: &KeyFn,
    counts: &[u64],
    subs: &mut SubCollectors,
    format: &ValueFormat,
    date_bounds: Option<(Option<i64>, Option<i64>)>,
) -> Result<InternalAgg> {
    if matches!(key_fn, KeyFn::Date { .. }) {
        let mut buckets = Vec::with_capacity(pairs.len());
        for &(key, ord) in pairs {
            buckets.push(Bucket {
                key: key as i64,
                doc_count: counts[ord as usize],
                subs: subs.build(ord)?,
            });
        }
        buckets.sort_by_key(|b| b.key);
        return Ok(InternalAgg::DateHistogram(InternalDateHistogram {
            buckets,
            format: format.clone(),
            bounds: date_bounds,
        }));
    }
    let mut buckets = Vec::with_capacity(pairs.len());
    for &(key, ord) in pairs {
        buckets.push(Bucket {
            key: f64::from_bits(key),
            doc_count: counts[ord as usize],
            subs: subs.build(ord)?,
        });
    }
    buckets.sort_by(|a, b| a.key.total_cmp(&b.key));
    Ok(InternalAgg::Histogram(InternalHistogram {
        buckets,
        format: format.clone(),
    }))
}

// ---- intermediate results ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket<K> {
    pub key: K,
    pub doc_count: u64,
    pub subs: InternalAggregations,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalHistogram {
    /// Sorted by key.
    pub buckets: Vec<Bucket<f64>>,
    pub format: ValueFormat,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalDateHistogram {
    /// Sorted by key.
    pub buckets: Vec<Bucket<i64>>,
    pub format: ValueFormat,
    /// `extended_bounds` in millis, resolved by the shard.
    pub bounds: Option<(Option<i64>, Option<i64>)>,
}

/// A totally ordered f64 for merging keys.
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

fn merge_buckets<K: Ord + Copy>(
    parts: impl IntoIterator<Item = Vec<Bucket<K>>>,
    subs: &[AggRequest],
) -> Result<Vec<Bucket<K>>> {
    let mut merged: BTreeMap<K, (u64, Vec<InternalAggregations>)> = BTreeMap::new();
    for part in parts {
        for bucket in part {
            let entry = merged.entry(bucket.key).or_default();
            entry.0 += bucket.doc_count;
            entry.1.push(bucket.subs);
        }
    }
    merged
        .into_iter()
        .map(|(key, (doc_count, parts))| {
            Ok(Bucket {
                key,
                doc_count,
                subs: InternalAggregations::reduce(parts, subs)?,
            })
        })
        .collect()
}

impl InternalHistogram {
    pub fn reduce(
        parts: Vec<InternalHistogram>,
        request: &AggRequest,
    ) -> Result<InternalHistogram> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let buckets = merge_buckets(
            parts.into_iter().map(|p| {
                p.buckets
                    .into_iter()
                    .map(|b| Bucket {
                        key: OrdF64(b.key),
                        doc_count: b.doc_count,
                        subs: b.subs,
                    })
                    .collect()
            }),
            &request.subs,
        )?;
        Ok(InternalHistogram {
            buckets: buckets
                .into_iter()
                .map(|b| Bucket {
                    key: b.key.0,
                    doc_count: b.doc_count,
                    subs: b.subs,
                })
                .collect(),
            format,
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
        let AggKind::Histogram(h) = &request.kind else {
            return Err(Error::illegal_state("histogram result for another request"));
        };
        let mut buckets = self.buckets;
        if h.min_doc_count == 0 {
            let (lo, hi) = match &h.extended_bounds {
                Some(b) => (
                    b.min.map(|m| round_numeric(m, h.interval, h.offset)),
                    b.max.map(|m| round_numeric(m, h.interval, h.offset)),
                ),
                None => (None, None),
            };
            let hard = h.hard_bounds.clone().unwrap_or(Bounds {
                min: None,
                max: None,
            });
            let first = min_opt(buckets.first().map(|b| b.key), lo);
            let last = max_opt(buckets.last().map(|b| b.key), hi);
            if let (Some(first), Some(last)) = (first, last) {
                let first = hard.min.map_or(first, |m| first.max(round_up(m, h)));
                let last = hard.max.map_or(last, |m| last.min(m));
                // in floats, checked before anything is allocated: with a tiny interval or
                // extreme bounds the step count is beyond any integer (or not finite)
                let steps = ((last - first) / h.interval).round();
                ctx.check_room(steps + 1.0 - buckets.len() as f64)?;
                let expected = steps.max(0.0) as usize + 1;
                ctx.add_buckets(expected.saturating_sub(buckets.len()))?;
                let empty = InternalAggregations::empty(&request.subs);
                let mut filled = Vec::with_capacity(expected);
                let mut existing = buckets.into_iter().peekable();
                let mut previous = f64::NEG_INFINITY;
                // at most the steps counted above: where `key + interval == key` (keys far
                // larger than the interval, e.g. a huge offset) the key would never pass `last`
                for i in 0..=expected as u64 {
                    let key = first + i as f64 * h.interval;
                    let key = round_numeric(key, h.interval, h.offset);
                    if key > last + h.interval * 1e-9 {
                        break;
                    }
                    if key <= previous {
                        continue;
                    }
                    previous = key;
                    while existing
                        .peek()
                        .is_some_and(|b| b.key < key - h.interval * 1e-9)
                    {
                        filled.push(existing.next().unwrap());
                    }
                    match existing.peek() {
                        Some(b) if (b.key - key).abs() <= h.interval * 1e-9 => {
                            filled.push(existing.next().unwrap())
                        }
                        _ => filled.push(Bucket {
                            key,
                            doc_count: 0,
                            subs: empty.clone(),
                        }),
                    }
                }
                filled.extend(existing);
                buckets = filled;
            }
        } else {
            buckets.retain(|b| b.doc_count >= h.min_doc_count);
        }
        let mut buckets: Vec<Bucket<OrdF64>> = buckets
            .into_iter()
            .map(|b| Bucket {
                key: OrdF64(b.key),
                doc_count: b.doc_count,
                subs: b.subs,
            })
            .collect();
        if h.order != BucketOrder::key_asc() {
            h.order.sort(
                &mut buckets,
                &request.subs,
                |b| &b.key,
                |b| b.doc_count,
                |b| &b.subs,
            );
        }
        ctx.add_buckets(buckets.len())?;
        let formatter = self.format.formatter();
        let rendered = buckets
            .into_iter()
            .map(|b| {
                let mut out = Map::new();
                let text = formatter.as_string(b.key.0);
                if let Some(text) = &text {
                    out.insert("key_as_string".into(), json!(text));
                }
                out.insert("key".into(), json!(b.key.0));
                out.insert("doc_count".into(), json!(b.doc_count));
                render_subs(&mut out, b.subs, &request.subs, ctx)?;
                let name = text.unwrap_or_else(|| java_double(b.key.0));
                Ok((name, Value::Object(out)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(bucket_list(rendered, h.keyed))
    }
}

fn round_numeric(value: f64, interval: f64, offset: f64) -> f64 {
    floor((value - offset) / interval) * interval + offset
}

/// `f64::floor` without a libm call (the baseline x86-64 target has no rounding instruction);
/// exact for the magnitudes bucket indexes have.
#[inline]
fn floor(x: f64) -> f64 {
    if x.abs() >= 4_503_599_627_370_496.0 || x.is_nan() {
        return x.floor();
    }
    let truncated = x as i64 as f64;
    if truncated > x {
        truncated - 1.0
    } else {
        truncated
    }
}

/// Step numbers `(raw - start).div_euclid(step)` without a hardware division per value (the
/// division was the longest link of the histogram's per-document chain). For offsets below
/// 2^32 and steps in [2, 2^32), the high half of the product with `ceil(2^64 / step)` is the
/// exact quotient (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019);
/// other values take the division.
#[derive(Clone, Copy)]
struct StepDivider {
    start: i64,
    step: i64,
    /// `ceil(2^64 / step)`, or 0 when the multiplication does not apply.
    magic: u64,
}

impl StepDivider {
    fn new(step: i64, start: i64) -> StepDivider {
        let magic = if (2..=u32::MAX as i64).contains(&step) {
            (u64::MAX / step as u64) + 1
        } else {
            0
        };
        StepDivider { start, step, magic }
    }

    #[inline]
    fn index(&self, raw: i64) -> i64 {
        let offset = raw.saturating_sub(self.start);
        if self.magic != 0 && (0..=u32::MAX as i64).contains(&offset) {
            ((self.magic as u128 * offset as u128) >> 64) as i64
        } else {
            offset.div_euclid(self.step)
        }
    }
}

/// For columns of integers worth `raw × (1 / factor)`, with a whole interval and offset: the
/// interval and offset in raw units, so that buckets come from integer division (which gives
/// the same buckets as the floating formula for whole intervals).
fn integer_steps(
    factor: Option<f64>,
    interval: f64,
    offset: f64,
    missing: Option<f64>,
) -> Option<(i64, i64)> {
    let factor = factor?;
    if missing.is_some() || interval.fract() != 0.0 || offset.fract() != 0.0 {
        return None;
    }
    // values are `raw × (1 / factor)`: when that inverse is not below the exact one (true of
    // 10, 100, 1000, ...), no value lands below the integer its raw form says it reaches
    if (1.0 / factor).mul_add(factor, -1.0) < 0.0 {
        return None;
    }
    let step = interval * factor;
    let start = offset * factor;
    let whole = |x: f64| x.fract() == 0.0 && x.abs() < 9.0e15;
    (whole(step) && whole(start) && step > 0.0).then_some((step as i64, start as i64))
}

fn round_up(value: f64, h: &HistogramRequest) -> f64 {
    let key = round_numeric(value, h.interval, h.offset);
    if key < value {
        key + h.interval
    } else {
        key
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A double as Java prints it (`1.0`, `-3.0`, `1.4200704E12`), for `keyed` bucket names.
pub fn java_double(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e7 {
        return format!("{value:.1}");
    }
    if value.is_finite() && value.abs() >= 1e-3 && value.abs() < 1e7 {
        return format!("{value}");
    }
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let exponent = value.abs().log10().floor() as i32;
    let mantissa = value / 10f64.powi(exponent);
    let mut text = format!("{mantissa}");
    if !text.contains('.') {
        text.push_str(".0");
    }
    format!("{text}E{exponent}")
}

/// Buckets as a list, or as an object keyed by bucket name (`keyed: true`).
pub fn bucket_list(buckets: Vec<(String, Value)>, keyed: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if keyed {
        out.insert(
            "buckets".into(),
            Value::Object(buckets.into_iter().collect()),
        );
    } else {
        out.insert(
            "buckets".into(),
            Value::Array(buckets.into_iter().map(|(_, b)| b).collect()),
        );
    }
    out
}

impl InternalDateHistogram {
    pub fn reduce(
        parts: Vec<InternalDateHistogram>,
        request: &AggRequest,
    ) -> Result<InternalDateHistogram> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let bounds = parts.iter().find_map(|p| p.bounds);
        let buckets = merge_buckets(parts.into_iter().map(|p| p.buckets), &request.subs)?;
        Ok(InternalDateHistogram {
            buckets,
            format,
            bounds,
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
        let AggKind::DateHistogram(h) = &request.kind else {
            return Err(Error::illegal_state(
                "date_histogram result for another request",
            ));
        };
        let mut rounding = h.rounding()?;
        let mut buckets = self.buckets;
        if h.min_doc_count == 0 {
            let (lo, hi) = self.bounds.unwrap_or((None, None));
            let lo = lo.map(|m| rounding.round(m));
            let hi = hi.map(|m| rounding.round(m));
            let first = [buckets.first().map(|b| b.key), lo]
                .into_iter()
                .flatten()
                .min();
            let last = [buckets.last().map(|b| b.key), hi]
                .into_iter()
                .flatten()
                .max();
            if let (Some(first), Some(last)) = (first, last) {
                // at least this many buckets lie between the ends (each at most the longest
                // a bucket of the interval can be): fail before building any of them
                let at_least = (last as f64 - first as f64) / longest_bucket(rounding.interval());
                ctx.check_room(at_least.floor() + 1.0 - buckets.len() as f64)?;
                let empty = InternalAggregations::empty(&request.subs);
                let mut filled = Vec::new();
                let mut existing = buckets.into_iter().peekable();
                let mut key = first;
                let mut added = 0usize;
                while key <= last {
                    while existing.peek().is_some_and(|b| b.key < key) {
                        filled.push(existing.next().unwrap());
                    }
                    if existing.peek().is_some_and(|b| b.key == key) {
                        filled.push(existing.next().unwrap());
                    } else {
                        added += 1;
                        if added.is_multiple_of(1024) {
                            ctx.add_buckets(1024)?;
                        }
                        filled.push(Bucket {
                            key,
                            doc_count: 0,
                            subs: empty.clone(),
                        });
                    }
                    let next = rounding.next(key);
                    if next <= key {
                        break;
                    }
                    key = next;
                }
                ctx.add_buckets(added % 1024)?;
                filled.extend(existing);
                buckets = filled;
            }
        } else {
            buckets.retain(|b| b.doc_count >= h.min_doc_count);
        }
        if h.order != BucketOrder::key_asc() {
            h.order.sort(
                &mut buckets,
                &request.subs,
                |b| &b.key,
                |b| b.doc_count,
                |b| &b.subs,
            );
        }
        ctx.add_buckets(buckets.len())?;
        let formatter = self.format.formatter();
        let rendered = buckets
            .into_iter()
            .map(|b| {
                let mut out = Map::new();
                let text = formatter
                    .as_string(b.key as f64)
                    .unwrap_or_else(|| b.key.to_string());
                out.insert("key_as_string".into(), json!(text));
                out.insert("key".into(), json!(b.key));
                out.insert("doc_count".into(), json!(b.doc_count));
                render_subs(&mut out, b.subs, &request.subs, ctx)?;
                Ok((text, Value::Object(out)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(bucket_list(rendered, h.keyed))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn step_divider_matches_the_euclidean_division() {
        let raws = [
            i64::MIN,
            -1_000_001,
            -7,
            -1,
            0,
            1,
            99,
            100,
            101,
            4_294_967_295,
            4_294_967_296,
            u32::MAX as i64 + 17,
            i64::MAX - 3,
            i64::MAX,
        ];
        let steps = [
            1,
            2,
            3,
            7,
            100,
            1000,
            65_536,
            1 << 31,
            u32::MAX as i64,
            1 << 40,
        ];
        for step in steps {
            for start in [0, -5, 250, i64::MIN, i64::MAX] {
                let divider = StepDivider::new(step, start);
                let check = |raw: i64| {
                    let expected = raw.saturating_sub(start).div_euclid(step);
                    assert_eq!(
                        divider.index(raw),
                        expected,
                        "raw {raw} step {step} start {start}"
                    );
                };
                raws.iter().for_each(|raw| check(*raw));
                // every quotient boundary of the multiplication's range, and pseudo-random offsets
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
                for _ in 0..2000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let offset = (x % (u32::MAX as u64 + 1)) as i64;
                    let q = offset / step;
                    for around in [q * step - 1, q * step, q * step + step - 1, offset] {
                        check(start.saturating_add(around));
                    }
                }
            }
        }
    }

    use super::*;
    use crate::internal::DEFAULT_MAX_BUCKETS;
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn request(body: Value) -> AggRequest {
        parse_aggregations(&json!({"h": body})).unwrap().remove(0)
    }

    fn bucket(key: f64, doc_count: u64) -> Bucket<f64> {
        Bucket {
            key,
            doc_count,
            subs: InternalAggregations::default(),
        }
    }

    #[test]
    fn parse_rejects_bad_intervals() {
        let e = parse_aggregations(&json!({"x": {"histogram": {"field": "n", "interval": 0}}}))
            .unwrap_err();
        assert_eq!(e.reason(), "[histogram] failed to parse field [interval]");
        assert_eq!(
            e.cause().unwrap().reason(),
            "[interval] must be >0 for histogram aggregation [x]"
        );
    }

    #[test]
    fn fills_gaps_and_extended_bounds_keyed() {
        let r = request(
            json!({"histogram": {"field": "n", "interval": 2, "offset": 1,
            "keyed": true, "extended_bounds": {"min": -3, "max": 12}}}),
        );
        let h = InternalHistogram {
            buckets: vec![bucket(1.0, 1), bucket(5.0, 2), bucket(7.0, 1)],
            format: ValueFormat::Raw,
        };
        let out = h.render(&r, &mut RenderContext::new(100)).unwrap();
        let keys: Vec<&String> = out["buckets"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["-3.0", "-1.0", "1.0", "3.0", "5.0", "7.0", "9.0", "11.0"]
        );
        assert_eq!(out["buckets"]["5.0"]["doc_count"], 2);
    }

    #[test]
    fn a_huge_offset_does_not_fill_empty_buckets_forever() {
        // keys near -1e308 do not change when the interval is added: the fill must stop
        let r = request(
            json!({"histogram": {"field": "n", "interval": 2147483648u64,
            "offset": -1e308, "min_doc_count": 0,
            "extended_bounds": {"min": -1e18, "max": 1e18}}}),
        );
        let AggKind::Histogram(hist) = &r.kind else {
            unreachable!()
        };
        let key = round_numeric(1.0, hist.interval, hist.offset);
        let h = InternalHistogram {
            buckets: vec![bucket(key, 1)],
            format: ValueFormat::Raw,
        };
        let out = h.render(&r, &mut RenderContext::new(65535)).unwrap();
        assert!(out["buckets"].as_array().unwrap().len() <= 3, "{out:?}");
    }

    #[test]
    fn reduce_merges_by_key_in_any_grouping() {
        let r = request(json!({"histogram": {"field": "n", "interval": 1}}));
        let parts = || {
            vec![
                InternalHistogram {
                    buckets: vec![bucket(1.0, 1), bucket(3.0, 2)],
                    format: ValueFormat::Raw,
                },
                InternalHistogram {
                    buckets: vec![bucket(2.0, 5), bucket(3.0, 1)],
                    format: ValueFormat::Raw,
                },
                InternalHistogram::default(),
            ]
        };
        let all = InternalHistogram::reduce(parts(), &r).unwrap();
        assert_eq!(
            all.buckets.iter().map(|b| b.doc_count).collect::<Vec<_>>(),
            [1, 5, 3]
        );
        let mut p = parts();
        let last = p.pop().unwrap();
        let grouped =
            InternalHistogram::reduce(vec![InternalHistogram::reduce(p, &r).unwrap(), last], &r)
                .unwrap();
        assert_eq!(all, grouped);
    }

    #[test]
    fn too_many_empty_buckets_fail() {
        let r = request(json!({"histogram": {"field": "n", "interval": 1}}));
        let h = InternalHistogram {
            buckets: vec![bucket(0.0, 1), bucket(1e6, 1)],
            format: ValueFormat::Raw,
        };
        let e = h.render(&r, &mut RenderContext::new(1000)).unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
    }

    /// Step counts beyond any integer (a tiny interval, extreme bounds) fail at once; before
    /// the check they wrapped to a count of zero and the fill grew without end.
    #[test]
    fn huge_fills_fail_before_allocating() {
        let h = |buckets| InternalHistogram {
            buckets,
            format: ValueFormat::Raw,
        };
        let tiny = request(json!({"histogram": {"field": "n", "interval": 1e-300}}));
        let e = h(vec![bucket(0.0, 1), bucket(100.0, 1)])
            .render(&tiny, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
            .unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
        // the step count is infinite: reported as the largest count
        let subnormal = request(json!({"histogram": {"field": "n", "interval": 5e-324}}));
        let e = h(vec![bucket(-1e300, 1), bucket(1e300, 1)])
            .render(&subnormal, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
            .unwrap_err();
        assert!(
            e.reason().contains(&format!("but was [{}]", usize::MAX)),
            "{}",
            e.reason()
        );
        let wide = request(json!({"histogram": {"field": "n", "interval": 1,
            "extended_bounds": {"min": -1e300, "max": 1e300}}}));
        let e = h(vec![])
            .render(&wide, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
            .unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
        // bounds within budget still fill
        let ok = request(json!({"histogram": {"field": "n", "interval": 1,
            "extended_bounds": {"min": 0, "max": 9}}}));
        let out = h(vec![bucket(3.0, 2)])
            .render(&ok, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
            .unwrap();
        assert_eq!(out["buckets"].as_array().unwrap().len(), 10);
    }

    /// Keys so large that `key + interval == key`: the fill used to loop forever there.
    #[test]
    fn fill_ends_where_keys_stop_advancing() {
        let r = request(json!({"histogram": {"field": "n", "interval": 1,
            "extended_bounds": {"min": 1e20, "max": 1e20}}}));
        let h = InternalHistogram {
            buckets: vec![bucket(1e20, 1)],
            format: ValueFormat::Raw,
        };
        let out = h.render(&r, &mut RenderContext::new(10)).unwrap();
        assert_eq!(out["buckets"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn huge_date_fills_fail_before_allocating() {
        let r = request(
            json!({"date_histogram": {"field": "d", "fixed_interval": "1ms",
            "min_doc_count": 0}}),
        );
        let date = |key| Bucket {
            key,
            doc_count: 1,
            subs: InternalAggregations::default(),
        };
        let h = InternalDateHistogram {
            buckets: vec![date(i64::MIN / 2), date(i64::MAX / 2)],
            format: ValueFormat::Raw,
            bounds: None,
        };
        let mut ctx = RenderContext::new(DEFAULT_MAX_BUCKETS);
        let e = h.render(&r, &mut ctx).unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
        // a calendar year over the same span: ~292 million years is still too many
        let r = request(
            json!({"date_histogram": {"field": "d", "calendar_interval": "year",
            "min_doc_count": 0}}),
        );
        let h = InternalDateHistogram {
            buckets: vec![date(i64::MIN / 2), date(i64::MAX / 2)],
            format: ValueFormat::Raw,
            bounds: None,
        };
        let e = h
            .render(&r, &mut RenderContext::new(DEFAULT_MAX_BUCKETS))
            .unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
    }

    #[test]
    fn fast_floor_and_integer_steps_agree_with_floating_buckets() {
        for x in [
            -2.5,
            -2.0,
            -0.1,
            0.0,
            0.3,
            1.0,
            2.9999999999999996,
            1e17,
            -1e17,
        ] {
            assert_eq!(floor(x), x.floor(), "{x}");
        }
        // trip distances stored ×100, interval 1: raw 1234 is 12.34, bucket 12
        let (step, start) = integer_steps(Some(100.0), 1.0, 0.0, None).unwrap();
        for raw in [-250i64, -1, 0, 99, 100, 1234, 4999] {
            let index = (raw - start).div_euclid(step);
            let floating = floor((raw as f64 / 100.0) / 1.0);
            assert_eq!(index as f64, floating, "{raw}");
        }
        assert!(integer_steps(Some(100.0), 0.1, 0.0, None).is_none());
        // 1/3 rounds down: 3 × (1/3) could fall below 1, so no integer shortcut
        assert!(integer_steps(Some(3.0), 1.0, 0.0, None).is_none());
        assert!(integer_steps(None, 1.0, 0.0, None).is_none());
        assert!(integer_steps(Some(1.0), 1.0, 0.0, Some(3.0)).is_none());
    }

    #[test]
    fn java_doubles() {
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(-3.0), "-3.0");
        assert_eq!(java_double(2.5), "2.5");
        assert_eq!(java_double(1.4200704e12), "1.4200704E12");
    }
}
