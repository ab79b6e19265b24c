//! Processors: the [`Processor`] trait each type implements, [`parse`] (a processor's
//! configuration → a [`Configured`] processor: the type's own options plus the common ones),
//! and how a list of processors runs with `ignore_failure` and `on_failure`.
//!
//! One module per family: [`fields`] (set, remove, rename, append), [`strings`] (lowercase,
//! uppercase, trim, split, join, gsub), [`convert`], [`date`], [`dissect`], [`grok`],
//! [`json`], [`flow`] (drop, fail, foreach, pipeline), [`script`] (the `script` processor and
//! the `if` option's painless condition). Types OpenSearch has and Tessera lacks fail when the
//! pipeline is created.

pub mod convert;
pub mod date;
pub mod dissect;
pub mod fields;
pub mod flow;
pub mod grok;
pub mod json;
pub mod script;
pub mod strings;

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::config::{property_error, Config};
use crate::document::IngestDocument;
use crate::pipeline::{Exec, TraceEntry, TraceStatus};

/// What the rest of the pipeline does after a processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// `drop`: the document is not indexed.
    Drop,
}

/// A processor failed: the error and the processor it happened in (which the `on_failure`
/// metadata names: the innermost one, through `pipeline` and `foreach`).
#[derive(Clone, Debug)]
pub struct Failure {
    pub error: Error,
    pub kind: Option<String>,
    pub tag: Option<String>,
    /// The pipeline a `pipeline` processor ran that the failure happened in (OpenSearch's
    /// `_ingest.on_failure_pipeline`); `None` for a failure of the pipeline's own processors.
    pub pipeline: Option<String>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            error,
            kind: None,
            tag: None,
            pipeline: None,
        }
    }
}

pub type Outcome = std::result::Result<Flow, Failure>;

/// One processor type's work on a document.
pub trait Processor: Send + Sync + Debug {
    fn execute(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome;

    /// What names an untagged processor in `_nodes/stats` after its type (`pipeline:<name>`).
    fn label(&self) -> Option<&str> {
        None
    }
}

/// What one processor ran (`_nodes/stats`' per-processor `stats`): documents, time, in
/// progress, failed (ignored failures included, as OpenSearch counts them).
#[derive(Debug, Default)]
pub struct ProcessorStats {
    count: AtomicU64,
    nanos: AtomicU64,
    current: AtomicU64,
    failed: AtomicU64,
}

impl ProcessorStats {
    pub fn render(&self) -> Value {
        serde_json::json!({
            "count": self.count.load(Ordering::Relaxed),
            "time_in_millis": self.nanos.load(Ordering::Relaxed) / 1_000_000,
            "current": self.current.load(Ordering::Relaxed),
            "failed": self.failed.load(Ordering::Relaxed),
        })
    }
}

/// A processor with the options every type has.
#[derive(Debug)]
pub struct Configured {
    pub kind: String,
    pub tag: Option<String>,
    pub description: Option<String>,
    pub ignore_failure: bool,
    pub on_failure: Vec<Configured>,
    /// `if`: the processor runs only where it holds.
    pub condition: Option<script::Condition>,
    pub inner: Box<dyn Processor>,
    pub stats: ProcessorStats,
}

/// The processor types Tessera runs.
pub const TYPES: [&str; 20] = [
    "append",
    "convert",
    "date",
    "dissect",
    "drop",
    "fail",
    "foreach",
    "grok",
    "gsub",
    "join",
    "json",
    "lowercase",
    "pipeline",
    "remove",
    "rename",
    "script",
    "set",
    "split",
    "trim",
    "uppercase",
];

/// Types of OpenSearch's ingest modules that Tessera does not implement.
const UNSUPPORTED: [&str; 21] = [
    "attachment",
    "bytes",
    "community_id",
    "copy",
    "csv",
    "date_index_name",
    "dot_expander",
    "fingerprint",
    "geoip",
    "html_strip",
    "ip2geo",
    "kv",
    "remove_by_pattern",
    "sort",
    "sparse_encoding",
    "text_embedding",
    "urldecode",
    "user_agent",
    "uri_parts",
    "text_image_embedding",
    "convert_case",
];

/// Parses one entry of a `processors` list: `{"<type>": {options}}` (an entry naming several
/// types is several processors, in order, as OpenSearch reads it).
pub fn parse_entry(entry: &Value) -> Result<Vec<Configured>> {
    let Some(object) = entry.as_object() else {
        return Err(Error::new(
            "parse_exception",
            400,
            format!(
                "property isn't a map, but of type [{}]",
                crate::document::java_type(entry)
            ),
        ));
    };
    object
        .iter()
        .map(|(kind, config)| match config {
            Value::Object(map) => parse(kind, map.clone()),
            // a script processor may be its inline source alone
            Value::String(source) if kind == "script" => {
                let mut map = Map::new();
                map.insert("source".into(), Value::String(source.clone()));
                parse(kind, map)
            }
            other => Err(property_error(
                kind,
                None,
                None,
                &format!(
                    "property isn't a map, but of type [{}]",
                    crate::document::java_type(other)
                ),
            )),
        })
        .collect()
}

/// Parses one processor entry that must name exactly one type (`foreach`'s `processor`).
pub fn parse_single(entry: &Value) -> Result<Configured> {
    let mut parsed = parse_entry(entry)?;
    match parsed.len() {
        1 => Ok(parsed.remove(0)),
        _ => Err(Error::new(
            "parse_exception",
            400,
            "[processor] Must specify exactly one processor type",
        )
        .with_meta("processor_type", "foreach")
        .with_meta("property_name", "processor")),
    }
}

/// A `parse_exception` about an option every processor has: OpenSearch names no processor.
fn common_error(property: &str, reason: String) -> Error {
    Error::new("parse_exception", 400, format!("[{property}] {reason}"))
        .with_meta("property_name", property)
}

fn common_string(map: &mut Map<String, Value>, key: &str) -> Result<Option<String>> {
    match map.shift_remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(common_error(
            key,
            format!(
                "property isn't a string, but of type [{}]",
                crate::document::java_type(&other)
            ),
        )),
    }
}

