//! `histogram` and `date_histogram` on range fields: a document falls in every bucket one of
//! its ranges overlaps, once per bucket, as OpenSearch's `RangeHistogramAggregator` and
//! `DateRangeHistogramAggregator` count it.
//!
//! A document's ranges are taken in order of their lower bound (then upper bound), as
//! OpenSearch decodes them; each range covers the buckets from the one holding its lower
//! bound (raised to `hard_bounds.min`) to the one holding its upper bound (lowered to
//! `hard_bounds.max`), skipping buckets an earlier range of the document already counted. The
//! results are the ordinary histogram results, so reduce and rendering (`min_doc_count`,
//! `extended_bounds`, `keyed`, `order`) are shared.
//!
//! A range with an open end spans an unbounded number of buckets (OpenSearch loops forever or
//! trips its circuit breaker on one); a range spanning more than [`MAX_SPAN`] buckets fails the
//! request with `too_many_buckets_exception` instead.

use tantivy::columnar::Column;
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_mapping::range::RangeKind;

use crate::bucket::date_histogram::{DateInterval, MILLIS_PER_DAY};
use crate::bucket::histogram::{build_buckets, KeyFn};
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::InternalAgg;
use crate::ords::{slot, BucketOrds};
use crate::values::RangeSource;
use tessera_date::CalendarUnit;

/// The most buckets one range may span.
pub const MAX_SPAN: u64 = 1 << 20;

/// Checks that a range field can feed this histogram, with OpenSearch's messages.
pub(crate) fn check_source(range: &RangeSource, date: bool, has_missing: bool) -> Result<()> {
    if has_missing {
        return Err(Error::illegal_argument(
            "Can't apply missing values on a class org.opensearch.search.aggregations.support.ValuesSource$Range",
        ));
    }
    let is_date = matches!(range.kind, RangeKind::Date(_));
    if date && !is_date {
        return Err(Error::illegal_argument(format!(
            "Expected date range type but found range type [{}]",
            range.kind.field_type().name()
        )));
    }
    if !date && range.kind == RangeKind::Ip {
        return Err(Error::illegal_argument(
            "Expected numeric range type but found non-numeric range [ip_range]",
        ));
    }
    Ok(())
}

enum Columns {
    I64(Column<i64>, Column<i64>),
    F64(Column<f64>, Column<f64>),
}

pub(crate) struct RangeHistogramCollector {
    source: RangeSource,
    key_fn: KeyFn,
    format: ValueFormat,
    date_bounds: Option<(Option<i64>, Option<i64>)>,
    columns: Option<Columns>,
    ords: BucketOrds,
    counts: Vec<u64>,
    subs: SubCollectors,
    /// The current document's ranges, sorted.
    ranges_i64: Vec<(i64, i64)>,
    ranges_f64: Vec<(f64, f64)>,
    /// The span of the first range that spanned too many buckets.
    too_wide: Option<u64>,
}

impl RangeHistogramCollector {
    pub(crate) fn new(
        source: RangeSource,
        key_fn: KeyFn,
        format: ValueFormat,
        date_bounds: Option<(Option<i64>, Option<i64>)>,
        subs: SubCollectors,
        single_parent: bool,
    ) -> RangeHistogramCollector {
        RangeHistogramCollector {
            source,
            key_fn,
            format,
            date_bounds,
            columns: None,
            ords: BucketOrds::new(single_parent),
            counts: Vec::new(),
            subs,
            ranges_i64: Vec::new(),
            ranges_f64: Vec::new(),
            too_wide: None,
        }
    }
}

/// The shortest a bucket of `interval` can be, in milliseconds (a day is 23 hours when a
/// time zone springs forward).
fn shortest_bucket(interval: &DateInterval) -> i64 {
    const HOUR: i64 = 3_600_000;
    match interval {
        DateInterval::Fixed(ms) => (*ms).max(1),
        DateInterval::Calendar(unit) => match unit {
            CalendarUnit::Second => 1_000,
            CalendarUnit::Minute => 60_000,
            CalendarUnit::Hour => HOUR,
            CalendarUnit::Day => MILLIS_PER_DAY - HOUR,
            CalendarUnit::Week => 7 * MILLIS_PER_DAY - HOUR,
            CalendarUnit::Month => 28 * MILLIS_PER_DAY - HOUR,
            CalendarUnit::Quarter => 89 * MILLIS_PER_DAY - HOUR,
            CalendarUnit::Year => 365 * MILLIS_PER_DAY - HOUR,
        },
    }
}

