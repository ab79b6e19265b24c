//! Sibling pipelines (`avg_bucket`, `max_bucket`, `min_bucket`, `sum_bucket`,
//! `stats_bucket`, `extended_stats_bucket`, `percentiles_bucket`): one result computed from
//! the values a path reads in every bucket of a multi-bucket sibling, gaps left out.

use serde_json::{json, Map, Value};
use tessera_common::Result;

use super::buckets_path::{bucket_value, buckets, key_as_string, BucketsPath, PathElement};
use super::{execution_error, find_key, meta_object, number, result_key, value_object};
use super::{PipelineAgg, PipelineKind};
use crate::metric::json_double;

#[derive(Clone, Debug, PartialEq)]
pub struct BucketMetric {
    pub kind: MetricKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum MetricKind {
    Avg,
    Max,
    Min,
    Sum,
    Stats,
    ExtendedStats { sigma: f64 },
    Percentiles { percents: Vec<f64>, keyed: bool },
}

impl BucketMetric {
    pub fn typed_name(&self) -> &'static str {
        match self.kind {
            MetricKind::Avg | MetricKind::Sum => "simple_value",
            MetricKind::Max | MetricKind::Min => "bucket_metric_value",
            MetricKind::Stats => "stats_bucket",
            MetricKind::ExtendedStats { .. } => "extended_stats_bucket",
            MetricKind::Percentiles { .. } => "percentiles_bucket",
        }
    }
}

/// Runs the sibling pipeline `p` in `level` (a rendered aggregations object, or a bucket).
pub(crate) fn run(level: &mut Map<String, Value>, p: &PipelineAgg, typed_keys: bool) -> Result<()> {
    let PipelineKind::BucketMetric(metric) = &p.kind else {
        unreachable!("parent pipelines do not run here");
    };
    let path = &p.paths[0].1;
    let first = &path.elements[0];
    // `agg.key` reads `key` in each bucket of `agg`, like `agg>key`
    let mut rest: Vec<PathElement> = Vec::new();
    if let Some(key) = &first.key {
        rest.push(PathElement {
            name: key.clone(),
            key: None,
        });
    }
    rest.extend(path.elements[1..].iter().cloned());
    if rest.is_empty() {
        return Err(execution_error(format!(
            "buckets_path must reference either a number value or a single value numeric metric aggregation, got: [Bucket] at aggregation [{}]",
            first.name
        )));
    }
    let sub_path = BucketsPath {
        text: path.text.clone(),
        elements: rest,
    };
    let Some(target_key) = find_key(level, &first.name, typed_keys) else {
        return Err(execution_error(format!(
            "No aggregation found for path [{}]",
            path.text
        )));
    };
    let mut values: Vec<(String, f64)> = Vec::new();
    if let Some(Value::Object(target)) = level.get(&target_key) {
        for (keyed_name, bucket) in buckets(target) {
            if let Some(v) = bucket_value(bucket, &sub_path, p.gap_policy, typed_keys)? {
                if !v.is_nan() {
                    values.push((key_as_string(keyed_name, bucket), v));
                }
            }
        }
    }
    let out = render(p, &metric.kind, &values);
    level.insert(
        result_key(&p.name, metric.typed_name(), typed_keys),
        Value::Object(out),
    );
    Ok(())
}

