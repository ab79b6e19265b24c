//! Parsing the body of each pipeline type, with OpenSearch's parameter errors.

use serde_json::{Map, Value};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};

use super::buckets_path::{BucketsPath, GapPolicy};
use super::decimal::DecimalFormat;
use super::moving::MovingFunction;
use super::parent::SortSpec;
use super::script::Script;
use super::sibling::{BucketMetric, MetricKind};
use super::{PipelineAgg, PipelineKind};
use crate::request::{f64_param, int_param};

const TYPES: &[&str] = &[
    "derivative",
    "cumulative_sum",
    "serial_diff",
    "moving_fn",
    "bucket_script",
    "bucket_selector",
    "bucket_sort",
    "avg_bucket",
    "max_bucket",
    "min_bucket",
    "sum_bucket",
    "stats_bucket",
    "extended_stats_bucket",
    "percentiles_bucket",
];

/// Whether `type_name` is a pipeline aggregation Tessera runs.
pub fn is_pipeline_type(type_name: &str) -> bool {
    TYPES.contains(&type_name)
}

fn static_name(type_name: &str) -> &'static str {
    TYPES
        .iter()
        .find(|t| **t == type_name)
        .copied()
        .unwrap_or("pipeline")
}

fn unknown_key(name: &str, key: &str, value: &Value) -> Error {
    match value {
        Value::String(_) => Error::parsing(format!(
            "Unknown key for a VALUE_STRING in [{name}]: [{key}]."
        )),
        other => Error::parsing(format!("Unexpected token {} in [{name}].", token(other))),
    }
}

fn string(name: &str, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(unknown_key(name, key, other)),
    }
}

/// `buckets_path` as a map of variables: a string is `_value`, an array `_value0`, ...
fn paths(name: &str, value: &Value) -> Result<Vec<(String, BucketsPath)>> {
    Ok(match value {
        Value::String(s) => vec![("_value".to_string(), BucketsPath::parse(s)?)],
        Value::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let text = string(name, "buckets_path", v)?;
                Ok((format!("_value{i}"), BucketsPath::parse(&text)?))
            })
            .collect::<Result<_>>()?,
        Value::Object(map) => map
            .iter()
            .map(|(var, v)| Ok((var.clone(), BucketsPath::parse(&string(name, var, v)?)?)))
            .collect::<Result<_>>()?,
        other => return Err(unknown_key(name, "buckets_path", other)),
    })
}

/// Milliseconds per `unit` of a derivative (`day`, `1d`, `month`, or a time value).
fn unit_millis(text: &str) -> Result<f64> {
    const DAY: f64 = 86_400_000.0;
    const YEAR: f64 = 31_556_952_000.0;
    Ok(match text {
        "second" | "1s" => 1_000.0,
        "minute" | "1m" => 60_000.0,
        "hour" | "1h" => 3_600_000.0,
        "day" | "1d" => DAY,
        "week" | "1w" => 7.0 * DAY,
        "month" | "1M" => YEAR / 12.0,
        "quarter" | "1q" => YEAR / 4.0,
        "year" | "1y" => YEAR,
        other => tessera_common::time::parse_time_value(other, "unit")?
            .map(|ms| ms as f64)
            .ok_or_else(|| Error::illegal_argument(format!("Invalid unit [{other}]")))?,
    })
}

