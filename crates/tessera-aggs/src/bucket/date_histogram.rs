//! `date_histogram`: buckets by calendar or fixed intervals in a time zone, and the
//! [`Rounding`] it (and `auto_date_histogram`) uses to key dates.
//!
//! Rounding is the per-value hot path, so the common cases are plain arithmetic: fixed
//! intervals, and calendar units up to a week in a fixed-offset zone. Months, quarters, years
//! and zones with daylight saving go through the calendar code, with the last bucket cached
//! (dates of one query tend to fall in few buckets).

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_date::{parse_date_math, parse_fixed_interval, CalendarUnit, DateFormat, TimeZone};

use crate::bucket::histogram::{Bounds, HistogramFactory, KeyFn};
use crate::bucket::order::BucketOrder;
use crate::bucket::range_histogram;
use crate::format::ValueFormat;
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, count_param, string_param, unknown_field, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, RangeSource, ValueSource};
use tessera_mapping::range::RangeKind;

pub(crate) const MILLIS_PER_DAY: i64 = 86_400_000;

/// The interval of a date histogram.
#[derive(Clone, Debug, PartialEq)]
pub enum DateInterval {
    Calendar(CalendarUnit),
    /// Milliseconds.
    Fixed(i64),
}

/// At least the longest a bucket of `interval` can be, in milliseconds (a local hour or day
/// grows when a time zone falls back, by up to two hours here; a leap year has 366 days): the spans divided by it give the fewest buckets an
/// empty-bucket fill can produce.
pub(crate) fn longest_bucket(interval: &DateInterval) -> f64 {
    const HOUR: i64 = 3_600_000;
    let ms = match interval {
        DateInterval::Fixed(ms) => (*ms).max(1),
        DateInterval::Calendar(unit) => match unit {
            CalendarUnit::Second => 1_000,
            CalendarUnit::Minute => 60_000,
            CalendarUnit::Hour => 2 * HOUR,
            CalendarUnit::Day => MILLIS_PER_DAY + 2 * HOUR,
            CalendarUnit::Week => 7 * MILLIS_PER_DAY + 2 * HOUR,
            CalendarUnit::Month => 31 * MILLIS_PER_DAY + 2 * HOUR,
            CalendarUnit::Quarter => 92 * MILLIS_PER_DAY + 2 * HOUR,
            CalendarUnit::Year => 366 * MILLIS_PER_DAY + 2 * HOUR,
        },
    };
    ms as f64
}

#[derive(Clone, Debug, PartialEq)]
pub struct DateHistogramRequest {
    pub source: ValuesSourceParams,
    pub interval: Option<DateInterval>,
    pub time_zone: Option<String>,
    /// Milliseconds added to every bucket start.
    pub offset: i64,
    pub min_doc_count: u64,
    pub extended_bounds: Option<Bounds<Value>>,
    pub hard_bounds: Option<Bounds<Value>>,
    pub keyed: bool,
    pub order: BucketOrder,
}

fn failed(key: &str, reason: String) -> Error {
    Error::x_content_parse(format!("[date_histogram] failed to parse field [{key}]"))
        .caused_by(Error::illegal_argument(reason))
}

/// Parses a fixed interval such as `90m` or `2d`.
fn fixed_interval(key: &str, text: &str) -> Result<i64> {
    parse_fixed_interval(text).filter(|ms| *ms > 0).ok_or_else(|| {
        failed(
            key,
            format!(
                "failed to parse setting [date_histogram.fixedInterval] with value [{text}] as a time value: unit is missing or unrecognized"
            ),
        )
    })
}

