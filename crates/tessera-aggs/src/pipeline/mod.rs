//! Pipeline aggregations: aggregations of other aggregations' results.
//!
//! They read no documents, so shards never see them: the request parser keeps them apart from
//! the collected aggregations (`AggRequest::pipelines`, and the top level's list), the two-level
//! reduce runs untouched, and [`apply`] runs them once at the coordinator on the final rendered
//! JSON — after every bucket list is complete, ordered, filled and trimmed, which is exactly
//! what OpenSearch's pipelines see after its final reduce.
//!
//! - `buckets_path`: parsing paths and reading a value out of a rendered bucket;
//! - `parent`: derivative, cumulative_sum, serial_diff, moving_fn, bucket_script,
//!   bucket_selector, bucket_sort (they rewrite their parent's buckets);
//! - `sibling`: the `*_bucket` aggregations (a value from a sibling's buckets);
//! - `script`: the Painless scripts of bucket_script and bucket_selector;
//! - `moving`: moving_fn's `MovingFunctions.*` calls;
//! - `decimal`: the DecimalFormat patterns of `format`.

pub mod buckets_path;
mod decimal;
mod moving;
mod parent;
mod parse;
pub mod script;
mod sibling;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::request::{AggKind, AggRequest};
pub use buckets_path::{BucketsPath, GapPolicy};
pub use decimal::DecimalFormat;
pub use parse::{is_pipeline_type, parse_pipeline};

/// One named pipeline aggregation.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineAgg {
    pub name: String,
    /// The request's type name (`derivative`, `max_bucket`, ...).
    pub type_name: &'static str,
    /// The paths it reads, by variable name (`_value` for the single-path types).
    pub paths: Vec<(String, BucketsPath)>,
    pub gap_policy: GapPolicy,
    pub format: Option<DecimalFormat>,
    pub kind: PipelineKind,
    pub meta: Option<Map<String, Value>>,
}

/// What each pipeline type computes, with its own parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineKind {
    /// `unit`: milliseconds per unit, for `normalized_value`.
    Derivative {
        unit: Option<f64>,
    },
    CumulativeSum,
    SerialDiff {
        lag: usize,
    },
    MovingFn {
        window: usize,
        shift: i64,
        function: moving::MovingFunction,
    },
    BucketScript {
        script: script::Script,
    },
    BucketSelector {
        script: script::Script,
    },
    BucketSort {
        sort: Vec<parent::SortSpec>,
        from: usize,
        size: Option<usize>,
    },
    BucketMetric(sibling::BucketMetric),
}

impl PipelineAgg {
    /// Parent pipelines rewrite the buckets of the aggregation they are declared in; sibling
    /// pipelines add one result next to the aggregation they read.
    pub fn is_parent(&self) -> bool {
        !matches!(self.kind, PipelineKind::BucketMetric(_))
    }

    /// The result's type name under `typed_keys`.
    pub fn typed_name(&self) -> &'static str {
        match &self.kind {
            PipelineKind::Derivative { .. } => "derivative",
            PipelineKind::BucketMetric(m) => m.typed_name(),
            _ => "simple_value",
        }
    }

    fn needs_histogram_parent(&self) -> bool {
        matches!(
            self.kind,
            PipelineKind::Derivative { .. }
                | PipelineKind::CumulativeSum
                | PipelineKind::SerialDiff { .. }
                | PipelineKind::MovingFn { .. }
        )
    }
}

fn is_histogram(kind: &AggKind) -> bool {
    matches!(
        kind,
        AggKind::Histogram(_) | AggKind::DateHistogram(_) | AggKind::AutoDateHistogram(_)
    )
}

fn is_multi_bucket(kind: &AggKind) -> bool {
    kind.is_bucket() && !kind.is_single_bucket()
}

/// Checks every pipeline of the tree before anything runs, with OpenSearch's request
/// validation errors: parents of the right type, paths that name a sibling, no cycles.
pub fn validate(aggs: &[AggRequest], pipelines: &[PipelineAgg]) -> Result<()> {
    let mut problems = Vec::new();
    validate_level(aggs, pipelines, None, &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::action_request_validation(&problems))
    }
}

