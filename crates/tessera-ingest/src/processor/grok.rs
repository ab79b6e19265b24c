//! The `grok` processor: the first of `patterns` that matches the field sets the fields it
//! captures (`trace_match` records which one in `_ingest._grok_match_index`); none matching
//! is an error.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::IngestDocument;
use crate::grok::{bank, Grok};
use crate::pipeline::Exec;

#[derive(Debug)]
pub struct GrokProcessor {
    field: String,
    patterns: Vec<Grok>,
    trace_match: bool,
    ignore_missing: bool,
}

impl GrokProcessor {
    pub fn parse(config: &mut Config) -> Result<GrokProcessor> {
        let field = config.required_string("field")?;
        let patterns = config.required_strings("patterns")?;
        if patterns.is_empty() {
            return Err(config.error("patterns", "List of patterns must not be empty"));
        }
        let definitions = config.optional_string_map("pattern_definitions")?;
        let trace_match = config.bool("trace_match", false)?;
        let ignore_missing = config.bool("ignore_missing", false)?;
        if let Some(ecs) = config.optional_string("ecs_compatibility")? {
            if ecs != "disabled" {
                return Err(config.error(
                    "ecs_compatibility",
                    "only the [disabled] (legacy) pattern bank is supported by Tessera",
                ));
            }
        }
        let lookup = |name: &str| {
            definitions
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| bank().get(name).cloned())
        };
        let compiled = patterns
            .iter()
            .map(|pattern| {
                Grok::compile(pattern, &lookup).map_err(|e| {
                    config.error(
                        "patterns",
                        &format!("Invalid regex pattern found in: [{pattern}]. {e}"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(GrokProcessor {
            field,
            patterns: compiled,
            trace_match,
            ignore_missing,
        })
    }
}

impl Processor for GrokProcessor {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let Some(text) = doc.string_field(&self.field, self.ignore_missing)? else {
            return Ok(Flow::Continue);
        };
        for (index, grok) in self.patterns.iter().enumerate() {
            if let Some(fields) = grok.captures(&text) {
                for (field, value) in fields {
                    doc.set(&field, value)?;
                }
                if self.trace_match {
                    doc.ingest
                        .insert("_grok_match_index".into(), Value::String(index.to_string()));
                }
                return Ok(Flow::Continue);
            }
        }
        Err(Error::illegal_argument(format!(
            "Provided Grok expressions do not match field value: [{text}]"
        ))
        .into())
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::{parse_error, run};
    use serde_json::json;

    #[test]
    fn the_first_matching_pattern_sets_its_fields() {
        let out = run(
            json!({"grok": {"field": "m", "patterns": ["%{FOO:x}", "%{NUMBER:n:int} %{WORD:w}"],
                "pattern_definitions": {"FOO": "zzz"}}}),
            json!({"m": "x 12 abc"}),
        )
        .unwrap();
        assert_eq!(out, json!({"m": "x 12 abc", "n": 12, "w": "abc"}));
        let e = run(
            json!({"grok": {"field": "m", "patterns": ["%{INT:i}"]}}),
            json!({"m": "--"}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason(),
            "Provided Grok expressions do not match field value: [--]"
        );
    }

    #[test]
    fn bad_patterns_fail_at_creation() {
        let e = parse_error(json!({"grok": {"field": "m", "patterns": ["%{FOO:x}"]}}));
        assert_eq!(
            e.reason(),
            "[patterns] Invalid regex pattern found in: [%{FOO:x}]. Unable to find pattern [FOO] in Grok's pattern dictionary"
        );
        let e = parse_error(json!({"grok": {"field": "m", "patterns": []}}));
        assert_eq!(e.reason(), "[patterns] List of patterns must not be empty");
    }
}