/// Parses `offset`: `+6h`, `-1d`, or a number of milliseconds.
pub fn parse_offset(agg: &str, value: &Value) -> Result<i64> {
    match value {
        Value::Number(n) => n.as_i64().ok_or_else(|| {
            Error::x_content_parse(format!("[{agg}] failed to parse field [offset]"))
        }),
        Value::String(s) => {
            let (sign, rest) = match s.strip_prefix('-') {
                Some(rest) => (-1, rest),
                None => (1, s.strip_prefix('+').unwrap_or(s)),
            };
            parse_fixed_interval(rest)
                .or_else(|| rest.parse::<i64>().ok())
                .map(|ms| sign * ms)
                .ok_or_else(|| {
                    Error::x_content_parse(format!("[{agg}] failed to parse field [offset]"))
                        .caused_by(Error::illegal_argument(format!(
                            "failed to parse setting [date_histogram.offset] with value [{s}] as a time value: unit is missing or unrecognized"
                        )))
                })
        }
        other => Err(Error::x_content_parse(format!(
            "[{agg}] offset doesn't support values of type: {}",
            if other.is_object() {
                "START_OBJECT"
            } else {
                "VALUE"
            }
        ))),
    }
}

fn parse_value_bounds(key: &str, value: &Value) -> Result<Bounds<Value>> {
    let Value::Object(map) = value else {
        return Err(Error::x_content_parse(format!(
            "[date_histogram] failed to parse field [{key}]"
        )));
    };
    let mut bounds = Bounds {
        min: None,
        max: None,
    };
    for (k, v) in map {
        match k.as_str() {
            "min" => bounds.min = (!v.is_null()).then(|| v.clone()),
            "max" => bounds.max = (!v.is_null()).then(|| v.clone()),
            other => return Err(unknown_field(key, other)),
        }
    }
    Ok(bounds)
}

impl DateHistogramRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<DateHistogramRequest> {
        const AGG: &str = "date_histogram";
        let mut request = DateHistogramRequest {
            source: ValuesSourceParams::default(),
            interval: None,
            time_zone: None,
            offset: 0,
            min_doc_count: 0,
            extended_bounds: None,
            hard_bounds: None,
            keyed: false,
            order: BucketOrder::key_asc(),
        };
        let mut calendar = false;
        let mut fixed = false;
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "calendar_interval" => {
                    let text = string_param(AGG, key, value)?;
                    let unit = CalendarUnit::parse(&text).ok_or_else(|| {
                        failed(
                            key,
                            format!("The supplied interval [{text}] could not be parsed as a calendar interval."),
                        )
                    })?;
                    calendar = true;
                    request.interval = Some(DateInterval::Calendar(unit));
                }
                "fixed_interval" => {
                    let text = string_param(AGG, key, value)?;
                    fixed = true;
                    request.interval = Some(DateInterval::Fixed(fixed_interval(key, &text)?));
                }
                "interval" => {
                    request.interval = Some(match value {
                        Value::Number(n) => {
                            DateInterval::Fixed(n.as_i64().filter(|n| *n > 0).ok_or_else(|| {
                                failed(
                                key,
                                "[interval] must be 1 or greater for aggregation [date_histogram]"
                                    .into(),
                            )
                            })?)
                        }
                        _ => {
                            let text = string_param(AGG, key, value)?;
                            match CalendarUnit::parse(&text) {
                                Some(unit) => DateInterval::Calendar(unit),
                                None => DateInterval::Fixed(fixed_interval(key, &text)?),
                            }
                        }
                    })
                }
                "time_zone" => {
                    let zone = string_param(AGG, key, value)?;
                    TimeZone::parse(&zone).map_err(|e| failed(key, e.message))?;
                    request.time_zone = Some(zone);
                }
                "offset" => request.offset = parse_offset(AGG, value)?,
                "min_doc_count" => request.min_doc_count = count_param(AGG, key, value)?,
                "extended_bounds" => {
                    request.extended_bounds = Some(parse_value_bounds(key, value)?)
                }
                "hard_bounds" => request.hard_bounds = Some(parse_value_bounds(key, value)?),
                "keyed" => request.keyed = bool_param(AGG, key, value)?,
                "order" => request.order = BucketOrder::parse(AGG, value)?,
                _ => return Err(unknown_field(AGG, key)),
            }
            if calendar && fixed {
                return Err(Error::illegal_argument(
                    "Cannot use [fixed_interval] with [calendar_interval] configuration option.",
                ));
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }

    pub fn zone(&self) -> Result<TimeZone> {
        match &self.time_zone {
            None => Ok(TimeZone::utc()),
            Some(z) => TimeZone::parse(z).map_err(|e| Error::illegal_argument(e.message)),
        }
    }

    /// The rounding of this request's buckets.
    pub fn rounding(&self) -> Result<Rounding> {
        let interval = self.interval.clone().ok_or_else(|| {
            Error::illegal_argument("Invalid interval specified, must be non-null and non-empty")
        })?;
        Ok(Rounding::new(interval, self.zone()?, self.offset))
    }
}