fn render(p: &PipelineAgg, kind: &MetricKind, values: &[(String, f64)]) -> Map<String, Value> {
    let count = values.len() as f64;
    let sum: f64 = values.iter().map(|(_, v)| v).sum();
    match kind {
        MetricKind::Avg => value_object(p, sum / count),
        MetricKind::Sum => value_object(p, sum),
        MetricKind::Max | MetricKind::Min => {
            let max = matches!(kind, MetricKind::Max);
            let mut best = if max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            let mut keys: Vec<Value> = Vec::new();
            for (key, v) in values {
                let better = if max { *v > best } else { *v < best };
                if better {
                    best = *v;
                    keys.clear();
                    keys.push(Value::String(key.clone()));
                } else if *v == best {
                    keys.push(Value::String(key.clone()));
                }
            }
            let mut out = value_object(p, best);
            out.insert("keys".into(), Value::Array(keys));
            out
        }
        MetricKind::Stats | MetricKind::ExtendedStats { .. } => {
            let mut out = meta_object(p);
            out.insert("count".into(), json!(values.len()));
            let min = values.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
            let max = values
                .iter()
                .map(|(_, v)| *v)
                .fold(f64::NEG_INFINITY, f64::max);
            let avg = sum / count;
            let empty = values.is_empty();
            for (name, v) in [("min", min), ("max", max), ("avg", avg)] {
                out.insert(name.into(), if empty { Value::Null } else { number(v) });
            }
            out.insert("sum".into(), number(sum));
            if let (Some(f), false) = (&p.format, empty) {
                for (name, v) in [("min", min), ("max", max), ("avg", avg), ("sum", sum)] {
                    out.insert(format!("{name}_as_string"), Value::String(f.format(v)));
                }
            }
            if let MetricKind::ExtendedStats { sigma } = kind {
                extended(&mut out, values, sum, *sigma, p.format.as_ref());
            }
            out
        }
        MetricKind::Percentiles { percents, keyed } => {
            let mut sorted: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
            sorted.sort_by(f64::total_cmp);
            let mut out = meta_object(p);
            let pick = |percent: f64| -> f64 {
                if sorted.is_empty() {
                    return f64::NAN;
                }
                let index = ((percent / 100.0) * (sorted.len() - 1) as f64 + 0.5).floor();
                sorted[(index as usize).min(sorted.len() - 1)]
            };
            if *keyed {
                let mut map = Map::new();
                for percent in percents {
                    let key = number(*percent).to_string();
                    let v = pick(*percent);
                    map.insert(key.clone(), number(v));
                    if let (Some(f), true) = (&p.format, v.is_finite()) {
                        map.insert(format!("{key}_as_string"), Value::String(f.format(v)));
                    }
                }
                out.insert("values".into(), Value::Object(map));
            } else {
                let list = percents
                    .iter()
                    .map(|percent| {
                        let v = pick(*percent);
                        let mut entry = Map::new();
                        entry.insert("key".into(), number(*percent));
                        entry.insert("value".into(), number(v));
                        if let (Some(f), true) = (&p.format, v.is_finite()) {
                            // not `value_as_string`: OpenSearch names it by the percent here too
                            entry.insert(
                                format!("{}_as_string", number(*percent)),
                                Value::String(f.format(v)),
                            );
                        }
                        Value::Object(entry)
                    })
                    .collect();
                out.insert("values".into(), Value::Array(list));
            }
            out
        }
    }
}