fn validate_level(
    aggs: &[AggRequest],
    pipelines: &[PipelineAgg],
    parent: Option<&AggRequest>,
    problems: &mut Vec<String>,
) {
    for p in pipelines {
        let type_name = p.type_name;
        if p.needs_histogram_parent() {
            match parent {
                None => problems.push(format!(
                    "{type_name} aggregation [{}] must have a histogram, date_histogram or auto_date_histogram as parent but doesn't have a parent",
                    p.name
                )),
                Some(agg) if !is_histogram(&agg.kind) => problems.push(format!(
                    "{type_name} aggregation [{}] must have a histogram, date_histogram or auto_date_histogram as parent",
                    p.name
                )),
                _ => {}
            }
        } else if p.is_parent() {
            match parent {
                None => problems.push(format!(
                    "{type_name} aggregation [{}] must be declared inside of another aggregation",
                    p.name
                )),
                Some(agg) if !is_multi_bucket(&agg.kind) => problems.push(format!(
                    "{type_name} aggregation [{}] must be declared inside of a multi-bucket aggregation",
                    p.name
                )),
                _ => {}
            }
        }
        for (_, path) in &p.paths {
            let first = &path.elements[0].name;
            if p.is_parent() {
                let known = buckets_path::is_special(first)
                    || aggs.iter().any(|a| &a.name == first)
                    || pipelines
                        .iter()
                        .any(|o| &o.name == first && o.name != p.name);
                if !known {
                    problems.push(format!("No aggregation found for path [{}]", path.text));
                }
                continue;
            }
            let Some(target) = aggs.iter().find(|a| &a.name == first) else {
                problems.push(format!("No aggregation found for path [{}]", path.text));
                continue;
            };
            if !is_multi_bucket(&target.kind) {
                problems.push(format!(
                    "The first aggregation in buckets_path must be a multi-bucket aggregation for aggregation [{}] found :{} for buckets path: {}",
                    p.name,
                    target.kind.type_name(),
                    path.text
                ));
                continue;
            }
            if let Some(second) = path.elements.get(1) {
                let known = buckets_path::is_special(&second.name)
                    || target.subs.iter().any(|a| a.name == second.name)
                    || target.pipelines.iter().any(|o| o.name == second.name);
                if !known {
                    problems.push(format!(
                        "No aggregation [{}] found for path [{}]",
                        second.name, path.text
                    ));
                }
            }
        }
    }
    if let Err(name) = order(pipelines) {
        problems.push(format!(
            "Cyclical dependency found with pipeline aggregator [{name}]"
        ));
    }
    for agg in aggs {
        validate_level(&agg.subs, &agg.pipelines, Some(agg), problems);
    }
}

/// The pipelines of one level in an order where each runs after the siblings its paths read
/// (declaration order otherwise); `Err(name)` on a cycle.
fn order(pipelines: &[PipelineAgg]) -> std::result::Result<Vec<usize>, String> {
    fn visit(
        i: usize,
        pipelines: &[PipelineAgg],
        state: &mut [u8],
        out: &mut Vec<usize>,
    ) -> std::result::Result<(), String> {
        match state[i] {
            2 => return Ok(()),
            1 => return Err(pipelines[i].name.clone()),
            _ => {}
        }
        state[i] = 1;
        for (_, path) in &pipelines[i].paths {
            let first = &path.elements[0].name;
            if let Some(j) = pipelines
                .iter()
                .position(|p| &p.name == first && p.name != pipelines[i].name)
            {
                visit(j, pipelines, state, out)?;
            }
        }
        state[i] = 2;
        out.push(i);
        Ok(())
    }
    let mut state = vec![0u8; pipelines.len()];
    let mut out = Vec::with_capacity(pipelines.len());
    for i in 0..pipelines.len() {
        visit(i, pipelines, &mut state, &mut out)?;
    }
    Ok(out)
}

/// [`order`] at run time (validation already refused cycles).
fn run_order(pipelines: &[PipelineAgg]) -> Result<Vec<usize>> {
    order(pipelines).map_err(|name| {
        Error::illegal_argument(format!(
            "Cyclical dependency found with pipeline aggregator [{name}]"
        ))
    })
}

/// Whether any pipeline is declared in `aggs` or below.
fn has_pipelines(agg: &AggRequest) -> bool {
    !agg.pipelines.is_empty() || agg.subs.iter().any(has_pipelines)
}

/// The key an aggregation's result has in the rendered JSON.
pub(crate) fn result_key(name: &str, typed_name: &str, typed_keys: bool) -> String {
    if typed_keys {
        format!("{typed_name}#{name}")
    } else {
        name.to_string()
    }
}

