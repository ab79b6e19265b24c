//! `date_range`: `range` on dates, with bounds written as dates or date math (`now-1d/d`,
//! `2015-01-01||+1M`) read with the aggregation's `format` in its `time_zone`.
//!
//! Everything after the bounds are resolved is the `range` aggregation: the same collector,
//! the same intermediate result ([`InternalRange`](crate::bucket::range::InternalRange)) and
//! the same rendering, with keys and `*_as_string` printed in the format and zone. As in
//! OpenSearch, bounds are resolved on the shard (the field's format and "now" live there), both
//! `from` and `to` without rounding up, and the ranges are sorted by `(from, to)`.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_date::{DateFormat, TimeZone};

use crate::bucket::auto_date_histogram::zone_error;
use crate::bucket::date_histogram::parse_date_value;
use crate::bucket::range::{
    numeric_bound, parse_range, resolve_ranges, RangeFactory, RangeInput, RangeRequest,
};
use crate::format::ValueFormat;
use crate::prepare::{AggContext, Factory};
use crate::request::{bool_param, string_param, unknown_field, AggRequest, ValuesSourceParams};
use crate::values::{Accepts, NumericKind, ValueSource};

const AGG: &str = "date_range";

#[derive(Clone, Debug, PartialEq)]
pub struct DateRangeRequest {
    /// Field, ranges and `keyed`, as in `range`.
    pub range: RangeRequest,
    pub time_zone: Option<String>,
}

impl DateRangeRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<DateRangeRequest> {
        let mut range = RangeRequest {
            source: ValuesSourceParams::default(),
            ranges: Vec::new(),
            keyed: false,
        };
        let mut time_zone = None;
        for (key, value) in body {
            if range.source.accept(AGG, key, value)? {
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
                        range.ranges.push(parse_range(AGG, item)?);
                    }
                }
                "keyed" => range.keyed = bool_param(AGG, key, value)?,
                "time_zone" => {
                    let zone = string_param(AGG, key, value)?;
                    TimeZone::parse(&zone).map_err(|e| zone_error(AGG, key, e.message))?;
                    time_zone = Some(zone);
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        range.source.require_field_at_parse()?;
        Ok(DateRangeRequest { range, time_zone })
    }

    fn zone(&self) -> Result<Option<TimeZone>> {
        self.time_zone
            .as_deref()
            .map(|z| TimeZone::parse(z).map_err(|e| Error::illegal_argument(e.message)))
            .transpose()
    }
}

