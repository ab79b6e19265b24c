//! `weighted_avg`: `Σ(value × weight) / Σ(weight)` over the documents of a bucket.
//!
//! As in OpenSearch, a document counts when it has a value and a weight (either may come from
//! its `missing` setting); every value of a multi-valued value field counts with the document's
//! weight, and a document with several weights is an error. Both sums are exact
//! ([`ExactSum`]), so the result does not depend on how documents were split into slices.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::metric::exact_sum::ExactSum;
use crate::metric::numeric_missing;
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{no_scripts, string_param, unknown_field, AggRequest};
use crate::values::{Accepts, NumericValues, ValueSource};

const AGG: &str = "weighted_avg";

/// `value` or `weight`: a field and its missing value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldConfig {
    pub field: String,
    pub missing: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WeightedAvgRequest {
    pub value: Option<FieldConfig>,
    pub weight: Option<FieldConfig>,
}

fn token(value: &Value) -> &'static str {
    crate::bucket::token(value)
}

fn parse_field_config(key: &str, value: &Value) -> Result<FieldConfig> {
    let failed = |cause: Error| {
        Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
    };
    let Value::Object(body) = value else {
        return Err(Error::x_content_parse(format!(
            "[{AGG}] {key} doesn't support values of type: {}",
            token(value)
        )));
    };
    let mut field = None;
    let mut missing = None;
    for (k, v) in body {
        match k.as_str() {
            "field" => match v {
                Value::String(name) => field = Some(name.clone()),
                other => {
                    return Err(failed(Error::x_content_parse(format!(
                        "[field_config] field doesn't support values of type: {}",
                        token(other)
                    ))))
                }
            },
            "missing" => missing = (!v.is_null()).then(|| v.clone()),
            "script" => return Err(no_scripts(AGG)),
            _ => return Err(failed(unknown_field("field_config", k))),
        }
    }
    let Some(field) = field else {
        return Err(failed(Error::illegal_argument(
            "[field] and [script] cannot both be null.  Please specify one or the other.",
        )));
    };
    Ok(FieldConfig { field, missing })
}

