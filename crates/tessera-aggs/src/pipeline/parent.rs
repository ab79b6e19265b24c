//! Parent pipelines: they walk the buckets of the aggregation they are declared in (in its
//! final order) and add a value to each bucket, or filter and reorder the buckets.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{Map, Value};
use tessera_common::Result;
use tessera_script::{ScriptContext, Value as ScriptValue};

use super::buckets_path::{bucket_value, buckets_mut, BucketsPath, GapPolicy};
use super::{execution_error, number, result_key, value_object, PipelineAgg, PipelineKind};

/// One `sort` entry of bucket_sort.
#[derive(Clone, Debug, PartialEq)]
pub struct SortSpec {
    pub field: String,
    pub asc: bool,
}

/// Runs the parent pipeline `p` over the buckets of `result` (the rendered aggregation it is
/// declared in).
pub(crate) fn run(
    result: &mut Map<String, Value>,
    p: &PipelineAgg,
    typed_keys: bool,
) -> Result<()> {
    let key = result_key(&p.name, p.typed_name(), typed_keys);
    let read = |bucket: &Map<String, Value>, path: &BucketsPath, gap: GapPolicy| {
        bucket_value(bucket, path, gap, typed_keys)
    };
    match &p.kind {
        PipelineKind::Derivative { unit } => {
            let path = &p.paths[0].1;
            let mut last: Option<f64> = None;
            let mut last_key = f64::NAN;
            for bucket in buckets_mut(result) {
                let this = read(bucket, path, p.gap_policy)?;
                let this_key = bucket
                    .get("key")
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::NAN);
                if let (Some(previous), Some(current)) = (last, this) {
                    let gradient = current - previous;
                    let mut out = value_object(p, gradient);
                    if let Some(unit) = unit {
                        let normalized = gradient / ((this_key - last_key) / unit);
                        let shown = if gradient.is_finite() {
                            number(normalized)
                        } else {
                            Value::Null
                        };
                        out.insert("normalized_value".into(), shown);
                        if let (Some(f), true) = (&p.format, gradient.is_finite()) {
                            if normalized.is_finite() {
                                out.insert(
                                    "normalized_value_as_string".into(),
                                    Value::String(f.format(normalized)),
                                );
                            }
                        }
                    }
                    bucket.insert(key.clone(), Value::Object(out));
                }
                last = this;
                last_key = this_key;
            }
        }
        PipelineKind::CumulativeSum => {
            let path = &p.paths[0].1;
            let mut sum = 0.0;
            for bucket in buckets_mut(result) {
                if let Some(v) = read(bucket, path, GapPolicy::InsertZeros)? {
                    if v.is_finite() {
                        sum += v;
                    }
                }
                bucket.insert(key.clone(), Value::Object(value_object(p, sum)));
            }
        }
        PipelineKind::SerialDiff { lag } => {
            let path = &p.paths[0].1;
            let mut window: std::collections::VecDeque<f64> = Default::default();
            for (seen, bucket) in buckets_mut(result).into_iter().enumerate() {
                let this = read(bucket, path, p.gap_policy)?.unwrap_or(f64::NAN);
                let lagged = if seen < *lag {
                    f64::NAN
                } else {
                    window.front().copied().unwrap_or(f64::NAN)
                };
                window.push_back(this);
                if window.len() > *lag {
                    window.pop_front();
                }
                if !this.is_nan() && !lagged.is_nan() {
                    bucket.insert(key.clone(), Value::Object(value_object(p, this - lagged)));
                }
            }
        }
        PipelineKind::MovingFn {
            window,
            shift,
            function,
        } => {
            let path = &p.paths[0].1;
            let mut values = Vec::new();
            for bucket in buckets_mut(result) {
                if let Some(v) = read(bucket, path, p.gap_policy)?.filter(|v| !v.is_nan()) {
                    values.push(v);
                }
            }
            let clamp = |i: i64| i.clamp(0, values.len() as i64) as usize;
            let mut index = 0i64;
            for bucket in buckets_mut(result) {
                if read(bucket, path, p.gap_policy)?.is_some_and(|v| !v.is_nan()) {
                    let from = clamp(index - *window as i64 + shift);
                    let to = clamp(index + shift);
                    let slice = if from < to {
                        &values[from..to]
                    } else {
                        &[][..]
                    };
                    let value = function.compute(slice);
                    bucket.insert(key.clone(), Value::Object(value_object(p, value)));
                    index += 1;
                }
            }
        }
        PipelineKind::BucketScript { script } => {
            for bucket in buckets_mut(result) {
                let Some(vars) = variables(bucket, p, typed_keys, true)? else {
                    continue;
                };
                let value = match script.run(ScriptContext::BucketScript, &vars)? {
                    // no value: the bucket is left as it is
                    ScriptValue::Null => continue,
                    ScriptValue::Int(i) => i as f64,
                    ScriptValue::Long(i) => i as f64,
                    ScriptValue::Float(f) => f as f64,
                    ScriptValue::Double(f) => f,
                    other => {
                        return Err(execution_error(format!(
                            "bucket_script aggregation [{}] must return a number, not [{}]",
                            p.name,
                            other.to_java_string()
                        )))
                    }
                };
                bucket.insert(key.clone(), Value::Object(value_object(p, value)));
            }
        }
        PipelineKind::BucketSelector { script } => {
            let mut keep = Vec::new();
            for bucket in buckets_mut(result) {
                let vars = variables(bucket, p, typed_keys, false)?.unwrap_or_default();
                match script.run(ScriptContext::BucketSelector, &vars)? {
                    ScriptValue::Bool(b) => keep.push(b),
                    _ => {
                        return Err(execution_error(format!(
                            "bucket_selector aggregation [{}] must return a boolean",
                            p.name
                        )))
                    }
                }
            }
            let mut keep = keep.into_iter();
            retain(result, |_| keep.next().unwrap_or(true));
        }
        PipelineKind::BucketSort { sort, from, size } => {
            let paths = sort
                .iter()
                .map(|s| {
                    if s.field == "_key" {
                        Ok(None)
                    } else {
                        BucketsPath::parse(&s.field).map(Some)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let mut keys: Vec<Vec<Option<SortValue>>> = Vec::new();
            for bucket in buckets_mut(result) {
                let mut row = Vec::with_capacity(paths.len());
                for path in &paths {
                    row.push(match path {
                        None => match bucket.get("key") {
                            Some(Value::Number(n)) => n.as_f64().map(SortValue::Number),
                            Some(Value::String(s)) => Some(SortValue::Text(s.clone())),
                            _ => None,
                        },
                        Some(path) => read(bucket, path, p.gap_policy)?
                            .filter(|v| !(p.gap_policy == GapPolicy::Skip && v.is_nan()))
                            .map(SortValue::Number),
                    });
                }
                keys.push(row);
            }
            let mut order: Vec<usize> = (0..keys.len()).collect();
            if !sort.is_empty() {
                order.sort_by(|a, b| compare(&keys[*a], &keys[*b], sort));
            }
            let end = size.map_or(order.len(), |s| from.saturating_add(s).min(order.len()));
            let chosen: Vec<usize> = order.get(*from..end).unwrap_or_default().to_vec();
            reorder(result, &chosen);
        }
        PipelineKind::BucketMetric(_) => unreachable!("sibling pipelines do not run here"),
    }
    Ok(())
}

/// The script variables of a bucket; `None` when a gap makes `skip` leave the bucket alone.
fn variables(
    bucket: &Map<String, Value>,
    p: &PipelineAgg,
    typed_keys: bool,
    skip_gaps: bool,
) -> Result<Option<HashMap<String, Option<f64>>>> {
    let mut vars = HashMap::new();
    for (var, path) in &p.paths {
        let value = bucket_value(bucket, path, p.gap_policy, typed_keys)?;
        if skip_gaps && p.gap_policy == GapPolicy::Skip && value.is_none_or(f64::is_nan) {
            return Ok(None);
        }
        vars.insert(var.clone(), value);
    }
    Ok(Some(vars))
}

#[derive(Clone, Debug, PartialEq)]
enum SortValue {
    Number(f64),
    Text(String),
}

/// bucket_sort's order: missing values last whatever the direction, ties keep their order.
fn compare(a: &[Option<SortValue>], b: &[Option<SortValue>], sort: &[SortSpec]) -> Ordering {
    for ((x, y), spec) in a.iter().zip(b).zip(sort) {
        let ord = match (x, y) {
            (None, None) => continue,
            (None, Some(_)) => return Ordering::Greater,
            (Some(_), None) => return Ordering::Less,
            (Some(SortValue::Number(x)), Some(SortValue::Number(y))) => x.total_cmp(y),
            (Some(SortValue::Text(x)), Some(SortValue::Text(y))) => x.cmp(y),
            (Some(SortValue::Number(_)), Some(SortValue::Text(_))) => Ordering::Less,
            (Some(SortValue::Text(_)), Some(SortValue::Number(_))) => Ordering::Greater,
        };
        let ord = if spec.asc { ord } else { ord.reverse() };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// Keeps the buckets for which `keep` (called once per bucket, in order) says so.
fn retain(result: &mut Map<String, Value>, mut keep: impl FnMut(&Value) -> bool) {
    match result.get_mut("buckets") {
        Some(Value::Array(list)) => list.retain(|b| keep(b)),
        Some(Value::Object(keyed)) => keyed.retain(|_, b| keep(b)),
        _ => {}
    }
}

/// Replaces the buckets with those at `chosen`, in that order.
fn reorder(result: &mut Map<String, Value>, chosen: &[usize]) {
    match result.get_mut("buckets") {
        Some(Value::Array(list)) => {
            let mut old: Vec<Option<Value>> = std::mem::take(list).into_iter().map(Some).collect();
            *list = chosen.iter().filter_map(|i| old[*i].take()).collect();
        }
        Some(Value::Object(keyed)) => {
            let mut old: Vec<Option<(String, Value)>> =
                std::mem::take(keyed).into_iter().map(Some).collect();
            *keyed = chosen.iter().filter_map(|i| old[*i].take()).collect();
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::apply;
    use crate::request::parse_aggregations_with_pipelines;
    use serde_json::{json, Value};

    /// Runs `pipelines`, declared in a histogram `h` beside a sum `s`, on a hand-made
    /// rendering of `h`.
    fn run(pipelines: Value, rendered: Value) -> Value {
        let mut subs = pipelines.as_object().unwrap().clone();
        subs.insert("s".into(), json!({"sum": {"field": "x"}}));
        let (aggs, top) = parse_aggregations_with_pipelines(&json!({
            "h": {"histogram": {"field": "n", "interval": 1}, "aggs": subs}
        }))
        .unwrap();
        let mut out = json!({ "h": rendered }).as_object().unwrap().clone();
        apply(&mut out, &aggs, &top, false).unwrap();
        out["h"].clone()
    }

    fn histogram(values: &[(f64, u64, Option<f64>)]) -> Value {
        json!({"buckets": values.iter().map(|(k, c, s)| json!({"key": k, "doc_count": c, "s": {"value": s}})).collect::<Vec<_>>()})
    }

    #[test]
    fn derivative_cumulative_sum_and_serial_diff() {
        let h = histogram(&[
            (0.0, 1, Some(1.0)),
            (1.0, 2, Some(4.0)),
            (2.0, 0, Some(0.0)),
            (3.0, 1, Some(10.0)),
        ]);
        let out = run(
            json!({"d": {"derivative": {"buckets_path": "s"}},
                   "c": {"cumulative_sum": {"buckets_path": "s"}},
                   "sd": {"serial_diff": {"buckets_path": "_count", "lag": 2}}}),
            h,
        );
        let b = out["buckets"].as_array().unwrap();
        assert!(b[0].get("d").is_none());
        assert_eq!(b[1]["d"], json!({"value": 3.0}));
        assert_eq!(b[2]["d"], json!({"value": null}));
        assert_eq!(b[3]["d"], json!({"value": null}));
        assert_eq!(b[3]["c"], json!({"value": 15.0}));
        assert!(b[1].get("sd").is_none());
        assert_eq!(b[2]["sd"], json!({"value": -1.0}));
        assert_eq!(b[3]["sd"], json!({"value": -1.0}));
    }

    #[test]
    fn moving_fn_skips_gaps_and_shifts() {
        let h = histogram(&[
            (0.0, 1, Some(1.0)),
            (1.0, 0, Some(0.0)),
            (2.0, 1, Some(3.0)),
            (3.0, 1, Some(5.0)),
        ]);
        let out = run(
            json!({"m": {"moving_fn": {"buckets_path": "s", "window": 2, "script": "MovingFunctions.sum(values)"}},
                   "m1": {"moving_fn": {"buckets_path": "s", "window": 2, "shift": 1, "script": "MovingFunctions.max(values)"}}}),
            h,
        );
        let b = out["buckets"].as_array().unwrap();
        assert_eq!(b[0]["m"], json!({"value": 0.0}));
        assert!(b[1].get("m").is_none());
        assert_eq!(b[2]["m"], json!({"value": 1.0}));
        assert_eq!(b[3]["m"], json!({"value": 4.0}));
        assert_eq!(b[0]["m1"], json!({"value": 1.0}));
        assert_eq!(b[3]["m1"], json!({"value": 5.0}));
    }

    #[test]
    fn script_selector_and_sort() {
        let h = histogram(&[
            (0.0, 1, Some(1.0)),
            (1.0, 2, Some(4.0)),
            (2.0, 0, None),
            (3.0, 3, Some(9.0)),
        ]);
        let out = run(
            json!({"bs": {"bucket_script": {"buckets_path": {"s": "s", "c": "_count"}, "script": "params.s / params.c"}},
                   "sel": {"bucket_selector": {"buckets_path": {"c": "_count"}, "script": "params.c > 0"}},
                   "srt": {"bucket_sort": {"sort": [{"bs": {"order": "desc"}}], "size": 2}}}),
            h,
        );
        let b = out["buckets"].as_array().unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0]["key"], json!(3.0));
        assert_eq!(b[0]["bs"], json!({"value": 3.0}));
        assert_eq!(b[1]["key"], json!(1.0));
    }
}
