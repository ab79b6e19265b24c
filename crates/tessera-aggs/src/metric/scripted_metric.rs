//! `scripted_metric`: a metric written as four Painless scripts. Per bucket, `init_script`
//! sets up a `state` map, `map_script` updates it for each document, and `combine_script`
//! turns it into the slice's result; the coordinator hands every slice's result to
//! `reduce_script` as `states`, whose return value is the aggregation's `value`.
//!
//! The aggregation's `params` are seen by every script beside the script's own (a name in
//! both is OpenSearch's error). A combined state travels from shard to coordinator as JSON,
//! as OpenSearch requires a combined state to be made of maps, lists, strings, numbers and
//! booleans. Unlike the other metrics, the result may depend on the slicing: `states` holds
//! one state per slice of each shard, as in OpenSearch's concurrent segment search.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_query::compile::script::PreparedScript;
use tessera_query::compile::QueryFailures;
use tessera_query::script_docs::SegmentDocs;
use tessera_script::{Env, Script, ScriptContext, ScriptSpec, Value};

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::prepare::{AggContext, Factory};
use crate::request::{unknown_field, AggRequest};

const AGG: &str = "scripted_metric";

#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedMetricRequest {
    pub init: Option<ScriptSpec>,
    pub map: ScriptSpec,
    pub combine: Option<ScriptSpec>,
    pub reduce: Option<ScriptSpec>,
    pub params: Map<String, Json>,
}

impl ScriptedMetricRequest {
    pub fn parse(body: &Map<String, Json>) -> Result<ScriptedMetricRequest> {
        let (mut init, mut map, mut combine, mut reduce) = (None, None, None, None);
        let mut params = Map::new();
        for (key, value) in body {
            let script = || ScriptSpec::parse(AGG, value);
            match key.as_str() {
                "init_script" => init = Some(script()?),
                "map_script" => map = Some(script()?),
                "combine_script" => combine = Some(script()?),
                "reduce_script" => reduce = Some(script()?),
                "params" => match value {
                    Json::Object(p) => params = p.clone(),
                    Json::Null => {}
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] params doesn't support values of type: {}",
                            crate::bucket::token(other)
                        )))
                    }
                },
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        let map = map.ok_or_else(|| Error::illegal_argument("Required [map_script]"))?;
        Ok(ScriptedMetricRequest {
            init,
            map,
            combine,
            reduce,
            params,
        })
    }

    /// A script's `params`: the aggregation's and its own.
    fn params_for(&self, spec: &ScriptSpec) -> Result<Value> {
        let mut merged = self.params.clone();
        for (name, value) in &spec.params {
            if merged.contains_key(name) {
                return Err(Error::illegal_argument(format!(
                    "Parameter name \"{name}\" used in both aggregation and script parameters"
                )));
            }
            merged.insert(name.clone(), value.clone());
        }
        Ok(Value::from_json(&Json::Object(merged)))
    }
}

/// A script without a document (init, combine, reduce), compiled, with its `params`.
struct StateScript {
    script: Arc<Script>,
    params: Value,
}

impl StateScript {
    fn prepare(
        request: &ScriptedMetricRequest,
        spec: &ScriptSpec,
        context: ScriptContext,
    ) -> Result<StateScript> {
        Ok(StateScript {
            script: spec.compile(context)?,
            params: request.params_for(spec)?,
        })
    }

    /// Runs the script with `state` (or `states`) as its variable.
    fn run(&self, state: &Value) -> Result<Value> {
        let env = Env {
            ctx: Some(state),
            ..Env::new(&self.params)
        };
        self.script
            .execute(&env)
            .map_err(|e| e.to_exception(self.script.source()))
    }
}

fn required(script: &Option<ScriptSpec>, name: &str, agg: &str) -> Result<ScriptSpec> {
    script
        .clone()
        .ok_or_else(|| Error::illegal_argument(format!("[{name}] must not be null: [{agg}]")))
}

// ---- collection ----

struct Scripts {
    init: Option<StateScript>,
    map: PreparedScript,
    combine: StateScript,
}

