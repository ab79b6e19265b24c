//! `median_absolute_deviation`: the median of the absolute deviations of the values from their
//! median, a measure of variability that a few outliers do not move.
//!
//! OpenSearch computes it from a t-digest of the values: the median of the digest, then a second
//! digest of `|median − centroid|` weighted by each centroid's count, and that digest's median.
//! Tessera does the same over the grouping-independent sketch of [`super::quantiles`] (every
//! run of equal values standing for its centroid), so the answer is exact while the sketch
//! holds single values (50 000 distinct values at the default compression of 1000) and the
//! same for one slice or eight. The collector and the intermediate result are those of
//! `percentiles`.

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};

use crate::format::ValueFormat;
use crate::internal::InternalAgg;
use crate::metric::java_double_string;
use crate::metric::json_double;
use crate::metric::numeric_missing;
use crate::metric::percentiles::{InternalPercentiles, SketchFactory};
use crate::metric::quantiles::{capacity_for, QuantileSketch};
use crate::prepare::{AggContext, Factory};
use crate::request::{f64_param, unknown_field, AggRequest, ValuesSourceParams};
use crate::values::{Accepts, ValueSource};

const AGG: &str = "median_absolute_deviation";
/// OpenSearch's default compression for this aggregation (ten times percentiles').
pub const DEFAULT_COMPRESSION: f64 = 1000.0;

#[derive(Clone, Debug, PartialEq)]
pub struct MedianAbsoluteDeviationRequest {
    pub source: ValuesSourceParams,
    pub compression: f64,
}

impl MedianAbsoluteDeviationRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<MedianAbsoluteDeviationRequest> {
        let mut source = ValuesSourceParams::default();
        let mut compression = DEFAULT_COMPRESSION;
        for (key, value) in body {
            if source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "compression" => {
                    let c = f64_param(AGG, key, value)?;
                    if c.is_nan() || c <= 0.0 {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [compression]"
                        ))
                        .caused_by(Error::illegal_argument(format!(
                            "[compression] must be greater than 0. Found [{}] in [{name}]",
                            java_double_string(c)
                        ))));
                    }
                    compression = c;
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        source.require_field_at_parse()?;
        Ok(MedianAbsoluteDeviationRequest {
            source,
            compression,
        })
    }
}

pub fn factory(
    _request: &AggRequest,
    mad: &MedianAbsoluteDeviationRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let source = ValueSource::resolve_params(ctx, &mad.source, AGG, Accepts::Numeric)?;
    let format = ValueFormat::for_source(&source, mad.source.format.as_deref(), None)?;
    let missing = numeric_missing(AGG, mad.source.missing.as_ref(), &source)?;
    Ok(Box::new(SketchFactory {
        source,
        format,
        missing,
        capacity: capacity_for(mad.compression),
        output: InternalAgg::MedianAbsoluteDeviation,
    }))
}

/// The empty result of `request` (a bucket no shard saw).
pub fn empty(mad: &MedianAbsoluteDeviationRequest) -> InternalPercentiles {
    InternalPercentiles {
        sketch: QuantileSketch::new(capacity_for(mad.compression)),
        format: ValueFormat::Raw,
    }
}

/// The median absolute deviation of the sketch's values; NaN when it holds none.
pub fn value(sketch: &QuantileSketch) -> f64 {
    if sketch.count == 0 {
        return f64::NAN;
    }
    let median = sketch.reader().quantile(0.5);
    let deviations: Vec<(f64, u64)> = sketch
        .runs()
        .into_iter()
        .map(|(v, count)| ((median - v).abs(), count))
        .collect();
    let mut spread = QuantileSketch::new(sketch.capacity);
    spread.add_weighted(&deviations);
    spread.reader().quantile(0.5)
}

/// `{"value": v}` (null when no value was seen), with `value_as_string` under a `format`.
pub fn render(result: &InternalPercentiles) -> Map<String, Value> {
    let mut out = Map::new();
    if result.sketch.count == 0 {
        out.insert("value".into(), Value::Null);
        return out;
    }
    let v = value(&result.sketch);
    out.insert("value".into(), json_double(v));
    if result.format != ValueFormat::Raw {
        if let Some(text) = result.format.formatter().as_string(v) {
            out.insert("value_as_string".into(), json!(text));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch_of(values: &[f64]) -> QuantileSketch {
        let mut sketch = QuantileSketch::new(capacity_for(DEFAULT_COMPRESSION));
        sketch.add_all(&mut values.to_vec());
        sketch
    }

    #[test]
    fn value_is_the_median_of_deviations_from_the_median() {
        // median 4; deviations 3 2 1 0 1 5 96 → median 2 (what OpenSearch answers)
        assert_eq!(
            value(&sketch_of(&[1.0, 2.0, 3.0, 4.0, 9.0, 5.0, 100.0])),
            2.0
        );
        assert_eq!(value(&sketch_of(&[7.0])), 0.0);
        assert!(value(&sketch_of(&[])).is_nan());
    }

    #[test]
    fn value_does_not_depend_on_how_values_were_grouped() {
        let values: Vec<f64> = (0..500).map(|i| ((i * 37) % 101) as f64 * 0.5).collect();
        let whole = value(&sketch_of(&values));
        let mut left = sketch_of(&values[..123]);
        left.merge(&sketch_of(&values[123..]));
        assert_eq!(value(&left), whole);
    }

    #[test]
    fn parse_checks_compression_and_fields() {
        let parse =
            |body: Value| MedianAbsoluteDeviationRequest::parse("mad", body.as_object().unwrap());
        let ok = parse(json!({"field": "n", "compression": 50})).unwrap();
        assert_eq!(ok.compression, 50.0);
        let bad = parse(json!({"field": "n", "compression": -1})).unwrap_err();
        assert!(format!("{bad:?}")
            .contains("[compression] must be greater than 0. Found [-1.0] in [mad]"));
        let unknown = parse(json!({"field": "n", "foo": 1})).unwrap_err();
        assert!(format!("{unknown:?}").contains("unknown field [foo]"));
    }

    #[test]
    fn render_is_null_when_empty_and_formats_values() {
        let empty = InternalPercentiles {
            sketch: QuantileSketch::new(100),
            format: ValueFormat::Raw,
        };
        assert_eq!(render(&empty)["value"], Value::Null);
        let full = InternalPercentiles {
            sketch: sketch_of(&[1.0, 2.0, 3.0, 4.0, 9.0, 5.0, 100.0]),
            format: ValueFormat::Raw,
        };
        assert_eq!(render(&full)["value"], json!(2.0));
    }
}