/// Finds the rendered result of the aggregation called `name` in `map` (under `typed_keys`
/// the key is `type#name`; type names never contain `#`).
pub(crate) fn find_key(map: &Map<String, Value>, name: &str, typed_keys: bool) -> Option<String> {
    if !typed_keys {
        return map.contains_key(name).then(|| name.to_string());
    }
    map.keys()
        .find(|k| k.split_once('#').is_some_and(|(_, n)| n == name))
        .cloned()
}

/// Runs the pipelines of the whole tree on the final rendered aggregations `out` (the value
/// of `aggregations`), innermost first, each level's pipelines in dependency order.
pub fn apply(
    out: &mut Map<String, Value>,
    aggs: &[AggRequest],
    pipelines: &[PipelineAgg],
    typed_keys: bool,
) -> Result<()> {
    apply_level(out, aggs, pipelines, typed_keys)
}

fn apply_level(
    level: &mut Map<String, Value>,
    aggs: &[AggRequest],
    pipelines: &[PipelineAgg],
    typed_keys: bool,
) -> Result<()> {
    for agg in aggs.iter().filter(|a| has_pipelines(a)) {
        let Some(key) = find_key(level, &agg.name, typed_keys) else {
            continue;
        };
        let Some(Value::Object(result)) = level.get_mut(&key) else {
            continue;
        };
        apply_in_agg(result, agg, typed_keys)?;
    }
    run_siblings(level, pipelines, typed_keys)
}

/// Runs the pipelines declared inside `agg` (and below) on its rendered `result`.
fn apply_in_agg(result: &mut Map<String, Value>, agg: &AggRequest, typed_keys: bool) -> Result<()> {
    if agg.kind.is_single_bucket() {
        return apply_level(result, &agg.subs, &agg.pipelines, typed_keys);
    }
    // the buckets' own sub-aggregations first
    for bucket in buckets_path::buckets_mut(result) {
        for sub in agg.subs.iter().filter(|a| has_pipelines(a)) {
            if let Some(key) = find_key(bucket, &sub.name, typed_keys) {
                if let Some(Value::Object(r)) = bucket.get_mut(&key) {
                    apply_in_agg(r, sub, typed_keys)?;
                }
            }
        }
    }
    let ordered = run_order(&agg.pipelines)?;
    for i in ordered {
        let p = &agg.pipelines[i];
        if p.is_parent() {
            parent::run(result, p, typed_keys)?;
        } else {
            for bucket in buckets_path::buckets_mut(result) {
                sibling::run(bucket, p, typed_keys)?;
            }
        }
    }
    Ok(())
}

fn run_siblings(
    level: &mut Map<String, Value>,
    pipelines: &[PipelineAgg],
    typed_keys: bool,
) -> Result<()> {
    let ordered = run_order(pipelines)?;
    for i in ordered {
        // parent pipelines only reach here inside single-bucket aggregations, which
        // validation refuses
        if !pipelines[i].is_parent() {
            sibling::run(level, &pipelines[i], typed_keys)?;
        }
    }
    Ok(())
}

/// A single-value result (`simple_value`, `derivative`): `value` (null when not finite) and
/// `value_as_string` with a `format`.
pub(crate) fn value_object(p: &PipelineAgg, value: f64) -> Map<String, Value> {
    let mut out = meta_object(p);
    out.insert("value".into(), number(value));
    if let (Some(f), true) = (&p.format, value.is_finite()) {
        out.insert("value_as_string".into(), Value::String(f.format(value)));
    }
    out
}

/// A new result object, with `meta` first as OpenSearch writes it.
pub(crate) fn meta_object(p: &PipelineAgg) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(meta) = &p.meta {
        out.insert("meta".into(), Value::Object(meta.clone()));
    }
    out
}

