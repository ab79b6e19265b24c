//! Processors that steer the pipeline: `drop` (the document is not indexed), `fail` (an
//! error with a templated message), `foreach` (one processor on each element of a list,
//! the element as `_ingest._value`) and `pipeline` (another pipeline by name).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{Configured, Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::{java_type, IngestDocument};
use crate::pipeline::Exec;
use crate::template::Template;

#[derive(Debug)]
pub struct Drop;

impl Processor for Drop {
    fn execute(&self, _: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        Ok(Flow::Drop)
    }
}

#[derive(Debug)]
pub struct Fail {
    message: Template,
}

impl Fail {
    pub fn parse(config: &mut Config) -> Result<Fail> {
        Ok(Fail {
            message: config.template("message")?,
        })
    }
}

impl Processor for Fail {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        Err(Error::new("fail_processor_exception", 400, self.message.render(doc)).into())
    }
}

#[derive(Debug)]
pub struct Foreach {
    field: String,
    processor: Box<Configured>,
    ignore_missing: bool,
}

impl Foreach {
    pub fn parse(config: &mut Config) -> Result<Foreach> {
        let field = config.required_string("field")?;
        let ignore_missing = config.bool("ignore_missing", false)?;
        let processor = match config.required("processor")? {
            Value::Object(map) if map.len() == 1 => super::parse_single(&Value::Object(map))?,
            _ => return Err(config.error("processor", "Must specify exactly one processor type")),
        };
        Ok(Foreach {
            field,
            processor: Box::new(processor),
            ignore_missing,
        })
    }
}

impl Processor for Foreach {
    fn execute(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome {
        let items = match doc.get(&self.field) {
            Err(_) | Ok(Value::Null) if self.ignore_missing => return Ok(Flow::Continue),
            Err(e) => return Err(e.into()),
            Ok(Value::Array(items)) => items.clone(),
            Ok(other) => {
                return Err(Error::illegal_argument(format!(
                    "field [{}] of type [{}] cannot be cast to [java.util.List]",
                    self.field,
                    java_type(other)
                ))
                .into())
            }
        };
        let previous = doc.ingest.get("_value").cloned();
        let mut out = Vec::with_capacity(items.len());
        let mut outcome = Ok(Flow::Continue);
        // a verbose simulation shows the foreach, not its runs of the inner processor
        let trace = exec.suspend_trace();
        for item in items {
            doc.ingest.insert("_value".into(), item);
            match self.processor.run(doc, exec) {
                Ok(Flow::Continue) => {
                    out.push(doc.ingest.get("_value").cloned().unwrap_or(Value::Null))
                }
                other => {
                    outcome = other;
                    break;
                }
            }
        }
        exec.resume_trace(trace);
        // OpenSearch leaves `_ingest._value` null afterwards
        doc.ingest
            .insert("_value".into(), previous.unwrap_or(Value::Null));
        if outcome.as_ref().is_ok_and(|flow| *flow == Flow::Continue) {
            doc.set(&self.field, Value::Array(out))?;
        }
        outcome
    }
}

#[derive(Debug)]
pub struct PipelineProcessor {
    name: Template,
    /// The name as configured, which labels the processor's stats.
    raw_name: String,
}

impl PipelineProcessor {
    pub fn parse(config: &mut Config) -> Result<PipelineProcessor> {
        let raw_name = config.required_string("name")?;
        Ok(PipelineProcessor {
            name: config.compile("name", &raw_name)?,
            raw_name,
        })
    }
}

impl Processor for PipelineProcessor {
    fn label(&self) -> Option<&str> {
        Some(&self.raw_name)
    }

    fn execute(&self, doc: &mut IngestDocument, exec: &mut Exec<'_>) -> Outcome {
        let name = self.name.render(doc);
        exec.run_nested(&name, doc)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::run;
    use serde_json::{json, Value};

    #[test]
    fn drop_fail_and_foreach() {
        assert_eq!(
            run(json!({"drop": {}}), json!({"a": 1})).unwrap(),
            Value::Null
        );
        let e = run(json!({"fail": {"message": "bad {{a}}"}}), json!({"a": 1})).unwrap_err();
        assert_eq!(
            (e.kind(), e.reason()),
            ("fail_processor_exception", "bad 1")
        );
        let out = run(
            json!({"foreach": {"field": "l", "processor": {"uppercase": {"field": "_ingest._value"}}}}),
            json!({"l": ["a", "b"]}),
        )
        .unwrap();
        assert_eq!(out["l"], json!(["A", "B"]));
        let e = run(
            json!({"foreach": {"field": "l", "processor": {"uppercase": {"field": "_ingest._value"}}}}),
            json!({"l": "a"}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason(),
            "field [l] of type [java.lang.String] cannot be cast to [java.util.List]"
        );
    }
}