struct ScriptedMetricFactory {
    scripts: Arc<Scripts>,
    failures: QueryFailures,
}

pub fn factory(
    request: &AggRequest,
    metric: &ScriptedMetricRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let combine = required(&metric.combine, "combineScript", &request.name)?;
    required(&metric.reduce, "reduceScript", &request.name)?;
    let init = metric
        .init
        .as_ref()
        .map(|spec| StateScript::prepare(metric, spec, ScriptContext::MetricInit))
        .transpose()?;
    let mut map = PreparedScript::prepare(ctx.table, &metric.map, ScriptContext::MetricMap)?;
    map.params = metric.params_for(&metric.map)?;
    let combine = StateScript::prepare(metric, &combine, ScriptContext::MetricCombine)?;
    Ok(Box::new(ScriptedMetricFactory {
        scripts: Arc::new(Scripts { init, map, combine }),
        failures: ctx.script_failures.clone(),
    }))
}

impl Factory for ScriptedMetricFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(ScriptedMetricCollector {
            frame: self.scripts.map.script.new_frame(),
            scripts: self.scripts.clone(),
            failures: self.failures.clone(),
            docs: None,
            states: Vec::new(),
            failed: false,
        }))
    }
}

struct ScriptedMetricCollector {
    scripts: Arc<Scripts>,
    failures: QueryFailures,
    docs: Option<SegmentDocs>,
    frame: Vec<Value>,
    /// Each parent bucket's `state` map, made by `init_script` when the bucket meets its
    /// first document.
    states: Vec<Option<Value>>,
    failed: bool,
}

impl ScriptedMetricCollector {
    /// A fresh `state`, after `init_script`.
    fn new_state(&self) -> Result<Value> {
        let state = Value::new_map(Default::default());
        if let Some(init) = &self.scripts.init {
            init.run(&state)?;
        }
        Ok(state)
    }

    fn map(&mut self, doc: DocId, parent: u32) -> Result<()> {
        let parent = parent as usize;
        if self.states.len() <= parent {
            self.states.resize(parent + 1, None);
        }
        if self.states[parent].is_none() {
            self.states[parent] = Some(self.new_state()?);
        }
        let (Some(docs), Some(state)) = (&mut self.docs, &self.states[parent]) else {
            return Ok(());
        };
        docs.set_doc(doc);
        let map = &self.scripts.map;
        let env = Env {
            doc: Some(docs),
            ctx: Some(state),
            ..Env::new(&map.params)
        };
        map.script
            .run_in(&mut self.frame, &env)
            .map(drop)
            .map_err(|e| map.error(&e))
    }
}

impl Collector for ScriptedMetricCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.docs = Some(
            self.scripts
                .map
                .fields
                .open(segment.reader)
                .map_err(|e| Error::internal("open the map script's columns", e))?,
        );
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        for (&doc, &parent) in docs.iter().zip(parents) {
            if self.failed {
                return;
            }
            if let Err(e) = self.map(doc, parent) {
                self.failed = true;
                self.failures.record(e);
            }
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let state = match self.states.get_mut(parent as usize).and_then(Option::take) {
            Some(state) => state,
            None => self.new_state()?,
        };
        let combined = self.scripts.combine.run(&state)?;
        Ok(InternalAgg::ScriptedMetric(InternalScriptedMetric {
            states: vec![combined.to_json().to_string()],
        }))
    }
}

// ---- intermediate result ----

/// The combined states of the slices seen so far, each as JSON text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalScriptedMetric {
    pub states: Vec<String>,
}

impl InternalScriptedMetric {
    pub fn reduce(parts: Vec<InternalScriptedMetric>) -> InternalScriptedMetric {
        InternalScriptedMetric {
            states: parts.into_iter().flat_map(|p| p.states).collect(),
        }
    }

