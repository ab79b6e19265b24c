//! The single-pass numeric metrics: `min`, `max`, `sum`, `avg`, `stats` and `value_count`.
//!
//! They share one state (count, exact sum, min, max) so that one collector and one reduce
//! serve all six. Sums are exact (see [`ExactSum`]): OpenSearch's Kahan sums depend on the
//! order values arrive in, which would make results depend on the slice layout.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::InternalAgg;
use crate::metric::exact_sum::ExactSum;
use crate::ords::{slot, slot_with};
use crate::prepare::{AggContext, Factory};
use crate::request::{f64_param, unknown_field, AggKind, AggRequest, ValuesSourceParams};
use crate::values::{Accepts, AnyValues, NumericKind, NumericValues, ValueSource};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsKind {
    Min,
    Max,
    Sum,
    Avg,
    Stats,
    ValueCount,
}

impl StatsKind {
    pub fn parse(type_name: &str) -> Option<StatsKind> {
        Some(match type_name {
            "min" => StatsKind::Min,
            "max" => StatsKind::Max,
            "sum" => StatsKind::Sum,
            "avg" => StatsKind::Avg,
            "stats" => StatsKind::Stats,
            "value_count" => StatsKind::ValueCount,
            _ => return None,
        })
    }

    pub fn type_name(self) -> &'static str {
        match self {
            StatsKind::Min => "min",
            StatsKind::Max => "max",
            StatsKind::Sum => "sum",
            StatsKind::Avg => "avg",
            StatsKind::Stats => "stats",
            StatsKind::ValueCount => "value_count",
        }
    }

    /// Whether the result has several named values (ordering needs `name.metric`).
    pub fn is_multi_value(self) -> bool {
        self == StatsKind::Stats
    }

    /// Whether `metric` names one of this aggregation's values.
    pub fn has_metric(self, metric: &str) -> bool {
        match self {
            StatsKind::Stats => matches!(metric, "count" | "min" | "max" | "avg" | "sum"),
            _ => metric == "value",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricRequest {
    pub kind: StatsKind,
    pub source: ValuesSourceParams,
}

impl MetricRequest {
    pub fn parse(kind: StatsKind, body: &Map<String, Value>) -> Result<MetricRequest> {
        let mut source = ValuesSourceParams::default();
        for (key, value) in body {
            if !source.accept(kind.type_name(), key, value)? {
                return Err(unknown_field(kind.type_name(), key));
            }
        }
        source.require_field_at_parse()?;
        Ok(MetricRequest { kind, source })
    }
}

/// The state of one bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsState {
    pub count: u64,
    pub sum: ExactSum,
    pub min: f64,
    pub max: f64,
}

impl Default for StatsState {
    fn default() -> Self {
        StatsState::new(ExactSum::default())
    }
}

impl StatsState {
    fn new(sum: ExactSum) -> StatsState {
        StatsState {
            count: 0,
            sum,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    #[inline]
    fn add(&mut self, value: f64) {
        self.count += 1;
        self.sum.add(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds a stored integer whose value is `raw × (1 / factor)` (OpenSearch's scaling).
    #[inline]
    fn add_raw(&mut self, raw: i64, factor: f64) {
        self.count += 1;
        self.sum.add_raw(raw);
        let value = if factor == 1.0 {
            raw as f64
        } else {
            raw as f64 * (1.0 / factor)
        };
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    fn merge(&mut self, other: &StatsState) {
        self.count += other.count;
        self.sum.merge(&other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

// ---- collection ----

struct StatsFactory {
    source: ValueSource,
    format: ValueFormat,
    missing: Option<f64>,
    count_only: bool,
}

pub fn factory(
    _request: &AggRequest,
    metric: &MetricRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let count_only = metric.kind == StatsKind::ValueCount;
    let accepts = if count_only {
        Accepts::Counted
    } else {
        Accepts::Numeric
    };
    let source =
        ValueSource::resolve_params(ctx, &metric.source, metric.kind.type_name(), accepts)?;
    let format = if count_only {
        ValueFormat::Raw
    } else {
        ValueFormat::for_source(&source, metric.source.format.as_deref(), None)?
    };
    let missing = match (&metric.source.missing, source.numeric_kind()) {
        (None, _) => None,
        (Some(Value::String(s)), Some(NumericKind::Date(format))) => Some(
            format
                .parse_millis(s, None, false)
                .map_err(|e| Error::illegal_argument(e.message))? as f64,
        ),
        (Some(v), _) if !count_only => Some(f64_param(metric.kind.type_name(), "missing", v)?),
        (Some(_), _) => None,
    };
    Ok(Box::new(StatsFactory {
        source,
        format,
        missing,
        count_only,
    }))
}

impl Factory for StatsFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(StatsCollector {
            source: self.source.clone(),
            format: self.format.clone(),
            missing: self.missing,
            count_only: self.count_only,
            numbers: None,
            any: AnyValues::Unmapped,
            states: Vec::new(),
        }))
    }
}

struct StatsCollector {
    source: ValueSource,
    format: ValueFormat,
    missing: Option<f64>,
    count_only: bool,
    numbers: Option<NumericValues>,
    any: AnyValues,
    states: Vec<StatsState>,
}

impl Collector for StatsCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        if self.count_only {
            self.any = AnyValues::open(&self.source, segment.reader)?;
        } else {
            self.numbers = Some(NumericValues::open(&self.source, segment.reader)?);
        }
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let states = &mut self.states;
        if self.count_only {
            self.any
                .for_each_value(docs, |p| slot(states, parents[p]).count += 1);
            return;
        }
        let Some(numbers) = &mut self.numbers else {
            return;
        };
        if !numbers.is_present() && self.missing.is_none() {
            return;
        }
        match (numbers.raw_factor(), self.missing) {
            // integers (longs, dates, scaled floats) sum exactly in their raw form
            (Some(factor), None) => {
                let make = || StatsState::new(ExactSum::integers(factor));
                numbers.for_each_raw(docs, |p, raw| {
                    slot_with(states, parents[p], make).add_raw(raw, factor)
                });
            }
            _ => {
                let make = || StatsState::new(ExactSum::default());
                numbers.for_each_f64_or(docs, self.missing, |p, v| {
                    slot_with(states, parents[p], make).add(v)
                });
            }
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        Ok(InternalAgg::Stats(InternalStats {
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
pub struct InternalStats {
    pub state: StatsState,
    pub format: ValueFormat,
}

impl InternalStats {
    pub fn reduce(parts: Vec<InternalStats>) -> InternalStats {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let mut state = StatsState::default();
        for part in &parts {
            state.merge(&part.state);
        }
        InternalStats { state, format }
    }

    fn avg(&self) -> Option<f64> {
        (self.state.count > 0).then(|| self.state.sum.value() / self.state.count as f64)
    }

    fn min(&self) -> Option<f64> {
        (self.state.count > 0).then_some(self.state.min)
    }

    fn max(&self) -> Option<f64> {
        (self.state.count > 0).then_some(self.state.max)
    }

    /// The value a bucket order by this metric uses (NaN for "no value").
    pub fn sort_value(&self, metric: Option<&str>, request: &AggRequest) -> Result<f64> {
        let AggKind::Metric(m) = &request.kind else {
            return Err(Error::illegal_state("stats result for another request"));
        };
        let name = match (m.kind, metric) {
            (StatsKind::Stats, Some(name)) => name,
            (StatsKind::Min, _) => "min",
            (StatsKind::Max, _) => "max",
            (StatsKind::Sum, _) => "sum",
            (StatsKind::Avg, _) => "avg",
            (StatsKind::ValueCount, _) => "count",
            (StatsKind::Stats, None) => "count",
        };
        Ok(match name {
            "count" => self.state.count as f64,
            "min" => self.min().unwrap_or(f64::NAN),
            "max" => self.max().unwrap_or(f64::NAN),
            "sum" => self.state.sum.value(),
            "avg" => self.avg().unwrap_or(f64::NAN),
            _ => f64::NAN,
        })
    }

    pub fn render(self, request: &AggRequest) -> Result<Map<String, Value>> {
        let AggKind::Metric(m) = &request.kind else {
            return Err(Error::illegal_state("stats result for another request"));
        };
        let formatter = self.format.formatter();
        let mut out = Map::new();
        let value = |out: &mut Map<String, Value>, name: &str, v: Option<f64>| {
            out.insert(name.to_string(), v.map_or(Value::Null, |v| json!(v)));
            if let Some(text) = v.and_then(|v| formatter.as_string(v)) {
                let key = if name == "value" {
                    "value_as_string".to_string()
                } else {
                    format!("{name}_as_string")
                };
                out.insert(key, json!(text));
            }
        };
        match m.kind {
            StatsKind::Min => value(&mut out, "value", self.min()),
            StatsKind::Max => value(&mut out, "value", self.max()),
            StatsKind::Sum => value(&mut out, "value", Some(self.state.sum.value())),
            StatsKind::Avg => value(&mut out, "value", self.avg()),
            StatsKind::ValueCount => {
                out.insert("value".into(), json!(self.state.count));
            }
            StatsKind::Stats => {
                out.insert("count".into(), json!(self.state.count));
                let mut strings = Map::new();
                for (name, v) in [
                    ("min", self.min()),
                    ("max", self.max()),
                    ("avg", self.avg()),
                    ("sum", Some(self.state.sum.value())),
                ] {
                    out.insert(name.into(), v.map_or(Value::Null, |v| json!(v)));
                    if self.state.count > 0 {
                        // DocValueFormat.format: JSON booleans for boolean fields
                        if let Some(text) = v.and_then(|v| formatter.as_json(v)) {
                            strings.insert(format!("{name}_as_string"), text);
                        }
                    }
                }
                out.extend(strings);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn request(kind: &str) -> AggRequest {
        parse_aggregations(&json!({"m": {kind: {"field": "n"}}}))
            .unwrap()
            .remove(0)
    }

    fn stats(values: &[f64]) -> InternalStats {
        let mut state = StatsState::default();
        values.iter().for_each(|v| state.add(*v));
        InternalStats {
            state,
            format: ValueFormat::Raw,
        }
    }

    #[test]
    fn renders_each_kind() {
        let s = stats(&[1.0, 5.0, 5.0, 7.0]);
        assert_eq!(s.clone().render(&request("avg")).unwrap()["value"], 4.5);
        assert_eq!(s.clone().render(&request("sum")).unwrap()["value"], 18.0);
        assert_eq!(s.clone().render(&request("min")).unwrap()["value"], 1.0);
        assert_eq!(
            s.clone().render(&request("value_count")).unwrap()["value"],
            4
        );
        let all = s.render(&request("stats")).unwrap();
        assert_eq!(all["count"], 4);
        assert_eq!(all["max"], 7.0);
        let empty = stats(&[]);
        assert_eq!(
            empty.clone().render(&request("avg")).unwrap()["value"],
            Value::Null
        );
        assert_eq!(empty.clone().render(&request("sum")).unwrap()["value"], 0.0);
        let all = empty.render(&request("stats")).unwrap();
        assert_eq!(all["min"], Value::Null);
        assert_eq!(all["sum"], 0.0);
    }

    #[test]
    fn dates_render_as_strings() {
        let mut s = stats(&[1_420_070_400_000.0]);
        s.format = ValueFormat::Date {
            format: "strict_date_optional_time||epoch_millis".into(),
            zone: None,
        };
        let out = s.render(&request("min")).unwrap();
        assert_eq!(out["value_as_string"], "2015-01-01T00:00:00.000Z");
    }

    /// OpenSearch 2.19.6: `stats` of a boolean field shows JSON booleans, `min` shows text.
    #[test]
    fn booleans_render_like_opensearch() {
        let mut s = stats(&[0.0, 1.0, 1.0]);
        s.format = ValueFormat::Boolean;
        let out = s.clone().render(&request("stats")).unwrap();
        assert_eq!(out["min_as_string"], json!(false));
        assert_eq!(out["sum_as_string"], json!(true));
        let out = s.render(&request("min")).unwrap();
        assert_eq!(out["value_as_string"], json!("false"));
    }

    #[test]
    fn exact_sums_and_grouping() {
        let parts = vec![stats(&[1.0, 2.0]), stats(&[]), stats(&[-3.0, 10.0])];
        let all = InternalStats::reduce(parts.clone());
        assert_eq!(all.state.count, 4);
        assert_eq!(all.state.min, -3.0);
        assert_eq!(all.state.max, 10.0);
        let mut parts = parts;
        let last = parts.pop().unwrap();
        let grouped = InternalStats::reduce(vec![InternalStats::reduce(parts), last]);
        assert_eq!(all, grouped);
    }

    #[test]
    fn unknown_parameters_are_rejected() {
        let e = parse_aggregations(&json!({"m": {"avg": {"field": "n", "bogus": 1}}})).unwrap_err();
        assert_eq!(e.reason(), "[avg] unknown field [bogus]");
        let e = parse_aggregations(&json!({"m": {"avg": {}}})).unwrap_err();
        assert_eq!(
            e.reason(),
            "Required one of fields [field, script], but none were specified. "
        );
    }
}
