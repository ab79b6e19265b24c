//! `percentiles`: the values below which given percentages of the values fall.
//!
//! Parsing follows OpenSearch's percentiles builder (`percents`, `keyed`, `tdigest:
//! {compression}`, `hdr`, the values-source parameters and their errors); the collector and
//! intermediate result are shared with `percentile_ranks` ([`super::percentile_ranks`]), and the
//! state is the grouping-independent sketch of [`super::quantiles`]: exact up to
//! `50 × compression` distinct values, OpenSearch's t-digest interpolation on top. `hdr` is
//! refused with a clear error: Tessera keeps no HDR histograms.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::bucket::token;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::InternalAgg;
use crate::metric::quantiles::{capacity_for, CollectingSketch, QuantileSketch};
use crate::metric::{java_double_string, json_double, numeric_missing};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, f64_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericValues, ValueSource};

/// OpenSearch's default percents.
pub const DEFAULT_PERCENTS: [f64; 7] = [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0];
/// t-digest's default compression.
pub const DEFAULT_COMPRESSION: f64 = 100.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PercentilesKind {
    Percentiles,
    Ranks,
}

impl PercentilesKind {
    pub fn type_name(self) -> &'static str {
        match self {
            PercentilesKind::Percentiles => "percentiles",
            PercentilesKind::Ranks => "percentile_ranks",
        }
    }

    /// The parameter holding the keys: `percents` or `values`.
    fn keys_field(self) -> &'static str {
        match self {
            PercentilesKind::Percentiles => "percents",
            PercentilesKind::Ranks => "values",
        }
    }
}

/// A `percentiles` or `percentile_ranks` request.
#[derive(Clone, Debug, PartialEq)]
pub struct PercentilesRequest {
    pub kind: PercentilesKind,
    pub source: ValuesSourceParams,
    /// Percents (percentiles) or values (ranks), sorted ascending as OpenSearch sorts them.
    pub keys: Vec<f64>,
    pub keyed: bool,
    pub compression: f64,
}