/// Turns a date into its bucket's start (UTC millis).
#[derive(Clone, Debug)]
pub struct Rounding {
    interval: DateInterval,
    zone: TimeZone,
    offset: i64,
    /// The zone's offset when it never changes.
    fixed_offset: Option<i64>,
    /// The last calendar bucket `[start, end)`, before the offset is applied.
    cache: Option<(i64, i64)>,
}

impl Rounding {
    pub fn new(interval: DateInterval, zone: TimeZone, offset: i64) -> Rounding {
        Rounding {
            fixed_offset: zone.fixed_offset(),
            interval,
            zone,
            offset,
            cache: None,
        }
    }

    pub fn interval(&self) -> &DateInterval {
        &self.interval
    }

    /// The start of the bucket holding `utc`.
    #[inline]
    pub fn round(&mut self, utc: i64) -> i64 {
        let value = utc.saturating_sub(self.offset);
        let key = match (&self.interval, self.fixed_offset) {
            (DateInterval::Fixed(ms), Some(off)) => floor(value.saturating_add(off), *ms) - off,
            (DateInterval::Calendar(unit), Some(off)) => match unit_millis(*unit) {
                Some(ms) => floor(value.saturating_add(off), ms) - off,
                None if *unit == CalendarUnit::Week => {
                    let days = floor(value.saturating_add(off), MILLIS_PER_DAY) / MILLIS_PER_DAY;
                    // 1970-01-01 was a Thursday: Monday-based weeks start 3 days earlier
                    let monday = days - (days + 3).rem_euclid(7);
                    monday * MILLIS_PER_DAY - off
                }
                None => self.round_calendar(*unit, value),
            },
            (DateInterval::Fixed(ms), None) => {
                let local = value.saturating_add(self.zone.offset_at_utc(value));
                self.zone.local_to_utc(floor(local, *ms))
            }
            (DateInterval::Calendar(unit), None) => self.round_calendar(*unit, value),
        };
        key.saturating_add(self.offset)
    }

    fn round_calendar(&mut self, unit: CalendarUnit, value: i64) -> i64 {
        if let Some((start, end)) = self.cache {
            if value >= start && value < end {
                return start;
            }
        }
        let start = unit.round_down(value, &self.zone);
        let end = unit.next(start, &self.zone);
        self.cache = Some((start, end));
        start
    }

    /// The start of the bucket after the one starting at `key`. A fixed interval in a zone
    /// whose offset changes steps in local time, as [`Rounding::round`] floors there: a day
    /// after a DST change is 23 or 25 hours long (OpenSearch's `nextRoundingValue`).
    pub fn next(&self, key: i64) -> i64 {
        match &self.interval {
            DateInterval::Fixed(ms) if self.fixed_offset.is_none() => {
                let key = key.saturating_sub(self.offset);
                let local = self.zone.utc_to_local(key).saturating_add(*ms);
                self.zone.local_to_utc(local).saturating_add(self.offset)
            }
            DateInterval::Fixed(ms) => key.saturating_add(*ms),
            DateInterval::Calendar(unit) => unit
                .next(key.saturating_sub(self.offset), &self.zone)
                .saturating_add(self.offset),
        }
    }
}

#[inline]
fn floor(value: i64, unit: i64) -> i64 {
    value.div_euclid(unit) * unit
}

fn unit_millis(unit: CalendarUnit) -> Option<i64> {
    Some(match unit {
        CalendarUnit::Second => 1_000,
        CalendarUnit::Minute => 60_000,
        CalendarUnit::Hour => 3_600_000,
        CalendarUnit::Day => MILLIS_PER_DAY,
        _ => return None,
    })
}