impl WeightedAvgRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<WeightedAvgRequest> {
        let mut request = WeightedAvgRequest {
            value: None,
            weight: None,
        };
        for (key, value) in body {
            match key.as_str() {
                "value" => request.value = Some(parse_field_config(key, value)?),
                "weight" => request.weight = Some(parse_field_config(key, value)?),
                "value_type" | "valueType" => {
                    string_param(AGG, key, value)?;
                }
                "format" => {
                    let spec = string_param(AGG, key, value)?;
                    return Err(Error::not_supported(&format!(
                        "a numeric [format] ([{spec}]) in aggregations"
                    )));
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        Ok(request)
    }
}

// ---- collection ----

struct Resolved {
    source: ValueSource,
    missing: Option<f64>,
}

fn resolve(ctx: &AggContext, name: &str, config: Option<&FieldConfig>) -> Result<Resolved> {
    let Some(config) = config else {
        return Err(Error::illegal_argument(format!(
            "Could not find field name [{name}] in multiValuesSource"
        )));
    };
    let source = ValueSource::resolve(ctx.table, &config.field, AGG, Accepts::Any)?;
    if !matches!(source, ValueSource::Numeric { .. } | ValueSource::Unmapped) {
        let type_name = ValueSource::field_type_of(ctx.table, &config.field)
            .map(|t| t.name().to_string())
            .unwrap_or_default();
        return Err(Error::illegal_argument(format!(
            "Expected numeric type on field [{}], but got [{type_name}]",
            config.field
        )));
    }
    let missing = numeric_missing(AGG, config.missing.as_ref(), &source)?;
    Ok(Resolved { source, missing })
}

struct WeightedAvgFactory {
    value: Resolved,
    weight: Resolved,
}

pub fn factory(
    _request: &AggRequest,
    weighted: &WeightedAvgRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let value = resolve(ctx, "value", weighted.value.as_ref())?;
    let weight = resolve(ctx, "weight", weighted.weight.as_ref())?;
    Ok(Box::new(WeightedAvgFactory { value, weight }))
}

impl Factory for WeightedAvgFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(WeightedAvgCollector {
            value_source: self.value.source.clone(),
            weight_source: self.weight.source.clone(),
            value_missing: self.value.missing,
            weight_missing: self.weight.missing,
            values: None,
            weights: None,
            block_weights: Vec::new(),
            states: Vec::new(),
            error: None,
        }))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WeightedAvgState {
    pub sum: ExactSum,
    pub weight: ExactSum,
}

struct WeightedAvgCollector {
    value_source: ValueSource,
    weight_source: ValueSource,
    value_missing: Option<f64>,
    weight_missing: Option<f64>,
    values: Option<NumericValues>,
    weights: Option<NumericValues>,
    /// Per position of the current block: how many weights the doc has, and the first.
    block_weights: Vec<(u32, f64)>,
    states: Vec<WeightedAvgState>,
    /// A document with several weights: reported when the result is built.
    error: Option<Error>,
}

impl Collector for WeightedAvgCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(NumericValues::open(&self.value_source, segment.reader)?);
        self.weights = Some(NumericValues::open(&self.weight_source, segment.reader)?);
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let (Some(values), Some(weights)) = (&mut self.values, &mut self.weights) else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        let block = &mut self.block_weights;
        block.clear();
        block.resize(docs.len(), (0, 0.0));
        weights.for_each_f64_or(docs, self.weight_missing, |p, w| {
            let entry = &mut block[p];
            if entry.0 == 0 {
                entry.1 = w;
            }
            entry.0 += 1;
        });
        let states = &mut self.states;
        // as in OpenSearch, only a document that has a value has its weights checked
        let mut several_weights = false;
        values.for_each_f64_or(docs, self.value_missing, |p, v| {
            let (count, weight) = block[p];
            if count == 1 {
                let state = slot(states, parents[p]);
                state.sum.add(v * weight);
                state.weight.add(weight);
            } else if count > 1 {
                several_weights = true;
            }
        });
        if several_weights {
            // OpenSearch answers 500; like the crate's other aggregation_execution_exceptions
            // (bad order paths, ...) Tessera reports the request's fault as a 400
            self.error = Some(Error::new(
                "aggregation_execution_exception",
                400,
                "Encountered more than one weight for a single document. Use a script to combine multiple weights-per-doc into a single value.",
            ));
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        Ok(InternalAgg::WeightedAvg(InternalWeightedAvg {
            state: self
                .states
                .get(parent as usize)
                .cloned()
                .unwrap_or_default(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalWeightedAvg {
    pub state: WeightedAvgState,
}

impl InternalWeightedAvg {
    pub fn reduce(parts: Vec<InternalWeightedAvg>) -> InternalWeightedAvg {
        let mut state = WeightedAvgState::default();
        for part in &parts {
            state.sum.merge(&part.state.sum);
            state.weight.merge(&part.state.weight);
        }
        InternalWeightedAvg { state }
    }

    /// The average, or `None` when the weights sum to zero.
    fn value(&self) -> Option<f64> {
        let weight = self.state.weight.value();
        (weight != 0.0).then(|| self.state.sum.value() / weight)
    }

    pub fn sort_value(&self) -> f64 {
        self.value().unwrap_or(f64::NAN)
    }

    pub fn render(self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert(
            "value".into(),
            self.value().map_or(Value::Null, crate::metric::json_double),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, Rng, TestShard};
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn number(v: &Value) -> f64 {
        v.as_f64().unwrap_or(f64::NAN)
    }

    fn parse_err(body: Value) -> Error {
        parse_aggregations(&json!({"w": {"weighted_avg": body}})).unwrap_err()
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let e = parse_err(json!({"value": {"field": "n", "bogus": 1}, "weight": {"field": "w"}}));
        assert_eq!(e.reason(), "[weighted_avg] failed to parse field [value]");
        assert_eq!(
            e.cause().unwrap().reason(),
            "[field_config] unknown field [bogus]"
        );
        let e = parse_err(json!({"value": {}, "weight": {"field": "w"}}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[field] and [script] cannot both be null.  Please specify one or the other."
        );
        assert_eq!(
            parse_err(json!({"value": {"field": "n"}, "weight": {"field": "w"}, "bogus": 1}))
                .reason(),
            "[weighted_avg] unknown field [bogus]"
        );
        assert!(parse_err(
            json!({"value": {"field": "n"}, "weight": {"field": "w"}, "format": "0"})
        )
        .reason()
        .contains("not supported"));
        assert_eq!(
            parse_err(json!({"value": 5})).reason(),
            "[weighted_avg] value doesn't support values of type: VALUE_NUMBER"
        );
        let e = parse_err(json!({"value": {"field": 5}}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[field_config] field doesn't support values of type: VALUE_NUMBER"
        );
    }

    #[test]
    fn weights_and_values_on_a_shard() {
        let shard = TestShard::build(
            &mapping(),
            &[
                vec![
                    json!({"f": 1.0, "w": 2.0}),
                    json!({"f": [3.0, 5.0], "w": 1.0}),
                    json!({"f": 100.0}),
                ],
                vec![json!({"w": 3.0}), json!({"f": 2.0, "w": 0.5})],
            ],
        );
        let out = shard.check_slices(
            &json!({
                "plain": {"weighted_avg": {"value": {"field": "f"}, "weight": {"field": "w"}}},
                "missing": {"weighted_avg": {"value": {"field": "f", "missing": 10},
                    "weight": {"field": "w", "missing": 1}}},
                "zero": {"weighted_avg": {"value": {"field": "f"}, "weight": {"field": "w", "missing": 0}}},
                "unmapped": {"weighted_avg": {"value": {"field": "nope"}, "weight": {"field": "w"}}}
            }),
            20,
        );
        // (1×2 + 3×1 + 5×1 + 2×0.5) / (2 + 1 + 1 + 0.5)
        assert_eq!(number(&out["plain"]["value"]), 11.0 / 4.5);
        // + 100×1 (missing weight 1) + 10×3 (missing value)
        assert_eq!(
            number(&out["missing"]["value"]),
            (11.0 + 100.0 + 30.0) / 8.5
        );
        assert_eq!(number(&out["zero"]["value"]), 11.0 / 4.5);
        assert_eq!(out["unmapped"]["value"], Value::Null);
    }

    #[test]
    fn several_weights_and_wrong_types_are_errors() {
        let shard = TestShard::build(
            &mapping(),
            &[vec![json!({"f": 1.0, "n": [1, 2]}), json!({"n": [3, 4]})]],
        );
        // several weights on a doc without a value are fine
        let out = shard
            .render(&json!({"w": {"weighted_avg": {"value": {"field": "s"}, "weight": {"field": "n"}}}}))
            .unwrap();
        assert_eq!(out["w"]["value"], Value::Null);
        let e = shard
            .render(&json!({"w": {"weighted_avg": {"value": {"field": "f"}, "weight": {"field": "n"}}}}))
            .unwrap_err();
        assert_eq!(e.kind(), "aggregation_execution_exception");
        let e = shard
            .render(&json!({"w": {"weighted_avg": {"value": {"field": "k"}, "weight": {"field": "n"}}}}))
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "Expected numeric type on field [k], but got [keyword]"
        );
        let e = shard
            .render(&json!({"w": {"weighted_avg": {"value": {"field": "f"}}}}))
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "Could not find field name [weight] in multiValuesSource"
        );
    }

    #[test]
    fn any_grouping_reduces_the_same() {
        let mut rng = Rng::new(5);
        for _ in 0..30 {
            let pairs: Vec<(f64, f64)> = (0..1 + rng.below(100))
                .map(|_| (rng.unit() * 1e3 - 200.0, rng.unit() * 4.0))
                .collect();
            let mut whole = WeightedAvgState::default();
            let mut parts = vec![WeightedAvgState::default(); 1 + rng.below(5) as usize];
            for (v, w) in &pairs {
                whole.sum.add(v * w);
                whole.weight.add(*w);
                let i = rng.below(parts.len() as u64) as usize;
                parts[i].sum.add(v * w);
                parts[i].weight.add(*w);
            }
            let reduced = InternalWeightedAvg::reduce(
                parts
                    .into_iter()
                    .map(|state| InternalWeightedAvg { state })
                    .collect(),
            );
            assert_eq!(
                reduced.render(),
                InternalWeightedAvg { state: whole }.render()
            );
        }
        let shard = TestShard::build(&mapping(), &random_docs(2, 4, 50));
        shard.check_slices(
            &json!({"by": {"terms": {"field": "g"}, "aggs": {
                "w": {"weighted_avg": {"value": {"field": "n"}, "weight": {"field": "w", "missing": 1}}}}}}),
            20,
        );
    }
}