/// Parses a list of processor entries (`processors`, `on_failure`).
pub fn parse_list(entries: &Value, property: &str) -> Result<Vec<Configured>> {
    let Value::Array(entries) = entries else {
        return Err(Error::new(
            "parse_exception",
            400,
            format!(
                "[{property}] property isn't a list, but of type [{}]",
                crate::document::java_type(entries)
            ),
        )
        .with_meta("property_name", property));
    };
    let mut out = Vec::new();
    for entry in entries {
        out.extend(parse_entry(entry)?);
    }
    Ok(out)
}

/// Parses a processor of type `kind` from its options.
pub fn parse(kind: &str, mut map: Map<String, Value>) -> Result<Configured> {
    let tag = common_string(&mut map, "tag")?;
    let description = common_string(&mut map, "description")?;
    let ignore_failure = match map.shift_remove("ignore_failure") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
        Some(other) => {
            return Err(common_error(
                "ignore_failure",
                format!(
                    "property isn't a boolean, but of type [{}]",
                    crate::document::java_type(&other)
                ),
            ))
        }
    };
    let mut config = Config::with_tag(kind, map, tag.clone());
    let condition = match config.take("if") {
        Some(value) => Some(script::Condition::parse(kind, &value)?),
        None => None,
    };
    let on_failure = match config.take("on_failure") {
        Some(list) => {
            let parsed = parse_list(&list, "on_failure")?;
            if parsed.is_empty() {
                return Err(config.error("on_failure", "processors list cannot be empty"));
            }
            parsed
        }
        None => Vec::new(),
    };
    let inner: Box<dyn Processor> = match kind {
        "set" => Box::new(fields::Set::parse(&mut config)?),
        "remove" => Box::new(fields::Remove::parse(&mut config)?),
        "rename" => Box::new(fields::Rename::parse(&mut config)?),
        "append" => Box::new(fields::Append::parse(&mut config)?),
        "lowercase" | "uppercase" | "trim" => Box::new(strings::Case::parse(&mut config)?),
        "split" => Box::new(strings::Split::parse(&mut config)?),
        "join" => Box::new(strings::Join::parse(&mut config)?),
        "gsub" => Box::new(strings::Gsub::parse(&mut config)?),
        "convert" => Box::new(convert::Convert::parse(&mut config)?),
        "date" => Box::new(date::DateProcessor::parse(&mut config)?),
        "dissect" => Box::new(dissect::Dissect::parse(&mut config)?),
        "grok" => Box::new(grok::GrokProcessor::parse(&mut config)?),
        "json" => Box::new(json::JsonProcessor::parse(&mut config)?),
        "drop" => Box::new(flow::Drop),
        "fail" => Box::new(flow::Fail::parse(&mut config)?),
        "foreach" => Box::new(flow::Foreach::parse(&mut config)?),
        "pipeline" => Box::new(flow::PipelineProcessor::parse(&mut config)?),
        "script" => Box::new(script::ScriptProcessor::parse(&mut config)?),
        other if UNSUPPORTED.contains(&other) => {
            return Err(property_error(
                other,
                tag.as_deref(),
                None,
                &format!("the processor type [{other}] is not supported by Tessera"),
            ))
        }
        other => {
            return Err(Error::new(
                "parse_exception",
                400,
                format!("No processor type exists with name [{other}]"),
            )
            .with_meta("processor_type", other.to_string()))
        }
    };
    config.finish()?;
    Ok(Configured {
        kind: kind.to_string(),
        tag,
        description,
        ignore_failure,
        on_failure,
        condition,
        inner,
        stats: ProcessorStats::default(),
    })
}