fn sort_specs(name: &str, value: &Value) -> Result<Vec<SortSpec>> {
    let one = |v: &Value| -> Result<SortSpec> {
        match v {
            Value::String(field) => Ok(SortSpec {
                field: field.clone(),
                asc: true,
            }),
            Value::Object(map) if map.len() == 1 => {
                let (field, order) = map.iter().next().expect("one entry");
                let order = match order {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => match o.get("order") {
                        Some(Value::String(s)) => s.clone(),
                        None => "asc".to_string(),
                        Some(other) => return Err(unknown_key(name, "order", other)),
                    },
                    other => return Err(unknown_key(name, field, other)),
                };
                let asc = match order.to_ascii_lowercase().as_str() {
                    "asc" => true,
                    "desc" => false,
                    _ => {
                        return Err(Error::illegal_argument(format!(
                            "Unknown SortOrder [{order}]"
                        )))
                    }
                };
                Ok(SortSpec {
                    field: field.clone(),
                    asc,
                })
            }
            other => Err(unknown_key(name, "sort", other)),
        }
    };
    match value {
        Value::Array(list) => list.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// Parses the body of the pipeline aggregation `name` of type `type_name`.
pub fn parse_pipeline(
    name: &str,
    type_name: &str,
    body: &Value,
    meta: Option<Map<String, Value>>,
) -> Result<PipelineAgg> {
    let Value::Object(fields) = body else {
        return Err(Error::parsing(format!(
            "Expected [START_OBJECT] under [{type_name}], but got a [{}]",
            token(body)
        )));
    };
    let mut buckets_path = None;
    let mut gap_policy = GapPolicy::Skip;
    let mut format = None;
    let mut unit = None;
    let mut lag = 1usize;
    let mut window = None;
    let mut shift = 0i64;
    let mut script = None;
    let mut sort = Vec::new();
    let mut from = 0usize;
    let mut size = None;
    let mut sigma = 2.0;
    let mut percents = None;
    let mut keyed = true;
    let allowed: &[&str] = match type_name {
        "derivative" => &["buckets_path", "gap_policy", "format", "unit"],
        "cumulative_sum" => &["buckets_path", "format"],
        "serial_diff" => &["buckets_path", "gap_policy", "format", "lag"],
        "moving_fn" => &[
            "buckets_path",
            "gap_policy",
            "format",
            "window",
            "shift",
            "script",
        ],
        "bucket_script" => &["buckets_path", "gap_policy", "format", "script"],
        "bucket_selector" => &["buckets_path", "gap_policy", "script"],
        "bucket_sort" => &["gap_policy", "sort", "from", "size"],
        "extended_stats_bucket" => &["buckets_path", "gap_policy", "format", "sigma"],
        "percentiles_bucket" => &["buckets_path", "gap_policy", "format", "percents", "keyed"],
        _ => &["buckets_path", "gap_policy", "format"],
    };
    for (key, value) in fields {
        if !allowed.contains(&key.as_str()) {
            return Err(unknown_key(name, key, value));
        }
        match key.as_str() {
            "buckets_path" => buckets_path = Some(paths(name, value)?),
            "gap_policy" => gap_policy = GapPolicy::parse(&string(name, key, value)?)?,
            "format" => format = Some(DecimalFormat::parse(&string(name, key, value)?)?),
            "unit" => unit = Some(unit_millis(&string(name, key, value)?)?),
            "lag" => {
                let n = int_param(type_name, key, value)?;
                if n <= 0 {
                    return Err(Error::parsing(format!(
                        "Lag must be a positive, non-zero integer.  Value supplied was{n} in [{name}]: [lag]."
                    )));
                }
                lag = n as usize;
            }
            "window" => {
                let n = int_param(type_name, key, value)?;
                if n <= 0 {
                    return Err(Error::illegal_argument(
                        "[window] must be a positive, non-zero integer.",
                    ));
                }
                window = Some(n as usize);
            }
            "shift" => shift = int_param(type_name, key, value)?,
            "script" => script = Some(value.clone()),
            "sort" => sort = sort_specs(name, value)?,
            "from" => {
                let n = int_param(type_name, key, value)?;
                from = usize::try_from(n).map_err(|_| {
                    Error::illegal_argument(format!("[from] must be a non-negative integer: [{n}]"))
                })?;
            }
            "size" => {
                let n = int_param(type_name, key, value)?;
                if n <= 0 {
                    return Err(Error::illegal_argument(format!(
                        "[size] must be a positive integer: [{n}]"
                    )));
                }
                size = Some(n as usize);
            }
            "sigma" => {
                sigma = f64_param(type_name, key, value)?;
                if sigma < 0.0 {
                    return Err(Error::illegal_argument(format!(
                        "[sigma] must be greater than or equal to 0. Found [{sigma}] in [{name}]"
                    )));
                }
            }
            "percents" => {
                let Value::Array(list) = value else {
                    return Err(unknown_key(name, key, value));
                };
                let mut out = Vec::with_capacity(list.len());
                for v in list {
                    let p = f64_param(type_name, key, v)?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err(Error::illegal_argument(format!(
                            "percent must be in [0,100], got [{p}]: [{name}]"
                        )));
                    }
                    out.push(p);
                }
                percents = Some(out);
            }
            "keyed" => {
                keyed = crate::request::bool_param(type_name, key, value)?;
            }
            _ => unreachable!("checked against the allowed keys"),
        }
    }
    let required = |what: &str| {
        Error::parsing(format!(
            "Missing required field [{what}] for {type_name} aggregation [{name}]"
        ))
    };
    let paths = match (type_name, buckets_path) {
        // its sort fields are paths too: validated, and ordering it after the pipelines
        // whose results it sorts by
        ("bucket_sort", _) => sort
            .iter()
            .map(|s| Ok((s.field.clone(), BucketsPath::parse(&s.field)?)))
            .collect::<Result<_>>()?,
        (_, Some(p)) => p,
        (_, None) => return Err(required("buckets_path")),
    };
    let single_path = !matches!(
        type_name,
        "bucket_script" | "bucket_selector" | "bucket_sort"
    );
    if single_path && paths.len() != 1 {
        return Err(Error::illegal_argument(format!(
            "[{type_name}] aggregation [{name}] must have exactly one buckets_path"
        )));
    }
    let mut script_of =
        |what: &str| -> Result<Value> { script.take().ok_or_else(|| required(what)) };
    let metric = |kind: MetricKind| PipelineKind::BucketMetric(BucketMetric { kind });
    let kind = match type_name {
        "derivative" => PipelineKind::Derivative { unit },
        "cumulative_sum" => PipelineKind::CumulativeSum,
        "serial_diff" => PipelineKind::SerialDiff { lag },
        "moving_fn" => {
            let script = script_of("script")?;
            let Some(window) = window else {
                return Err(Error::illegal_argument("Required [window]"));
            };
            PipelineKind::MovingFn {
                window,
                shift,
                function: MovingFunction::parse(&script)?,
            }
        }
        "bucket_script" => PipelineKind::BucketScript {
            script: Script::parse(name, &script_of("script")?)?,
        },
        "bucket_selector" => PipelineKind::BucketSelector {
            script: Script::parse(name, &script_of("script")?)?,
        },
        "bucket_sort" => PipelineKind::BucketSort { sort, from, size },
        "avg_bucket" => metric(MetricKind::Avg),
        "max_bucket" => metric(MetricKind::Max),
        "min_bucket" => metric(MetricKind::Min),
        "sum_bucket" => metric(MetricKind::Sum),
        "stats_bucket" => metric(MetricKind::Stats),
        "extended_stats_bucket" => metric(MetricKind::ExtendedStats { sigma }),
        "percentiles_bucket" => metric(MetricKind::Percentiles {
            percents: percents.unwrap_or_else(|| vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]),
            keyed,
        }),
        other => {
            return Err(Error::parsing(format!(
                "Unknown aggregation type [{other}]"
            )));
        }
    };
    Ok(PipelineAgg {
        name: name.to_string(),
        type_name: static_name(type_name),
        paths,
        gap_policy,
        format,
        kind,
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(type_name: &str, body: Value) -> Result<PipelineAgg> {
        parse_pipeline("p", type_name, &body, None)
    }

    #[test]
    fn parameters_and_their_errors() {
        let p = parse(
            "derivative",
            json!({"buckets_path": "s", "unit": "day", "gap_policy": "insert_zeros", "format": "0.0"}),
        )
        .unwrap();
        assert_eq!(
            p.kind,
            PipelineKind::Derivative {
                unit: Some(86_400_000.0)
            }
        );
        assert_eq!(p.gap_policy, GapPolicy::InsertZeros);
        let reason = |t: &str, b: Value| parse(t, b).unwrap_err().reason().to_string();
        assert_eq!(
            reason("derivative", json!({})),
            "Missing required field [buckets_path] for derivative aggregation [p]"
        );
        assert_eq!(
            reason("derivative", json!({"buckets_path": "_count", "bogus": 1})),
            "Unexpected token VALUE_NUMBER in [p]."
        );
        assert_eq!(
            reason(
                "derivative",
                json!({"buckets_path": "_count", "gap_policy": "bogus"})
            ),
            "Invalid gap policy: [bogus], accepted values: [insert_zeros, skip]"
        );
        assert_eq!(
            reason("serial_diff", json!({"buckets_path": "_count", "lag": 0})),
            "Lag must be a positive, non-zero integer.  Value supplied was0 in [p]: [lag]."
        );
        assert_eq!(
            reason(
                "moving_fn",
                json!({"buckets_path": "_count", "script": "MovingFunctions.max(values)"})
            ),
            "Required [window]"
        );
        assert_eq!(
            reason("bucket_sort", json!({"from": -1})),
            "[from] must be a non-negative integer: [-1]"
        );
        assert_eq!(
            reason("bucket_sort", json!({"size": 0})),
            "[size] must be a positive integer: [0]"
        );
        let s = parse(
            "bucket_script",
            json!({"buckets_path": {"a": "x>y.avg", "b": "_count"}, "script": "params.a / params.b"}),
        )
        .unwrap();
        assert_eq!(s.paths.len(), 2);
        let sort = parse(
            "bucket_sort",
            json!({"sort": ["_key", {"s": {"order": "desc"}}, {"_count": "desc"}]}),
        )
        .unwrap();
        let PipelineKind::BucketSort { sort, .. } = sort.kind else {
            panic!()
        };
        assert_eq!(sort.len(), 3);
        assert_eq!(
            parse("bucket_sort", json!({"sort": ["s.avg"]}))
                .unwrap()
                .paths[0]
                .1
                .elements[0]
                .name,
            "s"
        );
        assert!(sort[0].asc && !sort[1].asc && !sort[2].asc);
    }
}