/// `declareDoubleArray`: an array (or a single value) of numbers or numeric strings.
fn double_array(agg: &str, key: &str, value: &Value) -> Result<Vec<f64>> {
    let one = |v: &Value| match v {
        Value::Number(_) | Value::String(_) => f64_param(agg, key, v),
        other => Err(Error::x_content_parse(format!(
            "[{agg}] {key} doesn't support values of type: {}",
            token(other)
        ))),
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

fn failed_to_build(agg: &str, cause: Error) -> Error {
    Error::x_content_parse(format!(
        "Failed to build [{agg}] after last required field arrived"
    ))
    .caused_by(cause)
}

/// `tdigest: {compression}`.
fn parse_tdigest(agg: &str, value: &Value) -> Result<f64> {
    let wrap = |cause: Error| {
        Error::x_content_parse(format!("[{agg}] failed to parse field [tdigest]")).caused_by(cause)
    };
    let Value::Object(body) = value else {
        return Err(Error::x_content_parse(format!(
            "[{agg}] tdigest doesn't support values of type: {}",
            token(value)
        )));
    };
    let mut compression = DEFAULT_COMPRESSION;
    for (key, v) in body {
        match key.as_str() {
            "compression" => {
                let c = f64_param("tdigest", key, v).map_err(wrap)?;
                if c.is_nan() || c < 0.0 {
                    return Err(wrap(
                        Error::x_content_parse("[tdigest] failed to parse field [compression]")
                            .caused_by(Error::illegal_argument(format!(
                                "[compression] must be greater than or equal to 0. Found [{}]",
                                java_double_string(c)
                            ))),
                    ));
                }
                compression = c;
            }
            _ => return Err(wrap(unknown_field("tdigest", key))),
        }
    }
    Ok(compression)
}

impl PercentilesRequest {
    pub fn parse(
        kind: PercentilesKind,
        name: &str,
        body: &Map<String, Value>,
    ) -> Result<PercentilesRequest> {
        let agg = kind.type_name();
        let keys_field = kind.keys_field();
        let mut source = ValuesSourceParams::default();
        let mut keys = None;
        let mut keyed = true;
        let mut tdigest = None;
        let mut hdr = false;
        for (key, value) in body {
            if source.accept(agg, key, value)? {
                continue;
            }
            match key.as_str() {
                k if k == keys_field => keys = Some(double_array(agg, key, value)?),
                "keyed" => keyed = bool_param(agg, key, value)?,
                "tdigest" => tdigest = Some(parse_tdigest(agg, value)?),
                "hdr" => {
                    if !value.is_object() {
                        return Err(Error::x_content_parse(format!(
                            "[{agg}] hdr doesn't support values of type: {}",
                            token(value)
                        )));
                    }
                    hdr = true;
                }
                _ => return Err(unknown_field(agg, key)),
            }
        }
        if tdigest.is_some() && hdr {
            return Err(failed_to_build(
                agg,
                Error::illegal_argument("Only one percentiles method should be declared."),
            ));
        }
        let mut keys = match (keys, kind) {
            (Some(keys), _) => keys,
            (None, PercentilesKind::Percentiles) => DEFAULT_PERCENTS.to_vec(),
            (None, PercentilesKind::Ranks) => {
                return Err(failed_to_build(
                    agg,
                    Error::illegal_argument(format!("[values] must not be null: [{name}]")),
                ))
            }
        };
        if keys.is_empty() {
            let reason = match kind {
                PercentilesKind::Percentiles => format!("[percents] must not be empty: [{name}]"),
                PercentilesKind::Ranks => {
                    format!("[values] must not be an empty array: [{name}]")
                }
            };
            return Err(failed_to_build(agg, Error::illegal_argument(reason)));
        }
        if kind == PercentilesKind::Percentiles {
            if let Some(bad) = keys.iter().find(|p| !(0.0..=100.0).contains(*p)) {
                return Err(failed_to_build(
                    agg,
                    Error::illegal_argument(format!(
                        "percent must be in [0,100], got [{}]: [{name}]",
                        java_double_string(*bad)
                    )),
                ));
            }
        }
        keys.sort_by(f64::total_cmp);
        if hdr {
            return Err(Error::not_supported(&format!(
                "the [hdr] method of the [{agg}] aggregation (only [tdigest])"
            )));
        }
        source.require_field_at_parse()?;
        Ok(PercentilesRequest {
            kind,
            source,
            keys,
            keyed,
            compression: tdigest.unwrap_or(DEFAULT_COMPRESSION),
        })
    }

    /// Whether `metric` (as in `order: {"p.99": "desc"}`) names one of the keys.
    pub fn has_metric(&self, metric: &str) -> bool {
        metric.parse::<f64>().is_ok_and(|m| self.keys.contains(&m))
    }
}

// ---- collection (shared with percentile_ranks) ----

/// Collects a numeric field's values into one [`QuantileSketch`] per bucket; `output` wraps the
/// sketch into the aggregation's result (percentiles, percentile ranks and the median absolute
/// deviation share this collector).
pub(crate) struct SketchFactory {
    pub source: ValueSource,
    pub format: ValueFormat,
    pub missing: Option<f64>,
    pub capacity: u32,
    pub output: fn(InternalPercentiles) -> InternalAgg,
}

pub fn factory(
    _request: &AggRequest,
    percentiles: &PercentilesRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let agg = percentiles.kind.type_name();
    let source = ValueSource::resolve_params(ctx, &percentiles.source, agg, Accepts::Numeric)?;
    let format = ValueFormat::for_source(&source, percentiles.source.format.as_deref(), None)?;
    let missing = numeric_missing(agg, percentiles.source.missing.as_ref(), &source)?;
    Ok(Box::new(SketchFactory {
        source,
        format,
        missing,
        capacity: capacity_for(percentiles.compression),
        output: InternalAgg::Percentiles,
    }))
}

impl Factory for SketchFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(SketchCollector {
            source: self.source.clone(),
            format: self.format.clone(),
            missing: self.missing,
            capacity: self.capacity,
            output: self.output,
            values: None,
            sketches: Vec::new(),
        }))
    }
}

struct SketchCollector {
    source: ValueSource,
    format: ValueFormat,
    missing: Option<f64>,
    capacity: u32,
    output: fn(InternalPercentiles) -> InternalAgg,
    values: Option<NumericValues>,
    sketches: Vec<CollectingSketch>,
}