    /// Runs `reduce_script` over the states.
    pub fn render(self, request: &AggRequest) -> Result<Map<String, Json>> {
        let crate::request::AggKind::ScriptedMetric(metric) = &request.kind else {
            return Err(Error::illegal_argument(format!(
                "[{}] is not a scripted_metric",
                request.name
            )));
        };
        let reduce = required(&metric.reduce, "reduceScript", &request.name)?;
        let script = StateScript::prepare(metric, &reduce, ScriptContext::MetricReduce)?;
        let states = self
            .states
            .iter()
            .map(|text| {
                serde_json::from_str(text)
                    .map(|json| Value::from_json(&json))
                    .map_err(|e| Error::internal("read a combined state", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let value = script.run(&Value::new_list(states))?;
        let mut out = Map::new();
        out.insert("value".into(), value.to_json());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use crate::test_util::TestShard;
    use serde_json::json;

    fn shard() -> TestShard {
        let docs: Vec<_> = (0..120)
            .map(|i| json!({"n": i, "k": if i % 3 == 0 { "a" } else { "b" }}))
            .collect();
        TestShard::new(
            json!({"properties": {"n": {"type": "long"}, "k": {"type": "keyword"}}}),
            &docs,
            4,
        )
    }

    const SUM: &str = r#"{
        "init_script": "state.l = []",
        "map_script": "state.l.add(doc['n'].value * params.f)",
        "combine_script": "long t = 0; for (x in state.l) t += x; return t",
        "reduce_script": "long t = 0; for (s in states) t += s; return t",
        "params": {"f": 2}
    }"#;

    #[test]
    fn sums_by_scripts_for_any_slicing() {
        let sum: Json = serde_json::from_str(SUM).unwrap();
        let aggs = json!({"s": {"scripted_metric": sum}, "k": {"terms": {"field": "k"}, "aggs": {"s": {"scripted_metric": sum}}}});
        for slices in [1, 3] {
            let out = shard().render(&aggs, slices, 5);
            assert_eq!(out["s"]["value"], json!(2 * (0..120).sum::<i64>()));
            let a: i64 = (0..120).filter(|i| i % 3 == 0).sum();
            assert_eq!(out["k"]["buckets"][1]["key"], json!("a"));
            assert_eq!(out["k"]["buckets"][1]["s"]["value"], json!(2 * a));
        }
    }

    #[test]
    fn states_are_one_per_slice() {
        let aggs = json!({"s": {"scripted_metric": {
            "map_script": "state.c = (state.c ?: 0) + 1",
            "combine_script": "return state.c",
            "reduce_script": "return states.size()"
        }}});
        assert_eq!(shard().render(&aggs, 1, 0)["s"]["value"], json!(1));
    }

    #[test]
    fn opensearch_errors() {
        let parse = |body: Json| parse_aggregations(&json!({"s": {"scripted_metric": body}}));
        assert_eq!(
            parse(json!({"combine_script": "1"})).unwrap_err().reason(),
            "Required [map_script]"
        );
        assert_eq!(
            parse(json!({"map_script": "1", "bogus": 1}))
                .unwrap_err()
                .reason(),
            "[scripted_metric] unknown field [bogus]"
        );
        let run = |body: Json| {
            shard()
                .try_run(&json!({"s": {"scripted_metric": body}}), 1, 0)
                .unwrap_err()
        };
        assert_eq!(
            run(json!({"map_script": "state.x = 1"})).reason(),
            "[combineScript] must not be null: [s]"
        );
        assert_eq!(
            run(json!({"map_script": "state.x = 1", "combine_script": "1"})).reason(),
            "[reduceScript] must not be null: [s]"
        );
        assert_eq!(
            run(
                json!({"map_script": {"source": "1", "params": {"a": 1}}, "combine_script": "1",
                "reduce_script": "1", "params": {"a": 2}})
            )
            .reason(),
            "Parameter name \"a\" used in both aggregation and script parameters"
        );
        let e = run(json!({"map_script": "state.x = 1 / (doc['n'].value - 7)",
            "combine_script": "1", "reduce_script": "1"}));
        assert_eq!(e.cause().unwrap().reason(), "/ by zero");
    }
}