/// A JSON number, or null for NaN and infinities.
pub(crate) fn number(value: f64) -> Value {
    serde_json::Number::from_f64(value)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// OpenSearch's error for a path that does not end at a number.
pub(crate) fn execution_error(reason: impl Into<String>) -> Error {
    Error::new("aggregation_execution_exception", 400, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations_with_pipelines;
    use serde_json::json;

    fn problems(body: Value) -> String {
        parse_aggregations_with_pipelines(&body)
            .unwrap_err()
            .reason()
            .to_string()
    }

    #[test]
    fn validation_matches_opensearch() {
        assert_eq!(
            problems(json!({"d": {"derivative": {"buckets_path": "_count"}}})),
            "Validation Failed: 1: derivative aggregation [d] must have a histogram, date_histogram or auto_date_histogram as parent but doesn't have a parent;"
        );
        assert_eq!(
            problems(json!({"t": {"terms": {"field": "k"}, "aggs": {
                "d": {"moving_fn": {"buckets_path": "_count", "window": 2, "script": "MovingFunctions.max(values)"}}}}})),
            "Validation Failed: 1: moving_fn aggregation [d] must have a histogram, date_histogram or auto_date_histogram as parent;"
        );
        assert_eq!(
            problems(
                json!({"h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
                "d": {"derivative": {"buckets_path": "nope"}}}}})
            ),
            "Validation Failed: 1: No aggregation found for path [nope];"
        );
        assert_eq!(
            problems(json!({"h": {"histogram": {"field": "n", "interval": 1}},
                "x": {"max_bucket": {"buckets_path": "h>nope"}}})),
            "Validation Failed: 1: No aggregation [nope] found for path [h>nope];"
        );
        assert_eq!(
            problems(json!({"d": {"bucket_script": {"buckets_path": {"a": "_count"}, "script": "params.a"}}})),
            "Validation Failed: 1: bucket_script aggregation [d] must be declared inside of another aggregation;"
        );
        assert_eq!(
            problems(
                json!({"h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
                "srt": {"bucket_sort": {"sort": ["_key", "nope"]}}}}})
            ),
            "Validation Failed: 1: No aggregation found for path [nope];"
        );
        assert!(problems(
            json!({"h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
            "a": {"derivative": {"buckets_path": "b"}},
            "b": {"derivative": {"buckets_path": "a"}}}}})
        )
        .contains("Cyclical dependency"));
    }

    #[test]
    fn typed_keys_name_pipeline_results_by_type() {
        let (aggs, top) = parse_aggregations_with_pipelines(&json!({
            "t": {"terms": {"field": "k"}, "aggs": {
                "s": {"sum": {"field": "n"}},
                "bs": {"bucket_script": {"buckets_path": {"s": "s"}, "script": "params.s * 2"}}}},
            "mx": {"max_bucket": {"buckets_path": "t>bs"}},
            "st": {"stats_bucket": {"buckets_path": "t>s"}}
        }))
        .unwrap();
        let mut out = json!({"sterms#t": {"buckets": [
            {"key": "a", "doc_count": 1, "sum#s": {"value": 2.0}},
            {"key": "b", "doc_count": 1, "sum#s": {"value": 3.0}}
        ]}})
        .as_object()
        .unwrap()
        .clone();
        apply(&mut out, &aggs, &top, true).unwrap();
        assert_eq!(
            out["sterms#t"]["buckets"][1]["simple_value#bs"],
            json!({"value": 6.0})
        );
        assert_eq!(
            out["bucket_metric_value#mx"],
            json!({"value": 6.0, "keys": ["b"]})
        );
        assert_eq!(out["stats_bucket#st"]["sum"], json!(5.0));
    }

    #[test]
    fn runtime_path_errors_are_400s() {
        let (aggs, top) = parse_aggregations_with_pipelines(&json!({
            "h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
                "st": {"stats": {"field": "n"}},
                "d": {"derivative": {"buckets_path": "st"}}}}
        }))
        .unwrap();
        let mut out = json!({"h": {"buckets": [
            {"key": 0.0, "doc_count": 1, "st": {"count": 1, "min": 1.0, "max": 1.0, "avg": 1.0, "sum": 1.0}}
        ]}})
        .as_object()
        .unwrap()
        .clone();
        let e = apply(&mut out, &aggs, &top, false).unwrap_err();
        assert_eq!(e.status(), 400);
        assert_eq!(e.kind(), "aggregation_execution_exception");
    }

    #[test]
    fn dependencies_run_first() {
        let (aggs, _) = parse_aggregations_with_pipelines(&json!({
            "h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
                "c": {"cumulative_sum": {"buckets_path": "d"}},
                "d": {"derivative": {"buckets_path": "_count"}}}}
        }))
        .unwrap();
        assert_eq!(order(&aggs[0].pipelines).unwrap(), vec![1, 0]);
    }
}