impl Configured {
    /// The processor as `_nodes/stats` lists it: `{"<type>[:<tag>]": {"type", "stats"}}`.
    pub fn render_stats(&self) -> Value {
        let name = match self.tag.as_deref().or(self.inner.label()) {
            Some(suffix) => format!("{}:{suffix}", self.kind),
            None => self.kind.clone(),
        };
        serde_json::json!({ name: {"type": self.kind, "stats": self.stats.render()} })
    }

    /// Runs the processor with its `if`, `ignore_failure` and `on_failure` (a failing `if`
    /// fails the processor without them, as OpenSearch's condition wraps them).
    pub fn run(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome {
        if let Some(condition) = &self.condition {
            let holds = condition.holds(doc, exec).map_err(|error| Failure {
                error,
                kind: Some(self.kind.clone()),
                tag: self.tag.clone(),
                pipeline: None,
            })?;
            if !holds {
                exec.record(|| {
                    let mut entry = TraceEntry::new(self, TraceStatus::Skipped, None, None);
                    entry.condition = Some((condition.source().to_string(), false));
                    entry
                });
                return Ok(Flow::Continue);
            }
        }
        self.run_unconditionally(doc, exec)
    }

    fn run_unconditionally(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome {
        // a verbose simulation shows a `pipeline` processor that ran its pipeline before the
        // processors it ran, without a document (their failure is theirs); one that could not
        // run it (missing, a cycle) as its own error, as OpenSearch does
        let nested = self.kind == "pipeline";
        let trace_at = exec.trace_len();
        let started = Instant::now();
        self.stats.current.fetch_add(1, Ordering::Relaxed);
        let outcome = self.inner.execute(doc, exec);
        self.stats.current.fetch_sub(1, Ordering::Relaxed);
        self.stats.count.fetch_add(1, Ordering::Relaxed);
        self.stats
            .nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if outcome.is_err() {
            self.stats.failed.fetch_add(1, Ordering::Relaxed);
        }
        let ran_nested = nested && outcome.as_ref().map_or_else(|f| f.kind.is_some(), |_| true);
        if ran_nested {
            exec.insert_trace(
                trace_at,
                TraceEntry::new(self, TraceStatus::Success, None, None),
            );
        }
        match outcome {
            Ok(_) if nested => outcome,
            Ok(flow) => {
                let status = match flow {
                    Flow::Continue => TraceStatus::Success,
                    Flow::Drop => TraceStatus::Dropped,
                };
                exec.record(|| TraceEntry::new(self, status, Some(doc), None));
                Ok(flow)
            }
            Err(mut failure) => {
                if failure.kind.is_none() {
                    failure.kind = Some(self.kind.clone());
                    failure.tag = self.tag.clone();
                }
                if self.ignore_failure {
                    if !ran_nested {
                        exec.record(|| {
                            TraceEntry::new(
                                self,
                                TraceStatus::ErrorIgnored,
                                Some(doc),
                                Some(&failure.error),
                            )
                        });
                    }
                    return Ok(Flow::Continue);
                }
                if !ran_nested {
                    exec.record(|| {
                        TraceEntry::new(self, TraceStatus::Error, None, Some(&failure.error))
                    });
                }
                if self.on_failure.is_empty() {
                    return Err(failure);
                }
                run_on_failure(&self.on_failure, &failure, doc, exec)
            }
        }
    }
}

/// Runs `processors` in order until one drops the document or fails.
pub fn run_list(
    processors: &[Configured],
    doc: &mut IngestDocument,
    exec: &mut Exec<'_>,
) -> Outcome {
    for processor in processors {
        if processor.run(doc, exec)? == Flow::Drop {
            return Ok(Flow::Drop);
        }
    }
    Ok(Flow::Continue)
}

/// Runs an `on_failure` list with the failure's `_ingest.on_failure_*` fields set, which are
/// removed afterwards.
pub fn run_on_failure(
    handlers: &[Configured],
    failure: &Failure,
    doc: &mut IngestDocument,
    exec: &mut Exec<'_>,
) -> Outcome {
    // the message is the deepest cause's, as OpenSearch's `getRootCause()` (a script's
    // `/ by zero`, not its `runtime error`); a processor without a tag has a null tag
    let mut deepest = &failure.error;
    while let Some(cause) = deepest.cause() {
        deepest = cause;
    }
    let fields = [
        ("on_failure_message", Some(deepest.reason().to_string())),
        ("on_failure_processor_type", failure.kind.clone()),
        ("on_failure_processor_tag", failure.tag.clone()),
        ("on_failure_pipeline", failure.pipeline.clone()),
    ];
    let saved: Vec<(&str, Option<Value>)> = fields
        .iter()
        .map(|(key, _)| (*key, doc.ingest.get(*key).cloned()))
        .collect();
    for (key, value) in &fields {
        match value {
            Some(value) => doc
                .ingest
                .insert(key.to_string(), Value::String(value.clone())),
            // only a failure inside a nested pipeline names one
            None if *key == "on_failure_pipeline" => doc.ingest.shift_remove(*key),
            None => doc.ingest.insert(key.to_string(), Value::Null),
        };
    }
    let outcome = run_list(handlers, doc, exec);
    for (key, value) in saved {
        match value {
            Some(value) => doc.ingest.insert(key.to_string(), value),
            None => doc.ingest.shift_remove(key),
        };
    }
    outcome
}

/// The string at `field` of `doc`, with `ignore_missing`: `Ok(None)` when the field is
/// missing (or null) and that is allowed.
pub fn read_field<'d>(
    doc: &'d IngestDocument,
    field: &str,
    ignore_missing: bool,
    processor: &str,
) -> Result<Option<&'d Value>> {
    match doc.get(field) {
        Ok(Value::Null) | Err(_) if ignore_missing => Ok(None),
        Ok(Value::Null) => Err(Error::illegal_argument(format!(
            "field [{field}] is null, cannot {processor}."
        ))),
        Ok(value) => Ok(Some(value)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pipeline::NoPipelines;
    use serde_json::json;

    /// Runs one processor configured by `config` (`{"type": {...}}`) on `source`.
    pub(crate) fn run(config: Value, source: Value) -> std::result::Result<Value, Error> {
        let processor = parse_single(&config)?;
        let Value::Object(map) = source else { panic!() };
        let mut doc = IngestDocument::new(map, "i", Some("1"), None, "ts".into());
        let lookup = NoPipelines;
        let mut exec = Exec::new(&lookup, false);
        match processor.run(&mut doc, &mut exec) {
            Ok(Flow::Continue) => Ok(Value::Object(doc.source())),
            Ok(Flow::Drop) => Ok(Value::Null),
            Err(failure) => Err(failure.error),
        }
    }

    pub(crate) fn parse_error(config: Value) -> Error {
        parse_entry(&config).unwrap_err()
    }

    #[test]
    fn an_entry_naming_several_types_is_several_processors() {
        let parsed =
            parse_entry(&json!({"set": {"field": "a", "value": 1}, "remove": {"field": "b"}}))
                .unwrap();
        let kinds: Vec<&str> = parsed.iter().map(|p| p.kind.as_str()).collect();
        assert_eq!(kinds, ["set", "remove"]);
        let e = parse_error(json!({"set": {"field": "a", "value": 1, "tag": 5}}));
        assert_eq!(e.meta("processor_type"), None);
        assert_eq!(
            e.reason(),
            "[tag] property isn't a string, but of type [java.lang.Integer]"
        );
    }

    #[test]
    fn unknown_and_unsupported_types_and_conditions_fail_at_creation() {
        let e = parse_error(json!({"foo": {}}));
        assert_eq!(e.reason(), "No processor type exists with name [foo]");
        let e = parse_error(json!({"kv": {"field": "a"}}));
        assert!(e.reason().contains("not supported by Tessera"), "{e}");
        let e = parse_error(json!({"set": {"field": "a", "value": 1, "if": "ctx.a +"}}));
        assert_eq!(e.kind(), "script_exception");
        assert_eq!(e.meta("processor_type"), Some(&json!("set")));
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn ignore_failure_and_on_failure_handle_errors() {
        let out = run(
            json!({"convert": {"field": "x", "type": "integer", "ignore_failure": true}}),
            json!({}),
        )
        .unwrap();
        assert_eq!(out, json!({}));
        let out = run(
            json!({"fail": {"message": "boom", "tag": "t",
                "on_failure": [{"set": {"field": "why",
                    "value": "{{_ingest.on_failure_message}}|{{_ingest.on_failure_processor_type}}|{{_ingest.on_failure_processor_tag}}"}}]}}),
            json!({}),
        )
        .unwrap();
        assert_eq!(out, json!({"why": "boom|fail|t"}));
    }
}