impl Collector for RangeHistogramCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        let fast = segment.reader.fast_fields();
        let open = |e: tantivy::TantivyError| Error::internal("open a range column", e);
        self.columns = match self.source.kind {
            RangeKind::Float | RangeKind::Double => match (
                fast.column_opt::<f64>(&self.source.from).map_err(open)?,
                fast.column_opt::<f64>(&self.source.to).map_err(open)?,
            ) {
                (Some(from), Some(to)) => Some(Columns::F64(from, to)),
                _ => None,
            },
            RangeKind::Ip => None,
            _ => match (
                fast.column_opt::<i64>(&self.source.from).map_err(open)?,
                fast.column_opt::<i64>(&self.source.to).map_err(open)?,
            ) {
                (Some(from), Some(to)) => Some(Columns::I64(from, to)),
                _ => None,
            },
        };
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let RangeHistogramCollector {
            key_fn,
            columns,
            ords,
            counts,
            subs,
            ranges_i64,
            ranges_f64,
            too_wide,
            ..
        } = self;
        let Some(columns) = columns else {
            return;
        };
        if too_wide.is_some() {
            return;
        }
        let with_subs = !subs.is_empty();
        for (position, &doc) in docs.iter().enumerate() {
            let parent = parents[position];
            let mut add = |key: u64| {
                let ord = ords.ord(parent, key);
                *slot(counts, ord) += 1;
                if with_subs {
                    subs.push(doc, ord);
                }
            };
            match (&mut *key_fn, &*columns) {
                (
                    KeyFn::Numeric {
                        interval,
                        offset,
                        hard_min,
                        hard_max,
                    },
                    _,
                ) => {
                    ranges_f64.clear();
                    match columns {
                        Columns::F64(from, to) => {
                            ranges_f64.extend(from.values_for_doc(doc).zip(to.values_for_doc(doc)))
                        }
                        Columns::I64(from, to) => ranges_f64.extend(
                            from.values_for_doc(doc)
                                .zip(to.values_for_doc(doc))
                                .map(|(a, b)| (a as f64, b as f64)),
                        ),
                    }
                    if ranges_f64.is_empty() {
                        continue;
                    }
                    ranges_f64.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
                    let (interval, offset) = (*interval, *offset);
                    let mut previous = f64::NEG_INFINITY;
                    for &(from, to) in ranges_f64.iter() {
                        let start = ((from.max(*hard_min) - offset) / interval).floor();
                        let end = ((to.min(*hard_max) - offset) / interval).floor();
                        let first = start.max(previous);
                        // also skips NaN bounds
                        if first.partial_cmp(&end).is_none_or(|o| o.is_gt()) {
                            continue;
                        }
                        let span = end - first;
                        if !span.is_finite() || span >= MAX_SPAN as f64 {
                            *too_wide = Some(if span.is_finite() {
                                span as u64 + 1
                            } else {
                                u64::MAX
                            });
                            return;
                        }
                        // indices as counted steps: at huge magnitudes `i + 1.0 == i`
                        let mut last = previous;
                        for step in 0..=span as u64 {
                            let index = first + step as f64;
                            if index > last {
                                add((index * interval + offset).to_bits());
                                last = index;
                            }
                        }
                        if end > previous {
                            previous = end;
                        }
                    }
                }
                (
                    KeyFn::Date {
                        rounding,
                        hard_min,
                        hard_max,
                    },
                    Columns::I64(from, to),
                ) => {
                    ranges_i64.clear();
                    ranges_i64.extend(from.values_for_doc(doc).zip(to.values_for_doc(doc)));
                    if ranges_i64.is_empty() {
                        continue;
                    }
                    ranges_i64.sort_unstable();
                    let shortest = shortest_bucket(rounding.interval()) as i128;
                    let mut previous = i64::MIN;
                    for &(from, to) in ranges_i64.iter() {
                        let (from, to) = (from.max(*hard_min), to.min(*hard_max));
                        // an estimate before any calendar arithmetic on extreme dates
                        let estimate = (to as i128 - from as i128) / shortest + 1;
                        if estimate > MAX_SPAN as i128 {
                            *too_wide = Some(estimate.min(u64::MAX as i128) as u64);
                            return;
                        }
                        let start = rounding.round(from);
                        let end = rounding.round(to);
                        let mut key = start.max(previous);
                        while key <= end {
                            if key != previous {
                                add(key as u64);
                            }
                            let next = rounding.next(key);
                            if next <= key {
                                break;
                            }
                            key = next;
                        }
                        if end > previous {
                            previous = end;
                        }
                    }
                }
                (KeyFn::Date { .. }, Columns::F64(..)) => {}
            }
        }
        subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        if let Some(span) = self.too_wide {
            return Err(Error::new(
                "too_many_buckets_exception",
                503,
                format!(
                    "Trying to create too many buckets: a range of field [{}] spans [{span}] buckets, more than the [{MAX_SPAN}] one range may span",
                    self.source.path
                ),
            ));
        }
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