pub fn factory(
    request: &AggRequest,
    date_range: &DateRangeRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let range = &date_range.range;
    let source = ValueSource::resolve_params(ctx, &range.source, AGG, Accepts::Numeric)?;
    // OpenSearch checks this on the shard, once the ranges meet the field
    if range.ranges.is_empty() {
        return Err(Error::illegal_argument(format!(
            "No [ranges] specified for the [{}] aggregation",
            request.name
        )));
    }
    let zone = date_range.zone()?;
    let parse_spec = |spec: &str| {
        DateFormat::parse(spec).map_err(|e| {
            Error::illegal_argument(format!("Invalid format: [{spec}]: {}", e.message))
        })
    };
    // an unmapped field, or a script without a field, is read as a date (OpenSearch's
    // default value type for date_range); a value script keeps its field's type
    let typeless = source.shown_as().is_none()
        && matches!(source, ValueSource::Unmapped | ValueSource::Script(_));
    let date_format = match source.shown_as() {
        Some(NumericKind::Date(field_format)) => Some(match &range.source.format {
            Some(spec) => parse_spec(spec)?,
            None => field_format.clone(),
        }),
        _ if typeless => Some(match &range.source.format {
            Some(spec) => parse_spec(spec)?,
            None => DateFormat::default_format(),
        }),
        _ => None,
    };
    let format = match &date_format {
        Some(f) if typeless => ValueFormat::Date {
            format: f.spec().to_string(),
            zone: date_range.time_zone.clone(),
        },
        _ => ValueFormat::for_source(
            &source,
            range.source.format.as_deref(),
            date_range.time_zone.as_deref(),
        )?,
    };
    let bound = |v: &Value| -> Result<f64> {
        match (&date_format, v) {
            (Some(format), Value::String(_)) => {
                parse_date_value(v, format, ctx.now_millis, zone.as_ref()).map(|m| m as f64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::range::{InternalRange, RangeBucket, ResolvedRange};
    use crate::internal::{InternalAggregations, RenderContext};
    use crate::request::{parse_aggregations, AggKind};
    use crate::test_util::{Rng, TestShard};
    use serde_json::json;

    const JAN1: f64 = 1_420_070_400_000.0;
    const DAY: f64 = 86_400_000.0;

    #[test]
    fn parse_errors_match_opensearch() {
        let reason = |v: Value| {
            let e = parse_aggregations(&json!({"r": {"date_range": v}})).unwrap_err();
            (
                e.reason().to_string(),
                e.cause().map(|c| c.reason().to_string()),
            )
        };
        assert_eq!(
            reason(json!({"field": "d", "bogus": 1, "ranges": []})),
            ("[date_range] unknown field [bogus]".into(), None)
        );
        assert_eq!(
            reason(json!({"field": "d", "ranges": [{"to": "2015", "bogus": 1}]})),
            (
                "[date_range] failed to parse field [ranges]".into(),
                Some("[range] unknown field [bogus]".into())
            )
        );
        assert_eq!(
            reason(json!({"field": "d", "time_zone": "Mars/Olympus", "ranges": [{"to": 1}]})).0,
            "[date_range] failed to parse field [time_zone]"
        );
        assert_eq!(
            reason(json!({"ranges": [{"to": 1}]})).0,
            "Required one of fields [field, script], but none were specified. "
        );
    }

    /// The shape OpenSearch 2.19 gives for
    /// `{"field":"d","format":"dd/MM/yyyy","time_zone":"+02:00","keyed":true,
    ///   "ranges":[{"to":"05/01/2015"},{"from":"05/01/2015||+1d/d"}]}`.
    #[test]
    fn renders_keyed_with_format_and_zone_like_opensearch() {
        let aggs = parse_aggregations(&json!({"r": {"date_range": {"field": "d",
            "format": "dd/MM/yyyy", "time_zone": "+02:00", "keyed": true,
            "ranges": [{"to": "05/01/2015"}, {"from": "05/01/2015||+1d/d"}]}}}))
        .unwrap();
        let result = InternalRange {
            buckets: vec![
                RangeBucket {
                    doc_count: 171,
                    subs: InternalAggregations::default(),
                },
                RangeBucket {
                    doc_count: 385,
                    subs: InternalAggregations::default(),
                },
            ],
            format: ValueFormat::Date {
                format: "dd/MM/yyyy".into(),
                zone: Some("+02:00".into()),
            },
            ranges: vec![
                ResolvedRange {
                    key: None,
                    from: f64::NEG_INFINITY,
                    to: 1_420_408_800_000.0,
                },
                ResolvedRange {
                    key: None,
                    from: 1_420_495_200_000.0,
                    to: f64::INFINITY,
                },
            ],
        };
        let out = result
            .render(&aggs[0], &mut RenderContext::new(100))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"buckets": {
                "*-05/01/2015": {"to": 1420408800000.0, "to_as_string": "05/01/2015", "doc_count": 171},
                "06/01/2015-*": {"from": 1420495200000.0, "from_as_string": "06/01/2015", "doc_count": 385}
            }})
        );
    }

    fn shard(seed: u64) -> TestShard {
        let mut rng = Rng::new(seed);
        let docs: Vec<Value> = (0..300)
            .map(|i| {
                if i % 17 == 0 {
                    json!({"n": 1})
                } else if i % 23 == 0 {
                    json!({"d": [JAN1 as i64 + rng.below(10) as i64 * DAY as i64,
                                 JAN1 as i64 + rng.below(10) as i64 * DAY as i64]})
                } else {
                    json!({"d": JAN1 as i64 + (rng.below(10 * DAY as u64)) as i64})
                }
            })
            .collect();
        TestShard::new(
            json!({"properties": {"d": {"type": "date"}, "n": {"type": "long"}}}),
            &docs,
            5,
        )
    }

    #[test]
    fn counts_are_the_same_for_any_slicing_and_match_a_direct_count() {
        let shard = shard(3);
        let body = json!({"r": {"date_range": {"field": "d", "missing": "2014-12-31",
            "ranges": [{"to": "2015-01-04"}, {"from": "2015-01-03", "to": "2015-01-08"},
                       {"from": "2015-01-08||+1d"}, {"to": "2015-01-01"}]}}});
        let reference = shard.render(&body, 1, 0);
        for seed in 1..12 {
            assert_eq!(shard.render(&body, 1 + seed as usize % 8, seed), reference);
        }
        let count = |lo: f64, hi: f64| {
            shard
                .docs()
                .iter()
                .filter(|d| {
                    let values: Vec<f64> = match &d["d"] {
                        Value::Null => vec![JAN1 - DAY],
                        Value::Array(a) => a.iter().map(|v| v.as_f64().unwrap()).collect(),
                        v => vec![v.as_f64().unwrap()],
                    };
                    values.iter().any(|v| *v >= lo && *v < hi)
                })
                .count() as u64
        };
        let buckets = reference["r"]["buckets"].as_array().unwrap();
        let keys: Vec<&str> = buckets.iter().map(|b| b["key"].as_str().unwrap()).collect();
        assert_eq!(
            keys,
            [
                "*-2015-01-01T00:00:00.000Z",
                "*-2015-01-04T00:00:00.000Z",
                "2015-01-03T00:00:00.000Z-2015-01-08T00:00:00.000Z",
                "2015-01-09T00:00:00.000Z-*"
            ]
        );
        assert_eq!(buckets[0]["doc_count"], count(f64::MIN, JAN1));
        assert_eq!(buckets[1]["doc_count"], count(f64::MIN, JAN1 + 3.0 * DAY));
        assert_eq!(
            buckets[2]["doc_count"],
            count(JAN1 + 2.0 * DAY, JAN1 + 7.0 * DAY)
        );
        assert_eq!(buckets[3]["doc_count"], count(JAN1 + 8.0 * DAY, f64::MAX));
        let AggKind::DateRange(_) = parse_aggregations(&body).unwrap()[0].kind else {
            panic!("not a date_range")
        };
    }

    #[test]
    fn an_unmapped_field_reads_bounds_as_dates() {
        let shard = shard(2);
        let out = shard.render(
            &json!({"r": {"date_range": {"field": "nope", "ranges": [{"to": "2015-01-10"}, {"from": 5}]}}}),
            2,
            1,
        );
        // OpenSearch 2.19's answer
        assert_eq!(
            out["r"],
            json!({"buckets": [
                {"key": "*-2015-01-10T00:00:00.000Z", "to": 1420848000000.0,
                 "to_as_string": "2015-01-10T00:00:00.000Z", "doc_count": 0},
                {"key": "1970-01-01T00:00:00.005Z-*", "from": 5.0,
                 "from_as_string": "1970-01-01T00:00:00.005Z", "doc_count": 0}
            ]})
        );
    }

    #[test]
    fn shard_level_errors() {
        let shard = shard(1);
        let e = shard
            .try_run(
                &json!({"r": {"date_range": {"field": "d", "ranges": []}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!(e.reason(), "No [ranges] specified for the [r] aggregation");
        let e = shard
            .try_run(
                &json!({"r": {"date_range": {"field": "d", "ranges": [{"to": "bogus"}]}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!(e.kind(), "parse_exception");
    }
}
