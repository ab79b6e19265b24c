//! A pipeline: its definition (`description`, `processors`, `on_failure`, `version`), parsed
//! once when it is stored, and its execution on one document. A processor's failure that its
//! own options do not handle ends the pipeline: the pipeline's `on_failure` handles it (the
//! document is then indexed as the handlers left it), or the write fails. `drop` ends it
//! without indexing. The `pipeline` processor runs another pipeline by id through a
//! [`PipelineLookup`], refusing cycles.
//!
//! `_simulate` with `verbose` records a [`TraceEntry`] per processor run.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};

use crate::document::IngestDocument;
use crate::processor::{self, Configured, Failure, Flow};

/// How deep `pipeline` processors may nest.
const MAX_DEPTH: usize = 100;

/// See the module documentation.
#[derive(Debug)]
pub struct Pipeline {
    pub id: String,
    pub description: Option<String>,
    pub version: Option<i64>,
    pub processors: Vec<Configured>,
    pub on_failure: Vec<Configured>,
}

/// Other pipelines, by id (the `pipeline` processor's), and the stored scripts.
pub trait PipelineLookup {
    fn pipeline(&self, id: &str) -> Option<Arc<Pipeline>>;

    /// The stored script `id`: its language and source (a `script` processor's `id`).
    fn stored_script(&self, _id: &str) -> Option<(String, String)> {
        None
    }
}

/// No other pipelines.
pub struct NoPipelines;

impl PipelineLookup for NoPipelines {
    fn pipeline(&self, _: &str) -> Option<Arc<Pipeline>> {
        None
    }
}

/// What became of a document.
#[derive(Debug)]
pub enum Outcome {
    /// To be indexed as it now is.
    Indexed(IngestDocument),
    Dropped,
}

/// A processor's result in a verbose simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceStatus {
    Success,
    Error,
    ErrorIgnored,
    Dropped,
    /// Its `if` did not hold.
    Skipped,
}

/// One processor run, as `_simulate?verbose` shows it.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    pub processor_type: String,
    pub tag: Option<String>,
    pub description: Option<String>,
    pub status: TraceStatus,
    /// The document after the processor (with `_ingest.pipeline`).
    pub doc: Option<IngestDocument>,
    pub error: Option<Error>,
    /// The processor's `if` and what it gave.
    pub condition: Option<(String, bool)>,
}

impl TraceEntry {
    pub(crate) fn new(
        processor: &Configured,
        status: TraceStatus,
        doc: Option<&IngestDocument>,
        error: Option<&Error>,
    ) -> TraceEntry {
        TraceEntry {
            processor_type: processor.kind.clone(),
            tag: processor.tag.clone(),
            description: processor.description.clone(),
            status,
            doc: doc.cloned(),
            error: error.cloned(),
            // an entry of a processor that ran: its condition held
            condition: processor
                .condition
                .as_ref()
                .map(|condition| (condition.source().to_string(), true)),
        }
    }
}

/// The state of one document's run through pipelines.
pub struct Exec<'a> {
    lookup: &'a dyn PipelineLookup,
    /// The pipelines being run, outermost first.
    stack: Vec<String>,
    trace: Option<Vec<TraceEntry>>,
}