/// extended_stats_bucket's values after the four of stats, as extended_stats renders them.
fn extended(
    out: &mut Map<String, Value>,
    values: &[(String, f64)],
    sum: f64,
    sigma: f64,
    format: Option<&super::DecimalFormat>,
) {
    const OTHER: [&str; 7] = [
        "sum_of_squares",
        "variance",
        "variance_population",
        "variance_sampling",
        "std_deviation",
        "std_deviation_population",
        "std_deviation_sampling",
    ];
    const BOUNDS: [&str; 6] = [
        "upper",
        "lower",
        "upper_population",
        "lower_population",
        "upper_sampling",
        "lower_sampling",
    ];
    if values.is_empty() {
        for name in OTHER {
            out.insert(name.into(), Value::Null);
        }
        let bounds = BOUNDS
            .iter()
            .map(|b| (b.to_string(), Value::Null))
            .collect();
        out.insert("std_deviation_bounds".into(), Value::Object(bounds));
        return;
    }
    let count = values.len() as f64;
    let sum_of_squares: f64 = values.iter().map(|(_, v)| v * v).sum();
    let clamp = |v: f64| if v < 0.0 { 0.0 } else { v };
    let population = clamp((sum_of_squares - sum * sum / count) / count);
    let sampling = clamp((sum_of_squares - sum * sum / count) / (count - 1.0));
    let (std_p, std_s) = (population.sqrt(), sampling.sqrt());
    let avg = sum / count;
    let numbers = [
        sum_of_squares,
        population,
        population,
        sampling,
        std_p,
        std_p,
        std_s,
    ];
    for (name, v) in OTHER.iter().zip(numbers) {
        out.insert((*name).into(), json_double(v));
    }
    if let Some(f) = format {
        for (name, v) in OTHER.iter().zip(numbers).filter(|(_, v)| v.is_finite()) {
            out.insert(format!("{name}_as_string"), Value::String(f.format(v)));
        }
    }
    let bounds = [
        avg + std_p * sigma,
        avg - std_p * sigma,
        avg + std_p * sigma,
        avg - std_p * sigma,
        avg + std_s * sigma,
        avg - std_s * sigma,
    ];
    let rendered = BOUNDS
        .iter()
        .zip(bounds)
        .map(|(b, v)| (b.to_string(), json_double(v)))
        .collect();
    out.insert("std_deviation_bounds".into(), Value::Object(rendered));
    if let Some(f) = format {
        let text = BOUNDS
            .iter()
            .zip(bounds)
            .filter(|(_, v)| v.is_finite())
            .map(|(b, v)| (b.to_string(), Value::String(f.format(v))))
            .collect();
        out.insert("std_deviation_bounds_as_string".into(), Value::Object(text));
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::apply;
    use crate::request::parse_aggregations_with_pipelines;
    use serde_json::{json, Value};

    fn run(pipelines: Value) -> Value {
        let mut body = pipelines.as_object().unwrap().clone();
        body.insert(
            "m".into(),
            json!({"date_histogram": {"field": "t", "calendar_interval": "month"},
                   "aggs": {"s": {"sum": {"field": "x"}}}}),
        );
        let (aggs, top) = parse_aggregations_with_pipelines(&Value::Object(body)).unwrap();
        let rendered = json!({"m": {"buckets": [
            {"key_as_string": "jan", "key": 1, "doc_count": 2, "s": {"value": 30.0}},
            {"key_as_string": "feb", "key": 2, "doc_count": 1, "s": {"value": 5.0}},
            {"key_as_string": "mar", "key": 3, "doc_count": 0, "s": {"value": 0.0}},
            {"key_as_string": "apr", "key": 4, "doc_count": 3, "s": {"value": 30.0}}
        ]}});
        let mut out = rendered.as_object().unwrap().clone();
        apply(&mut out, &aggs, &top, false).unwrap();
        Value::Object(out)
    }

    #[test]
    fn bucket_metrics_skip_gaps() {
        let out = run(json!({
            "max": {"max_bucket": {"buckets_path": "m>s"}},
            "min": {"min_bucket": {"buckets_path": "m>s", "gap_policy": "insert_zeros"}},
            "avg": {"avg_bucket": {"buckets_path": "m>s", "format": "0.0"}},
            "sum": {"sum_bucket": {"buckets_path": "m>_count"}},
            "stats": {"stats_bucket": {"buckets_path": "m._count"}},
            "p": {"percentiles_bucket": {"buckets_path": "m>s", "percents": [0, 50, 100]}}
        }));
        assert_eq!(out["max"], json!({"value": 30.0, "keys": ["jan", "apr"]}));
        assert_eq!(out["min"], json!({"value": 0.0, "keys": ["mar"]}));
        assert_eq!(
            out["avg"],
            json!({"value": 65.0 / 3.0, "value_as_string": "21.7"})
        );
        assert_eq!(out["sum"], json!({"value": 6.0}));
        assert_eq!(
            out["stats"],
            json!({"count": 4, "min": 0.0, "max": 3.0, "avg": 1.5, "sum": 6.0})
        );
        assert_eq!(
            out["p"],
            json!({"values": {"0.0": 5.0, "50.0": 30.0, "100.0": 30.0}})
        );
    }

    #[test]
    fn extended_stats_with_and_without_format() {
        let out = run(json!({
            "es": {"extended_stats_bucket": {"buckets_path": "m>s"}},
            "esf": {"extended_stats_bucket": {"buckets_path": "m>s", "format": "0.0"}},
        }));
        let es = &out["es"];
        assert_eq!(es["count"], json!(3));
        assert_eq!(es["sum_of_squares"], json!(1825.0));
        assert_eq!(es["variance"], json!((1825.0 - 65.0 * 65.0 / 3.0) / 3.0));
        assert!(es["std_deviation_bounds"]["upper"].is_number());
        assert!(es.get("variance_as_string").is_none());
        let esf = &out["esf"];
        assert_eq!(esf["sum_of_squares_as_string"], json!("1825.0"));
        assert_eq!(esf["sum_as_string"], json!("65.0"));
        assert!(esf["std_deviation_bounds_as_string"]["upper"].is_string());
    }
}
