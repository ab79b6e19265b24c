//! Metric aggregations: one value (or a few named values) computed from the documents of a
//! bucket.
//!
//! Every metric here keeps an intermediate state whose merge does not depend on how documents
//! were split into slices and shards (exact sums, register maxima, multiset unions, total
//! orders), so one slice and eight slices give the same response; `scripted_metric`, whose
//! reduce script sees one state per slice, is the exception.

pub mod cardinality;
pub mod exact_sum;
pub mod extended_stats;
pub mod geo;
mod hll_tables;
pub mod median_absolute_deviation;
pub mod percentile_ranks;
pub mod percentiles;
pub mod quantiles;
pub mod scripted_metric;
pub mod stats;
pub mod top_hits;
pub mod weighted_avg;

use serde_json::{json, Value};
use tessera_common::{Error, Result};

use crate::request::f64_param;
use crate::values::{NumericKind, ValueSource};

/// The `missing` parameter of a numeric metric as a number: dates accept their field's format,
/// booleans `true`/`false`, everything else a number (or a numeric string).
pub(crate) fn numeric_missing(
    agg: &str,
    missing: Option<&Value>,
    source: &ValueSource,
) -> Result<Option<f64>> {
    Ok(match (missing, source.numeric_kind()) {
        (None, _) => None,
        (Some(Value::String(s)), Some(NumericKind::Date(format))) => Some(
            format
                .parse_millis(s, None, false)
                .map_err(|e| Error::illegal_argument(e.message))? as f64,
        ),
        (Some(Value::Bool(b)), _) => Some(if *b { 1.0 } else { 0.0 }),
        (Some(Value::String(s)), Some(NumericKind::Boolean)) if s == "true" || s == "false" => {
            Some(if s == "true" { 1.0 } else { 0.0 })
        }
        (Some(v), _) => Some(f64_param(agg, "missing", v)?),
    })
}

/// A double as OpenSearch's JSON writer prints it: non-finite values become the strings
/// `"NaN"`, `"Infinity"` and `"-Infinity"`.
pub(crate) fn json_double(value: f64) -> Value {
    if value.is_nan() {
        json!("NaN")
    } else if value == f64::INFINITY {
        json!("Infinity")
    } else if value == f64::NEG_INFINITY {
        json!("-Infinity")
    } else {
        json!(value)
    }
}

/// A double as Java's `Double.toString` prints it (`1.0`, `99.9`, `1.0E-4`, `1.2345678E7`):
/// the keys of keyed percentiles.
pub(crate) fn java_double_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .into();
    }
    let magnitude = value.abs();
    if (1e-3..1e7).contains(&magnitude) {
        let text = format!("{value}");
        return if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        };
    }
    // shortest round-trip digits in scientific form, then Java's spelling of it
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, TestShard};
    use crate::request::parse_aggregations;

    /// Odd values in every parameter of every metric: errors are fine, panics are not, and
    /// whatever parses also runs on a shard without panicking.
    #[test]
    fn odd_parameters_never_panic() {
        let odd = [
            json!(null),
            json!(true),
            json!(-1),
            json!(0),
            json!(1e308),
            json!(-1e-300),
            json!(12345678901234u64),
            json!("NaN"),
            json!("Infinity"),
            json!("-5"),
            json!("x"),
            json!(""),
            json!([]),
            json!([1, "a", null]),
            json!({}),
            json!({"a": 1}),
        ];
        let bodies: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "extended_stats",
                json!({"field": "n"}),
                vec!["field", "sigma", "missing", "format"],
            ),
            (
                "cardinality",
                json!({"field": "k"}),
                vec![
                    "field",
                    "precision_threshold",
                    "missing",
                    "rehash",
                    "execution_hint",
                ],
            ),
            (
                "percentiles",
                json!({"field": "f"}),
                vec!["field", "percents", "keyed", "tdigest", "hdr", "missing"],
            ),
            (
                "percentile_ranks",
                json!({"field": "f", "values": [1]}),
                vec!["values", "keyed", "tdigest", "missing"],
            ),
            (
                "weighted_avg",
                json!({"value": {"field": "f"}, "weight": {"field": "w"}}),
                vec!["value", "weight", "format", "value_type"],
            ),
            (
                "top_hits",
                json!({}),
                vec![
                    "size",
                    "from",
                    "sort",
                    "_source",
                    "version",
                    "track_scores",
                    "explain",
                ],
            ),
        ];
        let shard = TestShard::build(&mapping(), &random_docs(3, 2, 20));
        let mut ran = 0;
        for (agg, base, params) in bodies {
            for param in params {
                for value in &odd {
                    let mut body = base.clone();
                    body[param] = value.clone();
                    let aggs = json!({"m": {agg: body.clone()},
                        "t": {"terms": {"field": "g"}, "aggs": {"m": {agg: body}}}});
                    if parse_aggregations(&aggs).is_ok() {
                        ran += 1;
                        let _ = shard.render(&aggs);
                    }
                }
            }
        }
        assert!(ran > 100, "only {ran} bodies parsed");
        // odd sort specs and nested configs
        for sort in [
            json!("n"),
            json!([{"n": {"mode": "median", "missing": "_first"}}, "_doc"]),
            json!([{"k": {"missing": 5, "order": "desc"}}]),
            json!([{"ip": {"missing": "::1"}}]),
            json!([{"nope": {"unmapped_type": "ip"}}]),
            json!([{"nope": {"unmapped_type": "bogus"}}]),
            json!([{"b": {"mode": "sum"}}]),
            json!([5]),
            json!([{"n": 5}]),
        ] {
            let aggs = json!({"m": {"top_hits": {"sort": sort, "size": 2}}});
            if parse_aggregations(&aggs).is_ok() {
                let _ = shard.render(&aggs);
            }
        }
    }

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(java_double_string(1.0), "1.0");
        assert_eq!(java_double_string(99.9), "99.9");
        assert_eq!(java_double_string(0.0001), "1.0E-4");
        assert_eq!(java_double_string(12_345_678.0), "1.2345678E7");
        assert_eq!(java_double_string(-1e9), "-1.0E9");
        assert_eq!(java_double_string(1.4200704e12), "1.4200704E12");
        assert_eq!(java_double_string(0.001), "0.001");
        assert_eq!(java_double_string(-0.0), "-0.0");
        assert_eq!(json_double(f64::NAN), json!("NaN"));
        assert_eq!(json_double(f64::NEG_INFINITY), json!("-Infinity"));
        assert_eq!(json_double(2.5), json!(2.5));
    }
}