impl<'a> Exec<'a> {
    pub fn new(lookup: &'a dyn PipelineLookup, verbose: bool) -> Exec<'a> {
        Exec {
            lookup,
            stack: Vec::new(),
            trace: verbose.then(Vec::new),
        }
    }

    /// The stored script `id` (language, source), from the lookup.
    pub fn stored_script(&self, id: &str) -> Option<(String, String)> {
        self.lookup.stored_script(id)
    }

    pub fn current_pipeline(&self) -> Option<&str> {
        self.stack.last().map(String::as_str)
    }

    /// Records a trace entry when verbose (built only then).
    pub(crate) fn record(&mut self, entry: impl FnOnce() -> TraceEntry) {
        if self.trace.is_some() {
            let mut entry = entry();
            if let (Some(doc), Some(pipeline)) = (entry.doc.as_mut(), self.stack.last()) {
                doc.ingest
                    .insert("pipeline".into(), Value::String(pipeline.clone()));
            }
            if let Some(trace) = self.trace.as_mut() {
                trace.push(entry);
            }
        }
    }

    /// How many entries were recorded (0 when not verbose).
    pub(crate) fn trace_len(&self) -> usize {
        self.trace.as_ref().map_or(0, Vec::len)
    }

    /// Records `entry` before those recorded since the trace had `at` entries.
    pub(crate) fn insert_trace(&mut self, at: usize, entry: TraceEntry) {
        if let Some(trace) = self.trace.as_mut() {
            trace.insert(at.min(trace.len()), entry);
        }
    }

    /// Stops recording (a processor whose inner runs a trace leaves out); hand the result to
    /// [`Exec::resume_trace`].
    pub(crate) fn suspend_trace(&mut self) -> Option<Vec<TraceEntry>> {
        self.trace.take()
    }

    pub(crate) fn resume_trace(&mut self, trace: Option<Vec<TraceEntry>>) {
        self.trace = trace;
    }

    /// The entries recorded.
    pub fn take_trace(&mut self) -> Vec<TraceEntry> {
        self.trace.take().unwrap_or_default()
    }

    /// Runs the pipeline `id` (a `pipeline` processor).
    pub fn run_nested(&mut self, id: &str, doc: &mut IngestDocument) -> processor::Outcome {
        if self.stack.iter().any(|running| running == id) {
            return Err(Error::illegal_state(format!("Cycle detected for pipeline: {id}")).into());
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(Error::illegal_state(format!(
                "pipelines nest deeper than {MAX_DEPTH} levels at [{id}]"
            ))
            .into());
        }
        let Some(pipeline) = self.lookup.pipeline(id) else {
            return Err(Error::illegal_state(format!(
                "Pipeline processor configured for non-existent pipeline [{id}]"
            ))
            .into());
        };
        pipeline.run(doc, self).map_err(|mut failure| {
            failure.pipeline.get_or_insert_with(|| id.to_string());
            failure
        })
    }
}

fn parse_error(reason: String, property: Option<&str>) -> Error {
    let error = Error::new("parse_exception", 400, reason);
    match property {
        Some(property) => error.with_meta("property_name", property),
        None => error,
    }
}

impl Pipeline {
    /// Parses a pipeline definition (the body of `PUT _ingest/pipeline/{id}`).
    pub fn parse(id: &str, definition: &Value) -> Result<Pipeline> {
        let Value::Object(map) = definition else {
            return Err(parse_error(
                "request body or source parameter is required".into(),
                None,
            ));
        };
        let mut map = map.clone();
        let description = match map.shift_remove("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                return Err(parse_error(
                    format!(
                        "[description] property isn't a string, but of type [{}]",
                        crate::document::java_type(&other)
                    ),
                    Some("description"),
                ))
            }
        };
        let version = match map.shift_remove("version") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            Some(other) => {
                return Err(parse_error(
                    format!(
                        "[version] property isn't an integer, but of type [{}]",
                        crate::document::java_type(&other)
                    ),
                    Some("version"),
                ))
            }
        };
        map.shift_remove("_meta");
        let processors = match map.shift_remove("processors") {
            None | Some(Value::Null) => {
                return Err(parse_error(
                    "[processors] required property is missing".into(),
                    Some("processors"),
                ))
            }
            Some(list) => processor::parse_list(&list, "processors")?,
        };
        let on_failure = match map.shift_remove("on_failure") {
            None | Some(Value::Null) => Vec::new(),
            Some(list) => {
                let parsed = processor::parse_list(&list, "on_failure")?;
                if parsed.is_empty() {
                    return Err(parse_error(
                        format!("pipeline [{id}] cannot have an empty on_failure option defined"),
                        None,
                    ));
                }
                parsed
            }
        };
        if !map.is_empty() {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            return Err(parse_error(
                format!(
                    "pipeline [{id}] doesn't support one or more provided configuration parameters [{}]",
                    keys.join(", ")
                ),
                None,
            ));
        }
        Ok(Pipeline {
            id: id.to_string(),
            description,
            version,
            processors,
            on_failure,
        })
    }

    /// Its processors as `_nodes/stats` lists them (the top-level ones, in order).
    pub fn processor_stats(&self) -> Value {
        Value::Array(
            self.processors
                .iter()
                .map(Configured::render_stats)
                .collect(),
        )
    }

    /// Runs the pipeline on `doc` inside `exec` (the outermost pipeline or a nested one).
    pub fn run(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> processor::Outcome {
        exec.stack.push(self.id.clone());
        let outcome = match processor::run_list(&self.processors, doc, exec) {
            Err(failure) if !self.on_failure.is_empty() => {
                processor::run_on_failure(&self.on_failure, &failure, doc, exec)
            }
            other => other,
        };
        exec.stack.pop();
        outcome
    }

    /// Runs the pipeline on one document: the document to index, or dropped; the error of a
    /// failure nothing handled.
    pub fn execute(&self, mut doc: IngestDocument, lookup: &dyn PipelineLookup) -> Result<Outcome> {
        let mut exec = Exec::new(lookup, false);
        match self.run(&mut doc, &mut exec) {
            Ok(Flow::Continue) => Ok(Outcome::Indexed(doc)),
            Ok(Flow::Drop) => Ok(Outcome::Dropped),
            Err(Failure { error, .. }) => Err(error),
        }
    }

    /// `_simulate` with `verbose`: the processors' results, in order.
    pub fn execute_verbose(
        &self,
        mut doc: IngestDocument,
        lookup: &dyn PipelineLookup,
    ) -> Vec<TraceEntry> {
        let mut exec = Exec::new(lookup, true);
        let _ = self.run(&mut doc, &mut exec);
        exec.take_trace()
    }
}