/// Parses a date bound or `missing` value (date math, or epoch millis).
pub fn parse_date_value(
    value: &Value,
    format: &DateFormat,
    now: i64,
    zone: Option<&TimeZone>,
) -> Result<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .ok_or_else(|| Error::illegal_argument(format!("cannot parse date [{n}]"))),
        Value::String(s) => parse_date_math(s, format, now, zone, false)
            .map_err(|e| Error::new("parse_exception", 400, e.message)),
        other => Err(Error::illegal_argument(format!(
            "cannot parse date [{other}]"
        ))),
    }
}

/// The date format keys are parsed and shown with: the aggregation's `format`, else the
/// field's (for date fields), else OpenSearch's default.
pub(crate) fn date_format(source: &ValueSource, format: Option<&str>) -> Result<DateFormat> {
    // a value script on a date field keeps the field's format
    match (format, source.shown_as()) {
        (Some(spec), _) => DateFormat::parse(spec).map_err(|e| {
            Error::illegal_argument(format!("Invalid format: [{spec}]: {}", e.message))
        }),
        (None, Some(NumericKind::Date(f))) => Ok(f.clone()),
        _ => Ok(DateFormat::default_format()),
    }
}

/// Bounds as the request wrote them, and parsed to epoch millis.
type GivenBounds<'a> = (&'a Bounds<Value>, (Option<i64>, Option<i64>));