impl Collector for SketchCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(NumericValues::open(&self.source, segment.reader)?);
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(values) = &mut self.values else {
            return;
        };
        if !values.is_present() && self.missing.is_none() {
            return;
        }
        let sketches = &mut self.sketches;
        let capacity = self.capacity;
        values.for_each_f64_or(docs, self.missing, |p, v| {
            let parent = parents[p] as usize;
            if parent >= sketches.len() {
                sketches.resize_with(parent + 1, || CollectingSketch::new(capacity));
            }
            sketches[parent].add(v);
        });
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let sketch = match self.sketches.get_mut(parent as usize) {
            Some(s) => s.finish(),
            None => QuantileSketch::new(self.capacity),
        };
        Ok((self.output)(InternalPercentiles {
            sketch,
            format: self.format.clone(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalPercentiles {
    pub sketch: QuantileSketch,
    pub format: ValueFormat,
}

pub(crate) fn request_of(request: &AggRequest) -> Result<&PercentilesRequest> {
    match &request.kind {
        AggKind::Percentiles(r) | AggKind::PercentileRanks(r) => Ok(r),
        _ => Err(Error::illegal_state(
            "percentiles result for another request",
        )),
    }
}

impl InternalPercentiles {
    pub fn empty(request: &AggRequest) -> InternalPercentiles {
        let compression = request_of(request).map_or(DEFAULT_COMPRESSION, |r| r.compression);
        InternalPercentiles {
            sketch: QuantileSketch::new(capacity_for(compression)),
            format: ValueFormat::Raw,
        }
    }

    pub fn reduce(parts: Vec<InternalPercentiles>) -> Result<InternalPercentiles> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let mut parts = parts.into_iter();
        let Some(first) = parts.next() else {
            return Err(Error::illegal_state("nothing to reduce"));
        };
        let mut sketch = first.sketch;
        for part in parts {
            if part.sketch.capacity != sketch.capacity {
                return Err(Error::illegal_state(
                    "percentiles results with different compressions",
                ));
            }
            sketch.merge(&part.sketch);
        }
        Ok(InternalPercentiles { sketch, format })
    }

    /// The value of each key: quantiles (percentiles) or ranks in percent (percentile_ranks).
    fn values(&self, request: &PercentilesRequest) -> Vec<f64> {
        let reader = self.sketch.reader();
        request
            .keys
            .iter()
            .map(|&key| match request.kind {
                PercentilesKind::Percentiles => reader.quantile(key / 100.0),
                PercentilesKind::Ranks => {
                    // clamped to [0, 1] like OpenSearch (NaN stays NaN)
                    reader.cdf(key).clamp(0.0, 1.0) * 100.0
                }
            })
            .collect()
    }

    /// The value a bucket order by `name.key` uses.
    pub fn sort_value(&self, metric: Option<&str>, request: &AggRequest) -> Result<f64> {
        let percentiles = request_of(request)?;
        let Some(key) = metric.and_then(|m| m.parse::<f64>().ok()) else {
            return Ok(f64::NAN);
        };
        let one = PercentilesRequest {
            keys: vec![key],
            ..percentiles.clone()
        };
        Ok(self.values(&one)[0])
    }

    /// `values`: keyed (`{"99.0": v, "99.0_as_string": ...}`) or a list of `{key, value}`.
    pub fn render(self, request: &AggRequest) -> Result<Map<String, Value>> {
        let percentiles = request_of(request)?;
        let empty = self.sketch.count == 0;
        let values = self.values(percentiles);
        let formatter = self.format.formatter();
        let has_format = self.format != ValueFormat::Raw;
        let as_string = |v: f64| {
            if has_format && !empty {
                formatter.as_string(v)
            } else {
                None
            }
        };
        let number = |v: f64| if empty { Value::Null } else { json_double(v) };
        let rendered = if percentiles.keyed {
            let mut keyed = Map::new();
            for (&key, &v) in percentiles.keys.iter().zip(&values) {
                let name = java_double_string(key);
                keyed.insert(name.clone(), number(v));
                if let Some(text) = as_string(v) {
                    keyed.insert(format!("{name}_as_string"), json!(text));
                }
            }
            Value::Object(keyed)
        } else {
            let list = percentiles
                .keys
                .iter()
                .zip(&values)
                .map(|(&key, &v)| {
                    let mut entry = Map::new();
                    entry.insert("key".into(), json_double(key));
                    entry.insert("value".into(), number(v));
                    if let Some(text) = as_string(v) {
                        entry.insert("value_as_string".into(), json!(text));
                    }
                    Value::Object(entry)
                })
                .collect();
            Value::Array(list)
        };
        let mut out = Map::new();
        out.insert("values".into(), rendered);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, TestShard};
    use crate::request::parse_aggregations;

    fn parse_err(body: Value) -> Error {
        parse_aggregations(&json!({"p": {"percentiles": body}})).unwrap_err()
    }

    fn request(body: Value) -> AggRequest {
        parse_aggregations(&json!({"p": {"percentiles": body}}))
            .unwrap()
            .remove(0)
    }

    fn internal(values: &[f64], format: ValueFormat) -> InternalPercentiles {
        let mut sketch = QuantileSketch::new(5000);
        sketch.add_all(&mut values.to_vec());
        InternalPercentiles { sketch, format }
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let e = parse_err(json!({"field": "n", "percents": []}));
        assert_eq!(
            e.reason(),
            "Failed to build [percentiles] after last required field arrived"
        );
        assert_eq!(
            e.cause().unwrap().reason(),
            "[percents] must not be empty: [p]"
        );
        let e = parse_err(json!({"field": "n", "percents": [101]}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "percent must be in [0,100], got [101.0]: [p]"
        );
        let e = parse_err(json!({"field": "n", "tdigest": {"compression": -1}}));
        assert_eq!(e.reason(), "[percentiles] failed to parse field [tdigest]");
        assert_eq!(
            e.cause().unwrap().reason(),
            "[tdigest] failed to parse field [compression]"
        );
        assert_eq!(
            e.cause().unwrap().cause().unwrap().reason(),
            "[compression] must be greater than or equal to 0. Found [-1.0]"
        );
        let e = parse_err(json!({"field": "n", "tdigest": {"bogus": 1}}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[tdigest] unknown field [bogus]"
        );
        let e = parse_err(json!({"field": "n", "tdigest": {}, "hdr": {}}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "Only one percentiles method should be declared."
        );
        assert!(
            parse_err(json!({"field": "n", "hdr": {"number_of_significant_value_digits": 3}}))
                .reason()
                .contains("not supported")
        );
        assert_eq!(
            parse_err(json!({"field": "n", "compression": 100})).reason(),
            "[percentiles] unknown field [compression]"
        );
        assert_eq!(
            parse_err(json!({"field": "n", "values": [1]})).reason(),
            "[percentiles] unknown field [values]"
        );
        let r = request(
            json!({"field": "n", "percents": ["50", 1.5], "tdigest": {"compression": 200}}),
        );
        let p = request_of(&r).unwrap();
        assert_eq!(p.keys, vec![1.5, 50.0]);
        assert_eq!(p.compression, 200.0);
        assert!(p.has_metric("50") && p.has_metric("1.5") && !p.has_metric("51"));
    }

    /// Shapes recorded from OpenSearch 2.19.6.
    #[test]
    fn renders_like_opensearch() {
        let out = internal(&[], ValueFormat::Raw)
            .render(&request(json!({"field": "n"})))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"values": {"1.0": null, "5.0": null, "25.0": null, "50.0": null,
                "75.0": null, "95.0": null, "99.0": null}})
        );
        let out = internal(&[], ValueFormat::Raw)
            .render(&request(
                json!({"field": "n", "keyed": false, "percents": [50]}),
            ))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"values": [{"key": 50.0, "value": null}]})
        );
        let date = ValueFormat::Date {
            format: "strict_date_optional_time||epoch_millis".into(),
            zone: None,
        };
        let out = internal(&[1_420_217_703_497.0, 1_454_605_769_740.0], date)
            .render(&request(
                json!({"field": "d", "keyed": false, "percents": [0, 100, 50]}),
            ))
            .unwrap();
        assert_eq!(
            out["values"][0],
            json!({"key": 0.0, "value": 1420217703497.0, "value_as_string": "2015-01-02T16:55:03.497Z"})
        );
        assert_eq!(out["values"][2]["key"], json!(100.0));
        let out = internal(&[0.0, 0.0, 1.0], ValueFormat::Boolean)
            .render(&request(json!({"field": "b", "percents": [1, 99.9]})))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"values": {"1.0": 0.0, "1.0_as_string": "false", "99.9": 1.0,
                "99.9_as_string": "true"}})
        );
    }

    #[test]
    fn slices_give_identical_responses() {
        let shard = TestShard::build(&mapping(), &random_docs(31, 6, 90));
        let out = shard.check_slices(
            &json!({
                "n": {"percentiles": {"field": "n"}},
                "small": {"percentiles": {"field": "f", "tdigest": {"compression": 0.5},
                    "percents": [0, 10, 33.3, 50, 99, 100]}},
                "d": {"percentiles": {"field": "d", "keyed": false}},
                "m": {"percentiles": {"field": "s", "missing": 1}},
                "by": {"terms": {"field": "g", "order": {"p.50": "asc"}},
                    "aggs": {"p": {"percentiles": {"field": "n", "percents": [50]}}}}
            }),
            25,
        );
        assert!(out["n"]["values"]["50.0"].is_number());
    }
}