/// A document as `_simulate` shows it: `_index`, `_id`, `_routing`, `_source`, `_ingest`.
pub fn render_document(doc: &IngestDocument) -> Value {
    let mut out = Map::new();
    for key in crate::document::METADATA {
        if let Some(value) = doc.ctx.get(key) {
            out.insert(key.to_string(), value.clone());
        }
    }
    out.insert("_source".into(), Value::Object(doc.source()));
    out.insert("_ingest".into(), Value::Object(doc.ingest.clone()));
    Value::Object(out)
}

/// A processor's result in a verbose simulation, in OpenSearch's shape.
pub fn render_trace_entry(entry: &TraceEntry) -> Value {
    let status = match entry.status {
        TraceStatus::Success => "success",
        TraceStatus::Error => "error",
        TraceStatus::ErrorIgnored => "error_ignored",
        TraceStatus::Dropped => "dropped",
        TraceStatus::Skipped => "skipped",
    };
    let mut out = Map::new();
    out.insert("processor_type".into(), json!(entry.processor_type));
    out.insert("status".into(), json!(status));
    if let Some(description) = &entry.description {
        out.insert("description".into(), json!(description));
    }
    if let Some(tag) = &entry.tag {
        out.insert("tag".into(), json!(tag));
    }
    if let Some((condition, result)) = &entry.condition {
        out.insert(
            "if".into(),
            json!({"condition": condition, "result": result}),
        );
    }
    match (entry.status, &entry.error) {
        (TraceStatus::Error, Some(error)) => {
            out.insert("error".into(), error_body(error));
        }
        (TraceStatus::ErrorIgnored, Some(error)) => {
            out.insert(
                "ignored_error".into(),
                json!({ "error": error_body(error) }),
            );
        }
        _ => {}
    }
    if entry.status != TraceStatus::Dropped {
        if let Some(doc) = &entry.doc {
            out.insert("doc".into(), render_document(doc));
        }
    }
    Value::Object(out)
}

