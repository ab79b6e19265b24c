//! `extended_stats`: `stats` plus the sum of squares, population and sample variance and
//! standard deviation, and the bounds `avg ± sigma × std_deviation`.
//!
//! The state is a count, the minimum and maximum, and exact sums of the values and of their
//! squares ([`ExactSum`]), so the response is bit-identical however the documents were split
//! into slices and shards. The derived values use OpenSearch's formulas (variance from the sums,
//! clamped at zero; `NaN` sample variance for a single value) and its response layout, including
//! `*_as_string` for dates and booleans.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::InternalAgg;
use crate::metric::exact_sum::ExactSum;
use crate::metric::{java_double_string, json_double, numeric_missing};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{f64_param, unknown_field, AggKind, AggRequest, ValuesSourceParams};
use crate::values::{Accepts, NumericValues, ValueSource};

const AGG: &str = "extended_stats";

/// The names `extended_stats` answers to in bucket orders (`"order": {"e.variance": "asc"}`).
const METRICS: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "sum_of_squares",
    "variance",
    "variance_population",
    "variance_sampling",
    "std_deviation",
    "std_deviation_population",
    "std_deviation_sampling",
    "std_upper",
    "std_lower",
    "std_upper_population",
    "std_lower_population",
    "std_upper_sampling",
    "std_lower_sampling",
];

#[derive(Clone, Debug, PartialEq)]
pub struct ExtendedStatsRequest {
    pub source: ValuesSourceParams,
    pub sigma: f64,
}

impl ExtendedStatsRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<ExtendedStatsRequest> {
        let mut request = ExtendedStatsRequest {
            source: ValuesSourceParams::default(),
            sigma: 2.0,
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "sigma" => {
                    let sigma = f64_param(AGG, key, value)?;
                    if sigma < 0.0 || sigma.is_nan() {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [sigma]"
                        ))
                        .caused_by(Error::illegal_argument(format!(
                            "[sigma] must be greater than or equal to 0. Found [{}] in [{name}]",
                            java_double_string(sigma)
                        ))));
                    }
                    request.sigma = sigma;
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }

    /// Whether `metric` names one of the values (for bucket orders).
    pub fn has_metric(metric: &str) -> bool {
        METRICS.contains(&metric)
    }
}

/// The state of one bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtendedStatsState {
    pub count: u64,
    pub sum: ExactSum,
    pub sum_of_squares: ExactSum,
    pub min: f64,
    pub max: f64,
}