/// The inclusive range of bucket keys that `hard_bounds` lets through. As in OpenSearch, both
/// bounds are rounded to their buckets' keys and the upper one is exclusive: `max: 2025-01-03`
/// (or `2025-01-03T23:00`) stops before the bucket of January 3rd. `extended_bounds` must lie
/// inside them (compared rounded, reported as written).
fn hard_key_bounds(
    mut rounding: Rounding,
    hard: Option<GivenBounds<'_>>,
    extended: Option<GivenBounds<'_>>,
) -> Result<(i64, i64)> {
    let Some((hard_given, (min, max))) = hard else {
        return Ok((i64::MIN, i64::MAX));
    };
    let min = min.map(|m| rounding.round(m));
    let max = max.map(|m| rounding.round(m));
    if let Some((extended_given, (low, high))) = extended {
        let low = low.map(|m| rounding.round(m));
        let high = high.map(|m| rounding.round(m));
        let outside = matches!((high, max), (Some(high), Some(max)) if high > max)
            || matches!((low, min), (Some(low), Some(min)) if low < min);
        if outside {
            let shown = |b: &Bounds<Value>| {
                let one = |v: &Option<Value>| match v {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                format!("{}--{}", one(&b.min), one(&b.max))
            };
            return Err(Error::illegal_argument(format!(
                "Extended bounds have to be inside hard bounds, hard bounds: [{}], extended bounds: [{}]",
                shown(hard_given),
                shown(extended_given)
            )));
        }
    }
    Ok((
        min.unwrap_or(i64::MIN),
        max.map_or(i64::MAX, |m| m.saturating_sub(1)),
    ))
}

pub fn factory(
    request: &AggRequest,
    histogram: &DateHistogramRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    histogram.order.validate(&request.subs)?;
    let rounding = histogram.rounding()?;
    let ranges = match (&histogram.source.field, &histogram.source.script) {
        (Some(field), None) => RangeSource::resolve(ctx.table, field)?,
        _ => None,
    };
    let source = match &ranges {
        Some(range) => {
            range_histogram::check_source(range, true, histogram.source.missing.is_some())?;
            let RangeKind::Date(format) = &range.kind else {
                unreachable!("checked to be a date range")
            };
            // keys read and shown like those of a date field with the range's format
            ValueSource::Numeric {
                path: range.path.clone(),
                kind: NumericKind::Date(format.clone()),
            }
        }
        None => {
            ValueSource::resolve_params(ctx, &histogram.source, "date_histogram", Accepts::Numeric)?
        }
    };
    let parse_format = date_format(&source, histogram.source.format.as_deref())?;
    let zone = histogram.zone()?;
    let format = ValueFormat::Date {
        format: parse_format.spec().to_string(),
        zone: histogram.time_zone.clone(),
    };
    let parse = |v: &Value| parse_date_value(v, &parse_format, ctx.now_millis, Some(&zone));
    let bounds = |b: &Option<Bounds<Value>>| -> Result<(Option<i64>, Option<i64>)> {
        match b {
            None => Ok((None, None)),
            Some(b) => Ok((
                b.min.as_ref().map(parse).transpose()?,
                b.max.as_ref().map(parse).transpose()?,
            )),
        }
    };
    let extended = bounds(&histogram.extended_bounds)?;
    let hard = bounds(&histogram.hard_bounds)?;
    let (hard_min, hard_max) = hard_key_bounds(
        rounding.clone(),
        histogram.hard_bounds.as_ref().map(|b| (b, hard)),
        histogram.extended_bounds.as_ref().map(|b| (b, extended)),
    )?;
    let missing = histogram
        .source
        .missing
        .as_ref()
        .map(parse)
        .transpose()?
        .map(|m| m as f64);
    Ok(Box::new(HistogramFactory {
        source,
        format,
        key_fn: KeyFn::Date {
            rounding,
            hard_min,
            hard_max,
        },
        missing,
        date_bounds: histogram.extended_bounds.as_ref().map(|_| extended),
        ranges,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<DateHistogramRequest> {
        DateHistogramRequest::parse(body.as_object().unwrap())
    }

    const JAN1: i64 = 1_420_070_400_000; // 2015-01-01T00:00:00Z, a Thursday

    #[test]
    fn parses_intervals_like_opensearch() {
        assert_eq!(
            parse(json!({"field": "d", "calendar_interval": "1w"}))
                .unwrap()
                .interval,
            Some(DateInterval::Calendar(CalendarUnit::Week))
        );
        assert_eq!(
            parse(json!({"field": "d", "fixed_interval": "2000d"}))
                .unwrap()
                .interval,
            Some(DateInterval::Fixed(2000 * MILLIS_PER_DAY))
        );
        assert_eq!(
            parse(json!({"field": "d", "interval": "day"}))
                .unwrap()
                .interval,
            Some(DateInterval::Calendar(CalendarUnit::Day))
        );
        let e = parse(json!({"field": "d", "calendar_interval": "2d"})).unwrap_err();
        assert_eq!(
            e.cause().unwrap().reason(),
            "The supplied interval [2d] could not be parsed as a calendar interval."
        );
        let e = parse(json!({"field": "d", "fixed_interval": "1M"})).unwrap_err();
        assert!(e.cause().unwrap().reason().contains("[1M] as a time value"));
        assert_eq!(
            parse(json!({"field": "d", "offset": "-1d"}))
                .unwrap()
                .offset,
            -MILLIS_PER_DAY
        );
        assert_eq!(
            parse(json!({"field": "d"}))
                .unwrap()
                .rounding()
                .unwrap_err()
                .reason(),
            "Invalid interval specified, must be non-null and non-empty"
        );
    }

    #[test]
    fn rounds_days_weeks_months_with_zones_and_offsets() {
        let mut day = Rounding::new(
            DateInterval::Calendar(CalendarUnit::Day),
            TimeZone::utc(),
            0,
        );
        assert_eq!(day.round(JAN1 + 5_000_000), JAN1);
        assert_eq!(day.next(JAN1), JAN1 + MILLIS_PER_DAY);
        let mut week = Rounding::new(
            DateInterval::Calendar(CalendarUnit::Week),
            TimeZone::parse("+01:00").unwrap(),
            0,
        );
        // OpenSearch: 2015-01-01 in +01:00 falls in the week of Monday 2014-12-29 (local)
        assert_eq!(week.round(JAN1), 1_419_807_600_000);
        let mut month = Rounding::new(
            DateInterval::Calendar(CalendarUnit::Month),
            TimeZone::utc(),
            0,
        );
        assert_eq!(month.round(JAN1 + 20 * MILLIS_PER_DAY), JAN1);
        assert_eq!(month.next(JAN1), JAN1 + 31 * MILLIS_PER_DAY);
        let mut fixed = Rounding::new(
            DateInterval::Fixed(10 * MILLIS_PER_DAY),
            TimeZone::utc(),
            MILLIS_PER_DAY,
        );
        // OpenSearch: 10d buckets offset by +1d put 2015-01-01 in the bucket of 2014-12-27
        assert_eq!(fixed.round(JAN1), 1_419_638_400_000);
        let mut paris = Rounding::new(
            DateInterval::Calendar(CalendarUnit::Day),
            TimeZone::parse("Europe/Paris").unwrap(),
            0,
        );
        assert_eq!(paris.round(JAN1 + 3_600_000), JAN1 - 3_600_000);
    }

    #[test]
    fn hard_bounds_round_to_keys_and_exclude_the_max() {
        let day = || Rounding::new(DateInterval::Fixed(MILLIS_PER_DAY), TimeZone::utc(), 0);
        let given = |min: i64, max: i64| Bounds {
            min: Some(json!(min)),
            max: Some(json!(max)),
        };
        let hard = given(JAN1 + 3_600_000, JAN1 + 2 * MILLIS_PER_DAY + 3_600_000);
        let (lo, hi) = hard_key_bounds(
            day(),
            Some((
                &hard,
                (
                    Some(JAN1 + 3_600_000),
                    Some(JAN1 + 2 * MILLIS_PER_DAY + 3_600_000),
                ),
            )),
            None,
        )
        .unwrap();
        // the bucket of Jan 1st is in (its key is the rounded min), that of Jan 3rd is out
        assert_eq!(lo, JAN1);
        assert!((JAN1 + MILLIS_PER_DAY..JAN1 + 2 * MILLIS_PER_DAY).contains(&hi));
        assert_eq!(
            hard_key_bounds(day(), None, None).unwrap(),
            (i64::MIN, i64::MAX)
        );
        let wide = given(JAN1, JAN1 + 5 * MILLIS_PER_DAY);
        let e = hard_key_bounds(
            day(),
            Some((&hard, (Some(JAN1), Some(JAN1 + 2 * MILLIS_PER_DAY)))),
            Some((&wide, (Some(JAN1), Some(JAN1 + 5 * MILLIS_PER_DAY)))),
        )
        .unwrap_err();
        assert_eq!(e.kind(), "illegal_argument_exception");
        assert!(e
            .reason()
            .starts_with("Extended bounds have to be inside hard bounds"));
    }

    #[test]
    fn fixed_intervals_step_in_local_time_across_dst() {
        const HOUR: i64 = 3_600_000;
        // 2025-03-30 00:00 in Paris is 2025-03-29T23:00Z; clocks go forward at 02:00
        let march_30 = 1_743_289_200_000;
        let mut day = Rounding::new(
            DateInterval::Fixed(MILLIS_PER_DAY),
            TimeZone::parse("Europe/Paris").unwrap(),
            0,
        );
        assert_eq!(day.round(march_30 + 5 * HOUR), march_30);
        // the next local midnight is 23 hours later, where the values of that day round to
        let next = day.next(march_30);
        assert_eq!(next, march_30 + 23 * HOUR);
        assert_eq!(day.round(next + HOUR), next);
        let mut half = Rounding::new(
            DateInterval::Fixed(12 * HOUR),
            TimeZone::parse("Europe/Paris").unwrap(),
            0,
        );
        assert_eq!(half.next(march_30), march_30 + 11 * HOUR);
        assert_eq!(half.round(march_30 + 11 * HOUR), march_30 + 11 * HOUR);
        // 2025-10-26 00:00 in Paris is 2025-10-25T22:00Z; clocks go back at 03:00
        let october_26 = 1_761_429_600_000;
        assert_eq!(day.next(october_26), october_26 + 25 * HOUR);
        // a zone without changes keeps plain steps, offset included
        let mut utc = Rounding::new(DateInterval::Fixed(MILLIS_PER_DAY), TimeZone::utc(), HOUR);
        assert_eq!(utc.round(JAN1 + 2 * HOUR), JAN1 + HOUR);
        assert_eq!(utc.next(JAN1 + HOUR), JAN1 + HOUR + MILLIS_PER_DAY);
    }
}