/// An error as a simulation shows it: the error body without `status`.
pub fn error_body(error: &Error) -> Value {
    error.to_body()["error"].clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Lookup(HashMap<String, Arc<Pipeline>>);

    impl PipelineLookup for Lookup {
        fn pipeline(&self, id: &str) -> Option<Arc<Pipeline>> {
            self.0.get(id).cloned()
        }
    }

    fn doc(source: Value) -> IngestDocument {
        let Value::Object(map) = source else { panic!() };
        IngestDocument::new(map, "i", Some("1"), None, "ts".into())
    }

    #[test]
    fn a_definition_needs_processors_and_refuses_unknown_keys() {
        let e = Pipeline::parse("p", &json!({})).unwrap_err();
        assert_eq!(e.reason(), "[processors] required property is missing");
        assert_eq!(e.meta("property_name"), Some(&json!("processors")));
        let e = Pipeline::parse("p", &json!({"processors": [], "x": 1})).unwrap_err();
        assert!(e.reason().contains("[x]"), "{e}");
        let p = Pipeline::parse(
            "p",
            &json!({"description": "d", "version": 3, "processors": []}),
        )
        .unwrap();
        assert_eq!((p.description.as_deref(), p.version), (Some("d"), Some(3)));
    }

    #[test]
    fn pipeline_on_failure_ends_the_pipeline_and_keeps_the_document() {
        let p = Pipeline::parse(
            "p",
            &json!({"processors": [
                {"fail": {"message": "no"}},
                {"set": {"field": "never", "value": 1}}],
             "on_failure": [{"set": {"field": "error", "value": "{{_ingest.on_failure_message}}"}}]}),
        )
        .unwrap();
        let Outcome::Indexed(out) = p.execute(doc(json!({"a": 1})), &NoPipelines).unwrap() else {
            panic!()
        };
        assert_eq!(Value::Object(out.source()), json!({"a": 1, "error": "no"}));
        assert!(!out.ingest.contains_key("on_failure_message"));
    }

    #[test]
    fn nested_pipelines_run_and_cycles_fail() {
        let mut pipelines = HashMap::new();
        let inner = Pipeline::parse(
            "inner",
            &json!({"processors": [{"set": {"field": "x", "value": 1}}]}),
        )
        .unwrap();
        pipelines.insert("inner".to_string(), Arc::new(inner));
        let a =
            Pipeline::parse("a", &json!({"processors": [{"pipeline": {"name": "b"}}]})).unwrap();
        let b =
            Pipeline::parse("b", &json!({"processors": [{"pipeline": {"name": "a"}}]})).unwrap();
        pipelines.insert("a".to_string(), Arc::new(a));
        pipelines.insert("b".to_string(), Arc::new(b));
        let lookup = Lookup(pipelines);
        let outer = Pipeline::parse(
            "outer",
            &json!({"processors": [{"pipeline": {"name": "inner"}}]}),
        )
        .unwrap();
        let Outcome::Indexed(out) = outer.execute(doc(json!({})), &lookup).unwrap() else {
            panic!()
        };
        assert_eq!(Value::Object(out.source()), json!({"x": 1}));
        // a failure inside a nested pipeline names it to the handlers
        let failing = Pipeline::parse(
            "outer",
            &json!({"processors": [{"pipeline": {"name": "zz-missing"}}],
                    "on_failure": [{"set": {"field": "p", "value": "{{_ingest.on_failure_pipeline}}"}}]}),
        )
        .unwrap();
        let Outcome::Indexed(out) = failing.execute(doc(json!({})), &lookup).unwrap() else {
            panic!()
        };
        assert_eq!(
            Value::Object(out.source()),
            json!({"p": ""}),
            "its own processor failed"
        );
        let a = lookup.pipeline("a").unwrap();
        let e = a.execute(doc(json!({})), &lookup).unwrap_err();
        assert_eq!(e.reason(), "Cycle detected for pipeline: a");
        let missing =
            Pipeline::parse("m", &json!({"processors": [{"pipeline": {"name": "zz"}}]})).unwrap();
        let e = missing.execute(doc(json!({})), &lookup).unwrap_err();
        assert_eq!(
            e.reason(),
            "Pipeline processor configured for non-existent pipeline [zz]"
        );
    }

    #[test]
    fn verbose_shows_a_pipeline_processor_before_what_it_runs() {
        let mut pipelines = HashMap::new();
        let inner = Pipeline::parse(
            "inner",
            &json!({"processors": [{"set": {"field": "x", "value": 1}}]}),
        )
        .unwrap();
        pipelines.insert("inner".to_string(), Arc::new(inner));
        let outer = Pipeline::parse(
            "_simulate_pipeline",
            &json!({"processors": [{"pipeline": {"name": "inner"}}]}),
        )
        .unwrap();
        let trace = outer.execute_verbose(doc(json!({})), &Lookup(pipelines));
        let rendered: Vec<Value> = trace.iter().map(render_trace_entry).collect();
        assert_eq!(
            rendered[0],
            json!({"processor_type": "pipeline", "status": "success"})
        );
        assert_eq!(rendered[1]["processor_type"], "set");
        assert_eq!(rendered[1]["doc"]["_ingest"]["pipeline"], "inner");
        assert_eq!(rendered.len(), 2);
    }

    #[test]
    fn processors_count_what_they_ran() {
        let p = Pipeline::parse(
            "p",
            &json!({"processors": [
                {"set": {"field": "a", "value": 1, "tag": "T1"}},
                {"pipeline": {"name": "zz", "ignore_failure": true}}]}),
        )
        .unwrap();
        p.execute(doc(json!({})), &NoPipelines).unwrap();
        let stats = p.processor_stats();
        assert_eq!(stats[0]["set:T1"]["stats"]["count"], 1);
        assert_eq!(stats[1]["pipeline:zz"]["type"], "pipeline");
        assert_eq!(stats[1]["pipeline:zz"]["stats"]["failed"], 1);
    }

    #[test]
    fn verbose_traces_each_processor() {
        let p = Pipeline::parse(
            "_simulate_pipeline",
            &json!({"processors": [
                {"set": {"field": "a", "value": 1, "tag": "t1"}},
                {"convert": {"field": "z", "type": "integer"}}]}),
        )
        .unwrap();
        let trace = p.execute_verbose(doc(json!({})), &NoPipelines);
        let rendered: Vec<Value> = trace.iter().map(render_trace_entry).collect();
        assert_eq!(rendered[0]["status"], "success");
        assert_eq!(rendered[0]["tag"], "t1");
        assert_eq!(
            rendered[0]["doc"]["_ingest"]["pipeline"],
            "_simulate_pipeline"
        );
        assert_eq!(rendered[1]["status"], "error");
        assert_eq!(
            rendered[1]["error"]["reason"],
            "field [z] not present as part of path [z]"
        );
    }
}