impl Default for ExtendedStatsState {
    fn default() -> Self {
        ExtendedStatsState {
            count: 0,
            sum: ExactSum::default(),
            sum_of_squares: ExactSum::default(),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl ExtendedStatsState {
    #[inline]
    pub fn add(&mut self, value: f64) {
        self.count += 1;
        self.sum.add(value);
        self.sum_of_squares.add(value * value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    pub fn merge(&mut self, other: &ExtendedStatsState) {
        self.count += other.count;
        self.sum.merge(&other.sum);
        self.sum_of_squares.merge(&other.sum_of_squares);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

// ---- collection ----

struct ExtendedStatsFactory {
    source: ValueSource,
    format: ValueFormat,
    missing: Option<f64>,
}

pub fn factory(
    _request: &AggRequest,
    stats: &ExtendedStatsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let source = ValueSource::resolve_params(ctx, &stats.source, AGG, Accepts::Numeric)?;
    let format = ValueFormat::for_source(&source, stats.source.format.as_deref(), None)?;
    let missing = numeric_missing(AGG, stats.source.missing.as_ref(), &source)?;
    Ok(Box::new(ExtendedStatsFactory {
        source,
        format,
        missing,
    }))
}

impl Factory for ExtendedStatsFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(ExtendedStatsCollector {
            source: self.source.clone(),
            format: self.format.clone(),
            missing: self.missing,
            values: None,
            states: Vec::new(),
        }))
    }
}

struct ExtendedStatsCollector {
    source: ValueSource,
    format: ValueFormat,
    missing: Option<f64>,
    values: Option<NumericValues>,
    states: Vec<ExtendedStatsState>,
}

impl Collector for ExtendedStatsCollector {
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
        let states = &mut self.states;
        values.for_each_f64_or(docs, self.missing, |p, v| slot(states, parents[p]).add(v));
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        Ok(InternalAgg::ExtendedStats(InternalExtendedStats {
            state: self
                .states
                .get(parent as usize)
                .cloned()
                .unwrap_or_default(),
            format: self.format.clone(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalExtendedStats {
    pub state: ExtendedStatsState,
    pub format: ValueFormat,
}

fn request_of(request: &AggRequest) -> Result<&ExtendedStatsRequest> {
    match &request.kind {
        AggKind::ExtendedStats(r) => Ok(r),
        _ => Err(Error::illegal_state(
            "extended_stats result for another request",
        )),
    }
}

/// The values OpenSearch derives from the state (`count > 0`).
struct Derived {
    count: f64,
    sum: f64,
    sum_of_squares: f64,
    avg: f64,
    variance_population: f64,
    variance_sampling: f64,
    std_population: f64,
    std_sampling: f64,
    sigma: f64,
}

impl Derived {
    fn new(state: &ExtendedStatsState, sigma: f64) -> Derived {
        let count = state.count as f64;
        let sum = state.sum.value();
        let sum_of_squares = state.sum_of_squares.value();
        let clamp = |v: f64| if v < 0.0 { 0.0 } else { v };
        let variance_population = clamp((sum_of_squares - (sum * sum) / count) / count);
        let variance_sampling = clamp((sum_of_squares - (sum * sum) / count) / (count - 1.0));
        Derived {
            count,
            sum,
            sum_of_squares,
            avg: sum / count,
            variance_population,
            variance_sampling,
            std_population: variance_population.sqrt(),
            std_sampling: variance_sampling.sqrt(),
            sigma,
        }
    }

    fn value(&self, name: &str) -> f64 {
        match name {
            "count" => self.count,
            "sum" => self.sum,
            "avg" => self.avg,
            "sum_of_squares" => self.sum_of_squares,
            "variance" | "variance_population" => self.variance_population,
            "variance_sampling" => self.variance_sampling,
            "std_deviation" | "std_deviation_population" => self.std_population,
            "std_deviation_sampling" => self.std_sampling,
            "std_upper" | "std_upper_population" => self.avg + self.std_population * self.sigma,
            "std_lower" | "std_lower_population" => self.avg - self.std_population * self.sigma,
            "std_upper_sampling" => self.avg + self.std_sampling * self.sigma,
            "std_lower_sampling" => self.avg - self.std_sampling * self.sigma,
            _ => f64::NAN,
        }
    }
}

/// The top-level values after `stats`' four, and the bounds object's keys with their metric.
const OTHER_VALUES: &[&str] = &[
    "sum_of_squares",
    "variance",
    "variance_population",
    "variance_sampling",
    "std_deviation",
    "std_deviation_population",
    "std_deviation_sampling",
];
const BOUNDS: &[(&str, &str)] = &[
    ("upper", "std_upper"),
    ("lower", "std_lower"),
    ("upper_population", "std_upper_population"),
    ("lower_population", "std_lower_population"),
    ("upper_sampling", "std_upper_sampling"),
    ("lower_sampling", "std_lower_sampling"),
];

impl InternalExtendedStats {
    pub fn reduce(parts: Vec<InternalExtendedStats>) -> InternalExtendedStats {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let mut state = ExtendedStatsState::default();
        for part in &parts {
            state.merge(&part.state);
        }
        InternalExtendedStats { state, format }
    }

    /// The value a bucket order by `name.metric` uses (NaN when there is none).
    pub fn sort_value(&self, metric: Option<&str>, request: &AggRequest) -> Result<f64> {
        let sigma = request_of(request)?.sigma;
        let metric = metric.unwrap_or("count");
        Ok(match metric {
            "count" => self.state.count as f64,
            "sum" => self.state.sum.value(),
            _ if self.state.count == 0 => f64::NAN,
            "min" => self.state.min,
            "max" => self.state.max,
            name => Derived::new(&self.state, sigma).value(name),
        })
    }

    pub fn render(self, request: &AggRequest) -> Result<Map<String, Value>> {
        let sigma = request_of(request)?.sigma;
        let formatter = self.format.formatter();
        let has_format = self.format != ValueFormat::Raw;
        let state = &self.state;
        let mut out = Map::new();
        out.insert("count".into(), json!(state.count));
        if state.count == 0 {
            for name in ["min", "max", "avg"] {
                out.insert(name.into(), Value::Null);
            }
            out.insert("sum".into(), json!(0.0));
            for name in OTHER_VALUES {
                out.insert((*name).into(), Value::Null);
            }
            let bounds: Map<String, Value> = BOUNDS
                .iter()
                .map(|(key, _)| ((*key).to_string(), Value::Null))
                .collect();
            out.insert("std_deviation_bounds".into(), Value::Object(bounds));
            return Ok(out);
        }
        let derived = Derived::new(state, sigma);
        let stats = [
            ("min", state.min),
            ("max", state.max),
            ("avg", derived.avg),
            ("sum", derived.sum),
        ];
        for (name, v) in stats {
            out.insert(name.into(), json_double(v));
        }
        if has_format {
            for (name, v) in stats {
                if let Some(text) = formatter.as_json(v) {
                    out.insert(format!("{name}_as_string"), text);
                }
            }
        }
        for name in OTHER_VALUES {
            out.insert((*name).into(), json_double(derived.value(name)));
        }
        let bounds: Map<String, Value> = BOUNDS
            .iter()
            .map(|(key, metric)| ((*key).to_string(), json_double(derived.value(metric))))
            .collect();
        out.insert("std_deviation_bounds".into(), Value::Object(bounds));
        if has_format {
            // OpenSearch formats the sums and variances as values, the deviations as text
            for name in OTHER_VALUES {
                let v = derived.value(name);
                let text = if name.starts_with("std_") {
                    formatter.as_string(v).map(Value::String)
                } else {
                    formatter.as_json(v)
                };
                if let Some(text) = text {
                    out.insert(format!("{name}_as_string"), text);
                }
            }
            let bounds: Map<String, Value> = BOUNDS
                .iter()
                .filter_map(|(key, metric)| {
                    formatter
                        .as_string(derived.value(metric))
                        .map(|text| ((*key).to_string(), Value::String(text)))
                })
                .collect();
            out.insert(
                "std_deviation_bounds_as_string".into(),
                Value::Object(bounds),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, Rng, TestShard};
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn request(body: Value) -> AggRequest {
        parse_aggregations(&json!({"e": {"extended_stats": body}}))
            .unwrap()
            .remove(0)
    }

    fn internal(values: &[f64], format: ValueFormat) -> InternalExtendedStats {
        let mut state = ExtendedStatsState::default();
        values.iter().for_each(|v| state.add(*v));
        InternalExtendedStats { state, format }
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let err =
            |body: Value| parse_aggregations(&json!({"e": {"extended_stats": body}})).unwrap_err();
        let e = err(json!({"field": "n", "sigma": -1}));
        assert_eq!(e.kind(), "x_content_parse_exception");
        assert_eq!(e.reason(), "[extended_stats] failed to parse field [sigma]");
        assert_eq!(
            e.cause().unwrap().reason(),
            "[sigma] must be greater than or equal to 0. Found [-1.0] in [e]"
        );
        let e = err(json!({"field": "n", "sigma": "x"}));
        assert_eq!(e.cause().unwrap().kind(), "number_format_exception");
        assert_eq!(
            err(json!({"field": "n", "bogus": 1})).reason(),
            "[extended_stats] unknown field [bogus]"
        );
        let r = request(json!({"field": "n", "script": "_value * 2"}));
        assert!(matches!(&r.kind, AggKind::ExtendedStats(e) if e.source.script.is_some()));
        let r = request(json!({"field": "n", "sigma": "3"}));
        assert!(matches!(&r.kind, AggKind::ExtendedStats(e) if e.sigma == 3.0));
    }

    /// Recorded from OpenSearch 2.19.6: `extended_stats` of 58.611 and 63.429.
    #[test]
    fn renders_like_opensearch() {
        let out = internal(&[58.611, 63.429], ValueFormat::Raw)
            .render(&request(json!({"field": "f"})))
            .unwrap();
        let expected = json!({"count": 2, "min": 58.611, "max": 63.429, "avg": 61.019999999999996,
            "sum": 122.03999999999999, "sum_of_squares": 7458.487362,
            "variance": 5.803281000000425, "variance_population": 5.803281000000425,
            "variance_sampling": 11.60656200000085, "std_deviation": 2.409000000000088,
            "std_deviation_population": 2.409000000000088,
            "std_deviation_sampling": 3.4068404717569107,
            "std_deviation_bounds": {"upper": 65.83800000000018, "lower": 56.20199999999982,
                "upper_population": 65.83800000000018, "lower_population": 56.20199999999982,
                "upper_sampling": 67.83368094351381, "lower_sampling": 54.20631905648617}});
        assert_eq!(Value::Object(out), expected);
        // one value: the sample variance is 0/0
        let out = internal(&[58.611], ValueFormat::Raw)
            .render(&request(json!({"field": "f"})))
            .unwrap();
        assert_eq!(out["variance"], json!(0.0));
        assert_eq!(out["variance_sampling"], json!("NaN"));
        assert_eq!(out["std_deviation_bounds"]["upper_sampling"], json!("NaN"));
        assert_eq!(out["std_deviation_bounds"]["upper"], json!(58.611));
    }

    #[test]
    fn empty_and_formatted_shapes() {
        let out = internal(&[], ValueFormat::Raw)
            .render(&request(json!({"field": "f"})))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"count": 0, "min": null, "max": null, "avg": null, "sum": 0.0,
                "sum_of_squares": null, "variance": null, "variance_population": null,
                "variance_sampling": null, "std_deviation": null,
                "std_deviation_population": null, "std_deviation_sampling": null,
                "std_deviation_bounds": {"upper": null, "lower": null, "upper_population": null,
                    "lower_population": null, "upper_sampling": null, "lower_sampling": null}})
        );
        // booleans: the stats values format to JSON booleans, the deviations to text
        let out = internal(&[0.0, 1.0, 1.0], ValueFormat::Boolean)
            .render(&request(json!({"field": "b"})))
            .unwrap();
        assert_eq!(out["min_as_string"], json!(false));
        assert_eq!(out["sum_of_squares_as_string"], json!(true));
        assert_eq!(out["std_deviation_as_string"], json!("true"));
        // OpenSearch shows any non-zero number as `true`
        assert_eq!(
            out["std_deviation_bounds_as_string"]["lower"],
            json!("true")
        );
        assert_eq!(out["variance_sampling_as_string"], json!(true));
        let keys: Vec<&String> = out.keys().collect();
        assert_eq!(keys[5], "min_as_string");
        assert_eq!(
            keys.last().unwrap().as_str(),
            "std_deviation_bounds_as_string"
        );
    }

    #[test]
    fn orders_by_any_metric() {
        let r = request(json!({"field": "f", "sigma": 1}));
        let s = internal(&[1.0, 3.0], ValueFormat::Raw);
        assert_eq!(s.sort_value(Some("variance"), &r).unwrap(), 1.0);
        assert_eq!(s.sort_value(Some("std_upper"), &r).unwrap(), 3.0);
        assert_eq!(
            s.sort_value(Some("std_lower_sampling"), &r).unwrap(),
            2.0 - 2f64.sqrt()
        );
        assert!(internal(&[], ValueFormat::Raw)
            .sort_value(Some("avg"), &r)
            .unwrap()
            .is_nan());
        assert!(ExtendedStatsRequest::has_metric("std_upper_population"));
        assert!(!ExtendedStatsRequest::has_metric("std_deviation_bounds"));
    }

    #[test]
    fn any_grouping_reduces_to_the_same_bits() {
        let mut rng = Rng::new(3);
        for _ in 0..50 {
            let values: Vec<f64> = (0..rng.below(200))
                .map(|_| (rng.unit() - 0.3) * 10f64.powi(rng.below(12) as i32 - 4))
                .collect();
            let all = internal(&values, ValueFormat::Raw);
            let mut parts = vec![ExtendedStatsState::default(); 1 + rng.below(6) as usize];
            for v in &values {
                let i = rng.below(parts.len() as u64) as usize;
                parts[i].add(*v);
            }
            rng.shuffle(&mut parts);
            let split = 1 + rng.below(parts.len() as u64) as usize;
            let (left, right) = parts.split_at(split);
            let wrap = |s: &[ExtendedStatsState]| {
                InternalExtendedStats::reduce(
                    s.iter()
                        .map(|state| InternalExtendedStats {
                            state: state.clone(),
                            format: ValueFormat::Raw,
                        })
                        .collect(),
                )
            };
            let grouped = InternalExtendedStats::reduce(vec![wrap(left), wrap(right)]);
            let r = request(json!({"field": "f"}));
            assert_eq!(grouped.render(&r).unwrap(), all.clone().render(&r).unwrap());
        }
    }

    #[test]
    fn slices_give_identical_responses() {
        let shard = TestShard::build(&mapping(), &random_docs(11, 5, 60));
        let out = shard.check_slices(
            &json!({
                "n": {"extended_stats": {"field": "n", "sigma": 1.5}},
                "d": {"extended_stats": {"field": "d"}},
                "m": {"extended_stats": {"field": "f", "missing": 0}},
                "by": {"terms": {"field": "g", "order": {"e.std_upper": "desc"}},
                    "aggs": {"e": {"extended_stats": {"field": "s"}}}}
            }),
            30,
        );
        assert!(out["n"]["count"].as_u64().unwrap() > 0);
        assert!(out["d"]["avg_as_string"].is_string());
    }
}
